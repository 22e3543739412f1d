"""The op table: the only place an operation is defined.

Each :class:`OpSpec` holds, for one op: its arity and static parameters; its value as a Python
expression (``py``, on floats, using :mod:`math`) and a NumPy one (``np``); its derivative,
written **once** over an interpretation ``e`` that speaks the op vocabulary
(``e.mul(g, e.cos(x))``); its shape rule; its spellings (source, glyph, LaTeX); and an example.

Derivatives come in two forms:

- an elementwise op gives ``partials``: one rule per argument, ``(e, *args, out) -> ∂out/∂arg``
  (``None`` for an argument that has no gradient). The passes multiply by the incoming
  gradient and sum a broadcast operand back to its shape, in one place.
- any other op gives ``vjp``: ``(e, g, args, out, params) -> cotangent per argument`` and
  ``jvp``: ``(e, tangents, args, out, params) -> tangent`` (a tangent of ``None`` is zero).

The same rule runs under every interpretation: Python source for floats (compiled into the
fast scalar loop), NumPy arrays, a graph builder (derivative programs, Hessians), and the
formula and LaTeX printers (explanations, diagram edges). Conventions at kinks are ops too
(``where``), never special code in a pass: relu'(0) = 0, abs'(0) = 0, max/min ties split ½.

>>> OPS["mul"].arity, OPS["mul"].py, OPS["sin"].np
(2, '{0} * {1}', 'np.sin({0})')
"""

from __future__ import annotations

import math
from collections.abc import Callable

from . import arrays as A

# Printing precedence, loosest first. Leaves and calls never need parentheses.
PREC_SELECT, PREC_OR, PREC_AND, PREC_NOT = -4, -3, -2, -1  # a if c else b; or; and; not
PREC_COMPARE, PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 0, 1, 2, 3, 4, 5

INFIX, PREFIX, CALL, LEAF, POSTFIX = "infix", "prefix", "call", "leaf", "postfix"
#: The parameters written as a list of whole numbers (``reshape(x, [2, 3])``), and an example
#: of each; the others are one whole number (an axis, the groups).
LIST_PARAMS = {
    "shape": "[2, 3]",
    "axes": "[1, 0]",
    "size": "[1, 2, 3, 3]",
    "window": "[2, 2]",
    "strides": "[2, 2]",
    "pads": "[1, 1, 1, 1]",
    "dilations": "[2, 2]",
}


class OpSpec:
    """Everything cgraph knows about one operation (one object per op, compared and hashed
    by identity, read-only once made)."""

    __slots__ = (
        "name",
        "arity",
        "py",
        "np",
        "js",
        "partials",
        "vjp",
        "jvp",
        "shape",
        "symbol",
        "glyph",
        "latex",
        "style",
        "precedence",
        "right_assoc",
        "function",
        "params",
        "required",
        "domain",
        "example",
        "kink",
        "positive",
        "finite",
        "differentiable",
        "surrogate",
        "positions",
    )

    name: str  # the grammar alias / function name; stable: JSON, golden files, `e.<name>`
    arity: int
    # Values: a Python expression over {0}, {1}... on floats (math, and the helpers of
    # cgraph_cli.core.runtime), and the same over NumPy arrays; params follow the arguments.
    py: str | None
    np: str | None
    # The value as a JavaScript expression: on numbers for an elementwise op ({0}, {1}...;
    # `cgraph compile --target js` maps it over tensors), else a call of a helper of
    # cgraph_cli/run/js_runtime.js (js_images.js: the image ops') with the params after the
    # arguments; None: no JS rule.
    js: str | None
    # Derivatives, written over an interpretation `e` (see the module docstring).
    partials: tuple[Callable | None, ...] | None
    vjp: Callable | None
    jvp: Callable | None
    shape: Callable  # (argument shapes, params) -> shape
    # Spellings. `symbol`: in source; `glyph`: in tables and diagrams; `latex`: a template.
    symbol: str
    glyph: str
    latex: str
    style: str
    precedence: int
    right_assoc: bool
    function: bool  # callable as NAME(args) in programs
    # Static parameters written after the arguments (`sum(x, 0)`: "axis"); the first
    # `required` must be given.
    params: tuple[str, ...]
    required: int
    domain: str  # what the value needs, said when it fails
    example: str  # a program whose output node is this op
    # For ops with a kink: a signed quantity, over `e`, whose sign says which smooth piece
    # the arguments are on (relu: x; max: x - y); 0 at the kink. gradcheck skips points
    # where a finite-difference step crosses it.
    kink: Callable | None
    # Its value is above 0 wherever it is defined (a float may still underflow to 0, as
    # exp(-1000) does, so passes/simplify does not make x / x 1 on it). Set by hand, as a range
    # fact is; tests/test_ops.py checks it at points and tests/test_properties.py against SymPy.
    positive: bool
    # Its value is finite at every finite argument, the largest numbers included: bounded
    # (tanh, a comparison) or one of its arguments (max, relu), never an overflow or a value
    # undefined. The rows mode then checks no value of it whose every argument it watches
    # (see run/batch.py). Set by hand; tests/test_ops.py checks it at the extremes.
    finite: bool
    differentiable: bool  # a derivative rule exists: vjp, or a partial for some argument
    # Its gradient is, by design, not the derivative of its value (stop_gradient): checks
    # against finite differences or SymPy leave it out.
    surrogate: bool
    # The arguments that hold positions (whole numbers, an embedding's token ids): no gradient
    # flows to them, and a value that is not a position fails (its domain).
    positions: tuple[int, ...]

    def __init__(
        self,
        *,
        name: str,
        arity: int,
        py: str | None = None,
        np: str | None = None,
        js: str | None = None,
        partials: tuple[Callable | None, ...] | None = None,
        vjp: Callable | None = None,
        jvp: Callable | None = None,
        shape: Callable = A.elementwise_shape,
        symbol: str = "",
        glyph: str = "",
        latex: str = "",
        style: str = CALL,
        precedence: int = PREC_ATOM,
        right_assoc: bool = False,
        function: bool = False,
        params: tuple[str, ...] = (),
        required: int = 0,
        domain: str = "",
        example: str = "",
        kink: Callable | None = None,
        positive: bool = False,
        finite: bool = False,
        surrogate: bool = False,
        positions: tuple[int, ...] = (),
    ) -> None:
        put = object.__setattr__
        put(self, "name", name)
        put(self, "arity", arity)
        put(self, "py", py)
        put(self, "np", np)
        put(self, "js", js)
        put(self, "partials", partials)
        put(self, "vjp", vjp)
        put(self, "jvp", jvp)
        put(self, "shape", shape)
        put(self, "symbol", symbol)
        put(self, "glyph", glyph)
        put(self, "latex", latex)
        put(self, "style", style)
        put(self, "precedence", precedence)
        put(self, "right_assoc", right_assoc)
        put(self, "function", function)
        put(self, "params", params)
        put(self, "required", required)
        put(self, "domain", domain)
        put(self, "example", example)
        put(self, "kink", kink)
        put(self, "positive", positive)
        put(self, "finite", finite)
        put(self, "surrogate", surrogate)
        put(self, "positions", positions)
        # Whether its value has a derivative (comparisons' do not): read once a node in every
        # pass that differentiates, so kept rather than worked out each time.
        put(self, "differentiable", vjp is not None or any(p is not None for p in partials or ()))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"an op is read-only: cannot set {name}")

    @property
    def elementwise(self) -> bool:
        return self.vjp is None and self.style != LEAF

    def __repr__(self) -> str:
        return f"<op {self.name}>"


