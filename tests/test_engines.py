"""Every engine gives the interpreter's answer: compiled modules (Python, NumPy), rows, train
and gradcheck compute with the values and names the program has, whatever its names are."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import INPUTS, programs

from cgraph_cli import CgraphError, parse, run_rows
from cgraph_cli.app import api
from cgraph_cli.passes.derivatives import derivative_name
from cgraph_cli.run.compile import compile_module
from cgraph_cli.run.engine import Driver, Engine

# Names that Python, the module or each other could confuse: keywords, soft keywords,
# builtins, the module's own globals and helpers, a name and its spelling with "_", names
# Python reads differently (NFKC) or not at all.
COLLIDING = [
    ("lambda", "lambda_"),
    ("math", "math_"),
    ("np", "np_"),
    ("relu", "sigmoid", "np_softmax"),
    ("x", "x_"),
    ("match", "case", "type"),
    ("float", "sum", "abs"),
    ("forward", "grad", "DomainError"),
    ("inputs", "out", "value"),
    ("x\u0bf0", "x"),
]


def _module(text: str, target: str) -> dict:
    namespace: dict = {}
    exec(compile_module(parse(text), target), namespace)
    return namespace


@pytest.mark.parametrize("names", COLLIDING)
@pytest.mark.parametrize("target", ["python", "numpy"])
def test_colliding_names_stay_apart_in_compiled_modules(names, target):
    terms = " + ".join(f"{k + 1} * {n}" for k, n in enumerate(names))
    text = f"y = {terms}\ny"
    values = {n: float(10**k) for k, n in enumerate(names)}
    expected = sum((k + 1) * v for k, v in enumerate(values.values()))
    module = _module(text, target)
    assert module["forward"](**values)["y"] == expected
    value, grads = module["grad"](**values)
    assert value == expected
    assert {n: float(g) for n, g in grads.items()} == {n: k + 1.0 for k, n in enumerate(names)}


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_module_run_by_exec_raises_its_domain_error(target):
    module = _module("a = x + 1\ny = log(a)\n", target)
    with pytest.raises(module["DomainError"], match=r"line 2: log\(a\)|not finite"):
        module["forward"](x=-2)


@pytest.mark.parametrize("target", ["python", "numpy"])
@pytest.mark.parametrize(
    ("text", "x", "node"),
    [
        ("y = where(x > 0, sqrt(x), 0)", -1.0, "sqrt(x)"),  # where evaluates both sides
        ("y = pow(1, x * x)", 1e200, "x * x"),  # an overflow 1 ^ inf would hide
        ("y = 1 / (x * x)", 1e200, "x * x"),  # 1 / inf = 0
        ("y = tanh(exp(x)) + (x * x > 0)", 1e200, "exp(x)"),
    ],
)
def test_a_module_stops_where_the_interpreter_does(target, text, x, node):
    module = _module(text, target)
    for fn in ("forward", "grad"):
        with pytest.raises(module["DomainError"], match=f"line 1: {re.escape(node)}"):
            module[fn](x=x)


def test_rows_round_sigmoid_as_eval_does(tmp_path, cli):
    program = tmp_path / "s.cg"
    program.write_text("y = sigmoid(x) >= 1\n")
    data = tmp_path / "s.csv"
    data.write_text("x\n36\n37\n38\n-745\n")
    expected = [cli("eval", str(program), f"x={x}").stdout.split()[-1] for x in (36, 37, 38, -745)]
    result = cli("eval", str(program), "--rows", str(data))
    assert result.exit_code == 0, result.stderr
    assert (
        [line.split(",")[0] for line in result.stdout.split()[1:]]
        == expected
        == ["0", "1", "1", "0"]
    )


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_a_module_checks_every_statement_and_input_as_the_interpreter_does(target):
    # t0's first value is never read again, and grad's result does not hold x: both checked.
    module = _module("t0 = xlogy(0.5, z)\nt0 = 2 * z\ny = t0 + 0 * x\n", target)
    for fn in ("forward", "grad"):
        with pytest.raises(module["DomainError"], match=r"line 1: xlogy\(0\.5, z\)"):
            module[fn](x=1.0, z=-1.0)
    with pytest.raises(module["DomainError"], match="not finite"):
        module["grad"](x=math.inf, z=1.0)


# --- the differential property test ----------------------------------------------------------
# Random programs (tests/strategies.py) over inputs renamed to names that collide, on rows of
# special values: the interpreter's values, gradients and errors are every engine's.
NAME_SETS = [
    ("x", "y", "z"),
    ("lambda", "lambda_", "x"),
    ("math", "math_", "np"),
    ("relu", "sigmoid", "np_softmax"),
    ("x", "x_", "x_1"),
    ("match", "type", "float"),
    ("out", "value", "grads"),
    ("forward", "DomainError", "_v_x"),
    ("x\u0bf0", "_", "print"),
]
SPECIAL = [0.0, -0.0, 1e-308, -1e-308, 5e-324, -5e-324, 1e308, -1e308, math.inf, -math.inf]
SPECIAL += [math.nan, 37.0, -745.0, 710.0, 0.5, -2.0, 1.0, 1e300, -1e300, 1e284, 3.0]


def _renamed(text: str, names: tuple[str, ...]) -> str:
    given = dict(zip(INPUTS, names))
    return re.sub(r"\b[xyz]\b", lambda m: given[m.group(0)], text)


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both_nan = np.isnan(a) & np.isnan(b)
    close = np.isclose(a, b, rtol=1e-9, atol=0.0)
    return a.shape == b.shape and bool(np.all(both_nan | close))


def _interpreted(graph, row: dict):
    """The interpreter's named values and its (value, gradients), each None where it fails."""
    try:
        values = dict(api.evaluate(graph, row).named)
    except CgraphError:
        values = None
    try:
        g = api.grad(graph, row)
        gradient = (g.value, dict(g.gradients))
    except CgraphError:
        gradient = None
    return values, gradient


