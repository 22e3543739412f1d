"""A program as an ONNX model: ``cgraph compile P --target onnx -o P.onnx``, with ``--grad``
its gradient too (the derivative program, one more output per input).

Every cgraph op becomes one ONNX operator or a short composition of them, in float64, at
opset 18; the program's inputs are the model's inputs (an input with a default keeps it as
the initializer of the same name, which ONNX reads as the input's default), and its output
(and, with ``grad``, each gradient ``dloss_dW``) the model's outputs. Indexing and its
gradient (``place``) gather and scatter at positions worked out here from the shapes the
bindings give, so the model is made for those shapes, as ``--target numpy`` is.

>>> import onnx
>>> from cgraph_cli import parse
>>> data = export_onnx(parse("g = (x + y) * z"), {"x": 1, "y": 3, "z": -3}, grad=True)
>>> model = onnx.load_model_from_string(data)
>>> [o.name for o in model.graph.output]
['g', 'dg_dx', 'dg_dy', 'dg_dz']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..core.errors import UsageError
from ..core.ir import Graph, resolve_name
from ..core.ops import CONST, INPUT

#: The opset the models are written for: reductions take their axes as an input from 18.
OPSET = 18


def export_onnx(
    graph: Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    grad: bool = False,
    name: str = "cgraph",
    dtype: str = "float64",
    jvp: bool = False,
    hvp: bool = False,
) -> bytes:
    """The ONNX model (serialized) of ``graph`` for ``bindings`` (shapes, and the values of
    inputs without defaults are only read for their shapes): its output ``of``, and with
    ``grad`` the gradient with respect to each input (or ``wrt``); with ``jvp`` its
    directional derivative along a direction that is more inputs of the model, a tangent
    ``x_dot`` per input (or per ``wrt``; along ``x`` itself, ``dout_dx``, for one ``wrt``
    that is a number), as :func:`~cgraph_cli.passes.derivatives.tangent_program` names
    them; with ``hvp`` the gradient and the Hessian-vector product along such a direction
    (forward mode over the derivative program, as ``cgraph hessian --vector``), ``dout_dx_dot``
    per input. ``dtype``: "float64" (cgraph's own numbers), or "float32" (what runtimes
    have kernels for everywhere)."""
    if dtype not in ("float64", "float32"):
        raise UsageError(f"a model's numbers are float64 or float32, not {dtype!r}")
    modes = [m for m, on in (("grad", grad), ("jvp", jvp), ("hvp", hvp)) if on]
    if len(modes) > 1:
        raise UsageError(
            f"--{modes[0]} and --{modes[1]} cannot be given together: a model is one of them",
            hints=["--hvp's model holds the gradient too"] if modes == ["grad", "hvp"] else [],
        )
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        raise UsageError(
            "--target onnx needs the onnx package",
            hints=["pip install 'cgraph-cli[onnx]' (or: pip install onnx)"],
        ) from None
    from .control import ran_graph
    from .evaluate import forward

    _refuse_choices(graph)
    ran = ran_graph(graph, bindings)
    from ..data.bindings import check_bindings

    # the inputs' values as arrays (the command line gives text), their defaults' too: the
    # shapes of the directions' inputs and of the gradients are theirs
    bindings = {**ran.defaults, **check_bindings(ran, bindings)}
    outputs: list[tuple[str, Any]]  # a node, or a value known to be 0 (a constant's tangent)
    tangents: dict = {}
    gradients: dict[str, str] = {}  # --grad: each input's gradient statement
    if jvp or hvp:
        built, outputs, tangents = _forward_mode(ran, bindings, of, wrt, hvp)
        bindings = {**(bindings or {}), **tangents}
    elif grad:
        from ..passes.derivatives import derivative_program

        program = derivative_program(ran, bindings, of, wrt, intermediates=False)
        built = program.graph
        out = ran.output if of is None else resolve_name(ran, of)
        out = _copy_of(built, out, program.output)
        outputs = [(program.output, out)] + [
            (stmt, built.names[stmt]) for stmt in program.gradients.values()
        ]
        gradients = program.gradients
    else:
        built = ran
        out = built.output if of is None else resolve_name(built, of)
        outputs = [(built.display_name(out) if built.display_name(out).isidentifier() else
                    "output", out)]  # fmt: skip
    values = forward(built, {**built.defaults, **(bindings or {})})
    shaped = {  # a gradient's shape is its input's: a 0 (no path to it) is spread to it
        stmt: np.shape(values[built.inputs[w]])
        for w, stmt in gradients.items()
        if w in built.inputs
    }
    kind = TensorProto.DOUBLE if dtype == "float64" else TensorProto.FLOAT
    writer = _Writer(built, values, kind, np.dtype(dtype))
    writer.taken |= {label for label, _ in outputs}  # the outputs' names are theirs alone
    for i in range(len(built.ops)):
        writer.node(i)
    inputs = [
        helper.make_tensor_value_info(n, kind, list(np.shape(values[i])))
        for n, i in sorted(built.inputs.items(), key=lambda item: item[0] in tangents)
    ]  # the program's inputs, then the direction's (x_dot)
    defaults = [
        helper.make_tensor(n, kind, list(np.shape(v)), np.ravel(np.asarray(v, float)).tolist())
        for n, v in built.defaults.items()
        if n in built.inputs
    ]
    result = []
    for label, i in outputs:
        known = not isinstance(i, int)
        source = writer.const(i, hint=f"{label}_zero") if known else writer.names[i]
        shape = np.shape(i if known else values[i])
        if label in shaped and shaped[label] != shape:  # no path to it: 0, spread to its shape
            wanted = writer.const(list(shaped[label]), np.int64, "shape")
            source, shape = writer.op("Expand", [source, wanted]), shaped[label]
        writer.nodes.append(helper.make_node("Identity", [source], [label]))
        result.append(helper.make_tensor_value_info(label, kind, list(shape)))
    model = helper.make_model(
        helper.make_graph(writer.nodes, name, inputs, result, defaults + writer.constants),
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="cgraph",
        ir_version=8,
    )
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString()


def _forward_mode(graph: Graph, bindings, of, wrt, hvp: bool):
    """The program of ``--jvp`` (the tangent program) or ``--hvp`` (the tangent program of
    the derivative program, with a tangent input per input of ``wrt``), its outputs, and
    zeros for its tangent inputs (read only for their shapes)."""
    from ..core.names import node_names
    from ..passes.derivatives import derivative_program, tangent_program, wrt_inputs
    from ..passes.grad_graph import _identifier, input_shapes
    from ..passes.jvp_graph import jvp_graph

    point = {**graph.defaults, **(bindings or {})}
    outputs: list[tuple[str, Any]]
    if hvp:
        for w in wrt or ():
            if w not in graph.inputs:
                resolve_name(graph, w)  # an unknown name: did you mean...
                raise UsageError(
                    f"'{w}' is not an input: a Hessian-vector product is along the inputs",
                    hints=["the program's inputs: " + ", ".join(graph.inputs)],
                )
        program = derivative_program(graph, bindings, of, wrt, intermediates=False)
        dg = program.graph
        along = [w for w in wrt_inputs(graph, wrt) if w in dg.inputs]
        holders = {w: dg.names[s] for w, s in program.gradients.items()}
        out = _copy_of(dg, graph.output if of is None else resolve_name(graph, of), program.output)
        done = jvp_graph(dg, along, out, input_shapes(dg, bindings), list(holders.values()))
        built = done.graph
        label = program.output if program.output.isidentifier() else "output"
        outputs = [(label, _copy_of(built, out, program.output))]
        outputs += [(s, resolve_name(built, s)) for s in program.gradients.values()]
        # each gradient's tangent, by its node (a gradient may be another value, an input or
        # a constant: dg_dz = t1, dg_dx = z, dg_dx = 1)
        names = [_identifier(n) for n in node_names(dg)]
        inputs_of = {i: n for n, i in dg.inputs.items()}
        # the direction's inputs, in the order of the inputs they go with
        directions = dict(zip(along, [n for n in built.inputs if n not in dg.inputs]))
        for w, h in holders.items():
            label = f"{program.gradients[w]}_dot"
            if dg.ops[h] is INPUT:
                held = directions.get(inputs_of[h])
            elif dg.ops[h] is CONST:
                held = None
            else:
                held = done.tangents[done.output if h == out else names[h]]
            if held is None:  # the gradient does not change along the direction
                outputs.append((label, np.zeros(np.shape(point.get(w, 0.0)))))
            else:
                outputs.append((label, resolve_name(built, held)))
    else:
        done = tangent_program(graph, bindings, of, wrt)
        built = done.graph
        tangent = done.tangents[done.output]
        # the output by the name the program gives it (g, for the second of two g's: the
        # tangent program's g_2), its tangent after it: g_dot, or dg_dx along one x
        out = graph.output if of is None else resolve_name(graph, of)
        label = graph.display_name(out) if graph.display_name(out).isidentifier() else "output"
        along_one = bool(wrt) and len(wrt) == 1 and not np.shape(point.get(wrt[0], 0.0))
        said = f"d{label}_d{wrt[0]}" if wrt and along_one else f"{label}_dot"
        primal = _copy_of(built, out, graph.display_name(out))
        outputs = [(label, primal), (said, resolve_name(built, tangent))]
        along = [] if along_one else list(wrt or graph.inputs)
        directions = dict(zip(along, [n for n in built.inputs if n not in graph.inputs]))
    zeros = {t: np.zeros(np.shape(point[w])) for w, t in directions.items() if w in point}
    return built, outputs, zeros


def _copy_of(derived: Graph, node: int, name: str) -> int:
    """The node of a derived program that is ``node`` of the program it was derived from,
    whose name there is ``name``: by the nodes' origins where the derived graph keeps them
    (a bare expression, a name assigned twice: named otherwise there), else by the name (a
    bare expression's statement is ``out`` there)."""
    copied = derived.memo.get("copied_from")
    if copied is not None:
        return next(new for new, old in copied.items() if old == node)
    return resolve_name(derived, name if name.isidentifier() else "out")


def _refuse_choices(graph: Graph) -> None:
    """Refuse what a model of the graph that runs would fix at the bindings given: the branch
    of an if/else, the steps of a loop whose bound is a number input (``range(n)``); a loop
    over a sequence's length runs as many steps as the model's input has."""
    from ..core.errors import Span
    from ..core.ir_control import Static

    control = graph.control
    if not isinstance(control, Static):
        return
    places = [(lo, hi, "if/else") for lo, hi in control.conds.values()]
    for loop in control.loops:
        bound = (loop.count or (None,))[0]
        if isinstance(bound, tuple) and bound[0] == "value":
            places.append((loop.start, loop.end, "a loop whose number of steps is an input"))
    if places:
        lo, hi, what = min(places)
        raise UsageError(
            f"--target onnx does not take programs with {what} yet: the model would hold "
            "what these bindings choose, whatever its inputs",
            Span(lo, hi),
            graph.source,
            hints=["--target python, numpy or js take if/else; loops over a sequence's length run"],
        )


class _Writer:
    """The ONNX nodes of a graph, one cgraph node at a time (each its value's name)."""

    def __init__(self, graph: Graph, values: list, kind: int, dtype) -> None:
        from ..core.names import node_names

        self.graph, self.values = graph, values
        self.kind, self.dtype = kind, dtype  # the numbers' ONNX type and NumPy type
        self.nodes: list = []
        self.constants: list = []
        self.names: list[str] = []
        self.taken: set[str] = set(graph.inputs)
        self.labels = node_names(graph)
        self.kernel_name = ""  # the weights a transposed convolution reads (_transposed)

    def fresh(self, hint: str) -> str:
        name, k = hint, 1
        while name in self.taken:
            k += 1
            name = f"{hint}_{k}"
        self.taken.add(name)
        return name

    def const(self, value, dtype=None, hint: str = "c") -> str:
        """A constant: a number of the model's type, or (``dtype``) positions and shapes."""
        from onnx import numpy_helper

        name = self.fresh(hint)
        array = np.asarray(value, dtype=self.dtype if dtype is None else dtype)
        self.constants.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str = "t", **attrs) -> str:
        from onnx import helper

        out = self.fresh(hint)
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def node(self, i: int) -> None:
        g = self.graph
        spec = g.ops[i]
        if spec is INPUT:
            self.names.append(next(n for n, k in g.inputs.items() if k == i))
            return
        if spec is CONST:
            self.names.append(self.const(g.consts[i], hint=f"c{i}"))
            return
        rule = RULES.get(spec.name)
        if rule is None:  # every op has a rule: tests/test_onnx_export.py holds the table to it
            raise UsageError(f"the op {spec.name} has no ONNX form yet")
        args = [self.names[a] for a in g.args[i]]
        label = self.labels[i] if self.labels[i].isidentifier() else f"t{i}"
        value = rule(self, i, args, g.params.get(i, ()))
        self.names.append(self.op("Identity", [value], label))

    def shape(self, i: int) -> tuple:
        return tuple(np.shape(self.values[i]))

    def truth(self, x: str) -> str:
        """cgraph's truth of a value: not 0."""
        return self.op("Not", [self.op("Equal", [x, self.const(0.0)])])

    def number(self, x: str) -> str:
        return self.op("Cast", [x], to=self.kind)


