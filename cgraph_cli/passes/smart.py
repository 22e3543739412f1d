"""Algebraic simplification, applied as nodes are built (smart constructors), so that every
transform's graph reads as a textbook would write it: no ``x*1``, ``x+0``, ``0*x``; constants
folded; ``2*x`` rather than ``2*x^(2-1)``.

:func:`rewrite` is asked before a node is added: it returns an existing node (or a constant it
made) that computes the same value, or ``None`` to add the node as asked. Folding evaluates
through the op table's own value rules, so a folded constant equals the evaluated value bit
for bit. A rewrite never changes a value beyond rounding, nor a shape: rules that would
(``0 * x`` where ``x`` broadcasts) are skipped when shapes differ. Nor does it drop an error:
``g * (1 / x)`` stays as it is (not ``g / x``), since ``1 / x`` overflows at a subnormal ``x``
where ``g / x`` may not, and the interpreter, like every engine, multiplies the gradient by the
local derivative (``log``'s at ``1e-310`` is too large for a float64).
"""

from __future__ import annotations

from ..core.ops import CONST, OPS
from .rewrite import gathers

ADD, SUB, MUL, DIV, NEG, POW = (OPS[n] for n in ("add", "sub", "mul", "div", "neg", "pow"))
WHERE, SUM, SUM_TO, BROADCAST, RESHAPE, TRANSPOSE = (
    OPS[n] for n in ("where", "sum", "sum_to", "broadcast_to", "reshape", "transpose")
)


