"""Checks files: TOML ``[[case]]`` tables read into :class:`~cgraph_cli.app.cases.Case`.

Every mistake in the file itself (TOML syntax, an unknown key, a value of the wrong type, a
program file outside the checks file's folder) is a :class:`UsageError` (exit 2) at its line,
with the key, raised before any case runs. A case whose program cannot be read or parsed keeps
that error, and reports it when it runs.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "checks.toml").write_text('[[case]]\\nprogram = "y = 2 * x"\\n'
...                                          'bindings = { x = 3 }\\nexpect = { y = 6 }\\n')
>>> [(c.name, c.bindings, c.expect) for c in load_spec(str(folder / "checks.toml"))]
[('case 1', {'x': 3.0}, {'y': 6.0})]
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

from ..core.errors import BindingError, CgraphError, Source, Span, UsageError
from .cases import (
    ATOL,
    GRADCHECK_KEYS,
    RTOL,
    Case,
    Gradcheck,
    OptionError,
    parse_gradcheck,
    toml_text,
)

_CASE_KEYS = (
    "name",
    "file",
    "program",
    "bindings",
    "of",
    "expect",
    "expect_grad",
    "expect_hessian",
    "gradcheck",
    "rtol",
    "atol",
)
_TOP_KEYS = ("rtol", "atol", "case")
MAX_DEPTH = 40  # arrays and inline tables nested deeper are refused before TOML parsing
_EXAMPLE = (
    '[[case]]  name = "seed"  file = "seed.cg"  expect = { g = -12 }  expect_grad = { x = -3 }'
)


def load_spec(path: str) -> list[Case]:
    """The cases of a TOML spec file. Every mistake in the file is a :class:`UsageError`
    (exit 2) at its line, with the key."""
    from ..data.sources import read_file

    spec = read_file(path)
    where = _Locator(spec)
    data = _parse_toml(spec, where)
    for key in data:
        if key not in _TOP_KEYS:
            raise where.error(f"unknown key '{key}'", None, key, _TOP_KEYS)
    rtol = where.tolerance(data, "rtol", None, RTOL)
    atol = where.tolerance(data, "atol", None, ATOL)
    tables = data.get("case")
    if tables is None:
        raise UsageError(f"{path} has no [[case]] tables", hints=[_EXAMPLE])
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise where.error(
            "'case' must be one or more [[case]] tables", None, "case", hints=[_EXAMPLE]
        )
    folder = Path(path).parent
    return [_load_case(where, table, k, folder, rtol, atol) for k, table in enumerate(tables)]


def read_toml(path: str) -> dict:
    """A TOML file's tables (``cgraph train --config``), its errors placed as for checks files."""
    from ..data.sources import read_file

    spec = read_file(path, "a TOML file")
    return _parse_toml(spec, _Locator(spec))


def _parse_toml(spec: Source, where: _Locator) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib

    deep = _too_deep(spec.text, MAX_DEPTH)
    if deep is not None:
        raise UsageError(
            f"arrays or tables nested more than {MAX_DEPTH} deep", Span(deep, deep + 1), spec
        )
    try:
        return tomllib.loads(spec.text)
    except RecursionError:  # pragma: no cover - _too_deep refuses such nesting first
        raise UsageError(f"{spec.filename} nests arrays or tables too deeply") from None
    except ValueError as e:  # TOMLDecodeError; also a whole number of over 4,300 digits
        message = getattr(e, "msg", None) or str(e).split(" (at ")[0]
        if not isinstance(e, tomllib.TOMLDecodeError):
            message = "a whole number with too many digits"
        line, col = getattr(e, "lineno", None), getattr(e, "colno", None)
        if line is None:  # tomllib before Python 3.14, tomli before 2.1: only in the text
            m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
            line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        span = where.at(line, col) if line is not None else where.end()
        raise UsageError(f"{spec.filename} is not valid TOML: {message}", span, spec) from None


def _too_deep(text: str, limit: int) -> int | None:
    """The offset of the first ``[`` or ``{`` nested more than ``limit`` deep (strings and
    comments skipped), or None: the TOML parser recurses once per level.

    >>> _too_deep('a = [[1], "[[["]', 2), _too_deep("a = [[[1]]]", 2)
    (None, 6)
    """
    depth = 0
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return m.start()
        elif token in "]}":
            depth = max(0, depth - 1)
    return None


_TOKENS = re.compile(
    r'"""(?:\\.|[^\\])*?"""|\'\'\'.*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]',
    re.DOTALL,
)


