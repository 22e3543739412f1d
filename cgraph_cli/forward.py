"""The forward pass: bindings -> every node's value, and forward-mode derivatives (jvp).

One loop over a compiled program of flat tuples; no per-op code lives here. Values are a list
indexed by node id.

>>> from cgraph_cli import parse
>>> g = parse("p = x + y; g = p * z")
>>> forward(g, {"x": 1, "y": 3, "z": -3})
[1.0, 3.0, 4.0, -3.0, -12.0]
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping

from .errors import BindingError, DomainError
from .ir import Graph, gc_paused
from .numfmt import format_number
from .ops import CALL, INFIX, LEAF, POSTFIX

#: The reverse pass's marker for a binary op whose partials are its arguments swapped (mul).
SWAPPED = "swapped"


class Program:
    """A graph's operation nodes as flat tuples, built once per graph and cached on it.

    ``forward`` holds ``(node, forward rule, arg0, arg1 or -1)`` in topological order;
    ``backward`` holds ``(node, partials rule or constant partials, arg0, arg1 or -1)`` in
    reverse order; ``ids`` the
    operation nodes' ids, ascending. Four-tuples unpack faster than one shared five-tuple.
    """

    __slots__ = ("forward", "backward", "ids", "template", "tensor", "shapes")

    def __init__(self, graph: Graph) -> None:
        with gc_paused():
            ids = [i for i, op in enumerate(graph.ops) if op.style != LEAF]
            forward = []
            backward = []
            for i in ids:
                op, args = graph.ops[i], graph.args[i]
                b = args[1] if len(args) > 1 else -1
                forward.append((i, op.forward, args[0], b))
                backward.append(
                    (i, SWAPPED if op.swapped else op.constant or op.partials, args[0], b)
                )
            backward.reverse()
            template = [0.0] * len(graph.ops)  # constants in place; copied for every run
            for node, value in graph.consts.items():
                template[node] = value
        self.forward, self.backward, self.ids, self.template = forward, backward, ids, template
        # Array constants or ops that are not elementwise: the graph runs on NumPy arrays.
        self.tensor = any(not graph.ops[i].elementwise for i in ids) or any(
            v.__class__ is not float for v in graph.consts.values()
        )
        self.shapes = None  # (input shapes, every node's shape) of the last tensor run


def compile_program(graph: Graph) -> Program:
    """The graph's :class:`Program`, compiled on first use."""
    if graph._program is None:
        graph._program = Program(graph)
    return graph._program


def check_value(name: str, value: object):
    """A binding's value: a finite float, a finite float64 array (given as an array, nested
    lists, or JSON text such as ``"[1, 2]"``), or a :class:`BindingError` saying why not."""
    if value.__class__ is float or value.__class__ is int:
        return check_number(name, value)
    if isinstance(value, str) and not value.lstrip().startswith("["):
        return check_number(name, value)
    if isinstance(value, (str, list, tuple)) or hasattr(value, "__array__"):
        from .tensors import as_array

        return as_array(name, value)
    return check_number(name, value)


def check_number(name: str, value: object) -> float:
    """A binding's value as a finite float, or a :class:`BindingError` saying why not.

    >>> check_number("x", "1e400")
    Traceback (most recent call last):
    cgraph_cli.errors.BindingError: error: the value of 'x' is not a finite number: '1e400'
    """
    if isinstance(value, (bool, complex)):
        kind = "true or false (a boolean)" if isinstance(value, bool) else "a complex number"
        raise BindingError(f"the value of '{name}' is {kind}; cgraph computes with real numbers")
    try:
        number = float(value)  # type: ignore[arg-type]
    except OverflowError:  # a Python integer past float64's range
        number = math.inf
    except (TypeError, ValueError):
        raise BindingError(f"the value of '{name}' is not a number: {_shown(value)}") from None
    if not math.isfinite(number):
        raise BindingError(f"the value of '{name}' is not a finite number: {_shown(value)}")
    return number


def _shown(value: object) -> str:
    """The value as typed, cut short: a 5,000-digit number is not repeated back in full."""
    if isinstance(value, int) and value.bit_length() > 3000:  # repr would refuse it
        return f"an integer of about {value.bit_length() * 0.30103:,.0f} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text):,} characters)"


def initial_values(graph: Graph, bindings: Mapping[str, object] | None = None) -> list[float]:
    """A value list with inputs (bindings over source defaults) and constants filled in."""
    bindings = check_bindings(graph, bindings)
    values = list(compile_program(graph).template)
    missing = []
    for name, node in graph.inputs.items():
        if name in bindings:
            values[node] = bindings[name]
        elif name in graph.defaults:
            values[node] = graph.defaults[name]
        else:
            missing.append(name)
    if missing:
        plural = "s" if len(missing) > 1 else ""
        names = ", ".join(f"'{m}'" for m in missing)
        example = " ".join(f"{m}=VALUE" for m in missing)
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


