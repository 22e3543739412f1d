"""Compiled modules against the interpreter: values and gradients on random programs (plain
Python and NumPy targets), modules that run without cgraph, domain errors placed on the
program's line, and program text that stays out of the code."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import INPUTS, TENSOR_SHAPES, points, programs, tensor_expressions
from test_properties import _evaluate

from cgraph_cli import DomainError, EvalError, UsageError, parse, validate
from cgraph_cli import grad as cg_grad
from cgraph_cli.passes.derivatives import derivative_program
from cgraph_cli.run.compile import compile_module
from cgraph_cli.run.evaluate import forward
from cgraph_cli.run.vjp import vjp

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def load(source: str) -> dict:
    namespace: dict = {"__file__": "<compiled>"}
    exec(compile(source, "<compiled>", "exec"), namespace)
    return namespace


def _close(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=1e-12, atol=1e-12))


@PROPERTY
@given(programs(), points)
def test_compiled_python_matches_the_interpreter(program, point):
    graph = validate(parse(program))
    assume(graph.inputs)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None)
    values, adjoints = done
    module = load(compile_module(graph))
    named = module["forward"](**bindings)
    for name, node in graph.named_nodes().items():
        assert _close(named[name], values[node]), name
    try:
        value, grads = module["grad"](**bindings)
    except ArithmeticError:
        # The module runs the derivative program, which computes every partial: one undefined
        # where the interpreter's reverse pass skips it (its gradient is 0 there, as at
        # xlogy(y, x < 0)) is an error in both the module and the derivative program.
        derived = derivative_program(graph).graph
        with pytest.raises(DomainError):
            forward(derived, bindings)
        return
    assert _close(value, values[graph.output])
    for name, node in graph.inputs.items():
        assert _close(grads[name], adjoints[node]), name


@PROPERTY
@given(tensor_expressions(max_leaves=5), st.integers(0, 10**6))
def test_compiled_numpy_matches_the_interpreter(expression, seed):
    graph = validate(parse(f"y = sum({expression})"))
    rng = np.random.default_rng(seed)
    bindings = {n: rng.uniform(-2, 2, TENSOR_SHAPES[n]) for n in graph.inputs}
    bindings = {n: float(v) if np.ndim(v) == 0 else v for n, v in bindings.items()}
    try:
        values = forward(graph, bindings)
        adjoints = vjp(graph, values)
    except EvalError:
        assume(False)
    module = load(compile_module(graph, "numpy", bindings=bindings))
    value, grads = module["grad"](**bindings)
    assert _close(value, values[graph.output])
    for name, node in graph.inputs.items():
        assert np.shape(grads[name]) == np.shape(adjoints[node])
        assert _close(grads[name], adjoints[node]), name


def test_the_module_runs_without_cgraph(tmp_path):
    (tmp_path / "neuron_grad.py").write_text(
        compile_module(parse(_sample("neuron"), "neuron.cg")), encoding="utf-8"
    )
    code = (
        "import sys; sys.modules['cgraph_cli'] = None\n"  # importing cgraph would fail
        "import neuron_grad as m\n"
        "value, grads = m.grad(**m.DEFAULTS)\n"
        "print(round(value, 4), round(grads['w1'], 4), m.INPUTS)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == "0.7071 1.0 ('x1', 'x2', 'w1', 'w2', 'b')"


def test_a_domain_error_names_the_program_line():
    module = load(compile_module(parse("input x = 2\np = x + 1\ny = log(x) * p")))
    with pytest.raises(ArithmeticError, match=r"line 3: log\(x\)"):
        module["forward"](x=-1)
    with pytest.raises(ArithmeticError, match=r"line 3: log\(x\)"):
        module["grad"](x=0.0)


def test_an_overflow_is_a_domain_error_too():
    module = load(compile_module(parse("y = x * x * x")))
    with pytest.raises(ArithmeticError, match="not finite"):
        module["forward"](x=1e200)


def test_a_tensor_module_names_the_node_that_is_not_finite():
    # Shapes known: the module sums its results as they are written, and looks for the one
    # that is not finite only when that sum is not, running the call again to name the node
    # that made it, as the interpreter does (the derivative of sqrt at 0 is sqrt's).
    source = compile_module(parse("y = sum(sqrt(x))"), "numpy", bindings={"x": [1.0, 4.0]})
    assert "        _total = value + " in source
    module = load(source)
    assert module["grad"](x=np.array([1.0, 4.0]))[0] == 3.0
    with pytest.raises(ArithmeticError, match=r"^line 1: sqrt\(x\): the value is not finite$"):
        module["grad"](x=np.array([0.0, 4.0]))  # the gradient 1 / (2 sqrt(0))
    module = load(compile_module(parse("y = sum(x)"), "numpy", bindings={"x": [1.0, 4.0]}))
    with pytest.raises(ArithmeticError, match=r"^line 1: sum\(x\): the value is not finite$"):
        module["forward"](x=np.array([1e308, 1e308]))
    with pytest.raises(ArithmeticError, match=r"^line 1: sum\(x\): the value is not finite$"):
        module["grad"](x=np.array([1e308, 1e308]))


@pytest.mark.parametrize("target", ["python", "numpy"])
@pytest.mark.parametrize(
    "program, x, where",
    [
        ("y = where(x > 0, sqrt(x), 0)", -1.0, "line 1: sqrt(x)"),  # the README's own
        ("y = 1 / (x * 1e308)", 10.0, "line 1: x * 1e308"),  # an overflow 1 / inf hides
        ("y = tanh(exp(x))", 1000.0, "line 1: exp(x)"),
        ("y = pow(1, x * 1e308)", -10.0, "line 1: x * 1e308"),
    ],
)
def test_a_module_stops_where_the_interpreter_does_not_at_a_value_that_hides_it(
    target, program, x, where
):
    from cgraph_cli import evaluate
    from cgraph_cli.core.errors import EvalError

    with pytest.raises(EvalError):
        evaluate(program, {"x": x})
    module = load(compile_module(parse(program), target))
    for fn in ("forward", "grad"):
        with pytest.raises(ArithmeticError, match=f"^{re.escape(where)}"):
            module[fn](x=x)


@pytest.mark.parametrize("n", [3, 5000])  # results joined into one sum, or summed alone
def test_a_result_that_is_not_finite_is_found_among_many(n):
    x = np.linspace(1.0, 2.0, n)
    source = compile_module(parse("y = sum(sqrt(x) * w)"), "numpy", bindings={"x": x, "w": 2.0})
    module = load(source)
    assert module["grad"](x=x, w=2.0)[1]["x"].shape == (n,)
    x[n // 2] = 0.0
    with pytest.raises(ArithmeticError, match=r"^line 1: sqrt\(x\): the value is not finite$"):
        module["grad"](x=x, w=2.0)


def test_results_whose_sum_overflows_are_finite_and_warn_of_nothing():
    module = load(compile_module(parse("y = sum(x * 0.25)"), "numpy", bindings={"x": [1, 2]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert module["forward"](x=np.array([1e308, 1e308]))["y"] == 5e307


def test_a_module_leaves_the_numpy_error_state_as_it_found_it():
    module = load(compile_module(parse("y = sum(sqrt(x))"), "numpy", bindings={"x": [1.0, 4.0]}))
    with np.errstate(all="raise"):
        before = np.geterr()
        assert module["grad"](x=[1.0, 4.0])[0] == 3.0
        with pytest.raises(ArithmeticError, match="not finite"):
            module["grad"](x=[0.0, 4.0])
        assert np.geterr() == before


@pytest.mark.parametrize(
    "given", [[1, 4], np.array([1, 4]), np.array([1.0, 4.0], dtype=np.float32), (1.0, 4.0)]
)
def test_inputs_that_are_not_arrays_of_floats_are_converted(given):
    program = "input w = 2\ny = sum(sqrt(x)) * w"
    module = load(compile_module(parse(program), "numpy", bindings={"x": [1.0, 4.0]}))
    value, grads = module["grad"](x=given, w=np.array(2))
    assert value.__class__ is float and value == 6.0
    assert grads["x"].dtype == np.float64 and grads["x"].tolist() == [1.0, 0.5]
    assert grads["w"].__class__ is float and grads["w"] == 3.0
    named = module["forward"](x=given, w=2)
    assert named["w"].__class__ is float and named["x"].dtype == np.float64


def test_program_text_stays_in_comments():
    text = 'input x = 2\n# """\n# import os; os.system("echo hi")\ny = x * 2  # \\\n'
    source = compile_module(parse(text))
    assert "os.system" not in source.replace('#     # import os; os.system("echo hi")', "")
    assert load(source)["forward"](x=3)["y"] == 6.0


