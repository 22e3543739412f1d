"""Graph -> a standalone JavaScript program (``cgraph compile --target js``): the forward pass
and the reverse pass as straight-line code over an array of values indexed by node id, for
Node and for a browser page (one script, no library, no ``eval``, no request).

The script defines one object, ``cgraphProgram``: ``module.exports`` where a CommonJS
``module`` exists (Node's ``require``), else ``globalThis.cgraphProgram`` (a ``<script>`` in a
page). It holds ``inputs`` (names), ``shapes`` and ``defaults`` (by name), ``nodes`` (one
record a node: ``id``, ``key``, ``name``, ``op``, ``where``), ``output`` (its key),
``forward(inputs)`` (every node's value by key) and ``grad(inputs)`` (``{value, gradients,
values, adjoints, partials}``: the output's value, each input's gradient by name, every node's
value and adjoint by key, null for a node of a branch not taken, which did not run; each
operation of numbers' local partials, by key). A node's key is the name the program gives
it, else its display name (cgraph's diagrams' label), with `` #ID`` after it when an earlier
node has that key.
Numbers are JS numbers, tensors ``{shape, data}`` with ``data`` a row-major Float64Array;
inputs may also be nested arrays.

Each op's value is its ``js`` spelling in the op table; the reverse pass is the derivative
program the op table's rules record (:func:`cgraph_cli.core.autodiff.reverse` under the
graph builder of :mod:`cgraph_cli.passes.grad_graph`, as ``cgraph grad`` runs them), not
written here. A value that is not finite throws a ``CgraphError`` whose ``message``,
``where`` and ``text`` are those the CLI prints for that program and bindings.

Every op of the table has a ``js`` spelling, the image ops (conv2d, the pools and their
gradients) with helpers of ``js_images.js``. ``a if c else b`` is a JavaScript ``if``: the
branch not taken is never computed, forward or backward. Programs with loops are refused.

>>> from cgraph_cli import parse
>>> text = js_module(parse("p = x + y; g = p * z"))
>>> "module.exports = program;" in text, "  v[4] = v[2] * v[3];" in text
(True, True)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

from ..core.errors import UsageError, line_col, render_caret
from ..core.ir import Graph, resolve_name
from ..core.ops import CALL, CONST, INFIX, INPUT, POSTFIX
from ..passes.guards import check_conditions, has_selects, marked
from .compile_ifs import js_guards
from .compile_js_lines import Writer, _json

_FUNCTION = re.compile(r"^function (_\w+)\(", re.M)
_CALL = re.compile(r"\b(_\w+)\(")
_NAME = re.compile(r"\b(_\w+)\b")
#: The runtime's helpers every program uses (errors, inputs, checks).
_ALWAYS = ("_T", "_size", "_tensor", "_bindex")


def _runtime() -> dict[str, str]:
    """Each helper of ``js_runtime.js`` (and ``js_images.js``, ``js_module.js``) by name: its
    source."""
    text = "".join(
        resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
        for name in ("js_runtime.js", "js_images.js", "js_module.js")
    )
    found = {}
    for m in _FUNCTION.finditer(text):
        end = text.index("\n}\n", m.start()) + 3
        found[m[1]] = text[m.start() : end]
    return found


def _with_callees(names: set[str], helpers: dict[str, str]) -> list[str]:
    """``names`` and every helper their source calls, in the runtime's order."""
    found, todo = set(names), list(names)
    while todo:
        for callee in _NAME.findall(helpers[todo.pop()]):
            if callee in helpers and callee not in found:
                found.add(callee)
                todo.append(callee)
    return [n for n in helpers if n in found]


def _keys(graph: Graph) -> list[str]:
    """Each node's key: its name, else its display name, with `` #ID`` after a taken one."""
    keys: dict[int, str] = {}
    for name, node in graph.named_nodes().items():
        keys.setdefault(node, name)
    taken = set(keys.values())
    out = []
    for i in range(len(graph.ops)):
        key = keys.get(i)
        if key is None:
            key = graph.display_name(i)
            key = key if key not in taken else f"{key} #{i}"
        taken.add(key)
        out.append(key)
    return out


