"""Dead-code elimination: drop the statements and nodes the output does not need.

Inputs stay: the optimizer keeps every input of the original program declared (see
:func:`cgraph_cli.passes.optimize.optimize`), so the same bindings run the result.

>>> from cgraph_cli import parse
>>> from cgraph_cli.render.source import to_source
>>> graph, rewrites = dce(parse("p = x * 2\\nq = sin(p)\\ny = p + 1"))
>>> print(to_source(graph), end="")
p = x * 2
y = p + 1
>>> [(r.before, r.after) for r in rewrites]
[('q = sin(p)', '(not needed)')]
"""

from __future__ import annotations

from collections.abc import Mapping

from ..ir import Graph, ancestors, relayout
from .rewrite import Rewrite


def dce(
    graph: Graph, known: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[Graph, list[Rewrite]]:
    """``graph`` without the statements (and nodes) its output does not depend on."""
    needed = ancestors(graph, graph.output)
    kept, rewrites = [], []
    for kind, name, node, _ in graph.statements():
        if kind == "input" or needed[node]:
            kept.append((kind, name, node))
            continue
        start, end = graph.starts[node], graph.ends[node]
        from ..render.source import expression

        text = f"{name} = {expression(graph, node)}" if kind == "=" else name
        rewrites.append(Rewrite("dce", start, end, text, "(not needed)"))
    dropped = sum(1 for i in range(len(graph.ops)) if not needed[i])
    out = relayout(graph, kept, graph.output, graph.output_label)
    if len(out.ops) < len(graph.ops) and not rewrites and dropped:
        rewrites.append(Rewrite("dce", 0, 0, f"{dropped} unused nodes", "(not needed)"))
    return out, rewrites
