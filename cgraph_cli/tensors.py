"""The passes for programs whose values include NumPy arrays: shapes, forward, vjp and jvp.

Scalar programs never come here (see :func:`cgraph_cli.forward.forward`): they run on plain
floats. Here every node's shape is inferred before anything is computed, so a mismatch is
reported at its source span; then the same loops as the scalar passes run over the op table's
NumPy rules. An elementwise op's gradient is summed back over the axes broadcasting stretched.

>>> from cgraph_cli import parse
>>> from cgraph_cli.forward import initial_values
>>> g = parse("loss = sum((W @ x - t) ^ 2)")
>>> values = forward_tensors(g, initial_values(g, {"W": [[1, 2], [3, 4]], "x": [1, -1],
...                                                "t": [0, 0]}))
>>> values[g.output], vjp_tensors(g, values)[g.inputs["W"]].tolist()
(2.0, [[-2.0, 2.0], [-2.0, 2.0]])
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

from . import arrays
from .arrays import (
    MAX_AXES,
    NoValue,
    ShapeMismatch,
    np,
    shape_of,
    show_shape,
    size_text,
    unbroadcast,
)
from .errors import BindingError, DomainError, EvalError
from .forward import compile_program, domain_error, slope_error
from .ir import Graph
from .ops import CONST, INPUT, LEAF, POSTFIX


class ShapeError(EvalError):
    """Shapes that do not fit together (exit code 4, like every error found before running)."""


def as_array(name: str, value):
    """A binding given as nested lists, JSON text or an array: a finite float64 array (a float
    if it has no axes), or a :class:`BindingError`. Elements must be real numbers (integers and
    floats of any precision); nesting deeper than NumPy's 64 axes is refused before parsing.

    >>> as_array("W", "[[1, 2], [3, 4]]").tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    >>> as_array("W", "[1, true]")
    Traceback (most recent call last):
    cgraph_cli.errors.BindingError: error: the value of 'W' holds true/false values (booleans); cgraph computes with real numbers
    """
    from .arrayfiles import dtype_problem, list_problem

    if isinstance(value, str):
        value = _parse_json(name, value)
    if isinstance(value, (list, tuple)):
        problem = list_problem(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        problem = None
    else:
        problem = dtype_problem(np.asarray(value).dtype)
    if problem:
        raise BindingError(f"the value of '{name}' {problem}")
    try:
        array = np.asarray(value, dtype=float)  # no copy of a float64 array: nothing mutates it
    except OverflowError:  # a Python integer past float64's range
        raise BindingError(
            f"the value of '{name}' holds a value that is not a finite number"
        ) from None
    except (TypeError, ValueError):
        raise BindingError(
            f"the value of '{name}' is not a rectangular array of numbers: {_short(value)}",
            hints=["every row needs as many numbers as the others: [[1, 2], [3, 4]]"],
        ) from None
    if not all_finite(array):
        raise BindingError(f"the value of '{name}' holds a value that is not a finite number")
    if array.size == 0:
        raise BindingError(f"the value of '{name}' is an empty array")
    return float(array) if array.ndim == 0 else array


def _parse_json(name: str, text: str):
    """JSON text from the command line. Its depth is counted first, since the JSON parser
    recurses; integers become floats, since Python refuses to convert 5,000-digit ones."""
    from itertools import accumulate

    from .arrayfiles import MAX_AXES, IntegerTooLarge, json_int

    depth = max(accumulate(1 if c == "[" else -1 for c in _BRACKETS.findall(text)), default=0)
    if depth > MAX_AXES:
        raise BindingError(
            f"the value of '{name}' is nested {depth} levels deep; arrays have at most "
            f"{MAX_AXES} axes"
        )
    try:
        return json.loads(text, parse_int=json_int)
    except IntegerTooLarge as e:
        raise BindingError(f"the value of '{name}' {e}") from None
    except json.JSONDecodeError as e:
        raise BindingError(
            f"the value of '{name}' is not a number or an array: {_short(text)} ({e.msg} at "
            f"character {e.pos + 1})",
            hints=["arrays are written as JSON: W='[[1, 2], [3, 4]]'"],
        ) from None


_BRACKETS = re.compile(r"[][]")


def all_finite(x) -> bool:
    """Whether every element is finite: one summing pass (no temporary array) unless the sum
    itself says otherwise."""
    if isinstance(x, float):
        return math.isfinite(x)
    with np.errstate(all="ignore"):  # a sum that overflows is the question, not a warning
        return _finite(x)


def _finite(x) -> bool:
    """:func:`all_finite`, for the passes' loops, which run inside ``np.errstate`` already."""
    if x.__class__ is float:
        return math.isfinite(x)
    return math.isfinite(float(x.sum())) or bool(np.isfinite(x).all())