def _simple(op_type: str) -> Callable:
    return lambda w, i, a, p: w.op(op_type, a)


def _compare(op_type: str, negate: bool = False) -> Callable:
    def rule(w, i, a, p):
        held = w.op(op_type, a)
        return w.number(w.op("Not", [held]) if negate else held)

    return rule


def _axes(w, i, axis) -> str:
    shape = w.shape(w.graph.args[i][0])
    axes = list(range(len(shape))) if axis is None else [axis % max(1, len(shape))]
    return w.const(axes, np.int64, "axes")


def _reduce(op_type: str) -> Callable:
    def rule(w, i, a, p):
        axis = p[0] if p else None
        if not w.shape(w.graph.args[i][0]):  # a number: nothing to reduce
            return a[0]
        return w.op(op_type, [a[0], _axes(w, i, axis)], keepdims=0)

    return rule


def _softmax(op_type: str) -> Callable:
    def rule(w, i, a, p):
        axis = p[0] if p else None
        shape = w.shape(w.graph.args[i][0])
        if axis is not None:
            return w.op(op_type, a, axis=axis)
        flat = w.op("Reshape", [a[0], w.const([-1], np.int64)])
        return w.op("Reshape", [w.op(op_type, [flat], axis=0), w.const(list(shape), np.int64)])

    return rule


