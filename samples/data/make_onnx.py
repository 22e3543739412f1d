"""Write the sample ONNX model, samples/data/mlp.onnx (run from anywhere; needs onnx):

    python samples/data/make_onnx.py

A classifier of 3 features into 2 classes, as PyTorch's TorchScript exporter writes
nn.Sequential(Linear(3, 5), ReLU(), Linear(5, 2), LogSoftmax(-1)): Gemm nodes with their
weights transposed, the module paths in the node names, the batch axis left open, float32
weights from a fixed seed. tests/test_onnx.py checks that this script writes the file kept.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent


def mlp(dtype=np.float32, seed: int = 0):
    rng = np.random.default_rng(seed)
    weights = {
        "fc1.weight": rng.normal(size=(5, 3)),
        "fc1.bias": rng.normal(size=5),
        "fc2.weight": rng.normal(size=(2, 5)),
        "fc2.bias": rng.normal(size=2),
    }
    kind = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["/fc1/Gemm_output_0"],
                         transB=1, name="/fc1/Gemm"),
        helper.make_node("Relu", ["/fc1/Gemm_output_0"], ["/act/Relu_output_0"], name="/act/Relu"),
        helper.make_node("Gemm", ["/act/Relu_output_0", "fc2.weight", "fc2.bias"],
                         ["/fc2/Gemm_output_0"], transB=1, name="/fc2/Gemm"),
        helper.make_node("LogSoftmax", ["/fc2/Gemm_output_0"], ["logp"], axis=-1,
                         name="/out/LogSoftmax"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", kind, ["batch", 3])],
        [helper.make_tensor_value_info("logp", kind, ["batch", 2])],
        [numpy_helper.from_array(np.asarray(v, dtype=dtype), n) for n, v in weights.items()],
    )
    return helper.make_model(  # IR 8 with opset 17: the same bytes from every onnx release
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="cgraph samples",
        ir_version=8,
    )


if __name__ == "__main__":
    (HERE / "mlp.onnx").write_bytes(mlp().SerializeToString())
    print(f"wrote {HERE / 'mlp.onnx'}")