# --- constructors ---------------------------------------------------------------------------
def _at_0_0(e, x, y, there, elsewhere):
    """``there`` where ``x = y = 0``, else ``elsewhere`` (pow's rules at 0^0)."""
    inner = e.where(e.eq(y, 0.0), there, elsewhere)
    try:  # y a number other than 0: no mask to write (x ^ 3); arrays are not asked
        same = inner is elsewhere or (not hasattr(inner, "dtype") and bool(inner == elsewhere))
    except (TypeError, ValueError):
        same = False
    if same:
        return elsewhere
    return e.where(e.eq(x, 0.0), inner, elsewhere)


def _infix(
    name, symbol, glyph, precedence, latex, partials, example, *, py=None, np=None, js=None, **kw
):
    expr = f"{{0}} {symbol} {{1}}"
    return OpSpec(
        name=name,
        arity=2,
        py=py or expr,
        np=np or expr,
        js=js or expr,
        partials=partials,
        symbol=symbol,
        glyph=glyph,
        latex=latex,
        style=INFIX,
        precedence=precedence,
        example=example,
        **kw,
    )


def _call_latex(name: str, arity: int) -> str:
    slots = ", ".join(f"{{{k}}}" for k in range(arity))
    return rf"\operatorname{{{{{name}}}}}\left({slots}\right)"  # a format template


def _fn(name, arity, py, np, partials, *, latex=None, example=None, **kw):
    args = ", ".join("xyz"[:arity])
    return OpSpec(
        name=name,
        arity=arity,
        py=py,
        np=np,
        partials=partials,
        symbol=name,
        glyph=name,
        latex=latex or _call_latex(name, arity),
        function=True,
        example=example or f"{name}({args})",
        **kw,
    )


def _compare(name, symbol, latex, py_op, js_op):
    """A comparison: 1 where it holds, else 0; no gradient (a step function is flat)."""
    return OpSpec(
        name=name,
        arity=2,
        py=f"(1.0 if {{0}} {py_op} {{1}} else 0.0)",
        np=f"np.asarray({{0}} {py_op} {{1}}, dtype=float)",
        js=f"({{0}} {js_op} {{1}} ? 1 : 0)",
        partials=(None, None),
        symbol=symbol,
        glyph=symbol,
        latex=latex,
        style=INFIX,
        precedence=PREC_COMPARE,
        example=f"x {symbol} y",
        finite=True,
    )


def _logical(name, symbol, latex, py, np, js, precedence, arity=2):
    """``and``, ``or``, ``not``: 1 where the truth holds, else 0 (any nonzero number is
    true, as in Python); no gradient."""
    return OpSpec(
        name=name,
        arity=arity,
        py=py,
        np=np,
        js=js,
        partials=(None,) * arity,
        symbol=symbol,
        glyph=symbol.strip(),
        latex=latex,
        style=INFIX if arity == 2 else PREFIX,
        precedence=precedence,
        example=f"x {symbol} y" if arity == 2 else f"{symbol}x",
        finite=True,
    )


def _tensor(
    name,
    np,
    vjp,
    jvp,
    shape,
    *,
    arity=1,
    params=(),
    required=0,
    symbol=None,
    example=None,
    latex=None,
    **kw,
):
    symbol = symbol or name
    return OpSpec(
        name=name,
        arity=arity,
        np=np,
        vjp=vjp,
        jvp=jvp,
        shape=shape,
        symbol=symbol,
        glyph=symbol,
        latex=latex or _call_latex(symbol, arity),
        function=True,
        params=params,
        required=required,
        example=example or f"{symbol}(x)",
        **kw,
    )


