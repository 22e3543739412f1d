"""Tensors: every tensor op and every elementwise op under broadcasting, against central finite
differences and forward mode; the MLP sample against a hand-derived NumPy backward pass; shape
errors at their span; tensor bindings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from op_cases import cases, example, example_cases, value_range

from cgraph_cli import EvalError, ParseError, grad, jvp, parse, to_source, validate
from cgraph_cli.app.gradcheck import gradcheck
from cgraph_cli.core.ops import OPS
from cgraph_cli.passes.shapes import ShapeError

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _random(shape, seed, low=-2.0, high=2.0):
    return (
        np.random.default_rng(seed).uniform(low, high, shape)
        if shape
        else float(np.random.default_rng(seed).uniform(low, high))
    )


def _check(program: str, shapes: dict, low=-2.0, high=2.0, seed=0):
    """gradcheck at random points, then vjp against jvp along a random direction."""
    graph = validate(parse(program))
    for k in range(2):
        point = {
            n: _random(s, seed + 10 * k + i, low, high) for i, (n, s) in enumerate(shapes.items())
        }
        checks = gradcheck(graph, point, elements=1000)
        bad = [(c.label, c.analytic, c.numeric) for c in checks if c.status != "ok"]
        assert not bad, (program, bad)
        result = grad(graph, point)
        direction = {n: _random(s, 99 + i) for i, (n, s) in enumerate(shapes.items())}
        tangent = jvp(graph, result.values, direction)[graph.output]
        pairing = sum(np.sum(result.gradients[n] * direction[n]) for n in shapes)
        assert tangent == pytest.approx(pairing, rel=1e-9, abs=1e-12), program


BROADCASTS = [
    ((), (2, 3)),  # scalar with matrix
    ((2, 3), ()),
    ((3,), (2, 3)),  # row with matrix
    ((2, 1), (2, 3)),  # column with matrix
    ((1, 3), (2, 1)),  # both stretched
    ((2, 3), (2, 3)),
    ((4,), (4,)),
]


#: Every elementwise op with a float rule, from the op table: each is gradchecked here on tensors
#: at its example (`x + y`, `sin(x)`, `where(c, x, y)`), its arguments drawn from the range
#: tests/op_cases.py finds for it (log, sqrt, tan, /, ^ and xlogy: 0.2 to 1.2).
ELEMENTWISE = [op for op in OPS.values() if op.arity and op.elementwise and op.py is not None]
#: Every other op: each is gradchecked at its example, at every argument shape it takes.
TENSOR = [op for op in OPS.values() if op.vjp is not None]


def _name(op) -> str:
    return op.name


@pytest.mark.parametrize("op", [op for op in ELEMENTWISE if op.arity > 1], ids=_name)
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_binary_elementwise_ops_broadcast(op, shapes):
    """Two arguments, or three (where: the condition shaped as the second branch)."""
    names, _ = example(op)
    bindings = {name: shapes[k % 2] for k, name in enumerate(names)}
    _check(f"y = sum(sin({op.example}))", bindings, *value_range(op))


@pytest.mark.parametrize("shapes", BROADCASTS[:4], ids=str)
def test_pow_broadcasts(shapes):
    _check("y = sum(sin(a ^ b))", dict(zip("ab", shapes)), low=0.5, high=2.0)


@pytest.mark.parametrize(
    "op", [op for op in ELEMENTWISE if op.arity == 1 and not op.surrogate], ids=_name
)
@pytest.mark.parametrize("shape", [(3,), (2, 3)], ids=str)
def test_unary_elementwise_ops_on_tensors(op, shape):
    (name,), _ = example(op)
    _check(f"y = sum(sin({op.example}))", {name: shape}, *value_range(op))


@pytest.mark.parametrize(
    "shapes", [((2, 3), (3, 4)), ((2, 3), (3,)), ((3,), (3, 4)), ((3,), (3,))], ids=str
)
def test_matmul(shapes):
    _check("y = sum(sin(a @ b))", dict(zip("ab", shapes)))


TENSOR_CALLS = [
    "sum(x)",
    "sum(x, 0)",
    "sum(x, 1)",
    "sum(x, -1)",
    "mean(x)",
    "mean(x, 0)",
    "mean(x, 1)",
    "transpose(x)",
    "reshape(x, [3, 2])",
    "reshape(x, [6])",
    "reshape(x, [-1, 2])",
    "softmax(x)",
    "softmax(x, 0)",
    "softmax(x, 1)",
    "log_softmax(x)",
    "log_softmax(x, 0)",
    "log_softmax(x, -1)",
    "logsumexp(x)",
    "logsumexp(x, 0)",
    "logsumexp(x, -1)",
    "max(x)",
    "min(x)",
    "x[1]",
    "x[0, 2]",
    "x[:, 1]",
    "x[1:, ::2]",
    "x[-1, -1]",
]
VECTOR_CALLS = [
    "sum(v)",
    "mean(v)",
    "softmax(v)",
    "log_softmax(v)",
    "logsumexp(v)",
    "max(v)",
    "v[2]",
    "v[1:3]",
    "transpose(v)",
    "reshape(v, [2, 2])",
]


@pytest.mark.parametrize("call", TENSOR_CALLS)
@pytest.mark.parametrize("shape", [(2, 3), (3, 2)], ids=str)
def test_tensor_ops(call, shape):
    if "reshape" in call or ("[0, 2]" in call and shape == (3, 2)):
        shape = (2, 3)
    _check(f"y = sum(sin({call}))", {"x": shape})


@pytest.mark.parametrize("call", VECTOR_CALLS)
def test_tensor_ops_on_vectors(call):
    _check(f"y = sum(sin({call}))", {"v": (4,)})


@pytest.mark.parametrize("op", TENSOR, ids=_name)
def test_each_tensor_op_at_its_example_on_every_shape_it_takes(op):
    names, params = example(op)
    found = cases(op, [params])
    assert found, f"{op.name}: its example takes no argument shapes of tests/op_cases.py SHAPES"
    for shapes, _ in example_cases(op):  # positions written in it: take(x, [0, -1, 0])
        _check(f"y = sum(sin({op.example}))", dict(zip(names, shapes)), *value_range(op))


def test_ties_share_the_gradient_of_max_and_min():
    result = grad("y = max(x) + min(x)", {"x": [3.0, 1.0, 3.0, 1.0]})
    assert result.gradients["x"].tolist() == [0.5, 0.5, 0.5, 0.5]


def test_softmax_sums_to_one_and_logsumexp_does_not_overflow():
    result = grad("y = logsumexp(x)", {"x": [1000.0, 1000.0]})
    assert result.value == pytest.approx(1000 + np.log(2))
    assert result.gradients["x"].tolist() == [0.5, 0.5]
    p = grad("p = softmax(x); y = sum(p)", {"x": [800.0, 0.0, -5.0]})
    assert p.value == pytest.approx(1.0)


def _mlp_by_hand(X, T, W1, b1, W2, b2):
    """The MLP sample's loss and gradients, derived by hand."""
    a1 = X @ W1 + b1
    H = np.maximum(a1, 0)
    Y = H @ W2 + b2
    loss = np.mean((Y - T) ** 2)
    dY = 2 * (Y - T) / Y.size
    dW2, db2 = H.T @ dY, dY.sum(axis=0)
    da1 = (dY @ W2.T) * (a1 > 0)
    dW1, db1 = X.T @ da1, da1.sum(axis=0)
    return loss, {"X": da1 @ W1.T, "T": -dY, "W1": dW1, "b1": db1, "W2": dW2, "b2": db2}


