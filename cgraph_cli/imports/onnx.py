"""ONNX models as cgraph programs: ``cgraph import model.onnx``, and any command given a
``.onnx`` file where it takes a program.

The model becomes the text of an ordinary cgraph program, parsed as any other: its graph
inputs are the program's inputs, its weights (initializers) inputs too, whose values are kept
beside the text (never inlined: :attr:`Imported.weights`, written to an ``.npz`` file by
``cgraph import``, the graph's defaults when a command reads the model itself), and each ONNX
node one statement (or a few) in cgraph's ops. What the exporters compute from shapes alone
(Shape, Gather of a shape, Concat, ConstantOfShape, Range ...) is folded to constants here, so
the program holds only the model's arithmetic. Names stay readable: ``/layers.0/fc/Gemm``'s
output is ``layers_0_fc_gemm``.

Nothing in the file runs: it is decoded as data (protobuf), read node by node, and refused
where it holds an operator cgraph does not have (exit 3, naming the operator, the node and the
operators there are), a damaged or foreign file (exit 2), or tensors stored outside it.

>>> import onnx
>>> from onnx import TensorProto, helper
>>> node = helper.make_node("Gemm", ["x", "W", "b"], ["y"], transB=1, name="/fc/Gemm")
>>> W = helper.make_tensor("W", TensorProto.FLOAT, [2, 3], [1, 2, 3, 4, 5, 6])
>>> b = helper.make_tensor("b", TensorProto.FLOAT, [2], [0.5, -0.5])
>>> g = helper.make_graph([node], "fc",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], [W, b])
>>> model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
>>> imported = import_onnx(model.SerializeToString(), "fc.onnx")
>>> print(imported.text, end="")
# Imported from fc.onnx (ONNX, opset 18): 1 node, weights W, b
# Bind the weights with --bindings FILE.npz (written by cgraph import -o)
input x
input W, b
y = x @ transpose(W) + b
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..core.arrays import frozen
from ..core.errors import UsageError
from .program import INLINE, Imported, NotSupported
from .program import Namer as _Namer
from .program import index_text as _index_text
from .program import literal as _literal


def import_onnx(
    data: bytes, filename: str, example: Mapping[str, Any] | None = None, said: str = "--example"
) -> Imported:
    """The program of the ONNX model in ``data`` (the bytes of ``filename``). ``example``:
    arrays for the model's inputs whose shapes it leaves open (a batch axis), by their ONNX
    or program names: their shapes fix the model's, so that shape arithmetic folds to
    constants (``said``: what they are called in a message)."""
    model = _decode(data, filename)
    _refuse_recursion(model, filename)  # (onnx 1.16's shape inference recurses until it crashes)
    if example:
        _fix_input_shapes(model, example, said)
    try:
        from onnx import shape_inference

        model = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - a model shape inference rejects keeps its own shapes
        pass
    return _Reader(model, filename).read()


def _refuse_recursion(model, filename: str) -> None:
    """A local function that calls itself, directly or through others, is refused (exit 3):
    a depth-first walk of the calls between functions, with a stack of its own."""
    calls = {(f.domain, f.name): {(n.domain, n.op_type) for n in f.node} for f in model.functions}
    state: dict = {}  # a function -> 1 while its calls are walked, 2 when done
    for start in calls:
        if state.get(start):
            continue
        stack = [(start, iter(calls[start]))]
        state[start] = 1
        while stack:
            fn, todo = stack[-1]
            callee = next((c for c in todo if c in calls), None)
            if callee is None:
                state[fn] = 2
                stack.pop()
            elif state.get(callee) == 1:
                raise NotSupported(
                    f"{filename}: the local function {callee[1]} calls itself "
                    f"(through {' -> '.join(f[1] for f, _ in stack)} -> {callee[1]})",
                    hints=["cgraph's functions are not recursive: a model's functions neither"],
                )
            elif not state.get(callee):
                state[callee] = 1
                stack.append((callee, iter(calls[callee])))


#: The largest model file read (protobuf's own limit is 2 GiB).
MODEL_LIMIT = 1 << 30


def load_onnx(path: str, example: Mapping[str, Any] | None = None):
    """The graph of the ONNX model in the file at ``path``: its weights are its inputs'
    defaults, its modules groups; ``example``: arrays for the inputs whose shapes the model
    leaves open (a batch axis), by name. Every function that takes a program takes it.

    >>> import cgraph_cli as cg
    >>> graph = cg.load_onnx("model.onnx", {"x": x})  # doctest: +SKIP
    >>> cg.grad(graph, {"x": x}).gradients["fc1_weight"]  # doctest: +SKIP
    """
    from ..core.errors import visible
    from ..data.sources import read_limited, sample_data

    shown = visible(path)
    if path.startswith("sample:"):  # a model shipped with cgraph: sample:mlp.onnx
        path = sample_data(path[len("sample:") :])
    data = read_limited(path, MODEL_LIMIT, "an ONNX model")
    return imported_graph(import_onnx(data, shown, example, "the binding of"), shown)


def _decode(data: bytes, filename: str):
    try:
        import onnx
    except ImportError:
        raise UsageError(
            f"reading {filename} needs the onnx package",
            hints=["pip install 'cgraph-cli[onnx]' (or: pip install onnx)"],
        ) from None
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError, or what damage makes it raise
        raise UsageError(f"{filename} is not an ONNX model (or is damaged): {e}") from None
    if not model.HasField("graph") or not model.graph.node:
        raise UsageError(f"{filename} is not an ONNX model: it holds no graph of nodes")
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            raise UsageError(
                f"{filename} keeps its weight {tensor.name} in another file: cgraph reads "
                "the model's own file only",
                hints=["save the model with its weights inside (onnx.save_model(model, path, "
                       "save_as_external_data=False))"],
            )  # fmt: skip
    try:  # a node missing an input, one reading a name nothing makes, a bad attribute ...
        onnx.checker.check_model(model)
    except Exception as e:  # noqa: BLE001 - onnx's ValidationError, or what damage raises
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(f"{filename} is not a valid ONNX model: {first}") from None
    return model


def _fix_input_shapes(model, example: Mapping[str, Any], said: str) -> None:
    from ..data.bindings import as_array

    namer = _Namer()
    for value in model.graph.input:
        key = value.name if value.name in example else namer(value.name, "x")
        if key in example:
            given = example[key]
            shape = np.shape(as_array(key, given) if isinstance(given, str) else given)
            dims = value.type.tensor_type.shape.dim
            if len(dims) != len(shape):
                raise UsageError(
                    f"{said} {key} has {len(shape)} axes; the model's input {value.name} has "
                    f"{len(dims)}"
                )
            for dim, n in zip(dims, shape):
                dim.ClearField("dim_param")
                dim.dim_value = n


class _Reader:
    def __init__(self, model, filename: str) -> None:
        from onnx import numpy_helper

        self.model, self.filename, self.graph = model, filename, model.graph
        self.to_array = numpy_helper.to_array
        self.name = _Namer()
        self.lines: list[str] = []
        self.modules: list[str] = []
        self.module = ""
        self.known: dict[str, np.ndarray] = {}  # ONNX name -> a value known now (folded)
        self.weights: dict[str, np.ndarray] = {}
        self.shapes: dict[str, tuple] = {}
        # the model's local functions (FunctionProto), by (domain, name): cgraph functions
        self.functions = {(f.domain, f.name): f for f in model.functions}
        self.inline_why = _inline_reasons(model) if self.functions else {}
        self.defs: dict[tuple, tuple] = {}  # a function -> its def's name and body, once made
        self.def_lines: list[str] = []  # the defs' text, callees first
        self.notes: dict[tuple, str] = {}  # a function -> why its calls are inlined
        self.active: list[tuple] = []  # the functions being read, outermost first
        self.consts: dict[bytes, str] = {}  # a function's large constant -> its weight's name
        self.locals: set[str] = set()  # every name a def's body uses (no def may take one)
        self.namers: list[_Namer] = [self.name]  # the program's, then the bodies' being read
        for value in [*self.graph.input, *self.graph.value_info, *self.graph.output]:
            dims = value.type.tensor_type.shape.dim
            if value.type.tensor_type.HasField("shape") and all(
                d.HasField("dim_value") for d in dims
            ):
                self.shapes[value.name] = tuple(d.dim_value for d in dims)

    # -- the program ---------------------------------------------------------------------
    def read(self) -> Imported:
        weights = {}
        for tensor in self.graph.initializer:
            value = self.to_array(tensor)
            if value.dtype.kind == "f" and value.ndim > 0:
                weights[tensor.name] = value.astype(np.float64)
            else:  # integers (shapes, axes) and a model's scalars (2 in x ** 2): constants
                self.known[tensor.name] = value
            self.shapes[tensor.name] = value.shape
        inputs = [
            v.name for v in self.graph.input if v.name not in weights and v.name not in self.known
        ]
        for name in inputs:
            self.name(name, "x")
        for name in weights:
            self.weights[self.name(name, "w")] = weights[name]
        for node in self.graph.node:
            self.module = _module_of(node)
            self._node(node)
        outputs = [o.name for o in self.graph.output]
        for name in outputs:
            if name in self.known:  # a model whose output is a constant: still a statement
                self._emit(name, _literal(self.known.pop(name)))
        last = self.name(outputs[0]) if outputs else None
        if last is not None and not self.lines[-1].startswith(f"{last} = "):
            self.lines.append(last)  # the program's output is its last statement
            self.modules.append("")
        opset = max((o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")),
                    default=0)  # fmt: skip
        count = len(self.graph.node)
        used = [k for k, (_, made) in self.defs.items() if made is not None]
        used += [k for k in self.notes if k not in used]
        head = (
            f"# Imported from {self.filename} (ONNX, opset {opset}): {count} node"
            f"{'s' * (count != 1)}"
            + (
                f", local functions {', '.join(self.functions[k].name for k in used)}"
                if used
                else ""
            )  # fmt: skip
            + (f", weights {', '.join(self.weights)}" if self.weights else "")
        )
        if self.weights:  # where they are: the .npz file cgraph import -o FILE.cg writes beside
            head += "\n# Bind the weights with --bindings FILE.npz (written by cgraph import -o)"
        decls = []
        if inputs:
            decls.append("input " + ", ".join(self.name(n) for n in inputs))
        if self.weights:
            decls.append("input " + ", ".join(self.weights))
        notes = [f"# {self.functions[k].name}: inlined at each call ({why})"
                 for k, why in self.notes.items()]  # fmt: skip
        return Imported(
            text="\n".join([head, *notes, *decls, *self.def_lines, *self.lines]) + "\n",
            weights=self.weights,
            inputs=[self.name(n) for n in inputs],
            outputs=[self.name(o) for o in outputs],
            modules=self.modules,
            names=dict(self.name.names),
        )

    def _emit(self, onnx_name: str, expr: str) -> str:
        name = self.name(onnx_name)
        self.lines.append(f"{name} = {expr}")
        self.modules.append(self.module)
        return name

    def temp(self, expr: str, hint: str) -> str:
        """A statement of its own for a part of a composition (layer norm's mean ...), named
        after the node's output: ``ln1_layernormalization_mean``."""
        name = self.name(f"{self.name(self._current)}_{hint}")
        self.lines.append(f"{name} = {expr}")
        self.modules.append(self.module)
        return name

    # -- one node --------------------------------------------------------------------------
    def _node(self, node) -> None:
        attrs = {a.name: _attr(a, self.to_array) for a in node.attribute}
        self._current = node.output[0] if node.output else node.name
        ins = list(node.input)
        if self.functions and (node.domain, node.op_type) in self.functions:
            self._call(node)
            return
        if node.domain not in ("", "ai.onnx"):
            raise self._unsupported(node, f"the operator domain {node.domain}")
        if node.op_type == "Constant":
            self.known[node.output[0]] = _constant(attrs)
            return
        if all(i in self.known or i == "" for i in ins) and node.op_type in FOLD:
            values = [self.known[i] if i else None for i in ins]
            result = FOLD[node.op_type](values, attrs)
            for out, value in zip(node.output, result if isinstance(result, tuple) else (result,)):
                self.known[out] = np.asarray(value)
                self.shapes[out] = np.shape(value)
            return
        if node.op_type in ("Shape", "Size"):  # of a computed tensor: known from its shape
            shape = self.shape(node)
            whole = np.array(shape, dtype=np.int64)
            value = whole[attrs.get("start", 0) : attrs.get("end")]
            self.known[node.output[0]] = (
                value if node.op_type == "Shape" else np.asarray(whole.prod())
            )
            return
        rule = RULES.get(node.op_type)
        if rule is None:
            raise self._unsupported(node)
        args = [self._arg(i) for i in ins]
        exprs = rule(self, node, args, attrs)
        if isinstance(exprs, str):
            exprs = [exprs]
        for out, expr in zip(node.output, exprs):
            if out:
                self._emit(out, expr)
        if any(out and out not in self.shapes for out in node.output):
            self._shapes_after(node, attrs)  # where ONNX's shape inference left them open

    def _shapes_after(self, node, attrs) -> None:
        """The shapes of a node's outputs from its inputs' (when they are known), by the
        operator's rule: for the nodes after a reshape whose target ONNX's inference could
        not follow. Index-like operators run on empty arrays of their inputs' shapes."""
        ins: list[Any] = []
        for name in node.input:
            if not name:
                ins.append(None)
            elif name in self.known:
                ins.append(self.known[name])
            elif name in self.shapes:
                ins.append(np.empty(self.shapes[name], dtype=np.bool_))
            else:
                return
        op, data = node.op_type, ins[0]
        try:
            if op in _SAME_SHAPE:
                out = [np.shape(data)]
            elif op in _BROADCAST:
                out = [np.broadcast_shapes(*(np.shape(x) for x in ins if x is not None))]
            elif op == "MatMul":
                out = [np.matmul(np.empty(np.shape(ins[0])), np.empty(np.shape(ins[1]))).shape]
            elif op == "Gemm":
                a, b = np.shape(ins[0]), np.shape(ins[1])
                out = [
                    (a[1] if attrs.get("transA") else a[0], b[0] if attrs.get("transB") else b[1])
                ]
            elif op == "Transpose":
                out = [np.transpose(data, attrs.get("perm")).shape]
            elif op == "Reshape":
                target = [int(n) for n in ins[1]]
                target = [np.shape(data)[k] if n == 0 else n for k, n in enumerate(target)]
                out = [np.reshape(data, target).shape]
            elif op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"):
                axes = attrs.get("axes")
                if axes is None and len(ins) > 1 and ins[1] is not None:
                    axes = [int(a) for a in np.ravel(ins[1])]
                keep = bool(attrs.get("keepdims", 1))
                axis = None if not axes else tuple(axes)
                out = [np.sum(np.empty(np.shape(data)), axis=axis, keepdims=keep).shape]
            elif op == "Split":
                out = [np.shape(x) for x in _fold_split(ins, attrs, len(node.output))]
            elif op in FOLD:
                result = FOLD[op](ins, attrs)
                out = [np.shape(x) for x in (result if isinstance(result, tuple) else (result,))]
            else:
                return
        except (ValueError, TypeError, IndexError, KeyError):
            return
        for name, shape in zip(node.output, out):
            if name and name not in self.shapes:
                self.shapes[name] = tuple(int(n) for n in shape)

    def _arg(self, onnx_name: str) -> str:
        if onnx_name == "":
            return ""
        if onnx_name in self.known:
            value = self.known[onnx_name]
            if value.dtype.kind in "fiub" and value.size <= INLINE:
                return _literal(value)
            name = self.name(onnx_name, "c")
            if name not in self.weights:  # a large constant: with the weights, as an input
                self.weights[name] = value.astype(np.float64)
            return name
        return self.name(onnx_name)

    def shape(self, node, k: int = 0) -> tuple:
        """The static shape of the node's input ``k``; a model that leaves it open is asked
        for --example."""
        onnx_name = node.input[k]
        if onnx_name in self.known:
            return self.known[onnx_name].shape
        shape = self.shapes.get(onnx_name)
        if shape is None:
            raise UsageError(
                f"{self.filename}: node {node.name or node.op_type} ({node.op_type}) needs the "
                f"shape of {onnx_name}, which the model leaves open",
                hints=["give the model's inputs with --example FILE.npz (arrays of the shapes "
                       "to import it for)"],
            )  # fmt: skip
        return shape

    def constant(self, node, k: int) -> np.ndarray:
        """The value of the node's input ``k``, which must be known when importing (a shape,
        axes)."""
        if k >= len(node.input) or node.input[k] == "":
            raise self._unsupported(node, f"{node.op_type} without its input {k + 1}")
        if node.input[k] not in self.known:
            raise self._unsupported(
                node, f"{node.op_type} with input {k + 1} computed by the model (not a constant)"
            )
        return self.known[node.input[k]]

    def _unsupported(self, node, what: str | None = None) -> NotSupported:
        supported = ", ".join(sorted({*RULES, *FOLD, "Constant"}))
        hint = (  # an operator cgraph reads, in a use it does not: what it imports is no help
            f"cgraph imports {node.op_type}, but not this use of it (docs/commands/import.md)"
            if what and node.op_type in RULES
            else f"cgraph imports {supported}"
        )
        what = what or f"the operator {node.op_type}"
        return NotSupported(
            f"{self.filename}: cannot import {what} (node {node.name or '(unnamed)'})",
            hints=[hint],
        )

    # -- local functions -------------------------------------------------------------------
    def _call(self, node) -> None:
        """A call of one of the model's local functions: a call of its ``def`` (made at its
        first call), or its body inlined (a function of several outputs, attributes that
        differ between calls, a body that reads differently at another call)."""
        key = (node.domain, node.op_type)
        fn = self.functions[key]
        if key in self.active:
            cycle = " -> ".join(self.functions[k].name for k in [*self.active, key])
            raise self._unsupported(node, f"the recursive local function {fn.name} ({cycle})")
        if len(self.active) >= MAX_NESTING:
            raise self._unsupported(
                node, f"local functions nested more than {MAX_NESTING} deep ({fn.name})"
            )
        self.active.append(key)
        try:
            why = self.inline_why.get(key)
            if why is None:
                why = self._def_call(fn, node)
            if why is not None:
                self.notes.setdefault(key, why)
                self._inline(fn, node)
        finally:
            self.active.pop()

    def _def_call(self, fn, node) -> str | None:
        """The call as ``y = name(args)``, its function's ``def`` written at the first call;
        or why it cannot be (the body reads differently here than at the first call)."""
        key = (fn.domain, fn.name)
        if key not in self.defs:
            self.defs[key] = (self._def_name(fn.name), None)
        name, made = self.defs[key]
        outer = (self.name, self.lines, self.modules, self.known, self.shapes, self.weights,
                 self.module, getattr(self, "_current", ""))  # fmt: skip
        params: list[tuple[str, str]] = []  # (the body's name, the caller's)
        absent: dict[str, str] = {}
        known: dict[str, np.ndarray] = {}
        shapes: dict[str, tuple] = {}
        for k, formal in enumerate(fn.input):
            actual = node.input[k] if k < len(node.input) else ""
            if not actual:
                absent[formal] = ""
                continue
            value = self.known.get(actual)
            if value is not None and value.dtype.kind in "fiub" and value.size <= INLINE:
                known[formal] = value  # a shape, axes, a small constant: folded in the body
                continue
            params.append((formal, actual))
            if value is not None:
                shapes[formal] = value.shape
            elif actual in self.shapes:
                shapes[formal] = self.shapes[actual]
        self.name = _Namer()
        self.name.taken.update(n for n, _ in self.defs.values())
        self.namers.append(self.name)
        self.lines, self.modules, self.known, self.shapes, self.weights = [], [], known, shapes, {}
        self.module = ""
        try:
            locals_ = [self.name(formal, "x") for formal, _ in params]
            for body_node in _instantiate(fn, node, absent):
                self._node(body_node)
            out = fn.output[0]
            result = self.known.get(out)
            ret = "" if result is not None else self._arg(out)
            consts = dict(self.weights)
            lines = list(self.lines)
            shape = self.shapes.get(out)
            used = set(self.name.names.values())
        finally:
            self.namers.pop()
            (self.name, self.lines, self.modules, self.known, self.shapes, self.weights,
             self.module, self._current) = outer  # fmt: skip
        if result is not None:  # what the call computes is known now: folded
            self.known[node.output[0]] = np.asarray(result)
            self.shapes[node.output[0]] = np.shape(result)
            return None
        if lines and lines[-1].startswith(f"{ret} = "):
            body = [*lines[:-1], f"return {lines[-1][len(ret) + 3 :]}"]
        else:
            body = [*lines, f"return {ret}"]
        signature = ([*locals_, *consts], body)
        self.locals |= used  # a def defined later, called in a body, must not take one
        if made is None:
            self.defs[key] = (name, signature)
            head = f"def {name}({', '.join(signature[0])}):"
            self.def_lines.extend([head, *(f"    {line}" for line in body)])
        elif made != signature:
            return "its body reads differently at another call (other shapes or constants)"
        args = [self._arg(actual) for _, actual in params]
        for local, value in consts.items():  # a large constant in the body: a weight passed in
            digest = value.tobytes() + repr(value.shape).encode()
            if digest not in self.consts:
                self.consts[digest] = self.name(f"{fn.name}_{local}", "c")
                self.weights[self.consts[digest]] = value
            args.append(self.consts[digest])
        self._emit(node.output[0], f"{name}({', '.join(args)})")
        if shape is not None and node.output[0] not in self.shapes:
            self.shapes[node.output[0]] = shape
        return None

    def _def_name(self, onnx_name: str) -> str:
        """A def's name: unique among the program's names and every name a def's body
        uses (a body is read again at each call, and may not assign a function's name)."""
        import re

        base = re.sub(r"[^0-9A-Za-z_]+", "_", onnx_name).strip("_") or "f"
        base = f"f{base}" if base[0].isdigit() else base
        name, k = base, 2
        while name in self.locals or any(name in namer.taken for namer in self.namers):
            name, k = f"{base}_{k}", k + 1
        for namer in self.namers:  # the program's, and the bodies' read now
            namer.taken.add(name)
        return name

    def _inline(self, fn, node) -> None:
        """The function's body read in place of the call, its names the caller's: the
        inputs and outputs the call's, the others prefixed by the call's first output."""
        rename: dict[str, str] = {}
        for k, formal in enumerate(fn.input):
            rename[formal] = node.input[k] if k < len(node.input) else ""
        for k, formal in enumerate(fn.output):
            if k < len(node.output) and node.output[k]:
                rename[formal] = node.output[k]
        base = node.output[0] if node.output and node.output[0] else fn.name
        prefix, k = f"{base}/", 2
        seen = (self.known, self.shapes, self.name.names)
        while any(f"{prefix}{n}" in table for n in _made_in(fn) for table in seen):
            prefix, k = f"{base}/{k}/", k + 1
        for name in _made_in(fn):
            rename.setdefault(name, f"{prefix}{name}")
        for body_node in _instantiate(fn, node, rename):
            self._node(body_node)


#: Local functions calling local functions at most this deep.
MAX_NESTING = 64


def _inline_reasons(model) -> dict[tuple, str]:
    """The local functions inlined at every call, and why: several outputs (a cgraph
    function returns one value), attributes that differ between calls or that a calling
    function passes on from its own."""
    functions = {(f.domain, f.name): f for f in model.functions}
    reasons: dict[tuple, str] = {}
    seen: dict[tuple, set] = {}
    for nodes in [model.graph.node, *(f.node for f in model.functions)]:
        for n in nodes:
            key = (n.domain, n.op_type)
            if key not in functions:
                continue
            if any(a.ref_attr_name for a in n.attribute):
                reasons[key] = "its attributes are those of the function calling it"
            given = tuple(sorted(a.SerializeToString(deterministic=True) for a in n.attribute))
            seen.setdefault(key, set()).add(given)
    for key, fn in functions.items():
        if len(fn.output) != 1:
            reasons[key] = f"{len(fn.output)} outputs: a cgraph function returns one value"
        elif (
            key not in reasons
            and len(seen.get(key, ())) > 1
            and any(a.ref_attr_name for n in fn.node for a in n.attribute)
        ):
            reasons[key] = "attributes that differ between its calls"
    return reasons


def _made_in(fn) -> list[str]:
    """The names a function's body makes (its outputs too)."""
    return [o for n in fn.node for o in n.output if o]


def _instantiate(fn, call, rename: Mapping[str, str]) -> list:
    """The function's nodes for one call: names renamed, each attribute that refers to one
    of the function's (``ref_attr_name``) given the call's value (or the default)."""
    from onnx import NodeProto

    given = {a.name: a for a in call.attribute}
    defaults = {a.name: a for a in fn.attribute_proto}
    out = []
    for body_node in fn.node:
        new = NodeProto()
        new.CopyFrom(body_node)
        new.input[:] = [rename.get(n, n) for n in body_node.input]
        new.output[:] = [rename.get(n, n) for n in body_node.output]
        if any(a.ref_attr_name for a in body_node.attribute):
            attrs = []
            for a in body_node.attribute:
                if a.ref_attr_name:
                    value = given.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                    if value is None:
                        continue  # not given, no default: the operator's own default
                    named = type(a)()
                    named.CopyFrom(value)
                    named.name = a.name
                    a = named
                attrs.append(a)
            del new.attribute[:]
            new.attribute.extend(attrs)
        out.append(new)
    return out


def imported_graph(imported: Imported, filename: str):
    """The imported program as a graph: its weights the defaults of their inputs, and each
    module of the model (``layers.0/attn``) a group, nested as the modules are, so that the
    views fold them as they fold calls."""
    from ..parse import parse

    graph = parse(imported.text, filename)
    for name, value in imported.weights.items():
        graph.defaults[name] = frozen(value)
    _module_groups(graph, imported.modules, {graph.inputs[n] for n in imported.inputs})
    return graph


def _module_groups(graph, modules: list[str], data: set[int]) -> None:
    """One group per module path and its prefixes, parents first; each node in the group of
    the innermost module its statement belongs to; the model's data inputs a module reads are
    its arguments (what flows through it, not weights it holds)."""
    from ..core.groups import Group
    from ..core.ops import INPUT

    start = 0
    spans = []
    for kind, _, node, count in graph.statements():
        spans.append((kind, start, count, node))
        start = count
    statements = [s for s in spans if s[0] != "input"]
    inner = [-1] * len(graph.ops)
    paths = list(dict.fromkeys(p for m in modules if m for p in _prefixes(m)))  # parents first
    if not paths or len(statements) != len(modules):
        return
    index = {p: k for k, p in enumerate(paths)}
    members: dict[int, list[int]] = {}
    outputs: dict[int, int] = {}
    for (_, lo, hi, node), module in zip(statements, modules):
        if not module:
            continue
        for i in range(lo, hi):
            if graph.ops[i] is not INPUT:
                inner[i] = index[module]
        for p in _prefixes(module):
            members.setdefault(index[p], []).extend(range(lo, hi))
            outputs[index[p]] = node
    groups = []
    for k, p in enumerate(paths):
        held = members.get(k) or [0]
        parent = index.get(p.rsplit("/", 1)[0], -1) if "/" in p else -1
        reads = tuple(sorted({a for i in held for a in graph.args[i] if a in data}))
        groups.append(
            Group(
                "module",
                p,
                1,
                parent,
                p,
                0,
                0,
                reads,
                outputs.get(k, held[-1]),
                min(held),
                max(held) + 1,
            )  # fmt: skip
        )
    # the calls of the program's functions (a model's local functions) inside the modules
    calls, shift = graph.groups, len(groups)
    for grp in calls:  # parents first: a call's enclosing call, or its statement's module
        parent = grp.parent + shift if grp.parent >= 0 else inner[grp.lo] if grp.lo < grp.hi else -1
        groups.append(grp._replace(parent=parent))
    for k, grp in enumerate(calls):
        inner[grp.lo : grp.hi] = [k + shift] * (grp.hi - grp.lo)
    graph.groups = groups
    graph.memo["group_of"] = inner


def _prefixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[: k + 1]) for k in range(len(parts))]


