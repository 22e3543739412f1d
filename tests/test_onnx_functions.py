"""ONNX models holding local functions (``model.functions``: what PyTorch's exporters write
with ``export_modules_as_functions``) read as cgraph programs with ``def``s: each function a
``def`` called where the model calls it, or inlined where a cgraph function cannot stand for
it (several outputs, attributes that differ between calls, a body that reads differently at
another call). Values against ONNX's reference evaluator, gradients against the same model
with its functions inlined by onnx and against finite differences; the models are built here
with onnx.helper."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import cgraph_cli as cg  # noqa: E402
from cgraph_cli.imports.onnx import import_onnx, imported_graph  # noqa: E402

D = TensorProto.DOUBLE
OPSETS = [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)]


def _function(name, inputs, outputs, nodes, attributes=()):
    return helper.make_function("local", name, inputs, outputs, nodes, OPSETS, list(attributes))


def _call(name, inputs, outputs, **attrs):
    return helper.make_node(name, inputs, outputs, domain="local", **attrs)


def _model(nodes, functions, inputs, output, weights, check=True):
    graph = helper.make_graph(
        nodes,
        "model",
        [helper.make_tensor_value_info(n, D, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(output, D, [])],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float64), n) for n, v in weights.items()],
    )
    model = helper.make_model(graph, functions=functions, opset_imports=OPSETS, ir_version=9)
    if check:
        onnx.checker.check_model(model)
    return model


DENSE = _function(
    "Dense",
    ["x", "W", "b"],
    ["y"],
    [
        helper.make_node("MatMul", ["x", "W"], ["t"]),
        helper.make_node("Add", ["t", "b"], ["u"]),
        helper.make_node("Tanh", ["u"], ["y"]),
    ],
)


def _weights(seed=0, **shapes):
    rng = np.random.default_rng(seed)
    return {n: rng.normal(size=s) for n, s in shapes.items()}


def mlp():
    """Two layers, one local function ``Dense`` called for each."""
    nodes = [
        _call("Dense", ["x", "W1", "b1"], ["h"]),
        _call("Dense", ["h", "W2", "b2"], ["z"]),
        helper.make_node("ReduceSum", ["z"], ["loss"], keepdims=0),
    ]
    weights = _weights(W1=(3, 4), b1=(4,), W2=(4, 2), b2=(2,))
    return _model(nodes, [DENSE], {"x": [5, 3]}, "loss", weights)


def nested():
    """``Block`` calls ``Dense`` twice and adds a residual; the model calls ``Block`` twice."""
    block = _function(
        "Block",
        ["x", "Wa", "ba", "Wb", "bb"],
        ["y"],
        [
            _call("Dense", ["x", "Wa", "ba"], ["h"]),
            _call("Dense", ["h", "Wb", "bb"], ["r"]),
            helper.make_node("Add", ["x", "r"], ["y"]),
        ],
    )
    nodes = [
        _call("Block", ["x", "W1", "b1", "W2", "b2"], ["h1"]),
        _call("Block", ["h1", "W3", "b3", "W4", "b4"], ["h2"]),
        helper.make_node("ReduceMean", ["h2"], ["out"], keepdims=0),
    ]
    weights = _weights(1, W1=(4, 4), b1=(4,), W2=(4, 4), b2=(4,), W3=(4, 4), b3=(4,),
                       W4=(4, 4), b4=(4,))  # fmt: skip
    # the caller listed before its callee: the program defines the callee first all the same
    return _model(nodes, [block, DENSE], {"x": [3, 4]}, "out", weights)


def two_outputs():
    """``Stats`` returns the centred input and its spread: inlined at each call."""
    stats = _function(
        "Stats",
        ["x"],
        ["c", "s"],
        [
            helper.make_node("Constant", [], ["axes"], value_ints=[1]),
            helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=1),
            helper.make_node("Sub", ["x", "m"], ["c"]),
            helper.make_node("Mul", ["c", "c"], ["c2"]),
            helper.make_node("ReduceMean", ["c2", "axes"], ["s"], keepdims=1),
        ],
    )
    nodes = [
        _call("Stats", ["x"], ["c1", "s1"]),
        helper.make_node("Exp", ["s1"], ["e1"]),
        helper.make_node("Mul", ["c1", "e1"], ["y1"]),
        _call("Stats", ["y1"], ["c2", "s2"]),
        helper.make_node("Add", ["c2", "s2"], ["z"]),
        helper.make_node("ReduceSum", ["z"], ["out"], keepdims=0),
    ]
    return _model(nodes, [stats], {"x": [3, 4]}, "out", {})


def _leaky(alphas):
    """``Leaky`` takes its slope as an attribute; called with ``alphas``, one per call."""
    node = helper.make_node("LeakyRelu", ["x"], ["y"])
    ref = helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT)
    ref.ref_attr_name = "alpha"  # (onnx 1.16's make_attribute_ref leaves it out)
    node.attribute.append(ref)
    leaky = _function("Leaky", ["x"], ["y"], [node], attributes=["alpha"])
    nodes, last = [], "x"
    for k, alpha in enumerate(alphas):
        nodes.append(helper.make_node("MatMul", [last, "W"], [f"m{k}"]))
        nodes.append(_call("Leaky", [f"m{k}"], [f"a{k}"], alpha=alpha))
        last = f"a{k}"
    nodes.append(helper.make_node("ReduceSum", [last], ["out"], keepdims=0))
    return _model(nodes, [leaky], {"x": [3, 4]}, "out", _weights(2, W=(4, 4)))


def constants():
    """A body holding a constant too large to write in the text, an optional input left out
    and a small constant passed in (folded into the body)."""
    rng = np.random.default_rng(4)
    table = numpy_helper.from_array(rng.normal(size=(4, 5)), "table")
    body = _function(
        "Project",
        ["x", "low", "high"],
        ["y"],
        [
            helper.make_node("Constant", [], ["P"], value=table),
            helper.make_node("MatMul", ["x", "P"], ["t"]),
            helper.make_node("Clip", ["t", "low", "high"], ["y"]),
        ],
    )
    nodes = [
        _call("Project", ["x", "low", ""], ["p1"]),
        _call("Project", ["x2", "low", ""], ["p2"]),
        helper.make_node("Add", ["p1", "p2"], ["s"]),
        helper.make_node("ReduceSum", ["s"], ["out"], keepdims=0),
    ]
    return _model(nodes, [body], {"x": [2, 4], "x2": [2, 4]}, "out", {"low": -0.5})


def shapes_differ():
    """``Flat`` called on inputs of two shapes: its reshape reads differently at each."""
    flat = _function("Flat", ["x"], ["y"], [helper.make_node("Flatten", ["x"], ["y"], axis=1)])
    nodes = [
        _call("Flat", ["x"], ["f1"]),
        _call("Flat", ["x2"], ["f2"]),
        helper.make_node("MatMul", ["f1", "W"], ["m"]),
        helper.make_node("Add", ["m", "f2"], ["s"]),
        helper.make_node("ReduceSum", ["s"], ["out"], keepdims=0),
    ]
    inputs = {"x": [2, 3, 4], "x2": [2, 2, 3]}
    return _model(nodes, [flat], inputs, "out", _weights(5, W=(12, 6)))


def names_clash():
    """Names the same as a function's: a tensor of the model called ``Dense``, a body's own
    value called ``Inner`` before it calls the function ``Inner`` (a body is read again at
    each call, so none of its names may be a function's)."""
    inner = _function("Inner", ["u"], ["v"], [helper.make_node("Sin", ["u"], ["v"])])
    outer = _function(
        "Outer",
        ["a"],
        ["b"],
        [helper.make_node("Tanh", ["a"], ["Inner"]), _call("Inner", ["Inner"], ["b"])],
    )
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["Dense"]),
        _call("Dense", ["Dense", "W", "b"], ["Outer"]),
        _call("Outer", ["Outer"], ["o"]),
        _call("Inner", ["o"], ["i"]),
        helper.make_node("ReduceSum", ["i"], ["out"], keepdims=0),
    ]
    return _model(nodes, [outer, inner, DENSE], {"x": [2, 3]}, "out",
                  _weights(6, W=(3, 3), b=(3,)))  # fmt: skip