def _where(w, i, a, p):
    return w.op("Where", [w.truth(a[0]), a[1], a[2]])


def _logical(op_type: str) -> Callable:
    return lambda w, i, a, p: w.number(w.op(op_type, [w.truth(x) for x in a]))


def _matmul(w, i, a, p):
    """A product with a vector is written as one with a one-column (or one-row) matrix:
    onnxruntime's full graph optimizations (1.32) fuse Transpose(W) @ v wrongly for a 1-D v
    (it returned [-1, -1, -1] for [-3, -3, -3]); matrices are not affected."""
    ra, rb = (len(w.shape(x)) for x in w.graph.args[i])
    if ra == 2 and rb == 1:
        column = w.op("Unsqueeze", [a[1], w.const([1], np.int64)])
        return w.op("Squeeze", [w.op("MatMul", [a[0], column]), w.const([1], np.int64)])
    if ra == 1 and rb == 2:
        row = w.op("Unsqueeze", [a[0], w.const([0], np.int64)])
        return w.op("Squeeze", [w.op("MatMul", [row, a[1]]), w.const([0], np.int64)])
    return w.op("MatMul", a)


def _outer(w, i, a, p):
    col = w.op("Unsqueeze", [a[0], w.const([1], np.int64)])
    row = w.op("Unsqueeze", [a[1], w.const([0], np.int64)])
    return w.op("Mul", [col, row])


