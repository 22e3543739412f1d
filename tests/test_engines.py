"""Every engine gives the interpreter's answer: random programs whose inputs are named to collide
with Python (keywords, builtins), with the compiled module's own names (np, math, helpers such
as relu and np_softmax, its locals) and with each other (x and x_), run on rows of special
values through the compiled Python module, the rows engine (a NumPy module over many rows) and
training's objective, against the interpreter: the same values and gradients to rounding, and a
row fails in one exactly where it fails in the other, at the same node."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import INPUTS, TENSOR_SHAPES, programs, tensor_expressions

import cgraph_cli as cg
from cgraph_cli import parse, validate
from cgraph_cli.core.errors import BindingError, DomainError, EvalError
from cgraph_cli.jobs.rows import run_rows
from cgraph_cli.passes.derivatives import derivative_program
from cgraph_cli.run.compile import compile_module
from cgraph_cli.run.evaluate import forward
from cgraph_cli.run.scan_code import compile_module as any_module
from cgraph_cli.run.vjp import vjp

BUDGET = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: Names an input may take: Python's keywords and builtins, the module's globals, helpers and
#: locals, a name and its escaped spelling, and letters Python would fold or refuse.
COLLIDING = [
    "lambda", "lambda_", "lambda__1", "math", "math_", "np", "relu", "relu_", "sigmoid",
    "np_softmax", "float", "len", "out", "grads", "value", "inputs", "rows", "_acc", "_arg",
    "DomainError", "INPUTS", "forward", "grad", "t", "t_1", "x", "x_", "v_x_bf0", "x\u0bf0",
    "α", "class", "match", "_",
]  # fmt: skip

#: Values that sit at the edges: zeros of both signs, subnormals, the largest floats, where
#: exp and sigmoid round or overflow.
SPECIAL = [0.0, -0.0, 5e-324, -2.2e-308, 1e-200, 1e308, -1e308, 37.0, -745.0, 710.0, 0.5, -1.5, 3.0]


def _renamed(program: str, names: list[str]) -> str:
    """The program with its inputs x, y, z renamed (a whole word at a time)."""
    mapping = dict(zip(INPUTS, names))
    return re.sub(r"\b[xyz]\b", lambda m: mapping[m.group()], program)


def _interpret(graph, bindings):
    """The value, the gradients by input name, or the error's message and place."""
    try:
        values = forward(graph, bindings)
    except EvalError as e:
        return None, None, (e.message, e.where())
    try:
        adjoints = vjp(graph, values)
    except EvalError as e:  # the value is there; its gradient is not
        return values[graph.output], None, (e.message, e.where())
    grads = {n: adjoints[i] for n, i in graph.inputs.items()}
    return values[graph.output], grads, None


def _same(a, b) -> bool:
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b)) + 1e-300


@st.composite
def cases(draw):
    program = draw(programs(max_statements=3, conditions=True))
    names = draw(st.lists(st.sampled_from(COLLIDING), min_size=3, max_size=3, unique=True))
    text = _renamed(program, names)
    try:
        graph = validate(parse(text))
    except Exception:  # a name the language keeps for itself where this program puts it
        from hypothesis import assume

        assume(False)
    inputs = list(graph.inputs)
    rows = draw(
        st.lists(st.tuples(*[st.sampled_from(SPECIAL)] * len(inputs)), min_size=1, max_size=6)
    )
    return text, rows