def _node_records(graph: Graph, keys: list[str]) -> list[dict]:
    """What an error at each node says: its place, caret and the op's facts."""
    from ..core.groups import called_at

    name = graph.source.filename
    records = []
    for i, op in enumerate(graph.ops):
        span = graph.span(i)
        line, col = line_col(graph.source.text, span.start)
        record = {
            "id": i,
            "key": keys[i],
            "name": graph.display_name(i),
            "op": op.name,
            "where": f"{name}:{line}:{col}",
            "caret": render_caret(graph.source.text, span),
            "text": graph.text(i),
        }
        if op is INPUT:
            record["input"] = graph.labels[i]
        if op.arity:
            style = {CALL: "call", INFIX: "infix", POSTFIX: "postfix"}.get(op.style, "prefix")
            position = [graph.args[i][k] for k in op.positions]
            record.update(
                args=list(graph.args[i]),
                symbol=op.symbol,
                style=style,
                domain=op.domain,
                elementwise=op.elementwise and op.py is not None,
                position=position[0] if position else None,
                called=called_at(graph, i),
            )
        records.append(record)
    return records


def js_module(
    graph: Graph,
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    bindings: Mapping | None = None,
    name: str = "",
) -> str:
    """The script's text (see the module's docstring) for the inputs' shapes in ``bindings``
    (else the defaults); ``of``: the value differentiated (default: the output); ``wrt``:
    the inputs whose gradients ``grad`` gives (default: every one)."""
    from ..core.autodiff import reverse
    from ..core.ir_control import refuse
    from ..data.bindings import check_bindings
    from ..passes.derivatives import wrt_inputs
    from ..passes.grad_graph import (
        NotANumber,
        _copy,
        _require_number,
        _wrapper,
        input_shapes,
    )
    from ..passes.recorder import Recorder

    refuse(graph, "--target js", loops=True)
    graph = marked(graph)  # if/else: each branch computed only where it is taken
    out = graph.output if of is None else resolve_name(graph, of)
    wrt = wrt_inputs(graph, wrt)
    for w in wrt:
        if w not in graph.inputs:
            raise UsageError(f"'{w}' is not an input: the compiled gradients are the inputs'")
    shapes = input_shapes(graph, check_bindings(graph, bindings))
    b = _copy(graph, shapes)
    n = len(graph.ops)
    for i, op in enumerate(graph.ops):
        if op.arity and op.js is None:
            raise graph.error(
                UsageError,
                f"--target js does not take {op.symbol} yet (the op table gives it no JS rule)",
                i,
                hints=["compile it with --target numpy or onnx"],
            )
    no_gradient = None
    adjoints: list = [None] * n
    partials: dict[int, list] = {}  # each op's local partials (numbers only), for the page
    watched: dict[int, int] = {}  # an adjoint's node -> the node that passed it back
    try:
        _require_number(graph, b, out)
    except NotANumber as e:
        no_gradient = e.render()
    else:
        from ..core.walks import ancestors, depends_on_input

        reach, depends = ancestors(graph, out), depends_on_input(graph)

        def summed(i, a, total, g) -> None:
            if total.__class__ is int and total >= n:
                watched.setdefault(total, i)

        adjoints = reverse(
            graph,
            list(range(n)),
            Recorder(b),
            out,
            1.0,
            [d and r for d, r in zip(depends, reach)],
            checked=True,
            on_sum=summed,
            wrap=_wrapper(graph, b, out),
        )
        if not has_selects(graph):
            partials = _partials(graph, b, reach)
    node_shapes = b.shapes or []  # kept: the builder was given the inputs' shapes
    check_conditions(graph, lambda c: node_shapes[c])  # a tensor: refused as eval does
    writer = Writer(b.graph, node_shapes)
    scalar = [not s for s in node_shapes]
    checks = {j: _check(j, scalar[j], f"_fail(v, {j})") for j in range(n)}
    guards, laid = js_guards(graph, b.graph, adjoints)
    forward = writer.lines([j for j in laid if j < n], checks, range(n), guards)
    backward = writer.lines(
        [j for j in laid if j >= n],
        {j: _check(j, scalar[j], f"_slope(v, {i}, {j})") for j, i in watched.items()},
        {a for a in adjoints if a.__class__ is int},  # an adjoint that is one
        guards,
    )
    keys = _keys(graph)
    parts = {
        "records": _node_records(graph, keys),
        "shapes": {w: list(shapes[w]) for w in graph.inputs},
        "defaults": {
            w: value
            if isinstance(value, float)
            else {"shape": list(value.shape), "data": [float(x) for x in value.ravel()]}
            for w, value in graph.defaults.items()
        },
        "adjoints": [_adjoint(a, n) for a in adjoints],
        "partials": {str(i): [_adjoint(p, n) for p in ps] for i, ps in partials.items()},
        "wrt": wrt,
        "output": out,
        "noGradient": no_gradient,
        "name": name,
    }
    return _assemble(writer, forward, backward, parts)


