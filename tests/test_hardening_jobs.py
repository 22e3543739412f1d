"""Issue 25, the jobs' options: train's settings that would climb the loss, stand still or crash,
damaged --resume files, wrong-typed --config values and --scheduler addresses that are not a
Dask scheduler: each is exit 2 with a message naming the option, the file or the address."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from cgraph_cli.core.errors import UsageError
from cgraph_cli.jobs.training import train

PROGRAM = ["-e", "input x = 3; f = (x - 1)^2", "--wrt", "x", "--steps", "2"]
STATE = "__train__/"


@pytest.mark.parametrize(
    "args, option",
    [
        (["--clip-norm", "-1"], "--clip-norm"),
        (["--clip-norm", "0"], "--clip-norm"),
        (["--schedule", "step", "--gamma", "-1"], "--gamma"),
        (["--gamma", "0"], "--gamma"),
        (["--gamma", "1e10"], "--gamma"),
        (["--momentum", "-0.9"], "--momentum"),
        (["--momentum", "0.5", "--dampening", "2"], "--dampening"),
        (["--weight-decay", "-1"], "--weight-decay"),
        (["--optimizer", "adam", "--betas", "-1,2"], "--betas"),
        (["--optimizer", "adam", "--betas", "0.9,1"], "--betas"),
        (["--optimizer", "adam", "--betas", "0.9"], "--betas"),
        (["--optimizer", "adam", "--eps", "-1e-8"], "--eps"),
        (["--lr", "nan"], "--lr"),
        (["--lr", "0"], "--lr"),
        (["--lr", "-0.1"], "--lr"),
        (["--lr", "1e400"], "--lr"),
        (["--tol", "nan"], "--tol"),
        (["--tol", "-1"], "--tol"),
        (["--seed", "-1"], "--seed"),
        (["--steps", "2.5"], "--steps"),
    ],
)
def test_train_refuses_settings_that_climb_stall_or_crash(cli, args, option):
    result = cli("train", *PROGRAM, *args)
    assert result.exit_code == 2, result.stderr
    assert f"'{option}'" in result.stderr
    assert "input" not in result.stderr  # the option is blamed, not the program's x


def test_the_library_checks_the_settings_too():
    for settings in ({"clip_norm": -1}, {"gamma": -1}, {"momentum": -1}, {"tol": float("nan")}):
        with pytest.raises(UsageError, match="--" + next(iter(settings)).replace("_", "-")):
            train("input x = 3; f = (x - 1)^2", wrt=["x"], steps=2, **settings)
    with pytest.raises(UsageError, match="--betas"):
        train("input x = 3; f = x^2", wrt=["x"], optimizer="adam", betas=(-1, 2))
    with pytest.raises(UsageError, match="--seed"):
        train("input x = 3; f = x^2", wrt=["x"], seed=-1)


@pytest.mark.parametrize(
    "line, words",
    [
        ('lr = "fast"', "'fast' is not a number"),
        ("lr = [1, 2]", "is not a number"),
        ("lr = {a = 1}", "is not a number"),
        ("lr = true", "True is not a number"),
        ("lr = nan", "not a finite number"),
        ("lr = 1" + "0" * 400, "not a finite number"),
        ('"clip-norm" = -1', "not in the range"),
        ("optimizer = 3", "a string, not the number 3"),
        ("shuffle = 'yes'", "true or false, not a string"),
        ("rows = 5", "a string, not the number 5"),
        ("output = 7", "a string"),
        ("resume = 1.5", "a string"),
        ("seed = -1", "not in the range"),
        ("betas = [0.9, 'x']", "'x' is not a number"),
    ],
)
def test_config_values_of_the_wrong_type_are_usage_errors_at_their_line(cli, tmp_path, line, words):
    config = tmp_path / "train.toml"
    config.write_text(f"# settings\n[other]\nlr = 1\n\n[train]\n{line}\n", encoding="utf-8")
    result = cli("train", "-e", "input x = 3; f = (x - 1)^2", "--config", str(config))
    assert result.exit_code == 2, result.stderr
    key = line.split("=")[0].strip().strip("\"'")
    assert f"{config}:6:1: error: [train] {key}: " in result.stderr
    assert words in result.stderr


def test_config_values_that_fit_are_taken(cli, tmp_path):
    config = tmp_path / "train.toml"
    config.write_text(
        "[train]\nwrt = ['x']\noptimizer = 'adam'\nbetas = [0.8, 0.99]\nsteps = 3\nlr = 1\n"
    )
    result = cli("train", "-e", "input x = 3; f = (x - 1)^2", "--config", str(config))
    assert result.exit_code == 0, result.stderr
    assert "for 3 steps" in result.stdout


def _weights(path, **arrays):
    np.savez(path, **{k.replace("__", STATE, 1) if k.startswith("__") else k: v
                      for k, v in arrays.items()})  # fmt: skip
    return str(path)


@pytest.mark.parametrize(
    "arrays, optimizer, words",
    [
        ({"x": np.array("abc")}, "sgd", "holds text"),
        ({"x": np.array(1 + 2j)}, "sgd", "complex"),
        ({"x": np.array(np.nan)}, "sgd", "the parameter x holds a value that is not finite"),
        ({"x": np.array(1.0), "__steps": np.array("a")}, "sgd", "holds text"),
        ({"x": np.array(1.0), "__steps": np.array([1, 2])}, "sgd", "count of steps"),
        ({"x": np.array(1.0), "__steps": np.array(-5)}, "sgd", "count of steps"),
        ({"x": np.array(1.0), "__steps": np.array(np.nan)}, "sgd", "count of steps"),
        ({"x": np.array(1.0), "__steps": np.array(2**62)}, "sgd", "count of steps"),
        (
            {"x": np.array(1.0), "__steps": np.array(1), "__x/momentum_buffer": np.ones(2)},
            "sgd",
            "the momentum_buffer of x is (2,)",
        ),
        (
            {"x": np.array(1.0), "__steps": np.array(1), "__x/exp_avg": np.array(0.5)},
            "adam",
            "half of adam's moments",
        ),
        (
            {
                "x": np.array(1.0),
                "__steps": np.array(1),
                "__x/exp_avg": np.array(0.5),
                "__x/exp_avg_sq": np.array(-1.0),
            },
            "adamw",
            "negative",
        ),
    ],
)
def test_damaged_or_crafted_resume_files_are_usage_errors(cli, tmp_path, arrays, optimizer, words):
    path = _weights(tmp_path / "w.npz", **arrays)
    extra = ["--momentum", "0.5"] if optimizer == "sgd" else []
    result = cli("train", *PROGRAM, "--optimizer", optimizer, *extra, "--resume", path)
    assert result.exit_code == 2, result.stderr
    assert "w.npz" in result.stderr and words in result.stderr


@pytest.mark.parametrize("data", [b"", b"PK\x03\x04damaged" * 8, b"not a zip at all"])
def test_resume_files_that_are_not_weights_files(cli, tmp_path, data):
    path = tmp_path / "w.npz"
    path.write_bytes(data)
    result = cli("train", *PROGRAM, "--resume", str(path))
    assert result.exit_code == 2, result.stderr
    assert f"cannot read {path}" in result.stderr


def test_a_resumed_adam_with_amsgrad_takes_a_state_without_its_maximum(cli, tmp_path):
    path = _weights(
        tmp_path / "w.npz",
        x=np.array(1.5),
        __steps=np.array(3),
        **{"__x/exp_avg": np.array(0.1), "__x/exp_avg_sq": np.array(0.2)},
    )
    result = cli("train", *PROGRAM, "--optimizer", "adam", "--amsgrad", "--resume", path)
    assert result.exit_code == 0, result.stderr


# --- --scheduler ---------------------------------------------------------------------------------
pytest.importorskip("distributed")


@pytest.fixture
def rows(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("x\n1\n2\n")
    return str(path)


def _dask(cli, rows, address):
    return cli("eval", "-e", "input x; f = 2 * x", "--rows", rows, "--engine", "dask",
               "--scheduler", address)  # fmt: skip


@pytest.mark.parametrize(
    "address", ["tcp://", "foo", "tcp://host:99999", "http://x:80", "", "tcp://[::1", "inproc://x"]
)
def test_malformed_scheduler_addresses(cli, rows, address):
    result = _dask(cli, rows, address)
    assert result.exit_code == 2, result.stderr
    assert "the address of a Dask scheduler is tcp://HOST:PORT" in result.stderr


def _server(behaviour):
    """A TCP server on a free local port that, to each peer, does ``behaviour(connection)``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    peers = []

    def serve():
        while True:
            try:
                peer, _ = listener.accept()
            except OSError:
                return
            peers.append(peer)
            try:
                behaviour(peer)
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    return listener, peers