def test_names_that_python_reserves_are_renamed():
    graph = parse("input lambda = 1\nabs = lambda * 2\nmath = abs + 1\ny = max(math, 3)")
    named = load(compile_module(graph))["forward"](**{"lambda": 5.0})
    assert named["math"] == 11.0 and named["y"] == 11.0


def test_wrt_and_of_choose_the_gradients():
    graph = parse("p = x * y\nq = p + z\ny2 = q * q")
    module = load(compile_module(graph, of="q", wrt=["x"]))
    value, grads = module["grad"](x=2, y=3, z=1)
    assert (value, grads) == (7.0, {"x": 3.0})


def test_tensor_programs_need_the_numpy_target():
    with pytest.raises(UsageError, match="--target numpy"):
        compile_module(parse("y = sum(v)"), bindings={"v": np.ones(3)})


def test_cli_writes_a_module_that_imports(cli, tmp_path):
    target = tmp_path / "mlp_grad.py"
    result = cli("compile", "sample:mlp", "--target", "numpy", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    module = load(target.read_text())
    value, grads = module["grad"](**module["DEFAULTS"])
    expected = cli("grad", "sample:mlp", "--format", "json")
    import json

    document = json.loads(expected.stdout)
    assert math.isclose(value, document["value"], rel_tol=1e-12)
    assert np.allclose(grads["W1"], document["gradients"]["W1"], rtol=1e-12)


def test_cli_python_target_on_a_tensor_program_is_a_usage_error(cli):
    result = cli("compile", "sample:mlp")
    assert result.exit_code == 2
    assert "--target numpy" in result.stderr


def _sample(name: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parent.parent / "samples" / f"{name}.cg").read_text()


@pytest.mark.parametrize("sample", ["functions", "neuron", "logistic", "rosenbrock", "fanout"])
def test_a_program_of_numbers_compiled_for_numpy_runs_many_rows_at_once(sample):
    graph = parse(_sample(sample))
    module = load(compile_module(graph, "numpy"))
    rng = np.random.default_rng(7)
    rows = {n: rng.uniform(0.3, 1.5, 6) for n in graph.inputs}
    value, grads = module["grad"](**rows)
    assert np.shape(value) == (6,)
    for k in range(6):
        one = {n: float(v[k]) for n, v in rows.items()}
        values = forward(graph, one)
        adjoints = vjp(graph, values)
        assert _close(value[k], values[graph.output])
        for name, node in graph.inputs.items():
            assert _close(grads[name][k], adjoints[node]), (name, k)


def test_a_temporary_never_takes_an_input_name():
    graph = parse("loss = t * log(x) + t1 * 2 + t_1")
    module = load(compile_module(graph))
    assert module["forward"](t=2, x=math.e, t1=1, t_1=0.5)["loss"] == pytest.approx(4.5)


def test_a_tensor_output_compiles_its_forward_pass_and_grad_says_why_not():
    graph = parse("input W = [[1, 2], [3, 4]], x = [1, 1]\ny = W @ x")
    module = load(compile_module(graph, "numpy"))
    assert module["forward"](**module["DEFAULTS"])["y"].tolist() == [3.0, 7.0]
    with pytest.raises(TypeError, match=r"y is a \(2,\) tensor"):
        module["grad"](**module["DEFAULTS"])


def test_inputs_named_as_python_or_the_module_names_things_are_taken_by_keyword():
    graph = parse("input math = 2, out = 3, lambda = 1\ny = math * out + lambda")
    module = load(compile_module(graph))
    assert module["INPUTS"] == ("math", "out", "lambda")
    assert module["grad"](**module["DEFAULTS"]) == (7.0, {"math": 3.0, "out": 2.0, "lambda": 1.0})
    with pytest.raises(TypeError, match="missing inputs"):
        module["forward"](math=1.0)


def test_the_output_may_be_an_input_itself():
    module = load(compile_module(parse("y = x * 2; x")))
    assert module["grad"](x=3) == (3.0, {"x": 1.0})


def test_control_characters_of_the_program_stay_escaped_in_comments():
    source = compile_module(parse("y = x * 2 # nul \x00 here\n"))
    assert "\x00" not in source
    assert load(source)["forward"](x=1)["y"] == 2.0


@PROPERTY
@given(programs(), st.lists(points, min_size=2, max_size=5))
def test_a_numpy_module_takes_rows_of_numbers(program, rows):
    # Every input a column of rows at once: each row's values and gradients, as one call per
    # row gives them (rows where a call raises are left out of the comparison).
    graph = validate(parse(program))
    assume(graph.inputs)
    module = load(compile_module(graph, "numpy"))
    names = [n for n in INPUTS if n in graph.inputs]
    columns = {n: np.array([p[k] for p in rows]) for k, n in enumerate(names)}
    try:
        named = module["forward"](**columns)
        value, grads = module["grad"](**columns)
    except ArithmeticError:
        assume(False)
    for r in range(len(rows)):
        one = {n: float(columns[n][r]) for n in names}
        row_value, row_grads = module["grad"](**one)
        assert _close(value[r], row_value)
        for name in graph.inputs:
            assert np.shape(grads[name]) == (len(rows),)
            assert _close(grads[name][r], row_grads[name]), name
        for name, v in module["forward"](**one).items():
            assert _close(named[name][r], v), name


def test_a_tensor_module_takes_rows_of_tensors():
    program = "input W = [[1, 2], [3, 4]]\ninput b = 0.5\ny = sum(tanh(W @ x) * b)"
    module = load(compile_module(parse(program), "numpy", bindings={"x": [0.0, 0.0]}))
    assert module["SHAPES"] == {"W": (2, 2), "x": (2,), "b": ()}
    xs = np.array([[0.1, 0.2], [0.3, -0.4], [1.0, 0.5]])
    value, grads = module["grad"](W=[[1, 2], [3, 4]], x=xs, b=0.5)
    assert value.shape == (3,) and grads["W"].shape == (3, 2, 2) and grads["x"].shape == (3, 2)
    for r, x in enumerate(xs):
        v, g = module["grad"](W=[[1, 2], [3, 4]], x=x, b=0.5)
        assert (
            _close(value[r], v) and _close(grads["W"][r], g["W"]) and _close(grads["b"][r], g["b"])
        )
    assert module["forward"](W=[[1, 2], [3, 4]], x=xs, b=0.5)["y"].shape == (3,)
    with pytest.raises(ValueError, match="batch axis"):
        module["grad"](W=np.ones((2, 2, 2)), x=xs, b=0.5)  # 2 rows of W, 3 of x


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_a_module_run_through_exec_without_a_file_still_raises_its_domain_error(target):
    namespace: dict = {}
    exec(compile_module(parse("y = sqrt(x) * 2"), target), namespace)  # no __file__
    with pytest.raises(namespace["DomainError"]):
        namespace["forward"](x=-1.0)


@PROPERTY
@given(programs(max_statements=4, conditions=True), points)
def test_compiled_python_gradients_are_the_interpreters_to_the_bit(program, point):
    """The python target writes its reverse pass from the float rules the interpreter's
    reverse loop runs, adding the adjoints up in the same order: the same floats, not close
    ones; and it answers wherever the interpreter does (where a partial is not finite at a
    node whose gradient is 0, the checked copy, which skips that node as the interpreter
    does, gives the answer)."""
    graph = validate(parse(program))
    assume(graph.inputs)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None)
    values, adjoints = done
    value, grads = load(compile_module(graph))["grad"](**bindings)
    assert value == values[graph.output]
    assert grads == {name: adjoints[node] for name, node in graph.inputs.items()}, program


