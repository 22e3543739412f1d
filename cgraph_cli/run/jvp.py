"""Forward mode (jvp): every node's directional derivative along tangents given to inputs.

:func:`push` is the one forward-mode loop: each node's tangent is its jvp rule applied to its
arguments' tangents (an elementwise op: the sum of its local partials times them), under any
interpretation of the op vocabulary: NumPy arrays (:func:`jvp`), or a graph builder, which
makes the forward-mode derivative program (:mod:`cgraph_cli.passes.grad_graph`). Scalar
programs take a loop specialised for speed, with the partials compiled from the same rules.

>>> from cgraph_cli import parse
>>> from cgraph_cli.run.evaluate import forward
>>> g = parse("g = (x + y) * z")
>>> jvp(g, forward(g, {"x": 1, "y": 3, "z": -3}), {"x": 1.0})[g.output]
-3.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..core.arrays import np, shape_of, show_shape
from ..core.autodiff import elementwise_tangent, push
from ..core.errors import BindingError, DomainError
from ..core.interpret import ARRAYS
from ..core.ir import Graph
from ..data.bindings import as_array, check_number, finite, unknown_binding
from .evaluate import element, is_tensor_run, slope_error
from .floats import compile_program, step_partials


def jvp(graph: Graph, values: list, tangents: Mapping[str, object]) -> list:
    """Forward mode: every node's directional derivative along the input ``tangents``.

    >>> from cgraph_cli import forward, parse
    >>> g = parse("p = x + y; g = p * z")
    >>> jvp(g, forward(g, {"x": 1, "y": 3, "z": -3}), {"x": 1.0})
    [1.0, 0.0, 1.0, 0.0, -3.0]
    """
    if is_tensor_run(graph, values):
        return _jvp_arrays(graph, values, tangents)
    out = [0.0] * len(graph.ops)
    for name, t in tangents.items():
        if name not in graph.inputs:
            raise unknown_binding(graph, [name])
        out[graph.inputs[name]] = check_number(name, t)
    program = compile_program(graph)
    failed: list = []  # (node, overflow?) where a tangent first went non-finite, in order
    for i, _, p, a, b in program.steps:
        args = (a,) if b < 0 else (a, b)  # as the step holds them (add and mul may swap)
        if program.wide and len(graph.args[i]) > 2:
            args = graph.args[i]
        ts = [out[x] for x in args]
        if not any(ts):
            continue
        try:
            partials = step_partials(p, values, args, i)
        except (ArithmeticError, ValueError):
            partials = None
        if partials is not None:
            # As in reverse mode, a zero (tangent or partial) contributes nothing, even against
            # a value that is not finite.
            out[i] = sum(q * t for q, t in zip(partials, ts) if q and t)
            if out[i] - out[i] == 0.0:
                continue
        out[i] = math.nan
        if all(math.isfinite(t) for t in ts):  # here it went non-finite, not upstream
            overflow = partials is not None and all(
                math.isfinite(q) for q, t in zip(partials, ts) if t
            )
            failed.append((i, overflow))
    result = out[graph.output]
    if failed and result - result != 0.0:  # the output's tangent is not finite: say where
        from ..core.walks import ancestors

        reach = ancestors(graph, graph.output)
        i, overflow = next(f for f in failed if reach[f[0]])
        if overflow:
            raise graph.error(
                DomainError,
                f"the tangent of {graph.text(i)} overflows: it is too large for a float64",
                i,
            )
        raise slope_error(graph, i, values)
    return [float(t) for t in out]


def _jvp_arrays(graph: Graph, values: list, tangents: Mapping[str, object]) -> list:
    tan: list = [None] * len(graph.ops)
    for name, t in check_tangents(graph, values, tangents).items():
        tan[graph.inputs[name]] = t

    def check(i: int, ts: list) -> None:
        if tan[i] is None or finite(tan[i]):  # None: a comparison's tangent is zero
            return
        if graph.ops[i].vjp is None:  # a zero tangent meets an infinite partial?
            xs = [values[a] for a in graph.args[i]]
            tan[i] = elementwise_tangent(ARRAYS, graph.ops[i], xs, values[i], ts, checked=True)
            if finite(tan[i]):
                return
        raise _tangent_error(graph, values, i, ts)

    with np.errstate(all="ignore"):
        push(graph, values, ARRAYS, tan, on_node=check)
    return [
        (np.zeros_like(values[i]) if values[i].__class__ is not float else 0.0)
        if t is None
        else (float(t) if np.ndim(t) == 0 else np.array(t))
        for i, t in enumerate(tan)
    ]


def _tangent_error(graph: Graph, values: list, i: int, ts: list) -> DomainError:
    """The error for node ``i`` whose tangent is not finite: an infinite local derivative
    where the tangent is not zero (at its first element), or an overflow."""
    op = graph.ops[i]
    if op.vjp is None:
        shape = np.shape(values[i])
        xs = [values[a] for a in graph.args[i]]
        for rule, t in zip(op.partials or (), ts):
            if t is None or rule is None:
                continue
            p = np.broadcast_to(rule(ARRAYS, *xs, values[i]), shape)
            bad = ~np.isfinite(p) & (np.broadcast_to(t, shape) != 0.0)
            if bad.any():
                return slope_error(graph, i, values, *element(graph, values, i, bad))
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
