"""Conditionals and loops: the graph that runs against the same program written out by hand,
gradients against finite differences on both sides of each condition, backpropagation through
time against NumPy, the static and the run graph, and every new error with its place."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from cgraph_cli import evaluate, grad, gradcheck, parse, validate
from cgraph_cli.core.errors import CgraphError, EvalError, ParseError
from cgraph_cli.core.ir_control import Static
from cgraph_cli.parse.unparse import to_source
from cgraph_cli.run.control import run_graph

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
HUBER = "loss = 0.5 * e^2 if abs(e) <= d else d * (abs(e) - 0.5 * d)"
BRANCHES = ("loss = 0.5 * e^2 + 0 * d", "loss = d * (abs(e) - 0.5 * d)")


def _fd(program: str, bindings: dict, name: str, h: float = 1e-6) -> float:
    up = evaluate(program, {**bindings, name: bindings[name] + h}).value
    down = evaluate(program, {**bindings, name: bindings[name] - h}).value
    return (up - down) / (2 * h)


# --- conditionals ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(40))
def test_a_conditional_is_the_branch_it_picks_written_alone(seed):
    rng = random.Random(seed)
    d = rng.uniform(0.2, 2.0)
    e = rng.choice([-1, 1]) * (rng.uniform(0, 0.95) if seed % 2 else rng.uniform(1.05, 3)) * d
    bindings = {"e": e, "d": d}
    chosen = BRANCHES[0] if abs(e) <= d else BRANCHES[1]
    got, want = grad(HUBER, bindings), grad(chosen, bindings)
    assert got.value == pytest.approx(want.value, rel=1e-15)
    for name in ("e", "d"):
        assert got.gradients[name] == pytest.approx(want.gradients[name], rel=1e-12, abs=1e-15)
        assert got.gradients[name] == pytest.approx(_fd(HUBER, bindings, name), rel=1e-6, abs=1e-8)


def test_only_the_branch_taken_runs():
    assert evaluate("y = log(x) if x > 0 else 0", {"x": -1}).value == 0.0
    assert evaluate("y = log(x) if x > 0 else 0", {"x": np.e}).value == pytest.approx(1.0)
    with pytest.raises(EvalError, match="log\\(-1\\) is undefined"):
        evaluate("y = where(x > 0, log(x), 0)", {"x": -1})


def test_the_gradient_flows_to_the_branch_taken_only():
    result = grad("y = a * x if x > 0 else b * x", {"x": 2, "a": 3, "b": 5})
    assert result.gradients == {"a": 2.0, "x": 3.0, "b": 0.0}


def test_conditionals_nest_and_chain_as_in_python():
    program = "y = 1 if x < 0 else 2 if x < 1 else 3"
    assert [evaluate(program, {"x": x}).value for x in (-1, 0.5, 5)] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "text, x, y, want",
    [
        ("x > 0 and y > 0", 1, 1, 1.0),
        ("x > 0 and y > 0", 1, -1, 0.0),
        ("x > 0 or y > 0", -1, 1, 1.0),
        ("not x > 0 or y", 1, 0, 0.0),  # (not (x > 0)) or y
        ("not (x and y)", 2, 0, 1.0),
        ("x or y and 0", 1, 1, 1.0),  # x or (y and 0)
    ],
)
def test_and_or_not_have_pythons_precedence_and_give_0_or_1(text, x, y, want):
    assert evaluate(f"r = {text}", {"x": x, "y": y}).value == want
    assert float(eval(text, {}, {"x": x, "y": y}) not in (0, False)) == want  # noqa: S307


def test_logical_ops_work_elementwise_on_tensors_and_have_no_gradient():
    program = "y = sum(a * ((a > b) and (b > 0) or not (a > 1)))"
    bindings = {"a": [0.5, 2.0, 3.0, -1.0], "b": [0.1, 2.5, 1.0, -2.0]}
    mask = np.array([1.0, 0.0, 1.0, 1.0])
    result = grad(program, bindings)
    assert result.value == pytest.approx(float(np.sum(np.array(bindings["a"]) * mask)))
    np.testing.assert_allclose(result.gradients["a"], mask)
    np.testing.assert_allclose(result.gradients["b"], 0.0)
    assert gradcheck(program, bindings).ok


def test_a_condition_that_is_a_tensor_is_an_error_with_its_place():
    with pytest.raises(EvalError) as e:
        evaluate("y = x if x > 0 else -x", {"x": [1, -2]})
    assert "the condition x > 0 is a (2,) tensor" in str(e.value)
    assert "1:10" in str(e.value) and "where(c, a, b)" in str(e.value)


# --- loops ---------------------------------------------------------------------------------------
LOOP = "input w = 0.9, x = 0.5\nh = 1\nfor t in range(4):\n    h = tanh(h * w + x)\ny = h * h"
UNROLLED = "input w = 0.9, x = 0.5\nh = 1\n" + "h = tanh(h * w + x)\n" * 4 + "y = h * h"


def test_a_loop_is_its_body_written_out_n_times():
    got, want = grad(LOOP), grad(UNROLLED)
    assert got.value == want.value
    assert got.gradients == want.gradients
    ran = run_graph(parse(LOOP))
    assert [ran.labels[n] for n in ran.control.steps["h"][1:]] == ["h_1", "h_2", "h_3", "h_4"]
    assert ran.names["h_0"] < ran.names["h"] and ran.output_label == "y"


def test_the_run_graph_prints_as_a_program_that_reads_back():
    ran = run_graph(parse(LOOP))
    text = to_source(ran)
    assert "h_4 = tanh(h_3 * w + x)" in text
    assert evaluate(text).value == evaluate(LOOP).value


def test_nested_loops_and_a_conditional_in_a_body():
    program = (
        "x = 1\nfor i in range(3):\n    for j in range(2): x = x * 2 + i\n"
        "    x = x - 1 if i > 0 else x\ny = x"
    )
    x = 1
    for i in range(3):
        for _ in range(2):
            x = x * 2 + i
        x = x - 1 if i > 0 else x
    assert evaluate(program).value == x
    names = set(run_graph(parse(program)).names)
    assert {"x_1_1", "x_3_2", "x_3"} <= names


def test_the_number_of_steps_comes_from_the_data():
    program = "input xs = [1, 2]\ns = 0\nfor t in range(len(xs)):\n    s = s + xs[t] * t"
    for xs in ([1.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0, 8.0]):
        assert evaluate(program, {"xs": xs}).value == sum(x * t for t, x in enumerate(xs))
        guards = run_graph(parse(program), {"xs": xs}).control.guards
        assert [str(g) for g in guards] == [f"len(xs) == {len(xs)}"]
    by_shape = "s = 0\nfor t in range(shape(m, 1)):\n    s = s + sum(m[:, t])"
    assert evaluate(by_shape, {"m": [[1, 2, 3], [4, 5, 6]]}).value == 21.0
    by_value = "s = 1\nfor t in range(n):\n    s = s * 2"
    assert evaluate(by_value, {"n": 5}).value == 32.0
    assert evaluate(by_value, {"n": 0}).value == 1.0


def test_the_static_graph_is_the_same_for_any_length_and_the_run_graph_grows():
    text = (SAMPLES / "rnn.cg").read_text(encoding="utf-8")
    static = validate(parse(text))
    assert isinstance(static.control, Static)
    (loop,) = static.control.loops
    assert loop.bound == "len(xs)" and [name for _, _, name in loop.back] == ["h"]
    sizes = []
    for n in (1, 2, 3, 10):
        xs = np.ones((n, 2)).tolist()
        ran = validate(run_graph(static, {"xs": xs}))
        sizes.append(len(ran))
    per_step = sizes[1] - sizes[0]
    assert per_step > 0 and sizes == [sizes[0] + per_step * (n - 1) for n in (1, 2, 3, 10)]
    assert len(static) < sizes[1]


def _bptt(W, U, b, v, target, xs):
    """Elman RNN forward and backpropagation through time, written by hand in NumPy."""
    hs = [np.zeros(2)]
    for x in xs:
        hs.append(np.tanh(W @ hs[-1] + U @ x + b))
    y = v @ hs[-1]
    loss = (y - target) ** 2
    dh = 2 * (y - target) * v
    dW, dU, db = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    dxs, per_step = np.zeros_like(xs), [dh]
    for t in range(len(xs) - 1, -1, -1):
        da = dh * (1 - hs[t + 1] ** 2)
        dW += np.outer(da, hs[t])
        dU += np.outer(da, xs[t])
        db += da
        dxs[t] = U.T @ da
        dh = W.T @ da
        per_step.append(dh)
    return loss, {"W": dW, "U": dU, "b": db, "xs": dxs}, per_step[::-1]


@pytest.mark.parametrize("seed", range(5))
def test_rnn_backprop_through_time_matches_numpy_by_hand(seed, cli):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    bindings = {
        "W": rng.normal(size=(2, 2)),
        "U": rng.normal(size=(2, 2)),
        "b": rng.normal(size=2),
        "v": rng.normal(size=2),
        "target": 0.5,
        "xs": rng.normal(size=(n, 2)),
    }
    text = (SAMPLES / "rnn.cg").read_text(encoding="utf-8")
    result = grad(text, bindings)
    loss, grads, per_step = _bptt(**bindings)
    assert result.value == pytest.approx(loss, rel=1e-12)
    for name, g in grads.items():
        np.testing.assert_allclose(result.gradients[name], g, rtol=1e-10, atol=1e-12)
    args = [f"{k}={json.dumps(np.asarray(v).tolist())}" for k, v in bindings.items()]
    out = cli("grad", "sample:rnn", *args, "--per-step", "--format", "json")
    assert out.exit_code == 0, out.stderr
    steps = json.loads(out.stdout)["per_step"]["h"]
    assert steps[0] is None  # h_0 is a constant
    for got, want in zip(steps[1:], per_step[1:]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_newton_steps_differentiate_to_one_over_two_root_a():
    text = (SAMPLES / "newton_sqrt.cg").read_text(encoding="utf-8")
    for a in (0.5, 2.0, 9.0):
        result = grad(text, {"a": a})
        assert result.value == pytest.approx(np.sqrt(a), rel=1e-12)
        assert result.gradients["a"] == pytest.approx(1 / (2 * np.sqrt(a)), rel=1e-6)


def test_a_loop_of_100000_steps_runs():
    program = "input x = 1.0\nh = 0\nfor t in range(100000):\n    h = h * 0.5 + x\ny = h"
    result = grad(program)
    assert result.value == pytest.approx(2.0)
    assert result.gradients["x"] == pytest.approx(2.0)
    assert len(result.graph) > 200000


def test_gradients_through_loops_and_branches_match_finite_differences():
    program = (
        "input a = 0.7, b = -0.3\nh = a\nfor t in range(6):\n"
        "    h = sin(h) * b + a if h > 0 else h * a - b\ny = h * h"
    )
    rng = random.Random(3)
    for _ in range(20):
        bindings = {"a": rng.uniform(-1.5, 1.5), "b": rng.uniform(-1.5, 1.5)}
        result = grad(program, bindings)
        for name in ("a", "b"):
            fd = _fd(program, bindings, name)
            assert result.gradients[name] == pytest.approx(fd, rel=1e-5, abs=1e-7), bindings


# --- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "program, bindings, cls, message, place",
    [
        ("for t in range(3):\ny = 1", {}, ParseError, "expected an indented block", "1:1"),
        (
            "x = 1\nfor t in range(3):\n  x = x + 1\n    y = 2",
            {},
            ParseError,
            "unexpected indent",
            "4:5",
        ),
        (
            "x = 1\nfor t in range(3):\n    x = x + 1\n  y = 2",
            {},
            ParseError,
            "unindent does not match",
            "4:3",
        ),
        (
            "x = 1\nfor t in range(3):\n\tx = x + 1\n        y = 2",
            {},
            ParseError,
            "tabs and spaces",
            "4:9",
        ),
        (
            "x = 1\nfor t in range(2):\n  x = x + 1\n z = 2",
            {},
            ParseError,
            "unindent does not match",
            "4:2",
        ),
        ("for t in range(2.5):\n  y = 1", {}, ParseError, "whole number, got 2.5", "1:16"),
        (
            "for t in range(sum(xs)):\n  y = 1",
            {},
            ParseError,
            "len(NAME) or shape(NAME, AXIS)",
            "1:16",
        ),
        ("for t in range(3):\n  input z\n  y = z", {}, ParseError, "declared outside loops", "2:3"),
        (
            "for t in range(3):\n  for t in range(2):\n    y = t",
            {},
            ParseError,
            "enclosing loop",
            "2:7",
        ),
        ("y = x[q]", {}, ParseError, "'q' is not a loop variable", "1:7"),
        ("y = 0\nfor t in range(n):\n  y = y + 1", {"n": 2.5}, EvalError, "n is 2.5", "2:16"),
        ("y = 0\nfor t in range(n):\n  y = y + 1", {"n": -1}, EvalError, "n is -1", "2:16"),
        (
            "y = 0\nfor t in range(len(x)):\n  y = y + 1",
            {"x": 2},
            EvalError,
            "which is a number",
            "2:16",
        ),
        (
            "y = 0\nfor t in range(4):\n  y = y + xs[t]",
            {"xs": [1, 2]},
            EvalError,
            "index t = 2 is past the end",
            "3:14",
        ),
        ("y = 1 if x > 0 else 2", {}, EvalError, "no value for input 'x'", "1:10"),
    ],
)
def test_every_control_flow_error_names_its_place(program, bindings, cls, message, place):
    with pytest.raises(cls) as e:
        evaluate(program, bindings)
    text = str(e.value)
    assert message in text and f"<expr>:{place}:" in text and "^" in text


def test_control_flow_errors_have_their_exit_codes(cli):
    bad = cli("eval", "y = 0\nfor t in range(4):\n  y = y + xs[t]", "xs=[1, 2]")
    assert bad.exit_code == 4 and "past the end" in bad.stderr and "Traceback" not in bad.stderr
    bad = cli("eval", "for t in range(3):\ny = 1")
    assert bad.exit_code == 3 and "indented block" in bad.stderr
    refused = cli("optimize", "sample:huber")
    assert refused.exit_code == 2 and "if/else" in refused.stderr
    # compile takes if/else (tests/test_compile_conditionals.py) and loops, not nested ones
    nested = "h = 0\nfor i in range(2):\n    for j in range(2):\n        h = h + x"
    refused = cli("compile", nested)
    assert refused.exit_code == 2 and "one level deep" in refused.stderr


# --- the two views, and the commands ----------------------------------------------------------------
def test_render_draws_the_static_graph_framed_and_the_run_graph_unrolled(cli):
    static = cli("dot", "sample:rnn", "--view", "static")
    assert static.exit_code == 0, static.stderr
    assert "subgraph cluster_loop" in static.stdout and "× len(xs)" in static.stdout
    assert "h: next step (× len(xs))" in static.stdout
    run = cli("dot", "sample:rnn", "--view", "run", "xs=[[1, 0], [0, 1], [1, 1]]")
    assert run.exit_code == 0 and "cluster_loop" not in run.stdout and "h_3" in run.stdout
    assert "the graph that ran: len(xs) == 3" in run.stdout
    huber = cli("dot", "sample:huber", "--view", "static")
    assert "cluster_then" in huber.stdout and "cluster_else" in huber.stdout
    assert "if abs(e) &lt;= d" in huber.stdout
    missing = cli("dot", "y = 1 if x > 0 else 2", "--view", "run")
    assert missing.exit_code == 2 and "x=VALUE" in missing.stderr
    auto = cli("dot", "y = 1 if x > 0 else 2")
    assert auto.exit_code == 0 and "static graph" in auto.stderr


def test_a_branch_that_is_a_name_made_earlier_has_no_frame(cli):
    # `y` was made on the line before: the then-branch has no node of its own (its frame
    # once held the constant 2 of `x * 2`); the else-branch frames its negation only
    from cgraph_cli import parse
    from cgraph_cli.render.flow import frames

    graph = parse("input x = 0.5\ny = x * 2\nz = y if y < 5 else -y\n")
    found = frames(graph, [True] * len(graph.ops))
    assert [(kind, sorted(graph.ops[i].name for i in nodes)) for kind, _, nodes in found] == [
        ("else", ["neg"])
    ]


def test_show_and_explain_report_on_the_graph_that_ran(cli):
    shown = cli("show", "sample:huber", "e=3", "--no-grads")
    assert shown.exit_code == 0 and "abs" in shown.stdout and "^" not in shown.stdout
    text = cli("explain", "sample:huber", "e=3").stdout
    assert text.startswith("Control flow\n  abs(e) <= d was false (3 <= 1), so the `else` branch")
    loop = cli("explain", "sample:newton_sqrt").stdout
    assert "`for k in range(6)` ran 6 steps" in loop and "x_6" in loop


def test_diff_of_control_flow_is_the_derivative_program_of_the_graph_that_runs(cli):
    out = cli("diff", "sample:huber", "e=3")
    assert out.exit_code == 0 and "abs(e) <= d was false" in out.stderr
    values = cli("eval", "-", "--all", "--format", "json", "e=3", input=out.stdout)
    derived = json.loads(values.stdout)["values"]
    assert derived["dloss_de"] == 1.0 and derived["dloss_dd"] == 2.0


def test_gradcheck_runs_each_point_on_its_own_graph(cli):
    out = cli("gradcheck", "sample:huber", "--points", "40", "--seed", "2")
    assert out.exit_code == 0, out.stdout
    assert "80 passed" in out.stdout or "passed, 0 failed" in out.stdout


def test_the_samples_are_cgraph_programs_with_control_flow():
    for name in ("huber", "rnn", "newton_sqrt"):
        text = (SAMPLES / f"{name}.cg").read_text(encoding="utf-8")
        assert isinstance(parse(text).control, Static)


def test_indentation_matters_from_the_first_loop_on():
    program = "  y = 1\n    z = 2\nfor t in range(2):\n  y = y + z\nw = y"
    assert evaluate(program).value == 5.0


def test_straight_line_programs_have_no_control_structure():
    assert parse("y = x * 2").control is None
    with pytest.raises(CgraphError):
        parse("y = if")


def test_check_and_explain_frames_use_the_graph_that_ran(cli, tmp_path):
    ok = cli("check", "sample:huber", "e=3", "--expect", "loss=2.5", "--expect-grad", "e=1")
    assert ok.exit_code == 0 and "2 passed" in ok.stdout
    second = cli(
        "check", "sample:newton_sqrt", "--expect-hessian", "a,a=-0.0883883", "--rtol", "1e-4"
    )
    assert second.exit_code == 0, second.stdout
    frames = cli("explain", "sample:huber", "e=3", "--frames", str(tmp_path / "f"))
    assert frames.exit_code == 0 and len(list((tmp_path / "f").glob("frame-*.png"))) == 6


def test_show_draws_the_static_tree(cli):
    shown = cli("show", "sample:rnn", "--view", "static")
    assert shown.exit_code == 0 and "xs[t]" in shown.stdout and "static graph" not in shown.stdout


@pytest.mark.parametrize(
    ("program", "bindings", "value", "guards"),
    [
        # the inner condition, log(x) > 0, is in the branch not taken at x = -1: never computed
        ("y = (x if log(x) > 0 else 1) if x > 0 else 2", {"x": -1.0}, 2.0, ["x > 0 was false"]),
        (
            "y = (x if log(x) > 0 else 1) if x > 0 else 2",
            {"x": 0.5},
            1.0,
            ["x > 0 was true", "log(x) > 0 was false"],
        ),
        # a chain: the second condition is read only where the first is false
        (
            "y = 0 if x < 0 else (sqrt(x) if sqrt(x) < 1 else log(x))",
            {"x": -4.0},
            0.0,
            ["x < 0 was true"],
        ),
        # in a function's argument and in a loop's body
        (
            "def f(a):\n    return a * 2\ny = f(1 if x < 0 else (2 if log(x) > 0 else 3))",
            {"x": -1.0},
            2.0,
            ["x < 0 was true"],
        ),
        (
            "h = x\nfor t in range(2):\n    h = h if h < 0 else (h * 2 if log(h) > 0 else h)",
            {"x": -1.0},
            -1.0,
            ["h < 0 was true", "h < 0 was true"],
        ),
    ],
)
def test_a_condition_in_a_branch_not_taken_is_never_computed(program, bindings, value, guards):
    from cgraph_cli.run.program import differentiated

    ran, values, _, out = differentiated(parse(program), bindings)
    assert values[out] == value
    assert [str(g) for g in ran.control.guards] == guards
    assert all(ran.ops[i].name != "log" for i in range(len(ran.ops)))


def test_a_condition_is_decided_by_the_rules_eval_computes_values_with():
    # exp(x) by the float rule (math.exp) is ...784 here, by NumPy's ...78: `if` decided by
    # NumPy's had taken the other branch than `where` and the compiled module
    x = 1.0020060180541626
    bound = 2.7237402238726784
    as_if = evaluate(f"y = x * 100 if exp(x) >= {bound!r} else -x", {"x": x}).value
    as_where = evaluate(f"y = where(exp(x) >= {bound!r}, x * 100, -x)", {"x": x}).value
    assert as_if == as_where


@pytest.mark.parametrize("after", ["out = h + t", "out = h * t"])
def test_a_loops_variable_is_its_own_and_a_name_it_shadows_comes_back_after_it(
    cli, tmp_path, after
):
    """`t = 5` before `for t in range(3)`: inside, t counts the steps; after, t is 5 again
    (it was an input, unbound, and compile stopped with an internal error). The graph that
    runs, the scan and the compiled loop module agree."""
    from cgraph_cli.run.scan_code import compile_module

    text = f"t = 5\nh = e\nfor t in range(3):\n    h = sqrt(h) + t\n{after}\n"
    h = 2.0
    for t in range(3):
        h = h**0.5 + t
    want = h + 5 if "+" in after else h * 5
    assert evaluate(text, {"e": 2.0}).value == pytest.approx(want)
    graph = parse(text)
    assert grad(graph, {"e": 2.0}).value == pytest.approx(want)
    assert grad(graph, {"e": 2.0}).value == pytest.approx(want)  # (the scan, from the 2nd call)
    namespace: dict = {}
    exec(compile_module(graph), namespace)
    value, grads = namespace["grad"](e=2.0)
    assert value == pytest.approx(want)
    assert grads["e"] == pytest.approx(grad(text, {"e": 2.0}).gradients["e"])
    source = tmp_path / "p.cg"
    source.write_text(text)
    result = cli("compile", str(source), "-o", str(tmp_path / "m.py"))
    assert result.exit_code == 0, result.output