def test_an_adjoint_written_into_its_readers_line_still_stops_at_its_own_node():
    """In `g * w * cos(x)` the adjoint of sin(x), `w * w`, is written into the line of sin's
    partial; where it overflows the module names the node that made it, sin(x) * w, as the
    interpreter does (the copy that checks every value writes each adjoint on its own)."""
    program = "q = sin(x) * w\ny = q * w"
    source = compile_module(parse(program))
    assert "w * w * _math_cos(x)  # line 1: sin(x)" in source
    assert "'  #' ' line '" in source and '"line \' in line:"' not in source
    with pytest.raises(EvalError, match=r"the gradient through sin\(x\) \* w overflows"):
        cg_grad(program, {"x": 1e-250, "w": 1e200})
    with pytest.raises(ArithmeticError, match=r"^line 1: sin\(x\) \* w: the value is not finite$"):
        load(source)["grad"](x=1e-250, w=1e200)


def test_an_adjoints_first_line_joins_its_second_where_nothing_reads_it_between():
    """The sine chain's adjoint of v is one line, `g_1 = g * b + g * a * _math_cos(v)` (the
    same floats as `g_1 = g * b` then `g_1 += ...`); where the adjoint is passed on unchanged
    (n = p + q gives q the adjoint of n) and p's line reads it before q's next contribution,
    its first line stays where it was."""
    chain = "input x = 0.5, a = 1, b = 0.001\nv = x\n" + "v = sin(v) * a + b * v\n" * 3
    source = compile_module(parse(chain))
    assert "g_1 = g * b + g * a * _math_cos(v)  # line 4: sin(v)" in source
    program = "q = sin(x)\nm = q * y\np = x * y\nn = p + q\nout = n * x * y + m\n"
    source = compile_module(parse(program))
    assert "g += y  # line 2: q * y" in source
    for text in (chain, program):
        graph = parse(text)
        bindings = {name: 0.25 + k / 7 for k, name in enumerate(graph.inputs)}
        want = cg_grad(graph, bindings)
        value, grads = load(compile_module(graph))["grad"](**bindings)
        assert value == want.value and grads == want.gradients


