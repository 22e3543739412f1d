"""cgraph train: the optimizers against their update rules written by hand in NumPy (as
PyTorch documents them), mini-batches, stopping, resuming, the weights file, the log, the plot."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from cgraph_cli import evaluate
from cgraph_cli.core.errors import UsageError
from cgraph_cli.jobs.training import TrainingStopped, read_weights, train

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
PROGRAM = "input x = [1, -2, 0.5], t = [0.5, -1]\ninput W = [[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]], b = [0.1, -0.2]\nr = W @ x + b - t\nloss = sum(r^2)"
X, T = np.array([1, -2, 0.5]), np.array([0.5, -1])
W0, B0 = np.array([[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]]), np.array([0.1, -0.2])


def _grads(W, b):
    r = W @ X + b - T
    return {"W": 2 * np.outer(r, X), "b": 2 * r}


def _by_hand(kind: str, steps: int, lr: float, **o) -> dict:
    """The update rules of torch.optim's documentation, written out."""
    p = {"W": W0.copy(), "b": B0.copy()}
    state: dict = {k: {} for k in p}
    for t in range(1, steps + 1):
        g = _grads(p["W"], p["b"])
        for k in p:
            gk, s = g[k], state[k]
            if kind == "sgd":
                if o.get("weight_decay"):
                    gk = gk + o["weight_decay"] * p[k]
                if o.get("momentum"):
                    s["buf"] = gk.copy() if t == 1 else o["momentum"] * s["buf"] + gk
                    gk = gk + o["momentum"] * s["buf"] if o.get("nesterov") else s["buf"]
                p[k] = p[k] - lr * gk
            else:
                b1, b2, eps, wd = 0.9, 0.999, 1e-8, o.get("weight_decay", 0.0)
                if kind == "adamw":
                    p[k] = p[k] * (1 - lr * wd)
                elif wd:
                    gk = gk + wd * p[k]
                s["m"] = b1 * s.get("m", 0) + (1 - b1) * gk
                s["v"] = b2 * s.get("v", 0) + (1 - b2) * gk**2
                v = s["v"]
                if o.get("amsgrad"):
                    s["vmax"] = np.maximum(s.get("vmax", 0), s["v"])
                    v = s["vmax"]
                m_hat, v_hat = s["m"] / (1 - b1**t), v / (1 - b2**t)
                p[k] = p[k] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


@pytest.mark.parametrize(
    "kind, options",
    [
        ("sgd", {}),
        ("sgd", {"momentum": 0.9}),
        ("sgd", {"momentum": 0.9, "nesterov": True}),
        ("sgd", {"momentum": 0.5, "weight_decay": 0.1}),
        ("adam", {}),
        ("adam", {"weight_decay": 0.05}),
        ("adam", {"amsgrad": True}),
        ("adamw", {"weight_decay": 0.01}),
    ],
)
def test_optimizers_follow_their_update_rules_for_20_steps(kind, options):
    result = train(PROGRAM, wrt=["W", "b"], optimizer=kind, lr=0.05, steps=20, **options)
    want = _by_hand(kind, 20, 0.05, **options)
    for name in ("W", "b"):
        np.testing.assert_allclose(result.params[name], want[name], rtol=1e-12, atol=1e-15)
    assert result.steps == 20 and len(result.history) == 20


def test_sgd_from_a_number_reaches_the_minimum():
    result = train("input x = 3\nf = (x - 1)^2", wrt=["x"], lr=0.1, steps=200)
    assert result.params["x"] == pytest.approx(1.0, abs=1e-12)
    assert result.final_loss < 1e-20


def test_the_trained_xor_mlp_classifies_all_four_points():
    text = (SAMPLES / "xor.cg").read_text()
    result = train(
        text,
        wrt=["W1", "b1", "W2", "b2"],
        rows="sample:xor.csv",
        optimizer="adam",
        lr=0.05,
        epochs=300,
    )
    P = evaluate(text, result.params, of="P").value
    assert ((P > 0.5) == np.array([0, 1, 1, 0], dtype=bool)).all()
    assert result.final_loss < 1e-3 < result.history[0]["loss"]


