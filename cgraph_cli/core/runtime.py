"""The helpers the op table's value expressions call (``rt.sigmoid(x)``), on floats and on NumPy
arrays. Each is small, pure and self-contained, so that a compiled module (``cgraph compile``)
can carry the source of the ones it uses and run without cgraph.

>>> sigmoid(0.0), relu(-2.0), xlogy(0.0, 0.0)
(0.5, 0.0, 0.0)
"""

from __future__ import annotations

import math


def sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # never overflows for x < 0
    return z / (1.0 + z)


def softplus(x):
    # log(1 + e^x) without overflow: max(x, 0) + log(1 + e^-|x|)
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def np_softplus(x):
    import numpy as np

    # log(1 + e^x) as NumPy's logaddexp(0, x) computes it: max(x, 0) + log1p(e^-|x|), in C
    return np.logaddexp(0.0, x)


def np_erf(x):
    """The error function of each element: SciPy's (within 3 units in the last place of
    math.erf, in C) where SciPy is installed, else math.erf's, element by element (NumPy has
    none; a GELU's million elements take a second that way)."""
    import numpy as np

    try:
        from scipy.special import erf
    except ImportError:
        import math

        return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=float)
    return erf(np.asarray(x, dtype=float))


def relu(x):
    return x if x > 0.0 else 0.0


def sign(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


def xlogy(x, y):
    return 0.0 if x == 0.0 else x * math.log(y)


def np_holds(c):
    """Whether a condition of ``a if c else b`` holds (a number other than 0, as cgraph's
    interpreter decides); a tensor (a batch of rows, each its own branch) is refused."""
    if getattr(c, "ndim", 0):
        raise ValueError(
            "the condition is a tensor: `a if c else b` takes a branch for one number (run a "
            "batch of inputs one row at a time)"
        )
    return c != 0.0


def np_sigmoid(x):
    import numpy as np

    # sigmoid's formula, element by element: 1 / (1 + e^-x) or e^x / (1 + e^x), never
    # overflowing, keeping the digits of values below 1e-16, and rounding as the float's does
    # (sigmoid(37) is 1.0 in both: a comparison with 1 cannot differ between engines)
    with np.errstate(all="ignore"):
        z = np.exp(-np.abs(x))
        out = np.where(np.asarray(x) >= 0.0, 1.0 / (1.0 + z), z / (1.0 + z))
    return out[()] if out.ndim == 0 else out


def np_xlogy(x, y):
    import numpy as np

    with np.errstate(all="ignore"):  # log of a negative: nan, as math's log raises for it
        return np.where(x == 0.0, 0.0, x * np.log(np.where(x == 0.0, 1.0, y)))


def np_sum(x, axis=None):
    import numpy as np

    return np.add.reduce(x, axis)  # np.sum without its Python wrapper: a third of the time


def np_mean(x, axis=None):
    import numpy as np

    if np.size(x) == 0:  # the shape pass let it through: the result is empty too
        return np.sum(x, axis=axis)  # (NumPy's mean would warn "Mean of empty slice")
    return np.mean(x, axis=axis)


def np_softmax(x, axis=None):
    import numpy as np

    if np.size(x) == 0:  # no maximum to shift by, and nothing to compute
        return np.zeros(np.shape(x))
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def np_log_softmax(x, axis=None):
    import numpy as np

    if np.size(x) == 0:
        return np.zeros(np.shape(x))
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def np_logsumexp(x, axis=None):
    import numpy as np

    if np.size(x) == 0:  # the shape pass let it through: the result is empty too
        return np.sum(x, axis=axis)
    top = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out.reshape(()) if axis is None else np.squeeze(out, axis)


def np_sum_to(x, shape):
    """Sum ``x`` over the axes broadcasting added or stretched, back to ``shape``."""
    import numpy as np

    shape = tuple(shape)
    if np.shape(x) == shape:
        return x
    lead = np.ndim(x) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(shape) if n == 1 and np.shape(x)[lead + k] != 1
    )
    return np.reshape(np.sum(x, axis=axes), shape)


def np_place(x, shape, index):
    """Zeros of ``shape`` with ``x`` at ``[index]`` (the gradient of indexing)."""
    import numpy as np

    out = np.zeros(tuple(shape))
    out[index] = x  # basic indexing never repeats an element: no accumulation needed
    return out