def check_bindings(graph: Graph, bindings: Mapping[str, object] | None) -> dict[str, object]:
    """The bindings as finite floats or arrays; a name that is not an input is a
    :class:`BindingError`."""
    bindings = bindings or {}
    unknown = [name for name in bindings if name not in graph.inputs]
    if unknown:
        raise _unknown_binding(graph, unknown)
    return {name: check_value(name, value) for name, value in bindings.items()}


def _unknown_binding(graph: Graph, unknown: list[str]) -> BindingError:
    name = unknown[0]
    if name in graph.names:
        return BindingError(
            f"'{name}' is computed by the program, so it cannot be bound",
            hints=[
                "only inputs (names read before any assignment) take values: "
                + (", ".join(graph.inputs) or "this program has none")
            ],
        )
    hints = []
    close = difflib.get_close_matches(name, list(graph.inputs), n=1)
    if close:
        hints.append(f"did you mean '{close[0]}'?")
    hints.append("the program's inputs: " + (", ".join(graph.inputs) or "none"))
    return BindingError(f"the program has no input named '{name}'", hints=hints)


def is_tensor_run(graph: Graph, values: list) -> bool:
    """Whether ``values`` (inputs filled in) need the NumPy passes of :mod:`cgraph_cli.tensors`."""
    return compile_program(graph).tensor or any(
        values[n].__class__ is not float for n in graph.inputs.values()
    )


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


def local_partials(graph: Graph, values: list[float], node: int) -> tuple[float, ...]:
    """∂node/∂arg for each argument of ``node``, at ``values`` (for diagrams and explanations;
    the passes use the compiled program instead)."""
    return graph.ops[node].partials(*(values[a] for a in graph.args[node]), values[node])


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


def run(graph: Graph, values: list[float]) -> list[float]:
    """Fill in every operation node of ``values`` (as made by :func:`initial_values`)."""
    i = -1
    try:
        for i, f, a, b in compile_program(graph).forward:
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
    """Every node's value, indexed by node id: floats, or NumPy arrays for tensors."""
    values = initial_values(graph, bindings)
    if is_tensor_run(graph, values):
        from .tensors import forward_tensors

        return forward_tensors(graph, values)
    return run(graph, values)


def jvp(graph: Graph, values: list[float], tangents: Mapping[str, float]) -> list[float]:
    """Forward mode: every node's directional derivative along the input ``tangents``.

    >>> from cgraph_cli import parse
    >>> g = parse("g = (x + y) * z")
    >>> jvp(g, forward(g, {"x": 1, "y": 3, "z": -3}), {"x": 1.0})[g.output]
    -3.0
    """
    if is_tensor_run(graph, values):
        from .tensors import jvp_tensors

        return jvp_tensors(graph, values, tangents)
    out = [0.0] * len(graph.ops)
    for name, t in tangents.items():
        if name not in graph.inputs:
            raise _unknown_binding(graph, [name])
        out[graph.inputs[name]] = check_number(name, t)
    ops = graph.ops
    failed: list = []  # (node, error) where a tangent first went non-finite, in order
    for i, _, a, b in compile_program(graph).forward:
        ta, tb = out[a], (out[b] if b >= 0 else 0.0)
        if ta == 0.0 and tb == 0.0:
            continue
        p = ops[i].partials
        try:
            partials = p(values[a], values[i]) if b < 0 else p(values[a], values[b], values[i])
        except (ArithmeticError, ValueError):
            partials = None
        if partials is not None:
            # As in reverse mode, a zero (tangent or partial) contributes nothing, even against
            # a value that is not finite.
            out[i] = (partials[0] * ta if ta and partials[0] else 0.0) + (
                partials[1] * tb if tb and partials[1] else 0.0
            )
            if out[i] - out[i] == 0.0:
                continue
        out[i] = math.nan
        if all(math.isfinite(t) for t in (ta, tb)):  # here it went non-finite, not upstream
            overflow = partials is not None and all(
                math.isfinite(q) for q, t in zip(partials, (ta, tb)) if t
            )
            failed.append((i, overflow))
    result = out[graph.output]
    if failed and result - result != 0.0:  # the output's tangent is not finite: say where
        from .render.dot import ancestors

        reach = ancestors(graph, graph.output)
        i, overflow = next(f for f in failed if reach[f[0]])
        if overflow:
            raise graph.error(
                DomainError,
                f"the tangent of {graph.text(i)} overflows: it is too large for a float64",
                i,
            )
        raise slope_error(graph, i, values)
    return out
