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


@pytest.mark.parametrize("name", ["film.png", "film", "film.html.txt"])
def test_a_page_not_named_html_is_refused_before_any_step(cli, tmp_path, name):
    base = ["train", "sample:linear", "--rows", "sample:linear.csv", "--wrt", "w,b"]
    page = tmp_path / name
    out = cli(*base, "--epochs", "100000", "--page", str(page))
    assert out.exit_code == 2
    assert f"--page writes an HTML page, not {page}" in out.stderr
    assert "name it NAME.html" in out.stderr and "Traceback" not in out.stderr
    assert not page.exists() and out.stdout == ""


def test_a_page_named_htm_or_in_capitals_is_written(cli, tmp_path):
    base = ["train", "sample:linear", "--rows", "sample:linear.csv", "--wrt", "w,b"]
    for name in ("film.htm", "FILM.HTML"):
        out = cli(*base, "--epochs", "2", "--page", str(tmp_path / name))
        assert out.exit_code == 0, out.stderr
        assert (
            (tmp_path / name)
            .read_text(encoding="utf-8")
            .lstrip()
            .lower()
            .startswith("<!doctype html")
        )


def test_a_program_with_a_branch_trains_on_the_graph_each_step_runs():
    program = "input x = 3\nloss = (x - 1)^2 if x > 2 else 0.5 * (x - 1)^2 + 0.5"
    result = train(program, wrt=["x"], lr=0.1, steps=100)
    assert result.params["x"] == pytest.approx(1.0, abs=1e-6)  # through both branches
    with pytest.raises(UsageError, match="if/else or loops"):
        train(program, wrt=["x"], rows="sample:linear.csv")