def _sum_to(w, i, a, p):
    source, target = w.shape(w.graph.args[i][0]), tuple(p[0])
    if source == target:
        return a[0]
    lead = len(source) - len(target)
    axes = list(range(lead)) + [
        lead + k for k, n in enumerate(target) if n == 1 and source[lead + k] != 1
    ]
    summed = w.op("ReduceSum", [a[0], w.const(axes, np.int64)], keepdims=0) if axes else a[0]
    return w.op("Reshape", [summed, w.const(list(target), np.int64)])


def _positions(shape: tuple, index) -> np.ndarray:
    """The positions (one row of coordinates each) that basic indexing ``index`` picks from
    a tensor of ``shape``, laid out as the result is."""
    grid = np.indices(shape)  # (ndim, *shape)
    picked = grid[(slice(None), *index)]
    return np.moveaxis(picked, 0, -1).astype(np.int64)


def _index(w, i, a, p):
    shape = w.shape(w.graph.args[i][0])
    at = _positions(shape, p[0])
    picked = w.op("GatherND", [a[0], w.const(at, np.int64, "at")])
    return w.op("Reshape", [picked, w.const(list(w.shape(i)), np.int64)])


def _place(w, i, a, p):
    shape, index = tuple(p[0]), p[1]
    at = _positions(shape, index)
    updates = w.op("Reshape", [a[0], w.const(list(at.shape[:-1]), np.int64)])
    zeros = w.const(np.zeros(shape), hint="zeros")
    return w.op("ScatterND", [zeros, w.const(at, np.int64, "at"), updates])


