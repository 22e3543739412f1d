"""The tables run_rows keeps in memory (no ``write``, no ``reduce``): their result columns are
copied into large arrays chunk after chunk (issue 28), and hold what each chunk's table
handed on gives, rows that fail included, chunk after chunk."""

from __future__ import annotations

import numpy as np
import pytest

from cgraph_cli import parse, run_rows
from cgraph_cli.jobs.rowstore import Slabs


def _chunks(columns: dict, size: int):
    n = len(next(iter(columns.values())))
    for start in range(0, n, size):
        yield "d.csv", start, {k: v[start : start + size] for k, v in columns.items()}


def _snapshot(table: dict) -> dict:
    """The table's cells, nan as text (nan == nan is False)."""
    return {
        k: ["nan" if c != c else c for c in (v.tolist() if isinstance(v, np.ndarray) else v)]
        for k, v in table.items()
    }


@pytest.mark.parametrize("mode", ["eval", "grad"])
@pytest.mark.parametrize("show_all", [False, True])
def test_kept_tables_equal_the_tables_handed_on(mode, show_all):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.1, 2, 1000)
    x[[3, 250, 251, 999]] = [-1.0, -0.5, np.inf, -2.0]  # log fails: in the first, later, last
    columns = {"x": x, "c": rng.uniform(0, 1, 1000)}
    graph = parse("a = log(x) * w; y = a + c * w")
    options = {"mode": mode, "bindings": {"w": 1.5}, "show_all": show_all and mode == "eval"}
    handed: list[dict] = []
    streamed = run_rows(
        graph, _chunks(columns, 64), write=lambda t: handed.append(_snapshot(t)), **options
    )
    kept = run_rows(graph, _chunks(columns, 64), **options)
    assert kept.errors == streamed.errors == 4 and kept.rows == 1000
    assert [_snapshot(t) for t in kept.tables] == handed
    errors = [e for t in kept.tables for e in t["error"]]
    assert errors[3].startswith("row 4: log(-1) is undefined")


def test_a_column_kept_is_not_changed_by_the_chunks_after_it():
    graph = parse("y = 2 * x")
    x = np.arange(100.0)
    result = run_rows(graph, _chunks({"x": x}, 7))
    assert np.array_equal(np.concatenate([t["y"] for t in result.tables]), 2 * x)
    assert len({id(t["y"].base) for t in result.tables[1:]}) == 1  # one large array, sliced


def test_slabs_take_a_new_array_when_full_and_leave_views_and_lists_alone():
    store = Slabs(chunks=2)
    shared = np.broadcast_to(np.float64(1.0), (3,))
    tables = [
        store.place({"y": np.full(3, float(k)), "s": shared, "v": [[1.0], [2.0], [3.0]]})
        for k in range(5)
    ]
    assert [t["y"].tolist() for t in tables] == [[float(k)] * 3 for k in range(5)]
    assert tables[1]["y"].base is tables[2]["y"].base is not tables[3]["y"].base
    assert all(t["s"] is shared and t["v"] == [[1.0], [2.0], [3.0]] for t in tables)


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("a = x * 2; b = a; y = b + 1", "eval"),  # one value under two names
        ("y = exp(x) * w", "grad"),  # the value is a gradient's node too (dy/dw = y / w: not)
        ("y = exp(x)", "grad"),  # dy/dx is y itself
        ("n = x * w + c; y = tanh(n)", "grad"),  # gradients of each column and of w
        ("y = sqrt(x) * w", "grad"),  # sqrt fails on the negative rows
    ],
)
def test_results_the_engine_writes_into_the_kept_columns_equal_those_handed_on(text, mode):
    # From the second chunk on, the compiled module computes each result straight into the
    # part of the large columns its rows are kept in (issue 28): the same cells as a table
    # handed on, chunk after chunk, the rows that fail and the last short chunk included.
    rng = np.random.default_rng(5)
    x = rng.uniform(-0.5, 2, 203)
    columns = {"x": x, "c": rng.uniform(0, 1, 203)}
    graph = parse(text)
    columns = {k: v for k, v in columns.items() if k in graph.inputs}
    options = {"mode": mode, "bindings": {"w": 1.5} if "w" in graph.inputs else {}}
    options["show_all"] = mode == "eval"
    handed: list[dict] = []
    run_rows(graph, _chunks(columns, 16), write=lambda t: handed.append(_snapshot(t)), **options)
    kept = run_rows(graph, _chunks(columns, 16), **options)
    assert [_snapshot(t) for t in kept.tables] == handed
    assert len(kept.tables) == 13 and kept.rows == 203
    later = [t[k] for t in kept.tables[1:] for k in t if k != "error" and k != "x"]
    assert all(v.base is not None for v in later)  # parts of the large columns, not copies