@pytest.mark.parametrize("width", [None, 8, 64])
def test_mlp_sample_matches_hand_derived_numpy(width):
    graph = parse((SAMPLES / "mlp.cg").read_text())
    bindings = {}
    if width is not None:  # the same program at another size
        rng = np.random.default_rng(width)
        bindings = {
            "X": rng.normal(size=(16, 3)),
            "T": rng.normal(size=(16, 2)),
            "W1": rng.normal(size=(3, width)),
            "b1": rng.normal(size=width),
            "W2": rng.normal(size=(width, 2)),
            "b2": rng.normal(size=2),
        }
    result = grad(graph, bindings)
    given = {n: np.asarray(bindings.get(n, graph.defaults[n])) for n in graph.inputs}
    loss, expected = _mlp_by_hand(**given)
    assert result.value == pytest.approx(loss, rel=1e-12)
    for name, g in expected.items():
        np.testing.assert_allclose(result.gradients[name], g, rtol=1e-10, atol=1e-14)


def test_softmax_cross_entropy_sample_equals_logsumexp_form():
    text = (SAMPLES / "softmax_cross_entropy.cg").read_text()
    result = grad(text)
    stable = grad(text + "check = logsumexp(z) - z[1]\n")
    assert result.value == pytest.approx(stable.value, rel=1e-12)
    for name in ("W", "b", "x"):
        np.testing.assert_allclose(result.gradients[name], stable.gradients[name], rtol=1e-10)
    # The gradient of the scores is p - y.
    p = result.named["p"]
    np.testing.assert_allclose(result.wrt("z"), p - np.array([0, 1, 0]), rtol=1e-12)


