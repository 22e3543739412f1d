"""The forward pass: bindings -> every node's value, indexed by node id.

One loop over the graph for every kind of value, running each op's value rule from the op
table: on NumPy arrays (:func:`forward_arrays`, after the shape pass), and on floats through a
loop specialised for speed (:func:`run`), whose steps are compiled once per graph from the same
rules (:class:`~cgraph_cli.run.floats.FloatProgram`). Scalar programs never import NumPy.

>>> from cgraph_cli import parse
>>> g = parse("p = x + y; g = p * z")
>>> forward(g, {"x": 1, "y": 3, "z": -3})
[1.0, 3.0, 4.0, -3.0, -12.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..core.arrays import np, show_shape, size_text
from ..core.errors import BindingError, DomainError, EvalError
from ..core.interpret import ARRAYS, partials_function, value_function
from ..core.ir import Graph
from ..core.numfmt import format_number
from ..core.ops import CALL, CONST, INFIX, POSTFIX
from ..data.bindings import check_bindings, finite, input_values
from .floats import compile_program


def initial_values(graph: Graph, bindings: Mapping[str, object] | None = None) -> list:
    """A value list with inputs (bindings over source defaults) and constants filled in."""
    given, missing = input_values(graph, check_bindings(graph, bindings))
    values = list(compile_program(graph).template)
    for name, value in given.items():
        values[graph.inputs[name]] = value
    if missing:
        plural = "s" if len(missing) > 1 else ""
        shown = missing if len(missing) <= 8 else [*missing[:8], f"… ({len(missing) - 8} more)"]
        names = ", ".join(f"'{m}'" if not m.startswith("…") else m for m in shown)
        example = " ".join(f"{m}=VALUE" for m in missing[:4])
        raise graph.error(
            BindingError,
            f"no value{plural} for input{plural} {names}",
            graph.inputs[missing[0]],
            hints=[
                f"bind {'them' if plural else 'it'}: {example}  (or declare a default in the "
                f"program: input {missing[0]} = 1)"
            ],
        )
    return values


def is_tensor_run(graph: Graph, values: list) -> bool:
    """Whether ``values`` (inputs filled in) need the array passes."""
    return compile_program(graph).tensor or any(
        values[n].__class__ is not float for n in graph.inputs.values()
    )


# --- errors ----------------------------------------------------------------------------------
def _brief(value) -> str:
    if value.__class__ is float or not hasattr(value, "shape"):
        return format_number(value)
    return f"{tuple(value.shape)} tensor" if value.shape else format_number(float(value))


def describe(graph: Graph, node: int, values: list, arg_values: list | None = None) -> str:
    """Node ``node`` as a formula over its arguments' values: ``log(-1)``, ``1 / 0``.
    ``arg_values`` replaces them (one element of each tensor argument, say)."""
    op = graph.ops[node]
    if arg_values is None:
        arg_values = [values[a] for a in graph.args[node]]
    shown = [_brief(v) for v in arg_values]
    if op.style == CALL:  # as the program spells it: max(x), not the op's name amax(x)
        return f"{op.symbol}({', '.join(shown)})"
    if op.style == POSTFIX:
        return f"{shown[0]}[…]"
    shown = [f"({s})" if s.startswith("-") else s for s in shown]
    if op.style == INFIX:
        return f" {op.symbol} ".join(shown)
    return op.symbol + shown[0]


def domain_error(
    graph: Graph,
    node: int,
    values: list,
    exc: Exception | None,
    arg_values: list | None = None,
    at: str = "",
) -> DomainError:
    """The error for node ``node`` failing (``exc``) or producing a non-finite value (``None``);
    for a tensor, ``arg_values`` are the elements involved and ``at`` says where (`` at [1]``)."""
    op = graph.ops[node]
    formula = describe(graph, node, values, arg_values)
    if isinstance(exc, OverflowError) or exc is None:
        message = f"{formula} overflows{at}: the result is too large for a float64"
    else:
        reason = op.domain or str(exc)
        message = f"{formula} is undefined{at}: {reason}"
    return graph.error(DomainError, message, node)


def slope_error(
    graph: Graph, node: int, values: list, arg_values: list | None = None, at: str = ""
) -> DomainError:
    """The error for node ``node`` whose local derivative is undefined or infinite (``at`` and
    ``arg_values`` as for :func:`domain_error`)."""
    formula = describe(graph, node, values, arg_values)
    return graph.error(
        DomainError,
        f"the derivative of {formula} is undefined or infinite{at}",
        node,
        hints=[graph.ops[node].domain] if graph.ops[node].domain else [],
    )


def local_partials(graph: Graph, values: list, node: int) -> tuple[float, ...]:
    """∂node/∂arg for each argument of scalar node ``node`` at ``values`` (0 for a constant
    argument, which has no gradient), from the op's rules; ``inf`` or ``nan`` where the rule
    fails (for diagrams and explanations, which show them)."""
    op, args = graph.ops[node], graph.args[node]
    if not op.differentiable:
        return (0.0,) * op.arity
    needs = tuple(graph.ops[a] is not CONST for a in args)
    try:
        return partials_function(op, needs)(*(values[a] for a in args), values[node])
    except (ArithmeticError, ValueError):  # the array rules give inf or nan instead
        xs = [np.float64(values[a]) for a in args]
        with np.errstate(all="ignore"):
            return tuple(
                float(rule(ARRAYS, *xs, np.float64(values[node])))
                if rule is not None and need
                else 0.0
                for rule, need in zip(op.partials or (), needs)
            )


# --- floats ---------------------------------------------------------------------------------
def run(graph: Graph, values: list[float]) -> list[float]:
    """Fill in every operation node of ``values`` (as made by :func:`initial_values`)."""
    program = compile_program(graph)
    i = -1
    try:
        if program.wide:
            args = program.args
            for i, f, _, _, _ in program.steps:
                values[i] = f(*[values[x] for x in args[i]])
        else:
            for i, f, _, a, b in program.steps:
                values[i] = f(values[a]) if b < 0 else f(values[a], values[b])
    except (ArithmeticError, ValueError) as exc:
        raise domain_error(graph, i, values, exc) from None
    total = sum(values)  # inf or nan if any value is; one C loop, cheaper than isfinite per value
    if total - total != 0.0:
        first = next((i for i, v in enumerate(values) if not math.isfinite(v)), None)
        if first is not None:  # else the sum itself overflowed: every value is fine
            raise domain_error(graph, first, values, None)
    return values


def forward(graph: Graph, bindings: Mapping[str, object] | None = None) -> list:
    """Every node's value, indexed by node id: floats, or NumPy arrays for tensors.

    >>> from cgraph_cli import parse
    >>> forward(parse("h = W @ x"), {"W": [[1, 2], [3, 4]], "x": [1, 1]})
    [array([[1., 2.],
           [3., 4.]]), array([1., 1.]), array([3., 7.])]
    """
    values = initial_values(graph, bindings)
    if is_tensor_run(graph, values):
        return forward_arrays(graph, values)
    return run(graph, values)


def apply_nodes(graph: Graph, values: dict, nodes) -> None:
    """Fill in the operation nodes ``nodes`` of ``values`` (a dict by node; their arguments'
    values there), each by the rule :func:`forward` would use: the float rule where every
    argument is a number (so that a condition is decided as ``eval`` decides it), the array
    rule else; the error at the node where a rule fails or a value is not finite."""
    from ..core.interpret import value_function

    ops, all_args, params = graph.ops, graph.args, graph.params
    for i in nodes:
        op, args = ops[i], [values[a] for a in all_args[i]]
        if op.py is None or any(a.__class__ is not float for a in args):
            apply_arrays(graph, values, [i])
            continue
        given = params.get(i, ())
        try:
            v = float(value_function(op, "py", len(given))(*args, *given))
        except (ArithmeticError, ValueError) as exc:
            raise domain_error(graph, i, values, exc) from None  # type: ignore[arg-type]
        if v - v != 0.0:
            raise domain_error(graph, i, values, None)  # type: ignore[arg-type]
        values[i] = v


# --- arrays ----------------------------------------------------------------------------------
def forward_arrays(graph: Graph, values: list) -> list:
    """Fill in every operation node of ``values`` with the op table's array rules; shapes are
    checked first."""
    from ..passes.shapes import shapes_of_values

    shapes_of_values(graph, values)
    return apply_arrays(graph, values)


def apply_arrays(graph: Graph, values: Any, nodes=None, undefined: str = "raise") -> Any:
    """The one NumPy forward loop: fill in the operation nodes ``nodes`` (default: every one,
    in order; their arguments' values must be there) of ``values`` (a list, or a dict by
    node) with the op table's array rules. ``undefined``: ``"raise"`` the error at the node
    where a rule fails or a value is not finite; ``"nan"`` a NaN there and on, for showing
    (explanations of a derivative program).

    >>> from cgraph_cli import parse
    >>> g = parse("y = log(x) + 1")
    >>> apply_arrays(g, [-1.0, None, 1.0, None], undefined="nan")
    [-1.0, nan, 1.0, nan]
    """
    ops, all_args, params = graph.ops, graph.args, graph.params
    raising = undefined == "raise"
    with np.errstate(all="ignore"):
        for i in range(len(ops)) if nodes is None else nodes:
            op = ops[i]
            if not op.arity:
                continue
            try:
                out = ARRAYS.apply(op, [values[a] for a in all_args[i]], params.get(i, ()))
            except (ArithmeticError, ValueError) as exc:  # float rules raise
                if raising:
                    raise domain_error(graph, i, values, exc) from None
                out = math.nan
            except MemoryError:
                raise no_memory(graph, i, values) from None
            if raising and not finite(out):
                raise _bad_element(graph, i, values, out)
            values[i] = out
    return values


def no_memory(graph: Graph, i: int, values: list) -> EvalError:
    from ..passes.shapes import shapes_of_values

    shape = shapes_of_values(graph, values)[i]
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
    if op.positions:  # a lookup: its positions, not its numbers, are what failed
        from ..core.runtime import np_positions

        for k in op.positions:
            a = graph.args[i][k]
            if np_positions(values[a], 2**62) is None or not np.all(np.isfinite(values[a])):
                break
        return graph.error(
            DomainError,
            f"{graph.text(i)}: {graph.text(a)} holds a position that is not a whole number "
            "within the axis",
            i,
            hints=[op.domain, f"the values of {graph.text(a)}: {_shown(values[a])}"],
        )
    if not op.elementwise or op.py is None:
        return graph.error(
            DomainError,
            f"{graph.text(i)} overflows{at(bad)}: the result is too large for a float64",
            i,
            hints=["the intermediate sums or products exceed about 1.8e308"],
        )
    scalars, where = element(graph, values, i, bad)
    try:
        value_function(op)(*scalars)
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        return domain_error(graph, i, values, exc, scalars, where)
    return domain_error(graph, i, values, None, scalars, where)


def element(graph: Graph, values: list, i: int, bad) -> tuple[list[float], str]:
    """Where ``bad`` (a mask over the shape of elementwise node ``i``) first holds: each
    argument's element there, broadcast as the op saw it, and `` at [j, k]``."""
    where = _first(bad)
    shape = np.shape(bad)
    scalars = [float(np.broadcast_to(values[a], shape)[where]) for a in graph.args[i]]
    return scalars, at(bad)


def _first(bad) -> tuple[int, ...]:
    return tuple(int(k) for k in np.argwhere(bad)[0])


def at(bad) -> str:
    """`` at [j, k]``, where the mask ``bad`` first holds; nothing for a number."""
    where = _first(bad)
    return " at [" + ", ".join(map(str, where)) + "]" if where else ""


def _shown(value) -> str:
    """A few of an array's numbers, as a hint shows them."""
    flat = np.ravel(np.asarray(value, dtype=float))
    text = ", ".join(f"{v:g}" for v in flat[:8])
    return f"[{text}{', ...' if flat.size > 8 else ''}]"
