"""Tensor rules for the op table: shapes, NumPy forward rules and their vjp/jvp.

NumPy is imported on first use, so scalar programs never pay for it. Shape rules are pure Python
over shape tuples and raise :class:`ShapeMismatch` with the message the user sees; the shape
pass places it at the node's source span.

>>> broadcast((2, 3), (3,)), broadcast((2, 1), (1, 3)), matmul_shape(((2, 3), (3,)), ())
((2, 3), (2, 3), (2,))
"""

from __future__ import annotations

import sys
from math import prod

Shape = tuple[int, ...]


class _LazyNumpy:
    """``np.name`` imports NumPy the first time a tensor rule runs."""

    def __getattr__(self, name: str):
        import numpy

        value = getattr(numpy, name)
        setattr(self, name, value)  # later look-ups find it directly, without this call
        return value


np = _LazyNumpy()


class ShapeMismatch(Exception):
    """A shape rule's complaint, in the user's words."""


class NoValue(ShapeMismatch):
    """An op that has no value for the shapes it is given (the largest element of nothing);
    the message follows the node's source text: ``max(x[2:1]) of an empty tensor has no
    value``."""


#: NumPy's limit on the number of axes of an array.
MAX_AXES = 64
#: The most elements any one value may have: 2**28 float64 numbers are 2 GiB. The shape pass
#: refuses a larger result before anything is allocated.
MAX_ELEMENTS = 2**28


def size_text(elements: int) -> str:
    """The memory ``elements`` float64 numbers take, in the largest unit that keeps a number
    of at least 1: ``80 GB``, ``2 GiB`` style but decimal (GB = 10**9 bytes).

    >>> size_text(10**10), size_text(2**28), size_text(3)
    ('80 GB', '2.1 GB', '24 bytes')
    """
    size = 8 * elements
    for unit, scale in (
        ("EB", 10**18),
        ("PB", 10**15),
        ("TB", 10**12),
        ("GB", 10**9),
        ("MB", 10**6),
        ("kB", 10**3),
    ):
        if size >= scale:
            return (
                f"{size / scale:.2g} {unit}" if size < 10 * scale else f"{size // scale:,} {unit}"
            )
    return f"{size} bytes"


def show_shape(shape: Shape) -> str:
    """``(2, 3)``; a scalar is ``()``; a vector ``(3,)``, as NumPy writes them."""
    return str(tuple(shape))


def shape_of(value) -> Shape:
    return () if value.__class__ is float else tuple(getattr(value, "shape", ()))