ZERO_GRADIENT = [
    "y = where(x, sqrt(x), x)",
    "y = relu(x) * sqrt(x) + x",
    "y = relu(x) * pow(x, 0.5) + x",
    "y = relu(x) * (sqrt(x) if x >= 0 else x) + x",  # (python: the derivative program's code)
    "y = min(x, 0) * sqrt(x) + x",
]


@pytest.mark.parametrize("target", ["python", "numpy"])
@pytest.mark.parametrize("program", ZERO_GRADIENT)
def test_a_partial_that_is_not_finite_where_the_gradient_is_0_passes_nothing_back(program, target):
    """The interpreter skips a node whose gradient is 0: sqrt's partial at 0 (1 / 0) is
    never computed. The module's fast lines compute it and raise (or give nan); its checked
    copy passes nothing back there, as the interpreter does, and its answer is the
    module's. Where the gradient is not 0 the partial's error is the module's too."""
    want = cg_grad(program, {"x": 0.0})
    module = load(compile_module(parse(program), target))
    assert module["grad"](x=0.0) == (want.value, want.gradients)
    if "else" in program:  # x < 0 takes the other branch
        assert module["grad"](x=-1.0) == (-1.0, {"x": 1.0})
    else:
        with pytest.raises(ArithmeticError, match=r"^line 1: (sqrt|pow)\(x"):
            module["grad"](x=-1.0)
    named = program.replace("x", "_rerun")  # the module's own name, taken by the program
    renamed = load(compile_module(parse(named), target))["grad"](_rerun=0.0)
    assert renamed == (want.value, {"_rerun": 1.0})