MODELS = {
    "names_clash": names_clash,
    "mlp": mlp,
    "nested": nested,
    "two_outputs": two_outputs,
    "attribute_same": lambda: _leaky([0.2, 0.2]),
    "attribute_differs": lambda: _leaky([0.2, 0.05]),
    "constants": constants,
    "shapes_differ": shapes_differ,
}


def _inputs(model, seed=3):
    rng = np.random.default_rng(seed)
    shape = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.input}
    weights = {t.name for t in model.graph.initializer}
    return {n: rng.normal(size=s) for n, s in shape.items() if n not in weights}


def _reference(model):
    """ONNX's reference evaluator, run on the model with its functions inlined by onnx (the
    evaluator's own function calls fail on an attribute a function passes to an operator)."""
    from onnx.inliner import inline_local_functions

    return ReferenceEvaluator(inline_local_functions(model))


def _imported(model):
    imported = import_onnx(model.SerializeToString(), "model.onnx")
    return imported, imported_graph(imported, "model.onnx")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_values_are_the_reference_evaluators(name):
    model = MODELS[name]()
    imported, graph = _imported(model)
    inputs = _inputs(model)
    (want,) = _reference(model).run(None, inputs)
    got = cg.evaluate(graph, inputs).named[imported.outputs[0]]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (got, want)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradients_are_those_of_the_model_inlined_and_its_finite_differences(name):
    from onnx.inliner import inline_local_functions

    model = MODELS[name]()
    inputs = _inputs(model)
    imported, graph = _imported(model)
    flat, flat_graph = _imported(inline_local_functions(model))
    assert "def " not in flat.text
    got = cg.grad(graph, inputs).gradients
    want = cg.grad(flat_graph, inputs).gradients
    for n in [*inputs, *imported.weights]:
        if n in want:  # a weight of the inlined model is one of the imported's
            assert np.allclose(got[n], want[n], rtol=1e-12, atol=1e-12), n
    reference = _reference(model)
    x = inputs["x"]
    rng = np.random.default_rng(7)
    for flat_k in rng.choice(x.size, size=4, replace=False):
        k = np.unravel_index(flat_k, x.shape)
        up, down = x.copy(), x.copy()
        up[k] += 1e-6
        down[k] -= 1e-6
        f_up = reference.run(None, {**inputs, "x": up})[0]
        f_down = reference.run(None, {**inputs, "x": down})[0]
        assert got["x"][k] == pytest.approx((f_up - f_down) / 2e-6, rel=1e-5, abs=1e-7)