def _module_of(node) -> str:
    """The module a node belongs to, as a path (``layers.0/attn``): the dynamo exporter's
    name scopes in the node's metadata (the cumulative module names, the root's "" first and
    the node's own name last: ``['', 'layers.0', 'layers.0.attn', 'linear_3']``), or the path
    TorchScript's exporter writes into the name (``/layers.0/attn/MatMul``)."""
    import ast

    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            try:
                scopes = ast.literal_eval(prop.value)  # a list's repr: read as data, never run
            except (ValueError, SyntaxError):
                break
            if not isinstance(scopes, list) or not all(isinstance(x, str) for x in scopes):
                break
            parts, outer = [], ""
            for scope in scopes[1:-1]:
                inner = outer and scope.startswith(outer + ".")
                parts.append(scope[len(outer) + 1 :] if inner else scope)
                outer = scope
            return "/".join(p for p in parts if p)
    if node.name.startswith("/"):
        return "/".join(node.name.strip("/").split("/")[:-1])
    return ""


def _attr(a, to_array) -> Any:
    from onnx import AttributeProto, helper

    value = helper.get_attribute_value(a)
    if a.type == AttributeProto.FLOAT:  # float32's value, exactly: the model computes with it
        return float(np.float32(value))
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "dims"):  # a tensor
        return to_array(value)
    return value