def _xlogy(w, i, a, p):
    zero = w.op("Equal", [a[0], w.const(0.0)])
    safe = w.op("Where", [zero, w.const(1.0), a[1]])
    return w.op("Where", [zero, w.const(0.0), w.op("Mul", [a[0], w.op("Log", [safe])])])


def _softplus(w, i, a, p):
    # log(1 + e^x) as max(x, 0) + log(1 + e^-|x|): no overflow for large x
    top = w.op("Relu", a)
    rest = w.op("Exp", [w.op("Neg", [w.op("Abs", a)])])
    return w.op("Add", [top, w.op("Log", [w.op("Add", [w.const(1.0), rest])])])


def _image_params(params: tuple, count: int = 4) -> tuple:
    """A convolution's (strides, pads, dilations, groups), each given or its default."""
    defaults = ((1, 1), (0, 0, 0, 0), (1, 1), 1)[:count]
    given = tuple(params) + (None,) * (count - len(params))
    return tuple(
        d if v is None else (list(v) if isinstance(v, tuple) else v)
        for v, d in zip(given, defaults)
    )


def _conv2d(w, i, a, p):
    strides, pads, dilations, groups = _image_params(p)
    return w.op(
        "Conv", a, strides=list(strides), pads=list(pads), dilations=list(dilations), group=groups
    )


def _transposed(w, y: str, kernel: tuple, size, shape_y, strides, pads, dilations, groups) -> str:
    """ConvTranspose of ``y`` back to the image ``size``: the padding it leaves at the end
    (output_padding) is what the convolution's floor dropped."""
    extra = [
        size[2 + k]
        - (strides[k] * (shape_y[2 + k] - 1) + (w_k - 1) * dilations[k] + 1 - pads[k] - pads[k + 2])
        for k, w_k in enumerate(kernel)
    ]  # fmt: skip
    return w.op(
        "ConvTranspose",
        [y, w.kernel_name],
        strides=list(strides),
        pads=list(pads),
        dilations=list(dilations),
        group=groups,
        output_padding=extra,
    )


def _conv_transpose2d(w, i, a, p):
    size = tuple(p[0])
    strides, pads, dilations, groups = _image_params(p[1:])
    y, kernel = w.graph.args[i]
    w.kernel_name = a[1]
    return _transposed(
        w, a[0], w.shape(kernel)[2:], size, w.shape(y), strides, pads, dilations, groups
    )


