"""--engine dask: on a real dask.distributed cluster (two worker processes on this machine),
every row and every reduced gradient equal to the single-machine engine's."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from distributed import LocalCluster


@pytest.fixture(scope="module")
def scheduler():
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    yield cluster.scheduler_address
    cluster.close()


@pytest.fixture
def parts(tmp_path):
    rng = np.random.default_rng(3)
    for k in range(3):
        x = rng.normal(size=50).round(3)
        t = (rng.random(50) > 0.5).astype(int)
        lines = ["x,t,id"] + [f"{a},{b},{k}-{i}" for i, (a, b) in enumerate(zip(x, t))]
        if k == 1:
            lines[7] = "oops,1,1-6"  # a row that fails, in the middle file
        (tmp_path / f"part-{k}.csv").write_text("\n".join(lines) + "\n")
    return str(tmp_path / "part-*.csv")


def test_rows_on_the_cluster_equal_the_local_engine(cli, scheduler, parts, tmp_path):
    args = ["grad", "sample:logistic", "--rows", parts, "--keep", "id", "--allow-errors"]
    local = cli(*args, "-o", str(tmp_path / "local.csv"))
    remote = cli(
        *args, "--engine", "dask", "--scheduler", scheduler, "-o", str(tmp_path / "dask.csv")
    )
    assert local.exit_code == 0 and remote.exit_code == 0, remote.stderr
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert "150 rows in" in remote.stderr and "1 error" in remote.stderr
    text = (tmp_path / "dask.csv").read_text()
    assert "row 7: the value of 'x' is not a number: 'oops'" in text and "part-1.csv" in text
    folder = cli(
        *args, "--engine", "dask", "--scheduler", scheduler, "-o", str(tmp_path / "out") + "/"
    )
    assert folder.exit_code == 0, folder.stderr
    rows = pq.read_table(tmp_path / "out").to_pydict()
    assert rows["id"][:3] == ["0-0", "0-1", "0-2"] and len(rows["id"]) == 150
    failing = cli(*args[:-1], "--engine", "dask", "--scheduler", scheduler)
    assert failing.exit_code == 4


def test_reduce_on_the_cluster_equals_the_local_engine(cli, scheduler, parts):
    args = ["grad", "sample:logistic", "--rows", parts, "--reduce", "mean", "--format", "json"]
    local = json.loads(cli(*args, "--allow-errors").stdout)
    remote = cli(*args, "--allow-errors", "--engine", "dask", "--scheduler", scheduler)
    assert remote.exit_code == 0, remote.stderr
    remote = json.loads(remote.stdout)
    assert remote["rows"] == local["rows"] == 149 and remote["errors"] == 1
    for name in ("w", "b"):
        assert np.isclose(remote["gradients"][name], local["gradients"][name], rtol=1e-12)
    assert np.isclose(remote["value"], local["value"], rtol=1e-12)


def test_the_workers_read_the_files_with_the_delimiter_given(cli, scheduler, parts, tmp_path):
    for k in range(3):  # the same rows, split by '|'
        text = (tmp_path / f"part-{k}.csv").read_text().replace(",", "|")
        (tmp_path / f"bar-{k}.csv").write_text(text)
    args = ["grad", "sample:logistic", "--keep", "id", "--allow-errors", "--format", "json"]
    local = cli(*args, "--rows", parts)
    remote = cli(*args, "--rows", str(tmp_path / "bar-*.csv"), "--delimiter", "|",
                 "--engine", "dask", "--scheduler", scheduler)  # fmt: skip
    assert remote.exit_code == 0, remote.stderr
    assert remote.stdout == local.stdout.replace("part-", "bar-")


def test_the_local_dask_scheduler_and_its_errors(cli, parts, tmp_path):
    result = cli(
        "eval", "sample:logistic", "--rows", parts, "--engine", "dask", "--allow-errors", "-q"
    )
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 151
    npz = tmp_path / "x.npz"
    np.savez(npz, x=np.ones(3), t=np.ones(3))
    refused = cli("eval", "sample:logistic", "--rows", str(npz), "--engine", "dask")
    assert refused.exit_code == 2 and "not .npz" in refused.stderr
    alone = cli("eval", "sample:logistic", "--rows", parts, "--scheduler", "tcp://127.0.0.1:1")
    assert alone.exit_code == 2 and "--engine dask" in alone.stderr
    unreachable = cli(
        "eval", "sample:logistic", "--rows", parts, "--engine", "dask", "--scheduler",
        "tcp://127.0.0.1:1",
    )  # fmt: skip
    assert unreachable.exit_code == 2 and "cannot reach the Dask scheduler" in unreachable.stderr
