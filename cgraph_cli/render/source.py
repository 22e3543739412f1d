"""Graph -> program text that parses back to the same graph.

Named nodes become statements, unnamed ones are written inline with the fewest parentheses the
precedence rules need. Strings are built in node order, so depth costs no recursion.

>>> from cgraph_cli import parse
>>> print(to_source(parse("input x = 1\\np = x + y\\ng = -p ^ 2 * (z - 1)")))
input x = 1
p = x + y
g = -p ^ 2 * (z - 1)
"""

from __future__ import annotations

from ..ir import Graph
from ..numfmt import format_number
from ..ops import CONST, INFIX, INPUT, PREC_ATOM, PREC_UNARY, PREFIX


def expressions(graph: Graph) -> list[tuple[str, int]]:
    """For every node, its inline text and that text's precedence (how tightly it binds).

    A node that a statement named is referred to by its name while that name still means it;
    otherwise its expression is written out.
    """
    exprs: list[tuple[str, int]] = []
    current: dict[str, int] = {}  # name -> node it refers to at this point of the program
    for i, op in enumerate(graph.ops):
        label = graph.labels[i]
        if op is INPUT:
            exprs.append((label, PREC_ATOM))
            current[label] = i
            continue
        if op is CONST:
            value = graph.consts[i]
            exprs.append((format_number(value), PREC_UNARY if value < 0 else PREC_ATOM))
        else:
            exprs.append(_combine(op, [_ref(graph, exprs, current, a) for a in graph.args[i]]))
        if label is not None:
            current[label] = i
    return exprs


def _ref(graph: Graph, exprs, current: dict[str, int], node: int) -> tuple[str, int]:
    label = graph.labels[node]
    if label is not None and current.get(label) == node:
        return label, PREC_ATOM
    return exprs[node]


def _combine(op, args: list[tuple[str, int]]) -> tuple[str, int]:
    if op.style == INFIX:
        (left, lp), (right, rp) = args
        p = op.precedence
        # Parenthesize whatever the parser would otherwise group differently: an equal
        # precedence on the right of a left-associative op, on the left of a right-associative.
        if lp < p or (lp == p and op.right_assoc):
            left = f"({left})"
        if rp < p or (rp == p and not op.right_assoc):
            if not (op.right_assoc and rp == PREC_UNARY):  # 2 ^ -1 needs none
                right = f"({right})"
        return f"{left} {op.symbol} {right}", p
    if op.style == PREFIX:
        (arg, ap), = args
        return op.symbol + (arg if ap >= PREC_UNARY else f"({arg})"), PREC_UNARY
    return f"{op.symbol}({', '.join(a for a, _ in args)})", PREC_ATOM


def to_source(graph: Graph) -> str:
    """Program text for ``graph``: input declarations, one statement per named node, and the
    output as a bare expression when it has no name."""
    exprs = expressions(graph)
    lines = []
    for name in graph.inputs:
        if name in graph.defaults:
            lines.append(f"input {name} = {format_number(graph.defaults[name])}")
    current: dict[str, int] = {name: node for name, node in graph.inputs.items()}
    named_at = _statement_names(graph)
    for i in range(len(graph.ops)):
        for name in named_at.get(i, ()):
            text = _ref(graph, exprs, current, i)[0] if graph.labels[i] != name else exprs[i][0]
            lines.append(f"{name} = {text}")
            current[name] = i
    if graph.output not in named_at:
        lines.append(exprs[graph.output][0])
    return "\n".join(lines) + "\n"


def _statement_names(graph: Graph) -> dict[int, list[str]]:
    """Node -> names that statements gave it (its label, then aliases), in program order."""
    named: dict[int, list[str]] = {}
    for i, label in enumerate(graph.labels):
        if label is not None and graph.ops[i] is not INPUT:
            named.setdefault(i, []).append(label)
    for name, node in graph.names.items():
        if name not in named.get(node, ()):
            named.setdefault(node, []).append(name)
    return named