def _partials(graph: Graph, b, reach: list[bool]) -> dict[int, list]:
    """Each operation's local partials (∂node/∂argument, by argument; None for a constant or
    an argument without one), made in the derivative program ``b`` by the op table's rules
    with an adjoint of 1: for the operations of numbers the output reads, which a page
    labels its edges with."""
    from ..core.autodiff import pullback
    from ..passes.recorder import Recorder

    shapes, ops, args = b.shapes or [], graph.ops, graph.args
    ids = list(range(len(ops)))
    needs = [op is not CONST for op in ops]
    found: dict[int, list] = {}
    e = Recorder(b)
    for i, op in enumerate(ops):
        if not (op.arity and reach[i] and op.differentiable) or shapes[i]:
            continue
        if any(shapes[a] for a in args[i]):
            continue
        parts = pullback(e, graph, ids, i, 1.0, needs)
        found[i] = [
            float(b.graph.consts[p]) if p.__class__ is int and b.graph.ops[p] is CONST else p
            for p in parts
        ]
    return found


def _adjoint(a, n: int):
    """How the module finds a node's adjoint: a node's id, a number, or null (none: 0)."""
    if a is None:
        return None
    if a.__class__ is int:
        return {"node": a}
    return float(a)


def _check(j: int, scalar: bool, fail: str) -> str:
    """The line that stops at node ``j`` when its value is not finite."""
    test = f"v[{j}] - v[{j}] !== 0" if scalar else f"!_finite(v[{j}])"
    return f"  if ({test}) {fail};"


def _assemble(writer: Writer, forward: list[str], backward: list[str], parts: dict) -> str:
    helpers = _runtime()
    called = set(writer.helpers) | set(_ALWAYS)
    for line in forward + backward:
        called.update(h for h in _CALL.findall(line) if h in helpers)
    called.update(h for h in helpers if h.startswith("_m_"))  # the module's own
    sources = [helpers[h] for h in _with_callees(called, helpers)]
    data = {k: v for k, v in parts.items()}
    return "\n".join(
        [
            "// Written by cgraph compile --target js: forward(inputs) and grad(inputs) of one",
            "// program; runs in Node and in a browser, with no library (see the object at the end).",
            "(function (root) {",
            '"use strict";',
            "",
            *sources,
            # parsed, not a literal: a key "__proto__" (an input's name) stays a key
            f"const _P = JSON.parse({_json(_json(data))});",
            *writer.constants,
            "",
            "function _forward(v) {",
            *forward,
            "}",
            "",
            "function _backward(v) {",
            *backward,
            "}",
            "",
            "const program = _m_program(_P, _forward, _backward);",
            'if (typeof module === "object" && module !== null && module.exports) {',
            "  module.exports = program;",
            "} else {",
            "  root.cgraphProgram = program;",
            "}",
            '})(typeof globalThis !== "undefined" ? globalThis : this);',
            "",
        ]
    )