def test_minibatches_take_the_rows_in_a_new_order_each_epoch():
    text = (SAMPLES / "linear.cg").read_text()
    kw = dict(wrt=["w", "b"], rows="sample:linear.csv", lr=0.05, epochs=3, batch_size=32)
    plain = train(text, **kw)
    assert [r["epoch"] for r in plain.history] == [1] * 4 + [2] * 4 + [3] * 4  # 100 rows: 4 a pass
    shuffled = train(text, shuffle=True, seed=1, **kw)
    again = train(text, shuffle=True, seed=1, **kw)
    assert shuffled.params == again.params and shuffled.params != plain.params
    # the whole set at once: one step is the gradient of the mean over all rows
    one = train(text, wrt=["w", "b"], rows="sample:linear.csv", lr=0.1, steps=1)
    data = np.loadtxt(SAMPLES / "data" / "linear.csv", delimiter=",", skiprows=1)
    x, y = data[:, 0], data[:, 1]
    gw, gb = np.mean(2 * (0 * x - y) * x), np.mean(2 * (0 * x - y))
    assert one.params["w"] == pytest.approx(-0.1 * gw, rel=1e-12)
    assert one.params["b"] == pytest.approx(-0.1 * gb, rel=1e-12)


def test_a_loss_per_row_is_averaged_or_summed():
    program = "input x = [1, 2], w = 1\nloss = (w * x - 3)^2"
    mean = train(program, wrt=["w"], rows="sample:linear.csv", lr=0.001, steps=1)
    total = train(program, wrt=["w"], rows="sample:linear.csv", lr=0.001, steps=1, reduce="sum")
    assert (1 - total.params["w"]) == pytest.approx(100 * (1 - mean.params["w"]), rel=1e-9)


def test_schedules_and_clipping():
    result = train(
        PROGRAM, wrt=["W", "b"], lr=0.1, steps=10, schedule="step", step_size=4, gamma=0.5
    )
    assert [r["lr"] for r in result.history] == [0.1] * 4 + [0.05] * 4 + [0.025] * 2
    cosine = train(PROGRAM, wrt=["W", "b"], lr=0.1, steps=4, schedule="cosine")
    want = [0.1 * (1 + math.cos(math.pi * s / 4)) / 2 for s in range(4)]
    assert [r["lr"] for r in cosine.history] == pytest.approx(want)
    clipped = train(PROGRAM, wrt=["W", "b"], lr=0.1, steps=1, clip_norm=0.5)
    g = _grads(W0, B0)
    norm = math.sqrt(np.sum(g["W"] ** 2) + np.sum(g["b"] ** 2))
    assert clipped.history[0]["grad_norm"] == pytest.approx(norm)
    np.testing.assert_allclose(
        clipped.params["W"], W0 - 0.1 * g["W"] * 0.5 / (norm + 1e-6), rtol=1e-12
    )


def test_tol_stops_when_the_loss_settles():
    result = train("input x = 3\nf = (x - 1)^2", wrt=["x"], lr=0.1, steps=10000, tol=1e-12)
    assert result.stopped == "tol" and len(result.history) < 10000


def test_a_loss_that_is_not_finite_stops_training_naming_the_step_and_node(cli):
    with pytest.raises(TrainingStopped) as e:
        train("input w = 1\nloss = log(w) + w", wrt=["w"], lr=5.0, steps=10)
    text = str(e.value)
    assert "training stopped at step 2" in text and "log(-9) is undefined" in text and "^" in text
    out = cli("train", "input w = 1\nloss = log(w) + w", "--wrt", "w", "--lr", "5", "--steps", "10")
    assert out.exit_code == 4 and "step 2" in out.stderr and "Traceback" not in out.stderr