def test_logistic_regression_sample_gradient_is_the_textbook_formula():
    result = grad((SAMPLES / "logistic_regression.cg").read_text())
    X, y = result.named["X"], result.named["y"]
    p = result.named["p"]
    np.testing.assert_allclose(result.gradients["w"], X.T @ (p - y) / len(y), rtol=1e-12)
    assert result.gradients["b"] == pytest.approx(np.mean(p - y), rel=1e-12)


# --- shapes -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "program, bindings, message, caret",
    [
        (
            "y = a @ b",
            {"a": np.ones((2, 3)), "b": np.ones((2, 3))},
            "(2, 3) @ (2, 3): inner dimensions 3 and 2 differ",
            "a @ b",
        ),
        (
            "y = a + b",
            {"a": np.ones((2, 3)), "b": np.ones(2)},
            "(2, 3) and (2,) do not broadcast: sizes 2 and 3 differ in axis -1",
            "a + b",
        ),
        (
            "y = sum(a, 2)",
            {"a": np.ones((2, 3))},
            "axis 2 is out of range for a (2, 3) tensor",
            "sum(a, 2)",
        ),
        (
            "y = reshape(a, [4, 2])",
            {"a": np.ones((2, 3))},
            "cannot reshape (2, 3) (6 elements) to (4, 2)",
            "reshape(a, [4, 2])",
        ),
        (
            "y = a[2]",
            {"a": np.ones((2, 3))},
            "index 2 is out of range for axis 0 of size 2 (a (2, 3) tensor)",
            "a[2]",
        ),
        (
            "y = a[0, 0, 0]",
            {"a": np.ones((2, 3))},
            "3 indices for a (2, 3) tensor, which has 2 axes",
            "a[0, 0, 0]",
        ),
        (
            "y = 2 @ a",
            {"a": np.ones(2)},
            "() @ (2,): @ multiplies vectors and matrices; to scale by a scalar, use *",
            "2 @ a",
        ),
    ],
)
def test_shape_mismatch_is_reported_at_its_span_before_evaluation(
    program, bindings, message, caret
):
    with pytest.raises(ShapeError) as info:
        grad(program, bindings)
    err = info.value
    assert err.message == message
    assert err.exit_code == 4
    assert program[err.span.start : err.span.end] == caret


def test_shape_pass_runs_before_anything_is_computed():
    # log(-1) comes first in the program, but the shape error is what is reported.
    with pytest.raises(ShapeError):
        grad("u = log(c); y = a @ b", {"c": -1.0, "a": np.ones(2), "b": np.ones(3)})


def test_gradient_of_a_tensor_output_says_to_reduce_it():
    with pytest.raises(EvalError) as info:
        grad("y = W @ x", {"W": np.eye(2), "x": [1, 2]})
    assert info.value.message == "y is a (2,) tensor; gradients need a single number"
    assert "sum(y)" in info.value.hints[0] and "y[0]" in info.value.hints[0]


def test_domain_error_names_the_element():
    with pytest.raises(EvalError) as info:
        grad("y = sum(log(x))", {"x": [1.0, -2.0]})
    assert info.value.message == "log(-2) is undefined at [1]: log needs a positive argument"
    with pytest.raises(EvalError) as info:  # a number inside a tensor program: no element
        grad("y = log(a) + sum(x)", {"a": -1.0, "x": [1.0]})
    assert info.value.message == "log(-1) is undefined: log needs a positive argument"
    with pytest.raises(EvalError) as info:
        grad("y = sum(exp(x))", {"x": [1.0, 1000.0]})
    assert info.value.message == (
        "exp(1000) overflows at [1]: the result is too large for a float64"
    )


