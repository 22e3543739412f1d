"""A test case of ``cgraph check``: the program, its bindings and what is expected of it
(values, gradients, second derivatives), with tolerances; expectations read from the command
line; and the comparison every check makes, |actual - expected| <= atol + rtol · |expected|.
Shared by the command line's checks, checks files (:mod:`.checks_spec`) and row checks.

>>> close(1.0 + 1e-12, 1.0, RTOL, ATOL), parse_expectation("g=-12")
(True, ('g', -12.0))
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..core.errors import CgraphError, UsageError
from ..core.ir import Graph

RTOL, ATOL = 1e-9, 1e-12


@dataclass
class Case:
    name: str
    graph: Graph | None  # None when the program could not be read or parsed: see ``error``
    bindings: dict[str, object]
    # name -> the value expected: a number, or a tensor (nested lists or a NumPy array)
    expect: dict[str, object] = field(default_factory=dict)
    expect_grad: dict[str, object] = field(default_factory=dict)
    of: str | None = None
    rtol: float = RTOL
    atol: float = ATOL
    error: CgraphError | None = None  # why the case cannot run, reported as its result
    expect_hessian: dict[str, float] = field(default_factory=dict)  # "x,y" -> ∂²out/∂x∂y


_LABEL = r"\s*([^\W\d]\w*)\s*(?:\[\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*\])?\s*"


_PAIR = re.compile(rf"{_LABEL},{_LABEL}")


def parse_pair(text: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The two inputs (each with an element, ``()`` for a number) of a second derivative:
    ``x,y`` or ``W[0, 1],x[2]``; a :class:`UsageError` for anything else.

    >>> parse_pair("W[0,1], x")
    (('W', (0, 1)), ('x', ()))
    """
    m = _PAIR.fullmatch(text)
    if m is None:
        raise UsageError(
            f"a second derivative is named NAME,NAME, got {text[:60]!r}",
            hints=["for example: x,y or, for elements of tensor inputs, W[0, 1],x[2]"],
        )
    a, ia, b, ib = m.groups()
    index = [tuple(int(k) for k in i.split(",")) if i else () for i in (ia, ib)]
    return (a, index[0]), (b, index[1])


def value_shape(value) -> tuple:
    return tuple(getattr(value, "shape", ()))


def expected_value(name: str, value):
    from ..core.errors import BindingError
    from ..data.bindings import as_array, check_number

    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return check_number(name, value)  # a TOML integer past float64's range
        if isinstance(value, float):
            return value
        return as_array(name, value)
    except BindingError as e:
        raise UsageError(f"the expected {e.message.removeprefix('the ')}") from None
    except OverflowError:  # a whole number too large for a float, in JSON
        raise UsageError(f"the expected value of '{name}' holds a number too large") from None


def close(actual, expected, rtol: float, atol: float) -> bool:
    """|actual - expected| <= atol + rtol·|expected|, elementwise, shapes equal."""
    if value_shape(actual) != value_shape(expected):
        return False
    if not value_shape(actual):
        return abs(actual - expected) <= atol + rtol * abs(expected)
    from ..core.arrays import np

    with np.errstate(all="ignore"):  # a difference that overflows is not close: no warning
        return bool(np.all(np.abs(actual - expected) <= atol + rtol * np.abs(expected)))


def parse_hessian_expectation(text: str) -> tuple[str, float]:
    """``NAME,NAME=NUMBER`` for --expect-hessian: ``x,y=2``, ``W[0, 1],x[2]=-0.5``.

    >>> parse_hessian_expectation("x, y = 2")
    ('x,y', 2.0)
    """
    pair, eq, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not eq or not math.isfinite(number):
        raise UsageError(
            f"a second derivative's expectation is NAME,NAME=NUMBER, got "
            f"{text[:40] + '...' if len(text) > 60 else text!r}",
            hints=["for example: x,y=2 or, for elements of tensor inputs, 'W[0, 1],x[2]=-0.5'"],
        )
    from .gradcheck import element_label

    return ",".join(element_label(*e) for e in parse_pair(pair)), number


def parse_expectation(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` with a number, or a tensor as JSON (``W=[[1, 2], [3, 4]]``), for --expect
    and --expect-grad."""
    name, eq, value = text.partition("=")
    if value.strip().startswith("[") and eq and name.strip().isidentifier():
        return name.strip(), expected_value(name.strip(), value.strip())
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not eq or not name.strip().isidentifier() or not math.isfinite(number):
        raise UsageError(
            f"an expectation is NAME=NUMBER or NAME=[ARRAY], got "
            f"{text[:40] + '...' if len(text) > 60 else text!r}",
            hints=["for example: g=-12 or W='[[1, 2], [3, 4]]'"],
        )
    return name.strip(), number