# --- tensor rules, over e ---------------------------------------------------------------------
def _matmul_vjp(e, g, args, out, params):
    a, b = args
    ra, rb = len(e.shape(a)), len(e.shape(b))
    if ra > 2 or rb > 2:
        return _batched_matmul_vjp(e, g, a, b)
    if ra == 1 and rb == 1:
        return e.mul(g, b), e.mul(g, a)
    if ra == 1:
        return e.matmul(b, g), e.outer(a, g)
    if rb == 1:
        return e.outer(g, b), e.matmul(e.transpose(a), g)
    return e.matmul(g, e.transpose(b)), e.matmul(e.transpose(a), g)


def _batched_matmul_vjp(e, g, a, b):
    """A stack of matrix products (NumPy's @ on 3 axes or more): each operand's gradient is
    the product with the other's last two axes swapped, summed over the batch axes it was
    broadcast along. A vector operand is a matrix of one row (a) or one column (b) first."""
    sa, sb = tuple(e.shape(a)), tuple(e.shape(b))
    a2 = e.reshape(a, (1,) + sa) if len(sa) == 1 else a
    b2 = e.reshape(b, sb + (1,)) if len(sb) == 1 else b
    ma, mb = tuple(e.shape(a2)), tuple(e.shape(b2))
    batch = A.broadcast(ma[:-2], mb[:-2])
    g2 = e.reshape(g, batch + (ma[-2], mb[-1]))
    ga = e.sum_to(e.matmul(g2, _swap_last(e, b2)), ma)
    gb = e.sum_to(e.matmul(_swap_last(e, a2), g2), mb)
    return (
        e.reshape(ga, sa) if ga is not None and len(sa) == 1 else ga,
        e.reshape(gb, sb) if gb is not None and len(sb) == 1 else gb,
    )


def _swap_last(e, x):
    n = len(e.shape(x))
    return e.transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def _matmul_jvp(e, tangents, args, out, params):
    (a, b), (ta, tb) = args, tangents
    return e.add_tangents(
        None if ta is None else e.matmul(ta, b), None if tb is None else e.matmul(a, tb)
    )


def _keepdims(e, x, axis):
    """The shape of ``x`` reduced over ``axis`` with that axis kept as 1 (all axes if None)."""
    shape = e.shape(x)
    if axis is None or not shape:  # (a printer that knows no shapes: nothing to keep)
        return (1,) * len(shape)
    axis %= len(shape)
    return shape[:axis] + (1,) + shape[axis + 1 :]


def _spread(e, g, x, axis):
    """``g``, the reduction of ``x`` over ``axis``, broadcast back to the shape of ``x``."""
    return e.broadcast_to(e.reshape(g, _keepdims(e, x, axis)), e.shape(x))


def _axis(params):
    return params[0] if params else None


def _count(e, x, axis) -> int:
    shape = e.shape(x)
    return math.prod(shape) if axis is None else shape[axis]


def _sum_vjp(e, g, args, out, params):
    return (_spread(e, g, args[0], _axis(params)),)


def _sum_jvp(e, tangents, args, out, params):
    return e.sum(tangents[0], *params)


def _mean_vjp(e, g, args, out, params):
    axis = _axis(params)
    return (_spread(e, e.div(g, float(_count(e, args[0], axis))), args[0], axis),)


def _mean_jvp(e, tangents, args, out, params):
    return e.mean(tangents[0], *params)


def _softmax_vjp(e, g, args, out, params):
    axis = _axis(params)
    total = e.reshape(e.sum(e.mul(g, out), *params), _keepdims(e, out, axis))
    return (e.mul(out, e.sub(g, total)),)


def _softmax_jvp(e, tangents, args, out, params):
    axis = _axis(params)
    total = e.reshape(e.sum(e.mul(out, tangents[0]), *params), _keepdims(e, out, axis))
    return e.mul(out, e.sub(tangents[0], total))


def _log_softmax_vjp(e, g, args, out, params):
    total = e.reshape(e.sum(g, *params), _keepdims(e, out, _axis(params)))
    return (e.sub(g, e.mul(e.exp(out), total)),)


def _log_softmax_jvp(e, tangents, args, out, params):
    total = e.sum(e.mul(e.exp(out), tangents[0]), *params)
    return e.sub(tangents[0], e.reshape(total, _keepdims(e, out, _axis(params))))


def _logsumexp_vjp(e, g, args, out, params):
    x, axis = args[0], _axis(params)
    return (e.mul(e.softmax(x, *params), e.reshape(g, _keepdims(e, x, axis))),)


def _logsumexp_jvp(e, tangents, args, out, params):
    return e.sum(e.mul(e.softmax(args[0], *params), tangents[0]), *params)


def _extreme_vjp(e, g, args, out, params):
    hit = e.eq(args[0], out)  # ties share the gradient equally, as torch.amax does
    return (e.where(hit, e.div(g, e.sum(hit)), 0.0),)


def _extreme_jvp(e, tangents, args, out, params):
    hit = e.eq(args[0], out)
    return e.div(e.sum(e.where(hit, tangents[0], 0.0)), e.sum(hit))


def _extreme_axis_vjp(e, g, args, out, params):
    """Along an axis: each slice's maximum takes the gradient, ties sharing it equally."""
    x, axis = args[0], params[0]
    keep = _keepdims(e, x, axis)
    hit = e.eq(x, e.reshape(out, keep))
    return (e.where(hit, e.reshape(e.div(g, e.sum(hit, axis)), keep), 0.0),)