def _constant(attrs: dict) -> np.ndarray:
    for key in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if key in attrs:
            return np.asarray(attrs[key])
    raise UsageError(f"a Constant node holds none of value, value_float(s), value_int(s): {attrs}")


# -- the operators -------------------------------------------------------------------------
def _binary(symbol: str) -> Callable:
    return lambda r, node, a, attrs: f"({a[0]} {symbol} {a[1]})"


def _function(name: str) -> Callable:
    return lambda r, node, a, attrs: f"{name}({a[0]})"


def _gemm(r, node, a, attrs) -> str:
    x = f"transpose({a[0]})" if attrs.get("transA") else a[0]
    w = f"transpose({a[1]})" if attrs.get("transB") else a[1]
    expr = f"{x} @ {w}"
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if alpha != 1.0:
        expr = f"{_literal(np.float64(alpha))} * ({expr})"
    if len(a) > 2 and a[2]:
        expr += f" + {a[2]}" if beta == 1.0 else f" + {_literal(np.float64(beta))} * {a[2]}"
    return expr


def _fold_pairs(fn: str, a: list[str]) -> str:
    """max(a, b, c): max(max(a, b), c)."""
    expr = a[0]
    for x in a[1:]:
        expr = f"{fn}({expr}, {x})"
    return expr


