"""Shapes for the op table: each op's shape rule, broadcasting, and the limits on a value.

NumPy is imported on first use, so scalar programs never pay for it. Shape rules are pure Python
over shape tuples and raise :class:`ShapeMismatch` with the message the user sees; the shape
pass places it at the node's source span.

>>> broadcast((2, 3), (3,)), broadcast((2, 1), (1, 3)), matmul_shape(((2, 3), (3,)), ())
((2, 3), (2, 3), (2,))
"""

from __future__ import annotations

import sys
from math import prod
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import numpy

Shape = tuple[int, ...]
#: What a node holds, a binding gives and a gradient is: a number, or a NumPy array of float64
#: (a tensor). Scalar programs compute on Python floats and never import NumPy.
Value: TypeAlias = "float | numpy.ndarray"


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


def frozen(value):
    """``value`` as a read-only view, if an array (a default or a constant of a program: a
    result that shows it must not let its reader change the program); a number as it is.

    >>> v = frozen(np.ones(2))
    >>> v.flags.writeable, frozen(2.0)
    (False, 2.0)
    """
    if value.__class__ is float or not hasattr(value, "flags"):
        return value
    value = value.view()
    value.flags.writeable = False
    return value


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
    """NumPy's @: vectors and matrices, and stacks of matrices (3 axes or more: the leading
    axes broadcast, each pair of matrices multiplied)."""
    a, b = shapes
    if not a or not b:
        raise ShapeMismatch(
            f"{show_shape(a)} @ {show_shape(b)}: @ multiplies vectors and matrices; to scale "
            "by a scalar, use *"
        )
    inner = b[-2] if len(b) > 1 else b[0]
    if a[-1] != inner:
        raise ShapeMismatch(
            f"{show_shape(a)} @ {show_shape(b)}: inner dimensions {a[-1]} and {inner} differ"
        )
    if len(a) <= 2 and len(b) <= 2:
        return a[:-1] + b[1:]
    try:
        batch = broadcast(a[:-2], b[:-2])
    except ShapeMismatch:
        raise ShapeMismatch(
            f"{show_shape(a)} @ {show_shape(b)}: the stacks {show_shape(a[:-2])} and "
            f"{show_shape(b[:-2])} do not broadcast"
        ) from None
    return batch + (a[-2:-1] if len(a) > 1 else ()) + (b[-1:] if len(b) > 1 else ())


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
    """The axes reversed, or in the order ``params[0]`` gives (a permutation of them)."""
    (shape,) = shapes
    if not params or params[0] is None:
        return tuple(reversed(shape))
    perm = tuple(params[0])
    if sorted(perm) != list(range(len(shape))):
        raise ShapeMismatch(
            f"{show_shape(perm)} is not an order of the {len(shape)} axes of a "
            f"{show_shape(shape)} tensor: each of 0 to {len(shape) - 1} once"
        )
    return tuple(shape[k] for k in perm)


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


def _whole_shape(new, op: str) -> Shape:
    """The shape ``new`` written in a call to ``op``, every size at least 0 (no -1 standing
    for the rest, as reshape has).

    >>> _whole_shape([2, 3], "place")
    (2, 3)
    """
    new = tuple(new)
    if any(n < 0 for n in new):
        raise ShapeMismatch(
            f"{show_shape(new)} is not a shape for {op}: its sizes are whole numbers, at least 0"
        )
    return new


def broadcast_to_shape(shapes, params) -> Shape:
    (shape,), (new,) = shapes, params
    new = _whole_shape(new, "broadcast_to")
    try:
        fits = broadcast(shape, new) == new
    except ShapeMismatch:
        fits = False
    if not fits:
        raise ShapeMismatch(f"cannot broadcast a {show_shape(shape)} tensor to {show_shape(new)}")
    return new


def sum_to_shape(shapes, params) -> Shape:
    (shape,), (new,) = shapes, params
    new = _whole_shape(new, "sum_to")
    try:
        fits = broadcast(shape, new) == shape
    except ShapeMismatch:
        fits = False
    if not fits:
        raise ShapeMismatch(f"cannot sum a {show_shape(shape)} tensor to {show_shape(new)}")
    return new