def test_resume_equals_an_uninterrupted_run(tmp_path):
    text = (SAMPLES / "moons.cg").read_text()
    kw = dict(
        wrt=["W1", "b1", "W2", "b2"],
        rows="sample:two_moons.csv",
        optimizer="adam",
        lr=0.02,
        batch_size=64,
        shuffle=True,
        seed=3,
    )
    whole = train(text, epochs=4, **kw)
    half = tmp_path / "half.npz"
    train(text, epochs=2, save=str(half), **kw)
    rest = train(text, epochs=2, resume=str(half), **kw)
    assert rest.steps == whole.steps == 16
    for name in whole.params:
        np.testing.assert_array_equal(rest.params[name], whole.params[name])


def test_the_weights_file_binds_back_and_keeps_the_state_apart(tmp_path, cli):
    weights = tmp_path / "w.npz"
    result = train(PROGRAM, wrt=["W", "b"], optimizer="adam", lr=0.05, steps=5, save=str(weights))
    params, state = read_weights(str(weights))
    assert set(params) == {"W", "b"} and int(state["steps"]) == 5 and "W/exp_avg" in state
    out = cli("eval", "-e", PROGRAM, "--bindings", str(weights), "--format", "json")
    assert json.loads(out.stdout)["value"] == pytest.approx(result.final_loss, rel=1e-12)
    assert not list(tmp_path.glob(".*tmp"))  # written through a temporary file, renamed


def test_the_command_writes_weights_log_plot_and_json(tmp_path, cli):
    pytest.importorskip("matplotlib")
    weights, log, jsonl = tmp_path / "xor.npz", tmp_path / "log.csv", tmp_path / "log.jsonl"
    plot, svg = tmp_path / "loss.png", tmp_path / "loss.svg"
    base = ["train", "sample:xor", "--rows", "sample:xor.csv", "--wrt", "W1,b1,W2,b2"]
    base += ["--optimizer", "adam", "--lr", "0.05", "--epochs", "50"]
    out = cli(*base, "-o", str(weights), "--log", str(log), "--plot", str(plot), "--format", "json")
    assert out.exit_code == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["steps"] == 50 and report["parameters"]["W1"] == [2, 8]
    assert report["weights"] == str(weights) and report["loss"] < report["first_loss"]
    lines = log.read_text().splitlines()
    assert lines[0] == "step,epoch,loss,grad_norm,lr,seconds" and len(lines) == 51
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = cli(*base, "--log", str(jsonl), "--plot", str(svg))
    assert out.exit_code == 0 and "loss" in out.stdout and "wrote" in out.stderr
    assert json.loads(jsonl.read_text().splitlines()[-1])["step"] == 50
    assert b"<svg" in svg.read_bytes()[:400]


def test_a_config_file_holds_the_options_and_the_command_line_wins(tmp_path, cli):
    config = tmp_path / "train.toml"
    config.write_text(
        '[train]\nwrt = ["w", "b"]\nrows = "sample:linear.csv"\nlr = 0.1\nepochs = 50\n'
    )
    out = cli("train", "sample:linear", "--config", str(config), "--format", "json")
    assert out.exit_code == 0, out.stderr
    assert json.loads(out.stdout)["steps"] == 50
    out = cli(
        "train", "sample:linear", "--config", str(config), "--epochs", "2", "--format", "json"
    )
    assert json.loads(out.stdout)["steps"] == 2
    config.write_text("[train]\nlearning_rate = 0.1\n")
    bad = cli("train", "sample:linear", "--config", str(config))
    assert bad.exit_code == 2 and "unknown option 'learning_rate'" in bad.stderr


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"wrt": ["q"]}, "no name 'q'"),
        ({"wrt": []}, "name the parameters"),
        ({"wrt": ["r"]}, "computed by the program"),
        ({"wrt": ["W"], "epochs": 2}, "--epochs counts passes over --rows"),
        (
            {"wrt": ["W"], "optimizer": "sgd", "betas": (0.9, 0.99)},
            "--betas is not an option of sgd",
        ),
        ({"wrt": ["W"], "nesterov": True}, "Nesterov momentum needs a momentum"),
        ({"wrt": ["W"], "optimizer": "rmsprop"}, "sgd, adam, adamw"),
        ({"wrt": ["W"], "lr": 0}, "above 0"),
    ],
)
def test_mistakes_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError) as e:
        train(PROGRAM, **kwargs)
    assert message in str(e.value)


