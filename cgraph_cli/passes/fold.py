"""Constant folding: an operation on constants becomes the constant it computes, by the op's
own value rule, so a folded value equals the evaluated one bit for bit. An operation whose
value would not be finite there is left for the evaluation to report.

>>> from cgraph_cli import parse
>>> from cgraph_cli.parse.unparse import to_source
>>> graph, rewrites = fold(parse("y = x * (2 * 3) + exp(0)"))
>>> print(to_source(graph), end="")
y = x * 6 + 1
>>> [(r.before, r.after) for r in rewrites]
[('2 * 3', '6'), ('exp(0)', '1')]
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.ir import Graph
from ..core.ops import CONST
from .rewrite import Rewrite, Walk, walk


def fold(
    graph: Graph, known: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[Graph, list[Rewrite]]:
    """``graph`` with every operation on constants replaced by its value."""
    return walk(graph, RULES, known)


def rule(w: Walk, i: int, op, args, params) -> int | None:
    """The constant ``op(*args, *params)`` is, where ``args`` are constants, else None."""
    ops = w.b.graph.ops
    if not args or any(ops[a] is not CONST for a in args) or op.np is None:
        return None
    return w.b.fold(op, args, params)


RULES = (("fold", rule),)  # the pass's rules, for the walk
