"""Loops run as scans (cgraph_cli.run.scan) against the graph that runs (the loops unrolled,
the interpreter's passes): the same values and gradients, and where the scan does not answer
(None), the library's functions still give the interpreter's answer or error."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import expressions, tensor_expressions

import cgraph_cli as cg
from cgraph_cli.core.errors import CgraphError
from cgraph_cli.run.program import differentiated, evaluated
from cgraph_cli.run.scan import AT_ONCE, scan_forward, scan_grad
from cgraph_cli.run.scan_code import compile_module


def _interpreted(graph, bindings, of=None):
    ran, values, adjoints, out = differentiated(graph, bindings, of)
    return values[out], {name: adjoints[node] for name, node in ran.inputs.items()}


def _close(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-9, atol=1e-12)


def _same_answer(graph, bindings, of=None, *, must_scan: bool = True) -> None:
    expected = _interpreted(graph, bindings, of)
    got = scan_grad(graph, bindings, of)
    if got is None:
        assert not must_scan, "the scan gave no answer"
        return
    assert _close(got[0], expected[0])
    assert got[1].keys() == expected[1].keys()
    for name, g in expected[1].items():
        assert _close(got[1][name], g), name
        assert isinstance(got[1][name], float) == isinstance(g, float), name
    forward = scan_forward(graph, bindings, of)
    assert forward is not None and _close(forward[0], expected[0])


def _sample(name: str) -> str:
    from pathlib import Path

    return (Path(__file__).parent.parent / "samples" / f"{name}.cg").read_text()


def test_the_rnn_sample_runs_as_a_scan_with_the_interpreters_gradients():
    graph = cg.parse(_sample("rnn"))
    _same_answer(graph, {})
    rng = np.random.default_rng(1)
    longer = {"xs": rng.normal(size=(50, 2)), "W": rng.normal(size=(2, 2))}
    _same_answer(graph, longer)


LOOPS = {
    "a number carried": ("input a = 0.5\nh = 1\nfor t in range(4):\n    h = h * a + t", {}),
    "a number becomes a vector": (
        "h = 0\nfor t in range(len(xs)):\n    h = h * w + xs[t]\ny = sum(h * h)",
        {"xs": [[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], "w": [0.5, 2.0]},
    ),
    "columns read as X[:, t]": (
        "s = zeros\nfor k in range(3):\n    s = s + sin(X[:, k]) * s + X[:, k]\nloss = sum(s)",
        {"X": [[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]], "zeros": [0.0, 0.0]},
    ),
    "two loops, code between and a name of the body read after": (
        "h = x + 0.5\nfor i in range(3):\n    g = h * h\n    h = sin(g) + x\n"
        "m = h * 2\nfor j in range(2):\n    m = m * g + 1\ny = m + g",
        {"x": 0.3},
    ),
    "an input first read in the body, then assigned": (
        "for i in range(3):\n    x = x * 2 + w\ny = sum(x)",
        {"x": [1.0, -1.0], "w": 0.5},
    ),
    "Fibonacci: a name set to what another carries": (
        "a = x * 1\nb = x * 1\nfor t in range(5):\n    c = a + b\n    a = b\n    b = c\ny = b * x",
        {"x": 1.5},
    ),
    "a bound that is a constant": (
        "n = 3\nh = 1\nfor t in range(n):\n    h = h * x\ny = h",
        {"x": 2.0},
    ),
    "a bound computed before the loop": (
        "h = [1, 2]\nn = sum(h)\nfor t in range(n):\n    h = h * x\ny = sum(h)",
        {"x": 2.0},
    ),
    "shape(v, 0) and a function called in the body": (
        "def f(a, b):\n    return a * b + 1\ninput v = [1, 2, 3]\nh = 0\n"
        "for t in range(shape(v, 0)):\n    h = f(h, x) + v[t]\ny = h",
        {"x": 0.5},
    ),
    "an augmented assignment": ("h = 1\nfor t in range(3):\n    h += x * t\ny = h", {"x": 2.0}),
    "names the step code uses": (
        "input e0 = 0.5, t = 2, saved = 1, np = 3\n_w = saved\n"
        "for step in range(3):\n    _w = _w * e0 + t * step + np\nct0 = _w * 2",
        {},
    ),
    "a statement no one reads, in the body": (
        "h = x\nfor t in range(3):\n    unused = log(h)\n    h = h * 2\ny = h",
        {"x": 1.5},
    ),
    "an output named in the body": (
        "input W = [[0.5, 0.1], [0.2, 0.3]]\nh = [1, 1]\nfor t in range(3):\n"
        "    z = W @ h\n    h = tanh(z)\nloss = sum(h)",
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loops_run_as_scans_give_the_interpreters_answers(name):
    program, bindings = LOOPS[name]
    _same_answer(cg.parse(program), bindings)


def test_of_a_value_the_loop_carries_is_its_last_steps():
    program, bindings = LOOPS["two loops, code between and a name of the body read after"]
    graph = cg.parse(program)
    _same_answer(graph, bindings, of="h")
    with pytest.raises(CgraphError, match="no name 'g'"):  # g_1, g_2, g_3: one per step
        differentiated(graph, bindings, of="g")
    assert scan_grad(graph, bindings, of="g") is None


@pytest.mark.parametrize(
    ("program", "bindings"),
    [
        # the body reads the carried value by another name too: the static graph cannot
        # tell them apart
        ("h = x\nfor t in range(3):\n    h = h * x\ny = h", {"x": 1.5}),
        # h carries g's value at the start of each step, and is read after the loop, where
        # the static graph has one node for it and for g before the loop
        ("h = x * 1\ng = x * 3\nfor t in range(2):\n    h = g\n    g = g * 2\ny = h", {"x": 1.0}),
        ("h = x * 1\nfor t in range(2):\n    h = h * h[t]\ny = sum(h)", {"x": [0.5, 0.2]}),
        (
            "s = 0\nfor t in range(2):\n    s = s + xs[t]\n    xs = xs * 2\ny = sum(s)",
            {"xs": [[0.5, 0.2], [1.0, 2.0]]},
        ),
        # no steps: the graph that runs answers (its names of the body are not defined)
        ("h = 1 + x\nfor t in range(n):\n    h = h * 2\nz = h * x", {"n": 0.0, "x": 2.0}),
        ("h = 0\nfor i in range(2):\n    for j in range(2):\n        h = h + x\ny = h", {"x": 1.0}),
    ],
)
def test_what_a_scan_does_not_take_is_the_interpreters(program, bindings):
    graph = cg.parse(program)
    assert scan_grad(graph, bindings) is None
    result = cg.grad(graph, bindings)
    expected = _interpreted(graph, bindings)
    assert result.value == expected[0]
    assert all(np.array_equal(result.gradients[n], g) for n, g in expected[1].items())


@pytest.mark.parametrize(
    ("program", "bindings", "message"),
    [
        ("h = x\nfor t in range(3):\n    h = log(h - 2)\ny = h", {"x": 3.5}, "log"),
        (
            "h = x\nfor t in range(3):\n    dead = sqrt(h - 5)\n    h = h + 1\ny = h",
            {"x": 3.0},
            "sqrt",
        ),
        ("h = x\nfor t in range(3):\n    h = tanh(exp(h * 800))\ny = h", {"x": 1.0}, "exp"),
        (
            "h = x\nfor t in range(3):\n    h = tanh(exp(h * 800))\ny = sum(h)",
            {"x": [0.5, 1.0]},
            "exp",
        ),
        (
            "h = x\nfor t in range(3):\n    d = log(h - 0.7)\n    h = h * 1\ny = sum(h)",
            {"x": [0.5, 1.0]},
            "log",
        ),
        (
            "h = 0\nfor t in range(4):\n    h = h + xs[t]\ny = sum(h)",
            {"xs": [[1.0], [2.0]]},
            "past the end",
        ),
        ("h = x * 1\nfor t in range(2):\n    h = h * h\ny = 1 / h", {"x": 1e200}, "overflows"),
        ("h = x * 1\nfor t in range(2):\n    h = h + h\ny = h", {"x": 1e308}, "overflows"),
        ("h = x * 1\nfor t in range(1):\n    h = log(h)\ny = h", {"x": 1e-320}, "derivative"),
        (
            "h = x * 1\nfor t in range(1):\n    h = sqrt(h)\ny = sum(h)",
            {"x": [0.0, 1.0]},
            "derivative",
        ),
        ("h = x * 1\nfor t in range(len(x)):\n    h = h * 2\ny = h", {"x": 3.0}, "is a number"),
        (
            "h = [0, 0, 0]\nfor t in range(2):\n    h = tanh(W @ h)\ny = sum(h)",
            {"W": [[1.0, 0.0], [0.0, 1.0]]},
            "inner dimensions",
        ),
        (
            "h = 1 + x\nfor t in range(n):\n    g = h * 2\n    h = g\nz = g * x",
            {"n": 0.0, "x": 2.0},
            "no value for input 'g'",
        ),
    ],
)
def test_a_loop_that_fails_fails_with_the_interpreters_error_at_its_node(
    program, bindings, message
):
    graph = cg.parse(program)
    with pytest.raises(CgraphError) as interpreted:
        differentiated(graph, bindings)
    assert scan_grad(graph, bindings) is None
    for _ in range(2):  # the first call and the next (the scan's, when it runs)
        with pytest.raises(CgraphError) as e:
            cg.grad(graph, bindings)
        assert str(e.value) == str(interpreted.value)
        assert e.value.where() == interpreted.value.where()
    assert message in str(e.value)


def test_a_long_loop_runs_as_a_scan_at_once_and_its_graph_is_made_when_asked_for():
    rng = np.random.default_rng(0)
    n = AT_ONCE
    graph = cg.parse(_sample("rnn"))
    bindings = {"xs": rng.normal(size=(n, 2))}
    result = cg.grad(graph, bindings)
    assert result._graph is None, "the scan answered; no graph was unrolled"
    expected = _interpreted(graph, bindings)
    assert _close(result.value, expected[0])
    assert _close(result.gradients["W"], expected[1]["W"])
    # every node's values and adjoints, and the graph that ran, when asked for
    assert len(result.graph.control.steps["h"]) == n + 1
    assert _close(result.wrt("W"), expected[1]["W"])
    evaluation = cg.evaluate(graph, bindings)
    assert evaluation._graph is None and _close(evaluation.value, expected[0])
    assert evaluation.output_name == "loss"


def test_a_short_loop_runs_as_a_scan_from_its_second_call():
    graph = cg.parse(_sample("rnn"))
    assert cg.grad(graph, {})._graph is not None
    second = cg.grad(graph, {})
    assert second._graph is None and _close(second.value, _interpreted(graph, {})[0])


def test_a_scans_gradient_is_never_the_callers_array():
    graph = cg.parse("h = 0\nfor t in range(2):\n    h = h + sum(W * x)\ny = h")
    W, x = np.ones((2, 2)), np.arange(4.0).reshape(2, 2)
    grads = scan_grad(graph, {"W": W, "x": x})[1]
    assert not np.may_share_memory(grads["W"], x) and not np.may_share_memory(grads["x"], W)
    assert W.tolist() == [[1.0, 1.0], [1.0, 1.0]]


# --- random programs --------------------------------------------------------------------------
def _both(program: str, bindings: dict):
    """The program, the bindings of its inputs, the interpreter's answer (None where it
    refuses, and then the scan must too) and the scan's."""
    graph = cg.parse(program)
    bindings = {k: v for k, v in bindings.items() if k in graph.inputs}
    try:
        expected = _interpreted(graph, bindings)
    except CgraphError:
        assert scan_grad(graph, bindings) is None
        return graph, bindings, None, None
    return graph, bindings, expected, scan_grad(graph, bindings)


