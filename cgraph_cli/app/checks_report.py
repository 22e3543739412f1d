"""What :func:`cgraph_cli.app.checks.check` found: each assertion's :class:`Result`, each
case's :class:`CaseRun`, and as reports: :class:`CheckReport` (the library's result), the JSON
report, JUnit XML and the ``N passed, M failed`` line; shared by ``cgraph check``, checks files
and ``check --rows``.

>>> from cgraph_cli.app.checks import run_cases
>>> from cgraph_cli.app.cases import Case
>>> from cgraph_cli import parse
>>> runs = run_cases([Case("c", parse("y = 2 * x"), {"x": 2}, {"y": 4})])
>>> counts(runs[0].results), report(runs)["passed"]
('1 passed, 0 failed', 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.arrays import Value
from ..core.errors import CgraphError
from ..render.html import xml_text
from .cases import ATOL, RTOL, parse_pair, value_shape
from .gradcheck import SKIPPED, Check, mismatch


@dataclass(frozen=True)
class Result:
    case: str
    kind: str  # "value", "gradient", "hessian" or "gradcheck"
    name: str  # the named value, the input differentiated against, or a pair of them: "x,y"
    output: str  # the output differentiated
    expected: Value  # a float, or a NumPy array for tensors; gradcheck: the numeric slope
    actual: Value  # gradcheck: the analytic gradient (either NaN when the check was skipped)
    ok: bool
    gradcheck: Check | None = None  # a gradcheck's check, its point and status
    point: int = 0  # a gradcheck's point, from 1
    tolerances: tuple[float, float] = (RTOL, ATOL)  # a gradcheck's rtol and atol

    @property
    def tolerance(self) -> float:
        """A gradcheck's allowed difference: atol + rtol·max(|analytic|, |numeric|)."""
        rtol, atol = self.tolerances
        return atol + rtol * max(abs(float(self.actual)), abs(float(self.expected)))

    @property
    def skipped(self) -> bool:
        """A gradcheck at a kink or where the program is undefined: neither passed nor failed."""
        return self.gradcheck is not None and self.gradcheck.status in SKIPPED

    @property
    def shapes_differ(self) -> bool:
        return value_shape(self.actual) != value_shape(self.expected)

    @property
    def difference(self) -> float:
        """The largest elementwise difference (infinite when the shapes differ)."""
        if self.shapes_differ:
            return math.inf
        if value_shape(self.actual):
            from ..core.arrays import np

            with np.errstate(all="ignore"):  # 1e308 - -1e308: inf, without a NumPy warning
                return float(np.max(np.abs(self.actual - self.expected)))
        return abs(float(self.actual) - float(self.expected))

    @property
    def label(self) -> str:
        if self.gradcheck is not None:
            return f"∂{self.output}/∂{self.name} at point {self.point}"
        if self.kind == "hessian":
            from .gradcheck import element_label

            a, b = (element_label(*e) for e in parse_pair(self.name))
            return f"∂²{self.output}/∂{a}²" if a == b else f"∂²{self.output}/∂{a}∂{b}"
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


@dataclass(frozen=True, repr=False)
class CheckReport:
    """What :func:`check` found: one :class:`CaseRun` per case (one case unless a spec file
    ran). ``ok`` when every assertion holds and every case could run.

    >>> from cgraph_cli import check
    >>> r = check("g = x * y", {"x": 2, "y": 3}, expect={"g": 6}, expect_grad={"x": 4})
    >>> r
    <CheckReport: 1 passed, 1 failed; FAIL ∂g/∂x = 3 (expected 4)>
    >>> r.ok, [x.ok for x in r.results]
    (False, [True, False])
    """

    runs: list[CaseRun]

    @property
    def results(self) -> list[Result]:
        """Every assertion's :class:`Result` (expected, actual, ok, label), case after case."""
        return [r for run in self.runs for r in run.results]

    @property
    def ok(self) -> bool:
        """Every assertion holds and every case could run."""
        return all(run.ok for run in self.runs)

    def to_dict(self) -> dict:
        """The report as ``cgraph check --format json`` writes it (see :func:`report`)."""
        return report(self.runs)

    def junit(self, suite: str = "cgraph") -> bytes:
        """The report as JUnit XML (see :func:`junit_xml`)."""
        return junit_xml(self.runs, suite)

    def _repr_html_(self) -> str:
        from ..core.numfmt import plain_value as f
        from ..render.html import table

        rows = [
            [r.case, "ok" if r.ok else "FAIL", r.label, f(r.actual), f(r.expected)]
            for r in self.results
        ]
        rows += [[case, "ERROR", error_text(error), "", ""] for case, error in self._errors()]
        return table(["case", "", "check", "actual", "expected"], rows, self._counts())

    def _errors(self) -> list[tuple[str, CgraphError]]:
        return [(run.case, run.error) for run in self.runs if run.error is not None]

    def _counts(self) -> str:
        text = counts(self.results)
        errors = len(self._errors())
        return text + (f", {errors} could not run" if errors else "")

    def __repr__(self) -> str:
        from ..core.numfmt import plain_value as f
        from .results import listing

        failures = [
            f"FAIL {r.label} = {f(r.actual, 6)} (expected {f(r.expected, 6)})"
            for r in self.results
            if not r.ok
        ]
        failures += [f"ERROR {case}: {error_text(error)}" for case, error in self._errors()]
        return f"<CheckReport: {self._counts()}{'; ' if failures else ''}{listing(failures, 3)}>"


