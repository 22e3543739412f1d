"""ONNX in and out: how long `cgraph import` takes on models of 1,000 to 10,000 nodes (the
goal: 10,000 under 2 s), beside the practical limit, decoding the file and ONNX's own shape
inference (which the import runs); and the gradient of an imported MLP at batch 32, cgraph's
interpreter and the model it exports (`compile --target onnx --grad`) in onnxruntime, beside
onnxruntime's forward pass alone and the same gradient written by hand in NumPy.

    python bench/bench_onnx.py                 # 1,000 / 4,000 / 10,000 nodes, 5 runs
    python bench/bench_onnx.py --runs 9 --nodes 10000

Each figure is the median and range of ``--runs`` runs, in process, taking turns with its
baseline run by run. PyTorch and JAX are timed where they are installed (not needed).
Prints figures; asserts nothing.
"""

from __future__ import annotations

import os

# One thread for NumPy's BLAS as for PyTorch and onnxruntime: the figures compare one core's
# work, and a BLAS spinning two threads on a shared 2-core machine is slower, not faster.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def chain_model(nodes: int, width: int = 8, seed: int = 0) -> onnx.ModelProto:
    """A deep MLP as an exporter writes it: layers of MatMul, Add, Tanh, Identity (a weight
    passed on), four nodes a layer, 8 units wide, the module path in each name."""
    rng = np.random.default_rng(seed)
    layers = nodes // 4
    out, body, inits = "x", [], []
    for k in range(layers):
        w, b = f"l{k}.weight", f"l{k}.bias"
        inits += [
            numpy_helper.from_array(rng.normal(size=(width, width)).astype(np.float32) / 3, w),
            numpy_helper.from_array(rng.normal(size=width).astype(np.float32) / 10, b),
        ]
        p = f"/layers.{k}"
        body += [
            helper.make_node("Identity", [w], [f"{p}/w"], name=f"{p}/Identity"),
            helper.make_node("MatMul", [out, f"{p}/w"], [f"{p}/MatMul_output_0"], name=f"{p}/MatMul"),
            helper.make_node("Add", [f"{p}/MatMul_output_0", b], [f"{p}/Add_output_0"], name=f"{p}/Add"),
            helper.make_node("Tanh", [f"{p}/Add_output_0"], [f"{p}/Tanh_output_0"], name=f"{p}/Tanh"),
        ]  # fmt: skip
        out = f"{p}/Tanh_output_0"
    graph = helper.make_graph(
        body,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, width])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [32, width])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def spread(times: list[float]) -> str:
    return f"{statistics.median(times):.3f} s ({min(times):.3f}-{max(times):.3f})"


def imports(sizes: list[int], runs: int) -> None:
    from onnx import shape_inference

    from cgraph_cli.imports.onnx import import_onnx, imported_graph

    print(f"cgraph import, median (range) of {runs} runs")
    print(f"{'nodes':>8}  {'import (text + graph)':>26}  {'decode + shape inference':>26}  ratio")
    for n in sizes:
        data = chain_model(n).SerializeToString()
        ours, limit = [], []
        for _ in range(runs):
            start = time.perf_counter()
            model = onnx.load_model_from_string(data)
            shape_inference.infer_shapes(model, data_prop=True)
            limit.append(time.perf_counter() - start)
            start = time.perf_counter()
            imported_graph(import_onnx(data, "chain.onnx"), "chain.onnx")
            ours.append(time.perf_counter() - start)
        ratio = statistics.median(ours) / statistics.median(limit)
        print(f"{n:>8,}  {spread(ours):>26}  {spread(limit):>26}  {ratio:.1f}x")