def _short(value) -> str:
    """At most about 60 characters of a value, however long or deeply nested it is."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxstring, short.maxother = 4, 8, 50, 50
    text = short.repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def shapes(graph: Graph, values: list) -> list[tuple[int, ...]]:
    """Every node's shape, from the leaves' values and the op table's shape rules. The last
    result is kept per graph: a training loop runs with the same input shapes every time."""
    program = compile_program(graph)
    key = tuple(shape_of(values[n]) for n in graph.inputs.values())
    if program.shapes is not None and program.shapes[0] == key:
        return program.shapes[1]
    out = _infer(graph, values)
    program.shapes = (key, out)
    return out


def _infer(graph: Graph, values: list) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()] * len(graph.ops)
    params = graph.params
    for i, (op, args) in enumerate(zip(graph.ops, graph.args)):
        if op.style == LEAF:
            out[i] = shape_of(values[i])
            continue
        try:
            out[i] = op.shape([out[a] for a in args], params.get(i, ()))
        except NoValue as e:
            raise graph.error(ShapeError, f"{graph.text(i)} {e}", i) from None
        except ShapeMismatch as e:
            raise graph.error(ShapeError, str(e), i) from None
        if len(out[i]) > MAX_AXES or math.prod(out[i]) > arrays.MAX_ELEMENTS:
            raise _too_large(graph, i, out)
    return out


def _too_large(graph: Graph, i: int, shapes: list) -> ShapeError:
    """The error for node ``i`` whose result NumPy cannot hold (more than 64 axes) or that
    would take more memory than one value may (:data:`arrays.MAX_ELEMENTS`)."""
    op, shape = graph.ops[i], shapes[i]
    what = "indexing" if op.style == POSTFIX else op.symbol
    given = " and ".join(show_shape(shapes[a]) for a in graph.args[i])
    hints = [f"its argument{'s are' if len(graph.args[i]) > 1 else ' is'} {given}"]
    if len(shape) > MAX_AXES:
        return graph.error(
            ShapeError,
            f"the result of {what} would have {len(shape)} axes; a tensor has at "
            f"most {MAX_AXES} (NumPy's limit)",
            i,
            hints=hints,
        )
    return graph.error(
        ShapeError,
        f"the result of {what} would be a {show_shape(shape)} tensor of "
        f"{size_text(math.prod(shape))}; the limit is {arrays.MAX_ELEMENTS:,} elements "
        f"({size_text(arrays.MAX_ELEMENTS)}) per value",
        i,
        hints=hints,
    )


def forward_tensors(graph: Graph, values: list) -> list:
    """Fill in every operation node of ``values``; shapes are checked first."""
    shapes(graph, values)
    params = graph.params
    with np.errstate(all="ignore"):
        for i, (op, args) in enumerate(zip(graph.ops, graph.args)):
            if op.style == LEAF:
                continue
            f = op.array_forward or op.forward
            xs = [values[a] for a in args]
            try:
                out = f(*xs) if op.elementwise else f(*xs, *params.get(i, ()))
            except (ArithmeticError, ValueError) as exc:  # the scalar rules raise
                raise domain_error(graph, i, values, exc) from None
            except MemoryError:
                raise _no_memory(graph, i, values) from None
            if out.__class__ is not float and np.ndim(out) == 0:
                out = float(out)
            if not _finite(out):
                raise _bad_element(graph, i, values, out)
            values[i] = out
    return values


def _no_memory(graph: Graph, i: int, values: list) -> EvalError:
    shape = shapes(graph, values)[i]
    return graph.error(
        EvalError,
        f"not enough memory for the result of {graph.text(i)}, a {show_shape(shape)} "
        f"tensor of {size_text(math.prod(shape))}",
        i,
    )


def _bad_element(graph: Graph, i: int, values: list, out) -> DomainError:
    """The error for node ``i`` whose result has a non-finite element: the element's formula
    when the op is elementwise (``log(-1) is undefined at [1]``); for the others, which only
    sum and multiply finite numbers, an overflow (``sum(x) overflows``)."""
    op = graph.ops[i]
    bad = ~np.isfinite(np.asarray(out))
    if not op.elementwise:
        return graph.error(
            DomainError,
            f"{graph.text(i)} overflows{_at(bad)}: the result is too large for a float64",
            i,
            hints=["the intermediate sums or products exceed about 1.8e308"],
        )
    scalars, at = _element(graph, values, i, bad)
    try:
        op.forward(*scalars)
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        return domain_error(graph, i, values, exc, scalars, at)
    return domain_error(graph, i, values, None, scalars, at)


def _element(graph: Graph, values: list, i: int, bad) -> tuple[list[float], str]:
    """Where ``bad`` (a mask over the shape of elementwise node ``i``) first holds: each
    argument's element there, broadcast as the op saw it, and `` at [j, k]``."""
    where = _first(bad)
    shape = np.shape(bad)
    scalars = [float(np.broadcast_to(values[a], shape)[where]) for a in graph.args[i]]
    return scalars, _at(bad)