@BUDGET
@given(cases())
def test_the_rows_engine_and_the_python_module_give_the_interpreters_answer(case):
    text, rows = case
    graph = validate(parse(text))
    inputs = list(graph.inputs)
    if not inputs:
        return
    columns = {n: np.array([r[k] for r in rows]) for k, n in enumerate(inputs)}
    first = {n: v[:1] for n, v in columns.items()}
    # Two chunks: from the second on, the engine computes results into the kept columns.
    result = run_rows(graph, [("d.csv", 0, first), ("d.csv", 0, columns)], mode="grad")
    table = result.tables[1]
    module = _load(compile_module(graph))
    for r, row in enumerate(rows):
        bindings = dict(zip(inputs, row))
        value, grads, error = _interpret(graph, bindings)
        cell = table["error"][r]
        if error is not None:
            assert cell is not None, (text, bindings, error)
            assert error[0] in cell and (error[1] is None or error[1] in cell), (cell, error)
            if value is None:
                with pytest.raises(ArithmeticError):
                    module["forward"](**bindings)
            else:
                named = module["forward"](**bindings)
                assert _same(named[graph.display_name(graph.output)], value), (text, bindings)
                with pytest.raises(ArithmeticError):
                    module["grad"](**bindings)
            continue
        assert cell is None, (text, bindings, cell)
        assert _same(table[graph.display_name(graph.output)][r], value), (text, bindings)
        named = module["forward"](**bindings)
        assert _same(named[graph.display_name(graph.output)], value), (text, bindings)
        gradient_columns = list(table)[1:-1]  # the value's, one per input in order, error's
        assert len(gradient_columns) == len(inputs)
        for n, column in zip(inputs, gradient_columns):
            assert _same(table[column][r], grads[n]), (text, bindings, n)
        try:
            got_value, got_grads = module["grad"](**bindings)
        except ArithmeticError:
            # The module computes every partial of the derivative program; one undefined where
            # the interpreter's reverse pass skips it (its gradient 0 there) fails in both.
            with pytest.raises(EvalError):
                forward(derivative_program(graph).graph, bindings)
            continue
        assert _same(got_value, value)
        for n in inputs:
            assert _same(got_grads[n], grads[n]), (text, bindings, n)