# --- images: (batch, channels, height, width), as PyTorch and ONNX lay them out ---------------
def np_windows(x, kernel, strides=None, pads=None, dilations=None, fill=0.0):
    """The windows a 2-D convolution or pool reads: ``x`` (N, C, H, W) padded by ``pads``
    (top, left, bottom, right) with ``fill``, seen as (N, C, Ho, Wo, kh, kw) without a copy."""
    import numpy as np

    (kh, kw), (sh, sw) = kernel, strides or (1, 1)
    (dh, dw), (top, left, bottom, right) = dilations or (1, 1), pads or (0, 0, 0, 0)
    if top or left or bottom or right:
        edges = ((0, 0), (0, 0), (top, bottom), (left, right))
        x = np.pad(x, edges, constant_values=fill)
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    view = np.lib.stride_tricks.sliding_window_view(x, span, axis=(2, 3))
    return view[:, :, ::sh, ::sw, ::dh, ::dw]


def np_scatter_windows(cols, size, strides=None, pads=None, dilations=None):
    """The adjoint of :func:`np_windows`: the values each window read, ``cols`` laid out as
    (kh, kw, A, B, Ho, Wo), added back where they were read in an (A, B, H, W) tensor of
    ``size`` (A, B: batch and channels, in either order), one strided block per kernel
    position."""
    import numpy as np

    a, b, h, w = size
    kh, kw, _, _, ho, wo = np.shape(cols)
    (sh, sw), (dh, dw) = strides or (1, 1), dilations or (1, 1)
    top, left, bottom, right = pads or (0, 0, 0, 0)
    out = np.zeros((a, b, h + top + bottom, w + left + right))
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + sh * (ho - 1) + 1, sh)
            columns = slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)
            out[:, :, rows, columns] += cols[i, j]
    return out[:, :, top : top + h, left : left + w]