def test_a_parameter_cannot_also_be_a_column():
    with pytest.raises(UsageError, match="is a parameter"):
        train((SAMPLES / "linear.cg").read_text(), wrt=["x"], rows="sample:linear.csv")


def test_files_that_cannot_be_written_are_refused_before_any_step(cli, tmp_path):
    base = ["train", "sample:linear", "--rows", "sample:linear.csv", "--wrt", "w,b"]
    out = cli(*base, "--epochs", "100000", "--plot", str(tmp_path / "loss.gif"))
    assert out.exit_code == 2 and "image type" in out.stderr
    out = cli(*base, "--epochs", "100000", "-o", str(tmp_path / "missing" / "w.npz"))
    assert out.exit_code == 2 and "does not exist" in out.stderr


def test_a_program_with_a_branch_trains_on_the_graph_each_step_runs():
    program = "input x = 3\nloss = (x - 1)^2 if x > 2 else 0.5 * (x - 1)^2 + 0.5"
    result = train(program, wrt=["x"], lr=0.1, steps=100)
    assert result.params["x"] == pytest.approx(1.0, abs=1e-6)  # through both branches
    with pytest.raises(UsageError, match="if/else or loops"):
        train(program, wrt=["x"], rows="sample:linear.csv")


LEARN = ["-e", "y = (x - 3)^2", "x=1", "--wrt", "x", "--steps", "2"]


@pytest.mark.parametrize(
    "options, message",
    [
        (["--clip-norm", "-1"], "--clip-norm must be a number above 0, got -1"),
        (["--clip-norm", "0"], "--clip-norm must be a number above 0, got 0"),
        (["--schedule", "step", "--gamma", "-1"], "--gamma must be a number above 0, got -1"),
        (["--momentum", "-0.5"], "--momentum must be a number at least 0, got -0.5"),
        (["--weight-decay", "-1"], "--weight-decay must be a number at least 0, got -1"),
        (["--momentum", "0.5", "--dampening", "2"], "--dampening must be a number at least 0 and at most 1"),
        (["--lr", "nan"], "--lr must be a finite number, got nan"),
        (["--lr", "-0.1"], "--lr must be a number above 0, got -0.1"),
        (["--lr", "1e400"], "--lr must be a finite number, got inf"),
        (["--tol", "nan"], "--tol must be a finite number, got nan"),
        (["--tol", "-1"], "--tol must be a number at least 0, got -1"),
        (["--optimizer", "adam", "--betas", "-1,2"], "--betas must be two numbers at least 0 and below 1"),
        (["--optimizer", "adam", "--betas", "0.9,1"], "--betas must be two numbers at least 0 and below 1"),
        (["--optimizer", "adam", "--eps", "inf"], "--eps must be a finite number, got inf"),
        (["--optimizer", "adam", "--eps", "-1e-8"], "--eps must be a number at least 0"),
        (["--seed", "-1"], "--seed must be a whole number at least 0, got -1"),
        (["--nesterov", "--momentum", "0.9", "--dampening", "0.1"], "Nesterov momentum needs no dampening"),
    ],
)  # fmt: skip
def test_settings_that_would_reverse_or_stall_training_are_refused(cli, options, message):
    r = cli("train", *LEARN, *options)
    assert r.exit_code == 2, r.output
    assert message in r.stderr and "'x'" not in r.stderr