def _call(module: dict, fn: str, row: dict):
    try:
        return module[fn](**row)
    except module["DomainError"]:
        return None


def _check_modules(graph, modules: dict, row: dict) -> None:
    values, gradient = _interpreted(graph, row)
    for target, module in modules.items():
        got = _call(module, "forward", row)
        assert (got is None) == (values is None), (target, "forward", got, values)
        if values is not None:
            assert all(_same(got[k], values[k]) for k in values), (target, got, values)
        got = _call(module, "grad", row)
        assert (got is None) == (gradient is None), (target, "grad", got, gradient)
        if gradient is not None:
            assert _same(got[0], gradient[0]), (target, got, gradient)
            assert all(_same(got[1][k], v) for k, v in gradient[1].items()), (got, gradient)
        if gradient is not None and target == "numpy":  # train's and gradcheck's path
            batch = Driver(graph, wrt=list(graph.inputs)).batch(row)
            assert _same(batch[""], gradient[0])
            assert all(_same(batch[k], v) for k, v in gradient[1].items())


def _check_rows(graph, rows: list[dict], dask_like: bool) -> None:
    """--rows (local, or with the engine built from the module's source as a Dask worker
    builds it): each row's values or error as the interpreter's."""
    columns = {n: np.array([r[n] for r in rows]) for n in graph.inputs}
    base = graph.output_label if graph.output_label.isidentifier() else "out"
    for mode in ("eval", "grad"):
        built = None
        if dask_like:
            source = compile_module(graph, "numpy", rows=True, gradient=mode == "grad")
            built = Engine(source)
        result = run_rows(graph, [("d", 0, columns)], mode=mode, show_all=True, engine=built)
        table = result.tables[0]
        for k, row in enumerate(rows):
            values, gradient = _interpreted(graph, row)
            if mode == "grad" and gradient is not None:
                values = {
                    graph.output_label: gradient[0],
                    **{derivative_name(base, (w,)): v for w, v in gradient[1].items()},
                }
            failed = (values if mode == "eval" else gradient) is None
            assert bool(table["error"][k]) == failed, (mode, row, table["error"][k], values)
            if not failed:
                assert all(_same(table[c][k], v) for c, v in values.items() if c in table)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    programs(conditions=True),
    st.sampled_from(NAME_SETS),
    st.lists(st.tuples(*[st.sampled_from(SPECIAL)] * 3), min_size=1, max_size=3),
    st.booleans(),
)
def test_every_engine_gives_the_interpreters_answer(text, names, drawn, dask_like):
    graph = parse(_renamed(text, names))
    modules = {t: _module(graph.source.text, t) for t in ("python", "numpy")}
    rows = [{n: v for n, v in zip(graph.inputs, values)} for values in drawn]
    for row in rows:
        _check_modules(graph, modules, row)
    if graph.inputs:
        _check_rows(graph, rows, dask_like)
