"""ONNX models read into cgraph programs (cgraph_cli/imports/onnx.py): values against ONNX's
reference evaluator (float64) and onnxruntime (float32), gradients against finite differences
of the model itself, the command, the files it writes, and what it refuses."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx_corpus import INPUT_SHAPES, MODELS, with_op  # noqa: E402
from onnx_corpus import reference as _reference  # noqa: E402

import cgraph_cli as cg  # noqa: E402
from cgraph_cli.imports.onnx import import_onnx, imported_graph  # noqa: E402


def _inputs(name, seed=3):
    """The model's inputs: numbers, and token ids (whole numbers, int64 as ONNX has them)."""
    rng = np.random.default_rng(seed)
    return {
        k: rng.integers(-10, 10, size=s) if k == "ids" else rng.normal(size=s)
        for k, s in INPUT_SHAPES[name].items()
    }


def _imported(name, dtype=np.float64):
    model = MODELS[name](dtype)
    data = model.SerializeToString()
    imported = import_onnx(data, f"{name}.onnx", _inputs(name))
    return model, imported, imported_graph(imported, f"{name}.onnx")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_values_are_the_reference_evaluators(name):
    model, imported, graph = _imported(name)
    inputs = _inputs(name)
    want = _reference(model).run(None, inputs)
    values = cg.evaluate(graph, inputs).named
    for out, expected in zip(imported.outputs, want):
        assert np.shape(values[out]) == np.shape(expected), out
        assert np.allclose(values[out], expected, rtol=1e-12, atol=1e-12), out


@pytest.mark.parametrize("name", sorted(MODELS))
def test_values_are_onnxruntimes_in_float32(name):
    ort = pytest.importorskip("onnxruntime")
    model, imported, graph = _imported(name, np.float32)
    inputs = _inputs(name)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {k: v if k == "ids" else v.astype(np.float32)
                              for k, v in inputs.items()})  # fmt: skip
    values = cg.evaluate(graph, inputs).named
    for out, expected in zip(imported.outputs, want):
        assert np.allclose(values[out], expected, rtol=1e-5, atol=1e-5), out


@pytest.mark.parametrize("name", sorted(n for n in MODELS if "x" in INPUT_SHAPES[n]))
def test_gradients_are_the_models_finite_differences(name):
    """cgraph's gradient of sum(R * output) with respect to the model's input, against
    central differences of the ONNX model run by the reference evaluator."""
    model, imported, _ = _imported(name)
    inputs = _inputs(name)
    out = imported.outputs[0]
    reference = _reference(model)
    rng = np.random.default_rng(7)
    shape = np.shape(reference.run(None, inputs)[0])
    R = rng.normal(size=shape)
    text = imported.text + f"input R\nloss = sum(R * {out})\n"
    bindings = {**imported.weights, **inputs, "R": R}
    gradient = cg.grad(text, bindings).gradients["x"]

    def loss(x):
        return float(np.sum(R * reference.run(None, {**inputs, "x": x})[0]))

    x = inputs["x"]
    for flat in rng.choice(x.size, size=6, replace=False):
        k = np.unravel_index(flat, x.shape)
        h = 1e-6
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        assert gradient[k] == pytest.approx((loss(up) - loss(down)) / (2 * h), rel=1e-5, abs=1e-7)


def test_an_embeddings_gradient_adds_up_where_a_token_repeats():
    """Gather of token ids is take(emb_weight, ids): its gradient is the model's finite
    differences in the table, rows of tokens met twice getting twice."""
    from onnx import numpy_helper

    model, imported, _ = _imported("embedding")
    assert "tokens = take(emb_weight, ids)" in imported.text
    assert "p = take(pos_weight, [4, 0, 2, 2, 5])" in imported.text
    inputs = _inputs("embedding")
    R = np.random.default_rng(8).normal(size=(3, 2))
    text = imported.text + "input R\nloss = sum(R * y)\n"
    r = cg.grad(text, {**imported.weights, **inputs, "R": R})
    table = imported.weights["emb_weight"]

    def loss(W):
        changed = onnx.ModelProto()
        changed.CopyFrom(model)
        for k, init in enumerate(changed.graph.initializer):
            if init.name == "emb.weight":
                changed.graph.initializer[k].CopyFrom(numpy_helper.from_array(W, "emb.weight"))
        return float(np.sum(R * _reference(changed).run(None, inputs)[0]))

    for k in [(int(inputs["ids"][0, 0]) % 10, 1), (3, 2), (7, 0)]:
        up, down = table.copy(), table.copy()
        up[k] += 1e-6
        down[k] -= 1e-6
        numeric = (loss(up) - loss(down)) / 2e-6
        assert r.gradients["emb_weight"][k] == pytest.approx(numeric, rel=1e-6, abs=1e-9)
    assert np.all(r.gradients["ids"] == 0)  # positions have no gradient


