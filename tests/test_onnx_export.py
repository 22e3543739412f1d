"""Programs written as ONNX models (cgraph_cli/run/onnx_export.py): every op of the table at
every argument shape and parameter of tests/op_cases.py, with its gradient, against the
interpreter, run by ONNX's reference evaluator; every sample; onnxruntime; the command."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx_corpus import reference as _reference  # noqa: E402
from op_cases import arguments, cases, value_range  # noqa: E402

import cgraph_cli as cg  # noqa: E402
from cgraph_cli.core.errors import Source  # noqa: E402
from cgraph_cli.core.ir import GraphBuilder, validate  # noqa: E402
from cgraph_cli.core.ops import OPS  # noqa: E402
from cgraph_cli.run.onnx_export import RULES, export_onnx  # noqa: E402

COMPUTED = [op for op in OPS.values() if op.arity]
# every sample but those with if/else, which the export refuses (see the last test)
SAMPLES = sorted(
    p
    for p in __import__("pathlib").Path("samples").glob("*.cg")
    if not getattr(cg.parse(p.read_text()).control, "conds", None)
)


def test_every_op_of_the_table_has_an_onnx_form():
    assert set(RULES) == {op.name for op in COMPUTED}


def _one_op(op, shapes, params):
    b = GraphBuilder(Source("", f"<{op.name}>"))
    args = tuple(b.input(f"a{k}", 0, 0) for k in range(op.arity))
    node = b.add(op, args, 0, 0, params)
    b.name(node, "y")
    b.statement("=", "y", node)
    return validate(b.finish(node, "y"))


def _run(data: bytes, feeds: dict) -> list:
    feeds = {k: np.asarray(v, dtype=np.float64) for k, v in feeds.items()}
    return _reference(onnx.load_model_from_string(data)).run(None, feeds)


@pytest.mark.parametrize("op", COMPUTED, ids=lambda op: op.name)
def test_each_op_and_its_gradient_run_as_the_interpreter_runs_them(op):
    rng = np.random.default_rng(0)
    low, high = value_range(op)
    for shapes, params in cases(op):
        graph = _one_op(op, shapes, params)
        drawn = arguments(op, shapes, params, rng, low, high)
        bindings = {f"a{k}": v for k, v in enumerate(drawn)}
        bindings = {k: float(v) if np.ndim(v) == 0 else v for k, v in bindings.items()}
        if op.name in ("where", "logical_and", "logical_or", "logical_not"):
            bindings["a0"] = np.round(bindings["a0"]) if np.ndim(bindings["a0"]) else 0.0
        value = cg.evaluate(graph, bindings).value
        got = _run(export_onnx(graph, bindings), bindings)[0]
        assert np.shape(got) == np.shape(value), (op.name, shapes, params)
        assert np.allclose(got, value, rtol=1e-12, atol=1e-12), (op.name, shapes, params)
        if np.ndim(value) or op.name in ("eq", "ne", "lt", "le", "gt", "ge"):
            continue  # a gradient needs one number out (the reductions and index give one)
        r = cg.grad(graph, bindings)
        outs = _run(export_onnx(graph, bindings, grad=True), bindings)
        for k, got_grad in enumerate(outs[1:]):
            assert np.allclose(got_grad, r.gradients[f"a{k}"], rtol=1e-10, atol=1e-12), (
                op.name, shapes, params, k)  # fmt: skip


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_every_sample_and_its_gradient_as_onnx(sample):
    graph = cg.parse(sample.read_text(), str(sample))
    r = cg.grad(graph)
    data = export_onnx(graph, None, grad=True)
    model = onnx.load_model_from_string(data)
    names = [o.name for o in model.graph.output]
    outs = _reference(model).run(None, {})
    assert np.allclose(outs[0], r.value, rtol=1e-12, atol=1e-12)
    program = cg.derivative_program(graph)
    by_statement = {stmt: wrt for (wrt,), stmt in program.derivatives.items()}
    assert names[1:] == list(by_statement)
    for name, got in zip(names[1:], outs[1:]):
        want = r.gradients[by_statement[name]]
        assert np.allclose(got, want, rtol=1e-10, atol=1e-12), (sample.stem, name)


def test_onnxruntime_runs_the_gradient_model():
    ort = pytest.importorskip("onnxruntime")
    graph = cg.parse(open("samples/mlp.cg").read())
    data = export_onnx(graph, None, grad=True)
    options = ort.SessionOptions()
    options.log_severity_level = 3  # its notes on inputs that have defaults
    # onnxruntime 1.19 fuses MatMul and Transpose into a kernel it has for float32 only
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    outs = session.run(None, {})
    r = cg.grad(graph)
    assert np.allclose(outs[0], r.value, rtol=1e-12)
    names = [o.name for o in session.get_outputs()]
    assert np.allclose(outs[names.index("dloss_dW1")], r.gradients["W1"], rtol=1e-10)
    # inputs are the model's inputs: new data in, new gradients out
    X = np.random.default_rng(1).normal(size=(4, 3))
    outs = session.run(None, {"X": X})
    assert np.allclose(outs[0], cg.grad(graph, {"X": X}).value, rtol=1e-12)


@pytest.mark.parametrize("name, weight", [("block", "proj_weight"), ("lenet", "conv2_weight")])
def test_an_imported_model_exports_its_gradient(name, weight):
    """The round trip: a model from ONNX, its gradient back as ONNX (the CNN's through Conv,
    ConvTranspose, MaxPool's positions, ScatterElements and AveragePool)."""
    from onnx_corpus import INPUT_SHAPES, MODELS

    from cgraph_cli.imports.onnx import import_onnx, imported_graph

    x = np.random.default_rng(2).normal(size=INPUT_SHAPES[name]["x"])
    model = MODELS[name]()
    imported = import_onnx(model.SerializeToString(), f"{name}.onnx", {"x": x})
    graph = imported_graph(imported, name)
    if np.ndim(cg.evaluate(graph, {"x": x}).value):  # a loss of the outputs: sum of squares
        graph = cg.parse(imported.text + f"loss = sum({imported.outputs[0]} ^ 2)\n")
        graph.defaults.update(imported.weights)
    data = export_onnx(graph, {"x": x}, grad=True, wrt=["x", weight])
    outs = _run(data, {"x": x})
    r = cg.grad(graph, {"x": x})
    assert np.allclose(outs[0], r.value, rtol=1e-12)
    assert np.allclose(outs[1], r.gradients["x"], rtol=1e-10, atol=1e-13)
    assert np.allclose(outs[2], r.gradients[weight], rtol=1e-10, atol=1e-13)


def test_compile_writes_the_model(cli, tmp_path):
    target = tmp_path / "seed.onnx"
    result = cli("compile", "sample:seed", "--target", "onnx", "--grad", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    model = onnx.load(str(target))
    onnx.checker.check_model(model, full_check=True)
    assert [o.name for o in model.graph.output] == ["g", "dg_dx", "dg_dy", "dg_dz"]
    outs = _reference(model).run(
        None, {k: np.array(v) for k, v in dict(x=1.0, y=3.0, z=-3.0).items()}
    )
    assert [float(v) for v in outs] == [-12.0, -3.0, -3.0, 4.0]
    wrong = cli("compile", "sample:seed", "--grad")
    assert wrong.exit_code == 2 and "--grad and --dtype are for --target onnx" in wrong.stderr


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_every_sample_in_float32_runs_in_onnxruntime(sample):
    """float32: the type every runtime has kernels for (onnxruntime has no float64 Erf)."""
    ort = pytest.importorskip("onnxruntime")
    graph = cg.parse(sample.read_text(), str(sample))
    r = cg.grad(graph)
    data = export_onnx(graph, None, grad=True, dtype="float32")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    outs = session.run(None, {})
    assert all(o.dtype == np.float32 for o in outs)
    program = cg.derivative_program(graph)
    wrt = {stmt: name for (name,), stmt in program.derivatives.items()}
    assert np.allclose(
        outs[0], r.value, rtol=1e-4, atol=1e-5 * max(1.0, abs(float(np.max(np.abs(r.value)))))
    )
    for out, got in zip(session.get_outputs()[1:], outs[1:]):
        want = np.asarray(r.gradients[wrt[out.name]])
        scale = max(1.0, float(np.max(np.abs(want))))
        assert np.allclose(got, want, rtol=1e-3, atol=1e-4 * scale), (sample.stem, out.name)


def test_compile_writes_a_float32_model(cli, tmp_path):
    target = tmp_path / "mlp32.onnx"
    result = cli("compile", "sample:mlp", "--target", "onnx", "--grad", "--dtype", "float32",
                 "-o", str(target))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    model = onnx.load(str(target))
    assert {o.type.tensor_type.elem_type for o in model.graph.output} == {onnx.TensorProto.FLOAT}


def test_a_product_with_a_vector_survives_onnxruntimes_full_optimizations():
    """onnxruntime 1.32 at ORT_ENABLE_ALL computed Transpose(W) @ v wrongly for a 1-D v; the
    exporter writes such products with a one-column matrix."""
    ort = pytest.importorskip("onnxruntime")
    W, g = np.array([[1.0, 2, 3], [4, 5, 6]]), np.array([1.0, -1])
    graph = cg.parse("y = transpose(W) @ g + g @ W")
    bindings = {"W": W, "g": g}
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    data = export_onnx(graph, bindings, dtype="float32")  # (1.19 fuses for float32 only)
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    feeds = {k: v.astype(np.float32) for k, v in bindings.items()}
    assert session.run(None, feeds)[0].tolist() == [-6.0, -6.0, -6.0]


def test_a_gradient_with_no_path_is_zeros_of_its_inputs_shape(cli, tmp_path):
    """stop_gradient(b): dy_db is 0 in the derivative program; the model gives zeros of b's
    shape, as cgraph grad does. Bindings written on the command line (text) shape the
    direction's inputs of --jvp too."""
    out = tmp_path / "sg.onnx"
    result = cli("compile", "y = sum(stop_gradient(b)) + sum(a)", "a=[1,2]", "b=[[1,2],[3,4]]",
                 "--target", "onnx", "--grad", "-o", str(out))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    model = onnx.load(str(out))
    got = _reference(model).run(None, {"a": np.array([1.0, 2.0]), "b": np.ones((2, 2))})
    names = [o.name for o in model.graph.output]
    assert got[names.index("dy_db")].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert got[names.index("dy_da")].tolist() == [1.0, 1.0]
    out = tmp_path / "tk.onnx"
    result = cli("compile", "y = sum(take(W, ids) ^ 2)", "W=[[1,2],[3,4]]", "ids=[[1,0],[1,1]]",
                 "--target", "onnx", "--jvp", "-o", str(out))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
              for i in onnx.load(str(out)).graph.input}  # fmt: skip
    assert shapes == {"W": [2, 2], "ids": [2, 2], "W_dot": [2, 2], "ids_dot": [2, 2]}


@pytest.mark.parametrize(
    "program, what",
    [
        ("input e = 0.3\nloss = e * e if e < 1 else e", "if/else"),
        ("input n = 3, x = 2\nh = 1\nfor t in range(n):\n    h = h * x", "number of steps"),
    ],
)
def test_a_choice_the_bindings_make_is_refused(program, what):
    # the model would hold the branch (or the steps) these bindings take, whatever its inputs
    with pytest.raises(cg.UsageError, match=what) as e:
        export_onnx(cg.parse(program), None, grad=True)
    assert e.value.where() is not None