def test_a_zero_gradient_passes_nothing_back_element_by_element():
    """NumPy: where the gradient is 0 at some elements only, those get nothing through the
    partial that is not finite there, the others their gradient, as the interpreter's."""
    program = "y = sum(relu(x) * sqrt(x) + x)"
    x = np.array([0.0, 4.0, 0.0, 9.0])
    want = cg_grad(program, {"x": x})
    value, grads = load(compile_module(parse(program), "numpy", bindings={"x": x}))["grad"](x=x)
    assert value == want.value and grads["x"].tolist() == want.gradients["x"].tolist()
    assert grads["x"].tolist() == [1.0, 4.0, 1.0, 5.5]


def test_a_mask_reading_a_gradient_makes_no_statement_of_it():
    """The fast lines read a masked contribution's gradient once (the mask is the checked
    copy's alone): it is not named as a gradient read twice is (a statement more, kept alive
    to the end: about 10% slower on a chain of 100 such lines)."""
    program = "v = x\nv = 0.9 * relu(v) * sqrt(abs(tanh(v))) + 0.01 * log(1 + v * v)\ny = sum(v)"
    x = np.array([0.0, 0.5, -1.0])
    source = compile_module(parse(program), "numpy", bindings={"x": x})
    fast = source.split("def grad(")[1].split("def _finite")[0]
    assert set(re.findall(r"\bdy_d\w+", fast)) == {"dy_dx"}
    want = cg_grad(program, {"x": x})
    value, grads = load(source)["grad"](x=x)
    assert _close(value, want.value) and _close(grads["x"], want.gradients["x"])