NAMES = ("x", "e0", "saved")  # the second and third: names the step code gives its own values


@st.composite
def loop_programs(draw):
    inputs = list(NAMES)
    carried = draw(st.sampled_from(["h", "c0", "t"]))
    var = draw(st.sampled_from(["k", "step"]))
    init = draw(expressions(inputs, max_leaves=3))
    body = draw(expressions([*inputs, carried, var], max_leaves=6))
    after = draw(expressions([carried, inputs[0]], max_leaves=3))
    lines = [f"{carried} = {init}", f"for {var} in range({draw(st.integers(1, 5))}):"]
    lines.append(f"    {carried} = {body}")
    if draw(st.booleans()):
        lines.append(f"    {carried} = {carried} * 0.5 + {inputs[1]}")
    lines.append(f"out = {after}")
    values = st.floats(-2, 2, allow_nan=False).filter(lambda v: abs(v) > 1e-3)
    return "\n".join(lines), {name: draw(values) for name in inputs}


@settings(max_examples=120, deadline=None, derandomize=True)
@given(loop_programs())
def test_random_loops_of_numbers_give_the_interpreters_answer(case):
    graph, bindings, expected, got = _both(*case)
    if expected is None:
        return
    if got is not None:  # None: the scan left it to the interpreter, which answered
        assert got[0] == pytest.approx(expected[0], rel=1e-9, abs=1e-12)
        for name, g in expected[1].items():
            assert got[1][name] == pytest.approx(g, rel=1e-7, abs=1e-9), name