def error_text(error: CgraphError) -> str:
    """``FILE:LINE:COL: message``, or the message alone when the error has no place."""
    where = error.where()
    return f"{where}: {error.message}" if where else error.message


# --- reports -------------------------------------------------------------------------------------
def counts(results: list[Result]) -> str:
    """``N passed, M failed``, and ``, K skipped`` when a gradcheck skipped some."""
    skipped = sum(r.skipped for r in results)
    passed = sum(r.ok for r in results) - skipped
    text = f"{passed} passed, {len(results) - passed - skipped} failed"
    return text + (f", {skipped} skipped" if skipped else "")


def _entry(r: Result) -> dict[str, object]:
    """One assertion of the JSON report; a gradcheck's check with its point and status."""
    c = r.gradcheck
    if c is None:
        difference = None if math.isinf(r.difference) else r.difference
        return {"case": r.case, "kind": r.kind, "name": r.name, "output": r.output,
                "expected": r.expected, "actual": r.actual, "difference": difference, "ok": r.ok}  # fmt: skip
    return {"case": r.case, "kind": r.kind, "name": r.name, "output": r.output, "point": r.point,
            "bindings": c.point, "analytic": c.analytic, "numeric": c.numeric,
            "difference": c.error, "tolerance": None if c.error is None else r.tolerance,
            "status": c.status, "ok": r.ok}  # fmt: skip


def report(runs: list[CaseRun]) -> dict:
    """The JSON report: counts and one entry per assertion, and one per case that could not run.

    >>> from cgraph_cli import parse
    >>> from cgraph_cli.app.cases import Case
    >>> from cgraph_cli.app.checks import run_cases
    >>> r = report(run_cases([Case("c", parse("y = x"), {"x": 2}, {"y": 2, "z": 1})]))
    >>> r["passed"], r["failed"], r["errors"], r["checks"]
    (0, 0, 1, [{'case': 'c', 'error': "the program has no name 'z'"}])
    """
    results = [r for run in runs for r in run.results]
    checks: list[dict[str, object]] = []
    for run in runs:
        checks.extend(_entry(r) for r in run.results)
        if run.error is not None:
            checks.append({"case": run.case, "error": error_text(run.error)})
    skipped = sum(r.skipped for r in results)
    return {
        "passed": sum(r.ok for r in results) - skipped,
        "failed": sum(not r.ok for r in results),
        "skipped": skipped,
        "errors": sum(run.error is not None for run in runs),
        "checks": checks,
    }


def junit_xml(runs: list[CaseRun], suite: str = "cgraph") -> bytes:
    """JUnit XML, UTF-8 encoded: one testcase per assertion, failures with expected, actual and
    difference; a case that could not run is a testcase with an ``<error>``.

    >>> from cgraph_cli.app.checks import CaseRun
    >>> from cgraph_cli.core.errors import UsageError
    >>> print(junit_xml([CaseRun("c", [], UsageError("no such file: a.cg"))]).decode())
    <?xml version='1.0' encoding='utf-8'?>
    <testsuites>
      <testsuite name="cgraph" tests="1" failures="0" errors="1" skipped="0">
        <testcase classname="c" name="c">
          <error message="no such file: a.cg">error: no such file: a.cg</error>
        </testcase>
      </testsuite>
    </testsuites>
    """
    import xml.etree.ElementTree as ET

    from ..core.numfmt import plain_value as f

    results = [r for run in runs for r in run.results]
    root = ET.Element("testsuites")
    node = ET.SubElement(
        root,
        "testsuite",
        name=xml_text(suite),
        tests=str(len(results) + sum(run.error is not None for run in runs)),
        failures=str(sum(not r.ok for r in results)),
        errors=str(sum(run.error is not None for run in runs)),
        skipped=str(sum(r.skipped for r in results)),
    )
    for run in runs:
        for r in run.results:
            case = ET.SubElement(
                node,
                "testcase",
                classname=xml_text(r.case or suite),
                name=xml_text(r.label if r.gradcheck else f"{r.label} = {f(r.expected)}"),
            )
            if r.gradcheck is not None:
                _gradcheck_outcome(case, r)
            elif not r.ok:
                ET.SubElement(
                    case,
                    "failure",
                    message=xml_text(
                        f"{r.label} = {f(r.actual)} (expected {f(r.expected)}, "
                        f"difference {f(r.difference)})"
                    ),
                )
        if run.error is not None:
            case = ET.SubElement(
                node,
                "testcase",
                classname=xml_text(run.case or suite),
                name=xml_text(run.case or suite),
            )
            error = ET.SubElement(case, "error", message=xml_text(error_text(run.error)))
            error.text = xml_text(run.error.render())
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _gradcheck_outcome(case, r: Result) -> None:
    """A gradcheck's mismatch is a failure with the two numbers and the tolerance; a check at a
    kink or where the program is undefined is skipped."""
    import xml.etree.ElementTree as ET

    c = r.gradcheck
    assert c is not None, "a gradcheck result holds its check"
    if c.status == "mismatch":
        message = f"{r.label}: {mismatch(c, *r.tolerances)}"
        ET.SubElement(case, "failure", message=xml_text(message))
    elif c.status in SKIPPED:
        ET.SubElement(case, "skipped", message=SKIPPED[c.status])