@pytest.mark.parametrize(
    "line, message",
    [
        ('lr = "abc"', "cfg.toml: [train] lr: Invalid value for '--lr'"),
        ("lr = [1, 2]", "cfg.toml: [train] lr must be a number, got [1, 2]"),
        ("lr = true", "cfg.toml: [train] lr must be a number, got True"),
        ("lr = {a = 1}", "cfg.toml: [train] lr must be a number"),
        ("lr = nan", "--lr must be a finite number, got nan"),
        ("epochs = 1.5", "cfg.toml: [train] epochs must be a whole number, got 1.5"),
        ("nesterov = 1", "cfg.toml: [train] nesterov must be true or false, got 1"),
        ("log = 5", "cfg.toml: [train] log must be a file name, in quotes, got 5"),
        ('optimizer = "foo"', "cfg.toml: [train] optimizer: Invalid value for '--optimizer'"),
        ("wrt = 3", None),
    ],
)  # fmt: skip
def test_a_config_value_of_the_wrong_type_names_the_file_and_the_key(cli, tmp_path, line, message):
    (tmp_path / "cfg.toml").write_text(f"[train]\n{line}\n")
    args = LEARN if message else LEARN[:3]
    r = cli("train", *args, "--config", str(tmp_path / "cfg.toml"))
    assert r.exit_code == 2, r.output
    assert (message or "cfg.toml: [train] wrt is a name or a list of names, got 3") in r.stderr


def _weights(path, **arrays):
    import numpy as np

    np.savez(path, **{k.replace("__", "__train__/", 1) if k.startswith("__") else k: np.array(v)
                      for k, v in arrays.items()})  # fmt: skip


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"x": [1.0, 2.0]}, "the parameter x is (2,) there, () in the program"),
        ({"x": "abc"}, "holds text"),
        ({"x": float("nan")}, "the parameter x holds a value that is not finite"),
        ({"x": 1.0, "__x/momentum_buffer": [1.0] * 5, "__steps": 3}, "the training state x/momentum_buffer does not fit"),
        ({"x": 1.0, "__steps": [1, 2]}, "no whole number of steps done"),
        ({"x": 1.0, "__steps": 1e30}, "no whole number of steps done"),
        ({"x": 1.0, "__x/momentum_buffer": 1.0}, "no whole number of steps done"),
    ],
)  # fmt: skip
def test_a_damaged_or_crafted_resume_file_is_refused_with_its_name(cli, tmp_path, arrays, message):
    _weights(tmp_path / "w.npz", **arrays)
    r = cli("train", *LEARN, "--momentum", "0.9", "--resume", str(tmp_path / "w.npz"))
    assert r.exit_code == 2, r.output
    assert message in r.stderr and "w.npz" in r.stderr


def test_an_update_that_overflows_stops_training_without_a_warning(cli):
    r = cli("train", "-e", "loss = exp(w)", "w=700", "--wrt", "w", "--steps", "3", "--lr", "1e10")
    assert r.exit_code == 4
    assert r.stderr.startswith(
        "cgraph: error: training stopped at step 1: its update made w not finite"
    )
    assert "warning" not in r.stderr


@pytest.mark.parametrize(
    "state, options, message",
    [
        ({"__x/exp_avg": 0.1, "__x/exp_avg_sq": -1.0}, ["--optimizer", "adam"], "exp_avg_sq holds a negative number"),
        ({"__x/exp_avg": 0.1}, ["--optimizer", "adam"], "holds part of adam's moments only"),
        ({"__x/exp_avg": 0.1, "__x/exp_avg_sq": 1.0}, ["--optimizer", "adam", "--amsgrad"], "holds part of adam's moments only"),
        ({"__x/exp_avg": 0.1, "__x/exp_avg_sq": 1.0}, [], "which sgd does not keep"),
    ],
)  # fmt: skip
def test_a_resume_file_of_another_optimizer_is_refused(cli, tmp_path, state, options, message):
    _weights(tmp_path / "w.npz", x=1.0, __steps=3, **state)
    r = cli("train", *LEARN, *options, "--resume", str(tmp_path / "w.npz"))
    assert r.exit_code == 2, r.output
    assert message in r.stderr and "w.npz" in r.stderr
