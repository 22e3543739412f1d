"""Conditionals compiled (``a if c else b`` as a Python ``if``): every target gives the
interpreter's values and gradients, computes the branch taken alone (forward and backward),
and stops where the interpreter stops."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import BRANCH_INPUTS as NAMES
from strategies import branching_programs
from test_engines import COLLIDING as _COLLIDING
from test_engines import SPECIAL as _SPECIAL
from test_engines import _renamed

import cgraph_cli as cg
from cgraph_cli import CgraphError, parse
from cgraph_cli.run.program import differentiated, evaluated
from cgraph_cli.run.scan_code import compile_module

_point = st.sampled_from([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0])
_points = st.lists(st.fixed_dictionaries({n: _point for n in NAMES}), min_size=1, max_size=4)


def _interpreted(graph, bindings) -> SimpleNamespace:
    """The interpreter's answer: the graph that runs for ``bindings``, its passes (the
    library's cgraph_cli.grad runs the compiled module from a graph's second call on)."""
    ran, values, adjoints, out = differentiated(graph, bindings)
    gradients = {name: adjoints[node] for name, node in ran.inputs.items()}
    return SimpleNamespace(value=values[out], gradients=gradients)


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<compiled>", "exec"), namespace)
    return namespace


def _close(a, b) -> bool:
    a, b = float(a), float(b)
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def _same_place(text: str, error: CgraphError, message: str) -> None:
    """The module's ``message`` names the line of the expression the interpreter's error
    names (or of an earlier one computing the same, which the optimizer merged it with)."""
    if error.span is None or not message.startswith("line "):
        return
    line = int(message[5:].split(":", 1)[0])
    failed = text[error.span.start : error.span.end]
    assert failed in text.splitlines()[line - 1], (text, error, message)


def _derivative_program_fails(graph, bindings) -> bool:
    from cgraph_cli.core.errors import EvalError
    from cgraph_cli.passes.derivatives import derivative_program
    from cgraph_cli.run.control import run_graph
    from cgraph_cli.run.evaluate import forward

    ran = run_graph(graph, bindings)
    try:
        forward(derivative_program(ran).graph, bindings)
    except EvalError:
        return True
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(branching_programs(), _points)
def test_a_compiled_conditional_gives_the_interpreters_values_gradients_and_errors(text, points):
    graph = parse(text)
    used = [n for n in NAMES if n in graph.inputs]
    for target in ("python", "numpy"):
        module = _load(compile_module(graph, target))
        for point in points:
            bindings = {n: point[n] for n in used}
            try:
                expected = _interpreted(graph, bindings)
            except CgraphError:
                with pytest.raises(ArithmeticError):
                    module["grad"](**bindings)
                try:
                    evaluated(graph, bindings)
                except CgraphError as forward_error:  # the forward pass fails: where
                    with pytest.raises(ArithmeticError) as got:
                        module["forward"](**bindings)
                    _same_place(text, forward_error, str(got.value))
                continue
            try:
                value, grads = module["grad"](**bindings)
            except ArithmeticError:
                # The module computes every partial of the derivative program; one undefined
                # where the interpreter's reverse pass skips it (a gradient 0 there: relu at
                # 0 reading sqrt(0)) fails in both.
                assert _derivative_program_fails(graph, bindings), (target, text, bindings)
                continue
            assert _close(value, expected.value), (target, text, bindings)
            for n in used:
                assert _close(grads[n], expected.gradients[n]), (target, text, bindings, n)
            named = module["forward"](**bindings)
            assert _close(named[graph.display_name(graph.output)], expected.value)
            for _ in range(2):  # the library: the interpreter, then the compiled module
                library = cg.grad(graph, bindings)
                assert _close(library.value, expected.value), (text, bindings)
                for n in used:
                    assert _close(library.gradients[n], expected.gradients[n]), (text, n)


def test_the_branch_not_taken_is_never_computed_forward_or_backward():
    # log(x) and its derivative 1/x at x = -1 and x = 0 would fail: the module never runs them.
    graph = parse("input x = 2\ny = log(x) if x > 0 else 0")
    for target in ("python", "numpy"):
        module = _load(compile_module(graph, target))
        assert module["grad"](x=-1.0) == (0.0, {"x": 0.0})
        assert module["grad"](x=0.0) == (0.0, {"x": 0.0})
        value, grads = module["grad"](x=2.0)
        assert value == math.log(2.0) and grads["x"] == 0.5
        source = compile_module(graph, target)
        assert "if " in source.split("def grad", 1)[1].split("def _", 1)[0]


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_a_statement_that_fails_first_is_the_error_though_a_branch_stops_before_it_is_checked(
    target,
):
    """The interpreter stops at the first statement that fails (log(x) on line 1). NumPy's
    forward checks a named value at its end, and the branch taken stops where it is made:
    the checked copy runs again on that error and names line 1, not the branch's line 3."""
    text = "t0 = log(x)\nt1 = x\nout = t1 if x > 0 else log(y)"
    module = _load(compile_module(parse(text), target))
    for fn in ("forward", "grad"):
        with pytest.raises(ArithmeticError, match=r"^line 1: log\(x\)"):
            module[fn](x=-2.0, y=-2.0)