@pytest.mark.parametrize(
    ("program", "bindings"),
    [
        ("y = relu(x) * xlogy(x, x) + x", {"x": 0.0}),  # xlogy's partial in x: x / x
        ("y = relu(w) * xlogy(w, w) + x", {"x": np.array([0.0, 4.0]), "w": 0.0}),  # rows
    ],
)
def test_a_masked_division_of_numbers_passes_nothing_back_where_the_gradient_is_0(
    program, bindings
):
    """NumPy takes a number as a Python float, whose ``0 / 0`` raises where an array's
    is nan: where relu's gradient is 0, xlogy's partial ``x / x`` at 0 must pass nothing
    back, in the checked copy too, as the interpreter (row by row) does."""
    module = load(compile_module(parse(program), "numpy"))
    value, grads = module["grad"](**bindings)
    rows = len(bindings["x"]) if np.ndim(bindings["x"]) else None
    for k in range(rows or 1):
        row = {n: float(v[k]) if np.ndim(v) else v for n, v in bindings.items()}
        want = cg_grad(program, row)
        assert (np.ravel(value)[k], np.ravel(grads["x"])[k]) == (want.value, want.gradients["x"])
    assert np.ravel(grads["x"])[0] == 1.0


def test_a_partial_that_is_not_finite_where_the_gradient_is_not_0_stops_at_its_node():
    """The mask passes nothing back only where the gradient is 0: sqrt's slope at 0 times a
    gradient of 2 is the error the interpreter gives, at sqrt's line."""
    program = "y = 2 * sqrt(x) + x"
    with pytest.raises(DomainError):
        cg_grad(program, {"x": 0.0})
    for target in ("python", "numpy"):
        with pytest.raises(ArithmeticError, match=r"^line 1: sqrt\(x\)"):
            load(compile_module(parse(program), target))["grad"](x=0.0)
    masked = "y = 2 * (sqrt(x) if x >= 0 else x) + x"  # python: the derivative program's
    with pytest.raises(ArithmeticError, match=r"^line 1: sqrt\(x\)"):
        load(compile_module(parse(masked), "python"))["grad"](x=0.0)


