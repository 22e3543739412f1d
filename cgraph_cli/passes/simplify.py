"""Algebraic simplification: ``x * 1``, ``x + 0``, ``0 * x``, ``--x``, ``x - x``, ``x / x``
where it is safe, constants gathered (``2 * (3 * x)`` is ``6 * x``), powers of powers.

Every rule keeps the value (beyond rounding) wherever the original evaluates, where every
value is finite: so ``0 * x`` is 0 and ``x - x`` is 0, where computing ``x`` cannot fail
(:func:`cannot_fail`: the error of ``log(-1)`` is not dropped). Constants are gathered only
where :func:`~cgraph_cli.passes.rewrite.gathers` says the values stay, underflow and overflow
included. ``x / x`` becomes 1 only where ``x`` is
a number other than 0: ``exp(x) / exp(x)`` is 0 / 0 where ``exp(x)`` underflows. A rule that drops an operand applies only where the result has that
operand's shape, whatever shapes the inputs turn out to have (see
:mod:`cgraph_cli.passes.rewrite`): a zero of a vector's shape stays ``0 * v`` until an
addition absorbs it.

>>> from cgraph_cli import parse
>>> from cgraph_cli.parse.unparse import to_source
>>> graph, rewrites = simplify(parse("y = sin(x) * 2 * 3 + sin(x) * 0 - -z"))
>>> print(to_source(graph), end="")
y = 6 * sin(x) + z
>>> graph, _ = simplify(parse("p = sin(x); y = p - p + 0 * log(x)"), {"x": ()})
>>> print(to_source(graph), end="")
p = sin(x)
y = 0 * log(x)
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.ir import Graph
from ..core.ops import CONST, INPUT, OPS
from .rewrite import Rewrite, Walk, gathers, walk

ADD, SUB, MUL, DIV, NEG, POW = (OPS[n] for n in ("add", "sub", "mul", "div", "neg", "pow"))


def simplify(
    graph: Graph, known: Mapping[str, tuple[int, ...]] | None = None
) -> tuple[Graph, list[Rewrite]]:
    """``graph`` with the algebraic identities above applied."""
    return walk(graph, RULES, known)


def rule(w: Walk, i: int, op, args, params) -> int | None:
    """A node equal to ``op(*args, *params)`` by the rules above, or None."""
    if op.arity == 2 and op in _BINARY:
        return _BINARY[op](w, *args)
    if op is NEG and w.b.graph.ops[args[0]] is NEG:  # --x
        return w.b.graph.args[args[0]][0]
    return None


def _zero(w: Walk, n: int) -> bool:
    """``n`` is 0 wherever it is finite: the number 0, or 0 times something that cannot fail
    (dropping it must not drop an error the original reports: ``0 * log(x)`` at ``x = -1``)."""
    g = w.b.graph
    return w.const_value(n) == 0.0 or (
        g.ops[n] is MUL
        and any(w.const_value(a) == 0.0 for a in g.args[n])
        and all(cannot_fail(g, a) for a in g.args[n])
    )


#: Ops whose value is a finite number for any finite arguments: no domain, no overflow.
TOTAL = frozenset(
    "neg abs sign sin cos tanh sigmoid relu min max where eq ne lt le gt ge logical_and "
    "logical_or logical_not".split()
)
_LOOK = 64  # nodes looked at, at most: past that a part counts as one that may fail


def cannot_fail(g, node: int, given: int = 0) -> bool:
    """Whether evaluating ``node`` cannot raise, whatever the (finite) inputs: it is made of
    inputs, numbers and :data:`TOTAL` ops only (a bounded look, so never quadratic). The
    nodes below ``given`` count as finite values given (a derivative program's forward
    values): whether ``node`` is finite wherever they are."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen or n < given:
            continue
        seen.add(n)
        if len(seen) > _LOOK:
            return False
        op = g.ops[n]
        if op is not INPUT and op is not CONST:
            if op.name not in TOTAL:
                return False
            stack.extend(g.args[n])
    return True


