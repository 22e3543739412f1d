"""The driver (cgraph_cli.run.engine.Driver): the compiled module where it answers, the
interpreter where the module flags a row or raises, for rows (--rows, Dask) and batches
(train)."""

from __future__ import annotations

import numpy as np
import pytest

from cgraph_cli import CgraphError, parse
from cgraph_cli.app import api
from cgraph_cli.jobs.training import TrainingStopped, train
from cgraph_cli.run.engine import VALUE, Driver


def _rows(driver: Driver, columns: dict, shared: dict, **options):
    n = len(next(iter(columns.values())))
    driver.module({**shared, **{k: 0.0 for k in columns}})

    def row(r: int) -> dict:
        return {**shared, **{k: v[r] for k, v in columns.items()}}

    inputs = {**shared, **{k: np.asarray(v, dtype=float) for k, v in columns.items()}}
    return driver.rows(inputs, n, row, **options)


def test_a_flagged_row_gets_the_interpreters_error_and_the_others_their_values():
    graph = parse("input w = 3\ny = log(x) * w")
    x = [1.0, -2.0, np.e, 0.0]
    results, errors, good = _rows(Driver(graph, wrt=["x", "w"]), {"x": x}, {"w": 3.0})
    assert good.tolist() == [True, False, True, False]
    for r in (0, 2):
        want = api.grad(graph, {"x": x[r], "w": 3.0})
        assert results[VALUE][r] == pytest.approx(want.value, rel=1e-15)
        assert results["x"][r] == pytest.approx(want.gradients["x"], rel=1e-15)
        assert results["w"][r] == pytest.approx(want.gradients["w"], rel=1e-15)
    assert sorted(errors) == [1, 3]
    for r in (1, 3):
        with pytest.raises(CgraphError) as e:
            api.grad(graph, {"x": x[r], "w": 3.0})
        assert (errors[r].message, errors[r].where()) == (e.value.message, e.value.where())


def test_doubtful_rows_go_to_the_interpreter_and_skipped_rows_stay_failed():
    graph = parse("y = x * 2\nz = y + 1")
    x = [1.0, 2.0, 3.0]
    driver = Driver(graph, names=["y", "z"])
    doubtful = np.array([False, True, True])
    results, errors, good = _rows(driver, {"x": x}, {}, doubtful=doubtful, skip={2})
    assert good.tolist() == [True, True, False] and errors == {}
    assert results["y"][:2].tolist() == [2.0, 4.0] and results["z"][:2].tolist() == [3.0, 5.0]


def test_without_a_module_every_row_is_the_interpreters():
    graph = parse("y = sqrt(x)")
    driver = Driver(graph)
    results, errors, good = driver.rows(None, 3, lambda r: {"x": [4.0, -1.0, 9.0][r]})
    assert results["y"].tolist()[::2] == [2.0, 3.0] and good.tolist() == [True, False, True]
    assert list(errors) == [1] and errors[1].where() == "<expr>:1:5"


def test_a_batch_the_module_raises_on_stops_training_at_the_node(cli):
    # Step 1 moves w from 3 to exactly 1: the module compiled at step 1 divides by 0 at step 2.
    program = "input w = 3\nloss = 0.75 * w + 1 / (w - 1)"
    with pytest.raises(TrainingStopped) as e:
        train(program, wrt=["w"], lr=4.0, steps=3)
    assert "training stopped at step 2" in e.value.message and e.value.where() == "<expr>:2:19"
    out = cli("train", program, "--wrt", "w", "--lr", "4", "--steps", "3")
    assert out.exit_code == 4 and "step 2" in out.stderr and "Traceback" not in out.stderr