def outer_shape(shapes, params) -> Shape:
    a, b = shapes
    if len(a) != 1 or len(b) != 1:
        raise ShapeMismatch(f"outer takes two vectors, got {show_shape(a)} and {show_shape(b)}")
    return a + b


def place_shape(shapes, params) -> Shape:
    (shape,), (new, items) = shapes, params
    new = _whole_shape(new, "place")
    if index_shape((new,), (items,)) != tuple(shape):
        raise ShapeMismatch(
            f"a {show_shape(shape)} tensor does not fit at its place in {show_shape(new)}"
        )
    return new


# images: (batch, channels, height, width) ---------------------------------------------------
def _pairs(value, default: Shape, what: str, op: str, count: int = 2, least: int = 1) -> Shape:
    """A parameter of ``count`` whole numbers of at least ``least`` (strides, pads...), or
    ``default`` where it is not given."""
    if value is None:
        return default
    value = tuple(value)
    if len(value) != count or any(n < least for n in value):
        example = ", ".join(["1"] * count)
        raise ShapeMismatch(
            f"the {what} of {op} are {count} whole numbers of at least {least} "
            f"([{example}]), not {show_shape(value)}"
        )
    return value


def _image(shape: Shape, op: str, what: str = "an image") -> Shape:
    if len(shape) != 4:
        raise ShapeMismatch(
            f"{op} takes {what} of 4 axes (batch, channels, height, width), got a "
            f"{show_shape(shape)} tensor"
        )
    return shape


def _out_size(size: int, span: int, stride: int, before: int, after: int, op: str) -> int:
    if size + before + after < span:
        raise ShapeMismatch(
            f"{op}'s window ({span} wide{' with its dilation' if op.startswith('conv') else ''})"
            f" is larger than the padded image ({size + before + after})"
        )
    return (size + before + after - span) // stride + 1


def _windowed(image: Shape, kernel: Shape, params, op: str, strides_default=None) -> Shape:
    """(Ho, Wo): where the windows of ``kernel`` fit in ``image`` under ``params`` (strides,
    pads, dilations)."""
    given = tuple(params) + (None,) * (3 - len(params))
    strides = _pairs(given[0], strides_default or (1, 1), "strides", op)
    pads = _pairs(given[1], (0, 0, 0, 0), "pads", op, 4, 0)
    dilations = _pairs(given[2], (1, 1), "dilations", op)
    return tuple(
        _out_size(image[2 + k], (kernel[k] - 1) * dilations[k] + 1, strides[k], pads[k],
                  pads[k + 2], op)
        for k in range(2)
    )  # fmt: skip


def _groups(params, index: int, op: str) -> int:
    groups = params[index] if len(params) > index and params[index] is not None else 1
    if groups < 1:
        raise ShapeMismatch(f"the groups of {op} are a whole number of at least 1, not {groups}")
    return groups


def _conv_check(x: Shape, w: Shape, groups: int, op: str) -> None:
    _image(x, op)
    _image(w, op, "weights")
    if x[1] % groups:
        raise ShapeMismatch(
            f"{op}: a {show_shape(x)} image's {x[1]} channels do not divide into {groups} groups"
        )
    if x[1] != w[1] * groups or w[0] % groups:
        raise ShapeMismatch(
            f"{op}: a {show_shape(x)} image's {x[1]} channels in {groups} group"
            f"{'s' * (groups != 1)} need weights of {x[1] // groups} channels and outputs a "
            f"multiple of {groups}, not {show_shape(w)}"
        )


def conv2d_shape(shapes, params) -> Shape:
    x, w = shapes
    _conv_check(x, w, _groups(params, 3, "conv2d"), "conv2d")
    return (x[0], w[0]) + _windowed(x, w[2:], params[:3], "conv2d")


def conv_transpose2d_shape(shapes, params) -> Shape:
    """``y`` (the convolution's output) and the weights, back to the input's ``size``."""
    (y, w), size = shapes, tuple(params[0])
    return _conv_gradient(size, w, y, size, params, "conv_transpose2d")