# shapes ----------------------------------------------------------------------------------------
def broadcast(*shapes: Shape) -> Shape:
    """NumPy's broadcasting: align on the right; a 1 stretches to the other size."""
    ndim = max(len(s) for s in shapes)
    out = []
    for k in range(ndim):
        sizes = {s[k - ndim + len(s)] for s in shapes if k - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ShapeMismatch(
                " and ".join(show_shape(s) for s in shapes)
                + " do not broadcast: sizes "
                + " and ".join(str(n) for n in sorted(sizes))
                + f" differ in axis {k - ndim}"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def elementwise_shape(shapes, params) -> Shape:
    return shapes[0] if len(shapes) == 1 else broadcast(*shapes)


def matmul_shape(shapes, params) -> Shape:
    a, b = shapes
    if not a or not b or len(a) > 2 or len(b) > 2:
        raise ShapeMismatch(
            f"{show_shape(a)} @ {show_shape(b)}: @ multiplies vectors and matrices"
            + ("; to scale by a scalar, use *" if not a or not b else "")
        )
    if a[-1] != b[0]:
        raise ShapeMismatch(
            f"{show_shape(a)} @ {show_shape(b)}: inner dimensions {a[-1]} and {b[0]} differ"
        )
    return a[:-1] + b[1:]


def _axis(shape: Shape, axis: int) -> int:
    if not -len(shape) <= axis < len(shape):
        raise ShapeMismatch(f"axis {axis} is out of range for a {show_shape(shape)} tensor")
    return axis % len(shape)


def reduce_shape(shapes, params) -> Shape:
    (shape,) = shapes
    if not params or params[0] is None:
        return ()
    axis = _axis(shape, params[0])
    return shape[:axis] + shape[axis + 1 :]


def average_shape(shapes, params) -> Shape:
    """As :func:`reduce_shape`, for a reduction that has no value over no elements (mean,
    logsumexp): an empty result is fine, a number made of nothing is not."""
    out = reduce_shape(shapes, params)
    (shape,) = shapes
    counted = prod(shape) if not params or params[0] is None else shape[_axis(shape, params[0])]
    if counted == 0 and prod(out) > 0:
        raise NoValue(
            "of an empty tensor has no value"
            if not out
            else f"has no value: axis {params[0]} of the {show_shape(shape)} tensor is empty"
        )
    return out


def keep_shape(shapes, params) -> Shape:
    if params and params[0] is not None:
        _axis(shapes[0], params[0])
    return shapes[0]


def transpose_shape(shapes, params) -> Shape:
    return tuple(reversed(shapes[0]))


def reshape_shape(shapes, params) -> Shape:
    (shape,), (new,) = shapes, params
    size = prod(shape)
    if new.count(-1) > 1 or any(n < -1 for n in new):
        raise ShapeMismatch(f"{show_shape(new)} is not a shape: sizes are whole numbers, one -1")
    if any(n > sys.maxsize for n in new):  # an empty tensor has room for any other size
        raise ShapeMismatch(f"{show_shape(new)} is not a shape: a size is at most {sys.maxsize}")
    known = prod(n for n in new if n != -1)
    if -1 in new and known and size % known == 0:
        new = tuple(size // known if n == -1 else n for n in new)
    if prod(new) != size or -1 in new:
        raise ShapeMismatch(
            f"cannot reshape {show_shape(shape)} ({size} elements) to {show_shape(new)}"
        )
    return new


def index_shape(shapes, params) -> Shape:
    (shape,), items = shapes, params[0]
    if not shape:
        raise ShapeMismatch("a number has no elements to index: indexing needs a tensor")
    if len(items) > len(shape):
        indices = "1 index" if len(items) == 1 else f"{len(items)} indices"
        axes = "1 axis" if len(shape) == 1 else f"{len(shape)} axes"
        raise ShapeMismatch(f"{indices} for a {show_shape(shape)} tensor, which has {axes}")
    out = []
    for axis, (item, size) in enumerate(zip(items, shape)):
        if isinstance(item, slice):
            out.append(len(range(*item.indices(size))))
        elif not -size <= item < size:
            raise ShapeMismatch(
                f"index {item} is out of range for axis {axis} of size {size} "
                f"(a {show_shape(shape)} tensor)"
            )
    return tuple(out) + tuple(shape[len(items) :])


def all_shape(shapes, params) -> Shape:
    """One number from all the elements (the largest, the smallest): nothing from none."""
    if prod(shapes[0]) == 0:
        raise NoValue("of an empty tensor has no value")
    return ()


# NumPy rules -----------------------------------------------------------------------------------
def unbroadcast(g, shape: Shape):
    """Sum ``g`` over the axes broadcasting added or stretched, back to ``shape``."""
    gshape = np.shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(shape) if n == 1 and gshape[lead + k] != 1
    )
    out = np.sum(g, axis=axes, keepdims=False) if axes else g
    return np.reshape(out, shape)


def matmul_vjp(g, args, out, params):
    a, b = args
    if a.ndim == 1 and b.ndim == 1:
        return g * b, g * a
    if a.ndim == 1:
        return b @ g, np.outer(a, g)
    if b.ndim == 1:
        return np.outer(g, b), a.T @ g
    return g @ b.T, a.T @ g


def matmul_jvp(tangents, args, out, params):
    (a, b), (ta, tb) = args, tangents
    return (0.0 if ta is None else ta @ b) + (0.0 if tb is None else a @ tb)


def _axis_param(params):
    return params[0] if params else None


def _expand(g, x, axis):
    """``g`` (reduced over ``axis``) broadcast back over ``x``'s shape."""
    if axis is not None:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, np.shape(x))


def sum_forward(x, axis=None):
    return np.sum(x, axis=axis)


def sum_vjp(g, args, out, params):
    return (np.array(_expand(g, args[0], _axis_param(params))),)


def mean_forward(x, axis=None):
    if np.size(x) == 0:  # the shape pass let it through: the result is empty too
        return np.sum(x, axis=axis)  # (NumPy's mean would warn "Mean of empty slice")
    return np.mean(x, axis=axis)


def _count(x, axis) -> int:
    return np.size(x) if axis is None else np.shape(x)[axis]


def mean_vjp(g, args, out, params):
    axis = _axis_param(params)
    return (_expand(g, args[0], axis) / _count(args[0], axis),)


def softmax_forward(x, axis=None):
    if np.size(x) == 0:  # no maximum to shift by, and nothing to compute
        return np.zeros(np.shape(x))
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def softmax_vjp(g, args, out, params):
    axis = _axis_param(params)
    return (out * (g - np.sum(g * out, axis=axis, keepdims=True)),)


def softmax_jvp(tangents, args, out, params):
    (t,), axis = tangents, _axis_param(params)
    return out * (t - np.sum(out * t, axis=axis, keepdims=True))


def logsumexp_forward(x, axis=None):
    if np.size(x) == 0:  # the shape pass let it through: the result is empty too
        return np.sum(x, axis=axis)
    top = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out.reshape(()) if axis is None else np.squeeze(out, axis)


def logsumexp_vjp(g, args, out, params):
    axis = _axis_param(params)
    return (softmax_forward(args[0], axis) * _expand(g, args[0], axis),)


def logsumexp_jvp(tangents, args, out, params):
    axis = _axis_param(params)
    return np.sum(softmax_forward(args[0], axis) * tangents[0], axis=axis)


def _extreme_mask(x, out):
    mask = np.asarray(x == out, dtype=float)
    return mask / mask.sum()  # ties share the gradient equally, as torch.amax does


def extreme_vjp(g, args, out, params):
    return (g * _extreme_mask(args[0], out),)


def extreme_jvp(tangents, args, out, params):
    return np.sum(_extreme_mask(args[0], out) * tangents[0])


def transpose_vjp(g, args, out, params):
    return (np.transpose(g),)


def reshape_forward(x, new):
    return np.reshape(x, new)


def reshape_vjp(g, args, out, params):
    return (np.reshape(g, np.shape(args[0])),)


def reshape_jvp(tangents, args, out, params):
    return np.reshape(tangents[0], np.shape(out))


def index_forward(x, items):
    return x[items]


def index_vjp(g, args, out, params):
    grad = np.zeros(np.shape(args[0]))
    grad[params[0]] = g  # basic indexing never repeats an element: no accumulation needed
    return (grad,)


def index_jvp(tangents, args, out, params):
    return tangents[0][params[0]]


def linear_jvp(forward):
    """The jvp of an op linear in its one argument: the op applied to the tangent."""

    def jvp(tangents, args, out, params):
        return forward(tangents[0], *params)

    return jvp


# elementwise partials that need more than one NumPy call --------------------------------------
def pow_partials(x, y, out):
    """As the scalar rule; ∂/∂y (a log over every element) is computed only if asked for: for
    ``x ^ 2`` it never is."""
    with np.errstate(all="ignore"):
        if np.ndim(y) == 0 and y != 0.0:
            dx = y * np.power(x, y - 1.0)
        else:
            dx = np.where(y == 0.0, 0.0, y * np.power(x, y - 1.0))

    def dy():
        with np.errstate(all="ignore"):
            logs = np.log(np.where(x > 0.0, x, 1.0))
            return np.where(x > 0.0, out * logs, np.where(x == 0.0, 0.0, np.nan))

    return dx, dy


def max_partials(x, y, out):
    return np.where(x > y, 1.0, np.where(x < y, 0.0, 0.5)), np.where(
        x > y, 0.0, np.where(x < y, 1.0, 0.5)
    )


def min_partials(x, y, out):
    return np.where(x < y, 1.0, np.where(x > y, 0.0, 0.5)), np.where(
        x < y, 0.0, np.where(x > y, 1.0, 0.5)
    )


def sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # no overflow for large |x|, unlike 1 / (1 + e^-x)


def relu(x):
    return np.maximum(x, 0.0)


def step(x):
    return (x > 0.0).astype(float)
