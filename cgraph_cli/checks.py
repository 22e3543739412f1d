"""Assertions on values and gradients, for CI: from the command line or a TOML spec file.

An assertion holds when |actual - expected| <= atol + rtol · |expected| (for tensors: element by
element, and the shapes must be equal).

>>> from cgraph_cli import parse
>>> [r.ok for r in run_case(Case("seed", parse("p = x + y; g = p * z"), {"x": 1, "y": 3, "z": -3},
...                               expect={"g": -12}, expect_grad={"x": -3, "z": 5}))]
[True, True, False]
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .api import evaluate, grad, resolve_name
from .errors import CgraphError, UsageError
from .ir import Graph

RTOL, ATOL = 1e-9, 1e-12


@dataclass
class Case:
    name: str
    graph: Graph | None  # None when the program could not be read or parsed: see ``error``
    bindings: dict[str, object]
    expect: dict[str, float] = field(default_factory=dict)
    expect_grad: dict[str, float] = field(default_factory=dict)
    of: str | None = None
    rtol: float = RTOL
    atol: float = ATOL
    error: CgraphError | None = None  # why the case cannot run, reported as its result


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
    def shapes_differ(self) -> bool:
        return _shape(self.actual) != _shape(self.expected)

    @property
    def difference(self) -> float:
        """The largest elementwise difference (infinite when the shapes differ)."""
        if self.shapes_differ:
            return math.inf
        if _shape(self.actual):
            from .arrays import np

            with np.errstate(all="ignore"):  # 1e308 - -1e308: inf, without a NumPy warning
                return float(np.max(np.abs(self.actual - self.expected)))
        return abs(self.actual - self.expected)

    @property
    def label(self) -> str:
        return self.name if self.kind == "value" else f"∂{self.output}/∂{self.name}"


@dataclass(frozen=True)
class CaseRun:
    """A case's results, or the error that kept it from running (its program, its bindings,
    an evaluation error)."""

    case: str
    results: list[Result]
    error: CgraphError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(r.ok for r in self.results)


def run_case(case: Case) -> list[Result]:
    """Evaluate and differentiate the case's program once; one result per expectation."""
    if case.error is not None:
        raise case.error
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


def run_cases(cases: list[Case]) -> list[CaseRun]:
    """Every case, each on its own: a case that cannot run does not stop the others.

    >>> from cgraph_cli import parse
    >>> runs = run_cases([Case("bad", parse("y = log(x)"), {"x": -1}, {"y": 0}),
    ...                   Case("good", parse("y = x"), {"x": 2}, {"y": 2})])
    >>> [(run.case, run.ok, type(run.error).__name__) for run in runs]
    [('bad', False, 'DomainError'), ('good', True, 'NoneType')]
    """
    runs = []
    for case in cases:
        try:
            runs.append(CaseRun(case.name, run_case(case)))
        except CgraphError as e:
            runs.append(CaseRun(case.name, [], e))
    return runs


def error_text(error: CgraphError) -> str:
    """``FILE:LINE:COL: message``, or the message alone when the error has no place."""
    where = error.where()
    return f"{where}: {error.message}" if where else error.message


def _shape(value) -> tuple:
    return tuple(getattr(value, "shape", ()))


def _expected_value(name: str, value):
    from .bindings import as_array, check_number
    from .errors import BindingError

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


def load_spec(path: str) -> list[Case]:
    """The cases of a TOML spec file (see :mod:`cgraph_cli.checks_spec`)."""
    from .checks_spec import load_spec as load

    return load(path)


# --- reports -------------------------------------------------------------------------------------
def report(runs: list[CaseRun]) -> dict:
    """The JSON report: counts and one entry per assertion, and one per case that could not run.

    >>> from cgraph_cli import parse
    >>> r = report(run_cases([Case("c", parse("y = x"), {"x": 2}, {"y": 2, "z": 1})]))
    >>> r["passed"], r["failed"], r["errors"], r["checks"]
    (0, 0, 1, [{'case': 'c', 'error': "the program has no name 'z'"}])
    """
    results = [r for run in runs for r in run.results]
    checks = []
    for run in runs:
        checks.extend(
            {
                "case": r.case,
                "kind": r.kind,
                "name": r.name,
                "output": r.output,
                "expected": r.expected,
                "actual": r.actual,
                "difference": None if math.isinf(r.difference) else r.difference,
                "ok": r.ok,
            }
            for r in run.results
        )
        if run.error is not None:
            checks.append({"case": run.case, "error": error_text(run.error)})
    return {
        "passed": sum(r.ok for r in results),
        "failed": sum(not r.ok for r in results),
        "errors": sum(run.error is not None for run in runs),
        "checks": checks,
    }


def junit_xml(runs: list[CaseRun], suite: str = "cgraph") -> bytes:
    """JUnit XML, UTF-8 encoded: one testcase per assertion, failures with expected, actual and
    difference; a case that could not run is a testcase with an ``<error>``.

    >>> from cgraph_cli import parse
    >>> print(junit_xml([CaseRun("c", [], UsageError("no such file: a.cg"))]).decode())
    <?xml version='1.0' encoding='utf-8'?>
    <testsuites>
      <testsuite name="cgraph" tests="1" failures="0" errors="1">
        <testcase classname="c" name="c">
          <error message="no such file: a.cg">error: no such file: a.cg</error>
        </testcase>
      </testsuite>
    </testsuites>
    """
    import xml.etree.ElementTree as ET

    from .numfmt import plain_value as f

    results = [r for run in runs for r in run.results]
    root = ET.Element("testsuites")
    node = ET.SubElement(
        root,
        "testsuite",
        name=_xml(suite),
        tests=str(len(results) + sum(run.error is not None for run in runs)),
        failures=str(sum(not r.ok for r in results)),
        errors=str(sum(run.error is not None for run in runs)),
    )
    for run in runs:
        for r in run.results:
            case = ET.SubElement(
                node,
                "testcase",
                classname=_xml(r.case or suite),
                name=_xml(f"{r.label} = {f(r.expected)}"),
            )
            if not r.ok:
                ET.SubElement(
                    case,
                    "failure",
                    message=_xml(
                        f"{r.label} = {f(r.actual)} (expected {f(r.expected)}, "
                        f"difference {f(r.difference)})"
                    ),
                )
        if run.error is not None:
            case = ET.SubElement(
                node, "testcase", classname=_xml(run.case or suite), name=_xml(run.case or suite)
            )
            error = ET.SubElement(case, "error", message=_xml(error_text(run.error)))
            error.text = _xml(run.error.render())
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _xml(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (control characters, lone
    surrogates), each replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