def _reshape_to(r, node, a, shape) -> str:
    return f"reshape({a[0]}, {list(int(n) for n in shape)})"


def _reshape(r, node, a, attrs) -> str:
    target = [int(n) for n in r.constant(node, 1)]
    if 0 in target and not attrs.get("allowzero"):
        source = r.shape(node)
        target = [source[k] if n == 0 else n for k, n in enumerate(target)]
    return _reshape_to(r, node, a, target)


def _flatten(r, node, a, attrs) -> str:
    shape = r.shape(node)
    axis = attrs.get("axis", 1) % (len(shape) + 1) if shape else 0
    return _reshape_to(r, node, a, [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])


def _axes(r, node, attrs, k: int = 1) -> list[int] | None:
    if "axes" in attrs:
        return [int(x) for x in attrs["axes"]]
    if len(node.input) > k and node.input[k]:
        return [int(x) for x in np.ravel(r.constant(node, k))]
    return None


def _squeeze(r, node, a, attrs) -> str:
    shape = r.shape(node)
    axes = _axes(r, node, attrs)
    keep = [n for k, n in enumerate(shape) if not (n == 1 and (axes is None or k in
            {x % len(shape) for x in axes}))]  # fmt: skip
    return _reshape_to(r, node, a, keep)


def _unsqueeze(r, node, a, attrs) -> str:
    shape = list(r.shape(node))
    axes = _axes(r, node, attrs) or []
    out = len(shape) + len(axes)
    for axis in sorted(x % out for x in axes):
        shape.insert(axis, 1)
    return _reshape_to(r, node, a, shape)