def gradients(runs: int, batch: int = 32) -> None:
    import onnxruntime as ort

    import cgraph_cli as cg
    from cgraph_cli.imports.onnx import import_onnx
    from cgraph_cli.run.onnx_export import export_onnx

    rng = np.random.default_rng(1)
    W1, b1 = rng.normal(size=(64, 32)), rng.normal(size=64)
    W2, b2 = rng.normal(size=(10, 64)), rng.normal(size=10)
    weights = {"fc1.weight": W1, "fc1.bias": b1, "fc2.weight": W2, "fc2.bias": b2}
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], transB=1, name="/fc1/Gemm"),
        helper.make_node("Relu", ["h"], ["r"], name="/act/Relu"),
        helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["z"], transB=1, name="/fc2/Gemm"),
        helper.make_node("LogSoftmax", ["z"], ["logp"], axis=-1, name="/out/LogSoftmax"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [batch, 32])],
        [helper.make_tensor_value_info("logp", TensorProto.DOUBLE, [batch, 10])],
        [numpy_helper.from_array(v, n) for n, v in weights.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    imported = import_onnx(model.SerializeToString(), "mlp.onnx")
    T = np.eye(10)[rng.integers(0, 10, size=batch)]
    text = imported.text + "input T\nloss = -sum(T * logp) / " + str(batch) + "\n"
    program = cg.parse(text)
    for name, value in imported.weights.items():
        program.defaults[name] = value
    x = rng.normal(size=(batch, 32))
    bindings = {"x": x, "T": T}
    quiet = ort.SessionOptions()
    quiet.log_severity_level = 3
    forward = ort.InferenceSession(
        model.SerializeToString(), quiet, providers=["CPUExecutionProvider"]
    )
    exported = export_onnx(program, bindings, grad=True)
    backward = ort.InferenceSession(exported, quiet, providers=["CPUExecutionProvider"])

    def numpy_grad():
        h = x @ W1.T + b1
        r = np.maximum(h, 0)
        z = r @ W2.T + b2
        top = z.max(axis=1, keepdims=True)
        logp = z - top - np.log(np.exp(z - top).sum(axis=1, keepdims=True))
        dz = (np.exp(logp) * T.sum(axis=1, keepdims=True) - T) / batch
        dW2, db2 = dz.T @ r, dz.sum(axis=0)
        dr = dz @ W2
        dh = dr * (h > 0)
        return dh.T @ x, dh.sum(axis=0), dW2, db2

    cases = {
        "cgraph grad (compiled from the 2nd call)": lambda: cg.grad(program, bindings),
        "exported gradient model in onnxruntime": lambda: backward.run(None, {"x": x, "T": T}),
        "onnxruntime forward only": lambda: forward.run(None, {"x": x}),
        "NumPy by hand, forward + backward": numpy_grad,
    }
    try:  # where PyTorch is installed: its eager forward and backward, on one thread
        import torch

        torch.set_num_threads(1)
        tw = {n: torch.tensor(v, requires_grad=True) for n, v in weights.items()}
        tx, tT = torch.tensor(x), torch.tensor(T)

        def torch_grad():
            h = torch.relu(tx @ tw["fc1.weight"].T + tw["fc1.bias"])
            z = h @ tw["fc2.weight"].T + tw["fc2.bias"]
            loss = -(tT * torch.log_softmax(z, dim=-1)).sum() / batch
            return torch.autograd.grad(loss, list(tw.values()))

        cases["PyTorch eager, forward + backward (1 thread)"] = torch_grad
    except ImportError:
        pass
    try:  # where JAX is installed: jit of its value_and_grad, in float64
        import jax

        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy

        def jax_loss(w1, c1, w2, c2):
            h = jax.nn.relu(x @ w1.T + c1)
            return -jnp.sum(T * jax.nn.log_softmax(h @ w2.T + c2, axis=-1)) / batch

        jitted = jax.jit(jax.value_and_grad(jax_loss, argnums=(0, 1, 2, 3)))
        args = [jnp.asarray(v) for v in (W1, b1, W2, b2)]

        def jax_grad():
            return jax.block_until_ready(jitted(*args))

        jax_grad()  # compiled before timing
        cases["JAX jit(value_and_grad)"] = jax_grad
    except ImportError:
        pass
    title = f"gradient of an imported MLP (32 -> 64 -> 10), batch {batch}, float64"
    _race(title, cases, runs, calls=20, digits=3)


def transformer(runs: int, batch: int = 32, seq: int = 16, width: int = 64) -> None:
    """The gradient of a transformer block PyTorch exports (torch.nn.MultiheadAttention, 4
    heads, a GELU MLP), imported, against PyTorch eager on one thread, and onnxruntime's
    forward pass of the float32 export (it has no float64 Erf, so the exported gradient model
    does not run there); where PyTorch is installed (it makes the model)."""
    torch = _torch("transformer block")
    if torch is None:
        return

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
            self.attn = torch.nn.MultiheadAttention(width, 4, batch_first=True)
            self.mlp = torch.nn.Sequential(
                torch.nn.Linear(width, 4 * width),
                torch.nn.GELU(),
                torch.nn.Linear(4 * width, width),
            )

        def forward(self, x):
            h = self.ln1(x)
            a, _ = self.attn(h, h, h, need_weights=False)
            x = x + a
            return (x + self.mlp(self.ln2(x))).pow(2).mean()

    title = (f"gradient of a transformer block from PyTorch (width {width}, 4 heads, sequence "
             f"{seq}), batch {batch}, float64, one thread")  # fmt: skip
    _against_pytorch(title, Block(), (batch, seq, width), runs)


def cnn(runs: int, batch: int = 32) -> None:
    """The gradient of a LeNet-5 PyTorch exports (28 x 28 images: Conv 5 x 5 with padding,
    ReLU, MaxPool, Conv, ReLU, MaxPool, three Linear layers, LogSoftmax, the mean NLL of
    fixed labels as the loss), likewise."""
    torch = _torch("CNN")
    if torch is None:
        return
    nn = torch.nn
    onehot = torch.nn.functional.one_hot(torch.randint(0, 10, (batch,)), 10).double()

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            )  # fmt: skip
            self.classifier = nn.Sequential(
                nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                nn.Linear(84, 10), nn.LogSoftmax(-1),
            )  # fmt: skip

        def forward(self, x):
            out = self.classifier(self.features(x))
            return -(out * onehot.to(out.dtype)).sum(-1).mean()

    title = f"gradient of a LeNet-5 from PyTorch (1 x 28 x 28), batch {batch}, float64, one thread"
    _against_pytorch(title, LeNet(), (batch, 1, 28, 28), runs)