@st.composite
def loops_with_if(draw):
    """A loop whose body takes one of two branches by a condition on what it carries; one
    branch fails outside its domain (log, sqrt), so that it must not run where not taken."""
    inputs = list(NAMES)
    carried = draw(st.sampled_from(["h", "c0"]))
    grow = draw(expressions([*inputs, carried], max_leaves=4))
    fail = draw(st.sampled_from(["log({})", "sqrt({})", "1 / ({})"])).format(carried)
    test = draw(st.sampled_from([">", "<", "<="]))
    bound = draw(st.sampled_from(["0", "1", inputs[1]]))
    branches = [f"{fail} * {inputs[0]}", grow]
    if draw(st.booleans()):
        branches.reverse()
    lines = [f"{carried} = {draw(expressions(inputs, max_leaves=3))}"]
    lines.append(f"for k in range({draw(st.integers(1, 5))}):")
    lines.append(f"    {carried} = {branches[0]} if {carried} {test} {bound} else {branches[1]}")
    lines.append(f"out = {carried} * {inputs[2]}")
    values = st.floats(-2, 2, allow_nan=False).filter(lambda v: abs(v) > 1e-3)
    return "\n".join(lines), {name: draw(values) for name in inputs}


@settings(max_examples=150, deadline=None, derandomize=True)
@given(loops_with_if())
def test_random_loops_with_if_else_give_the_interpreters_answer(case):
    graph, bindings, expected, got = _both(*case)
    if expected is None:
        return
    if got is None:
        try:
            compile_module(graph)
        except cg.UsageError:  # not a scan's (h = x before the loop: aliased): both refuse
            return
        module = {}
        exec(compile_module(graph), module)  # a value not finite on the way: the graph that
        with pytest.raises(ArithmeticError):  # runs answered; the module stops too
            module["grad"](**bindings)
        return
    module = {}
    exec(compile_module(graph), module)  # cgraph compile's module: the same code
    assert got[0] == pytest.approx(expected[0], rel=1e-9, abs=1e-12)
    for name, g in expected[1].items():
        assert got[1][name] == pytest.approx(g, rel=1e-7, abs=1e-9), name
    value, grads = module["grad"](**bindings)
    assert value == pytest.approx(expected[0], rel=1e-9, abs=1e-12)
    for name, g in expected[1].items():
        assert grads[name] == pytest.approx(g, rel=1e-7, abs=1e-9), name