def test_the_program_reads_as_a_person_writes_it():
    _, imported, graph = _imported("mlp")
    lines = imported.text.splitlines()
    assert lines[1] == "# Bind the weights with --bindings FILE.npz (written by cgraph import -o)"
    assert lines[2:] == [
        "input x",
        "input fc1_weight, fc1_bias, fc2_weight, fc2_bias",
        "fc1_gemm = x @ transpose(fc1_weight) + fc1_bias",
        "act_relu = relu(fc1_gemm)",
        "fc2_gemm = act_relu @ transpose(fc2_weight) + fc2_bias",
        "logp = log_softmax(fc2_gemm, -1)",
    ]
    # the shape arithmetic around the block's reshape is folded to its result
    text = _imported("block")[1].text
    assert "flat_reshape = reshape(ln_out, [6, -1])" in text
    # an attribute is float32's value: the model's own (0.1 is 0.10000000149011612)
    assert "0.10000000149011612 * bn_out" in text
    assert "Shape" not in text and "gather" not in text
    # each module a group: the views fold them
    assert [g.label for g in graph.groups] == ["fc1", "act", "fc2", "out"]


def test_modules_fold_in_drawings_with_the_weights_inside():
    _, _, graph = _imported("block")
    dot = cg.diagram(graph, _inputs("block"), collapse=True).dot
    for module in ("ln", "flat", "proj", "act", "res", "bn", "head"):
        assert f"<B>{module}</B>" in dot
    assert "holds ln_weight, ln_bias" in dot


def _write(tmp_path, name, dtype=np.float64):
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(MODELS[name](dtype).SerializeToString())
    return path