def _load_case(
    where: _Locator, table: dict, k: int, folder: Path, rtol: float, atol: float
) -> Case:
    for key in table:
        if key not in _CASE_KEYS:
            raise where.error(f"unknown key '{key}' in case {k + 1}", k, key, _CASE_KEYS)
    name = where.string(table, "name", k) if "name" in table else f"case {k + 1}"
    if ("file" in table) == ("program" in table):
        raise where.error(f"case {k + 1} needs exactly one of 'file' and 'program'", k, "file")
    path = where.program_path(table, k, folder) if "file" in table else None
    program = "" if path else where.string(table, "program", k)
    expect = where.values(table, "expect", k)
    expect_grad = where.values(table, "expect_grad", k)
    expect_hessian = where.second_derivatives(table, k)
    gradcheck = where.gradcheck(table, k)
    if not expect and not expect_grad and not expect_hessian and gradcheck is None:
        raise where.error(
            f"case {k + 1} expects nothing: give 'expect', 'expect_grad', 'expect_hessian' "
            "or 'gradcheck'",
            k,
            "name",
        )
    case = Case(
        name,
        None,
        where.values(table, "bindings", k),
        expect,
        expect_grad,
        where.string(table, "of", k) if "of" in table else None,
        where.tolerance(table, "rtol", k, rtol),
        where.tolerance(table, "atol", k, atol),
        expect_hessian=expect_hessian,
        gradcheck=gradcheck,
    )
    try:  # the program's own errors are the case's result, not a mistake in the spec
        from ..data.sources import read_file
        from ..parse import parse

        source = read_file(path) if path else Source(program, f"{where.source.filename}[{name}]")
        case.graph = parse(source.text, source.filename)
    except CgraphError as e:
        case.error = e
    return case