def _reduce(fn: str) -> Callable:
    def rule(r, node, a, attrs) -> str:
        shape = r.shape(node)
        axes = _axes(r, node, attrs)
        if axes is None or (not axes and not attrs.get("noop_with_empty_axes")):
            axes = list(range(len(shape)))
        axes = sorted({x % len(shape) for x in axes}, reverse=True)
        expr = a[0]
        if len(axes) == len(shape) and len(shape) > 1:
            expr = f"{fn}({expr})"  # every axis: one reduction of the whole
        else:
            for axis in axes:
                expr = f"{fn}({expr}, {axis})"
        if attrs.get("keepdims", 1):
            kept = [1 if k in axes else n for k, n in enumerate(shape)]
            expr = f"reshape({expr}, {kept})"
        return expr

    return rule


def _extreme(fn: str) -> Callable:
    """ReduceMax, ReduceMin: of every axis, cgraph's max(x) (min(x)); along some, amax(x,
    axis) (amin) for each."""
    whole, along = _reduce(fn), _reduce(f"a{fn}")

    def extreme(r, node, a, attrs) -> str:
        shape = r.shape(node)
        axes = _axes(r, node, attrs)
        every = axes is None or sorted({x % len(shape) for x in axes}) == list(range(len(shape)))
        return (whole if every else along)(r, node, a, attrs)

    return extreme


