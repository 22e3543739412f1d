"""A program run end to end: the graph that runs for the bindings (one branch of each
conditional, the loops unrolled: :func:`cgraph_cli.run.control.run_graph`), then its forward
pass, and its reverse pass when gradients are asked for. Every feature that needs a
program's values or gradients at given bindings starts here.

>>> from cgraph_cli import parse
>>> ran, values, adjoints, out = differentiated(parse("g = (x + y) * z"), {"x": 1, "y": 3, "z": -3})
>>> values[out], [adjoints[n] for n in ran.inputs.values()]
(-12.0, [-3.0, -3.0, 4.0])
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.ir import Graph, resolve_name
from .evaluate import forward


def evaluated(
    graph: Graph, bindings: Mapping[str, object] | None = None, of: str | None = None
) -> tuple[Graph, list, int]:
    """``(the graph that ran, every node's value, the node of ``of``)`` (default: the
    output)."""
    ran = graph
    if graph.control is not None:  # straight-line code (most) needs no tracer imported
        from .control import run_graph

        ran = run_graph(graph, bindings)
    out = ran.output if of is None else resolve_name(ran, of)
    return ran, forward(ran, bindings), out


def differentiated(
    graph: Graph, bindings: Mapping[str, object] | None = None, of: str | None = None
) -> tuple[Graph, list, list, int]:
    """``(the graph that ran, values, adjoints of ``of``, its node)``: both passes."""
    from .vjp import vjp

    ran, values, out = evaluated(graph, bindings, of)
    return ran, values, vjp(ran, values, of=out), out
