"""ONNX models built here with onnx.helper (no downloaded file): the shapes of what PyTorch's
exporters write for an MLP and for a normalised block, with the module paths TorchScript's
exporter puts into node names, and the shape arithmetic it emits around a reshape."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 20


def _model(nodes, inputs, outputs, weights, dtype, opset=OPSET, name="model"):
    kind = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.asarray(v, dtype=dtype), n) for n, v in weights.items()]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, kind, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, kind, s) for n, s in outputs],
        inits,
    )
    # IR 9 with opset 20: what every onnxruntime from the floor on loads, from any onnx
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _int64(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def mlp(dtype=np.float64, seed=0):
    """nn.Sequential(Linear(3, 5), ReLU(), Linear(5, 2), LogSoftmax(-1)) as TorchScript's
    exporter writes it (Gemm with transB, a batch axis left open): the sample model's
    generator, samples/data/make_onnx.py."""
    return _sample_generator().mlp(dtype, seed)


def _sample_generator():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "samples" / "data" / "make_onnx.py"
    spec = importlib.util.spec_from_file_location("make_onnx", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def block(dtype=np.float64, seed=1):
    """A normalised block: LayerNormalization, a reshape computed from the input's shape
    (Shape, Gather, Unsqueeze, Concat, as exporters write a flatten), MatMul and Add, GELU
    (tanh), a residual, BatchNormalization (inference), LeakyRelu, a Where on a comparison,
    Sigmoid, Dropout, Div/Pow/Sqrt/Sub, ReduceMean with and without keepdims, and one weight
    passed on through Identity."""
    rng = np.random.default_rng(seed)
    weights = {
        "ln.weight": 1 + 0.1 * rng.normal(size=6),
        "ln.bias": 0.1 * rng.normal(size=6),
        "proj.weight": rng.normal(size=(6, 6)) / 3,
        "proj.bias": 0.1 * rng.normal(size=6),
        "bn.weight": 1 + 0.1 * rng.normal(size=6),
        "bn.bias": 0.1 * rng.normal(size=6),
        "bn.running_mean": 0.1 * rng.normal(size=6),
        "bn.running_var": 1 + 0.1 * rng.random(6),
        "scale": np.array([1.5]),  # a learned scale: shape (1,), a weight
    }
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln.weight", "ln.bias"], ["/ln/out"], axis=-1,
          epsilon=1e-5, name="/ln/LayerNormalization"),
        n("Shape", ["/ln/out"], ["/flat/Shape_output_0"], name="/flat/Shape"),
        n("Gather", ["/flat/Shape_output_0", "zero"], ["/flat/Gather_output_0"], axis=0,
          name="/flat/Gather"),
        n("Gather", ["/flat/Shape_output_0", "one"], ["/flat/Gather_1_output_0"], axis=0,
          name="/flat/Gather_1"),
        n("Mul", ["/flat/Gather_output_0", "/flat/Gather_1_output_0"], ["/flat/Mul_output_0"],
          name="/flat/Mul"),
        n("Unsqueeze", ["/flat/Mul_output_0", "axes0"], ["/flat/Unsqueeze_output_0"],
          name="/flat/Unsqueeze"),
        n("Concat", ["/flat/Unsqueeze_output_0", "minus_one"], ["/flat/Concat_output_0"],
          axis=0, name="/flat/Concat"),
        n("Reshape", ["/ln/out", "/flat/Concat_output_0"], ["/flat/Reshape_output_0"],
          name="/flat/Reshape"),
        n("MatMul", ["/flat/Reshape_output_0", "proj.weight"], ["/proj/MatMul_output_0"],
          name="/proj/MatMul"),
        n("Add", ["/proj/MatMul_output_0", "proj.bias"], ["/proj/Add_output_0"], name="/proj/Add"),
        n("Gelu", ["/proj/Add_output_0"], ["/act/Gelu_output_0"], approximate="tanh",
          name="/act/Gelu"),
        n("Add", ["/act/Gelu_output_0", "/flat/Reshape_output_0"], ["/res/Add_output_0"],
          name="/res/Add"),
        n("BatchNormalization", ["/res/Add_output_0", "bn.weight", "bn.bias", "bn.running_mean",
          "bn.running_var"], ["/bn/out"], epsilon=1e-5, name="/bn/BatchNormalization"),
        n("LeakyRelu", ["/bn/out"], ["/act2/LeakyRelu_output_0"], alpha=0.1, name="/act2/LeakyRelu"),
        n("Identity", ["scale"], ["/head/scale_copy"], name="/head/Identity"),
        n("Mul", ["/act2/LeakyRelu_output_0", "/head/scale_copy"], ["/head/Mul_output_0"],
          name="/head/Mul"),
        n("Dropout", ["/head/Mul_output_0"], ["/head/Dropout_output_0"], name="/head/Dropout"),
        n("Greater", ["/head/Dropout_output_0", "zero_f"], ["/head/Greater_output_0"],
          name="/head/Greater"),
        n("Sigmoid", ["/head/Dropout_output_0"], ["/head/Sigmoid_output_0"], name="/head/Sigmoid"),
        n("Where", ["/head/Greater_output_0", "/head/Dropout_output_0", "/head/Sigmoid_output_0"],
          ["/head/Where_output_0"], name="/head/Where"),
        n("ReduceMean", ["/head/Where_output_0", "axes1"], ["/head/ReduceMean_output_0"],
          keepdims=1, name="/head/ReduceMean"),
        n("Sub", ["/head/Where_output_0", "/head/ReduceMean_output_0"], ["/head/Sub_output_0"],
          name="/head/Sub"),
        n("Pow", ["/head/Sub_output_0", "two"], ["/head/Pow_output_0"], name="/head/Pow"),
        n("Add", ["/head/Pow_output_0", "one_f"], ["/head/Add_output_0"], name="/head/Add"),
        n("Sqrt", ["/head/Add_output_0"], ["/head/Sqrt_output_0"], name="/head/Sqrt"),
        n("Div", ["/head/Sub_output_0", "/head/Sqrt_output_0"], ["/head/Div_output_0"],
          name="/head/Div"),
        n("ReduceMean", ["/head/Div_output_0"], ["y"], keepdims=0, name="/head/ReduceMean_1"),
    ]  # fmt: skip
    model = _model(nodes, [("x", ["batch", 2, 6])], [("y", [])], weights, dtype, name="block")
    kind = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    model.graph.initializer.extend(
        [
            _int64("zero", 0),
            _int64("one", 1),
            _int64("axes0", [0]),
            _int64("axes1", [1]),
            _int64("minus_one", [-1]),
            helper.make_tensor("zero_f", kind, [], [0.0]),
            helper.make_tensor("one_f", kind, [], [1.0]),
            helper.make_tensor("two", kind, [], [2.0]),
        ]
    )
    return model


def slices(dtype=np.float64, seed=2):
    """Slice (ends past the axis, a negative step), Split, Gather of a position and of a
    range, and Concat of computed tensors, then a reduction to one number."""
    n = helper.make_node
    nodes = [
        n("Slice", ["x", "s", "e", "ax", "st"], ["a"], name="/pick/Slice"),
        n("Split", ["x", "sp"], ["b1", "b2"], axis=1, name="/pick/Split"),
        n("Gather", ["x", "g"], ["c"], axis=1, name="/pick/Gather"),
        n("Gather", ["x", "g2"], ["c2"], axis=0, name="/pick/Gather_1"),
        n("Concat", ["b2", "b1", "a"], ["d"], axis=1, name="/join/Concat"),
        n("Mul", ["d", "d"], ["dd"], name="/join/Mul"),
        n("ReduceSum", ["dd"], ["y0"], keepdims=0, name="/out/ReduceSum"),
        n("ReduceSum", ["c"], ["y1"], keepdims=0, name="/out/ReduceSum_1"),
        n("ReduceSum", ["c2"], ["y2"], keepdims=0, name="/out/ReduceSum_2"),
        n("Add", ["y0", "y1"], ["y3"], name="/out/Add"),
        n("Add", ["y3", "y2"], ["y"], name="/out/Add_1"),
    ]
    model = _model(nodes, [("x", [3, 5])], [("y", [])], {}, dtype, name="slices")
    model.graph.initializer.extend(
        [
            _int64("s", [0, -1]),
            _int64("e", [100, -100]),
            _int64("ax", [0, 1]),
            _int64("st", [1, -2]),
            _int64("sp", [2, 3]),
            _int64("g", [1, 2, 3]),
            _int64("g2", 2),
        ]
    )
    return model


def attention(dtype=np.float64, seed=3, B=2, T=3, D=4, H=2):
    """A transformer block as exporters write one: LayerNorm, two-head self-attention (the
    projections, a reshape into heads and a Transpose of them, Q Kᵀ over √d, Softmax, the
    product with V, the heads put back), a residual, LayerNorm, an MLP with GELU (erf), a
    residual, and the mean as the output."""
    rng = np.random.default_rng(seed)
    d = D // H
    weights = {
        "ln1.weight": 1 + 0.1 * rng.normal(size=D), "ln1.bias": 0.1 * rng.normal(size=D),
        "attn.q.weight": rng.normal(size=(D, D)) / 2, "attn.k.weight": rng.normal(size=(D, D)) / 2,
        "attn.v.weight": rng.normal(size=(D, D)) / 2, "attn.o.weight": rng.normal(size=(D, D)) / 2,
        "ln2.weight": 1 + 0.1 * rng.normal(size=D), "ln2.bias": 0.1 * rng.normal(size=D),
        "mlp.fc1.weight": rng.normal(size=(D, 2 * D)) / 2, "mlp.fc1.bias": 0.1 * rng.normal(size=2 * D),
        "mlp.fc2.weight": rng.normal(size=(2 * D, D)) / 2, "mlp.fc2.bias": 0.1 * rng.normal(size=D),
    }  # fmt: skip
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1.weight", "ln1.bias"], ["h"], axis=-1, name="/ln1/LayerNormalization"),
        n("MatMul", ["h", "attn.q.weight"], ["q"], name="/attn/q/MatMul"),
        n("MatMul", ["h", "attn.k.weight"], ["k"], name="/attn/k/MatMul"),
        n("MatMul", ["h", "attn.v.weight"], ["v"], name="/attn/v/MatMul"),
        n("Reshape", ["q", "heads"], ["q4"], name="/attn/Reshape"),
        n("Reshape", ["k", "heads"], ["k4"], name="/attn/Reshape_1"),
        n("Reshape", ["v", "heads"], ["v4"], name="/attn/Reshape_2"),
        n("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3], name="/attn/Transpose"),
        n("Transpose", ["k4"], ["kT"], perm=[0, 2, 3, 1], name="/attn/Transpose_1"),
        n("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3], name="/attn/Transpose_2"),
        n("MatMul", ["qh", "kT"], ["scores"], name="/attn/MatMul"),
        n("Div", ["scores", "scale"], ["scaled"], name="/attn/Div"),
        n("Softmax", ["scaled"], ["p"], axis=-1, name="/attn/Softmax"),
        n("MatMul", ["p", "vh"], ["ctx"], name="/attn/MatMul_1"),
        n("Transpose", ["ctx"], ["ctx2"], perm=[0, 2, 1, 3], name="/attn/Transpose_3"),
        n("Reshape", ["ctx2", "back"], ["ctx3"], name="/attn/Reshape_3"),
        n("MatMul", ["ctx3", "attn.o.weight"], ["o"], name="/attn/o/MatMul"),
        n("Add", ["x", "o"], ["r1"], name="/Add"),
        n("LayerNormalization", ["r1", "ln2.weight", "ln2.bias"], ["h2"], axis=-1, name="/ln2/LayerNormalization"),
        n("MatMul", ["h2", "mlp.fc1.weight"], ["f1"], name="/mlp/fc1/MatMul"),
        n("Add", ["f1", "mlp.fc1.bias"], ["f1b"], name="/mlp/fc1/Add"),
        n("Gelu", ["f1b"], ["g"], name="/mlp/act/Gelu"),  # exact: erf
        n("MatMul", ["g", "mlp.fc2.weight"], ["f2"], name="/mlp/fc2/MatMul"),
        n("Add", ["f2", "mlp.fc2.bias"], ["f2b"], name="/mlp/fc2/Add"),
        n("Add", ["r1", "f2b"], ["r2"], name="/Add_1"),
        n("ReduceMean", ["r2"], ["y"], keepdims=0, name="/ReduceMean"),
    ]  # fmt: skip
    model = _model(nodes, [("x", [B, T, D])], [("y", [])], weights, dtype, name="attention")
    kind = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    model.graph.initializer.extend(
        [
            _int64("heads", [B, T, H, d]),
            _int64("back", [B, T, D]),
            helper.make_tensor("scale", kind, [], [float(np.sqrt(d))]),
        ]
    )
    return model


def extremes(dtype=np.float64):
    """Clip (ReLU6's shape), elementwise Max of three and Min, Reciprocal, ReduceMax and
    ReduceMin of every element (keepdims either way)."""
    n = helper.make_node
    nodes = [
        n("Clip", ["x", "lo", "hi"], ["c"], name="/act/Clip"),
        n("Max", ["c", "x", "z"], ["m"], name="/mix/Max"),
        n("Min", ["m", "x"], ["m2"], name="/mix/Min"),
        n("Reciprocal", ["m2"], ["r"], name="/mix/Reciprocal"),
        n("ReduceMax", ["r"], ["a"], keepdims=0, name="/out/ReduceMax"),
        n("ReduceMin", ["x"], ["b"], keepdims=1, name="/out/ReduceMin"),
        n("Add", ["a", "b"], ["ab"], name="/out/Add"),
        n("ReduceSum", ["ab"], ["y"], keepdims=0, name="/out/ReduceSum"),
    ]
    model = _model(nodes, [("x", [3, 5]), ("z", [3, 5])], [("y", [])], {}, dtype, name="extremes")
    kind = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    model.graph.initializer.extend(
        [helper.make_tensor("lo", kind, [], [-0.5]), helper.make_tensor("hi", kind, [], [0.7])]
    )
    return model


def lenet(dtype=np.float64, seed=4):
    """A LeNet-style network: Conv with bias and symmetric pads, Relu, MaxPool, a grouped
    Conv padded SAME_UPPER with strides 2, AveragePool with pads (not counted), Flatten and
    Gemm; and a GlobalAveragePool head added to it."""
    rng = np.random.default_rng(seed)
    weights = {
        "conv1.weight": rng.normal(size=(4, 1, 3, 3)) / 3,
        "conv1.bias": 0.1 * rng.normal(size=4),
        "conv2.weight": rng.normal(size=(6, 2, 3, 3)) / 4,
        "conv2.bias": 0.1 * rng.normal(size=6),
        "fc.weight": rng.normal(size=(3, 54)) / 7,
        "fc.bias": 0.1 * rng.normal(size=3),
        "head.weight": rng.normal(size=(6, 3)) / 2,
    }
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], kernel_shape=[3, 3],
          pads=[1, 1, 1, 1], name="/conv1/Conv"),
        n("Relu", ["c1"], ["r1"], name="/relu1/Relu"),
        n("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="/pool1/MaxPool"),
        n("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], kernel_shape=[3, 3], group=2,
          strides=[2, 2], auto_pad="SAME_UPPER", name="/conv2/Conv"),
        n("Relu", ["c2"], ["r2"], name="/relu2/Relu"),
        n("AveragePool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[1, 1],
          pads=[1, 1, 1, 1], name="/pool2/AveragePool"),
        n("Flatten", ["p2"], ["f"], axis=1, name="/Flatten"),
        n("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], transB=1, name="/fc/Gemm"),
        n("GlobalAveragePool", ["r2"], ["g"], name="/head/GlobalAveragePool"),
        n("Flatten", ["g"], ["gf"], axis=1, name="/head/Flatten"),
        n("MatMul", ["gf", "head.weight"], ["h"], name="/head/MatMul"),
        n("Add", ["logits", "h"], ["y"], name="/Add"),
    ]  # fmt: skip
    return _model(nodes, [("x", [2, 1, 8, 8])], [("y", [2, 3])], weights, dtype, name="lenet")


def embedding(dtype=np.float64, seed=5):
    """An embedding with mean pooling, as a text classifier's front: Gather of the token ids
    (an int64 input, a batch of sequences), positions added from a table by constant
    scattered positions, ReduceMean over the sequence, Gemm to two classes."""
    rng = np.random.default_rng(seed)
    weights = {
        "emb.weight": rng.normal(size=(10, 4)),
        "pos.weight": 0.1 * rng.normal(size=(6, 4)),
        "fc.weight": rng.normal(size=(2, 4)) / 2,
        "fc.bias": 0.1 * rng.normal(size=2),
    }
    n = helper.make_node
    nodes = [
        n("Gather", ["emb.weight", "ids"], ["tokens"], axis=0, name="/emb/Gather"),
        n("Gather", ["pos.weight", "order"], ["p"], axis=0, name="/pos/Gather"),
        n("Add", ["tokens", "p"], ["h"], name="/Add"),
        n("ReduceMean", ["h", "seq"], ["m"], keepdims=0, name="/pool/ReduceMean"),
        n("Gemm", ["m", "fc.weight", "fc.bias"], ["y"], transB=1, name="/fc/Gemm"),
    ]
    model = _model(nodes, [], [("y", [3, 2])], weights, dtype, name="embedding")
    model.graph.input.insert(0, helper.make_tensor_value_info("ids", TensorProto.INT64, [3, 5]))
    model.graph.initializer.extend([_int64("order", [4, 0, 2, 2, 5]), _int64("seq", [1])])
    return model


def with_op(op_type: str, **attrs):
    """A one-node model of ``op_type`` (an operator cgraph may not import)."""
    node = helper.make_node(op_type, ["x", "w"], ["y"], name=f"/m/{op_type}", **attrs)
    weights = {"w": np.ones((1, 1, 3, 3))}
    return _model([node], [("x", [1, 1, 5, 5])], [("y", [1, 1, 3, 3])], weights, np.float32)


MODELS = {
    "mlp": mlp,
    "block": block,
    "slices": slices,
    "attention": attention,
    "extremes": extremes,
    "lenet": lenet,
    "embedding": embedding,
}
INPUT_SHAPES = {
    "mlp": {"x": (4, 3)},
    "block": {"x": (3, 2, 6)},
    "slices": {"x": (3, 5)},
    "attention": {"x": (2, 3, 4)},
    "extremes": {"x": (3, 5), "z": (3, 5)},
    "lenet": {"x": (2, 1, 8, 8)},
    "embedding": {"ids": (3, 5)},
}


def reference(model):
    """ONNX's reference evaluator in float64 throughout, with five operators written out
    here: its Gelu is about 5e-9 off and its Erf rounds through float32 (both: math.erf); its
    MaxPool (onnx 1.2x) swaps the padded sizes of height and width when the pads differ from
    side to side (onnxruntime's does not), its ConvTranspose fails for groups, and onnx 1.16's
    Conv is wrong for groups padded SAME_UPPER with strides: each of the three is the
    operator's definition, written out."""
    import math

    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

    erf = np.frompyfunc(math.erf, 1, 1)

    class Gelu(OpRun):
        op_domain = ""

        def _run(self, x, approximate="none"):
            if approximate == "tanh":
                inner = np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)
                return (0.5 * x * (1 + np.tanh(inner)),)
            return (np.asarray(0.5 * x * (1 + erf(x / np.sqrt(2))), dtype=x.dtype),)

    class Erf(OpRun):
        op_domain = ""

        def _run(self, x):
            return (np.asarray(erf(x), dtype=x.dtype),)

    class MaxPool(OpRun):
        op_domain = ""

        def _run(self, x, kernel_shape=None, strides=None, pads=None, **_):
            return max_pool(x, kernel_shape, strides, pads)

    class ConvTranspose(OpRun):
        op_domain = ""

        def _run(self, x, w, b=None, **attrs):
            return (conv_transpose(x, w, **attrs),)

    class Conv(OpRun):
        op_domain = ""

        def _run(self, x, w, b=None, **attrs):
            return (conv(x, w, b, **attrs),)

    return ReferenceEvaluator(model, new_ops=[Gelu, Erf, MaxPool, ConvTranspose, Conv])


def conv(x, w, b=None, auto_pad="NOTSET", strides=None, pads=None, dilations=None, group=1,
         **_):  # fmt: skip
    """ONNX's Conv (2-D) by its definition, one kernel position at a time (onnx 1.16's
    reference evaluator is wrong for groups padded SAME_UPPER with strides)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides or (1, 1), dilations or (1, 1)
    pads = list(pads or (0, 0, 0, 0))
    auto = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for k, (size, s, d, kk) in enumerate(((h, sh, dh, kh), (wd, sw, dw, kw))):
            total = max((-(-size // s) - 1) * s + (kk - 1) * d + 1 - size, 0)
            small, large = total // 2, total - total // 2
            pads[k], pads[k + 2] = (small, large) if auto == "SAME_UPPER" else (large, small)
    top, left, bottom, right = pads
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    ho = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
    wo = (wd + left + right - (kw - 1) * dw - 1) // sw + 1
    og = o // group
    out = np.zeros((n, o, ho, wo), x.dtype)
    for g, a, bb in np.ndindex(group, kh, kw):
        part = xp[:, g * cg : (g + 1) * cg, a * dh : a * dh + sh * (ho - 1) + 1 : sh,
                  bb * dw : bb * dw + sw * (wo - 1) + 1 : sw]  # fmt: skip
        out[:, g * og : (g + 1) * og] += np.einsum(
            "nchw,oc->nohw", part, w[g * og : (g + 1) * og, :, a, bb]
        )
    if b is not None:
        out += b.reshape(1, o, 1, 1)
    return out


def conv_transpose(y, w, strides=None, pads=None, dilations=None, group=1, output_padding=None,
                   **_):  # fmt: skip
    """ONNX's ConvTranspose (2-D) by its definition, each input element spreading its kernel
    over the output (the reference evaluator's, onnx 1.2x, fails for groups of more than one
    channel)."""
    n, o, ho, wo = y.shape
    cg, kh, kw = w.shape[1:]
    (sh, sw), (dh, dw) = strides or (1, 1), dilations or (1, 1)
    top, left, bottom, right = pads or (0, 0, 0, 0)
    extra = output_padding or (0, 0)
    h = sh * (ho - 1) + (kh - 1) * dh + 1 - top - bottom + extra[0]
    wd = sw * (wo - 1) + (kw - 1) * dw + 1 - left - right + extra[1]
    out = np.zeros((n, cg * group, h + top + bottom, wd + left + right), y.dtype)
    og = o // group
    for g, i, j, a, b in np.ndindex(group, ho, wo, kh, kw):
        spread = y[:, g * og : (g + 1) * og, i, j] @ w[g * og : (g + 1) * og, :, a, b]
        out[:, g * cg : (g + 1) * cg, i * sh + a * dh, j * sw + b * dw] += spread
    return out[:, :, top : top + h, left : left + wd]


def max_pool(x, window, strides, pads):
    """ONNX's MaxPool (2-D, no dilation, floor) by its definition: each window's largest
    element inside the image, and where it is in ``x`` flattened (the first of equals)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw) = window, strides or (1, 1)
    top, left, bottom, right = pads or (0, 0, 0, 0)
    ho, wo = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    out, at = np.empty((n, c, ho, wo), x.dtype), np.empty((n, c, ho, wo), np.int64)
    for b, ch, i, j in np.ndindex(n, c, ho, wo):
        best, where = -np.inf, -1
        for di, dj in np.ndindex(kh, kw):
            r, s = i * sh - top + di, j * sw - left + dj
            if 0 <= r < h and 0 <= s < w and x[b, ch, r, s] > best:
                best, where = x[b, ch, r, s], ((b * c + ch) * h + r) * w + s
        out[b, ch, i, j], at[b, ch, i, j] = best, where
    return out, at
