"""Loops run as scans, in process: a program with ``for`` loops, forward and backward,
without unrolling it. The module :mod:`cgraph_cli.run.scan_code` writes for the bindings'
shapes (the loops as Python ``for`` loops over step functions compiled from their bodies, run
back over the saved steps for gradients; ``a if c else b`` in them an ``if``, the branch not
taken never run) is executed once and kept on the graph.

Everything else gives None, and the caller runs the graph that runs
(:func:`cgraph_cli.run.control.run_graph`), which answers with today's messages: nested
loops, a value not finite on the way, a domain left, an index past the end, an output
named in a loop's body that the loop does not carry (``h_1``, ``h_2``... in the graph that
runs).

>>> from cgraph_cli import parse
>>> g = parse("input a = 0.5\\nh = 1\\nfor t in range(3):\\n    h = h * a + t")
>>> value, grads = scan_grad(g, {})
>>> value, grads["a"]
(2.625, 1.75)
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.arrays import ShapeMismatch, np
from ..core.errors import CgraphError
from ..core.ir import Graph
from ..core.ops import INPUT

#: A loop's steps times its body's operations at or above which the first call runs as a
#: scan (a smaller loop's first call unrolls it: cheaper than compiling).
AT_ONCE = 2_000


def scan_grad(graph: Graph, bindings: Mapping | None, of: str | None = None):
    """``(value, gradients)`` of a program with loops run as a scan (see the module's
    text); None where the graph that runs must answer."""
    return _scan(graph, bindings, of, gradient=True)


def scan_forward(graph: Graph, bindings: Mapping | None, of: str | None = None):
    """``(value,)`` of a program with loops run as a scan, the forward pass alone; None
    where the graph that runs must answer."""
    return _scan(graph, bindings, of, gradient=False)


def steps_times_body(graph: Graph, bindings: Mapping | None) -> int:
    """About how many operations the loops of ``graph`` unroll into for ``bindings`` (the
    steps of a loop whose bound is an input's length times its body), 0 where unknown."""
    total = 0
    for loop in getattr(graph.control, "loops", ()):
        bound, node = loop.count or (None, None)
        if isinstance(bound, int):
            total += bound * (loop.hi - loop.lo)
        elif node is not None and graph.ops[node] is INPUT and bound:
            name = graph.labels[node] or ""
            value = (bindings or {}).get(name, graph.defaults.get(name))
            try:
                if bound[0] == "value":
                    total += int(float(value)) * (loop.hi - loop.lo)
                    continue
                shape = (
                    np.shape(value) if isinstance(value, list) or hasattr(value, "shape") else ()
                )
            except (TypeError, ValueError, OverflowError):  # the checks say what is wrong
                continue
            if len(shape) > bound[2] >= -len(shape):
                total += shape[bound[2]] * (loop.hi - loop.lo)
    return total


# What the module raises on values it cannot take: the graph that runs says what and where.
_FAILURES = (ArithmeticError, ValueError, TypeError, IndexError)


def _scan(graph: Graph, bindings: Mapping | None, of: str | None, gradient: bool):
    from ..data.bindings import check_bindings, input_values

    try:
        inputs, missing = input_values(graph, check_bindings(graph, bindings))
    except CgraphError:
        return None
    if missing:
        return None
    from .scan_code import works_on_arrays

    tensor = works_on_arrays(graph, {n: getattr(v, "shape", ()) for n, v in inputs.items()})
    key = repr((of, gradient, tensor, [(n, getattr(v, "shape", ())) for n, v in inputs.items()]))
    found = graph.memo.setdefault("scan modules", {}).get(key)
    if found is None:
        found = graph.memo["scan modules"][key] = _module(graph, inputs, of, gradient, tensor)
    if not found:
        return None
    try:
        value, grads = found(gradient, inputs)
    except _FAILURES:
        return None
    if not gradient:
        return (value,)
    from ..data.bindings import owned

    return value, owned(grads, inputs)


def _module(graph: Graph, inputs: Mapping, of, gradient: bool, tensor: bool):
    """The module's ``_run`` for these shapes, or False where no module is written: a
    program with loops as a scan (:func:`cgraph_cli.run.scan_code.loop_module`), one with
    if/else alone as straight-line code with its ifs (the branch not taken never computed)."""
    from .scan_code import compile_module

    try:
        source = compile_module(
            graph, "numpy" if tensor else "python", of=of, bindings=inputs, gradient=gradient
        )
    except (CgraphError, ShapeMismatch):
        return False
    namespace: dict = {"__name__": "cgraph_scan"}
    exec(compile(source, "<cgraph scan>", "exec"), namespace)  # our own generated code
    if "_run" in namespace:  # loops
        from .control import MAX_LOOP_STEPS, MAX_RUN_NODES

        # Past these, and for a loop of no steps, the graph that runs answers, as it always has.
        namespace.update(MAX_STEPS=MAX_LOOP_STEPS, MAX_NODES=MAX_RUN_NODES, NO_STEPS=False)
        return namespace["_run"]
    from ..core.ir import resolve_name

    grad, forward = namespace["grad"], namespace["forward"]
    key = graph.display_name(graph.output if of is None else resolve_name(graph, of))

    def run(gradient: bool, given: Mapping):
        return grad(**given) if gradient else (forward(**given)[key], None)

    return run
