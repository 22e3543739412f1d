"""The op table: the only place an operation is defined.

Each :class:`OpSpec` holds an op's arity, its forward rule, its local partial derivatives, how
it prints in source and in diagrams, what its domain is, and an example the tests parse. Both
differentiation modes follow from the local partials ``p_k = ∂out/∂arg_k``:

- reverse (vjp): ``grad[arg_k] += p_k * grad[node]``
- forward (jvp): ``tangent[node] = Σ_k p_k * tangent[arg_k]``

Scalar rules take plain floats (the fast path for scalar programs); the ``array_*`` rules take
NumPy arrays. Elementwise ops broadcast, and the reverse pass sums a broadcast operand's
gradient back to its shape. Ops that are not elementwise (``matmul``, ``sum``...) give their
own ``shape``, ``vjp`` and ``jvp`` rules and take static ``params`` written in the program
(``sum(x, 0)``: the axis). ``partials`` also receives the node's own output, which several
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

from . import arrays as A
from .arrays import np

# Printing precedence, loosest first. Leaves and calls never need parentheses.
PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 1, 2, 3, 4, 5

INFIX, PREFIX, CALL, LEAF, POSTFIX = "infix", "prefix", "call", "leaf", "postfix"


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
    # Tensors. Elementwise ops: NumPy forms of `forward` and `partials` (None: the scalar rule
    # works on arrays as it is); an array partial may be a function of no arguments, called
    # only when that argument needs a gradient (pow's ∂/∂y, a log of every element). Other ops: `forward(*args, *params)`, and `vjp(g, args, out,
    # params)` -> one cotangent per argument, `jvp(tangents, args, out, params)` -> the tangent
    # (a tangent of None is zero). `shape(arg shapes, params)` raises arrays.ShapeMismatch.
    elementwise: bool = True
    array_forward: Callable | None = None
    array_partials: Callable | None = None
    vjp: Callable | None = None
    jvp: Callable | None = None
    shape: Callable = A.elementwise_shape
    # Names of the numbers a call writes after its arguments (`sum(x, 0)`: "axis"); the first
    # `required` are required.
    params: tuple[str, ...] = ()
    required: int = 0
    # The reverse rule as formulas over the incoming gradient {g}, for explanations of tensor
    # ops: matmul ("{g} @ {1}ᵀ", "{0}ᵀ @ {g}").
    adjoint: tuple[str, ...] = ()

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


def _tensor_fn(
    name, forward, vjp, jvp, shape, params, adjoint, *, required=0, symbol=None, example=None
) -> OpSpec:
    return OpSpec(
        name,
        1,
        None,
        None,
        symbol or name,
        symbol or name,
        CALL,
        function=True,
        example=example or f"{symbol or name}(x)",
        elementwise=False,
        array_forward=forward,
        vjp=vjp,
        jvp=jvp,
        shape=shape,
        params=params,
        required=required,
        adjoint=adjoint,
    )


_TABLE = (
    OpSpec("input", 0, None, None, "", "", LEAF),
    OpSpec("const", 0, None, None, "", "", LEAF),
    _infix(
        "add",
        "+",
        "+",
        PREC_SUM,
        operator.add,
        lambda x, y, o: (1.0, 1.0),
        "x + y",
        ("1", "1"),
        constant=(1.0, 1.0),
    ),
    _infix(
        "sub",
        "-",
        "−",
        PREC_SUM,
        operator.sub,
        lambda x, y, o: (1.0, -1.0),
        "x - y",
        ("1", "-1"),
        constant=(1.0, -1.0),
    ),
    _infix(
        "mul",
        "*",
        "×",
        PREC_PRODUCT,
        operator.mul,
        lambda x, y, o: (y, x),
        "x * y",
        ("{1}", "{0}"),
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
        name="pow",
        arity=2,
        forward=_pow,
        partials=_pow_partials,
        symbol="^",
        glyph="^",
        style=INFIX,
        precedence=PREC_POWER,
        right_assoc=True,
        function=True,
        example="x ^ y",
        derivative=("{1}·{0}^({1} - 1)", "{out}·log({0})"),
        array_forward=lambda x, y: np.power(x, y),
        array_partials=A.pow_partials,
        domain="a negative base needs a whole exponent, and 0 has no negative powers",
    ),
    OpSpec(
        name="neg",
        arity=1,
        forward=operator.neg,
        partials=lambda x, o: (-1.0,),
        symbol="-",
        glyph="−",
        style=PREFIX,
        precedence=PREC_UNARY,
        example="-x",
        derivative=("-1",),
        constant=(-1.0,),
    ),
    _fn(
        "sin",
        1,
        math.sin,
        lambda x, o: (math.cos(x),),
        "sin(x)",
        ("cos({0})",),
        array_forward=lambda x: np.sin(x),
        array_partials=lambda x, o: (np.cos(x),),
    ),
    _fn(
        "cos",
        1,
        math.cos,
        lambda x, o: (-math.sin(x),),
        "cos(x)",
        ("-sin({0})",),
        array_forward=lambda x: np.cos(x),
        array_partials=lambda x, o: (-np.sin(x),),
    ),
    _fn(
        "tan",
        1,
        math.tan,
        lambda x, o: (1.0 + o * o,),
        "tan(x)",
        ("1 + {out}²",),
        array_forward=lambda x: np.tan(x),
    ),
    _fn(
        "exp",
        1,
        math.exp,
        lambda x, o: (o,),
        "exp(x)",
        ("{out}",),
        array_forward=lambda x: np.exp(x),
    ),
    _fn(
        "log",
        1,
        math.log,
        lambda x, o: (1.0 / x,),
        "log(x)",
        ("1/{0}",),
        domain="log needs a positive argument",
        array_forward=lambda x: np.log(x),
    ),
    _fn(
        "sqrt",
        1,
        math.sqrt,
        lambda x, o: (0.5 / o,),
        "sqrt(x)",
        ("1/(2·{out})",),
        domain="sqrt needs a non-negative argument, and its slope is infinite at 0",
        array_forward=lambda x: np.sqrt(x),
    ),
    _fn(
        "tanh",
        1,
        math.tanh,
        lambda x, o: (1.0 - o * o,),
        "tanh(x)",
        ("1 - {out}²",),
        array_forward=lambda x: np.tanh(x),
    ),
    _fn(
        "sigmoid",
        1,
        _sigmoid,
        lambda x, o: (o * (1.0 - o),),
        "sigmoid(x)",
        ("{out}·(1 - {out})",),
        array_forward=A.sigmoid,
    ),
    _fn(
        "relu",
        1,
        _relu,
        lambda x, o: (1.0 if x > 0.0 else 0.0,),
        "relu(x)",
        ("[{0} > 0]",),
        kink=_kink_at_zero,
        array_forward=A.relu,
        array_partials=lambda x, o: (A.step(x),),
    ),
    _fn(
        "abs",
        1,
        math.fabs,
        lambda x, o: (_sign(x),),
        "abs(x)",
        ("sign({0})",),
        kink=_kink_at_zero,
        array_forward=lambda x: np.abs(x),
        array_partials=lambda x, o: (np.sign(x),),
    ),
    _fn(
        "min",
        2,
        min,
        _min_partials,
        "min(x, y)",
        ("[{0} < {1}]", "[{1} < {0}]"),
        kink=_kink_at_tie,
        array_forward=lambda x, y: np.minimum(x, y),
        array_partials=A.min_partials,
    ),
    _fn(
        "max",
        2,
        max,
        _max_partials,
        "max(x, y)",
        ("[{0} > {1}]", "[{1} > {0}]"),
        kink=_kink_at_tie,
        array_forward=lambda x, y: np.maximum(x, y),
        array_partials=A.max_partials,
    ),
    # Tensor ops ------------------------------------------------------------------------------
    OpSpec(
        name="matmul",
        arity=2,
        forward=None,
        partials=None,
        symbol="@",
        glyph="@",
        style=INFIX,
        precedence=PREC_PRODUCT,
        example="a @ b",
        elementwise=False,
        array_forward=lambda a, b: a @ b,
        vjp=A.matmul_vjp,
        jvp=A.matmul_jvp,
        shape=A.matmul_shape,
        adjoint=("{g} @ {1}ᵀ", "{0}ᵀ @ {g}"),
    ),
    _tensor_fn(
        "sum",
        A.sum_forward,
        A.sum_vjp,
        A.linear_jvp(A.sum_forward),
        A.reduce_shape,
        ("axis",),
        ("{g} broadcast to the shape of {0}",),
    ),
    _tensor_fn(
        "mean",
        A.mean_forward,
        A.mean_vjp,
        A.linear_jvp(A.mean_forward),
        A.average_shape,
        ("axis",),
        ("{g} / n, broadcast to the shape of {0}",),
    ),
    _tensor_fn(
        "transpose",
        lambda x: np.transpose(x),
        A.transpose_vjp,
        A.linear_jvp(lambda x: np.transpose(x)),
        A.transpose_shape,
        (),
        ("{g}ᵀ",),
    ),
    _tensor_fn(
        "reshape",
        A.reshape_forward,
        A.reshape_vjp,
        A.reshape_jvp,
        A.reshape_shape,
        ("shape",),
        ("{g} reshaped to the shape of {0}",),
        required=1,
        example="reshape(x, [2, 3])",
    ),
    _tensor_fn(
        "softmax",
        A.softmax_forward,
        A.softmax_vjp,
        A.softmax_jvp,
        A.keep_shape,
        ("axis",),
        ("{out} · ({g} − Σ {g} · {out})",),
    ),
    _tensor_fn(
        "logsumexp",
        A.logsumexp_forward,
        A.logsumexp_vjp,
        A.logsumexp_jvp,
        A.average_shape,
        ("axis",),
        ("softmax({0}) · {g}",),
    ),
    _tensor_fn(
        "amax",
        lambda x: np.max(x),
        A.extreme_vjp,
        A.extreme_jvp,
        A.all_shape,
        (),
        ("{g} at the largest element of {0}",),
        symbol="max",
        example="max(x)",
    ),
    _tensor_fn(
        "amin",
        lambda x: np.min(x),
        A.extreme_vjp,
        A.extreme_jvp,
        A.all_shape,
        (),
        ("{g} at the smallest element of {0}",),
        symbol="min",
        example="min(x)",
    ),
    OpSpec(
        name="index",
        arity=1,
        forward=None,
        partials=None,
        symbol="[]",
        glyph="[]",
        style=POSTFIX,
        example="x[0]",
        elementwise=False,
        array_forward=A.index_forward,
        vjp=A.index_vjp,
        jvp=A.index_jvp,
        shape=A.index_shape,
        params=("indices",),
        required=1,
        adjoint=("{g} placed at {0}[…], 0 elsewhere",),
    ),
)

#: Every op by name.
OPS: dict[str, OpSpec] = {op.name: op for op in _TABLE}
#: The ops a program may call as ``NAME(args)``, by name: one op per number of arguments
#: (``max(x, y)`` is elementwise, ``max(x)`` the largest element).
FUNCTIONS: dict[str, dict[int, OpSpec]] = {}
for _op in _TABLE:
    if _op.function:
        FUNCTIONS.setdefault(_op.symbol if _op.style == CALL else _op.name, {})[_op.arity] = _op

INPUT, CONST = OPS["input"], OPS["const"]
