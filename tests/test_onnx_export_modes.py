"""`cgraph compile --target onnx --jvp` and `--hvp` (cgraph_cli/run/onnx_export.py): the
forward-mode model (the output and its directional derivative, the direction more inputs
``x_dot``) and the Hessian-vector model (the output, the gradient and its derivative along the
direction, ``dloss_dW_dot``). Every sample and random programs, run by ONNX's reference
evaluator in float64 against cgraph's own forward mode (cg.jvp) and Hessian-vector product
(cg.hessian's ``vector``), and by onnxruntime in float32; the command and what it refuses."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from strategies import INPUTS, points, programs  # noqa: E402
from test_onnx_export import _reference  # noqa: E402

import cgraph_cli as cg  # noqa: E402
from cgraph_cli.core.errors import DomainError  # noqa: E402
from cgraph_cli.run.control import ran_graph  # noqa: E402
from cgraph_cli.run.onnx_export import export_onnx  # noqa: E402

# every sample but those with if/else, which the export refuses (test_onnx_export.py)
SAMPLES = sorted(
    p
    for p in Path("samples").glob("*.cg")
    if not getattr(cg.parse(p.read_text()).control, "conds", None)
)


def _direction(graph, values: dict, seed: int = 0) -> dict:
    """A random direction: a tangent per input, shaped as its value."""
    rng = np.random.default_rng(seed)
    return {n: rng.normal(size=np.shape(values[n])) for n in graph.inputs}


def _point(graph, bindings=None) -> dict:
    return {**graph.defaults, **(bindings or {})}


def _close(got, want, rtol=1e-12):
    want = np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    return np.shape(got) == np.shape(want) and np.allclose(got, want, rtol=rtol, atol=rtol * scale)


def _run_reference(data: bytes, feeds: dict) -> dict:
    model = onnx.load_model_from_string(data)
    onnx.checker.check_model(model, full_check=True)
    feeds = {k: np.asarray(v, dtype=np.float64) for k, v in feeds.items()}
    outs = _reference(model).run(None, feeds)
    return dict(zip([o.name for o in model.graph.output], outs))


def _run_onnxruntime(data: bytes, feeds: dict) -> dict:
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.log_severity_level = 3  # its notes on inputs that have defaults
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    feeds = {k: np.asarray(v, dtype=np.float32) for k, v in feeds.items()}
    outs = session.run(None, feeds)
    assert all(o.dtype == np.float32 for o in outs)
    return dict(zip([o.name for o in session.get_outputs()], outs))


def _jvp_case(graph, bindings=None, seed=0):
    """The model's feeds (the direction as x_dot), and cgraph's value and tangent."""
    ran = ran_graph(graph, bindings)
    point = _point(ran, bindings)
    values = cg.forward(ran, point)
    direction = _direction(ran, point, seed)
    tangent = cg.jvp(ran, values, direction)[ran.output]
    feeds = {**(bindings or {}), **{f"{n}_dot": t for n, t in direction.items()}}
    return feeds, values[ran.output], tangent


def _hvp_case(graph, bindings=None, seed=0):
    """The model's feeds, and cgraph's value, gradients and Hessian-vector product."""
    ran = ran_graph(graph, bindings)
    point = _point(ran, bindings)
    direction = _direction(ran, point, seed)
    report = cg.hessian(graph, bindings, vector=direction)
    feeds = {**(bindings or {}), **{f"{n}_dot": t for n, t in direction.items()}}
    return feeds, report


def _check_jvp(outs: dict, value, tangent, rtol=1e-12):
    names = list(outs)
    assert len(names) == 2 and names[1] == f"{names[0]}_dot", names
    assert _close(outs[names[0]], value, rtol), (outs[names[0]], value)
    assert _close(outs[names[1]], tangent, rtol), (outs[names[1]], tangent)


def _check_hvp(outs: dict, report: dict, rtol=1e-12):
    names = list(outs)
    out = report["output"]
    grads = [f"d{out}_d{w}" for w in report["inputs"]]
    assert names == [out, *grads, *(f"{g}_dot" for g in grads)], names
    assert _close(outs[out], report["value"], rtol)
    for w, g in zip(report["inputs"], grads):
        assert _close(outs[g], report["gradients"][w], rtol), (g, outs[g], report["gradients"][w])
        assert _close(outs[f"{g}_dot"], report["hvp"][w], rtol), (g, outs[f"{g}_dot"],
                                                                   report["hvp"][w])  # fmt: skip


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_every_samples_jvp_model_is_cgraphs_forward_mode(sample):
    graph = cg.parse(sample.read_text(), str(sample))
    feeds, value, tangent = _jvp_case(graph)
    _check_jvp(_run_reference(export_onnx(graph, None, jvp=True), feeds), value, tangent)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_every_samples_hvp_model_is_cgraphs_hessian_vector_product(sample):
    graph = cg.parse(sample.read_text(), str(sample))
    feeds, report = _hvp_case(graph)
    _check_hvp(_run_reference(export_onnx(graph, None, hvp=True), feeds), report)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_every_samples_jvp_and_hvp_models_run_in_onnxruntime_in_float32(sample):
    graph = cg.parse(sample.read_text(), str(sample))
    feeds, value, tangent = _jvp_case(graph, seed=1)
    outs = _run_onnxruntime(export_onnx(graph, None, jvp=True, dtype="float32"), feeds)
    _check_jvp(outs, value, tangent, rtol=1e-5)
    feeds, report = _hvp_case(graph, seed=1)
    outs = _run_onnxruntime(export_onnx(graph, None, hvp=True, dtype="float32"), feeds)
    _check_hvp(outs, report, rtol=1e-5)


def test_the_direction_is_more_inputs_after_the_programs():
    model = onnx.load_model_from_string(
        export_onnx(cg.parse("g = (x + y) * z"), {"x": 1, "y": 3, "z": -3}, hvp=True)
    )
    assert [i.name for i in model.graph.input] == ["x", "y", "z", "x_dot", "y_dot", "z_dot"]
    assert [o.name for o in model.graph.output] == [
        "g", "dg_dx", "dg_dy", "dg_dz", "dg_dx_dot", "dg_dy_dot", "dg_dz_dot",
    ]  # fmt: skip
    # a gradient that is a constant (f = x + y: 1): its product with the Hessian is 0
    data = export_onnx(cg.parse("f = x + 2 * y"), {"x": 1, "y": 2}, hvp=True)
    outs = _run_reference(data, {"x": 1, "y": 2, "x_dot": 3, "y_dot": 4})
    assert [float(v) for v in outs.values()] == [5.0, 1.0, 2.0, 0.0, 0.0]


def test_wrt_chooses_the_direction_and_the_gradients():
    text = open("samples/mlp.cg").read()
    graph = cg.parse(text)
    model = onnx.load_model_from_string(export_onnx(graph, None, hvp=True, wrt=["W2", "b2"]))
    assert [i.name for i in model.graph.input][-2:] == ["W2_dot", "b2_dot"]
    assert [o.name for o in model.graph.output] == [
        "loss", "dloss_dW2", "dloss_db2", "dloss_dW2_dot", "dloss_db2_dot",
    ]  # fmt: skip
    rng = np.random.default_rng(3)
    v = {"W2": rng.normal(size=(5, 2)), "b2": rng.normal(size=2)}
    want = cg.hessian(graph, wrt=["W2", "b2"], vector=v)["hvp"]
    outs = _run_reference(model.SerializeToString(), {"W2_dot": v["W2"], "b2_dot": v["b2"]})
    assert _close(outs["dloss_dW2_dot"], want["W2"]) and _close(outs["dloss_db2_dot"], want["b2"])
    # one input that is a number: the derivative along it, as cgraph diff --mode forward
    data = export_onnx(cg.parse("f = x^3 * y"), {"x": 2, "y": 5}, jvp=True, wrt=["x"])
    assert _run_reference(data, {"x": 2, "y": 5}) == {"f": 40.0, "df_dx": 60.0}


TENSOR_PROGRAMS = [
    ("h = tanh(W @ x + b); y = sum(h * h)", {"W": (3, 4), "x": (4,), "b": (3,)}),
    ("p = softmax(A @ v, 0); y = sum(p * log(p + 1)) + mean(A ^ 2)", {"A": (3, 2), "v": (2,)}),
    ("y = sum(exp(-(x - m) ^ 2) * w) / (1 + sum(w * w))", {"x": (5,), "m": (), "w": (5,)}),
    ("z = relu(X @ W) ; y = sum(sigmoid(z) * T)", {"X": (2, 3), "W": (3, 2), "T": (2, 2)}),
]


@pytest.mark.parametrize("text, shapes", TENSOR_PROGRAMS)
def test_tensor_programs(text, shapes):
    rng = np.random.default_rng(5)
    bindings = {n: rng.normal(size=s) for n, s in shapes.items()}
    graph = cg.parse(text)
    feeds, value, tangent = _jvp_case(graph, bindings, seed=2)
    _check_jvp(_run_reference(export_onnx(graph, bindings, jvp=True), feeds), value, tangent)
    feeds, report = _hvp_case(graph, bindings, seed=2)
    _check_hvp(_run_reference(export_onnx(graph, bindings, hvp=True), feeds), report)


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(programs(), points)
def test_random_programs(program, point):
    """Both sides sum the same partials, in another order: a derivative that cancels carries
    the rounding of its largest terms (as tests/test_properties.py compares the two modes)."""
    graph = cg.parse(program)
    assume(graph.inputs)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    try:
        feeds, value, tangent = _jvp_case(graph, bindings)
        report = _hvp_case(graph, bindings)[1]
    except DomainError:
        assume(False)
    values = cg.forward(graph, bindings)
    largest = max([1.0, *(abs(v) for v in values if isinstance(v, float) and math.isfinite(v))])
    assume(largest < 1e8 and all(math.isfinite(x) for x in (value, tangent)))
    assume(all(math.isfinite(x) for x in [*report["gradients"].values(), *report["hvp"].values()]))
    try:  # the bindings give the shapes: the model's own program must be defined there
        jvp_model = export_onnx(graph, bindings, jvp=True)
        hvp_model = export_onnx(graph, bindings, hvp=True)  # pow(x - x, x): log(0) in it
    except DomainError:
        assume(False)
    with np.errstate(all="ignore"):
        outs = _run_reference(jvp_model, feeds)
        hvp = _run_reference(hvp_model, feeds)
    got = list(outs.values())
    assert got[0] == pytest.approx(value, rel=1e-9, abs=1e-12 * largest), program
    assert got[1] == pytest.approx(tangent, rel=1e-9, abs=1e-9 * largest), program
    for w in report["inputs"]:
        g = f"d{report['output']}_d{w}"
        assert hvp[f"{g}_dot"] == pytest.approx(report["hvp"][w], rel=1e-8, abs=1e-8 * largest)


def test_compile_writes_the_jvp_and_hvp_models(cli, tmp_path):
    target = tmp_path / "neuron_jvp.onnx"
    result = cli("compile", "sample:neuron", "--target", "onnx", "--jvp", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    model = onnx.load(str(target))
    onnx.checker.check_model(model, full_check=True)
    assert [o.name for o in model.graph.output] == ["o", "o_dot"]
    target = tmp_path / "mlp_hvp.onnx"
    result = cli("compile", "sample:mlp", "--target", "onnx", "--hvp", "--wrt", "W2",
                 "--dtype", "float32", "-o", str(target))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    model = onnx.load(str(target))
    assert [o.name for o in model.graph.output] == ["loss", "dloss_dW2", "dloss_dW2_dot"]
    assert {o.type.tensor_type.elem_type for o in model.graph.output} == {onnx.TensorProto.FLOAT}


@pytest.mark.parametrize(
    "flags, both",
    [(["--jvp", "--hvp"], "--jvp and --hvp"), (["--grad", "--jvp"], "--grad and --jvp"),
     (["--grad", "--hvp"], "--grad and --hvp")],
)  # fmt: skip
def test_the_modes_are_one_at_a_time(cli, tmp_path, flags, both):
    out = str(tmp_path / "m.onnx")
    result = cli("compile", "sample:neuron", "--target", "onnx", *flags, "-o", out)
    assert result.exit_code == 2, result.stderr
    assert both in result.stderr and "Traceback" not in result.stderr
    result = cli("compile", "sample:neuron", "--jvp")
    assert result.exit_code == 2 and "are for --target onnx" in result.stderr


@pytest.mark.parametrize("flag", ["--jvp", "--hvp"])
def test_a_direction_is_along_inputs(cli, tmp_path, flag):
    out = str(tmp_path / "m.onnx")
    result = cli("compile", "sample:neuron", "--target", "onnx", flag, "--wrt", "n", "-o", out)
    assert result.exit_code == 2, result.stderr
    assert "'n' is not an input" in result.stderr and "Traceback" not in result.stderr


def test_an_imported_model_with_local_functions_exports_its_jvp_and_hvp():
    """The round trip: a model with a local function from ONNX, read as a program with a def,
    back as the model of its directional derivative and of its Hessian-vector product."""
    from test_onnx_functions import mlp

    from cgraph_cli.imports.onnx import import_onnx, imported_graph

    imported = import_onnx(mlp().SerializeToString(), "mlp.onnx")
    graph = imported_graph(imported, "mlp.onnx")
    x = np.random.default_rng(6).normal(size=(5, 3))
    feeds, value, tangent = _jvp_case(graph, {"x": x}, seed=4)
    _check_jvp(_run_reference(export_onnx(graph, {"x": x}, jvp=True), feeds), value, tangent)
    feeds, report = _hvp_case(graph, {"x": x}, seed=4)
    _check_hvp(_run_reference(export_onnx(graph, {"x": x}, hvp=True), feeds), report)
