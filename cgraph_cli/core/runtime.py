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
    """The error function of each element, math.erf's (correctly rounded) value: NumPy has
    none, and SciPy is not needed for it."""
    import math

    import numpy as np

    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=float)


def relu(x):
    return x if x > 0.0 else 0.0


def sign(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


def xlogy(x, y):
    return 0.0 if x == 0.0 else x * math.log(y)


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