def conv2d_weights_shape(shapes, params) -> Shape:
    """The input and ``y`` (shaped as the convolution's output), to the weights' ``size``."""
    (x, y), size = shapes, tuple(params[0])
    return _conv_gradient(x, size, y, size, params, "conv2d_weights")


def _conv_gradient(x: Shape, w: Shape, y: Shape, size: Shape, params, op: str) -> Shape:
    """``size`` (a gradient of conv2d's: its image's or its weights'), where ``y`` is what
    conv2d makes of an ``x`` image with ``w`` weights under the parameters after ``size``."""
    _image(size, op, "a size")
    _conv_check(x, w, _groups(params, 4, op), op)
    if y != (x[0], w[0]) + _windowed(x, w[2:], params[1:4], op):
        raise ShapeMismatch(
            f"{op}: {show_shape(y)} is not what conv2d makes of a {show_shape(x)} image "
            f"with {show_shape(w)} weights"
        )
    return size


def pool_shape(shapes, params) -> Shape:
    """A pool of ``window`` over an image: the windows' strides are the window unless given."""
    x, op = _image(shapes[-1], "a pool"), "a pool"
    window = _pairs(params[0], (1, 1), "window", op)
    pads = _pairs(params[2] if len(params) > 2 else None, (0, 0, 0, 0), "pads", op, 4, 0)
    if len(params) > 3 and params[3] not in (None, 0, 1):
        raise ShapeMismatch(
            f"count_pads is 1 (the padding counts in each mean) or 0 (it does not), not {params[3]}"
        )
    if any(p >= window[k % 2] for k, p in enumerate(pads)):
        raise ShapeMismatch(
            f"a pool's pads {show_shape(pads)} must each be smaller than its window "
            f"{show_shape(window)}: a window of padding alone has no value"
        )
    return x[:2] + _windowed(x, window, (params[1:2] or (None,)) + params[2:3], op, window)


def unpool_shape(shapes, params) -> Shape:
    """A pool's output put back in its image's shape (the second argument)."""
    g, x = shapes
    if g != pool_shape([x], params):
        raise ShapeMismatch(
            f"{show_shape(g)} is not the shape a pool makes of a {show_shape(x)} image"
        )
    return x


def pool_at_shape(shapes, params) -> Shape:
    v, x = shapes
    if v != x:
        raise ShapeMismatch(
            f"the values {show_shape(v)} and the image {show_shape(x)} differ in shape"
        )
    return pool_shape([x], params)


# positions ------------------------------------------------------------------------------------
def take_shape(shapes, params) -> Shape:
    """``x``'s shape with the axis read replaced by the positions' axes."""
    x, at = shapes
    if not x:
        raise ShapeMismatch("take reads slices of a tensor: a number has none")
    axis = _axis(x, params[0] if params and params[0] is not None else 0)
    if x[axis] == 0:
        raise ShapeMismatch(f"axis {axis} of the {show_shape(x)} tensor is empty: no position")
    return x[:axis] + tuple(at) + x[axis + 1 :]


def scatter_add_shape(shapes, params) -> Shape:
    (g, at), shape = shapes, _whole_shape(params[0], "scatter_add")
    if take_shape([shape, at], params[1:]) != tuple(g):
        raise ShapeMismatch(
            f"scatter_add: a {show_shape(g)} tensor is not what take reads from "
            f"{show_shape(shape)} at {show_shape(at)} positions"
        )
    return shape


def concat_shape(shapes, params) -> Shape:
    """Two tensors joined along ``axis`` (0 unless given): alike in every other axis."""
    a, b = shapes
    if not a or not b:
        raise ShapeMismatch("concat joins tensors: a number has no axis to join along")
    if len(a) != len(b):
        raise ShapeMismatch(
            f"concat joins tensors of as many axes: {show_shape(a)} and {show_shape(b)}"
        )
    axis = _axis(a, params[0] if params and params[0] is not None else 0)
    if a[:axis] + a[axis + 1 :] != b[:axis] + b[axis + 1 :]:
        raise ShapeMismatch(
            f"concat along axis {axis}: {show_shape(a)} and {show_shape(b)} differ in another axis"
        )
    return a[:axis] + (a[axis] + b[axis],) + a[axis + 1 :]