@pytest.mark.parametrize(
    "behaviour, words",
    [
        (lambda peer: peer.sendall(b"\xff" * 64), "is not a Dask scheduler"),  # a 3 EiB frame
        (lambda peer: peer.sendall(b"\x10" + b"\0" * 7 + b"short"), "did not answer within 1 s"),
        (lambda peer: None, "did not answer within 1 s"),  # silent
        (lambda peer: peer.close(), "is not a Dask scheduler"),
    ],
)
def test_a_peer_that_is_not_a_dask_scheduler_ends_within_the_timeout(
    cli, rows, monkeypatch, behaviour, words
):
    monkeypatch.setenv("CGRAPH_SCHEDULER_TIMEOUT", "1")
    listener, peers = _server(behaviour)
    try:
        address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
        result = _dask(cli, rows, address)
    finally:
        listener.close()
        for peer in peers:
            peer.close()
    assert result.exit_code == 2, result.stderr
    assert words in result.stderr


def _handshake_then(after):
    """A peer that sends a Dask handshake, as a scheduler does, then does ``after``."""
    import msgpack

    info = msgpack.packb({"compression": None, "python": (3, 11, 0), "pickle-protocol": 5})
    message = (1).to_bytes(8, "little") + len(info).to_bytes(8, "little") + info
    return lambda peer: (peer.sendall(len(message).to_bytes(8, "little") + message), after(peer))