def _torch(what: str):
    try:
        import torch
    except ImportError:
        print(f"\n{what}: PyTorch is not installed (it exports the model)")
        return None
    torch.set_num_threads(1)
    torch.manual_seed(0)
    return torch


def _against_pytorch(title: str, module, shape: tuple, runs: int) -> None:
    """``module`` (its output the loss) exported by PyTorch and imported: cgraph's gradient
    against PyTorch eager forward + backward, and onnxruntime's float32 forward pass."""
    import io
    import warnings

    import onnxruntime as ort
    import torch

    import cgraph_cli as cg
    from cgraph_cli.imports.onnx import import_onnx

    def exported(dtype) -> bytes:
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module.to(dtype), (x.to(dtype),), buffer, dynamo=False,
                              input_names=["x"], opset_version=17)  # fmt: skip
        return buffer.getvalue()

    module.eval()
    x = torch.randn(*shape, dtype=torch.float64)
    single = exported(torch.float32)
    inputs = {"x": x.numpy()}
    imported = import_onnx(exported(torch.float64), "model.onnx", inputs)
    program = cg.parse(imported.text)
    for name, value in imported.weights.items():
        program.defaults[name] = value
    quiet = ort.SessionOptions()
    quiet.log_severity_level = 3
    quiet.intra_op_num_threads = 1
    forward = ort.InferenceSession(single, quiet, providers=["CPUExecutionProvider"])
    x32 = {"x": x.numpy().astype(np.float32)}
    params = list(module.parameters())
    xt = x.clone().requires_grad_(True)

    def torch_grad():
        return torch.autograd.grad(module(xt), [xt, *params])

    mine, theirs = cg.grad(program, inputs), torch_grad()
    assert np.allclose(mine.gradients["x"], theirs[0].numpy(), rtol=1e-8, atol=1e-12)
    cases = {
        "cgraph grad (compiled from the 2nd call)": lambda: cg.grad(program, inputs),
        "onnxruntime forward only (float32)": lambda: forward.run(None, x32),
        "PyTorch eager, forward + backward": torch_grad,
    }
    _race(title, cases, runs, calls=5, digits=2)


def _race(title: str, cases: dict, runs: int, calls: int, digits: int) -> None:
    """Each case ``calls`` times a run, the cases taking turns run by run; prints the median
    and range of ``runs`` runs, in ms a call."""
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs):
        for name, run in cases.items():
            start = time.perf_counter()
            for _ in range(calls):
                run()
            times[name].append((time.perf_counter() - start) / calls)
    print(f"\n{title}; median (range) of {runs} runs of {calls} calls")
    for name, ts in times.items():
        ms = [t * 1000 for t in ts]
        low, high = min(ms), max(ms)
        print(f"  {name:<42} {statistics.median(ms):8.{digits}f} ms "
              f"({low:.{digits}f}-{high:.{digits}f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", default="1000,4000,10000")
    args = parser.parse_args()
    imports([int(n) for n in args.nodes.split(",")], args.runs)
    gradients(args.runs)
    transformer(args.runs)
    cnn(args.runs)


if __name__ == "__main__":
    main()