def _extreme_axis_jvp(e, tangents, args, out, params):
    x, axis = args[0], params[0]
    hit = e.eq(x, e.reshape(out, _keepdims(e, x, axis)))
    return e.div(e.sum(e.where(hit, tangents[0], 0.0), axis), e.sum(hit, axis))


def _transpose_vjp(e, g, args, out, params):
    if params and params[0] is not None:  # the inverse permutation takes g back
        perm = params[0]
        return (e.transpose(g, tuple(sorted(range(len(perm)), key=perm.__getitem__))),)
    return (e.transpose(g),)


def _transpose_jvp(e, tangents, args, out, params):
    return e.transpose(tangents[0], *params)


def _reshape_vjp(e, g, args, out, params):
    return (e.reshape(g, e.shape(args[0])),)


def _reshape_jvp(e, tangents, args, out, params):
    return e.reshape(tangents[0], *params)


def _index_vjp(e, g, args, out, params):
    return (e.place(g, e.shape(args[0]), *params),)


def _index_jvp(e, tangents, args, out, params):
    return e.index(tangents[0], *params)


def _place_vjp(e, g, args, out, params):
    return (e.index(g, params[1]),)


def _place_jvp(e, tangents, args, out, params):
    return e.place(tangents[0], *params)


def _broadcast_vjp(e, g, args, out, params):
    return (e.sum_to(g, e.shape(args[0])),)


def _broadcast_jvp(e, tangents, args, out, params):
    return e.broadcast_to(tangents[0], *params)


def _sum_to_vjp(e, g, args, out, params):
    return (e.broadcast_to(g, e.shape(args[0])),)


def _sum_to_jvp(e, tangents, args, out, params):
    return e.sum_to(tangents[0], *params)


def _outer_vjp(e, g, args, out, params):
    a, b = args
    return e.matmul(g, b), e.matmul(e.transpose(g), a)


def _outer_jvp(e, tangents, args, out, params):
    (a, b), (ta, tb) = args, tangents
    return e.add_tangents(
        None if ta is None else e.outer(ta, b), None if tb is None else e.outer(a, tb)
    )


# --- images: convolutions and pools, over e ------------------------------------------------------
#: What an image op's parameters are when not written: strides (the pools': their window),
#: pads (top, left, bottom, right), dilations, groups.
_CONV_DEFAULTS = ((1, 1), (0, 0, 0, 0), (1, 1), 1)


def _conv_params(params) -> tuple:
    """A convolution's (strides, pads, dilations, groups) as written in a derivative program:
    each given, or its default, with the defaults at the end left out."""
    full = [
        tuple(p) if isinstance(p, (tuple, list)) else p
        for p in (*params, *(None,) * (4 - len(params)))
    ]
    full = [d if p is None else p for p, d in zip(full, _CONV_DEFAULTS)]
    while full and full[-1] == _CONV_DEFAULTS[len(full) - 1]:
        full.pop()
    return tuple(full)


def _conv2d_vjp(e, g, args, out, params):
    (x, w), p = args, _conv_params(params)
    return (
        e.conv_transpose2d(g, w, e.shape(x), *p),
        e.conv2d_weights(x, g, e.shape(w), *p),
    )


def _conv2d_jvp(e, tangents, args, out, params):
    (x, w), (tx, tw) = args, tangents
    return e.add_tangents(
        None if tx is None else e.conv2d(tx, w, *params),
        None if tw is None else e.conv2d(x, tw, *params),
    )


def _conv_transpose2d_vjp(e, g, args, out, params):
    (y, w), p = args, _conv_params(params[1:])
    return e.conv2d(g, w, *p), e.conv2d_weights(g, y, e.shape(w), *p)


def _conv_transpose2d_jvp(e, tangents, args, out, params):
    (y, w), (ty, tw) = args, tangents
    return e.add_tangents(
        None if ty is None else e.conv_transpose2d(ty, w, *params),
        None if tw is None else e.conv_transpose2d(y, tw, *params),
    )


def _conv2d_weights_vjp(e, g, args, out, params):
    (x, y), p = args, _conv_params(params[1:])
    return e.conv_transpose2d(y, g, e.shape(x), *p), e.conv2d(x, g, *p)


def _conv2d_weights_jvp(e, tangents, args, out, params):
    (x, y), (tx, ty) = args, tangents
    return e.add_tangents(
        None if tx is None else e.conv2d_weights(tx, y, *params),
        None if ty is None else e.conv2d_weights(x, ty, *params),
    )


def _max_pool2d_vjp(e, g, args, out, params):
    return (e.max_unpool2d(g, args[0], *params),)


def _max_pool2d_jvp(e, tangents, args, out, params):
    return e.max_pool2d_at(tangents[0], args[0], *params)


def _max_unpool2d_vjp(e, g, args, out, params):  # where the maxima are: no gradient
    return e.max_pool2d_at(g, args[1], *params), None


def _max_unpool2d_jvp(e, tangents, args, out, params):
    t = tangents[0]
    return None if t is None else e.max_unpool2d(t, args[1], *params)


def _max_pool2d_at_vjp(e, g, args, out, params):
    return e.max_unpool2d(g, args[1], *params), None


def _max_pool2d_at_jvp(e, tangents, args, out, params):
    t = tangents[0]
    return None if t is None else e.max_pool2d_at(t, args[1], *params)