class _Locator:
    """Finds where a key of a spec file is written, for messages with a caret; checks values."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.lines = source.text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int | None) -> Span:
        offset = self.starts[max(1, min(line, len(self.lines))) - 1] + max(col or 1, 1) - 1
        return Span(offset, offset + 1)

    def end(self) -> Span:
        """The last character (the end of the document, for TOML errors there)."""
        offset = max(0, len(self.source.text.rstrip("\n")) - 1)
        return Span(offset, offset + 1)

    def find(self, case: int | None, key: str, value: bool = False) -> Span | None:
        """Where ``key =`` is written at the top (``case`` None) or in the case-th [[case]]
        table (its value, if ``value``); else that table's header; else the ``case`` key."""
        headers = [n for n, line in enumerate(self.lines) if _CASE_HEADER.match(line)]
        if case is None:
            lines = range(headers[0] if headers else len(self.lines))
        elif case < len(headers):
            lines = range(headers[case], (headers + [len(self.lines)])[case + 1])
        else:  # cases written as an inline array: `case = [{...}]`
            return self.find(None, "case")
        for n in lines:
            m = re.match(rf"\s*({re.escape(key)})\s*=\s*({_STRING})?", self.lines[n])
            if m:
                group = 2 if value and m.group(2) else 1
                return Span(self.starts[n] + m.start(group), self.starts[n] + m.end(group))
        if case is not None:
            n = headers[case]
            start = self.starts[n] + self.lines[n].index("[")
            found = _CASE_HEADER.match(self.lines[n])
            assert found is not None, "headers holds the lines that match it"
            return Span(start, self.starts[n] + found.end())
        table = re.compile(rf"\s*\[\[?\s*{re.escape(key)}\s*\]").match
        header = next((n for n, line in enumerate(self.lines) if table(line)), None)
        return None if header is None else Span(self.starts[header], self.starts[header] + 1)

    def error(
        self, message: str, case: int | None, key: str, known=(), *, hints=(), value: bool = False
    ) -> UsageError:
        hints = list(hints)
        import difflib

        close = difflib.get_close_matches(key, known, n=1)
        if known and close:
            hints.insert(0, f"did you mean '{close[0]}'?")
        return UsageError(message, self.find(case, key, value), self.source, hints=hints)

    def string(self, table: dict, key: str, case: int) -> str:
        value = table[key]
        if not isinstance(value, str):
            raise self.error(f"'{key}' in case {case + 1} must be a string", case, key)
        return value

    def tolerance(self, table: dict, key: str, case: int | None, default: float) -> float:
        value = table.get(key, default)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not (_finite(value) and value >= 0)
        ):
            where = "" if case is None else f" in case {case + 1}"
            raise self.error(
                f"'{key}'{where} must be a finite, non-negative number, got {_short(value)}",
                case,
                key,
            )
        return float(value)

    def values(self, table: dict, key: str, case: int) -> dict[str, object]:
        """A table of name = number, or name = array of numbers (nested for matrices): each a
        finite float or a float64 array."""
        value = table.get(key, {})
        kind = f"'{key}' in case {case + 1} must be a table of name = number or array"
        if not isinstance(value, dict):
            raise self.error(kind, case, key)
        checked = {}
        for name, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (int, float, list)):
                raise self.error(f"{kind} ('{name}' is {_short(v)})", case, key)
            try:
                checked[name] = _number_or_array(name, v)
            except BindingError as e:
                raise UsageError(
                    f"'{key}' in case {case + 1}: {e.message}",
                    self.find(case, key),
                    self.source,
                    hints=e.hints,
                ) from None
        return checked

    def second_derivatives(self, table: dict, case: int) -> dict[str, float]:
        """``expect_hessian = { "x,y" = 2, "W[0, 1],x[2]" = -0.5 }``: pairs of inputs, each a
        number."""
        from .cases import parse_hessian_expectation

        value = table.get("expect_hessian", {})
        kind = f"'expect_hessian' in case {case + 1} must be a table of \"NAME,NAME\" = number"
        if not isinstance(value, dict):
            raise self.error(kind, case, "expect_hessian")
        checked = {}
        for pair, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
                raise self.error(f"{kind} ('{pair}' is {_short(v)})", case, "expect_hessian")
            try:
                name, number = parse_hessian_expectation(f"{pair}={float(v)!r}")
            except UsageError as e:
                raise self.error(
                    f"'expect_hessian' in case {case + 1}: {e.message}",
                    case,
                    "expect_hessian",
                    hints=e.hints,
                ) from None
            checked[name] = number
        return checked

    def gradcheck(self, table: dict, case: int) -> Gradcheck | None:
        """``gradcheck = true`` or ``{ points = 20, range = [-1, 1] }`` (an inline table, or a
        ``[case.gradcheck]`` table); a mistake at the key it is in."""
        try:
            return parse_gradcheck(table.get("gradcheck", False))
        except OptionError as e:
            import difflib

            hints = ["for example: gradcheck = { points = 20, range = [-1, 1] }"]
            if e.message.startswith("unknown key"):
                hints[:0] = [f"did you mean '{k}'?" for k in difflib.get_close_matches(
                    e.key, GRADCHECK_KEYS, n=1)]  # fmt: skip
            span = self.inner(case, e.key) or self.find(case, "gradcheck")
            message = f"'gradcheck' in case {case + 1}: {e.message}"
            raise UsageError(message, span, self.source, hints=hints) from None

    def inner(self, case: int, key: str) -> Span | None:
        """Where ``key =`` is written in a case's ``gradcheck = { ... }`` (on its line), or on a
        line of its ``[case.gradcheck]`` table."""
        headers = [n for n, line in enumerate(self.lines) if _CASE_HEADER.match(line)]
        if not key or case >= len(headers):
            return None
        inline = re.compile(rf"\s*gradcheck\s*=.*?[{{,]\s*({re.escape(key)})\s*=")
        own_line = re.compile(rf"\s*({re.escape(key)})\s*=")
        in_table = False
        for n in range(headers[case] + 1, (headers + [len(self.lines)])[case + 1]):
            line = self.lines[n]
            if line.lstrip().startswith("["):
                in_table = bool(_SUBTABLE.match(line))
                continue
            m = (own_line if in_table else inline).match(line)
            if m:
                return Span(self.starts[n] + m.start(1), self.starts[n] + m.end(1))
        return None

    def program_path(self, table: dict, case: int, folder: Path) -> str:
        """The case's ``file``, relative to the checks file: refused if it is absolute or
        leads (through ``..`` or a symbolic link) outside the checks file's folder."""
        text = self.string(table, "file", case)
        why = None
        if "\0" in text:
            why = "is not a valid path"
        elif Path(text).is_absolute() or Path(text).drive:
            why = "is an absolute path"
        else:
            try:
                root = folder.resolve()
                inside = (root / text).resolve().is_relative_to(root)
            except (OSError, RuntimeError, ValueError):  # a symbolic link loop, say
                inside = False
            if not inside:
                why = "leads outside the checks file's folder"
        if why:
            raise self.error(
                f"'file' in case {case + 1} {why}: {toml_text(text)}",
                case,
                "file",
                value=True,
                hints=[
                    "a case's file is read relative to the checks file, and only from its "
                    "folder or below; use 'program' for inline text"
                ],
            )
        path = str(folder / text)
        from ..data.outputs import claim

        claim(path, "input", f"case {case + 1} of {self.source.filename}")  # before any case runs
        return path


_CASE_HEADER = re.compile(r"\s*\[\[\s*case\s*\]\]")
_SUBTABLE = re.compile(r"\s*\[\s*case\s*\.\s*gradcheck\s*\]")
_STRING = r'"(?:\\.|[^"\\\n])*"|\'[^\'\n]*\''


def _number_or_array(name: str, value):
    """A finite float, or a finite float64 array, from TOML's numbers and arrays."""
    from ..data.bindings import check_value

    if isinstance(value, int) and not _finite(value):
        raise BindingError(f"the value of '{name}' is not a finite number: {_short(value)}")
    try:
        return check_value(name, value)
    except OverflowError:  # NumPy, given a whole number too large for a float
        raise BindingError(f"the value of '{name}' holds a number too large") from None


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


def _short(value) -> str:
    if isinstance(value, int) and not _finite(value):
        return f"a whole number of {len(str(abs(value)))} digits"
    return toml_text(value)
