"""Models exported by PyTorch itself (torch.onnx.export, the TorchScript exporter), read by
`cgraph import`: values and gradients against PyTorch's autograd, and the gradient exported
back as ONNX. These run where PyTorch is installed (not a dependency of cgraph)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import cgraph_cli as cg  # noqa: E402
from cgraph_cli.imports.onnx import import_onnx, imported_graph  # noqa: E402


class Block(torch.nn.Module):
    """A pre-norm transformer block: torch's own MultiheadAttention, and an MLP with GELU."""

    def __init__(self, d: int = 8, heads: int = 2):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d, 2 * d), torch.nn.GELU(), torch.nn.Linear(2 * d, d)
        )

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


def _classifier():
    return torch.nn.Sequential(
        torch.nn.Linear(6, 16),
        torch.nn.Tanh(),
        torch.nn.Linear(16, 16),
        torch.nn.ReLU(),
        torch.nn.LayerNorm(16),
        torch.nn.Linear(16, 3),
        torch.nn.LogSoftmax(dim=-1),
    )


def _exported(module, x) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's notice of its successor
        torch.onnx.export(
            module, (x,), buffer, dynamo=False, input_names=["x"], output_names=["out"],
            opset_version=17,
        )  # fmt: skip
    return buffer.getvalue()


class LeNet(torch.nn.Module):
    """A small CNN: padded and strided, grouped and dilated convolutions, both pools (the
    average one padded, padding counted as PyTorch counts it by default), a global average."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.pool1 = torch.nn.MaxPool2d(2)
        self.conv2 = torch.nn.Conv2d(4, 6, 3, stride=1, padding=2, dilation=2, groups=2)
        self.pool2 = torch.nn.AvgPool2d(3, stride=2, padding=1)
        self.fc = torch.nn.Linear(6 * 2 * 2, 3)
        self.head = torch.nn.Linear(6, 3, bias=False)

    def forward(self, x):
        h = self.pool1(torch.relu(self.conv1(x)))
        h = torch.tanh(self.conv2(h))
        flat = self.fc(torch.flatten(self.pool2(h), 1))
        return flat + self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(h, 1), 1))


MODULES = {
    "classifier": (_classifier, (5, 6)),
    "block": (Block, (2, 3, 8)),
    "lenet": (LeNet, (2, 2, 8, 8)),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_values_and_gradients_are_pytorchs(name):
    torch.manual_seed(0)
    make, shape = MODULES[name]
    module = make().double().eval()
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    R = torch.randn(module(x).shape, dtype=torch.float64)
    loss = (module(x) * R).sum()
    loss.backward()
    data = _exported(module, x.detach())
    inputs = {"x": x.detach().numpy()}
    imported = import_onnx(data, f"{name}.onnx", inputs)
    graph = imported_graph(imported, f"{name}.onnx")
    out = imported.outputs[0]
    value = cg.evaluate(graph, inputs).named[out]
    assert np.allclose(value, module(x).detach().numpy(), rtol=1e-10, atol=1e-12)
    text = imported.text + f"input R\nloss = sum(R * {out})\n"
    r = cg.grad(text, {**imported.weights, **inputs, "R": R.numpy()})
    assert r.value == pytest.approx(loss.item(), rel=1e-10)
    assert np.allclose(r.gradients["x"], x.grad.numpy(), rtol=1e-9, atol=1e-12)
    # a weight the exporter keeps under its own name, not merged with another (exporters
    # merge equal weights, zeros and ones), has autograd's gradient too
    compared = 0
    for param, p in module.named_parameters():
        key = imported.names.get(param)
        if key in r.gradients and _unshared(imported.text, key):
            # LayerNorm's epsilon is float32's 1e-5 in the file, 1e-5 in PyTorch: 1e-11 apart
            want = p.grad.numpy()
            assert np.allclose(r.gradients[key], want, rtol=0, atol=1e-9 * np.abs(want).max()), key
            compared += 1
    assert compared >= 2, imported.weights.keys()


def _unshared(text: str, key: str) -> bool:
    """Whether no other name is the same input (a statement `other = key`)."""
    return f" = {key}\n" not in text


def test_the_gradient_of_a_pytorch_model_comes_back_as_onnx():
    from onnx.reference import ReferenceEvaluator

    from cgraph_cli.run.onnx_export import export_onnx

    torch.manual_seed(1)
    module = _classifier().double().eval()
    x = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    module(x).sum().backward()
    inputs = {"x": x.detach().numpy()}
    imported = import_onnx(_exported(module, x.detach()), "classifier.onnx", inputs)
    text = imported.text + f"loss = sum({imported.outputs[0]})\n"
    graph = cg.parse(text)
    for k, v in imported.weights.items():
        graph.defaults[k] = v
    data = export_onnx(graph, inputs, grad=True, wrt=["x"])
    import onnx

    model = onnx.load_model_from_string(data)
    got = ReferenceEvaluator(model).run(None, inputs)
    assert np.allclose(got[1], x.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_the_dynamo_exporters_model_imports_with_its_modules():
    pytest.importorskip("onnxscript")  # what torch.onnx.export(dynamo=True) writes with
    torch.manual_seed(2)
    module = _classifier().double().eval()
    x = torch.randn(5, 6, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, (x,), dynamo=True, input_names=["x"])
    inputs = {"x": x.numpy()}
    imported = import_onnx(program.model_proto.SerializeToString(), "dyn.onnx", inputs)
    graph = imported_graph(imported, "dyn.onnx")
    value = cg.evaluate(graph, inputs).named[imported.outputs[0]]
    assert np.allclose(value, module(x).detach().numpy(), rtol=1e-10, atol=1e-12)
    # nn.Sequential's modules by their names, from the name scopes in the nodes' metadata
    assert [g.label for g in graph.groups] == ["0", "1", "2", "3", "4", "5", "6"]


def test_an_embedding_from_pytorch_has_autograds_gradient():
    """nn.Embedding exports as Gather of the token ids: take(weight, ids) here, whose gradient
    is autograd's, rows of repeated tokens included."""
    torch.manual_seed(3)

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(12, 5)
            self.fc = torch.nn.Linear(5, 3)

        def forward(self, ids):
            return torch.log_softmax(self.fc(self.emb(ids).mean(1)), -1)

    module = Classifier().double().eval()
    ids = torch.tensor([[1, 4, 4, 0], [11, 2, 1, 1]])
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (ids,), buffer, dynamo=False, input_names=["ids"],
                          opset_version=17)  # fmt: skip
    inputs = {"ids": ids.numpy()}
    imported = import_onnx(buffer.getvalue(), "emb.onnx", inputs)
    assert "take(emb_weight, ids)" in imported.text
    out = imported.outputs[0]
    module(ids).sum().backward()
    r = cg.grad(imported.text + f"loss = sum({out})\n", {**imported.weights, **inputs})
    assert r.value == pytest.approx(module(ids).sum().item(), rel=1e-12)
    want = module.emb.weight.grad.numpy()
    assert np.allclose(r.gradients["emb_weight"], want, rtol=1e-10, atol=1e-12)
