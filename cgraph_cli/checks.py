"""Assertions on values and gradients, for CI: from the command line or a TOML spec file.

An assertion holds when |actual - expected| <= atol + rtol · |expected| (for tensors: element by
element, and the shapes must be equal).

>>> from cgraph_cli import parse
>>> [r.ok for r in run_case(Case("seed", parse("p = x + y; g = p * z"), {"x": 1, "y": 3, "z": -3},
...                               expect={"g": -12}, expect_grad={"x": -3, "z": 5}))]
[True, True, False]
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from .api import evaluate, grad, resolve_name
from .errors import Source, Span, UsageError
from .ir import Graph

RTOL, ATOL = 1e-9, 1e-12


@dataclass
class Case:
    name: str
    graph: Graph
    bindings: dict[str, object]
    expect: dict[str, float] = field(default_factory=dict)
    expect_grad: dict[str, float] = field(default_factory=dict)
    of: str | None = None
    rtol: float = RTOL
    atol: float = ATOL


@dataclass(frozen=True)
class Result:
    case: str
    kind: str  # "value" or "gradient"
    name: str  # the named value, or the input differentiated against
    output: str  # the output differentiated
    expected: object  # a float, or a NumPy array for tensors
    actual: object
    ok: bool

    @property
    def difference(self) -> float:
        """The largest elementwise difference (infinite when the shapes differ)."""
        if _shape(self.actual) != _shape(self.expected):
            return math.inf
        if _shape(self.actual):
            from .arrays import np

            with np.errstate(all="ignore"):  # 1e308 - -1e308: inf, without a NumPy warning
                return float(np.max(np.abs(self.actual - self.expected)))
        return abs(self.actual - self.expected)

    @property
    def label(self) -> str:
        return self.name if self.kind == "value" else f"∂{self.output}/∂{self.name}"


def run_case(case: Case) -> list[Result]:
    """Evaluate and differentiate the case's program once; one result per expectation."""
    # Values alone need no reverse pass (and a tensor output has no gradient to take).
    run = grad if case.expect_grad else evaluate
    result = run(case.graph, case.bindings, of=case.of)
    out = result.output_name
    results = []
    for kind, expectations in (("value", case.expect), ("gradient", case.expect_grad)):
        for name, expected in expectations.items():
            node = resolve_name(case.graph, name)
            actual = result.values[node] if kind == "value" else result.adjoints[node]
            expected = _expected_value(name, expected)
            ok = _close(actual, expected, case.rtol, case.atol)
            results.append(Result(case.name, kind, name, out, expected, actual, ok))
    return results


def _shape(value) -> tuple:
    return tuple(getattr(value, "shape", ()))


def _expected_value(name: str, value):
    from .errors import BindingError
    from .forward import check_number
    from .tensors import as_array

    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return check_number(name, value)  # a TOML integer past float64's range
        if isinstance(value, float):
            return value
        return as_array(name, value)
    except BindingError as e:
        raise UsageError(f"the expected {e.message.removeprefix('the ')}") from None


def _close(actual, expected, rtol: float, atol: float) -> bool:
    if _shape(actual) != _shape(expected):
        return False
    if not _shape(actual):
        return abs(actual - expected) <= atol + rtol * abs(expected)
    from .arrays import np

    with np.errstate(all="ignore"):  # a difference that overflows is not close: no warning
        return bool(np.all(np.abs(actual - expected) <= atol + rtol * np.abs(expected)))