def test_a_loop_with_if_else_runs_as_a_scan_and_never_runs_the_branch_not_taken():
    program = "input x = 0.5\nh = 1\nfor t in range(4):\n    h = h * x if h < 2 else log(h) - x"
    for x in (0.5, 1.5, 3.0, -1.0):  # log(h) of h < 0 at x = -1 would fail: never taken
        _same_answer(cg.parse(program), {"x": x})


@st.composite
def tensor_loops(draw):
    body = draw(tensor_expressions(max_leaves=4, names=("A", "r", "s", "h")))
    step = draw(st.sampled_from(["h = h * ({})", "h = h * 0.5 + {}", "h = tanh({}) + xs[t]"]))
    program = "\n".join(
        [
            "h = A * 0.1",
            "for t in range(len(xs)):",
            "    " + step.format(body),
            "loss = sum(h * h)",
        ]
    )
    rng = np.random.default_rng(draw(st.integers(0, 100)))
    bindings = {
        "A": rng.uniform(-1, 1, size=(2, 3)),
        "r": rng.uniform(-1, 1, size=3),
        "s": float(rng.uniform(-1, 1)),
        "xs": rng.uniform(-1, 1, size=(draw(st.integers(1, 4)), 2, 3)),
    }
    return program, bindings


@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(tensor_loops())
def test_random_tensor_loops_give_the_interpreters_answer(case):
    graph, bindings, expected, got = _both(*case)
    if expected is None:
        return
    assert got is not None, "a tensor loop the interpreter runs runs as a scan"
    assert math.isclose(got[0], expected[0], rel_tol=1e-9, abs_tol=1e-12)
    for name, g in expected[1].items():
        assert _close(got[1][name], g), name