def _first(bad) -> tuple[int, ...]:
    return tuple(int(k) for k in np.argwhere(bad)[0])


def _at(bad) -> str:
    """`` at [j, k]``, where the mask ``bad`` first holds; nothing for a number."""
    where = _first(bad)
    return " at [" + ", ".join(map(str, where)) + "]" if where else ""


def require_scalar(graph: Graph, values: list, node: int) -> None:
    """A gradient is of one number: say how to get one from a tensor ``node``."""
    value = values[node]
    if value.__class__ is float or np.ndim(value) == 0:
        return
    name = graph.display_name(node)
    shown = name if name.isidentifier() else f"({name})"
    first = ", ".join("0" for _ in np.shape(value))
    hint = (
        f"reduce it, as a loss does: sum({name}) or mean({name}); "
        f"or pick one element: {shown}[{first}]"
    )
    if np.size(value) == 0:
        hint = f"it is empty, so it has no element to pick; sum({name}) is 0"
    raise graph.error(
        EvalError,
        f"{name} is a {show_shape(np.shape(value))} tensor; gradients need a single number",
        node,
        hints=[hint],
    )


def vjp_tensors(graph: Graph, values: list, of: int | None = None, seed: float = 1.0) -> list:
    """Adjoints of node ``of`` (a scalar) with respect to every node, shaped like the nodes.
    Nodes the output does not depend on get zeros."""
    out = graph.output if of is None else of
    require_scalar(graph, values, out)
    adj = _reverse(graph, values, out, seed, checked=False)
    if not all(all_finite(adj[n]) for n in graph.inputs.values() if adj[n] is not None):
        # Again, slowly: an infinite partial met by a zero gradient contributes nothing; any
        # other non-finite gradient raises at the node that made it.
        adj = _reverse(graph, values, out, seed, checked=True)
    return [
        (np.zeros_like(values[i]) if values[i].__class__ is not float else 0.0) if a is None else a
        for i, a in enumerate(adj)
    ]


def _reverse(graph: Graph, values: list, out: int, seed: float, checked: bool) -> list:
    adj: list = [None] * len(graph.ops)
    adj[out] = seed
    ops, all_args = graph.ops, graph.args
    depends = _depends_on_input(graph) if checked else None
    with np.errstate(all="ignore"):
        for i in range(out, -1, -1):
            g, op = adj[i], ops[i]
            if g is None or op.style == LEAF:
                continue
            args = all_args[i]
            try:
                pulled = cotangents(graph, values, i, g, checked)
            except MemoryError:
                raise _no_memory(graph, i, values) from None
            for a, c in zip(args, pulled):
                adj[a] = c if adj[a] is None else adj[a] + c
                if checked and depends[a] and not _finite(adj[a]):
                    raise _slope_error(graph, values, i, g, a, adj[a])
    return adj


def cotangents(graph: Graph, values: list, i: int, g, checked: bool = False) -> list:
    """What node ``i`` passes back to each of its arguments, given its adjoint ``g``: the op's
    vjp rule, or for an elementwise op its partials times ``g`` summed back to each argument's
    shape. ``checked``: a zero in ``g`` contributes nothing even where a partial is infinite."""
    op, args = graph.ops[i], graph.args[i]
    xs = [values[a] for a in args]
    if not op.elementwise:
        out = op.vjp(g, xs, values[i], graph.params.get(i, ()))
    else:
        out = []
        for a, p, x in zip(args, array_partials(op, xs, values[i]), xs):
            if graph.ops[a] is CONST:  # a constant needs no gradient
                out.append(0.0 if x.__class__ is float else np.zeros_like(x))
                continue
            if callable(p):
                p = p()
            c = p * g if p.__class__ is not float or p != 1.0 else g
            out.append(unbroadcast(np.where(g == 0.0, 0.0, c) if checked else c, np.shape(x)))
    return [float(c) if c.__class__ is not float and np.ndim(c) == 0 else c for c in out]