def test_a_function_called_twice_is_one_def_and_two_calls():
    imported, graph = _imported(mlp())
    lines = imported.text.splitlines()
    assert lines[0].endswith("3 nodes, local functions Dense, weights W1, b1, W2, b2")
    assert lines[4:] == [
        "def Dense(x, W, b):",
        "    t = (x @ W)",
        "    u = (t + b)",
        "    return tanh(u)",
        "h = Dense(x, W1, b1)",
        "z = Dense(h, W2, b2)",
        "loss = sum(z)",
    ]
    assert [(g.kind, g.label) for g in graph.groups] == [
        ("call", "Dense(x, W1, b1)"),
        ("call", "Dense(h, W2, b2)"),
    ]
    dot = cg.evaluate(graph, _inputs(mlp())).diagram(collapse=True).dot
    assert "<B>Dense(x, W1, b1)</B>" in dot and "<B>Dense(h, W2, b2)</B>" in dot


def test_a_function_calling_a_function_comes_after_its_callee():
    imported, graph = _imported(nested())
    text = imported.text
    assert text.index("def Dense(") < text.index("def Block(")
    assert "    h = Dense(x, Wa, ba)" in text and "h1 = Block(x, W1, b1, W2, b2)" in text
    assert [(g.key, g.parent) for g in graph.groups] == [
        ("Block#1", -1), ("Dense#1", 0), ("Dense#2", 0),
        ("Block#2", -1), ("Dense#3", 3), ("Dense#4", 3),
    ]  # fmt: skip


def test_a_function_of_two_outputs_is_inlined_and_the_program_says_so():
    imported, graph = _imported(two_outputs())
    assert "def " not in imported.text
    assert "# Stats: inlined at each call (2 outputs: a cgraph function returns one value)" in (
        imported.text
    )
    assert not graph.groups