def test_fast_lines_take_a_masked_contribution_as_it_is():
    """NumPy's fast lines compute the contribution with no mask (no line at all where its
    variable is the contribution's); the checked copy masks it where the adjoint is 0.
    Python's derivative program computes it only where the adjoint is not 0 (an if)."""
    program = "y = relu(x) * sqrt(x) + x"
    numpy_source = compile_module(parse(program), "numpy")
    fast = numpy_source.split("def grad(")[1].split("def _finite")[0]
    assert "np.where(t1, " not in fast and " = t  #" not in fast
    checked = load(numpy_source)["_CHECKED_SOURCE"]
    assert re.search(r"= np\.where\(t1, (\w+), 0\.0\); _check\(\1\)  # line 1: sqrt\(x\)", checked)
    python_source = compile_module(parse("y = relu(x) * (sqrt(x) if x >= 0 else x) + x"))
    assert re.search(r"\n        if t3 and (\w+):\n            \w+ = 2\.0 \* t2", python_source)


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_an_input_named_like_the_caught_error_is_still_the_input_when_grad_runs_again(target):
    """grad's fast lines catch their error under a name of the module's own: an input `e`
    (the name an except clause often binds) is still the input the checked copy runs on,
    not the error (float() of a ZeroDivisionError was a TypeError)."""
    program = "y = relu(e) * sqrt(e) + e"
    module = load(compile_module(parse(program), target))
    if target == "python":  # sqrt's partial at 0 is skipped, as the interpreter skips it
        want = cg_grad(program, {"e": 0.0})
        assert module["grad"](e=0.0) == (want.value, want.gradients)
    with pytest.raises(ArithmeticError, match=r"^line 1: sqrt\(e\)"):
        module["grad"](e=-1.0)


def test_forward_lines_are_written_at_the_level_of_the_programs_expressions():
    """A temporary that one line reads, made by + - * or negation, is written into that line
    (one line a statement, as a person writes it); a value of it that is not finite is still
    found at its own node, by the checked copy, which keeps one line a node."""
    source = compile_module(parse("y = (x * w) + sin(x) * 2"))
    assert "y = (x * w) + (t_1 * 2.0)  # line 1: (x * w) + sin(x) * 2" in source
    module = load(source)
    assert module["grad"](x=0.5, w=3.0)[0] == (0.5 * 3.0) + math.sin(0.5) * 2
    for fn in ("forward", "grad"):
        with pytest.raises(ArithmeticError, match=r"^line 1: x \* w: the value is not finite$"):
            module[fn](x=1e200, w=1e200)


def test_a_program_of_numbers_compiles_without_a_derivative_graph(monkeypatch):
    """The python target writes the reverse pass from the float rules: no derivative program
    through the graph builder's shape inference, no optimizer (they made the compile step
    110-173 us a node)."""
    import cgraph_cli.passes.derivatives as derivatives
    import cgraph_cli.passes.optimize as optimize

    def refused(*args, **kwargs):
        raise AssertionError("a derivative graph was built")

    monkeypatch.setattr(derivatives, "derivative_program", refused)
    monkeypatch.setattr(optimize, "optimize", refused)
    module = load(compile_module(parse("p = sin(x) * y; q = p * p + exp(y); q"), wrt=["y"]))
    value, grads = module["grad"](x=0.5, y=2.0)
    p = math.sin(0.5) * 2.0
    assert list(grads) == ["y"] and math.isclose(grads["y"], 2 * p * math.sin(0.5) + math.exp(2))
    assert value == p * p + math.exp(2.0)


