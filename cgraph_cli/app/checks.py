"""Assertions on values, gradients and second derivatives, for CI: from the command line or a
TOML spec file.

An assertion holds when |actual - expected| <= atol + rtol · |expected| (for tensors: element by
element, and the shapes must be equal). A second derivative is named by its pair of inputs,
``x,y``, or of elements of tensor inputs, ``W[0, 1],x[2]``, as ``cgraph hessian`` labels them.

>>> from cgraph_cli import parse
>>> [r.ok for r in run_case(Case("seed", parse("p = x + y; g = p * z"), {"x": 1, "y": 3, "z": -3},
...                               expect={"g": -12}, expect_grad={"x": -3, "z": 5}))]
[True, True, False]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.arrays import Value
from ..core.errors import CgraphError, UsageError
from ..core.ir import Graph, resolve_name, wrt_node
from ..render.html import xml_text
from .api import Evaluation, Gradients, evaluate, grad
from .cases import ATOL, RTOL, Case, Gradcheck, close, expected_value, parse_pair, value_shape
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


def run_case(case: Case) -> list[Result]:
    """Evaluate and differentiate the case's program once; one result per expectation, then
    one per check of its ``gradcheck``."""
    if case.error is not None:
        raise case.error
    assert case.graph is not None, "a case without a program has an error"
    expects = case.expect or case.expect_grad or case.expect_hessian
    return (_expectations(case, case.graph) if expects else []) + _gradchecks(case, case.graph)


def _gradchecks(case: Case, graph: Graph) -> list[Result]:
    """The case's gradcheck, as ``cgraph gradcheck`` runs it: a result per input (element) and
    point; at the case's own point an evaluation error is the case's error."""
    from .gradcheck import check_gradients

    spec = case.gradcheck
    if spec is None:
        return []
    found = check_gradients(
        graph, case.bindings, of=case.of, points=spec.points, seed=spec.seed, low=spec.low,
        high=spec.high, eps=spec.eps, rtol=spec.rtol, atol=spec.atol,
    )  # fmt: skip
    results = []
    for k, c in found.checks:
        analytic = math.nan if c.analytic is None else c.analytic
        numeric = math.nan if c.numeric is None else c.numeric
        ok = c.status != "mismatch"
        tolerances = (spec.rtol, spec.atol)
        results.append(
            Result(
                case.name,
                "gradcheck",
                c.label,
                found.output,
                numeric,
                analytic,
                ok,
                c,
                k,
                tolerances,
            )
        )
    return results


def _expectations(case: Case, graph: Graph) -> list[Result]:
    # Values alone need no reverse pass (and a tensor output has no gradient to take).
    result: Evaluation = (grad if case.expect_grad else evaluate)(graph, case.bindings, case.of)
    graph = result.graph  # the graph that ran, for a program with if/else or loops
    out = result.output_name
    results = []
    for kind, expectations in (("value", case.expect), ("gradient", case.expect_grad)):
        for name, given in expectations.items():
            if kind == "value":
                actual = result.values[resolve_name(graph, name)]
            else:  # an input's name is the input, as in cgraph grad
                assert isinstance(result, Gradients), "expect_grad asks for the reverse pass"
                actual = result.adjoints[wrt_node(graph, name)]
            expected = expected_value(name, given)
            ok = close(actual, expected, case.rtol, case.atol)
            results.append(Result(case.name, kind, name, out, expected, actual, ok))
    if case.expect_hessian:
        for name, number, second in _second_derivatives(graph, case, result.values):
            ok = close(second, number, case.rtol, case.atol)
            results.append(Result(case.name, "hessian", name, out, number, second, ok))
    return results


def _second_derivatives(graph: Graph, case: Case, values: list) -> list[tuple[str, float, float]]:
    """Each of ``case.expect_hessian`` as (the pair as the report names it, expected, actual):
    one forward-mode pass over the derivative program per element differentiated last."""
    from ..run.higher import hessian_columns
    from .gradcheck import element_label

    shapes = {n: value_shape(values[i]) for n, i in graph.inputs.items()}
    pairs = {
        text: tuple(_element(graph, shapes, *e) for e in parse_pair(text))
        for text in case.expect_hessian
    }
    columns = list(dict.fromkeys(b for _, b in pairs.values()))
    found = hessian_columns(graph, case.bindings, columns, of=case.of)
    out = []
    for text, ((a, ea), b) in pairs.items():
        block = found[columns.index(b)][a]
        actual = float(block[ea]) if ea else block
        name = f"{element_label(a, ea)},{element_label(*b)}"
        out.append((name, float(case.expect_hessian[text]), actual))
    return out


def _element(graph: Graph, shapes: dict, name: str, index: tuple[int, ...]):
    """``(input, element)`` checked against the program: an input, and an element of it in
    range for a tensor (negative indices count from the end)."""
    if name not in graph.inputs:
        resolve_name(graph, name)  # an unknown name: did you mean, and the names
        raise UsageError(
            f"'{name}' is not an input: second derivatives are with respect to inputs",
            hints=["the program's inputs: " + (", ".join(graph.inputs) or "none")],
        )
    shape = shapes[name]
    if not shape and index:
        raise UsageError(f"'{name}' is a number: write {name}, not {name}[...]")
    if shape and len(index) != len(shape):
        from ..core.arrays import show_shape

        example = f"{name}[{', '.join('0' for _ in shape)}]"
        raise UsageError(
            f"'{name}' is a {show_shape(shape)} tensor: name one element, as {example}"
        )
    for k, (i, n) in enumerate(zip(index, shape)):
        if not -n <= i < n:
            raise UsageError(f"index {i} is out of range for axis {k} of '{name}' (size {n})")
    return name, tuple(i % n for i, n in zip(index, shape))


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


# --- the library's entry point -------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class CheckReport:
    """What :func:`check` found: one :class:`CaseRun` per case (one case unless a spec file
    ran). ``ok`` when every assertion holds and every case could run.

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
        from .api import listing

        failures = [
            f"FAIL {r.label} = {f(r.actual, 6)} (expected {f(r.expected, 6)})"
            for r in self.results
            if not r.ok
        ]
        failures += [f"ERROR {case}: {error_text(error)}" for case, error in self._errors()]
        return f"<CheckReport: {self._counts()}{'; ' if failures else ''}{listing(failures, 3)}>"