def test_an_attribute_the_same_at_every_call_is_written_into_the_def():
    imported, _ = _imported(_leaky([0.2, 0.2]))
    assert "def Leaky(" in imported.text and "0.20000000298023224" in imported.text
    assert imported.text.count("= Leaky(") == 2


def test_an_attribute_that_differs_between_calls_inlines_the_function():
    imported, _ = _imported(_leaky([0.2, 0.05]))
    assert "def " not in imported.text
    assert "# Leaky: inlined at each call (attributes that differ between its calls)" in (
        imported.text
    )


def test_a_large_constant_in_a_body_is_a_weight_passed_in():
    imported, _ = _imported(constants())
    assert "def Project(x, P):" in imported.text
    assert "    return max(t, (-0.5))" in imported.text  # the small constant, folded
    assert list(imported.weights) == ["Project_p"]  # one weight, though both calls pass it
    assert "p1 = Project(x, Project_p)" in imported.text
    assert "p2 = Project(x2, Project_p)" in imported.text


def test_a_body_that_reads_differently_at_another_call_is_inlined_there():
    imported, _ = _imported(shapes_differ())
    assert imported.text.count("def Flat(") == 1 and "f1 = Flat(x)" in imported.text
    assert "reshape(x2, [2, 6])" in imported.text
    assert "# Flat: inlined at each call (its body reads differently at another call" in (
        imported.text
    )


def test_a_recursive_function_is_refused(cli, tmp_path):
    loop = _function("Loop", ["x"], ["y"], [_call("Loop", ["x"], ["y"])])
    model = _model([_call("Loop", ["x"], ["y"])], [loop], {"x": [2]}, "y", {}, check=False)
    path = tmp_path / "loop.onnx"
    path.write_bytes(model.SerializeToString())
    result = cli("import", str(path))
    assert result.exit_code in (2, 3), result.stderr
    assert "Traceback" not in result.stderr and "Loop" in result.stderr


def test_import_writes_the_defs_and_render_folds_each_call(cli, tmp_path):
    path = tmp_path / "mlp.onnx"
    path.write_bytes(mlp().SerializeToString())
    result = cli("import", str(path), "-o", str(tmp_path / "mlp.cg"))
    assert result.exit_code == 0, result.stderr
    assert "def Dense(x, W, b):" in (tmp_path / "mlp.cg").read_text()
    out = tmp_path / "mlp.dot"
    result = cli("render", "-f", str(path), "--collapse", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert out.read_text().count("peripheries=2") == 2  # a folded box per call


def test_pytorchs_export_modules_as_functions():
    """TorchScript's exporter writes each module of the classes named as a local function."""
    torch = pytest.importorskip("torch")

    class Layer(torch.nn.Module):
        def __init__(self, n, m):
            super().__init__()
            self.fc = torch.nn.Linear(n, m)

        def forward(self, x):
            return torch.tanh(self.fc(x))

    net = torch.nn.Sequential(Layer(3, 5), Layer(5, 5), torch.nn.Linear(5, 2)).double()
    x = torch.randn(4, 3, dtype=torch.float64)
    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(net, (x,), buffer, dynamo=False, input_names=["x"],
                              output_names=["out"], opset_version=17,
                              export_modules_as_functions={Layer})  # fmt: skip
    except (TypeError, RuntimeError, ImportError) as e:  # a torch without it
        pytest.skip(f"this torch cannot export modules as functions: {e}")
    model = onnx.load_model_from_string(buffer.getvalue())
    if not model.functions:
        pytest.skip("this torch wrote no local functions")
    imported, graph = _imported(model)
    assert "def Layer(" in imported.text and imported.text.count("= Layer(") == 2
    x.requires_grad_(True)
    want = net(x)
    got = cg.evaluate(graph, {"x": x.detach().numpy()}).named[imported.outputs[0]]
    assert np.allclose(got, want.detach().numpy(), rtol=1e-12, atol=1e-12)
    R = np.random.default_rng(0).normal(size=tuple(want.shape))
    (want * torch.from_numpy(R)).sum().backward()
    text = imported.text + f"input R\nloss = sum(R * {imported.outputs[0]})\n"
    gradient = cg.grad(text, {**imported.weights, "x": x.detach().numpy(), "R": R}).gradients
    assert np.allclose(gradient["x"], x.grad.numpy(), rtol=1e-10, atol=1e-12)