@pytest.mark.parametrize(
    "program, where",
    [
        ("y = sum(relu(x * 1e308) * w)", "line 1: x * 1e308"),  # relu turns -inf into 0
        ("y = sum(where(x > 0, x * 1e308, x) * w)", "line 1: x * 1e308"),
        ("y = sum(relu(x @ W) * w)", "line 1: x @ W"),
    ],
)
def test_tensor_modules_name_a_hidden_value_that_is_not_finite_as_the_interpreter_does(
    program, where
):
    # A value an op may hide (relu's argument, where's branches) is summed with the results
    # at the end of the call rather than tested where it is made: the checked copy, run when
    # that sum is not finite, names its node.
    from cgraph_cli import evaluate

    x = np.array([-10.0, 2.0])
    bindings = {"x": x, "w": np.array([1.0, 1e308]), "W": np.array([[1e308, 1.0], [0.0, 1.0]])}
    used = {k: v for k, v in bindings.items() if k in parse(program).inputs}
    with pytest.raises(EvalError):
        evaluate(program, used)
    module = load(compile_module(parse(program), "numpy", bindings=used))
    for fn in ("forward", "grad"):
        with pytest.raises(ArithmeticError, match=f"^{re.escape(where)}: the value is not finite"):
            module[fn](**used)
        with pytest.raises(ArithmeticError, match=f"^{re.escape(where)}: the value is not finite"):
            module["_again"](module[fn], {k: v for k, v in used.items()})  # (on an error)
    fine = {k: np.abs(v) / 1e308 + 0.5 for k, v in used.items()}
    value, grads = module["grad"](**fine)
    expected = cg_grad(program, fine)
    assert _close(value, expected.value)
    assert all(_close(grads[k], expected.gradients[k]) for k in fine)


def test_a_tensor_module_refuses_inputs_of_other_shapes_than_it_was_compiled_for():
    # Sizes are folded into the code (a mean divides by the count): other shapes computed
    # the wrong value (twice the loss of 8 rows given to a module compiled for 4).
    module = load(compile_module(parse("y = mean(x * x)"), "numpy", bindings={"x": [1.0] * 4}))
    assert module["grad"](x=np.full(4, 2.0))[0] == 4.0
    assert module["grad"](x=[2.0, 2.0, 2.0, 2.0])[0] == 4.0  # a list of that shape: as before
    for other in (np.full(8, 2.0), 2.0, [2.0, 2.0]):
        for fn in ("forward", "grad"):
            with pytest.raises(ValueError, match=r"^input x has shape \(\d*,?\), but this module"):
                module[fn](x=other)
    rows = module["grad"](x=np.full((3, 4), 2.0))  # a leading batch axis: a row at a time
    assert rows[0].tolist() == [4.0, 4.0, 4.0]


@pytest.mark.parametrize(
    ("program", "masks"),
    [
        ("y = sin(x) * x + exp(x) + tanh(x) * relu(x)", 1),  # tanh's 1 - tanh^2: may overflow
        ("y = sin(x) * x + exp(x) + abs(x) * max(x, 0)", 0),
        ("y = z * (sqrt(x) + log(x) + 1 / x)", 3),
        ("y = sqrt(x) + log(x) + 1 / x", 0),  # a gradient of 1: never 0
    ],
)
def test_only_contributions_whose_partial_may_not_be_finite_are_masked(program, masks):
    """A partial made of forward values by ops finite on finite arguments (cos, a select of
    numbers, the forward value itself) is finite wherever the interpreter computes it, and
    a gradient that is a number other than 0 is never 0: no mask. The derivative program
    printed by `cgraph derive` has none at all."""
    from cgraph_cli.core.ir import MASK

    masked = derivative_program(parse(program), mask=MASK).graph
    assert list(masked.params.values()).count(MASK) == masks
    assert MASK not in derivative_program(parse(program)).graph.params.values()