def _slope_error(graph: Graph, values: list, i: int, g, a: int, adj) -> DomainError:
    """The error for node ``i`` that passed argument ``a`` a gradient ``adj`` that is not
    finite: for an elementwise op whose local derivative is not finite where it is needed, at
    the first such element (``sqrt(0)`` at ``[1]``); else the gradient itself overflowed."""
    op = graph.ops[i]
    if op.elementwise:
        shape = np.shape(values[i])
        for p in array_partials(op, [values[a] for a in graph.args[i]], values[i]):
            p = np.broadcast_to(p() if callable(p) else p, shape)
            bad = ~np.isfinite(p) & (np.broadcast_to(g, shape) != 0.0)
            if bad.any():
                return slope_error(graph, i, values, *_element(graph, values, i, bad))
    return graph.error(
        DomainError,
        f"the gradient through {graph.text(i)} overflows{_at(~np.isfinite(adj))}: "
        f"it is too large for a float64",
        i,
        hints=[f"the gradient with respect to {graph.display_name(a)} exceeds about 1.8e308"],
    )


def array_partials(op, xs: list, out) -> tuple:
    """An elementwise op's local partials at ``xs`` (arrays, or functions giving them)."""
    if op.constant is not None:
        return op.constant
    if op.swapped:
        return xs[1], xs[0]
    return (op.array_partials or op.partials)(*xs, out)


def _depends_on_input(graph: Graph) -> list[bool]:
    depends = [False] * len(graph.ops)
    for i, (op, args) in enumerate(zip(graph.ops, graph.args)):
        depends[i] = op is INPUT or any(depends[a] for a in args)
    return depends


def jvp_tensors(graph: Graph, values: list, tangents: Mapping[str, object]) -> list:
    """Forward mode: every node's directional derivative along the input ``tangents``."""
    tan: list = [None] * len(graph.ops)
    for name, t in check_tangents(graph, values, tangents).items():
        tan[graph.inputs[name]] = t
    ops, params = graph.ops, graph.params
    with np.errstate(all="ignore"):
        for i, (op, args) in enumerate(zip(ops, graph.args)):
            ts = [tan[a] for a in args]
            if op.style == LEAF or all(t is None for t in ts):
                continue
            xs = [values[a] for a in args]
            if not op.elementwise:
                tan[i] = op.jvp(ts, xs, values[i], params.get(i, ()))
            else:
                tan[i] = _push(op, xs, values[i], ts, checked=False)
                if not _finite(tan[i]):  # a zero tangent meets an infinite partial?
                    tan[i] = _push(op, xs, values[i], ts, checked=True)
            if not _finite(tan[i]):
                raise _tangent_error(graph, values, i, ts)
    return [
        (np.zeros_like(values[i]) if values[i].__class__ is not float else 0.0)
        if t is None
        else (float(t) if np.ndim(t) == 0 else t)
        for i, t in enumerate(tan)
    ]


def _push(op, xs: list, out, ts: list, checked: bool):
    """An elementwise op's tangent: its partials times the arguments' tangents, summed.
    ``checked``: a zero tangent contributes nothing even where a partial is infinite."""
    total = 0.0
    for p, t in zip(array_partials(op, xs, out), ts):
        if t is not None:
            c = (p() if callable(p) else p) * t
            total = total + (np.where(t == 0.0, 0.0, c) if checked else c)
    return np.broadcast_to(total, np.shape(out)) + 0.0


def _tangent_error(graph: Graph, values: list, i: int, ts: list) -> DomainError:
    """The error for node ``i`` whose tangent is not finite: an infinite local derivative
    where the tangent is not zero (at its first element), or an overflow."""
    op = graph.ops[i]
    if op.elementwise:
        shape = np.shape(values[i])
        xs = [values[a] for a in graph.args[i]]
        for p, t in zip(array_partials(op, xs, values[i]), ts):
            if t is None:
                continue
            p = np.broadcast_to(p() if callable(p) else p, shape)
            bad = ~np.isfinite(p) & (np.broadcast_to(t, shape) != 0.0)
            if bad.any():
                return slope_error(graph, i, values, *_element(graph, values, i, bad))
    return graph.error(
        DomainError,
        f"the tangent of {graph.text(i)} overflows: it is too large for a float64",
        i,
    )


def check_tangents(graph: Graph, values: list, tangents: Mapping[str, object]) -> dict:
    """The tangents as finite floats or arrays shaped like their inputs' values, or a
    :class:`BindingError`."""
    out = {}
    for name, t in tangents.items():
        if name not in graph.inputs:
            raise BindingError(
                f"the program has no input named '{name}' to take a tangent",
                hints=["the program's inputs: " + (", ".join(graph.inputs) or "none")],
            )
        t = as_array(name, t) if t.__class__ is not float else t
        want = shape_of(values[graph.inputs[name]])
        if shape_of(t) != want:
            raise BindingError(
                f"the tangent of '{name}' has shape {show_shape(shape_of(t))}; "
                f"'{name}' has shape {show_shape(want)}"
            )
        out[name] = t
    return out