def test_evaluated_and_scanned_values_agree_on_a_tensor_output():
    graph = cg.parse("h = x\nfor t in range(3):\n    h = h * 2\ny = h")
    x = np.array([1.0, 2.0])
    (value,) = scan_forward(graph, {"x": x})
    ran, values, out = evaluated(graph, {"x": x})
    assert _close(value, values[out])
    assert scan_grad(graph, {"x": x}) is None  # a tensor output has no gradient: its error


def test_compile_writes_a_loop_as_a_python_loop_that_runs_without_cgraph(cli, tmp_path):
    module = tmp_path / "rnn_grad.py"
    assert cli("compile", "sample:rnn", "--target", "numpy", "-o", str(module)).exit_code == 0
    text = module.read_text()
    assert "for _i in range(_n0):" in text and "cgraph_cli" not in text
    namespace: dict = {}
    exec(compile(text, str(module), "exec"), namespace)
    xs = np.random.default_rng(0).normal(size=(30, 2))
    value, grads = namespace["grad"](xs=xs)
    expected = _interpreted(cg.parse(_sample("rnn")), {"xs": xs})
    assert math.isclose(value, expected[0], rel_tol=1e-12)
    for name, g in expected[1].items():
        assert _close(grads[name], g), name
    assert namespace["forward"](xs=xs) == {"loss": value}
    with pytest.raises(ArithmeticError, match=r"in `for t in range\(len\(xs\)\)` \(line 7\)"):
        namespace["grad"](xs=np.full((3, 2), 1e308), W=np.full((2, 2), 1e308))


def test_compile_of_a_scalar_loop_imports_no_numpy(cli):
    result = cli("compile", "input a = 0.5\nh = 1\nfor t in range(n):\n    h = sin(h) * a + t")
    assert result.exit_code == 0 and "import numpy" not in result.stdout
    namespace: dict = {}
    exec(result.stdout, namespace)
    graph = cg.parse("input a = 0.5\nh = 1\nfor t in range(n):\n    h = sin(h) * a + t")
    value, grads = namespace["grad"](n=4)
    expected = _interpreted(graph, {"n": 4.0})
    assert value == pytest.approx(expected[0]) and grads == pytest.approx(expected[1])
    with pytest.raises(ArithmeticError, match="whole number"):
        namespace["grad"](n=2.5)


def test_a_value_of_each_step_is_no_output_of_a_scan():
    graph = cg.parse("h = x * 1\nfor t in range(3):\n    g = h * 2\n    h = g\ny = h")
    with pytest.raises(CgraphError, match="no name 'g'"):
        differentiated(graph, {"x": 1.0}, of="g")
    assert scan_grad(graph, {"x": 1.0}, of="g") is None


def test_loops_past_the_most_steps_in_all_are_refused_as_before():
    program = "h = 0\nfor t in range(n):\n    h = h + x\nfor s in range(n):\n    h = h * 1\ny = h"
    graph = cg.parse(program)  # (the graph that runs refuses at the second loop's header)
    assert scan_grad(graph, {"x": 1.0, "n": 500_001.0}) is None
    assert scan_grad(graph, {"x": 1.0, "n": 200_000.0}) is not None


def test_a_ragged_sequence_is_the_bindings_error_at_every_call():
    graph = cg.parse(_sample("rnn"))
    for _ in range(2):
        with pytest.raises(CgraphError, match="rectangular"):
            cg.grad(graph, {"xs": [[1.0, 2.0], [3.0]]})


def test_a_loop_past_the_most_steps_is_refused_as_before_not_run():
    graph = cg.parse("h = 0\nfor t in range(1000000000000):\n    h = h + x\ny = h")
    assert scan_grad(graph, {"x": 1.0}) is None
    with pytest.raises(CgraphError, match="more than the 1,000,000"):
        cg.grad(graph, {"x": 1.0})