def _avg_pool2d_vjp(e, g, args, out, params):
    return (e.avg_unpool2d(g, args[0], *params),)


def _avg_pool2d_jvp(e, tangents, args, out, params):
    return e.avg_pool2d(tangents[0], *params)


def _avg_unpool2d_vjp(e, g, args, out, params):  # the image is read for its shape alone
    return e.avg_pool2d(g, *params), None


def _avg_unpool2d_jvp(e, tangents, args, out, params):
    t = tangents[0]
    return None if t is None else e.avg_unpool2d(t, args[1], *params)


def _concat_vjp(e, g, args, out, params):
    a, b = args
    shape = e.shape(a)
    axis = (params[0] if params and params[0] is not None else 0) % max(1, len(shape))
    size = shape[axis] if shape else 0
    lead = (slice(None),) * axis
    return e.index(g, lead + (slice(0, size),)), e.index(g, lead + (slice(size, None),))


def _concat_jvp(e, tangents, args, out, params):
    ta, tb = (
        t if t is not None else e.broadcast_to(0.0, e.shape(x)) for t, x in zip(tangents, args)
    )
    return e.concat(ta, tb, *params)


# --- positions, over e --------------------------------------------------------------------------
def _take_vjp(e, g, args, out, params):  # no gradient for the positions
    x, at = args
    axis = params[0] if params and params[0] is not None else 0
    return e.scatter_add(g, at, e.shape(x), *((axis,) if axis else ())), None


def _take_jvp(e, tangents, args, out, params):
    t = tangents[0]
    return None if t is None else e.take(t, args[1], *params)


def _scatter_add_vjp(e, g, args, out, params):
    return e.take(g, args[1], *params[1:]), None


def _scatter_add_jvp(e, tangents, args, out, params):
    t = tangents[0]
    return None if t is None else e.scatter_add(t, args[1], *params)


