"""Common-subexpression elimination: the same op on the same arguments with the same
parameters is computed once (so are equal constants).

>>> from cgraph_cli import parse
>>> from cgraph_cli.parse.unparse import to_source
>>> graph, rewrites = cse(parse("y = sin(x) * 2 + sin(x) / 2"))
>>> print(to_source(graph), end="")
y = sin(x) * 2 + sin(x) / 2
>>> len(graph.ops), [(r.before, r.after) for r in rewrites]
(6, [('sin(x)', 'computed once')])
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.ir import Graph
from .rewrite import Rewrite, walk


def cse(
    graph: Graph, known: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[Graph, list[Rewrite]]:
    """``graph`` with repeated computations merged into one node."""
    return walk(graph, (), known, merge=True)