@pytest.mark.parametrize(
    "after, words",
    [
        (lambda peer: peer.sendall(b"\xff" * 64), "cannot connect to the Dask scheduler"),
        (lambda peer: peer.close(), "cannot reach the Dask scheduler"),
        (lambda peer: None, "cannot reach the Dask scheduler"),
    ],
)
def test_a_peer_that_shakes_hands_then_is_not_a_scheduler(cli, rows, monkeypatch, after, words):
    monkeypatch.setenv("CGRAPH_SCHEDULER_TIMEOUT", "1")
    listener, peers = _server(_handshake_then(after))
    try:
        result = _dask(cli, rows, f"tcp://127.0.0.1:{listener.getsockname()[1]}")
    finally:
        listener.close()
        for peer in peers:
            peer.close()
    assert result.exit_code == 2, result.stderr
    assert words in result.stderr and not result.stderr.rstrip().endswith(":")


def test_a_closed_port_and_a_bad_timeout(cli, rows, monkeypatch):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    closed = _dask(cli, rows, f"127.0.0.1:{port}")
    assert closed.exit_code == 2 and "cannot reach the Dask scheduler" in closed.stderr
    monkeypatch.setenv("CGRAPH_SCHEDULER_TIMEOUT", "nan")
    bad = _dask(cli, rows, f"127.0.0.1:{port}")
    assert bad.exit_code == 2 and "CGRAPH_SCHEDULER_TIMEOUT is seconds" in bad.stderr


@pytest.mark.parametrize("folder", ["a-file/", "/proc/cgraph-out/"])
def test_dask_output_folders_that_cannot_be_written(cli, rows, tmp_path, monkeypatch, folder):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("not a folder")
    result = cli("eval", "-e", "input x; f = 2 * x", "--rows", rows, "--engine", "dask",
                 "-o", folder)  # fmt: skip
    assert result.exit_code == 2, result.stderr
    assert f"cannot write {folder.rstrip('/')}" in result.stderr


def test_an_update_past_the_largest_float_names_the_learning_rate(cli):
    result = cli("train", *PROGRAM, "--lr", "1e308")
    assert result.exit_code == 4, result.stderr
    assert "its update took the parameter x past the largest number" in result.stderr
    assert "a smaller --lr" in result.stderr and "Warning" not in result.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (["--save-every", "1"], "--save-every writes the weights file: name it with -o"),
        (["--batch-size", "3"], "--batch-size is for training on the rows of a data file"),
        (["--shuffle"], "--shuffle is for training on the rows of a data file"),
        (["--nesterov", "--momentum", "0.9", "--dampening", "0.5"], "takes no --dampening"),
        (["--optimizer", "adamw", "--weight-decay", "300"], "adamw would flip the weights' sign"),
        (["--log", "/dev/full"], "cannot write /dev/full"),
    ],
)
def test_settings_that_would_be_ignored_or_flip_the_weights(cli, args, words):
    result = cli("train", *PROGRAM, *args)
    assert result.exit_code == 2, result.stderr
    assert words in result.stderr


def test_a_scheduler_with_no_workers_ends_within_the_timeout(cli, rows, monkeypatch):
    from distributed import LocalCluster

    monkeypatch.setenv("CGRAPH_SCHEDULER_TIMEOUT", "1")
    with LocalCluster(
        n_workers=0, processes=False, dashboard_address=None, protocol="tcp",
        scheduler_kwargs={"host": "127.0.0.1"},
    ) as cluster:  # fmt: skip
        result = _dask(cli, rows, cluster.scheduler_address)
    assert result.exit_code == 2, result.stderr
    assert "has no workers (none came within 1 s)" in result.stderr