def test_a_loop_of_numbers_runs_as_a_scan_without_numpy():
    import subprocess
    import sys

    code = (
        "import sys, cgraph_cli as cg\n"
        "g = cg.parse('input a = 0.5\\nh = 1\\nfor t in range(3):\\n    h = sin(h) * a + t')\n"
        "cg.grad(g, {}); r = cg.grad(g, {}); e = cg.evaluate(g, {}); e = cg.evaluate(g, {})\n"
        "assert r._graph is None and e._graph is None, 'scans'\n"
        "cg.compile_module(g)\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_grad_at_the_shell_shows_a_long_loops_table_from_the_scan(cli, tmp_path):
    from cgraph_cli.app.report import grad_report, scanned_grad_report
    from cgraph_cli.app.results import Gradients

    xs = np.random.default_rng(3).normal(size=(AT_ONCE, 2))
    graph = cg.parse(_sample("rnn"))
    report = scanned_grad_report(graph, {"xs": xs}, None, None)
    ran, values, adjoints, out = differentiated(graph, {"xs": xs})
    full = grad_report(Gradients(ran, values, out, adjoints))
    assert report is not None and report["output"] == full["output"] == "loss"
    assert math.isclose(report["value"], full["value"], rel_tol=1e-12)
    for name, g in full["gradients"].items():
        assert _close(report["gradients"][name], g), name
        assert np.array_equal(report["values"][name], full["values"][name])
    assert report["shapes"]["xs"] == full["shapes"]["xs"]
    np.savez(tmp_path / "long.npz", xs=xs)
    shown = cli("grad", "sample:rnn", "--bindings", str(tmp_path / "long.npz"), "--format", "plain")
    assert shown.exit_code == 0
    assert shown.stdout.splitlines()[0].startswith("W=[[")
    assert scanned_grad_report(graph, {"xs": xs[:3]}, None, None) is None  # short: unrolled


def test_eval_at_the_shell_shows_a_long_loops_value_from_the_scan(cli, tmp_path):
    from cgraph_cli.app.report import scanned_eval_report

    xs = np.random.default_rng(4).normal(size=(AT_ONCE, 2))
    graph = cg.parse(_sample("rnn"))
    report = scanned_eval_report(graph, {"xs": xs}, None)
    ran, values, out = evaluated(graph, {"xs": xs})
    assert report == {"output": "loss", "value": values[out], "values": {"loss": values[out]}}
    np.savez(tmp_path / "long.npz", xs=xs)
    shown = cli("eval", "sample:rnn", "--bindings", str(tmp_path / "long.npz"), "--format", "plain")
    assert shown.exit_code == 0 and shown.stdout == f"loss={values[out]!r}\n"
    assert scanned_eval_report(graph, {"xs": xs[:3]}, None) is None  # short: unrolled


def test_a_loop_module_passes_nothing_back_where_the_gradient_is_0():
    """sqrt's slope at 0 is infinite, but under a relu that is 0 the gradient is 0 and the
    interpreter never computes it: the loop module of numbers computes that contribution
    only where the gradient is not 0, and answers as the interpreter does; where the
    gradient is not 0 it stops at the error."""
    graph = cg.parse("h = x\nfor t in range(3):\n    h = relu(h) * sqrt(h) + h\ny = h\n")
    namespace: dict = {}
    exec(compile_module(graph), namespace)
    assert namespace["grad"](x=0.0) == _interpreted(graph, {"x": 0.0}) == (0.0, {"x": 1.0})
    value, grads = namespace["grad"](x=1.0)
    want = _interpreted(graph, {"x": 1.0})
    assert _close(value, want[0]) and _close(grads["x"], want[1]["x"])
    with pytest.raises(ArithmeticError, match="math domain error"):
        namespace["grad"](x=-1.0)


def test_a_numpy_loop_module_runs_again_with_its_masks_where_the_gradient_is_0():
    """The NumPy loop module's steps back take each contribution as it is; where a value on
    the way back is not finite, the run goes again with each masked contribution 0 where its
    gradient is, element by element: the interpreter's answer; where the gradient is not 0
    the error stands."""
    graph = cg.parse("h = x\nfor t in range(3):\n    h = relu(h) * sqrt(h) + h\ny = sum(h)\n")
    x = np.array([0.0, 1.0, 0.0])
    source = compile_module(graph, "numpy", bindings={"x": x})
    assert "(_b0_m0 if masked else _b0_b0)" in source and "np.where(" in source
    namespace: dict = {}
    exec(source, namespace)
    value, grads = namespace["grad"](x=x)
    want = _interpreted(graph, {"x": x})
    assert _close(value, want[0]) and _close(grads["x"], want[1]["x"])
    assert grads["x"][0] == grads["x"][2] == 1.0
    with pytest.raises(ArithmeticError, match="not finite"):
        namespace["grad"](x=np.array([-1.0, 1.0, 0.0]))
