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