def np_columns(x, kernel, groups, strides=None, pads=None, dilations=None):
    """What each window of ``x`` reads, one column per window, group by group (im2col):
    (groups, C / groups * kh * kw, N * Ho * Wo); and (N, Ho, Wo). Copied a kernel position
    at a time from rows of the image, the copy reads memory in order."""
    win = np_windows(x, kernel, strides, pads, dilations)
    n, c, ho, wo, kh, kw = win.shape
    cols = win.transpose(1, 4, 5, 0, 2, 3).reshape(groups, c // groups * kh * kw, n * ho * wo)
    return cols, (n, ho, wo)


def np_conv2d(x, w, strides=None, pads=None, dilations=None, groups=None):
    """2-D cross-correlation, as torch.nn.functional.conv2d and ONNX's Conv: ``x`` (N, C,
    H, W), ``w`` (O, C / groups, kh, kw); one matrix product per group."""
    import numpy as np

    g, (o, _, kh, kw) = groups or 1, np.shape(w)
    cols, (n, ho, wo) = np_columns(x, (kh, kw), g, strides, pads, dilations)
    out = np.reshape(w, (g, o // g, -1)) @ cols  # (g, O / g, N Ho Wo)
    return out.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)


def np_conv_transpose2d(y, w, size, strides=None, pads=None, dilations=None, groups=None):
    """The transpose of :func:`np_conv2d` in its input (its gradient there): ``y`` shaped as
    the convolution's output, the result of ``size``, the input's shape. One matrix product
    per group gives what each window receives, laid out channels first so that each kernel
    position's block is added back in one contiguous piece."""
    import numpy as np

    g, (n, o, ho, wo), (cg, kh, kw) = groups or 1, np.shape(y), np.shape(w)[1:]
    rows = np.transpose(y, (1, 0, 2, 3)).reshape(g, o // g, n * ho * wo)
    cols = np.reshape(w, (g, o // g, -1)).transpose(0, 2, 1) @ rows  # (g, C/g kh kw, N Ho Wo)
    cols = cols.reshape(g * cg, kh, kw, n, ho, wo).transpose(1, 2, 0, 3, 4, 5)
    (n, c, h, wd) = size
    out = np_scatter_windows(cols, (c, n, h, wd), strides, pads, dilations)
    return out.transpose(1, 0, 2, 3)


def np_conv2d_weights(x, y, size, strides=None, pads=None, dilations=None, groups=None):
    """The transpose of :func:`np_conv2d` in its weights (their gradient): ``x`` the input,
    ``y`` shaped as the output, the result of ``size``, the weights' shape."""
    import numpy as np

    g, (o, cg, kh, kw) = groups or 1, size
    cols, (n, ho, wo) = np_columns(x, (kh, kw), g, strides, pads, dilations)
    rows = np.transpose(y, (1, 0, 2, 3)).reshape(g, o // g, n * ho * wo)
    return (rows @ cols.transpose(0, 2, 1)).reshape(o, cg, kh, kw)


def np_max_pool2d(x, window, strides=None, pads=None):
    """The largest element of each window (strides: the window's, unless given); padding
    is never the largest."""
    import numpy as np

    win = np_windows(x, window, strides or window, pads, None, -np.inf)
    return win.max(axis=(4, 5))


def np_pool_argmax(x, window, strides=None, pads=None):
    """Where in each window of ``x`` its largest element is (the first of equals), as a
    position 0 .. kh * kw - 1: (N, C, Ho, Wo)."""
    import numpy as np

    win = np_windows(x, window, strides or window, pads, None, -np.inf)
    return win.reshape(win.shape[:4] + (-1,)).argmax(axis=-1)


def np_max_unpool2d(g, x, window, strides=None, pads=None):
    """Each window's ``g`` put back where the largest element of ``x``'s window is, added up
    where windows overlap: the gradient of :func:`np_max_pool2d`."""
    import numpy as np

    at = np_pool_argmax(x, window, strides, pads)
    kh, kw = window
    hit = at == np.arange(kh * kw).reshape(kh, kw, 1, 1, 1, 1)
    cols = np.where(hit, np.asarray(g), 0.0)  # (kh, kw, N, C, Ho, Wo)
    return np_scatter_windows(cols, np.shape(x), strides or window, pads)


def np_max_pool2d_at(v, x, window, strides=None, pads=None):
    """``v``'s element at the place of the largest element of each window of ``x``."""
    import numpy as np

    at = np_pool_argmax(x, window, strides, pads)
    win = np_windows(v, window, strides or window, pads)
    flat = win.reshape(win.shape[:4] + (-1,))
    return np.take_along_axis(flat, at[..., None], axis=-1)[..., 0]


def np_avg_pool2d(x, window, strides=None, pads=None, count_pads=None):
    """The mean of each window; padding counts as zeros in the mean (PyTorch's default)
    unless ``count_pads`` is 0: then the mean is of the window's elements inside ``x`` (ONNX's
    default)."""
    import numpy as np

    win = np_windows(x, window, strides or window, pads)
    return win.sum(axis=(4, 5)) / np_pool_counts(np.shape(x), window, strides, pads, count_pads)


def np_pool_counts(shape, window, strides=None, pads=None, count_pads=None):
    """How many elements each window of an image of ``shape`` averages: the window's, or
    (``count_pads`` 0, and pads) those inside the image."""
    import numpy as np

    if count_pads is None or count_pads or not any(pads or ()):  # counted unless 0
        return float(window[0] * window[1])
    ones = np.ones((1, 1) + tuple(shape[2:]))
    return np_windows(ones, window, strides or window, pads).sum(axis=(4, 5))


def np_avg_unpool2d(g, x, window, strides=None, pads=None, count_pads=None):
    """Each window's ``g`` shared equally among the elements it averages, added up where
    windows overlap: the gradient of :func:`np_avg_pool2d` (``x`` read for its shape)."""
    import numpy as np

    share = np.asarray(g) / np_pool_counts(np.shape(x), window, strides, pads, count_pads)
    cols = np.broadcast_to(share, tuple(window) + share.shape)  # (kh, kw, N, C, Ho, Wo)
    return np_scatter_windows(cols, np.shape(x), strides or window, pads)


# --- positions: an embedding's lookup and its gradient ----------------------------------------
def np_positions(i, size):
    """The whole numbers in ``i`` as positions along an axis of ``size`` (negative ones count
    from the end, as NumPy's and ONNX's), or None where one is not a whole number in range."""
    import numpy as np

    at = np.asarray(i, dtype=float)
    whole = np.trunc(at)
    if not (np.all(whole == at) and np.all(whole >= -size) and np.all(whole < size)):
        return None
    return whole.astype(np.int64)


def np_take(x, i, axis=None):
    """The slices of ``x`` along ``axis`` (0 unless given) at the positions ``i`` (an array of
    any shape: the result has its axes where ``axis`` was): an embedding's lookup. NaN where
    a position is not a whole number in range."""
    import numpy as np

    axis = (axis or 0) % np.ndim(x)
    at = np_positions(i, np.shape(x)[axis])
    if at is None:
        shape = np.shape(x)
        return np.full(shape[:axis] + np.shape(i) + shape[axis + 1 :], np.nan)
    return np.take(x, at, axis=axis)


def np_scatter_add(g, i, shape, axis=None):
    """Zeros of ``shape`` with each slice of ``g`` added at its position ``i`` along
    ``axis``, positions met twice adding twice: the gradient of :func:`np_take`."""
    import numpy as np

    shape = tuple(shape)
    axis = (axis or 0) % len(shape)
    at = np_positions(i, shape[axis])
    if at is None:
        return np.full(shape, np.nan)
    out = np.zeros(shape)
    np.add.at(out, (slice(None),) * axis + (at,), g)
    return out