def rewrite(b, op, args: tuple[int, ...], params: tuple) -> int | None:
    """A node equal to ``op(*args, *params)`` that ``b`` (a GraphBuilder) already has or can
    make more simply, or None.

    >>> from cgraph_cli.core.ir import GraphBuilder
    >>> b = GraphBuilder(simplify=rewrite)
    >>> x = b.input("x")
    >>> b.apply(OPS["mul"], (b.const(1.0), x)) == x
    True
    """
    value = b.const_value
    if (
        args
        and all(b.graph.ops[a] is CONST for a in args)
        and op.np is not None
        and op.name not in _SHAPE_ONLY
    ):
        folded = b.fold(op, args, params)
        if folded is not None:
            return folded
    if op.elementwise and b.shapes is not None:
        # An operand broadcast by hand is broadcast by the op itself: mul(broadcast_to(c), y).
        # So is one reshaped only to gain leading axes of 1: sub(g, reshape(sum(h), [1])).
        plain = tuple(b.graph.args[a][0] if _stretched(b, a) else a for a in args)
        if plain != args and b.result_shape(op, plain, params) == b.result_shape(op, args, params):
            return b.apply(op, plain, params)
    shape = b.shape_of
    same = (
        (lambda a: shape(a) == b.result_shape(op, args, params))
        if b.shapes is not None
        else (lambda a: True)
    )
    if op is ADD:
        x, y = args
        if value(y) == 0.0 and same(x):
            return x
        if value(x) == 0.0 and same(y):
            return y
        if b.graph.ops[y] is NEG:  # x + -y -> x - y
            return b.apply(SUB, (x, b.graph.args[y][0]))
        flipped = _flipped(b, y)
        if flipped is not None:  # x + -2 * y -> x - 2 * y
            return b.apply(SUB, (x, flipped))
        if x == y:  # x + x -> 2 * x, exactly
            return b.apply(MUL, (b.const(2.0), x))
    elif op is SUB:
        x, y = args
        if value(y) == 0.0 and same(x):
            return x
        if value(x) == 0.0 and same(y):
            return b.apply(NEG, (y,))
        if b.graph.ops[y] is NEG:  # x - -y -> x + y
            return b.apply(ADD, (x, b.graph.args[y][0]))
        flipped = _flipped(b, y)
        if flipped is not None:  # x - -2 * y -> x + 2 * y
            return b.apply(ADD, (x, flipped))
    elif op is MUL:
        x, y = args
        if value(y) is not None and value(x) is None:
            return b.apply(MUL, (y, x))  # constants first: 2 * x
        if value(x) == 1.0 and same(y):
            return y
        if value(x) == 0.0 and same(x):
            return x
        if value(x) == -1.0 and same(y):
            return b.apply(NEG, (y,))
        if value(x) is not None and b.graph.ops[y] is MUL and value(b.graph.args[y][0]) is not None:
            inner, rest = b.graph.args[y]  # 2 * (3 * x) -> 6 * x, where that keeps values
            c = b.fold(MUL, (x, inner), ())
            if c is not None and gathers(value(x), value(inner), value(c), overflow_is_error=False):
                return b.apply(MUL, (c, rest))
        if b.graph.ops[y] is WHERE and _selects_constants(b, y) and same(x) and _plain(b, y):
            # g * where(c, 1, 0) -> where(c, g, 0): the product goes into the branches
            c, p, q = b.graph.args[y]
            return b.apply(WHERE, (c, _times(b, x, p), _times(b, x, q)))
        if b.graph.ops[x] is WHERE and _selects_constants(b, x) and same(y) and _plain(b, x):
            c, p, q = b.graph.args[x]  # where(c, 1, 0) * g -> where(c, g, 0)
            return b.apply(WHERE, (c, _times(b, y, p), _times(b, y, q)))
        if b.graph.ops[x] is NEG and b.graph.ops[y] is NEG:
            return b.apply(MUL, (b.graph.args[x][0], b.graph.args[y][0]))
        if b.graph.ops[x] is NEG:  # (-a) * b -> -(a * b): a sum then reads a - a * b
            return b.apply(NEG, (b.apply(MUL, (b.graph.args[x][0], y)),))
        if b.graph.ops[y] is NEG:
            return b.apply(NEG, (b.apply(MUL, (x, b.graph.args[y][0])),))
    elif op is DIV:
        x, y = args
        if value(y) == 1.0 and same(x):
            return x
        if value(x) == 0.0 and same(x):
            return x
        if b.graph.ops[x] is NEG:  # (-a) / b -> -(a / b)
            return b.apply(NEG, (b.apply(DIV, (b.graph.args[x][0], y)),))
    elif op is NEG:
        (x,) = args
        if b.graph.ops[x] is NEG:
            return b.graph.args[x][0]
        if b.graph.ops[x] is SUB:  # -(a - b) -> b - a
            return b.apply(SUB, tuple(reversed(b.graph.args[x])))
        flipped = _flipped(b, x)
        if flipped is not None:  # -(-2 * a) -> 2 * a
            return flipped
        if b.graph.ops[x] is DIV and value(b.graph.args[x][0]) is not None:
            c, d = b.graph.args[x]  # -(1 / a) -> -1 / a
            return b.apply(DIV, (b.const(-value(c)), d))
    elif op is POW:
        x, y = args
        if value(y) == 1.0:
            return x
    elif op is WHERE:
        c, x, y = args
        if value(c) is not None and same(x if value(c) else y):
            return x if value(c) else y
        if x == y and same(x):
            return x
    elif op in (SUM_TO, BROADCAST, RESHAPE):
        (x,) = args
        if b.shapes is not None and tuple(params[0]) == shape(x):
            return x
        if op is BROADCAST and b.graph.ops[x] is RESHAPE and shape(b.graph.args[x][0]) == ():
            return b.apply(BROADCAST, (b.graph.args[x][0],), params)  # a number needs no reshape
        if op is not BROADCAST and tuple(params[0]) == ():
            return b.apply(SUM, (x,))  # to a number: the sum (sum_to(g, []) does not parse)
    elif op is SUM and b.graph.ops[args[0]] is NEG:  # sum(-a) -> -sum(a), exactly
        return b.apply(NEG, (b.apply(SUM, b.graph.args[args[0]], params),))
    elif op is TRANSPOSE:
        (x,) = args
        if b.graph.ops[x] is TRANSPOSE:  # one transpose of the two permutations, composed
            inner, outer = b.graph.params.get(x, ()), params
            given = [p[0] for p in (inner, outer) if p and p[0] is not None]
            if not given:  # the axes reversed twice
                return b.graph.args[x][0]
            n = len(given[0])
            p1, p2 = (
                tuple(p[0]) if p and p[0] is not None else tuple(range(n - 1, -1, -1))
                for p in (inner, outer)
            )
            composed = tuple(p1[k] for k in p2)
            if composed == tuple(range(n)):
                return b.graph.args[x][0]
            return b.apply(TRANSPOSE, (b.graph.args[x][0],), (composed,))
        if b.shapes is not None and len(shape(x)) < 2:
            return x
    return None


