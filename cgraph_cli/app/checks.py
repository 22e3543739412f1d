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
from pathlib import Path

from ..core.errors import CgraphError, UsageError
from ..core.ir import Graph, resolve_name, wrt_node
from .api import evaluate, grad
from .cases import ATOL, RTOL, Case, Gradcheck, close, expected_value, parse_pair, value_shape
from .checks_report import CaseRun, CheckReport, Result
from .results import Evaluation, Gradients


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


# --- the library's entry point -------------------------------------------------------------------
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
