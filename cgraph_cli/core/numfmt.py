"""How numbers look to a user: the shortest text that reads back to the same float.

>>> format_number(-12.0), format_number(0.1), format_number(1e-20), format_number(2.5, 2)
('-12', '0.1', '1e-20', '2.5')
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy
    from typing_extensions import TypeIs


def format_number(x: float, precision: int | None = None) -> str:
    """``-12`` not ``-12.0``; ``0.1`` not ``0.1000000000000000055``. With ``precision``, at most
    that many significant digits (for diagrams and tables that must stay narrow)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0.0:
        return "0"  # -0.0 too: a sign on zero only confuses a reader
    if precision is not None:
        text = f"{x:.{precision}g}"
        if "e" in text:
            mantissa, exp = text.split("e")
            return f"{mantissa}e{int(exp)}"
        return text
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    text = repr(x)
    if "e" in text:
        mantissa, exp = text.split("e")
        return f"{mantissa}e{int(exp)}"
    return text


#: Tensors with at most this many elements are shown in full in tables; larger ones summarised.
SMALL = 16
#: Significant digits of every number shown to people (tables, trees, diagrams, pages,
#: explanations; scalars and tensor elements alike), unless --precision says otherwise. Output
#: for programs (JSON, --format plain, data files) keeps every digit.
DIGITS = 4
TENSOR_DIGITS = DIGITS  # (the name the table renderers knew it by)


def is_tensor(value: object) -> TypeIs[numpy.ndarray]:
    """Whether ``value`` is an array with axes (a tensor), not a number.

    >>> is_tensor(2.0), is_tensor([1.0]), is_tensor(__import__("numpy").ones(2))
    (False, False, True)
    """
    return value.__class__ is not float and bool(getattr(value, "shape", ()))


def shape_text(value) -> str:
    """A value's shape as NumPy writes it: ``(2, 3)``, ``(3,)``; ``()`` for a number."""
    return str(tuple(getattr(value, "shape", ())))


#: A value this many float64 epsilons of its tensor's largest entry, or less, is rounding
#: noise: shown (at a given precision) as 0. ``softmax`` of equal scores minus their mean gives
#: 7.5e-18 beside entries of order 1; it means 0.
NOISE = 64 * 2.220446049250313e-16


def noise_floor(flat) -> float:
    """What rounding noise is next to the entries of ``flat`` (a 1-D array): ``NOISE`` times
    the largest finite |entry|; 0 for an empty one."""
    import numpy as np

    finite = np.abs(flat[np.isfinite(flat)])
    return NOISE * float(finite.max()) if finite.size else 0.0


def denoised(x: float, floor: float) -> float:
    """``x``, or 0 where it is rounding noise (at most ``floor``).

    >>> denoised(7.5e-18, noise_floor(__import__("numpy").array([1.0, -0.5]))), denoised(0.2, 1e-14)
    (0.0, 0.2)
    """
    return 0.0 if abs(x) <= floor else x


def nested(value, precision: int | None = None, sep: str = ", ", rows: str = "") -> str:
    """A tensor as nested brackets: ``[[1, 2], [3, 4]]``. ``rows`` goes between the rows of a
    matrix (``"\\n"`` puts each on its own line, numbers then right-aligned in columns). At a
    ``precision`` (a display), an entry that is rounding noise next to the largest shows as 0
    (:func:`denoised`); without one (text for scripts), every entry as it is."""
    if not is_tensor(value):
        return format_number(float(value), precision)
    if value.size == 0:
        return _empty(value.shape, sep)
    flat = value.ravel()
    floor = noise_floor(flat) if precision is not None else 0.0
    texts = [format_number(denoised(float(x), floor), precision) for x in flat]
    width = max(map(len, texts)) if rows and value.ndim > 1 else 0
    texts = [t.rjust(width) for t in texts]
    # Join from the innermost axis out: each pass groups `n` neighbours into one bracket; a row
    # on its own line is indented by the brackets open before it.
    for depth, n in enumerate(reversed(value.shape)):
        joint = sep if depth == 0 or not rows else sep.rstrip() + rows + " " * (value.ndim - depth)
        texts = ["[" + joint.join(texts[k : k + n]) + "]" for k in range(0, len(texts), n)]
    return texts[0]


def _empty(shape: tuple[int, ...], sep: str) -> str:
    """An empty tensor as nested lists, as JSON has it: ``[]`` for shape (0,) or (0, 3),
    ``[[], []]`` for (2, 0): the brackets up to the first axis of size 0."""
    text = "[]"
    for n in reversed(shape[: shape.index(0)]):
        text = "[" + sep.join([text] * n) + "]"
    return text


def plain_value(value, precision: int | None = None) -> str:
    """The one-line form for scripts: numbers in shortest form; a tensor as JSON without spaces
    (``[[1,2],[3,4]]``), which cgraph reads back as a binding."""
    return (
        nested(value, precision, ",")
        if is_tensor(value)
        else format_number(float(value), precision)
    )


def summary(value, precision: int | None = 4) -> str:
    """A large tensor in one line: its shape, min, max, mean and its first entries."""
    flat = value.ravel()
    floor = noise_floor(flat) if precision is not None else 0.0
    first = ", ".join(format_number(denoised(float(x), floor), precision) for x in flat[:3])
    low, high = (denoised(float(x), floor) for x in (flat.min(), flat.max()))
    return (
        f"{shape_text(value)} tensor  min {format_number(low, precision)}  "
        f"max {format_number(high, precision)}  "
        f"mean {format_number(shown_mean(flat), precision)}  [{first}, …]"
    )


def shown_mean(flat) -> float:
    """The mean of ``flat`` as a summary shows it: 0 where it is rounding noise next to the
    entries (the mean of a softmax's gradient, 7.5e-18 beside entries of order 1)."""
    return denoised(mean(flat), noise_floor(flat))


def mean(flat) -> float:
    """The mean of a non-empty 1-D array of finite numbers, even where their sum overflows
    (``[1e308, 1e308]``: 1e308, not inf and a NumPy warning).

    >>> import numpy as np
    >>> mean(np.array([1e308, 1e308])), mean(np.array([1.0, 2.0]))
    (1e+308, 1.5)
    """
    import numpy as np

    with np.errstate(all="ignore"):
        total = float(flat.mean())
        return total if math.isfinite(total) else float((flat / flat.size).sum())


def format_value(
    value, precision: int | None = None, full: bool = False, rows: str = "\n", shape: bool = False
) -> str:
    """A number as :func:`format_number`; a tensor in full when small (or ``full``), else as a
    :func:`summary`. Matrix rows go on separate lines unless ``rows`` says otherwise. An empty
    tensor is ``[]``, followed by its shape if ``shape`` (where no column shows it).

    >>> import numpy as np
    >>> format_value(np.zeros((2, 0))), format_value(np.zeros((2, 0)), shape=True)
    ('[]', '[] (2, 0)')
    """
    if not is_tensor(value):
        return format_number(float(value), precision)
    if value.size == 0:
        return f"[] {shape_text(value)}" if shape else "[]"
    if full or value.size <= SMALL:
        return nested(value, precision or TENSOR_DIGITS, rows=rows)
    return summary(value, precision or TENSOR_DIGITS)