def _keeps(w: Walk, x: int, y: int) -> bool:
    """``x`` has the shape of an elementwise op on ``x`` and ``y``."""
    return w.shape(y) <= w.shape(x)


def _zero_like(w: Walk, x: int) -> int:
    """A 0 of ``x``'s shape: the number, or ``0 * x``."""
    zero = w.b.const(0.0)
    return zero if w.is_number(x) else w.b.apply(MUL, (zero, x))


def _add(w: Walk, x: int, y: int) -> int | None:
    g = w.b.graph
    if _zero(w, y) and _keeps(w, x, y):
        return x
    if _zero(w, x) and _keeps(w, y, x):
        return y
    if g.ops[y] is NEG:  # x + -y
        return w.b.apply(SUB, (x, g.args[y][0]))
    return None


def _sub(w: Walk, x: int, y: int) -> int | None:
    g = w.b.graph
    if _zero(w, y) and _keeps(w, x, y):
        return x
    if _zero(w, x) and _keeps(w, y, x):
        return w.b.apply(NEG, (y,))
    if x == y and cannot_fail(g, x):  # x - x is 0, unless computing x fails
        return _zero_like(w, x)
    if g.ops[y] is NEG:  # x - -y
        return w.b.apply(ADD, (x, g.args[y][0]))
    return None


def _mul(w: Walk, x: int, y: int) -> int | None:
    g, value = w.b.graph, w.const_value
    if value(y) is not None and value(x) is None:  # constants first: 2 * x
        found = _mul(w, y, x)
        return found if found is not None else w.b.apply(MUL, (y, x))
    c = value(x)
    if c == 1.0 and _keeps(w, y, x):
        return y
    if c == -1.0 and _keeps(w, y, x):
        return w.b.apply(NEG, (y,))
    if c == 0.0 and w.is_number(y) and cannot_fail(g, y):
        return x
    if c is not None and g.ops[y] is MUL and value(g.args[y][0]) is not None:
        inner, rest = g.args[y]  # 2 * (3 * x) -> 6 * x
        product = w.b.fold(MUL, (x, inner), ())
        if product is not None and gathers(c, value(inner), value(product)):
            return w.b.apply(MUL, (product, rest))
    if g.ops[x] is NEG and g.ops[y] is NEG:
        return w.b.apply(MUL, (g.args[x][0], g.args[y][0]))
    return None


def _div(w: Walk, x: int, y: int) -> int | None:
    value = w.const_value
    if value(y) == 1.0 and _keeps(w, x, y):
        return x
    # x / x is 1 only for a number that is not 0. Not for exp(a), sigmoid(a), softplus(a),
    # positive as they are: a float underflows to 0 (exp(-1000) / exp(-1000) is 0 / 0, an
    # error the original reports), and computing them may fail (exp(1000) overflows).
    if x == y and w.is_number(x) and value(x) not in (None, 0.0):
        return w.b.const(1.0)
    return None


def _pow(w: Walk, x: int, y: int) -> int | None:
    g, value = w.b.graph, w.const_value
    c = value(y)
    if c == 1.0:
        return x
    if c == 0.0 and w.is_number(x) and cannot_fail(g, x):
        return w.b.const(1.0)
    if c is not None and c.is_integer() and g.ops[x] is POW:
        base, inner = g.args[x]
        d = value(inner)
        # (x^2)^3 -> x^6: whole positive powers only. A negative one turns the inner power's
        # underflow into an overflow the original reports ((x^-1)^-1 at x = 1e-310 errs, x
        # does not), and x^-2 may overflow where (x^-2)^-3 is 0 (x = 1e-160).
        if d is not None and d.is_integer() and c > 0.0 and d > 0.0:
            power = w.b.fold(MUL, (y, inner), ())  # None where c * d overflows (1e200 * 1e200)
            return None if power is None else w.b.apply(POW, (base, power))
    return None


_BINARY = {ADD: _add, SUB: _sub, MUL: _mul, DIV: _div, POW: _pow}


RULES = (("simplify", rule),)  # the pass's rules, for the walk