def _clip(r, node, a, attrs) -> str:
    x = a[0]
    low = a[1] if len(a) > 1 and a[1] else None
    high = a[2] if len(a) > 2 and a[2] else None
    if "min" in attrs:  # opset 6's attributes
        low = _literal(np.float64(attrs["min"]))
    if "max" in attrs:
        high = _literal(np.float64(attrs["max"]))
    if high is not None:
        x = f"min({x}, {high})"
    if low is not None:
        x = f"max({x}, {low})"
    return x


def _transpose(r, node, a, attrs) -> str:
    perm = attrs.get("perm")
    if perm is None:
        return f"transpose({a[0]})"
    perm = [int(k) for k in perm]
    if perm == list(range(len(perm))):
        return a[0]
    if perm == list(range(len(perm)))[::-1]:
        return f"transpose({a[0]})"
    return f"transpose({a[0]}, {perm})"


def _image_attrs(r, node, attrs, kernel) -> tuple[list[int], list[int], list[int]]:
    """An image operator's strides, pads (top, left, bottom, right) and dilations, with
    auto_pad's SAME_UPPER / SAME_LOWER / VALID worked out for the input's size."""
    shape = r.shape(node)
    if len(shape) != 4 or len(kernel) != 2:
        raise r._unsupported(node, f"{node.op_type} of {len(shape) - 2} spatial axes (cgraph's "
                                   "are 2-D: batch, channels, height, width)")  # fmt: skip
    strides = [int(n) for n in attrs.get("strides", [1, 1])]
    dilations = [int(n) for n in attrs.get("dilations", [1, 1])]
    pads = [int(n) for n in attrs.get("pads", [0, 0, 0, 0])]
    auto = attrs.get("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for k in range(2):
            span = (kernel[k] - 1) * dilations[k] + 1
            size = shape[2 + k]
            total = max((-(-size // strides[k]) - 1) * strides[k] + span - size, 0)
            small, large = total // 2, total - total // 2
            pads[k], pads[k + 2] = (small, large) if auto == "SAME_UPPER" else (large, small)
    elif auto == "VALID":
        pads = [0, 0, 0, 0]
    return strides, pads, dilations


def _written(params: list, defaults: list) -> str:
    """Parameters as a call writes them: those equal to their defaults at the end left out."""
    params = list(params)
    while params and params[-1] == defaults[len(params) - 1]:
        params.pop()
    return "".join(f", {p}" for p in params)


def _conv(r, node, a, attrs) -> str:
    kernel = list(r.shape(node, 1)[2:])
    strides, pads, dilations = _image_attrs(r, node, attrs, kernel)
    groups = int(attrs.get("group", 1))
    params = _written([strides, pads, dilations, groups], [[1, 1], [0, 0, 0, 0], [1, 1], 1])
    expr = f"conv2d({a[0]}, {a[1]}{params})"
    if len(a) > 2 and a[2]:
        expr += f" + reshape({a[2]}, [{r.shape(node, 1)[0]}, 1, 1])"
    return expr


def _pool(r, node, attrs) -> tuple[list[int], list[int], list[int]]:
    window = [int(n) for n in attrs["kernel_shape"]]
    strides, pads, dilations = _image_attrs(r, node, attrs, window)
    if dilations != [1, 1]:
        raise r._unsupported(node, f"{node.op_type} with dilations {dilations}")
    if len(node.output) > 1 and node.output[1]:
        raise r._unsupported(node, f"{node.op_type}'s second output (the indices)")
    if attrs.get("ceil_mode"):  # the windows the ceiling adds, as padding at the end
        shape = r.shape(node)
        for k in range(2):
            over = (shape[2 + k] + pads[k] + pads[k + 2] - window[k]) % strides[k]
            if over and node.op_type == "AveragePool":
                raise r._unsupported(node, "AveragePool with ceil_mode (a partial window)")
            pads[k + 2] += (strides[k] - over) % strides[k]
    return window, strides, pads


def _max_pool(r, node, a, attrs) -> str:
    window, strides, pads = _pool(r, node, attrs)
    return f"max_pool2d({a[0]}, {window}{_written([strides, pads], [window, [0, 0, 0, 0]])})"


def _average_pool(r, node, a, attrs) -> str:
    window, strides, pads = _pool(r, node, attrs)
    counted = int(attrs.get("count_include_pad", 0)) if any(pads) else 1
    params = _written([strides, pads, counted], [window, [0, 0, 0, 0], 1])
    return f"avg_pool2d({a[0]}, {window}{params})"


def _global_average_pool(r, node, a, attrs) -> str:
    shape = r.shape(node)
    if len(shape) != 4:
        raise r._unsupported(node, f"GlobalAveragePool of {len(shape) - 2} spatial axes")
    n, c, h, w = shape
    return f"reshape(mean(reshape({a[0]}, [{n}, {c}, {h * w}]), 2), [{n}, {c}, 1, 1])"


def _softmax(fn: str) -> Callable:
    def rule(r, node, a, attrs) -> str:
        return f"{fn}({a[0]}, {attrs.get('axis', -1)})"

    return rule


def _leaky_relu(r, node, a, attrs) -> str:
    alpha = _literal(np.float64(attrs.get("alpha", 0.01)))
    return f"where({a[0]} > 0, {a[0]}, {alpha} * {a[0]})"


def _gelu(r, node, a, attrs) -> str:
    x = a[0]
    if attrs.get("approximate", "none") == "tanh":
        return f"0.5 * {x} * (1 + tanh(0.7978845608028654 * ({x} + 0.044715 * {x} ^ 3)))"
    return f"0.5 * {x} * (1 + erf({x} / 1.4142135623730951))"


def _layer_norm(r, node, a, attrs) -> list[str]:
    shape = r.shape(node)
    axis = attrs.get("axis", -1) % len(shape)
    eps = _literal(np.float64(attrs.get("epsilon", 1e-5)))
    kept = list(shape)
    expr_mean = a[0]
    for k in range(len(shape) - 1, axis - 1, -1):
        expr_mean = f"mean({expr_mean}, {k})"
        kept[k] = 1
    mu = r.temp(f"reshape({expr_mean}, {kept})", "mean")
    centred = r.temp(f"{a[0]} - {mu}", "centred")
    var = f"{centred} ^ 2"
    for k in range(len(shape) - 1, axis - 1, -1):
        var = f"mean({var}, {k})"
    spread = r.temp(f"sqrt(reshape({var}, {kept}) + {eps})", "std")
    expr = f"{centred} / {spread}"
    if len(a) > 1 and a[1]:
        expr += f" * {a[1]}"
    if len(a) > 2 and a[2]:
        expr += f" + {a[2]}"
    return [expr]


def _batch_norm(r, node, a, attrs) -> str:
    if attrs.get("training_mode"):
        raise r._unsupported(node, "BatchNormalization in training mode")
    shape = r.shape(node)
    eps = _literal(np.float64(attrs.get("epsilon", 1e-5)))
    per = [shape[1]] + [1] * (len(shape) - 2)

    def channel(x: str) -> str:
        return f"reshape({x}, {per})" if len(shape) > 2 else x

    x, scale, bias, mean, var = a[:5]
    return (
        f"({x} - {channel(mean)}) / sqrt({channel(var)} + {eps}) * {channel(scale)}"
        f" + {channel(bias)}"
    )


def _cast(r, node, a, attrs) -> str:
    from onnx import TensorProto

    if attrs.get("to") not in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16):
        raise r._unsupported(node, "Cast to a type other than float, of a computed value")
    return a[0]


def _clamped(dim: int, start: int, stop: int, step: int) -> tuple:
    """ONNX's Slice bounds on an axis of ``dim`` (ends past the axis clamped, as Python
    does), as (start, stop, step) for cgraph's index."""
    first, last, step = slice(int(start), int(stop), int(step)).indices(dim)
    # down to the first element: Python's -1 would mean the last
    return (first, None if step < 0 and last < 0 else last, step)


def _slice(r, node, a, attrs) -> str:
    shape = r.shape(node)
    starts, ends = r.constant(node, 1), r.constant(node, 2)
    axes = r.constant(node, 3) if len(node.input) > 3 and node.input[3] else range(len(starts))
    steps = r.constant(node, 4) if len(node.input) > 4 and node.input[4] else [1] * len(starts)
    parts: list = [(None, None, 1)] * len(shape)
    for axis, s0, e0, st in zip(axes, starts, ends, steps):
        k = int(axis) % len(shape)
        parts[k] = _clamped(shape[k], s0, e0, st)
    return _index_text(a[0], parts)


def _split(r, node, a, attrs) -> list[str]:
    shape = r.shape(node)
    axis = attrs.get("axis", 0) % len(shape)
    given = r.constant(node, 1) if len(node.input) > 1 and node.input[1] else None
    sizes = _split_sizes(shape[axis], given, attrs, len(node.output))
    out, at = [], 0
    for size in sizes:
        parts: list = [(None, None, 1)] * axis + [(at, at + size, 1)]
        out.append(_index_text(a[0], parts))
        at += size
    return out


def _gather(r, node, a, attrs) -> str:
    shape = r.shape(node)
    axis = attrs.get("axis", 0) % len(shape)
    if node.input[1] not in r.known:  # positions the model computes or is given: a lookup
        return f"take({a[0]}, {a[1]}{f', {axis}' if axis else ''})"
    at = np.asarray(r.constant(node, 1)).astype(np.int64)
    parts: list = [(None, None, 1)] * axis
    if at.ndim == 0:
        return _index_text(a[0], parts + [int(at) % shape[axis]])
    flat = [int(i) % shape[axis] for i in at.ravel()]
    steps = {b - c for b, c in zip(flat[1:], flat)}
    if at.ndim == 1 and len(steps) <= 1 and steps != {0}:
        step = steps.pop() if steps else 1
        stop = flat[-1] + step
        return _index_text(a[0], parts + [(flat[0], None if stop < 0 else stop, step)])
    return f"take({a[0]}, {a[1]}{f', {axis}' if axis else ''})"  # scattered positions


def _concat(r, node, a, attrs) -> str:
    rank = len(r.shape(node))
    axis = attrs["axis"] % rank
    joined = [x for x, name in zip(a, node.input) if r.shape(node, list(node.input).index(name))
              [axis] > 0]  # fmt: skip
    expr = joined[0] if joined else a[0]
    for x in joined[1:]:
        expr = f"concat({expr}, {x}{f', {axis}' if axis else ''})"
    return expr


RULES: dict[str, Callable] = {
    "Add": _binary("+"),
    "Sub": _binary("-"),
    "Mul": _binary("*"),
    "Div": _binary("/"),
    "Pow": _binary("^"),
    "MatMul": _binary("@"),
    "Equal": _binary("=="),
    "Less": _binary("<"),
    "Greater": _binary(">"),
    "LessOrEqual": _binary("<="),
    "GreaterOrEqual": _binary(">="),
    "Neg": lambda r, node, a, attrs: f"(-{a[0]})",
    "Not": _function("logical_not"),
    "Sqrt": _function("sqrt"),
    "Exp": _function("exp"),
    "Log": _function("log"),
    "Abs": _function("abs"),
    "Relu": _function("relu"),
    "Tanh": _function("tanh"),
    "Sigmoid": _function("sigmoid"),
    "Softplus": _function("softplus"),
    "Erf": _function("erf"),
    "Sin": _function("sin"),
    "Cos": _function("cos"),
    "Identity": lambda r, node, a, attrs: a[0],
    "Dropout": lambda r, node, a, attrs: a[0],  # inference: passes its input on
    "Cast": _cast,
    "Where": lambda r, node, a, attrs: f"where({a[0]}, {a[1]}, {a[2]})",
    "Gemm": _gemm,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Transpose": _transpose,
    "ReduceSum": _reduce("sum"),
    "ReduceMean": _reduce("mean"),
    "ReduceMax": _extreme("max"),
    "ReduceMin": _extreme("min"),
    "Max": lambda r, node, a, attrs: _fold_pairs("max", a),
    "Min": lambda r, node, a, attrs: _fold_pairs("min", a),
    "Clip": _clip,
    "Reciprocal": lambda r, node, a, attrs: f"(1 / {a[0]})",
    "Softmax": _softmax("softmax"),
    "LogSoftmax": _softmax("log_softmax"),
    "LeakyRelu": _leaky_relu,
    "Gelu": _gelu,
    "LayerNormalization": _layer_norm,
    "BatchNormalization": _batch_norm,
    "Slice": _slice,
    "Split": _split,
    "Gather": _gather,
    "Concat": _concat,
    "Conv": _conv,
    "MaxPool": _max_pool,
    "AveragePool": _average_pool,
    "GlobalAveragePool": _global_average_pool,
}


# -- shape arithmetic, folded while importing ------------------------------------------------
def _fold_shape(values, attrs):
    (x,) = values
    start, end = attrs.get("start", 0), attrs.get("end")
    return np.array(np.shape(x), dtype=np.int64)[start:end]


def _fold_slice(values, attrs):
    x, starts, ends = values[:3]
    axes = values[3] if len(values) > 3 and values[3] is not None else range(len(starts))
    steps = values[4] if len(values) > 4 and values[4] is not None else [1] * len(starts)
    index = [slice(None)] * np.ndim(x)
    for axis, s, e, step in zip(axes, starts, ends, steps):
        index[int(axis)] = slice(int(s), int(e), int(step))
    return np.asarray(x)[tuple(index)]


def _fold_axes(values, attrs):
    if "axes" in attrs:
        return list(attrs["axes"])
    return (
        [int(a) for a in np.ravel(values[1])] if len(values) > 1 and values[1] is not None else None
    )


def _fold_unsqueeze(values, attrs):
    x = np.asarray(values[0])
    for axis in sorted(
        a % (x.ndim + len(_fold_axes(values, attrs))) for a in _fold_axes(values, attrs)
    ):
        x = np.expand_dims(x, axis)
    return x


def _fold_squeeze(values, attrs):
    axes = _fold_axes(values, attrs)
    return np.squeeze(values[0], axis=None if axes is None else tuple(axes))


def _fold_cast(values, attrs):
    from onnx import helper

    return np.asarray(values[0]).astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))


#: Operators whose output has the shape of their first input, and those that broadcast.
_SAME_SHAPE = {
    "Relu", "Tanh", "Sigmoid", "Softplus", "Erf", "Sin", "Cos", "Sqrt", "Exp", "Log", "Neg",
    "Abs", "Not", "Identity", "Dropout", "Cast", "Softmax", "LogSoftmax", "LeakyRelu", "Gelu",
    "LayerNormalization", "BatchNormalization", "Reciprocal", "Clip",
}  # fmt: skip
_BROADCAST = {
    "Add", "Sub", "Mul", "Div", "Pow", "Where", "Equal", "Less", "Greater", "LessOrEqual",
    "GreaterOrEqual", "Max", "Min",
}  # fmt: skip


def _split_sizes(length: int, given, attrs, count: int) -> list[int]:
    """Split's part sizes along an axis of ``length``: its input 2 (``given``), the opset-13
    attribute, or ``num_outputs`` (``count``) parts as equal as ONNX makes them."""
    if given is not None:
        return [int(n) for n in given]
    if "split" in attrs:
        return [int(n) for n in attrs["split"]]
    n = attrs.get("num_outputs", count)
    step = -(-length // n)
    return [min(step, length - k * step) for k in range(n)]


def _fold_split(values, attrs, count: int):
    x = values[0]
    axis = attrs.get("axis", 0)
    given = values[1] if len(values) > 1 else None
    sizes = _split_sizes(np.shape(x)[axis], given, attrs, count)
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


FOLD: dict[str, Callable] = {
    "Shape": _fold_shape,
    "Size": lambda v, a: np.array(np.size(v[0]), dtype=np.int64),
    "Gather": lambda v, a: np.take(v[0], v[1], axis=a.get("axis", 0)),
    "Concat": lambda v, a: np.concatenate([np.atleast_1d(x) for x in v], axis=a["axis"]),
    "Unsqueeze": _fold_unsqueeze,
    "Squeeze": _fold_squeeze,
    "Reshape": lambda v, a: np.reshape(v[0], [int(n) for n in v[1]]),
    "Cast": _fold_cast,
    "ConstantOfShape": lambda v, a: np.full(
        [int(n) for n in v[0]], a["value"].ravel()[0] if "value" in a else 0.0
    ),
    "Range": lambda v, a: np.arange(v[0], v[1], v[2]),
    "Slice": _fold_slice,
    "Identity": lambda v, a: v[0],
    "Add": lambda v, a: np.add(v[0], v[1]),
    "Sub": lambda v, a: np.subtract(v[0], v[1]),
    "Mul": lambda v, a: np.multiply(v[0], v[1]),
    "Div": lambda v, a: (
        np.floor_divide(v[0], v[1])
        if np.asarray(v[0]).dtype.kind in "iu"
        else np.divide(v[0], v[1])
    ),
    "Equal": lambda v, a: np.equal(v[0], v[1]),
    "Where": lambda v, a: np.where(v[0], v[1], v[2]),
    "Neg": lambda v, a: np.negative(v[0]),
    "Sqrt": lambda v, a: np.sqrt(v[0]),
    "Pow": lambda v, a: np.power(v[0], v[1]),
    "Mod": lambda v, a: np.fmod(v[0], v[1]) if a.get("fmod") else np.mod(v[0], v[1]),
    "Floor": lambda v, a: np.floor(v[0]),
    "Ceil": lambda v, a: np.ceil(v[0]),
    "Abs": lambda v, a: np.abs(v[0]),
    "Max": lambda v, a: np.maximum.reduce([np.asarray(x) for x in v]),
    "Min": lambda v, a: np.minimum.reduce([np.asarray(x) for x in v]),
    "Less": lambda v, a: np.less(v[0], v[1]),
    "Greater": lambda v, a: np.greater(v[0], v[1]),
    "Not": lambda v, a: np.logical_not(v[0]),
    "Expand": lambda v, a: np.broadcast_to(
        v[0], np.broadcast_shapes(np.shape(v[0]), tuple(int(n) for n in v[1]))
    ),
}