def test_a_part_reserved_is_kept_as_it_is_and_a_table_without_one_gets_its_own():
    store = Slabs(chunks=4)
    assert store.reserve(["y"], 2) == {}  # the first table is kept as it is
    store.place({"y": np.zeros(2)})
    part = store.reserve(["y"], 2)["y"]
    part[...] = 7.0
    kept = store.place({"y": part, "z": np.ones(2)})
    assert kept["y"] is part and kept["z"].base is not None
    other = store.place({"y": np.full(2, 3.0), "z": np.full(2, 4.0)})  # nothing reserved
    assert other["y"].tolist() == [3.0, 3.0] and part.tolist() == [7.0, 7.0]
    assert kept["z"].tolist() == [1.0, 1.0] and other["z"].tolist() == [4.0, 4.0]


def test_the_module_computes_each_result_into_the_array_given_for_it():
    from cgraph_cli.run.engine import VALUE, engine

    graph = parse("n = x * w + c; y = tanh(n)")
    one_row = {"x": 0.0, "w": 1.0, "c": 0.0}
    x = np.linspace(-2, 2, 9)
    inputs = {"x": x, "w": 1.5, "c": x * 0.5}
    run = engine(graph, wrt=["x", "w", "c"], bindings=one_row)
    into = {k: np.empty(9) for k in (VALUE, "x", "w", "c")}
    value, grads, ok = run.grad_rows(inputs, 9, into)
    assert value is into[VALUE] and all(grads[k] is into[k] for k in ("x", "w", "c"))
    assert np.allclose(value, np.tanh(2 * x)) and np.allclose(grads["w"], (1 - value**2) * x)
    assert ok.all()
    forward = engine(graph, gradient=False, bindings=one_row, names=["y"])
    into = {"y": np.empty(9)}
    named, ok = forward.evaluate_rows(inputs, 9, ["y"], into)
    assert named["y"] is into["y"] and np.allclose(named["y"], np.tanh(2 * x))
    shorter = {"y": np.empty(4)}  # an array of another length: not written, a new one given
    named, ok = forward.evaluate_rows(inputs, 9, ["y"], shorter)
    assert named["y"] is not shorter["y"] and np.allclose(named["y"], np.tanh(2 * x))


def test_inputs_named_as_the_modules_own_names_bind_their_columns():
    # A rows module's first argument (_into) and its helpers (_dest, _out, _pool) are names a
    # program may give its inputs: those take the keyword-only form, and bind as any other.
    graph = parse("y = tanh(_into * _dest) + _out * _pool")
    rng = np.random.default_rng(7)
    columns = {k: rng.uniform(-1, 1, 50) for k in ("_into", "_dest", "_out")}
    kept = run_rows(graph, _chunks(columns, 16), bindings={"_pool": 2.0})
    y = np.concatenate([t["y"] for t in kept.tables])
    expected = np.tanh(columns["_into"] * columns["_dest"]) + columns["_out"] * 2.0
    assert np.allclose(y, expected) and kept.errors == 0
    grads = run_rows(graph, _chunks(columns, 16), mode="grad", bindings={"_pool": 2.0})
    d_out = np.concatenate([t["dy_d_out"] for t in grads.tables])
    assert np.array_equal(d_out, np.full(50, 2.0))
