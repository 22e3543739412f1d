"""The op table: the only place an operation is defined.

Each :class:`OpSpec` holds an op's arity, its forward rule, its local partial derivatives, how
it prints in source and in diagrams, what its domain is, and an example the tests parse. Both
differentiation modes follow from the local partials ``p_k = ∂out/∂arg_k``:

- reverse (vjp): ``grad[arg_k] += p_k * grad[node]``
- forward (jvp): ``tangent[node] = Σ_k p_k * tangent[arg_k]``

Rules take plain floats; ``partials`` also receives the node's own output, which several
derivatives reuse (``exp' = out``, ``tanh' = 1 - out²``). Domain errors surface as the
``ValueError``/``ZeroDivisionError``/``OverflowError`` that :mod:`math` raises; the passes turn
them into messages using ``domain``.

>>> OPS["mul"].forward(4.0, -3.0), OPS["mul"].partials(4.0, -3.0, -12.0)
(-12.0, (-3.0, 4.0))
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

# Printing precedence, loosest first. Leaves and calls never need parentheses.
PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 1, 2, 3, 4, 5

INFIX, PREFIX, CALL, LEAF = "infix", "prefix", "call", "leaf"


@dataclass(frozen=True, slots=True)
class OpSpec:
    """Everything cgraph knows about one operation."""

    name: str  # the grammar alias / function name; stable, used in JSON and golden files
    arity: int
    forward: Callable[..., float] | None
    partials: Callable[..., tuple[float, ...]] | None  # (*args, out) -> one partial per arg
    symbol: str  # in source text: "+", "^", "sin"
    glyph: str  # in tables and diagrams: "×", "−"
    style: str  # INFIX, PREFIX, CALL or LEAF
    precedence: int = PREC_ATOM
    right_assoc: bool = False
    function: bool = False  # callable as NAME(args) in programs
    domain: str = ""  # what the forward rule needs, said when it fails
    example: str = ""  # a program whose output node is this op
    # For ops with a kink: a signed quantity whose sign says which smooth piece the arguments
    # are on (relu: x; max: x - y); 0 at the kink itself. gradcheck skips points where a
    # finite-difference step crosses it.
    kink: Callable[..., float] | None = None
    # Each local partial as a formula, for diagrams and explanations: {0}, {1} name the
    # arguments, {out} the node itself. mul: ∂out/∂a = b, ∂out/∂b = a.
    derivative: tuple[str, ...] = ()
    # The partials when they do not depend on the values (add, sub, neg): the reverse pass
    # then reads them instead of calling `partials`, which saves a call on the hot path.
    constant: tuple[float, ...] | None = None
    # For mul: each partial is the other argument, which the reverse pass reads directly.
    swapped: bool = False

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _div(x: float, y: float) -> float:
    return x / y  # ZeroDivisionError for x/0 and 0/0, which the passes report


def _pow(x: float, y: float) -> float:
    return math.pow(x, y)  # raises for (-8)^(1/3) and 0^-1, unlike ** which returns complex


def _pow_partials(x: float, y: float, out: float) -> tuple[float, float]:
    if y == 0.0:
        dx = 0.0
    elif x == 0.0:  # 0^(y-1) with y < 1 is infinite: say so rather than fail here
        dx = 0.0 if y > 1.0 else (1.0 if y == 1.0 else math.inf)
    else:
        dx = y * math.pow(x, y - 1.0)
    # d/dy x^y = x^y ln x. At x = 0 PyTorch takes 0; for x < 0 it is undefined (nan), which the
    # reverse pass reports if it reaches an input.
    if x > 0.0:
        dy = out * math.log(x)
    elif x == 0.0:
        dy = 0.0
    else:
        dy = math.nan
    return dx, dy


def _sigmoid(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # never overflows for x < 0
    return z / (1.0 + z)


def _relu(x: float) -> float:
    return x if x > 0.0 else 0.0


def _sign(x: float) -> float:
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


def _max_partials(x: float, y: float, out: float) -> tuple[float, float]:
    if x > y:
        return 1.0, 0.0
    if x < y:
        return 0.0, 1.0
    return 0.5, 0.5  # a tie splits the gradient, as torch.maximum does


def _min_partials(x: float, y: float, out: float) -> tuple[float, float]:
    if x < y:
        return 1.0, 0.0
    if x > y:
        return 0.0, 1.0
    return 0.5, 0.5


def _kink_at_zero(x: float) -> float:
    return x


def _kink_at_tie(x: float, y: float) -> float:
    return x - y


def _infix(name, symbol, glyph, prec, forward, partials, example, derivative, **kw) -> OpSpec:
    return OpSpec(
        name,
        2,
        forward,
        partials,
        symbol,
        glyph,
        INFIX,
        prec,
        example=example,
        derivative=derivative,
        **kw,
    )


def _fn(name, arity, forward, partials, example, derivative, **kw) -> OpSpec:
    return OpSpec(
        name,
        arity,
        forward,
        partials,
        name,
        name,
        CALL,
        function=True,
        example=example,
        derivative=derivative,
        **kw,
    )


_TABLE = (
    OpSpec("input", 0, None, None, "", "", LEAF),
    OpSpec("const", 0, None, None, "", "", LEAF),
    _infix(
        "add", "+", "+", PREC_SUM, operator.add, lambda x, y, o: (1.0, 1.0), "x + y", ("1", "1"),
        constant=(1.0, 1.0),
    ),
    _infix(
        "sub", "-", "−", PREC_SUM, operator.sub, lambda x, y, o: (1.0, -1.0), "x - y", ("1", "-1"),
        constant=(1.0, -1.0),
    ),
    _infix(
        "mul", "*", "×", PREC_PRODUCT, operator.mul, lambda x, y, o: (y, x), "x * y", ("{1}", "{0}"),
        swapped=True,
    ),
    _infix(
        "div",
        "/",
        "÷",
        PREC_PRODUCT,
        _div,
        lambda x, y, o: (1.0 / y, -o / y),
        "x / y",
        ("1/{1}", "-{out}/{1}"),
        domain="the divisor must not be 0",
    ),
    OpSpec(
        name="pow", arity=2, forward=_pow, partials=_pow_partials, symbol="^", glyph="^",
        style=INFIX, precedence=PREC_POWER, right_assoc=True, function=True, example="x ^ y",
        derivative=("{1}·{0}^({1} - 1)", "{out}·log({0})"),
        domain="a negative base needs a whole exponent, and 0 has no negative powers",
    ),
    OpSpec(
        name="neg", arity=1, forward=operator.neg, partials=lambda x, o: (-1.0,), symbol="-",
        glyph="−", style=PREFIX, precedence=PREC_UNARY, example="-x", derivative=("-1",),
        constant=(-1.0,),
    ),
    _fn("sin", 1, math.sin, lambda x, o: (math.cos(x),), "sin(x)", ("cos({0})",)),
    _fn("cos", 1, math.cos, lambda x, o: (-math.sin(x),), "cos(x)", ("-sin({0})",)),
    _fn("tan", 1, math.tan, lambda x, o: (1.0 + o * o,), "tan(x)", ("1 + {out}²",)),
    _fn("exp", 1, math.exp, lambda x, o: (o,), "exp(x)", ("{out}",)),
    _fn(
        "log",
        1,
        math.log,
        lambda x, o: (1.0 / x,),
        "log(x)",
        ("1/{0}",),
        domain="log needs a positive argument",
    ),
    _fn(
        "sqrt",
        1,
        math.sqrt,
        lambda x, o: (0.5 / o,),
        "sqrt(x)",
        ("1/(2·{out})",),
        domain="sqrt needs a non-negative argument, and its slope is infinite at 0",
    ),
    _fn("tanh", 1, math.tanh, lambda x, o: (1.0 - o * o,), "tanh(x)", ("1 - {out}²",)),
    _fn(
        "sigmoid", 1, _sigmoid, lambda x, o: (o * (1.0 - o),), "sigmoid(x)", ("{out}·(1 - {out})",)
    ),
    _fn(
        "relu",
        1,
        _relu,
        lambda x, o: (1.0 if x > 0.0 else 0.0,),
        "relu(x)",
        ("[{0} > 0]",),
        kink=_kink_at_zero,
    ),
    _fn(
        "abs", 1, math.fabs, lambda x, o: (_sign(x),), "abs(x)", ("sign({0})",), kink=_kink_at_zero
    ),
    _fn(
        "min", 2, min, _min_partials, "min(x, y)", ("[{0} < {1}]", "[{1} < {0}]"), kink=_kink_at_tie
    ),
    _fn(
        "max", 2, max, _max_partials, "max(x, y)", ("[{0} > {1}]", "[{1} > {0}]"), kink=_kink_at_tie
    ),
)

#: Every op by name.
OPS: dict[str, OpSpec] = {op.name: op for op in _TABLE}
#: The ops a program may call as ``NAME(args)``.
FUNCTIONS: dict[str, OpSpec] = {op.name: op for op in _TABLE if op.function}

INPUT, CONST = OPS["input"], OPS["const"]