_SHAPE_ONLY = ("reshape", "broadcast_to", "sum_to", "transpose", "place", "index")


def _times(b, x: int, branch: int) -> int:
    """``x * branch`` inside a where: a 0 stays the number 0 (the where gives the shape)."""
    if b.const_value(branch) == 0.0:
        return branch
    return b.apply(MUL, (x, branch))


def _stretched(b, node: int) -> bool:
    """``broadcast_to(a, ...)``, or ``reshape(a, [1, ..., *shape of a])``."""
    op = b.graph.ops[node]
    if op is BROADCAST:
        return True
    if op is not RESHAPE:
        return False
    shape, target = b.shape_of(b.graph.args[node][0]), tuple(b.graph.params[node][0])
    extra = len(target) - len(shape)
    return extra >= 0 and target == (1,) * extra + shape


def _flipped(b, node: int) -> int | None:
    """For a negative number ``c``, or ``c * a`` (constants come first in a product), or
    either times more factors (``c * a * (1 / d)``), or any of these over a divisor (``c / d``,
    ``c * a / d``): the same with ``-c``, exactly the negated value; else None."""
    divisor = None
    if b.graph.ops[node] is DIV:
        node, divisor = b.graph.args[node]
    inner = _innermost(b, node)
    value = b.const_value(node)
    if value is not None and value < 0.0:
        return b.const(-value) if divisor is None else b.apply(DIV, (b.const(-value), divisor))
    if b.graph.ops[inner] is not MUL or (b.const_value(b.graph.args[inner][0]) or 0.0) >= 0.0:
        return None
    factors = []  # the right operands down the product's left side, outermost first
    while node != inner:
        node, rest = b.graph.args[node]
        factors.append(rest)
    c, a = b.graph.args[inner]
    flipped = b.apply(MUL, (b.const(-b.const_value(c)), a))
    for rest in reversed(factors):
        flipped = b.apply(MUL, (flipped, rest))
    return flipped if divisor is None else b.apply(DIV, (flipped, divisor))


def _innermost(b, node: int) -> int:
    """The innermost product down ``node``'s left side (``c * a`` of ``c * a * r * s``), or
    ``node`` itself: remembered per node, so that the sums of a long product's partial
    derivatives, each asking of its own term, walk each link once (not once per term)."""
    walked = []
    while b.graph.ops[node] is MUL and b.graph.ops[b.graph.args[node][0]] is MUL:
        known = b._memo.get(("innermost", node))
        if known is not None:
            node = known
            break
        walked.append(node)
        node = b.graph.args[node][0]
    for w in walked:
        b._memo[("innermost", w)] = node
    return node


def _selects_constants(b, node: int) -> bool:
    """``where(c, p, q)`` whose branches are numbers or such selections themselves
    (``where(x > y, 1, where(x < y, 0, 0.5))``)."""
    stack = [node]
    while stack:
        _, p, q = b.graph.args[stack.pop()]
        for branch in (p, q):
            if b.graph.ops[branch] is WHERE:
                stack.append(branch)
            elif b.const_value(branch) is None:
                return False
    return True


def _plain(b, node: int) -> bool:
    """Whether ``node`` is an unmarked ``where`` (a compiled conditional's select, marked,
    computes only its branch taken: a product must not move into its branches)."""
    return not b.graph.params.get(node)