def check(
    program: str | Graph | None = None,
    bindings: Mapping[str, object] | None = None,
    *,
    expect: Mapping[str, object] | None = None,
    expect_grad: Mapping[str, object] | None = None,
    expect_hessian: Mapping[str | tuple[str, str], float] | None = None,
    of: str | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
    spec: str | Path | None = None,
    gradcheck: bool | Mapping[str, object] = False,
) -> CheckReport:
    """Assertions on a program's values (``expect``), gradients (``expect_grad``, by input)
    and second derivatives (``expect_hessian``, by pair: ``"x,y"`` or ``("x", "y")``;
    elements of tensor inputs as ``"W[0, 1],x[2]"``), as ``cgraph check``: each holds when
    |actual - expected| <= atol + rtol·|expected|. Or, with ``spec``, every case of a TOML
    checks file (a case that cannot run is reported as such, not raised).

    ``gradcheck``, as a checks file's key: ``True`` checks the gradients against finite
    differences at the bindings, as ``cgraph gradcheck`` does; a dict also at random points
    (keys ``points``, ``range``, ``seed``, ``eps``, ``rtol``, ``atol``); each input (element)
    and point is a result.

    >>> check("y = x^3", {"x": 2}, expect={"y": 8}, expect_hessian={"x,x": 12}).ok
    True
    >>> found = check("y = x^3", {"x": 2}, gradcheck={"points": 3, "range": (-1, 1)})
    >>> found.ok, len(found.results)
    (True, 3)
    """
    if spec is not None:
        if program is not None or expect or expect_grad or expect_hessian or gradcheck:
            raise UsageError("a spec file holds its own programs and expectations: give no more")
        from .checks_spec import load_spec

        return CheckReport(run_cases(load_spec(str(spec))))
    if program is None:
        raise UsageError("nothing to check: give a program, or a spec file")
    points = _gradcheck(gradcheck)
    if not expect and not expect_grad and not expect_hessian and points is None:
        raise UsageError(
            "nothing to check",
            hints=["give expect=, expect_grad= or expect_hessian= (a dict), or gradcheck="],
        )
    from ..parse import parse

    case = Case(
        "",
        program if isinstance(program, Graph) else parse(program),
        dict(bindings or {}),
        dict(expect or {}),
        dict(expect_grad or {}),
        of,
        rtol,
        atol,
        expect_hessian={
            pair if isinstance(pair, str) else ",".join(pair): value
            for pair, value in (expect_hessian or {}).items()
        },
        gradcheck=points,
    )
    return CheckReport([CaseRun("", run_case(case))])


def _gradcheck(given: object) -> Gradcheck | None:
    """``check``'s ``gradcheck=``, read as a checks file's (a tuple as a list)."""
    from .cases import OptionError, parse_gradcheck

    if isinstance(given, Mapping):
        given = {k: list(v) if isinstance(v, tuple) else v for k, v in given.items()}
    try:
        return parse_gradcheck(given)
    except OptionError as e:
        raise UsageError(
            f"gradcheck: {e.message}",
            hints=["for example: gradcheck=True, or gradcheck={'points': 20, 'range': (-1, 1)}"],
        ) from None


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

    >>> from cgraph_cli import parse
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