def parse_expectation(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` with a number, or a tensor as JSON (``W=[[1, 2], [3, 4]]``), for --expect
    and --expect-grad."""
    name, eq, value = text.partition("=")
    if value.strip().startswith("[") and eq and name.strip().isidentifier():
        return name.strip(), _expected_value(name.strip(), value.strip())
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


# --- spec files -----------------------------------------------------------------------------------
_CASE_KEYS = ("name", "file", "program", "bindings", "of", "expect", "expect_grad", "rtol", "atol")
_TOP_KEYS = ("rtol", "atol", "case")


def load_spec(path: str) -> list[Case]:
    """The cases of a TOML spec file. Every mistake in the file is a :class:`UsageError`
    (exit 2) at its line, with the key."""
    from .parser import parse
    from .sources import read_file

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    spec = read_file(path)
    where = _Locator(spec)
    try:
        data = tomllib.loads(spec.text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        span = where.at(int(m.group(1)), int(m.group(2))) if m else None
        raise UsageError(f"{path} is not valid TOML: {str(e).split(' (at')[0]}", span, spec) from None
    for key in data:
        if key not in _TOP_KEYS:
            raise where.error(f"unknown key '{key}'", None, key, _TOP_KEYS)
    top_rtol = where.number(data, "rtol", None, RTOL)
    top_atol = where.number(data, "atol", None, ATOL)
    cases = data.get("case")
    if not isinstance(cases, list) or not cases:
        raise UsageError(f"{path} has no [[case]] tables", hints=[_EXAMPLE])
    loaded = []
    base = Path(path).parent
    for k, table in enumerate(cases):
        for key in table:
            if key not in _CASE_KEYS:
                raise where.error(f"unknown key '{key}' in case {k + 1}", k, key, _CASE_KEYS)
        name = str(table.get("name", f"case {k + 1}"))
        if ("file" in table) == ("program" in table):
            raise where.error(f"case {k + 1} needs exactly one of 'file' and 'program'", k, "file")
        if "file" in table:
            program = read_file(str(base / where.string(table, "file", k)))
        else:
            program = Source(where.string(table, "program", k), f"{path}[{name}]")
        expect = where.numbers(table, "expect", k)
        expect_grad = where.numbers(table, "expect_grad", k)
        if not expect and not expect_grad:
            raise where.error(f"case {k + 1} expects nothing: give 'expect' or 'expect_grad'", k, "name")
        loaded.append(Case(
            name, parse(program.text, program.filename), where.numbers(table, "bindings", k),
            expect, expect_grad, table.get("of"),
            where.number(table, "rtol", k, top_rtol), where.number(table, "atol", k, top_atol),
        ))
    return loaded


_EXAMPLE = ('[[case]]  name = "seed"  file = "seed.cg"  expect = { g = -12 }  '
            "expect_grad = { x = -3 }")


class _Locator:
    """Finds where a key of a spec file is written, for messages with a caret."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.lines = source.text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int) -> Span:
        offset = self.starts[min(line, len(self.lines)) - 1] + col - 1
        return Span(offset, offset + 1)

    def find(self, case: int | None, key: str) -> Span | None:
        seen = -1
        for n, line in enumerate(self.lines):
            stripped = line.strip()
            if stripped.startswith("[[case]]"):
                seen += 1
                header = n
            inside = seen == case if case is not None else seen < 0
            if inside and re.match(rf"{re.escape(key)}\s*=", stripped):
                start = self.starts[n] + line.index(key)
                return Span(start, start + len(key))
        if case is not None and seen >= case:  # point at the case's header
            count = -1
            for n, line in enumerate(self.lines):
                if line.strip().startswith("[[case]]"):
                    count += 1
                    if count == case:
                        header = n
                        start = self.starts[header] + line.index("[[")
                        return Span(start, start + len("[[case]]"))
        return None

    def error(self, message: str, case: int | None, key: str, known=()) -> UsageError:
        hints = []
        close = difflib.get_close_matches(key, known, n=1)
        if known and close:
            hints.append(f"did you mean '{close[0]}'?")
        return UsageError(message, self.find(case, key), self.source, hints=hints)

    def string(self, table: dict, key: str, case: int) -> str:
        value = table[key]
        if not isinstance(value, str):
            raise self.error(f"'{key}' in case {case + 1} must be a string", case, key)
        return value

    def number(self, table: dict, key: str, case: int | None, default: float) -> float:
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise self.error(f"'{key}' must be a non-negative number", case, key)
        return float(value)

    def numbers(self, table: dict, key: str, case: int) -> dict[str, object]:
        """A table of name = number, or name = array of numbers (nested for matrices)."""
        value = table.get(key, {})
        if not isinstance(value, dict) or any(
            isinstance(v, bool) or not isinstance(v, (int, float, list)) for v in value.values()
        ):
            raise self.error(
                f"'{key}' in case {case + 1} must be a table of name = number or array", case, key
            )
        return {k: v if isinstance(v, list) else float(v) for k, v in value.items()}


# --- reports -------------------------------------------------------------------------------------
def report(results: list[Result]) -> dict:
    """The JSON report: counts and one entry per assertion."""
    return {
        "passed": sum(r.ok for r in results),
        "failed": sum(not r.ok for r in results),
        "checks": [
            {"case": r.case, "kind": r.kind, "name": r.name, "output": r.output,
             "expected": r.expected, "actual": r.actual,
             "difference": None if math.isinf(r.difference) else r.difference, "ok": r.ok}
            for r in results
        ],
    }


def junit_xml(results: list[Result], suite: str = "cgraph") -> str:
    """JUnit XML: one testcase per assertion, failures with expected, actual and difference."""
    from xml.sax.saxutils import quoteattr

    from .numfmt import plain_value as f

    failed = sum(not r.ok for r in results)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f"<testsuites><testsuite name={quoteattr(suite)} tests=\"{len(results)}\" "
             f"failures=\"{failed}\" errors=\"0\">"]
    for r in results:
        name = quoteattr(f"{r.label} = {f(r.expected)}")
        lines.append(f"  <testcase classname={quoteattr(r.case or suite)} name={name}>")
        if not r.ok:
            message = quoteattr(f"{r.label} = {f(r.actual)} (expected {f(r.expected)}, "
                                f"difference {f(r.difference)})")
            lines.append(f"    <failure message={message}/>")
        lines.append("  </testcase>")
    lines.append("</testsuite></testsuites>")
    return "\n".join(lines) + "\n"
