"""Dead-code elimination: drop the statements and nodes the output does not need, and a
statement that only names a value a later statement names again (``p = x; q = p``: the value
keeps its last name).

Inputs stay: the optimizer keeps every input of the original program declared (see
:func:`cgraph_cli.passes.optimize.optimize`), so the same bindings run the result.

>>> from cgraph_cli import parse
>>> from cgraph_cli.parse.unparse import to_source
>>> graph, rewrites = dce(parse("p = x * 2\\nq = sin(p)\\ny = p + 1"))
>>> print(to_source(graph), end="")
p = x * 2
y = p + 1
>>> [(r.before, r.after) for r in rewrites]
[('q = sin(p)', '(not needed)')]
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.ir import Graph, relayout
from ..core.walks import ancestors
from .rewrite import Rewrite, has_budget, spend


def dce(
    graph: Graph, known: Mapping[str, tuple[int, ...]] | None = None, *, lay_out: bool = True
) -> tuple[Graph, list[Rewrite]]:
    """``graph`` without the statements (and nodes) its output does not depend on, laid out
    again by :func:`~cgraph_cli.core.ir.relayout`; ``lay_out`` False: a graph with nothing
    to drop comes back as it is (the optimizer's next pass lays it out)."""
    from ..parse.unparse import expression

    needed = ancestors(graph, graph.output)
    statements = list(graph.statements())
    renamed: dict[int, str] = {}  # node -> the name a later statement gives it
    kept, rewrites = [], []
    for kind, name, node, _ in reversed(statements):
        later = renamed.get(node)
        if kind == "input" or (needed[node] and later is None) or not has_budget():
            kept.append((kind, name, node))
            renamed.setdefault(node, name)
            continue
        spend()
        start, end = graph.starts[node], graph.ends[node]
        text = f"{name} = {expression(graph, node)}" if kind == "=" else name
        why = "(not needed)" if later is None else f"(named {later} below)"
        rewrites.append(Rewrite("dce", start, end, text, why))
    kept.reverse()
    rewrites.reverse()
    dropped = sum(1 for i in range(len(graph.ops)) if not needed[i])
    laid_out = not lay_out or "copied_from" in graph.memo  # (relayout made it)
    if not dropped and len(kept) == len(statements) and laid_out:
        return graph, rewrites
    out = relayout(graph, kept, graph.output, graph.output_label)
    if len(out.ops) < len(graph.ops) and not rewrites and dropped:
        rewrites.append(Rewrite("dce", 0, 0, f"{dropped} unused nodes", "(not needed)"))
    return out, rewrites