# --- the table --------------------------------------------------------------------------------
_TABLE = (
    OpSpec(name="input", arity=0, style=LEAF),
    OpSpec(name="const", arity=0, style=LEAF),
    _infix(
        "add",
        "+",
        "+",
        PREC_SUM,
        "{0} + {1}",
        (lambda e, x, y, o: 1.0, lambda e, x, y, o: 1.0),
        "x + y",
    ),
    _infix(
        "sub",
        "-",
        "−",
        PREC_SUM,
        "{0} - {1}",
        (lambda e, x, y, o: 1.0, lambda e, x, y, o: -1.0),
        "x - y",
    ),
    _infix(
        "mul",
        "*",
        "×",
        PREC_PRODUCT,
        r"{0} \cdot {1}",
        (lambda e, x, y, o: y, lambda e, x, y, o: x),
        "x * y",
    ),
    _infix(
        "div",
        "/",
        "÷",
        PREC_PRODUCT,
        r"\frac{{{0}}}{{{1}}}",
        (lambda e, x, y, o: e.div(1.0, y), lambda e, x, y, o: e.neg(e.div(o, y))),
        "x / y",
        domain="the divisor must not be 0",
    ),
    _infix(
        "pow",
        "^",
        "^",
        PREC_POWER,
        "{0}^{{{1}}}",
        # x^y: y·x^(y-1), and 0 for x = y = 0 (pow at 0, as PyTorch); ∂/∂y = x^y·log(x), 0 at
        # x = 0 (xlogy; at 0^0 too), undefined for x < 0. Only 0^0 is masked: a mask on y = 0 alone
        # would make the derivative of this rule in y wrong there (∂²(x^y)/∂y∂x = 1/x at y = 0).
        # The mask is on the operands, not the result: every interpretation evaluates both
        # sides of a where, so 0^(0-1) must not be computed at all (it is an error). At 0^0
        # the base becomes 1 (y·1^(y-1) = 0) and the power's factor 0 (xlogy(0, 0) = 0).
        (
            lambda e, x, y, o: e.mul(y, e.pow(_at_0_0(e, x, y, 1.0, x), e.sub(y, 1.0))),
            lambda e, x, y, o: e.xlogy(_at_0_0(e, x, y, 0.0, o), x),
        ),
        "x ^ y",
        py="math.pow({0}, {1})",
        np="np.power({0}, {1})",
        right_assoc=True,
        function=True,
        domain="a negative base needs a whole exponent, and 0 has no negative powers",
        js="Math.pow({0}, {1})",
    ),
    OpSpec(
        name="matmul",
        arity=2,
        np="{0} @ {1}",
        vjp=_matmul_vjp,
        jvp=_matmul_jvp,
        shape=A.matmul_shape,
        symbol="@",
        glyph="@",
        latex="{0} {1}",
        style=INFIX,
        precedence=PREC_PRODUCT,
        example="a @ b",
        js="_matmul({0}, {1})",
    ),
    OpSpec(
        name="neg",
        arity=1,
        py="-{0}",
        np="-{0}",
        partials=(lambda e, x, o: -1.0,),
        symbol="-",
        glyph="−",
        latex="-{0}",
        style=PREFIX,
        precedence=PREC_UNARY,
        example="-x",
        js="-{0}",
        finite=True,
    ),
    _compare("lt", "<", "{0} < {1}", "<", "<"),
    _compare("le", "<=", r"{0} \le {1}", "<=", "<="),
    _compare("gt", ">", "{0} > {1}", ">", ">"),
    _compare("ge", ">=", r"{0} \ge {1}", ">=", ">="),
    _compare("eq", "==", "{0} = {1}", "==", "==="),
    _compare("ne", "!=", r"{0} \ne {1}", "!=", "!=="),
    _logical(
        "logical_and",
        "and",
        r"{0} \land {1}",
        "(1.0 if {0} != 0.0 and {1} != 0.0 else 0.0)",
        "np.asarray(np.logical_and({0}, {1}), dtype=float)",
        "({0} !== 0 && {1} !== 0 ? 1 : 0)",
        PREC_AND,
    ),
    _logical(
        "logical_or",
        "or",
        r"{0} \lor {1}",
        "(1.0 if {0} != 0.0 or {1} != 0.0 else 0.0)",
        "np.asarray(np.logical_or({0}, {1}), dtype=float)",
        "({0} !== 0 || {1} !== 0 ? 1 : 0)",
        PREC_OR,
    ),
    _logical(
        "logical_not",
        "not ",
        r"\lnot {0}",
        "(1.0 if {0} == 0.0 else 0.0)",
        "np.asarray(np.logical_not({0}), dtype=float)",
        "({0} === 0 ? 1 : 0)",
        PREC_NOT,
        arity=1,
    ),
    _fn(
        "sin",
        1,
        "math.sin({0})",
        "np.sin({0})",
        (lambda e, x, o: e.cos(x),),
        latex=r"\sin\left({0}\right)",
        js="Math.sin({0})",
        finite=True,
    ),
    _fn(
        "cos",
        1,
        "math.cos({0})",
        "np.cos({0})",
        (lambda e, x, o: e.neg(e.sin(x)),),
        latex=r"\cos\left({0}\right)",
        js="Math.cos({0})",
        finite=True,
    ),
    _fn(
        "tan",
        1,
        "math.tan({0})",
        "np.tan({0})",
        (lambda e, x, o: e.add(1.0, e.pow(o, 2.0)),),
        latex=r"\tan\left({0}\right)",
        js="Math.tan({0})",
    ),
    _fn(
        "exp",
        1,
        "math.exp({0})",
        "np.exp({0})",
        (lambda e, x, o: o,),
        latex=r"e^{{{0}}}",
        positive=True,
        js="Math.exp({0})",
    ),
    _fn(
        "log",
        1,
        "math.log({0})",
        "np.log({0})",
        (lambda e, x, o: e.div(1.0, x),),
        latex=r"\log\left({0}\right)",
        domain="log needs a positive argument",
        js="Math.log({0})",
    ),
    _fn(
        "sqrt",
        1,
        "math.sqrt({0})",
        "np.sqrt({0})",
        (lambda e, x, o: e.div(1.0, e.mul(2.0, o)),),
        latex=r"\sqrt{{{0}}}",
        domain="sqrt needs a non-negative argument, and its slope is infinite at 0",
        js="Math.sqrt({0})",
    ),
    _fn(
        "tanh",
        1,
        "math.tanh({0})",
        "np.tanh({0})",
        (lambda e, x, o: e.sub(1.0, e.pow(o, 2.0)),),
        latex=r"\tanh\left({0}\right)",
        js="Math.tanh({0})",
        finite=True,
    ),
    _fn(
        "sigmoid",
        1,
        "rt.sigmoid({0})",
        "rt.np_sigmoid({0})",
        (lambda e, x, o: e.mul(o, e.sub(1.0, o)),),
        latex=r"\sigma\left({0}\right)",
        positive=True,
        js="_sigmoid({0})",
        finite=True,
    ),
    _fn(
        "softplus",
        1,
        "rt.softplus({0})",
        "rt.np_softplus({0})",
        (lambda e, x, o: e.sigmoid(x),),
        latex=r"\log\left(1 + e^{{{0}}}\right)",
        positive=True,
        js="_softplus({0})",
        finite=True,
    ),
    _fn(
        "erf",
        1,
        "math.erf({0})",
        "rt.np_erf({0})",
        (lambda e, x, o: e.mul(1.1283791670955126, e.exp(e.neg(e.mul(x, x)))),),  # 2/√π e^-x²
        latex=r"\operatorname{{erf}}\left({0}\right)",
        js="_erf({0})",
        finite=True,
    ),
    _fn(
        "relu",
        1,
        "rt.relu({0})",
        "np.maximum({0}, 0.0)",
        (lambda e, x, o: e.where(e.gt(x, 0.0), 1.0, 0.0),),
        kink=lambda e, x: x,
        js="({0} > 0 ? {0} : 0)",
        finite=True,
    ),
    _fn(
        "abs",
        1,
        "math.fabs({0})",
        "np.abs({0})",
        (lambda e, x, o: e.sign(x),),
        latex=r"\left|{0}\right|",
        kink=lambda e, x: x,
        js="Math.abs({0})",
        finite=True,
    ),
    _fn(
        "sign",
        1,
        "rt.sign({0})",
        "np.sign({0})",
        (None,),
        latex=r"\operatorname{{sign}}\left({0}\right)",
        js="({0} > 0 ? 1 : {0} < 0 ? -1 : 0)",
        finite=True,
    ),
    _fn(
        "stop_gradient",
        1,
        "{0}",
        "{0}",
        (None,),
        latex=r"\operatorname{{sg}}\left({0}\right)",
        surrogate=True,
        js="{0}",
        finite=True,
    ),
    _fn(
        "min",
        2,
        "min({0}, {1})",
        "np.minimum({0}, {1})",
        (
            lambda e, x, y, o: e.where(e.lt(x, y), 1.0, e.where(e.gt(x, y), 0.0, 0.5)),
            lambda e, x, y, o: e.where(e.lt(y, x), 1.0, e.where(e.gt(y, x), 0.0, 0.5)),
        ),
        kink=lambda e, x, y: e.sub(x, y),
        js="({1} < {0} ? {1} : {0})",
        finite=True,
    ),
    _fn(
        "max",
        2,
        "max({0}, {1})",
        "np.maximum({0}, {1})",
        (
            lambda e, x, y, o: e.where(e.gt(x, y), 1.0, e.where(e.lt(x, y), 0.0, 0.5)),
            lambda e, x, y, o: e.where(e.gt(y, x), 1.0, e.where(e.lt(y, x), 0.0, 0.5)),
        ),
        kink=lambda e, x, y: e.sub(x, y),
        js="({1} > {0} ? {1} : {0})",
        finite=True,
    ),
    _fn(
        "where",
        3,
        "({1} if {0} else {2})",
        "np.where({0}, {1}, {2})",
        (
            None,
            lambda e, c, x, y, o: e.where(c, 1.0, 0.0),
            lambda e, c, x, y, o: e.where(c, 0.0, 1.0),
        ),
        example="where(c, x, y)",
        js="({0} !== 0 ? {1} : {2})",
        finite=True,
    ),
    _fn(
        "xlogy",
        2,
        "rt.xlogy({0}, {1})",
        "rt.np_xlogy({0}, {1})",
        (lambda e, x, y, o: e.log(y), lambda e, x, y, o: e.div(x, y)),
        domain="log needs a positive argument",
        js="_xlogy({0}, {1})",
    ),
    # Tensor ops ------------------------------------------------------------------------------
    _tensor(
        "sum",
        "rt.np_sum({0}, {1})",
        _sum_vjp,
        _sum_jvp,
        A.reduce_shape,
        params=("axis",),
        js="_sum({0}, {1})",
    ),
    _tensor(
        "mean",
        "rt.np_mean({0}, {1})",
        _mean_vjp,
        _mean_jvp,
        A.average_shape,
        params=("axis",),
        js="_mean({0}, {1})",
    ),
    _tensor(
        "transpose",
        "np.transpose({0}, {1})",
        _transpose_vjp,
        _transpose_jvp,
        A.transpose_shape,
        params=("axes",),
        example="transpose(x)",
        js="_transpose({0}, {1})",
    ),
    _tensor(
        "reshape",
        "np.reshape({0}, {1})",
        _reshape_vjp,
        _reshape_jvp,
        A.reshape_shape,
        params=("shape",),
        required=1,
        example="reshape(x, [2, 3])",
        js="_reshape({0}, {1})",
    ),
    _tensor(
        "softmax",
        "rt.np_softmax({0}, {1})",
        _softmax_vjp,
        _softmax_jvp,
        A.keep_shape,
        params=("axis",),
        js="_softmax({0}, {1})",
    ),
    _tensor(
        "log_softmax",
        "rt.np_log_softmax({0}, {1})",
        _log_softmax_vjp,
        _log_softmax_jvp,
        A.keep_shape,
        params=("axis",),
        latex=r"\log\operatorname{{softmax}}\left({0}\right)",
        js="_logSoftmax({0}, {1})",
    ),
    _tensor(
        "logsumexp",
        "rt.np_logsumexp({0}, {1})",
        _logsumexp_vjp,
        _logsumexp_jvp,
        A.average_shape,
        params=("axis",),
        js="_logsumexp({0}, {1})",
    ),
    _tensor(
        "amax",
        "np.max({0})",
        _extreme_vjp,
        _extreme_jvp,
        A.all_shape,
        symbol="max",
        example="max(x)",
        js="_amax({0}, null)",
    ),
    _tensor(
        "amin",
        "np.min({0})",
        _extreme_vjp,
        _extreme_jvp,
        A.all_shape,
        symbol="min",
        example="min(x)",
        js="_amin({0}, null)",
    ),
    _tensor(
        "amax_axis",
        "np.max({0}, {1})",
        _extreme_axis_vjp,
        _extreme_axis_jvp,
        A.average_shape,
        params=("axis",),
        required=1,
        symbol="amax",
        example="amax(x, 1)",
        js="_amax({0}, {1})",
    ),
    _tensor(
        "amin_axis",
        "np.min({0}, {1})",
        _extreme_axis_vjp,
        _extreme_axis_jvp,
        A.average_shape,
        params=("axis",),
        required=1,
        symbol="amin",
        example="amin(x, 1)",
        js="_amin({0}, {1})",
    ),
    _tensor(
        "broadcast_to",
        "np.broadcast_to({0}, {1})",
        _broadcast_vjp,
        _broadcast_jvp,
        A.broadcast_to_shape,
        params=("shape",),
        required=1,
        example="broadcast_to(x, [2, 3])",
        js="_broadcastTo({0}, {1})",
    ),
    _tensor(
        "sum_to",
        "rt.np_sum_to({0}, {1})",
        _sum_to_vjp,
        _sum_to_jvp,
        A.sum_to_shape,
        params=("shape",),
        required=1,
        example="sum_to(x, [3])",
        js="_sumTo({0}, {1})",
    ),
    _tensor(
        "outer",
        "np.outer({0}, {1})",
        _outer_vjp,
        _outer_jvp,
        A.outer_shape,
        arity=2,
        example="outer(x, y)",
        js="_outer({0}, {1})",
    ),
    _tensor(
        "place",
        "rt.np_place({0}, {1}, {2})",
        _place_vjp,
        _place_jvp,
        A.place_shape,
        params=("shape", "indices"),
        required=2,
        example="place(x, [4], 1:3)",
        js="_place({0}, {1}, {2})",
    ),
    _tensor(
        "conv2d",
        "rt.np_conv2d({0}, {1}, {2}, {3}, {4}, {5})",
        _conv2d_vjp,
        _conv2d_jvp,
        A.conv2d_shape,
        arity=2,
        params=("strides", "pads", "dilations", "groups"),
        example="conv2d(x, w)",
        js="_conv2d({0}, {1}, {2}, {3}, {4}, {5})",
    ),
    _tensor(
        "conv_transpose2d",
        "rt.np_conv_transpose2d({0}, {1}, {2}, {3}, {4}, {5}, {6})",
        _conv_transpose2d_vjp,
        _conv_transpose2d_jvp,
        A.conv_transpose2d_shape,
        arity=2,
        params=("size", "strides", "pads", "dilations", "groups"),
        required=1,
        example="conv_transpose2d(y, w, [1, 2, 3, 3])",
        js="_convTranspose2d({0}, {1}, {2}, {3}, {4}, {5}, {6})",
    ),
    _tensor(
        "conv2d_weights",
        "rt.np_conv2d_weights({0}, {1}, {2}, {3}, {4}, {5}, {6})",
        _conv2d_weights_vjp,
        _conv2d_weights_jvp,
        A.conv2d_weights_shape,
        arity=2,
        params=("size", "strides", "pads", "dilations", "groups"),
        required=1,
        example="conv2d_weights(x, y, [3, 2, 2, 2])",
        js="_conv2dWeights({0}, {1}, {2}, {3}, {4}, {5}, {6})",
    ),
    _tensor(
        "max_pool2d",
        "rt.np_max_pool2d({0}, {1}, {2}, {3})",
        _max_pool2d_vjp,
        _max_pool2d_jvp,
        A.pool_shape,
        params=("window", "strides", "pads"),
        required=1,
        example="max_pool2d(x, [2, 2])",
        js="_maxPool2d({0}, {1}, {2}, {3})",
    ),
    _tensor(
        "max_unpool2d",
        "rt.np_max_unpool2d({0}, {1}, {2}, {3}, {4})",
        _max_unpool2d_vjp,
        _max_unpool2d_jvp,
        A.unpool_shape,
        arity=2,
        params=("window", "strides", "pads"),
        required=1,
        example="max_unpool2d(g, x, [2, 2], [1, 1])",
        js="_maxUnpool2d({0}, {1}, {2}, {3}, {4})",
    ),
    _tensor(
        "max_pool2d_at",
        "rt.np_max_pool2d_at({0}, {1}, {2}, {3}, {4})",
        _max_pool2d_at_vjp,
        _max_pool2d_at_jvp,
        A.pool_at_shape,
        arity=2,
        params=("window", "strides", "pads"),
        required=1,
        example="max_pool2d_at(v, x, [2, 2])",
        js="_maxPool2dAt({0}, {1}, {2}, {3}, {4})",
    ),
    _tensor(
        "avg_pool2d",
        "rt.np_avg_pool2d({0}, {1}, {2}, {3}, {4})",
        _avg_pool2d_vjp,
        _avg_pool2d_jvp,
        A.pool_shape,
        params=("window", "strides", "pads", "count_pads"),
        required=1,
        example="avg_pool2d(x, [2, 2])",
        js="_avgPool2d({0}, {1}, {2}, {3}, {4})",
    ),
    _tensor(
        "avg_unpool2d",
        "rt.np_avg_unpool2d({0}, {1}, {2}, {3}, {4}, {5})",
        _avg_unpool2d_vjp,
        _avg_unpool2d_jvp,
        A.unpool_shape,
        arity=2,
        params=("window", "strides", "pads", "count_pads"),
        required=1,
        example="avg_unpool2d(g, x, [2, 2], [1, 1])",
        js="_avgUnpool2d({0}, {1}, {2}, {3}, {4}, {5})",
    ),
    _tensor(
        "concat",
        "np.concatenate(({0}, {1}), {2} or 0)",
        _concat_vjp,
        _concat_jvp,
        A.concat_shape,
        arity=2,
        params=("axis",),
        example="concat(x, y)",
        js="_concat({0}, {1}, {2})",
    ),
    _tensor(
        "take",
        "rt.np_take({0}, {1}, {2})",
        _take_vjp,
        _take_jvp,
        A.take_shape,
        arity=2,
        params=("axis",),
        example="take(x, [0, -1, 0])",
        positions=(1,),
        domain="take needs positions that are whole numbers within the axis",
        js="_take({0}, {1}, {2})",
    ),
    _tensor(
        "scatter_add",
        "rt.np_scatter_add({0}, {1}, {2}, {3})",
        _scatter_add_vjp,
        _scatter_add_jvp,
        A.scatter_add_shape,
        arity=2,
        params=("shape", "axis"),
        required=1,
        example="scatter_add(g, [0, -1, 0], [3])",
        positions=(1,),
        domain="scatter_add needs positions that are whole numbers within the axis",
        js="_scatterAdd({0}, {1}, {2}, {3})",
    ),
    OpSpec(
        name="index",
        arity=1,
        np="{0}[{1}]",
        vjp=_index_vjp,
        jvp=_index_jvp,
        shape=A.index_shape,
        symbol="[]",
        glyph="[]",
        latex="{0}_{{{1}}}",
        style=POSTFIX,
        params=("indices",),
        required=1,
        example="x[0]",
        js="_index({0}, {1})",
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