def test_an_infinite_slope_names_its_element_unless_no_gradient_flows_there():
    with pytest.raises(EvalError) as info:
        grad("y = sum(sqrt(x))", {"x": [1.0, 0.0]})
    assert info.value.message == "the derivative of sqrt(0) is undefined or infinite at [1]"
    result = grad("y = sum(sqrt(x) * m)", {"x": [1.0, 0.0], "m": [1.0, 0.0]})
    assert result.gradients["x"].tolist() == [0.5, 0.0]


def test_gradient_of_each_input_has_its_shape():
    result = grad("y = sum(a * b) + c", {"a": np.ones((2, 3)), "b": [1.0, 2.0, 3.0], "c": 1.0})
    assert result.gradients["a"].shape == (2, 3)
    assert result.gradients["b"].tolist() == [2.0, 2.0, 2.0]
    assert result.gradients["c"] == 1.0


def test_input_the_output_does_not_read_gets_zeros_of_its_shape():
    result = grad("u = sum(w); y = sum(v) * 2", {"v": [1.0, 2.0], "w": np.ones((2, 3))})
    assert result.gradients["v"].tolist() == [2.0, 2.0]
    assert result.gradients["w"].tolist() == [[0.0] * 3] * 2


# --- language and bindings -----------------------------------------------------------------------
def test_array_literals_and_declared_tensor_defaults():
    graph = parse("input W = [[1, 2],\n  [3, 4]]\ny = sum(W * [-1, 1])")
    assert graph.defaults["W"].tolist() == [[1, 2], [3, 4]]
    assert grad(graph).value == 2.0