def _load(source: str) -> dict:
    namespace: dict = {"__file__": "<compiled>"}
    exec(compile(source, "<compiled>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize(
    "a, b", list(itertools.combinations(["lambda", "lambda_", "math", "relu", "x"], 2))
)
def test_training_on_rows_sees_each_column_under_its_own_name(tmp_path, a, b):
    """The loss of the first step is the interpreter's mean over the rows (it was 24,336
    instead of 26 when two names became one variable)."""
    from cgraph_cli.jobs.training import train

    program = f"input w = 1\nloss = (w * {a} - {b})^2"
    (tmp_path / "d.csv").write_text(f"{a},{b}\n1,5\n2,7\n3,-1\n", encoding="utf-8")
    result = train(program, wrt=["w"], rows=str(tmp_path / "d.csv"), steps=1, lr=1e-3)
    expected = np.mean([(1 * x - t) ** 2 for x, t in ((1, 5), (2, 7), (3, -1))])
    assert result.history[0]["loss"] == pytest.approx(expected, rel=1e-12)


def test_dask_sees_each_column_under_its_own_name(tmp_path):
    pytest.importorskip("dask.dataframe")
    from cgraph_cli.jobs.distributed import run_dask

    (tmp_path / "d.csv").write_text("lambda,lambda_,relu\n1,5,2\n-2,7,0.5\n", encoding="utf-8")
    graph = parse("y = lambda * relu(relu) + lambda_")
    written: list = []
    run_dask(
        graph, [str(tmp_path / "d.csv")], "csv", chunk_rows=1, mode="grad", write=written.append
    )
    assert [float(v) for t in written for v in t["y"]] == [1 * 2 + 5, -2 * 0.5 + 7]


#: With the values a module may be called with but no data file holds for the interpreter:
#: infinities and nan (the interpreter refuses them as inputs; so must a module's grad).
MORE_COLLIDING = [*COLLIDING, "sys", "_exact", "_check", "_rerun", "_CHECKED", "a0", "e", "given"]
SPECIAL_CALLS = [*SPECIAL, math.inf, -math.inf, math.nan, 1e300, -1e300, 1e284]


def _interpreted(graph, bindings):
    """The interpreter's named values, and its value and gradients; each None where it fails
    (an input that is not finite included)."""
    from cgraph_cli import CgraphError
    from cgraph_cli.app import api

    try:
        values = dict(api.evaluate(graph, bindings).named)
    except CgraphError:
        values = None
    try:
        g = api.grad(graph, bindings)
        gradient = (g.value, dict(g.gradients))
    except CgraphError:
        gradient = None
    return values, gradient


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(
    programs(max_statements=3, conditions=True),
    st.lists(st.sampled_from(MORE_COLLIDING), min_size=3, max_size=3, unique=True),
    st.lists(st.tuples(*[st.sampled_from(SPECIAL_CALLS)] * 3), min_size=1, max_size=3),
)
def test_the_numpy_module_and_the_batch_driver_give_the_interpreters_answer(program, names, rows):
    """`compile --target numpy` and the driver train and gradcheck --points run (the module,
    then the interpreter where it raises): every named value, the gradients, and an error
    exactly where the interpreter has one, a statement no result reads and an input that is
    not finite included."""
    from cgraph_cli.run.engine import Driver

    try:
        graph = validate(parse(_renamed(program, names)))
    except Exception:  # a name the language keeps for itself where this program puts it
        return
    modules = {t: _load(compile_module(graph, t)) for t in ("python", "numpy")}
    for row in rows:
        bindings = dict(zip(graph.inputs, row))
        values, gradient = _interpreted(graph, bindings)
        for target, module in modules.items():
            try:
                named = module["forward"](**bindings)
            except ArithmeticError:
                named = None
            assert (named is None) == (values is None), (target, bindings, named, values)
            assert named is None or all(_same(named[k], v) for k, v in values.items())
            try:
                got = module["grad"](**bindings)
            except ArithmeticError:
                got = None
            assert (got is None) == (gradient is None), (target, bindings, got, gradient)
            if got is not None and gradient is not None:
                assert _same(got[0], gradient[0])
                assert all(_same(got[1][k], v) for k, v in gradient[1].items()), (got, gradient)
        if gradient is not None and graph.inputs:
            batch = Driver(graph, wrt=list(graph.inputs)).batch(bindings)
            assert _same(batch[""], gradient[0])
            assert all(_same(batch[k], v) for k, v in gradient[1].items())


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_a_module_checks_every_statement_and_input_as_the_interpreter_does(target):
    # t0's first value is never read again, and grad's result does not hold x: both checked.
    module = _load(
        compile_module(parse("t0 = xlogy(0.5, z)\nt0 = 2 * z\ny = t0 + 0 * x\n"), target)
    )
    for fn in ("forward", "grad"):
        with pytest.raises(ArithmeticError, match=r"line 1: xlogy\(0\.5, z\)"):
            module[fn](x=1.0, z=-1.0)
    with pytest.raises(ArithmeticError, match=r"input 'x' is not finite \(inf\)"):
        module["grad"](x=math.inf, z=1.0)


@pytest.mark.parametrize(
    ("program", "bindings", "message"),
    [  # plain keyword arguments, **inputs (an input named lambda), tensors, a loop's module
        ("y = a * 2 + x", {"a": 1.0, "x": math.nan}, "input 'x' is not finite (nan)"),
        ("y = lambda * 2 + x", {"lambda": math.inf, "x": 1.0}, "input 'lambda' is not finite"),
        ("y = sum(lambda * x)", {"lambda": 2.0, "x": [1.0, -math.inf]}, "'x' is not finite at [1]"),
        # a float64 array of the compiled shape, with plain keyword arguments: the fast path
        (
            "y = sum(a * x)",
            {"a": 2.0, "x": [1.0, -math.inf]},
            "input 'x' is not finite at [1] (-inf)",
        ),
        (
            "h = x * 1\nfor t in range(2):\n    h = tanh(h * lambda)\ny = sum(h)",
            {"lambda": 1.0, "x": [[1.0, 2.0], [math.nan, 0.0]]},
            "input 'x' is not finite at [1, 0] (nan)",
        ),
    ],
)
def test_a_module_names_the_input_that_is_not_finite(program, bindings, message):
    graph = parse(program)
    shapes = {k: np.zeros(np.shape(v)) for k, v in bindings.items()}
    targets = ["numpy"] if any(np.ndim(v) for v in bindings.values()) else ["python", "numpy"]
    for target in targets:
        module = _load(any_module(graph, target, bindings=shapes))
        given = {k: np.array(v) if np.ndim(v) else v for k, v in bindings.items()}
        for fn in ("forward", "grad"):
            with pytest.raises(ArithmeticError) as err:
                module[fn](**given)
            assert message in str(err.value), (target, fn)


@pytest.mark.parametrize("rule", ["exp", "log", "tanh", "sin", "softplus", "sigmoid"])
def test_a_comparison_is_decided_as_eval_decides_it(rule):
    """NumPy's exp, log, tanh... round otherwise than the float functions eval uses on one
    in ten or so numbers: a value that decides a comparison is computed by eval's rule on
    rows and in the NumPy module (exp(x) >= c was 0 on --rows where eval gives 1)."""
    from cgraph_cli.core.interpret import value_function
    from cgraph_cli.core.ops import OPS

    x = np.linspace(0.1, 5.0, 997)
    c = np.array([value_function(OPS[rule])(v) for v in x])  # eval's value of rule(x)
    graph = parse(f"y = {rule}(x) >= c")
    table = run_rows(graph, [("d.csv", 0, {"x": x, "c": c})]).tables[0]
    assert table["y"].tolist() == [1.0] * len(x)
    module = _load(compile_module(graph, "numpy"))
    assert module["forward"](x=x, c=c)["y"].tolist() == [1.0] * len(x)
    grad = run_rows(graph, [("d.csv", 0, {"x": x, "c": c})], mode="grad").tables[0]
    assert grad["y"].tolist() == [1.0] * len(x)


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_a_module_names_the_node_that_overflowed(target):
    """x * x overflows, a * 0 makes it nan: the interpreter names x * x, and so does the
    module (it said 'grad: a result is not finite')."""
    module = _load(compile_module(parse("a = x * x\ny = a * 0 + 1\n"), target))
    for fn in ("forward", "grad"):
        with pytest.raises(ArithmeticError, match=r"^line 1: x \* x: the value is not finite$"):
            module[fn](x=1e200)
    named = _load(compile_module(parse("a = x * x\ny = a * 0 + 1\n"), target))["forward"]
    assert named(x=3.0) == {"x": 3.0, "a": 9.0, "y": 1.0}


@pytest.mark.parametrize(("keep", "mode"), [("dy_dx", "grad"), ("y", "grad"), ("y", "eval")])
def test_a_kept_column_never_disappears_behind_a_result(cli, tmp_path, keep, mode):
    data = tmp_path / "d.csv"
    data.write_text("x,dy_dx,y\n1,5,3\n")
    result = cli(mode, "-e", "y = x * x", "--rows", str(data), "--keep", keep)
    assert result.exit_code == 2
    assert f"--keep {keep}: a result is written in a column of that name too" in result.stderr


TENSOR_VALUES = [0.0, -0.0, 5e-324, 1e308, -1e308, 37.0, -745.0, 710.0, 0.5, -1.5, 3.0]


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(tensor_expressions(), st.data())
def test_tensor_programs_give_the_interpreters_answer_in_every_engine(expression, data):
    """A tensor program (its output summed to a number): the NumPy module compiled for the
    shapes and --rows (a row at a time) give the interpreter's value, gradients and errors."""
    from cgraph_cli import CgraphError
    from cgraph_cli.app import api

    graph = parse(f"y = sum({expression})")
    bindings: dict = {}
    for name, shape in TENSOR_SHAPES.items():
        if name in graph.inputs:
            size = max(1, math.prod(shape))
            values = data.draw(
                st.lists(st.sampled_from(TENSOR_VALUES), min_size=size, max_size=size)
            )
            bindings[name] = np.array(values).reshape(shape) if shape else float(values[0])
    try:
        result = api.grad(graph, bindings)
        expected = (result.value, dict(result.gradients))
    except CgraphError as e:
        expected, error = None, (type(e), e.where(), e.message)
    # called again, cg.grad runs the compiled module: the same answers, the same error
    try:
        again = api.grad(graph, bindings)
        assert expected is not None, (expression, bindings)
        assert _same(again.value, expected[0])
        for n, g in expected[1].items():
            assert np.allclose(again.gradients[n], g, rtol=1e-12, atol=1e-300, equal_nan=True)
        assert len(again.adjoints) == len(result.adjoints)
    except CgraphError as e:
        assert expected is None and (type(e), e.where(), e.message) == error, expression
    module = _load(compile_module(graph, "numpy", bindings=bindings))
    try:
        got = module["grad"](**bindings)
    except ArithmeticError:
        got = None
    assert (got is None) == (expected is None), (expression, bindings, got, expected)
    if got is not None and expected is not None:
        assert _same(got[0], expected[0])
        for n, g in expected[1].items():
            assert np.array_equal(np.isnan(got[1][n]), np.isnan(g))
            assert np.allclose(got[1][n], g, rtol=1e-12, atol=1e-300, equal_nan=True)
    if not bindings:
        return
    columns = {n: np.stack([np.asarray(v)] * 2) for n, v in bindings.items()}
    table = run_rows(graph, [("d.csv", 0, columns)], mode="grad").tables[0]
    assert (table["error"][0] is None) == (expected is not None), (expression, table["error"])
    if expected is not None:
        assert _same(table["y"][0], expected[0])


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_a_module_with_of_runs_every_statement_as_grad_of_does(target):
    """`grad --of y` fails where t = log(x) fails, though y does not read t; the module
    compiled with --of y dropped t and gave a gradient."""
    from cgraph_cli import CgraphError
    from cgraph_cli.app import api

    graph = parse("t = log(x)\ny = x * 2\nz = y + t\n")
    with pytest.raises(CgraphError):
        api.grad(graph, {"x": -1.0}, of="y")
    module = _load(compile_module(graph, target, of="y"))
    for fn in ("forward", "grad"):
        with pytest.raises(ArithmeticError, match=r"line 1: log\(x\)"):
            module[fn](x=-1.0)
    assert module["grad"](x=3.0) == (6.0, {"x": 2.0})


def test_dask_decides_a_comparison_as_eval_does(tmp_path):
    pytest.importorskip("dask.dataframe")
    from cgraph_cli.jobs.distributed import run_dask

    x = [float(v) for v in np.linspace(0.1, 5.0, 97)]
    rows = "".join(f"{v!r},{math.exp(v)!r}\n" for v in x)  # c: eval's exp(x)
    (tmp_path / "d.csv").write_text("x,c\n" + rows, encoding="utf-8")
    written: list = []
    graph = parse("y = exp(x) >= c")
    run_dask(graph, [str(tmp_path / "d.csv")], "csv", chunk_rows=50, write=written.append)
    assert [float(v) for t in written for v in t["y"]] == [1.0] * len(x)


# --- cg.grad compiled from its second call ---------------------------------------------------
def test_grad_called_again_says_what_the_interpreter_says_about_bad_values():
    graph = cg.parse("y = sum(log(x) * w)")
    good = {"x": np.array([1.0, 2.0]), "w": np.array([3.0, 4.0])}
    cg.grad(graph, good)
    assert cg.grad(graph, good)._known is not None
    with pytest.raises(DomainError) as err:  # the module raises; the interpreter places it
        cg.grad(graph, {"x": np.array([1.0, -2.0]), "w": good["w"]})
    assert err.value.where() == "<expr>:1:9"
    for bad in ({"x": np.array([1.0, np.nan]), "w": good["w"]}, {**good, "v": 1.0}):
        with pytest.raises(BindingError):
            cg.grad(graph, bad)
    assert cg.grad(graph, {"x": [1.0, 2.0], "w": [3.0, 4.0]}).gradients["w"].tolist() == [
        0.0,
        math.log(2.0),
    ]


#: A local derivative that overflows (1 / x at a subnormal x) met by a gradient small enough
#: that the product would not: g * (1 / x) errs where g / x does not. Every engine computes the
#: product as the interpreter does, so each gives its error at the same node.
TINY_SLOPES = [
    ("y = sum(1e-10 * log(x))", {"x": [1e-310, 1.0]}, "the derivative of log(1e-310)"),
    ("y = sum(1e-10 * x / c)", {"x": [1e-300, 1.0], "c": [1e-310, 1.0]}, "the derivative of"),
    ("y = sum(-1e-10 * log(x))", {"x": [1e-310, 1.0]}, "the derivative of log(1e-310)"),
]


@pytest.mark.parametrize(("program", "bindings", "message"), TINY_SLOPES)
def test_an_overflowing_local_derivative_errs_in_every_engine_as_at_first(
    tmp_path, program, bindings, message
):
    graph = cg.parse(program)
    arrays = {k: np.array(v) for k, v in bindings.items()}
    said = []
    for _ in range(3):  # the interpreter first, then the compiled module
        with pytest.raises(DomainError) as err:
            cg.grad(graph, arrays)
        said.append((str(err.value), err.value.where()))
    assert message in said[0][0] and said == [said[0]] * 3
    # a row at a time: the scalar program, through the rows engine, over two chunks
    scalar = cg.parse(program.replace("sum(", "(", 1))
    columns = {k: np.array(v * 40) for k, v in bindings.items()}
    written: list = []
    chunks = [("rows", 0, {k: v[:40] for k, v in columns.items()})]
    chunks.append(("rows", 40, {k: v[40:] for k, v in columns.items()}))
    run_rows(scalar, chunks, mode="grad", write=written.append)
    errors = [e for table in written for e in table["error"]]
    assert [e is not None for e in errors] == [True, False] * 40
    assert all(message in e for e in errors[::2])


def test_a_program_of_numbers_stays_interpreted_and_loops_run_as_scans():
    graph = cg.parse("y = x * x")
    cg.grad(graph, {"x": 3.0})
    assert cg.grad(graph, {"x": 3.0})._known is None
    loop = cg.parse("for i in range(3):\n    x = x * 2\ny = sum(x)")
    first = cg.grad(loop, {"x": np.ones(2)})
    assert first._known is None  # a short loop: unrolled at its first call
    second = cg.grad(loop, {"x": np.ones(2)})
    assert second._known is not None and second._graph is None  # then a scan
    assert second.gradients["x"].tolist() == first.gradients["x"].tolist() == [8.0, 8.0]


def test_evaluate_called_again_runs_compiled_and_gives_the_interpreters_values():
    graph = cg.parse("H = relu(X @ W); y = sum(H * H)")
    rng = np.random.default_rng(0)
    bindings = {"X": rng.normal(size=(4, 3)), "W": rng.normal(size=(3, 2))}
    first = cg.evaluate(graph, bindings)
    second = cg.evaluate(graph, bindings)
    assert second._named is not None, "the second call ran the compiled module"
    assert second.value == pytest.approx(first.value, rel=1e-12)
    assert np.allclose(second.named["H"], first.named["H"], rtol=1e-12, atol=0)
    assert len(second.values) == len(first.values)  # every node's, when asked for
    with pytest.raises(BindingError):
        cg.evaluate(graph, {**bindings, "X": np.full((4, 3), np.nan)})


def test_a_compiled_gradient_is_never_the_callers_array():
    """In sum(W * x) the gradient of W is x: the compiled module returns the array it was
    given; the result holds a copy, as the interpreter's does."""
    graph = cg.parse("y = sum(W * x)")
    W, x = np.ones((2, 2)), np.arange(4.0).reshape(2, 2)
    cg.grad(graph, {"W": W, "x": x})
    result = cg.grad(graph, {"W": W, "x": x})
    assert result._known is not None
    x[0, 0] = 99.0
    assert result.gradients["W"][0, 0] == 0.0


def test_a_compiled_result_keeps_the_values_it_was_called_with():
    """Its per-node values are worked out when first read, from the bindings as they were at
    the call: the caller changing its arrays afterwards changes nothing."""
    graph = cg.parse("h = tanh(W @ x + b)\nloss = sum(h ^ 2) + sum(log(c))")
    rng = np.random.default_rng(0)
    bindings = {"W": rng.normal(size=(3, 2)), "x": rng.normal(size=2), "b": rng.normal(size=3),
                "c": np.array([1.0, 2.0])}  # fmt: skip
    cg.grad(graph, bindings)
    result = cg.grad(graph, bindings)
    assert result._known is not None
    h = np.tanh(bindings["W"] @ bindings["x"] + bindings["b"])
    bindings["W"][:] = 0.0
    bindings["c"][:] = -1.0  # a log of -1, were it read now
    assert result.values[graph.output] == pytest.approx(result.value, rel=1e-12)
    assert np.allclose(result.values[graph.names["h"]], h, rtol=1e-12)


@pytest.mark.parametrize("run", ["evaluate", "grad"])
def test_a_result_never_shares_the_callers_array_at_the_first_call_or_the_next(run):
    """y = x names the input itself: the interpreter's result (the first call) holds a copy,
    as the compiled module's (the next) does; changing x afterwards changes neither."""
    graph = cg.parse("y = x\nz = sum(y * w)")
    x, w = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    results = [getattr(cg, run)(graph, {"x": x, "w": w}) for _ in range(2)]
    x[:] = -7.0
    for result in results:
        assert result.values[graph.names["y"]].tolist() == [1.0, 2.0]
        assert result.values[graph.inputs["x"]].tolist() == [1.0, 2.0]
        assert not np.shares_memory(result.values[graph.names["y"]], x)
    assert results[1].value == results[0].value == 11.0


def test_grad_called_again_with_other_shapes_ranks_and_kinds_gives_the_interpreters_answer():
    """From its second call cg.grad goes straight to the module of the call before; one
    compiled for 4 rows folds 1/8 into a mean: given 8 rows (or a batch axis, or a list, or an
    int array) it must not run as it is, yet every answer is the interpreter's."""
    from cgraph_cli.run.program import differentiated

    graph = cg.parse("y = mean((X @ w - t) ^ 2)")
    rng = np.random.default_rng(3)

    def case(rows, *lead):
        return {"X": rng.normal(size=(*lead, rows, 2)), "w": rng.normal(size=2),
                "t": rng.normal(size=(*lead, rows))}  # fmt: skip

    four, eight = case(4), case(8)
    calls = [four, four, eight, eight, four, case(4, 3), four, eight]
    calls += [{k: v.tolist() for k, v in four.items()}, {**eight, "X": np.ones((8, 2), int)}]
    for bindings in calls:
        got = cg.grad(graph, bindings)
        _, values, adjoints, out = differentiated(graph, bindings)
        assert got.value == pytest.approx(values[out], rel=1e-12)
        for name, node in graph.inputs.items():
            assert np.allclose(got.gradients[name], adjoints[node], rtol=1e-12, atol=1e-15)
    assert cg.grad(graph, four)._known is not None  # (the module ran)
    assert cg.evaluate(graph, eight).value == pytest.approx(cg.grad(graph, eight).value)


def test_arrays_whose_dtype_is_another_float64_object_still_run_compiled():
    """An unpickled array's dtype equals float64 without being NumPy's own object: such
    bindings (multiprocessing, joblib) ran through the interpreter at every call."""
    import pickle

    graph = cg.parse("h = relu(W @ x + b)\ny = sum(h * h)")
    given = {"W": np.arange(6.0).reshape(2, 3), "x": np.array([1.0, -2.0, 3.0]), "b": np.ones(2)}
    loaded = {k: pickle.loads(pickle.dumps(v)) for k, v in given.items()}
    first = cg.grad(graph, loaded)
    for _ in range(3):
        again = cg.grad(graph, loaded)
        assert again._known is not None
    assert again.value == first.value


def test_a_driver_gives_the_interpreters_answer_for_a_batch_axis_it_was_not_compiled_with():
    from cgraph_cli.run.engine import Driver

    drive = Driver(cg.parse("y = sum(x * w)"), wrt=["w", "x"])
    assert drive.batch({"x": np.array([1.0, 2.0]), "w": 2.0})[""] == 6.0
    two = {"x": np.array([[1.0, 2.0], [3.0, 4.0]]), "w": 2.0}
    got, expected = drive.batch(two), drive.interpret(two)
    assert got[""] == expected[""] == 20.0 and got["w"] == expected["w"] == 10.0


def test_a_result_cannot_change_the_programs_defaults_or_constants():
    # A result's values and named values held the program's own arrays: writing into one
    # changed every later call (300 for 6).
    graph = cg.parse("input c = [1, 2, 3]\ny = sum(x * c * [1, 1, 1])")
    for _ in range(3):  # the interpreter's calls, then the compiled module's
        result = cg.grad(graph, {"x": np.ones(3)})
        for value in [result.named["c"], *result.values, *result.adjoints]:
            if isinstance(value, np.ndarray):
                try:
                    value[...] = 100.0
                except ValueError:  # read-only: a default or a constant
                    pass
        assert cg.evaluate(graph, {"x": np.ones(3)}).value == 6.0


def test_results_keep_their_own_values_while_large_copies_are_reused():
    """A large binding's copy goes into the buffer of an earlier call's copy that nothing
    holds any more: never into one a living result, or an array it gave out, still holds."""
    graph = cg.parse("h = tanh(W @ x)\ny = sum(h * h)")
    rng = np.random.default_rng(5)
    W, x = rng.normal(size=(300, 300)), rng.normal(size=300)  # W: 720 KB, copied to reuse
    cg.grad(graph, {"W": W, "x": x})
    first = cg.grad(graph, {"W": W, "x": x})
    h_first = np.tanh(W @ x)
    values = cg.grad(graph, {"W": W * 2, "x": x}).values  # its result gone, its values held
    h_values = np.tanh(2 * W @ x)
    for k in range(4):  # calls whose results are dropped at once take their copies in turn
        assert cg.grad(graph, {"W": W * (k + 3), "x": x})._known is not None
    assert np.allclose(first.values[graph.names["h"]], h_first, rtol=1e-12)
    assert np.allclose(values[graph.names["h"]], h_values, rtol=1e-12)
    assert np.array_equal(values[graph.inputs["W"]], W * 2)


HIDING = [  # programs where an input's inf or NaN could be hidden on the way to the output
    "y = sum(relu(x) * w)",
    "y = sum(where(x > 0, w, 0 * w))",
    "y = sum(exp(x) * w)",
    "y = sum(tanh(x) + sigmoid(w))",
    "y = sum(w / x)",
    "y = amax(x, 0) + sum(w)",
    "y = sum(sign(x) * w)",
    "z = sum(x * 2)\ny = sum(w)",
    "input x = [1, 2]\ny = sum(w * 3)",
    "y = sum(take(x, [0]) * w)",
    "y = sum(xlogy(w, x))",
]


@pytest.mark.parametrize("program", HIDING)
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("which", ["x", "w"])
@pytest.mark.parametrize("run", ["grad", "evaluate"])
def test_called_again_a_value_not_finite_is_refused_as_at_first(program, bad, which, run):
    """Called again with the same shapes, the compiled module runs without the bindings'
    check of the first calls: an input that is not finite must still be refused, however
    the program might hide it, with the interpreter's error."""
    graph = cg.parse(program)
    good = {"x": np.array([0.5, 2.0]), "w": np.array([3.0, 4.0])}
    call = getattr(cg, run)
    call(graph, good)
    call(graph, good)
    assert call(graph, good)._named is not None if run == "evaluate" else True
    given = {**good, which: np.array([1.0, bad])}
    with pytest.raises(BindingError) as err:
        call(graph, given)
    with pytest.raises(BindingError) as fresh:
        call(cg.parse(program), given)
    assert str(err.value) == str(fresh.value)
    assert call(graph, good).value == call(cg.parse(program), good).value
