"""Stabilization: rewrites that give the same value more accurately, or at all where the
original overflows: ``log(sum(exp(x)))`` is ``logsumexp(x)``, ``log(softmax(x))`` is
``log_softmax(x)``, ``log(1 + exp(x))`` is ``softplus(x)``, ``log(sigmoid(x))`` is
``-softplus(-x)`` and ``log(1 - sigmoid(x))`` is ``-softplus(x)``.

>>> from cgraph_cli import parse
>>> from cgraph_cli.parse.unparse import to_source
>>> graph, rewrites = stabilize(parse("y = log(sum(exp(v))) + log(1 + exp(x))"))
>>> print(to_source(graph), end="")
y = logsumexp(v) + softplus(x)
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.ir import Graph
from ..core.ops import OPS
from .rewrite import Rewrite, Walk, walk

LOG, EXP, SUM, SOFTMAX, SIGMOID, ADD, SUB, NEG = (
    OPS[n] for n in ("log", "exp", "sum", "softmax", "sigmoid", "add", "sub", "neg")
)
LOGSUMEXP, LOG_SOFTMAX, SOFTPLUS = (OPS[n] for n in ("logsumexp", "log_softmax", "softplus"))


def stabilize(
    graph: Graph, known: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[Graph, list[Rewrite]]:
    """``graph`` with the accurate forms above."""
    return walk(graph, RULES, known)


def rule(w: Walk, i: int, op, args, params) -> int | None:
    """A node equal to ``op(*args, *params)`` by the rules above, or None."""
    if op is not LOG:
        return None
    g, b = w.b.graph, w.b
    (x,) = args
    inner = g.ops[x]
    if inner is SUM and g.ops[g.args[x][0]] is EXP:
        return b.apply(LOGSUMEXP, g.args[g.args[x][0]], g.params.get(x, ()))
    if inner is SOFTMAX:
        return b.apply(LOG_SOFTMAX, g.args[x], g.params.get(x, ()))
    if inner is SIGMOID:  # log(sigmoid(z)) = -softplus(-z)
        return b.apply(NEG, (b.apply(SOFTPLUS, (b.apply(NEG, g.args[x]),)),))
    if inner is ADD:
        p, q = g.args[x]
        one, other = (p, q) if w.const_value(p) == 1.0 else (q, p)
        if w.const_value(one) == 1.0 and g.ops[other] is EXP:
            return b.apply(SOFTPLUS, g.args[other])
    if inner is SUB:
        p, q = g.args[x]
        if w.const_value(p) == 1.0 and g.ops[q] is SIGMOID:  # log(1 - sigmoid(z))
            return b.apply(NEG, (b.apply(SOFTPLUS, g.args[q]),))
    return None


RULES = (("stabilize", rule),)  # the pass's rules, for the walk