@pytest.mark.parametrize("target", ["python", "numpy"])
@pytest.mark.parametrize(
    "text",
    [
        "y = sin(x) * sqrt(where(1, 2, x)) if x > 0 else -x",  # sqrt's gradient: masked
        "u = where(1, 2, x)\ny = sin(x) * (u * exp(u)) if x > 0 else -x",
    ],
)
def test_a_gradient_no_result_reads_is_not_computed_outside_its_branch(text, target):
    """A branch's gradient read twice (by a mask, or by two partials) whose path to the
    input folds away (where(1, ...) passes x nothing) is no statement of the derivative
    program: such a statement ran in any case and read sin(x), which only the branch taken
    computes (UnboundLocalError where x <= 0)."""
    graph = parse(text)
    module = _load(compile_module(graph, target))
    for x in (-1.0, 1.0):
        want = _interpreted(graph, {"x": x})
        value, grads = module["grad"](x=x)
        assert _close(value, want.value) and _close(grads["x"], want.gradients["x"])


def test_an_overflow_before_an_error_is_named_after_it_as_the_interpreter_names_it():
    """`x * 1e308` overflows silently at 10, and `cos(inf)` then raises: the interpreter
    names cos (it finds a value that is not finite at the end), and so does a Python
    module's forward, whose error comes first too."""
    text = "a = x * 1e308\ny = cos(a)"
    with pytest.raises(CgraphError, match="cos"):
        cg.evaluate(text, {"x": 10.0})
    with pytest.raises(ArithmeticError, match=r"^line 2: cos\(a\)"):
        _load(compile_module(parse(text)))["forward"](x=10.0)


def test_huber_compiles_and_matches_grad_on_both_sides_of_its_kink(cli, tmp_path):
    out = tmp_path / "huber.py"
    made = cli("compile", "sample:huber", "-o", str(out))
    assert made.exit_code == 0, made.stderr
    module = _load(out.read_text())
    for x in (-3.0, -0.5, 0.0, 0.5, 3.0):
        expected = cli("grad", "sample:huber", f"e={x}", "--format", "json")
        assert expected.exit_code == 0, expected.stderr
        answer = json.loads(expected.stdout)
        value, grads = module["grad"](**{**module["DEFAULTS"], "e": x})
        assert _close(value, answer["value"]), (x, value, answer)
        for name, g in grads.items():
            assert _close(g, answer["gradients"][name]), (x, name)


def test_nested_and_shared_branches_compile_to_nested_tests():
    # sqrt(x) is read in two branches of two conditionals (one merged node once optimized):
    # computed where either is taken, never at x < 0.
    text = "y = (sqrt(x) if x > 1 else (sqrt(x) * 2 if x > 0 else -x)) + (log(x) if x > 2 else 0)"
    graph = parse(text)
    source = compile_module(graph, "python")
    assert "if t > 0.0 or" not in source  # (tests read as conditions: see below)
    module = _load(source)
    for x in (-1.0, 0.0, 0.5, 1.5, 3.0):
        expected = _interpreted(graph, {"x": x})
        value, grads = module["grad"](x=x)
        assert _close(value, expected.value) and _close(grads["x"], expected.gradients["x"])


def test_a_tensor_program_with_a_conditional_compiles_for_numpy():
    text = "input W = [[1, 2], [3, 4]]\ninput v = [1, -1]\ny = sum(W @ v) if sum(v) > 0 else sum(log(W) * v)"
    graph = parse(text)
    module = _load(compile_module(graph, "numpy"))
    for v in ([1.0, -1.0], [2.0, 1.0]):
        bindings = {"W": np.array([[1.0, 2.0], [3.0, 4.0]]), "v": np.array(v)}
        expected = _interpreted(graph, bindings)
        value, grads = module["grad"](**bindings)
        assert _close(value, expected.value)
        np.testing.assert_allclose(grads["W"], expected.gradients["W"], rtol=1e-12)
        np.testing.assert_allclose(grads["v"], expected.gradients["v"], rtol=1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    branching_programs(),
    st.lists(st.sampled_from(_COLLIDING), min_size=3, max_size=3, unique=True),
    st.lists(st.tuples(*[st.sampled_from(_SPECIAL)] * 3), min_size=1, max_size=3),
)
def test_colliding_names_and_special_values_give_the_interpreters_answer(text, names, points):
    from cgraph_cli.core.errors import ParseError

    text = _renamed(text, names)
    try:
        graph = parse(text)
    except ParseError:  # a name the language keeps for itself where this program puts it
        return
    for target in ("python", "numpy"):
        module = _load(compile_module(graph, target))
        for point in points:
            bindings = {n: v for n, v in zip(names, point) if n in graph.inputs}
            try:
                expected = _interpreted(graph, bindings)
            except CgraphError:
                with pytest.raises(ArithmeticError):
                    module["grad"](**bindings)
                continue
            try:
                value, grads = module["grad"](**bindings)
            except ArithmeticError:  # a partial the interpreter's reverse pass skips (0 there)
                assert _derivative_program_fails(graph, bindings), (target, text, bindings)
                continue
            assert _close(value, expected.value), (target, text, bindings)
            for n in bindings:
                assert _close(grads[n], expected.gradients[n]), (target, text, bindings, n)