def test_scalar_programs_never_import_numpy():
    code = (
        "import sys; from cgraph_cli import grad; grad('y = x * sin(x)', {'x': 2}); "
        "print('numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bindings_from_json_npz_and_npy(cli, tmp_path):
    np.savez(tmp_path / "w.npz", W=np.array([[1.0, 2.0], [3.0, 4.0]]), b=np.zeros(2))
    np.save(tmp_path / "x.npy", np.array([1.0, -1.0]))
    (tmp_path / "t.json").write_text(json.dumps({"t": [1, 1]}))
    program = "loss = sum((W @ x + b - t)^2)"
    result = cli(
        "grad",
        program,
        "--bindings",
        str(tmp_path / "w.npz"),
        f"x=@{tmp_path / 'x.npy'}",
        "t=[1,1]",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["value"] == 8.0
    assert report["gradients"]["W"] == [[-4.0, 4.0], [-4.0, 4.0]]
    assert report["shapes"]["W"] == [2, 2] and report["shapes"]["loss"] == []
    result = cli(
        "grad",
        program,
        "W=[[1,2],[3,4]]",
        "x=[1,-1]",
        "b=[0,0]",
        "--bindings",
        str(tmp_path / "t.json"),
        "--format",
        "plain",
    )
    assert result.stdout.splitlines() == [
        "W=[[-4,4],[-4,4]]",
        "x=[-16,-24]",
        "b=[-4,-4]",
        "t=[4,4]",
        "loss=8",  # the output's value, last, as the table has it
    ]


@pytest.mark.parametrize(
    "binding, message",
    [
        ("W=[[1,2],[3]]", "not a rectangular array"),
        ("W=[1,", "is not a number or an array"),
        ("W=[]", "empty array"),
    ],
)
def test_bad_tensor_bindings_exit_4(cli, binding, message):
    result = cli("eval", "y = sum(W)", binding)
    assert result.exit_code == 4
    assert message in result.stderr and "Traceback" not in result.stderr


def test_missing_npy_file_is_a_usage_error(cli, tmp_path):
    result = cli("eval", "y = sum(W)", f"W=@{tmp_path / 'nope.npy'}")
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_shape_error_on_the_command_line(cli):
    result = cli("grad", "y = sum(a @ b)", "a=[[1,2,3],[4,5,6]]", "b=[[1,2,3],[4,5,6]]")
    assert result.exit_code == 4
    assert "(2, 3) @ (2, 3): inner dimensions 3 and 2 differ" in result.stderr
    assert "^~~~~" in result.stderr


def test_check_compares_tensors_elementwise(cli):
    args = ["check", "loss = sum((W @ x)^2)", "W=[[1,2],[3,4]]", "x=[1,-1]"]
    ok = cli(*args, "--expect-grad", "W=[[-2,2],[-2,2]]", "--expect-grad", "x=[-8,-12]")
    assert ok.exit_code == 0, ok.stdout
    bad = cli(*args, "--expect-grad", "W=[[-2,2],[-2,2.001]]")
    assert bad.exit_code == 1
    assert "FAIL" in bad.stdout
    wrong_shape = cli(*args, "--expect-grad", "x=[-8]")
    assert wrong_shape.exit_code == 1 and "shapes differ" in wrong_shape.stdout


def test_check_values_of_a_tensor_output(cli):
    result = cli("check", "y = W @ x", "W=[[1,2],[3,4]]", "x=[1,1]", "--expect", "y=[3, 7]")
    assert result.exit_code == 0, result.stdout + result.stderr
    result = cli("check", "y = W @ x", "W=[[1,2],[3,4]]", "x=[1,1]", "--expect-grad", "x=[1, 1]")
    assert result.exit_code == 4
    assert "gradients need a single number" in result.stderr


def test_numbers_and_tensor_elements_print_to_the_same_digits(cli):
    """One rule: 4 significant digits for people, a number or a tensor's element alike;
    --precision N everywhere; every digit for programs (plain, JSON)."""
    result = cli("eval", str(SAMPLES / "neuron.cg"), "--all")
    assert " 6.881\n" in result.stdout  # b
    mixed = cli("grad", "y = sum(sin(x) * W @ v)", "x=1", "W=[[1,2],[3,4]]", "v=[0.3,0.7]")
    assert "[3.366, 5.049]" in mixed.stdout and "y = 4.544" in mixed.stdout
    precise = cli("grad", "y = sum(sin(x) * W @ v)", "x=1", "W=[[1,2],[3,4]]", "v=[0.3,0.7]",
                  "--precision", "6")  # fmt: skip
    assert "[3.36588, 5.04883]" in precise.stdout and "y = 4.54394" in precise.stdout
    plain = cli("eval", str(SAMPLES / "neuron.cg"), "--all", "--format", "plain")
    assert "b=6.881373587019543" in plain.stdout


def test_tables_summarise_large_tensors_unless_full(cli):
    args = ["eval", "y = reshape(x, [5, 4])", "x=" + json.dumps(list(range(20)))]
    short = cli(*args)
    assert "(5, 4) tensor  min 0  max 19  mean 9.5" in short.stdout
    full = cli(*args, "--full")
    assert "[16, 17, 18, 19]]" in full.stdout


# --- printing, diagrams, explanations -------------------------------------------------------------
@pytest.mark.parametrize("name", ["mlp", "logistic_regression", "softmax_cross_entropy"])
def test_tensor_programs_print_back_to_the_same_graph(name):
    graph = parse((SAMPLES / f"{name}.cg").read_text())
    again = parse(to_source(graph))
    assert [str(n) for n in again] == [str(n) for n in graph]
    assert all(np.array_equal(again.defaults[k], v) for k, v in graph.defaults.items())


def test_indexing_and_params_print_back():
    text = "y = sum((a + b)[0, 1:], -1) + reshape(x, [2, -1])[::2] @ [-1, 2]"
    assert to_source(parse(text)).strip() == text


def test_diagram_shows_edge_shapes_and_small_tensors_in_their_nodes(cli):
    result = cli("dot", str(SAMPLES / "softmax_cross_entropy.cg"))
    assert result.exit_code == 0, result.stderr
    dot = result.stdout
    assert 'label="(3, 4)"' in dot  # W -> W @ x
    assert 'label="(3,)"' in dot
    assert ">0.6875</TD>" in dot  # an element of ∂loss/∂z, in a grid cell
    backward = cli("dot", str(SAMPLES / "softmax_cross_entropy.cg"), "--backward").stdout
    assert "t\u03051\u0305 @ xᵀ" in backward  # the reverse rule of @ on the edge from W


def test_diagram_summarises_large_tensors(cli):
    result = cli(
        "dot",
        "y = sum(W @ x)",
        "W=" + json.dumps(np.ones((4, 5)).tolist()),
        "x=" + json.dumps([1.0] * 5),
    )
    assert "(4, 5)  mean 1  [1, 1]" in result.stdout


def test_tensor_output_is_drawn_with_values_only(cli, tmp_path):
    result = cli("render", "y = W @ x", "W=[[1,2],[3,4]]", "x=[1,1]", "-o", str(tmp_path / "y.png"))
    assert result.exit_code == 0, result.stderr
    assert "gradients need a single number" in result.stderr
    assert (tmp_path / "y.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_render_mlp_sample_to_png(cli, tmp_path):
    result = cli("render", str(SAMPLES / "mlp.cg"), "-o", str(tmp_path / "mlp.png"))
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "mlp.png").stat().st_size > 10_000


def test_explain_tensor_program(cli):
    result = cli("explain", "y = sum(W @ x)", "W=[[1,2],[3,4]]", "x=[1,-1]")
    assert result.exit_code == 0, result.stderr
    assert "1. t1 = W @ x: (2, 2) @ (2,) -> (2,) = [-1, -1]" in result.stdout
    assert "W̄ = t̅1̅ @ xᵀ = [[1, -1], [1, -1]]" in result.stdout
    assert "x̄ = Wᵀ @ t̅1̅ = [4, 6]" in result.stdout
    steps = json.loads(
        cli("explain", "y = sum(W @ x)", "W=[[1,2],[3,4]]", "x=[1,-1]", "--format", "json").stdout
    )
    assert steps["gradients"]["W"] == [[1.0, -1.0], [1.0, -1.0]]


def test_explain_says_where_broadcasting_sums(cli):
    result = cli("explain", "y = sum(X + b)", "X=[[1,2],[3,4]]", "b=[1,1]")
    assert "b̄ = t̅1̅, summed over axis 0 (broadcast) = [2, 2]" in result.stdout


def test_show_tensor_program(cli):
    result = cli("show", str(SAMPLES / "softmax_cross_entropy.cg"))
    assert result.exit_code == 0, result.stderr
    assert "p = softmax(z) = [0.6875, 0.1818, 0.1307]" in result.stdout


# --- against SymPy ---------------------------------------------------------------------------------
def _symbols(name: str, shape):
    import sympy

    return (
        sympy.Matrix(*shape, lambda i, j: sympy.Symbol(f"{name}{i}{j}"))
        if len(shape) == 2
        else sympy.Matrix(shape[0], 1, lambda i, _: sympy.Symbol(f"{name}{i}"))
    )


def test_a_layer_with_softmax_against_sympy():
    """loss = logsumexp(tanh(W @ x + b)) - sum(tanh(W @ x + b) * y): every gradient element
    equals SymPy's symbolic derivative."""
    import sympy
    from hypothesis import given, settings
    from hypothesis import strategies as st

    W, x, b, y = (
        _symbols("W", (2, 3)),
        _symbols("x", (3,)),
        _symbols("b", (2,)),
        _symbols("y", (2,)),
    )
    h = (W * x + b).applyfunc(sympy.tanh)
    loss = sympy.log(sum(sympy.exp(e) for e in h)) - sum(h[k] * y[k] for k in range(2))
    symbols = {"W": W, "x": x, "b": b, "y": y}
    every = [s for m in symbols.values() for s in m]
    value_of = sympy.lambdify(every, loss)
    derivatives = {
        n: [sympy.lambdify(every, sympy.diff(loss, s)) for s in m] for n, m in symbols.items()
    }
    graph = parse("h = tanh(W @ x + b)\nloss = logsumexp(h) - sum(h * y)")

    @settings(max_examples=30, deadline=None)
    @given(st.lists(st.floats(-2, 2), min_size=13, max_size=13))
    def check(numbers):
        it = iter(numbers)
        point = {
            n: np.array([[next(it) for _ in range(m.cols)] for _ in range(m.rows)])
            for n, m in symbols.items()
        }
        point = {n: v if n == "W" else v.ravel() for n, v in point.items()}
        args = [float(v) for n in symbols for v in point[n].ravel()]
        result = grad(graph, point)
        assert result.value == pytest.approx(value_of(*args), rel=1e-9, abs=1e-12)
        for name in symbols:
            expected = [d(*args) for d in derivatives[name]]
            np.testing.assert_allclose(
                result.gradients[name].ravel(), expected, rtol=1e-9, atol=1e-12
            )

    check()


def test_every_op_of_the_table_is_gradchecked_on_tensors_here():
    """Each op's tensor rules have a finite-difference test above: the ops of the table at their
    examples, and the calls written out."""
    examples = [f"y = {op.example}" for op in ELEMENTWISE + TENSOR]
    programs = examples + [f"y = {c}" for c in TENSOR_CALLS + VECTOR_CALLS] + ["y = a @ b"]
    covered = {op.name for p in programs for op in parse(p).ops}
    assert covered >= {op.name for op in OPS.values() if op.style != "leaf"}


# --- random tensor programs --------------------------------------------------------------------
def _tensor_expressions():
    """Random expressions over A (2, 3), r (3,), c (2, 1) and s (a number): smooth elementwise
    functions and operators under broadcasting, products and reductions along the way."""
    from hypothesis import strategies as st

    leaves = st.sampled_from(
        [
            "A",
            "r",
            "c",
            "s",
            "(A @ transpose(A))[:, 1:]",
            "softmax(A, 1)",
            "reshape(r, [1, 3])",
            "A[1]",
            "mean(A, 0)",
        ]
    )

    def grow(inner):
        unary = st.tuples(st.sampled_from(["sin", "tanh", "sigmoid", "exp(-abs", "cos"]), inner)
        binary = st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner)
        return unary.map(lambda t: f"{t[0]}({t[1]})" + (")" if "(" in t[0] else "")) | binary.map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        )

    return st.recursive(leaves, grow, max_leaves=6)


