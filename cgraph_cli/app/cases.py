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
from typing import Any

from ..core.errors import CgraphError, UsageError
from ..core.ir import Graph
from . import gradcheck as gc

RTOL, ATOL = 1e-9, 1e-12


def toml_text(value: object, limit: int = 60) -> str:
    """A checks file's value as TOML spells it, for messages about it (cut to ``limit``
    characters): ``true``, ``"a"``, ``[1, "b"]``, ``{ x = 1 }``, not Python's ``True``,
    ``'a'``.

    >>> toml_text([True, "a", 2.5, float("inf")]), toml_text({"x": 1, "a b": False})
    ('[true, "a", 2.5, inf]', '{ x = 1, "a b" = false }')
    """
    import datetime
    import json

    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and not math.isfinite(value):
        text = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    elif isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)  # TOML's basic string escapes as JSON's
    elif isinstance(value, (datetime.date, datetime.time)):
        text = value.isoformat()
    elif isinstance(value, list):
        text = "[" + ", ".join(toml_text(v, limit) for v in value) + "]"
    elif isinstance(value, dict):
        items = [f"{_toml_key(k)} = {toml_text(v, limit)}" for k, v in value.items()]
        text = "{ " + ", ".join(items) + " }" if items else "{}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_text(key)


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
    gradcheck: Gradcheck | None = None  # gradients against finite differences, too


@dataclass(frozen=True)
class Gradcheck:
    """A case's ``gradcheck``: ``cgraph gradcheck``'s options, with its defaults; ``points``
    0 checks at the case's bindings alone."""

    points: int = 0
    low: float = gc.RANGE[0]
    high: float = gc.RANGE[1]
    seed: int = 0
    eps: float = gc.EPS
    rtol: float = gc.RTOL
    atol: float = gc.ATOL


class OptionError(ValueError):
    """A mistake in a ``gradcheck`` table, with the key it is at."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key, self.message = key, message


GRADCHECK_KEYS = ("points", "range", "seed", "eps", "rtol", "atol")
MAX_POINTS = gc.MAX_POINTS


def parse_gradcheck(value: object) -> Gradcheck | None:
    """A checks file's ``gradcheck = true`` (at the case's bindings) or ``gradcheck = { points
    = 20, range = [-1, 1] }`` (keys: points, range, seed, eps, rtol, atol); ``false``: none.
    An :class:`OptionError` names the key at fault.

    >>> parse_gradcheck({"points": 20, "range": [-1, 1]})
    Gradcheck(points=20, low=-1.0, high=1.0, seed=0, eps=1e-06, rtol=1e-05, atol=1e-07)
    >>> parse_gradcheck({"range": [1]})
    Traceback (most recent call last):
    ...
    cgraph_cli.app.cases.OptionError: 'range' must be two numbers LOW < HIGH, as [-1, 1], got [1]
    """
    if isinstance(value, bool):
        return Gradcheck() if value else None
    if not isinstance(value, dict):
        raise OptionError("", f"must be true, false or a table of {', '.join(GRADCHECK_KEYS)}")
    for key in value:
        if key not in GRADCHECK_KEYS:
            raise OptionError(key, f"unknown key '{key}' (known: {', '.join(GRADCHECK_KEYS)})")
    found = Gradcheck()
    points = value.get("points", found.points)
    if isinstance(points, bool) or not isinstance(points, int) or not 0 <= points <= MAX_POINTS:
        raise OptionError(
            "points",
            f"'points' must be a whole number from 0 to {MAX_POINTS:,}, got {toml_text(points)}",
        )
    seed = value.get("seed", found.seed)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise OptionError(
            "seed", f"'seed' must be a whole number, 0 or more, got {toml_text(seed)}"
        )
    low, high = _range(value.get("range", [found.low, found.high]))
    eps, rtol, atol = (
        _number(value, key, getattr(found, key), positive=key == "eps")
        for key in ("eps", "rtol", "atol")
    )
    return Gradcheck(points, low, high, seed, eps, rtol, atol)


def _range(value: object) -> tuple[float, float]:
    pair: list[Any] = value if isinstance(value, list) and len(value) == 2 else [None, None]
    if not (_finite(pair[0]) and _finite(pair[1]) and pair[0] < pair[1]):
        text = toml_text(value, 40)
        raise OptionError(
            "range", f"'range' must be two numbers LOW < HIGH, as [-1, 1], got {text}"
        )
    return float(pair[0]), float(pair[1])


def _number(table: dict, key: str, default: float, positive: bool) -> float:
    value = table.get(key, default)
    if not _finite(value) or value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        raise OptionError(key, f"'{key}' must be a finite, {kind} number, got {toml_text(value)}")
    return float(value)


def _finite(value: object) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # a TOML integer too large for a float
        return False


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