def _npz(path, **arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    return path


def test_import_writes_the_program_and_its_weights_and_they_run(cli, tmp_path):
    model = _write(tmp_path, "mlp")
    target = tmp_path / "mlp.cg"
    result = cli("import", str(model), "-o", str(target))
    assert result.exit_code == 0, result.stderr
    assert f"wrote {target} and its weights, {tmp_path / 'mlp.npz'}" in result.stderr
    text = target.read_text()
    assert "[[" not in text  # no weight written into the text
    weights = np.load(tmp_path / "mlp.npz")
    assert sorted(weights.files) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    x = _npz(tmp_path / "x.npz", x=_inputs("mlp")["x"])
    np.save(tmp_path / "x.npy", _inputs("mlp")["x"])
    from_text = cli("eval", str(target), "--bindings", str(tmp_path / "mlp.npz"),
                    f"x=@{tmp_path / 'x.npy'}", "--format", "json")  # fmt: skip
    from_model = cli("eval", str(model), "--bindings", str(x), "--format", "json")
    assert from_text.exit_code == 0 and from_model.exit_code == 0, from_text.stderr
    assert from_text.stdout == from_model.stdout
    again = cli("import", str(model), "-o", str(target))  # mlp.npz is cgraph's, but exists
    assert again.exit_code == 2 and "--weights" in again.stderr


def test_every_command_takes_a_model_where_it_takes_a_program(cli, tmp_path):
    model = _write(tmp_path, "block")
    x = _npz(tmp_path / "x.npz", x=_inputs("block")["x"])
    result = cli("grad", str(model), "--bindings", str(x), "--wrt", "proj_weight", "--format",
                 "json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "block.png"
    drawn = cli("render", str(model), "--bindings", str(x), "--collapse", "-o", str(out))
    assert drawn.exit_code == 0, drawn.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"
    checked = cli("gradcheck", str(model), "--bindings", str(x))
    assert checked.exit_code == 0, checked.stderr + checked.stdout


def test_a_model_with_an_open_batch_axis_asks_for_its_shapes(cli, tmp_path):
    model = _write(tmp_path, "block")
    result = cli("import", str(model))
    assert result.exit_code == 2
    assert "leaves open" in result.stderr and "--example" in result.stderr
    x = _npz(tmp_path / "x.npz", x=_inputs("block")["x"])
    assert cli("import", str(model), "--example", str(x)).exit_code == 0


def test_an_operator_cgraph_lacks_is_refused_by_name(cli, tmp_path):
    path = tmp_path / "unpool.onnx"
    path.write_bytes(with_op("MaxUnpool", kernel_shape=[3, 3]).SerializeToString())
    result = cli("import", str(path))
    assert result.exit_code == 3
    assert "cannot import the operator MaxUnpool (node /m/MaxUnpool)" in result.stderr
    assert "cgraph imports " in result.stderr and "Gemm" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "content",
    [b"not a model at all", b"\x08\x07\x12\x05hello", b""],
    ids=["text", "damaged", "empty"],
)
def test_a_file_that_is_not_a_model_is_a_usage_error(cli, tmp_path, content):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    result = cli("import", str(path))
    assert result.exit_code == 2, result.stderr
    assert "bad.onnx is not an ONNX model" in result.stderr
    assert cli("eval", str(path)).exit_code == 2


def test_weights_kept_in_another_file_are_refused(cli, tmp_path):
    model = MODELS["mlp"]()
    tensor = model.graph.initializer[0]
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "/etc/passwd"
    path = tmp_path / "ext.onnx"
    path.write_bytes(model.SerializeToString())
    result = cli("import", str(path))
    assert result.exit_code == 2
    assert "keeps its weight fc1.weight in another file" in result.stderr


def test_the_sample_model_is_what_its_script_writes():
    from onnx_corpus import _sample_generator

    kept = (Path(__file__).resolve().parent.parent / "samples" / "data" / "mlp.onnx").read_bytes()
    assert kept == _sample_generator().mlp().SerializeToString()


def test_the_sample_model_runs_from_its_name(cli):
    result = cli("eval", "sample:mlp.onnx", "x=[[1, 2, 3], [0, -1, 0.5]]", "--format", "json")
    assert result.exit_code == 0, result.stderr
    logp = np.array(__import__("json").loads(result.stdout)["value"])
    assert logp.shape == (2, 2) and np.allclose(np.exp(logp).sum(axis=1), 1)


def test_the_docs_show_the_program_import_writes(cli):
    page = (Path(__file__).resolve().parent.parent / "docs/commands/import.md").read_text()
    shown = page.split("`mlp.cg` (the sample is", 1)[1].split("```cgraph\n", 1)[1].split("```\n")[0]
    assert cli("import", "sample:mlp.onnx").stdout == shown


def test_the_dynamo_exporters_name_scopes_nest_the_modules():
    model = MODELS["mlp"]()
    scopes = {
        "Gemm": ["", "net", "net.0"],
        "Relu": ["", "net", "net.1"],
        "LogSoftmax": ["", "net", "net.3"],
    }
    for k, node in enumerate(model.graph.node):
        node.name = f"node_{k}"  # the dynamo exporter's names say nothing of the modules
        path = scopes.get(node.op_type, ["", "net", "net.2"])
        if node.op_type == "Gemm" and k > 0:
            path = ["", "net", "net.2"]
        node.metadata_props.add(key="pkg.torch.onnx.name_scopes", value=repr([*path, f"op_{k}"]))
    bad = model.graph.node[0].metadata_props.add(key="pkg.torch.onnx.class_hierarchy")
    bad.value = "__import__('os').system('false')"  # metadata is data: never run
    imported = import_onnx(model.SerializeToString(), "mlp.onnx")
    graph = imported_graph(imported, "mlp.onnx")
    assert [(g.label, g.parent) for g in graph.groups] == [
        ("net", -1),
        ("net/0", 0),
        ("net/1", 0),
        ("net/2", 0),
        ("net/3", 0),
    ]


@pytest.mark.parametrize(
    "node",
    [("Gemm", ["x"]), ("Where", ["x", "x"]), ("Add", ["x", "made_by_nothing"])],
    ids=["an input missing", "an input missing 2", "a name nothing makes"],
)
def test_a_malformed_model_is_a_usage_error_that_says_why(cli, tmp_path, node):
    from onnx import TensorProto, helper

    kind = TensorProto.DOUBLE
    graph = helper.make_graph(
        [helper.make_node(node[0], node[1], ["y"], name="/m/bad")],
        "bad",
        [helper.make_tensor_value_info("x", kind, [2, 2])],
        [helper.make_tensor_value_info("y", kind, [2, 2])],
    )
    path = tmp_path / "bad.onnx"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    path.write_bytes(model.SerializeToString())
    result = cli("import", str(path))
    assert result.exit_code == 2, result.stderr
    assert "bad.onnx is not a valid ONNX model: " in result.stderr
    assert "Traceback" not in result.stderr


def test_gradcheck_of_an_embedding_leaves_its_token_ids_out():
    """Token ids are positions: no finite difference is taken in them (a step would leave the
    whole numbers); the table's gradient is checked."""
    _, imported, _ = _imported("embedding")
    inputs = _inputs("embedding")
    graph = cg.parse(imported.text + "loss = sum(y ^ 2)\n")
    report = cg.gradcheck(graph, {**inputs, **imported.weights})
    checked = {c.label.split("[")[0] for _, c in report.checks}
    assert "ids" not in checked and "emb_weight" in checked
    assert report.ok