def test_random_tensor_programs_against_finite_differences():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    shapes = {"A": (2, 3), "r": (3,), "c": (2, 1), "s": ()}

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        _tensor_expressions(), st.sampled_from(["sum", "mean", "logsumexp"]), st.integers(0, 1000)
    )
    def check(expr, reduce, seed):
        program = f"y = {reduce}({expr})"
        try:
            graph = parse(program)
        except ParseError:
            raise AssertionError(program) from None
        point = {n: _random(shapes[n], seed + k) for k, n in enumerate(graph.inputs)}
        try:
            checks = gradcheck(graph, point, elements=1000)
        except ShapeError:
            return  # (2, 2) with (2, 3): a program a user would be told is wrong
        bad = [(c.label, c.analytic, c.numeric) for c in checks if c.status == "mismatch"]
        assert not bad, (program, bad)

    check()


def test_explain_markdown_and_frames_of_a_tensor_program(cli, tmp_path):
    args = ["explain", str(SAMPLES / "softmax_cross_entropy.cg")]
    md = cli(*args, "--format", "markdown").stdout
    assert "## Backward pass" in md
    z, p = "z̄", "p̄"
    assert f"   - `{z} = p·({p} - sum({p}·p)) = [0.6875, -0.8182, 0.1307]`" in md
    result = cli(*args, "--frames", str(tmp_path), "--frames-format", "svg")
    assert result.exit_code == 0, result.stderr
    frames = sorted(tmp_path.glob("frame-*.svg"))
    assert len(frames) == 11  # the output and every node that leads to it, constants aside
    assert "?" in frames[0].read_text() and "?" not in frames[-1].read_text().split("</title>")[-1]


@pytest.mark.parametrize(
    "program, said",
    [
        ("y = avg_pool2d(x, [2, 2], [1, 1], [1, 1, 1, 1], 2)", "count_pads is 1"),
        ("y = conv2d(x, w, [1, 1], [0, 0, 0, 0], [1, 1], 3)", "channels do not divide into 3"),
        ("y = max_pool2d(x, [6, 6])", "window (6 wide) is larger than the padded image"),
    ],
)
def test_image_ops_say_what_is_wrong_with_their_parameters(program, said):
    bindings = {"x": np.ones((1, 2, 3, 3)), "w": np.ones((3, 1, 2, 2))}
    graph = parse(program)
    with pytest.raises(ShapeError) as err:
        grad(graph, {k: v for k, v in bindings.items() if k in graph.inputs})
    assert said in err.value.message
