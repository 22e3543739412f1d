"""Binding values: what a user gives an input, checked into a finite float or a finite
float64 array, or refused with a :class:`~cgraph_cli.core.errors.BindingError` that says why.

Reading them from text, files and standard input is :mod:`cgraph_cli.data.sources`' job.

>>> check_value("x", "-3"), check_value("W", "[[1, 2], [3, 4]]").tolist()
(-3.0, [[1.0, 2.0], [3.0, 4.0]])
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ..core.arrays import np
from ..core.errors import BindingError, named
from ..core.ir import Graph


def check_value(name: str, value: object):
    """A binding's value: a finite float, a finite float64 array (given as an array, nested
    lists, or JSON text such as ``"[1, 2]"``), or a :class:`BindingError` saying why not."""
    if value.__class__ is float or value.__class__ is int:
        return check_number(name, value)
    if isinstance(value, str) and not value.lstrip().startswith("["):
        return check_number(name, value)
    if isinstance(value, (str, list, tuple)) or hasattr(value, "__array__"):
        return as_array(name, value)
    return check_number(name, value)


def check_number(name: str, value: object) -> float:
    """A binding's value as a finite float, or a :class:`BindingError` saying why not.

    >>> check_number("x", "1e400")
    Traceback (most recent call last):
    cgraph_cli.core.errors.BindingError: error: the value of 'x' is not a finite number: '1e400'
    """
    if isinstance(value, (bool, complex)):
        kind = "true or false (a boolean)" if isinstance(value, bool) else "a complex number"
        raise BindingError(f"the value of '{name}' is {kind}; cgraph computes with real numbers")
    if isinstance(value, str) and not value.isascii():
        raise _lookalike(name, value)
    try:
        number = float(value)  # type: ignore[arg-type]
    except OverflowError:  # a Python integer past float64's range
        number = math.inf
    except (TypeError, ValueError):
        raise BindingError(f"the value of '{name}' is not a number: {_shown(value)}") from None
    if not math.isfinite(number):
        raise BindingError(f"the value of '{name}' is not a finite number: {_shown(value)}")
    return number


def _lookalike(name: str, text: str) -> BindingError:
    """A number written with characters that are not ASCII (``１２``, Arabic-Indic ``١٢``, a
    Unicode minus): Python's ``float`` would read some of them, cgraph reads none, as in
    programs.

    >>> print(_lookalike("x", "１２"))
    error: the value of 'x' is not a number: '１２' holds '１' (U+FF11 FULLWIDTH DIGIT ONE)
    help: digits are ASCII: type 12
    """
    import unicodedata

    odd = next(c for c in text if not c.isascii())
    what = unicodedata.name(odd, "a character that is not ASCII")
    meant = "".join(
        str(unicodedata.digit(c)) if not c.isascii() and unicodedata.digit(c, None) is not None
        else "-" if c == "\u2212" else c
        for c in text
    )  # fmt: skip
    hint = f"digits are ASCII: type {meant}" if meant.isascii() else "digits are ASCII"
    return BindingError(
        f"the value of '{name}' is not a number: {_shown(text)} holds '{odd}' "
        f"(U+{ord(odd):04X} {what})",
        hints=[hint],
    )


def _shown(value: object) -> str:
    """The value as typed, cut short: a 5,000-digit number is not repeated back in full."""
    if isinstance(value, int) and value.bit_length() > 3000:  # repr would refuse it
        return f"an integer of about {value.bit_length() * 0.30103:,.0f} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text):,} characters)"


def check_bindings(graph: Graph, bindings: Mapping[str, object] | None) -> dict[str, object]:
    """The bindings as finite floats or arrays; a name that is not an input is a
    :class:`BindingError`."""
    bindings = bindings or {}
    unknown = [name for name in bindings if name not in graph.inputs]
    if unknown:
        raise unknown_binding(graph, unknown)
    if bindings and _already_values(bindings):
        return dict(bindings)
    return {name: check_value(name, value) for name, value in bindings.items()}


def _already_values(bindings: Mapping[str, object]) -> bool:
    """Whether every binding is already what :func:`check_value` makes of it (a finite float,
    or a finite float64 array of one element or more, kept as it is), checked in one pass:
    a program run again and again with arrays pays no conversion."""
    values: list[Any] = list(bindings.values())
    if all(v.__class__ is float for v in values):
        return all(math.isfinite(v) for v in values)
    if not all(v.__class__ is float or hasattr(v, "dtype") for v in values):
        return False  # (lists, text, integers: converted; NumPy not imported for them)
    ndarray, f64 = np.ndarray, np.float64
    if not all(
        v.__class__ is float or (v.__class__ is ndarray and v.dtype == f64 and v.ndim and v.size)
        for v in values
    ):
        return False
    with np.errstate(all="ignore"):
        total = 0.0  # one sum of them all: finite when every element is (else one by one)
        for v in values:
            total += v if v.__class__ is float else float(np.add.reduce(v, None))
        return math.isfinite(total) or all(finite(v) for v in values)


def input_values(
    graph: Graph, bindings: Mapping[str, object] | None
) -> tuple[dict[str, object], list[str]]:
    """Each input's value, its binding over the program's default (``input a = 1``), and the
    inputs that have neither, in order of first use.

    >>> from cgraph_cli import parse
    >>> input_values(parse("input a = 1; y = a * b * c"), {"b": 2.0})
    ({'a': 1.0, 'b': 2.0}, ['c'])
    """
    bindings = bindings or {}
    values: dict[str, object] = {}
    missing: list[str] = []
    for name in graph.inputs:
        if name in bindings:
            values[name] = bindings[name]
        elif name in graph.defaults:
            values[name] = graph.defaults[name]
        else:
            missing.append(name)
    return values, missing


def unknown_binding(graph: Graph, unknown: list[str]) -> BindingError:
    name = unknown[0]
    if name in graph.names:
        return BindingError(
            f"'{name}' is computed by the program, so it cannot be bound",
            hints=[
                "only inputs (names read before any assignment) take values: "
                + (", ".join(graph.inputs) or "this program has none")
            ],
        )
    hints = []
    import difflib

    close = difflib.get_close_matches(name, list(graph.inputs), n=1) if len(name) < 100 else []
    if close:
        hints.append(f"did you mean '{close[0]}'?")
    hints.append("the program's inputs: " + (", ".join(graph.inputs) or "none"))
    return BindingError(f"the program has no input named '{named(name)}'", hints=hints)


def as_array(name: str, value):
    """A binding given as nested lists, JSON text or an array: a finite float64 array (a float
    if it has no axes), or a :class:`BindingError`. Elements must be real numbers (integers and
    floats of any precision); nesting deeper than NumPy's 64 axes is refused before parsing.

    >>> as_array("W", "[[1, 2], [3, 4]]").tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    >>> as_array("W", "[1, true]")
    Traceback (most recent call last):
    cgraph_cli.core.errors.BindingError: error: the value of 'W' holds true/false values (booleans); cgraph computes with real numbers
    """
    from .arrayfiles import dtype_problem, list_problem

    if isinstance(value, str):
        value = _parse_json(name, value)
    if isinstance(value, (list, tuple)):
        problem = list_problem(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        problem = None
    else:
        problem = dtype_problem(np.asarray(value).dtype)
    if problem:
        raise BindingError(f"the value of '{name}' {problem}")
    try:
        array = np.asarray(value, dtype=float)  # no copy of a float64 array: nothing mutates it
    except OverflowError:  # a Python integer past float64's range
        raise BindingError(
            f"the value of '{name}' holds a value that is not a finite number"
        ) from None
    except (TypeError, ValueError):
        raise BindingError(
            f"the value of '{name}' is not a rectangular array of numbers: {_short(value)}",
            hints=["every row needs as many numbers as the others: [[1, 2], [3, 4]]"],
        ) from None
    if not all_finite(array):
        raise BindingError(f"the value of '{name}' holds a value that is not a finite number")
    if array.size == 0:
        raise BindingError(f"the value of '{name}' is an empty array")
    return float(array) if array.ndim == 0 else array


def _parse_json(name: str, text: str):
    """JSON text from the command line. Its depth is counted first, since the JSON parser
    recurses; integers become floats, since Python refuses to convert 5,000-digit ones."""
    import json  # here: a program of numbers given no JSON never needs it
    from itertools import accumulate

    from .arrayfiles import MAX_AXES, IntegerTooLarge, json_int

    depth = max(accumulate(1 if c == "[" else -1 for c in re.findall(_BRACKETS, text)), default=0)
    if depth > MAX_AXES:
        raise BindingError(
            f"the value of '{name}' is nested {depth} levels deep; arrays have at most "
            f"{MAX_AXES} axes"
        )
    try:
        return json.loads(text, parse_int=json_int)
    except IntegerTooLarge as e:
        raise BindingError(f"the value of '{name}' {e}") from None
    except json.JSONDecodeError as e:
        raise BindingError(
            f"the value of '{name}' is not a number or an array: {_short(text)} ({e.msg} at "
            f"character {e.pos + 1})",
            hints=["arrays are written as JSON: W='[[1, 2], [3, 4]]'"],
        ) from None


_BRACKETS = r"[][]"  # a pattern: compiled (and cached) by re on first use


def all_finite(x) -> bool:
    """Whether every element is finite: one summing pass (no temporary array) unless the sum
    itself says otherwise."""
    if isinstance(x, float):
        return math.isfinite(x)
    with np.errstate(all="ignore"):  # a sum that overflows is the question, not a warning
        return finite(x)


def finite(x) -> bool:
    """:func:`all_finite`, for the passes' loops, which run inside ``np.errstate`` already."""
    if x.__class__ is float:
        return math.isfinite(x)
    return math.isfinite(float(np.add.reduce(x, None))) or bool(np.isfinite(x).all())


def _short(value) -> str:
    """At most about 60 characters of a value, however long or deeply nested it is."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxstring, short.maxother = 4, 8, 50, 50
    text = short.repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def owned(results: Mapping, given: Mapping) -> dict:
    """``results``, each copied where it shares memory with a binding (a gradient that is an
    input itself, W's in sum(W * x)): the caller's arrays stay theirs, as the interpreter's
    do."""
    ids = {id(v) for v in given.values()}
    arrays = [v for v in given.values() if v.__class__ is not float]
    owned = {}
    for k, value in results.items():
        if value.__class__ is float:  # (NumPy not imported for programs of numbers)
            owned[k] = value
            continue
        if value.__class__ is np.ndarray and value.base is None:  # made by the module, or given
            value = np.array(value) if id(value) in ids else value
        elif any(np.may_share_memory(value, v) for v in arrays):
            value = np.array(value)
        owned[k] = value
    return owned