def _conv2d_weights(w, i, a, p):
    """The weights' gradient as convolutions, one per group: the image with its batch as
    channels, read by the output's gradient as the kernel (strides and dilations trade
    places), cut to the kernel's size."""
    o, cg_, kh, kw = p[0]
    strides, pads, dilations, groups = _image_params(p[1:])
    c = w.shape(w.graph.args[i][0])[1]
    og, swap = o // groups, [1, 0, 2, 3]
    parts = []
    for k in range(groups):
        x, y = a
        if groups > 1:
            x = _channels(w, x, k * cg_, (k + 1) * cg_)
            y = _channels(w, y, k * og, (k + 1) * og)
        full = w.op(
            "Conv",
            [w.op("Transpose", [x], perm=swap), w.op("Transpose", [y], perm=swap)],
            strides=list(dilations),
            pads=list(pads),
            dilations=list(strides),
        )
        starts, ends = w.const([0, 0], np.int64), w.const([kh, kw], np.int64)
        cut = w.op("Slice", [full, starts, ends, w.const([2, 3], np.int64)])
        parts.append(w.op("Transpose", [cut], perm=swap))
    assert c == cg_ * groups
    return parts[0] if groups == 1 else w.op("Concat", parts, axis=0)


def _channels(w, x: str, start: int, end: int) -> str:
    return w.op(
        "Slice",
        [x, w.const([start], np.int64), w.const([end], np.int64), w.const([1], np.int64)],
    )


def _pool_params(p: tuple) -> tuple:
    window = list(p[0])
    strides = list(p[1]) if len(p) > 1 and p[1] is not None else window
    pads = list(p[2]) if len(p) > 2 and p[2] is not None else [0, 0, 0, 0]
    return window, strides, pads


def _max_pool2d(w, i, a, p):
    window, strides, pads = _pool_params(p)
    return w.op("MaxPool", a, kernel_shape=window, strides=strides, pads=pads)


def _argmax_positions(w, x: str, p: tuple) -> str:
    """Where each window's maximum of ``x`` is, as positions in ``x`` flattened (MaxPool's
    second output)."""
    from onnx import helper

    window, strides, pads = _pool_params(p)
    out, at = w.fresh("pooled"), w.fresh("at")
    w.nodes.append(
        helper.make_node("MaxPool", [x], [out, at], kernel_shape=window, strides=strides, pads=pads)
    )
    return at


def _max_pool2d_at(w, i, a, p):
    flat = w.op("Reshape", [a[0], w.const([-1], np.int64)])
    return w.op("Gather", [flat, _argmax_positions(w, a[1], p)])


def _max_unpool2d(w, i, a, p):
    shape = w.shape(w.graph.args[i][1])
    at = w.op("Reshape", [_argmax_positions(w, a[1], p), w.const([-1], np.int64)])
    updates = w.op("Reshape", [a[0], w.const([-1], np.int64)])
    zeros = w.const(np.zeros(int(np.prod(shape))), hint="zeros")
    added = w.op("ScatterElements", [zeros, at, updates], axis=0, reduction="add")
    return w.op("Reshape", [added, w.const(list(shape), np.int64)])


def _avg_pool2d(w, i, a, p):
    window, strides, pads = _pool_params(p)
    counted = int(bool(p[3])) if len(p) > 3 and p[3] is not None else 1
    return w.op(
        "AveragePool",
        a,
        kernel_shape=window,
        strides=strides,
        pads=pads,
        count_include_pad=counted,
    )


def _avg_unpool2d(w, i, a, p):
    """Each window's share (its gradient over the count it averages) spread over the window:
    a transposed convolution, channel by channel, with a kernel of ones."""
    from ..core.runtime import np_pool_counts

    window, strides, pads = _pool_params(p)
    g, x = (w.shape(k) for k in w.graph.args[i])
    counts = np_pool_counts(x, window, strides, pads, p[3] if len(p) > 3 else None)
    share = w.op("Div", [a[0], w.const(counts, hint="counts")])
    w.kernel_name = w.const(np.ones((x[1], 1, *window)), hint="ones")
    return _transposed(w, share, window, x, g, strides, pads, (1, 1), x[1])


def _take(w, i, a, p):
    axis = p[0] if p and p[0] is not None else 0
    at = w.op("Cast", [a[1]], to=7)  # int64
    return w.op("Gather", [a[0], at], axis=axis % len(w.shape(w.graph.args[i][0])))


