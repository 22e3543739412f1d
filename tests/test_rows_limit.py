"""The rows mode at the limit (issue 28): work arrays kept from chunk to chunk, the watched
values summed as they are made, only the results no op passes on checked by the engine, and
the input columns left to the module. Every row still gets the interpreter's answer: its
values and gradients, or its error at the same node, in chunks of any length (the last one
shorter), with values shared by every row, and with values that are not finite on the way to
a finite result."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs

from cgraph_cli import CgraphError, parse, run_rows, validate
from cgraph_cli.app import api
from cgraph_cli.run.compile import compile_module
from cgraph_cli.run.engine import engine

BUDGET = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
#: Values at the edges: zeros, the largest floats, where exp overflows, a value and its
#: neighbours that make 1 / (x - 1) and log infinite.
SPECIAL = [0.0, -0.0, 1.0, 1e308, -1e308, 710.0, -745.0, 0.5, -1.5, 3.0, 1e-200]


def _same(a, b) -> bool:
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    # NumPy's tanh, exp... are not libm's: an ulp apart, which 1 - o * o makes absolute
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b)) + 1e-12


def _chunks(columns: dict, sizes: list[int]):
    """The columns cut into chunks of ``sizes`` rows (as read_chunks gives them)."""
    start = 0
    for size in sizes:
        yield "d.csv", start, {k: v[start : start + size] for k, v in columns.items()}
        start += size


def _check_rows(text: str, columns: dict, shared: dict, sizes: list[int], mode: str) -> None:
    """run_rows over chunks of ``sizes`` rows gives, row by row, the interpreter's values and
    gradients, or its error (message and place)."""
    graph = validate(parse(text))
    result = run_rows(graph, _chunks(columns, sizes), mode=mode, bindings=shared)
    n = sum(sizes)
    table = {
        k: [c for t in result.tables for c in (t[k].tolist() if k != "error" else t[k])]
        for k in result.tables[0]
    }
    out = graph.display_name(graph.output)
    for r in range(n):
        row = {**shared, **{k: float(v[r]) for k, v in columns.items() if k in graph.inputs}}
        try:
            if mode == "eval":
                want = {out: api.evaluate(graph, row).value}
            else:
                g = api.grad(graph, row)
                want = {out: g.value, **{f"d{out}_d{w}": v for w, v in g.gradients.items()}}
        except CgraphError as e:
            cell = table["error"][r]
            assert cell is not None and e.message in cell, (text, row, cell, e.message)
            place = e.where()
            assert place is None or place in cell, (text, row, cell, place)
            continue
        assert table["error"][r] is None, (text, row, table["error"][r])
        for k, v in want.items():
            assert _same(table[k][r], v), (text, row, k, table[k][r], v)


NEURON = open("samples/neuron.cg").read()


@pytest.mark.parametrize("mode", ["eval", "grad"])
def test_work_arrays_are_reused_across_chunks_of_different_lengths(mode):
    rng = np.random.default_rng(4)
    columns = {"x1": rng.uniform(-2, 2, 23), "x2": rng.uniform(-2, 2, 23)}
    # a longer chunk after shorter ones (new work arrays), the last one shortest
    _check_rows(NEURON, columns, {"w1": -3.0, "w2": 1.0}, [7, 3, 9, 4], mode)
    text = "t = x * w + y; u = sin(t) * t - t * t; v = exp(-u * u) / (1 + t * t); o = v * x"
    columns = {"x": rng.uniform(-2, 2, 40), "y": rng.uniform(-2, 2, 40)}
    _check_rows(text, columns, {"w": 0.75}, [16, 16, 5, 3], mode)


def test_an_earlier_chunk_keeps_its_values_when_the_next_one_runs():
    graph = parse("t = x * w + 1; u = t * t - x; o = u * 2")
    run = engine(graph, wrt=["x", "w"], bindings={"x": 0.0, "w": 2.0})
    first = run.grad(x=np.array([1.0, 2.0, 3.0]), w=2.0)
    kept = (first[0].copy(), {k: v.copy() for k, v in first[1].items()})
    run.grad(x=np.array([-5.0, 7.0, 11.0, 13.0]), w=-3.0)
    run.grad(x=np.array([0.25]), w=4.0)
    assert np.array_equal(first[0], kept[0])
    assert all(np.array_equal(first[1][k], kept[1][k]) for k in kept[1])
    assert "out=_out(" in run.source  # the temporaries do go to work arrays


def test_a_value_shared_by_every_row_and_one_per_row():
    rng = np.random.default_rng(5)
    text = "s = exp(w) * 2 - w; p = x * s + log(w); o = p * p - s"
    columns = {"x": rng.uniform(-1, 1, 12)}
    for w in (0.5, 3.0):
        _check_rows(text, columns, {"w": w}, [5, 7], "grad")
        _check_rows(text, columns, {"w": w}, [12], "eval")
    # the shared value is not finite: every row fails, as the interpreter says, at its node
    _check_rows(text, columns, {"w": 800.0}, [5, 7], "grad")
    _check_rows(text, columns, {"w": -1.0}, [12], "eval")


@pytest.mark.parametrize(
    "text",
    [
        "o = 1 / exp(x)",  # exp(710) is inf, 1 / inf is 0
        "o = tanh(exp(x)) * y",
        "o = where(x > 0.75, 1 / (x - 1), y)",  # inf where x is 1, picked or not
        "o = max(exp(x), y) - min(y, exp(x))",
        "o = (exp(x) > 2) + y",
        "t = 1 / x; o = y * 2",  # a statement no result reads
        "input w = 1; o = x * y",  # an input no op reads
        "o = (x - 1) ^ 2 + sqrt(y)",
        "o = log(x) * 0 + y",
    ],
)
def test_a_value_not_finite_on_the_way_to_a_finite_result_fails_its_row(text):
    xs = [0.5, 1.0, 710.0, -745.0, 2.0, 0.0, 1e308, 3.0, -1.0]
    columns = {"x": np.array(xs), "y": np.array([2.0, -1.0, 0.5, 4.0, 1.0, 3.0, 1e308, -2.0, 1.0])}
    for mode in ("eval", "grad"):
        _check_rows(text, columns, {}, [4, 5], mode)


def test_an_input_column_not_finite_fails_its_row_read_or_not():
    columns = {"x": np.array([1.0, 2.0, 3.0]), "w": np.array([1.0, math.inf, math.nan])}
    _check_rows("input w = 1; o = x * 2", columns, {}, [2, 1], "eval")
    _check_rows("input w = 1; o = x * 2", columns, {}, [3], "grad")
    _check_rows("o = tanh(w) * x", columns, {}, [1, 2], "grad")


def test_the_engine_checks_only_the_results_no_op_passes_on():
    graph = parse(NEURON)
    source = compile_module(graph, "numpy", bindings={"x1": 0.0, "x2": 0.0}, rows=True)
    # o is squared on the way to each gradient; do/dn (b's) is multiplied into the others;
    # o = tanh(n) is finite wherever n is, and n is watched
    assert "CHECKED = {'forward': ['n'], 'grad': ['x1', 'x2', 'w1', 'w2']}" in source
    assert "_watch.append(_seen(" in source  # n, which tanh reads, summed as it is made


@pytest.mark.parametrize(
    "text", ["o = tanh(x * w)", "o = sigmoid(x * w) > 0.5", "o = max(x * w, 0)"]
)
def test_a_value_finite_wherever_its_watched_arguments_are_flags_the_row_they_overflow_in(text):
    # The output is not checked (its op is finite at finite arguments), its argument is:
    # the row where x * w overflows fails, as the interpreter says, in eval and in grad.
    x = np.array([0.5, 1e308, -2.0, -1e308])
    for mode in ("eval", "grad"):
        table = run_rows(parse(text), [("d.csv", 0, {"x": x})], mode=mode, bindings={"w": 10.0})
        errors = table.tables[0]["error"]
        assert [e is None for e in errors] == [True, False, True, False], (text, mode, errors)
        assert "not finite" in errors[1] or "overflow" in errors[1], errors[1]


def test_calls_at_once_from_threads_each_get_their_own_work_arrays():
    graph = parse("t = x * w + 1; u = t * t - x; o = sin(u) * t")
    run = engine(graph, wrt=["x", "w"], bindings={"x": 0.0, "w": 2.0})
    columns = [np.random.default_rng(k).uniform(-1, 1, 5000) for k in range(8)]
    alone = [run.grad(x=c, w=0.5) for c in columns]
    found: dict[int, tuple] = {}

    def work(k: int) -> None:
        for _ in range(5):
            found[k] = run.grad(x=columns[k], w=0.5)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, (value, grads, _) in found.items():
        assert np.array_equal(value, alone[k][0])
        assert all(np.array_equal(grads[w], alone[k][1][w]) for w in grads)


def test_eval_compiles_a_forward_pass_giving_only_what_is_kept():
    text = "a = x * 2; b = a + 1; o = b * b"
    graph = parse(text)
    result = run_rows(graph, _chunks({"x": np.arange(6.0)}, [4, 2]), mode="eval")
    assert "out = {'o': o}" in result.engine.source
    assert [v for t in result.tables for v in t["o"].tolist()] == [
        (2 * x + 1) ** 2 for x in range(6)
    ]
    every = run_rows(graph, _chunks({"x": np.arange(3.0)}, [3]), mode="eval", show_all=True)
    assert every.tables[0]["a"].tolist() == [0.0, 2.0, 4.0]


@st.composite
def cases(draw):
    program = draw(programs(max_statements=3, conditions=True))
    try:
        graph = validate(parse(program))
    except Exception:  # a program the language refuses
        from hypothesis import assume

        assume(False)
    n = draw(st.integers(1, 9))
    rows = {
        name: np.array(draw(st.lists(st.sampled_from(SPECIAL), min_size=n, max_size=n)))
        for name in graph.inputs
    }
    cut = draw(st.integers(0, n))
    sizes = [s for s in (cut, n - cut) if s] or [n]
    return program, rows, sizes


@BUDGET
@given(cases(), st.sampled_from(["eval", "grad"]))
def test_rows_in_chunks_give_the_interpreters_answers(case, mode):
    program, rows, sizes = case
    if not rows:
        return
    _check_rows(program, rows, {}, sizes, mode)


def test_values_whose_squares_overflow_are_looked_at_row_by_row_and_pass():
    # The engine's one sum is of squares (BLAS's dot): over 1e154 it overflows though every
    # value is finite; then each row is looked at, and none fails.
    x = np.array([1e200, -1e300, 0.5, 1e154])
    for mode in ("eval", "grad"):
        table = run_rows(parse("o = tanh(x * w) + x"), [("d.csv", 0, {"x": x})], mode=mode,
                         bindings={"w": 1.0}).tables[0]  # fmt: skip
        assert table["error"] == (None,) * 4, (mode, table["error"])
        assert np.array_equal(table["o"], np.tanh(x) + x)