def _scatter_add(w, i, a, p):
    """Zeros with ``g`` added at the positions: ScatterND (reduction add) along the first
    axis, the axis brought there and back by transposes."""
    shape = tuple(p[0])
    axis = (p[1] if len(p) > 1 and p[1] is not None else 0) % len(shape)
    kept = len(w.shape(w.graph.args[i][1]))  # the positions' axes, where axis was in g
    at = w.op("Unsqueeze", [w.op("Cast", [a[1]], to=7), w.const([-1], np.int64)])
    g = a[0]
    if axis:  # g's position axes first, then the rest in order
        g = w.op("Transpose", [g], perm=[*range(axis, axis + kept), *range(axis),
                                         *range(axis + kept, len(shape) - 1 + kept)])  # fmt: skip
    front = (shape[axis], *shape[:axis], *shape[axis + 1 :])
    zeros = w.const(np.zeros(front), hint="zeros")
    added = w.op("ScatterND", [zeros, at, g], reduction="add")
    if not axis:
        return added
    back = [*range(1, axis + 1), 0, *range(axis + 1, len(shape))]
    return w.op("Transpose", [added], perm=back)


RULES: dict[str, Callable[[Any, int, list[str], tuple], str]] = {
    "abs": _simple("Abs"),
    "add": _simple("Add"),
    "sub": _simple("Sub"),
    "mul": _simple("Mul"),
    "div": _simple("Div"),
    "neg": _simple("Neg"),
    "pow": _simple("Pow"),
    "exp": _simple("Exp"),
    "log": _simple("Log"),
    "sqrt": _simple("Sqrt"),
    "sin": _simple("Sin"),
    "cos": _simple("Cos"),
    "tan": _simple("Tan"),
    "tanh": _simple("Tanh"),
    "sigmoid": _simple("Sigmoid"),
    "relu": _simple("Relu"),
    "sign": _simple("Sign"),
    "softplus": _softplus,
    "erf": _simple("Erf"),
    "max": _simple("Max"),
    "min": _simple("Min"),
    "matmul": _matmul,
    "transpose": lambda w, i, a, p: (
        w.op("Transpose", a, perm=list(p[0])) if p and p[0] is not None else w.op("Transpose", a)
    ),
    "stop_gradient": _simple("Identity"),
    "eq": _compare("Equal"),
    "ne": _compare("Equal", negate=True),
    "lt": _compare("Less"),
    "le": _compare("LessOrEqual"),
    "gt": _compare("Greater"),
    "ge": _compare("GreaterOrEqual"),
    "logical_and": _logical("And"),
    "logical_or": _logical("Or"),
    "logical_not": _logical("Not"),
    "where": _where,
    "outer": _outer,
    "reshape": lambda w, i, a, p: w.op("Reshape", [a[0], w.const(list(p[0]), np.int64)]),
    "broadcast_to": lambda w, i, a, p: w.op("Expand", [a[0], w.const(list(p[0]), np.int64)]),
    "sum_to": _sum_to,
    "conv2d": _conv2d,
    "conv_transpose2d": _conv_transpose2d,
    "conv2d_weights": _conv2d_weights,
    "max_pool2d": _max_pool2d,
    "max_pool2d_at": _max_pool2d_at,
    "max_unpool2d": _max_unpool2d,
    "avg_pool2d": _avg_pool2d,
    "avg_unpool2d": _avg_unpool2d,
    "concat": lambda w, i, a, p: w.op(
        "Concat", a, axis=(p[0] if p and p[0] is not None else 0) % len(w.shape(i))
    ),
    "take": _take,
    "scatter_add": _scatter_add,
    "sum": _reduce("ReduceSum"),
    "mean": _reduce("ReduceMean"),
    "logsumexp": _reduce("ReduceLogSumExp"),
    "amax": lambda w, i, a, p: _reduce("ReduceMax")(w, i, a, (None,)),
    "amax_axis": _reduce("ReduceMax"),
    "amin_axis": _reduce("ReduceMin"),
    "amin": lambda w, i, a, p: _reduce("ReduceMin")(w, i, a, (None,)),
    "softmax": _softmax("Softmax"),
    "log_softmax": _softmax("LogSoftmax"),
    "xlogy": _xlogy,
    "index": _index,
    "place": _place,
}
