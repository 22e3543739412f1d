"""Both passes as a sequence of events, with a layout: the data of the interactive page
(``cgraph render P -o P.html``, drawn by :mod:`cgraph_cli.render.page`).

Each event says what a reader sees change: a value appearing (the forward pass, node by node),
the output's gradient seeded with 1, then one event per edge of the backward pass: the
gradient flowing back along it, multiplied by the edge's local derivative and added to the
node it leads to. A node's gradient is complete at the event of its last edge (reverse
topological order reaches every reader of a node before the node), and that event sums the
paths when there are several. The layout comes from Graphviz (``-Tplain``); the page draws
its own SVG from it, so every node, edge and label has an id the script can address.

>>> from cgraph_cli import parse
>>> w = steps(parse("g = (x + y) * z"), {"x": 1, "y": 3, "z": -3})
>>> [e["caption"] for e in w["events"]]  # doctest: +NORMALIZE_WHITESPACE
['Inputs: x = 1, y = 3, z = -3', 't1 = x + y = 1 + 3 = 4', 'g = t1 * z = 4 * (-3) = -12',
 'Start at the output: ∂g/∂g = 1', '∂g/∂t1 += ∂g/∂g · ∂g/∂t1 = 1 · (-3) = -3',
 '∂g/∂z += ∂g/∂g · ∂g/∂z = 1 · 4 = 4', '∂g/∂x += ∂g/∂t1 · ∂t1/∂x = (-3) · 1 = -3',
 '∂g/∂y += ∂g/∂t1 · ∂t1/∂y = (-3) · 1 = -3', 'Gradients: ∂g/∂x = -3, ∂g/∂y = -3, ∂g/∂z = 4']
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.arrays import np
from ..core.interpret import commutative
from ..core.ir import Graph
from ..core.names import node_names
from ..core.numfmt import format_number, format_value, is_tensor, nested, shape_text
from ..core.ops import CONST, INPUT
from ..core.walks import ancestors

#: A tensor with at most this many elements is written in full inside its node.
IN_NODE = 6
CHAR = 8.2  # the width of a character at the page's 14 px font, generously (digits: ~7.8)
LINE = 20  # the height of a line of text in a node
PAD = 12


def _short(x, precision: int | None) -> str:
    """A value inside a node: a number, a small tensor in full, else its shape."""
    if not is_tensor(x):
        return format_number(float(x), precision)
    if x.size <= IN_NODE and x.ndim <= 2:
        return nested(x, precision or 4)
    return f"{shape_text(x)} tensor"


def figure(
    graph: Graph,
    values: Sequence | None,
    adjoints: Sequence | None,
    out: int,
    precision: int | None = 4,
) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """The nodes that lead to ``out`` and their edges, as text to draw: each node's kind, name,
    glyph, value and gradient (``None`` where not given), the sign of its gradient; each edge's
    ends and, for an op whose operand order matters, the operand's position (``port``).
    Shared by the interactive page, TikZ and Mermaid.

    >>> from cgraph_cli import parse
    >>> nodes, edges = figure(parse("d = a - b"), None, None, 2)
    >>> [(n["name"], n["value"]) for n in nodes.values()], [e["port"] for e in edges]
    ([('a', None), ('b', None), ('d', None)], [1, 2])
    """
    names = node_names(graph)
    reach = ancestors(graph, out)
    shown = [i for i in range(out + 1) if reach[i]]
    tensors = values is not None and any(is_tensor(values[i]) for i in shown)
    if adjoints is not None and values is None:
        raise ValueError("gradients without values")
    nodes: dict[int, dict[str, Any]] = {}
    for i in shown:
        op = graph.ops[i]
        kind = "input" if op is INPUT else "const" if op is CONST else "op"
        has_grad = adjoints is not None and kind != "const"
        nodes[i] = {
            "id": f"n{i}",
            "name": names[i],
            "kind": kind,
            "op": op.name,
            "glyph": "" if kind != "op" else op.glyph,
            "named": bool(graph.labels[i]) or i == out or kind != "op",
            "output": i == out,
            "value": None if values is None else _short(values[i], precision),
            "value_full": None if values is None else _full(values[i], precision),
            "shape": [] if values is None else list(np.shape(values[i])),
            "grad": _short(adjoints[i], precision) if has_grad else None,  # type: ignore[index]
            "grad_full": _full(adjoints[i], precision) if has_grad else None,  # type: ignore[index]
            "sign": _sign(adjoints[i]) if has_grad else 0,  # type: ignore[index]
        }
    edges: list[dict[str, Any]] = []
    for i in shown:
        ordered = len(graph.args[i]) > 1 and not commutative(graph.ops[i])
        for k, a in enumerate(graph.args[i]):
            edges.append(
                {
                    "id": f"e{len(edges)}",
                    "from": f"n{a}",
                    "to": f"n{i}",
                    "arg": k,
                    "port": k + 1 if ordered else None,
                    "shape": shape_text(values[a]) if tensors else None,  # type: ignore[index]
                    "local": None,
                }
            )
    return nodes, edges


def _full(x, precision: int | None) -> str:
    return format_value(x, precision or 4, rows="", shape=True)


def steps(
    graph: Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    precision: int | None = 4,
    force: bool = True,
) -> dict[str, Any]:
    """The page's data without a layout: nodes, edges and events (see the module's text).
    Unless ``force``, more than :data:`cgraph_cli.app.diagrams.MAX_NODES` nodes in the graph that ran
    (a loop's steps count) is a :class:`UsageError`, before any of the page is made."""
    from ..render.prose import scalar_lines, tensor_lines
    from .api import grad
    from .explain import explain

    result = grad(graph, bindings, of=of)
    g, values, adjoints, out = result.graph, result.values, result.adjoints, result.output
    if not force:
        from .diagrams import diagram_size

        diagram_size(g, out, what="the page", narrow="")  # nothing narrows a page
    data = explain(g, values, adjoints, out)
    tensors = data["tensors"]
    names = node_names(g)

    def short(x) -> str:
        return _short(x, precision)

    def full(x) -> str:
        return _full(x, precision)

    def par(x) -> str:
        text = format_number(float(x), precision)
        return f"({text})" if text.startswith("-") else text

    def d(num: str, den: str) -> str:
        return f"∂{num}/∂{den}"

    o = names[out]
    nodes, edges = figure(g, values, adjoints, out, precision)
    shown = list(nodes)  # what leads to the output, in order
    into = {(int(e["to"][1:]), e["arg"]): k for k, e in enumerate(edges)}
    for node in nodes.values():
        node.update(formula=None, locals=[], chain=[])

    events: list[dict[str, Any]] = []
    inputs = [i for i in shown if g.ops[i] is INPUT]
    consts = [i for i in shown if g.ops[i] is CONST]
    bound = ", ".join(f"{names[i]} = {short(values[i])}" for i in inputs)
    events.append(
        {
            "phase": "forward",
            "caption": f"Inputs: {bound}"
            if inputs
            else "No inputs: the program's values are constants",
            "values": [f"n{i}" for i in inputs + consts],
            "active": [f"n{i}" for i in inputs],
            "edges": [],
        }
    )
    lines = tensor_lines(data, precision)[0] if tensors else scalar_lines(data, precision)[0]
    by_name = {s["node"]: s for s in data["forward"]}
    for line, i in zip(lines, [i for i in shown if g.ops[i].arity]):
        nodes[i]["formula"] = f"{names[i]} = {by_name[names[i]]['formula']}"
        events.append(
            {
                "phase": "forward",
                "caption": line,
                "values": [f"n{i}"],
                "active": [f"n{i}"],
                "edges": [edges[into[(i, k)]]["id"] for k in range(len(g.args[i]))],
            }
        )

    # The backward pass, edge by edge.
    events.append(
        {
            "phase": "backward",
            "caption": f"Start at the output: {d(o, o)} = 1",
            "grads": {f"n{out}": {"text": "1", "complete": True}},
            "active": [f"n{out}"],
            "edges": [],
        }
    )
    readers: dict[int, int] = {}  # node -> edges out of it (x * x: two)
    for i in shown:
        for a in g.args[i]:
            if g.ops[a] is not CONST:
                readers[a] = readers.get(a, 0) + 1
    through = {s["node"]: s for s in data["backward"]["through"]}
    sums: dict[int, Any] = {}
    seen: dict[int, int] = {}
    terms: dict[int, list[str]] = {}
    for i in reversed(shown):
        step = through.get(names[i])
        if step is None:
            continue
        wanted = [k for k, a in enumerate(g.args[i]) if g.ops[a] is not CONST]
        for k, part in zip(wanted, step["partials"]):
            a = g.args[i][k]
            edge = edges[into[(i, k)]]
            sums[a] = part["value"] if a not in sums else sums[a] + part["value"]
            seen[a] = seen.get(a, 0) + 1
            done = seen[a] == readers[a]
            if tensors or part["local_value"] is None:
                local = part["rule"]
                caption = f"{d(o, names[a])} += {part['rule']} = {full(part['value'])}"
                term = f"via {names[i]}: {part['rule']}"
                edge["local"] = f"{d(names[i], names[a])}"
            else:
                local = short(part["local_value"])
                product = f"{par(adjoints[i])} · {par(part['local_value'])}"
                caption = (
                    f"{d(o, names[a])} += {d(o, names[i])} · {d(names[i], names[a])} = "
                    f"{product} = {short(part['value'])}"
                )
                term = f"{d(o, names[i])} · {d(names[i], names[a])} = {product}"
                edge["local"] = f"{d(names[i], names[a])} = {local}"
            if tensors or part["local_value"] is None:
                nodes[i]["locals"].append(f"{d(o, names[a])} = {part['rule']}")
            else:
                formula = part["local"] if part["local"] not in (None, local) else None
                nodes[i]["locals"].append(
                    d(names[i], names[a]) + (f" = {formula}" if formula else "") + f" = {local}"
                )
            terms.setdefault(a, []).append(term)
            total = adjoints[a] if done else sums[a]
            if done and readers[a] > 1:
                caption += f"; all {readers[a]} paths in: {d(o, names[a])} = {short(adjoints[a])}"
            events.append(
                {
                    "phase": "backward",
                    "caption": caption,
                    "grads": {f"n{a}": {"text": short(total), "complete": done}},
                    "active": [f"n{a}"],
                    "edges": [edge["id"]],
                }
            )
    for a, ts in terms.items():
        nodes[a]["chain"] = ts
    finals = ", ".join(
        f"{d(o, n)} = {short(v)}" for n, v in data["gradients"].items() if g.inputs[n] in nodes
    )
    events.append(
        {
            "phase": "done",
            "caption": f"Gradients: {finals}" if finals else f"{o} has no inputs to differentiate",
            "active": [],
            "edges": [],
        }
    )
    return {
        "output": o,
        "value": short(values[out]),
        "tensors": tensors,
        "notes": list(getattr(g.control, "notes", ()) or ()),
        "source": g.source.text,
        "filename": g.source.filename,
        "nodes": [nodes[i] for i in shown],
        "edges": edges,
        "events": events,
    }


def _sign(x) -> int:
    """The sign a gradient is tinted by: the sign of a number, of a tensor's largest entry."""
    if is_tensor(x):
        x = x.ravel()[np.argmax(abs(x))] if x.size else 0.0
    x = float(x)
    return 0 if x == 0 or math.isnan(x) else (1 if x > 0 else -1)


# --- the layout -------------------------------------------------------------------------------
def node_lines(node: dict[str, Any], output: str, gap: str = "  ") -> list[str]:
    """The lines of text a node holds when everything is known (which sets its size); ``gap``
    between an op's glyph and its name."""
    head = f"{node['glyph']}{gap}{node['name']}" if node["kind"] == "op" else node["name"]
    lines = [head]
    if node["value"] is not None and not (
        node["kind"] == "const" and node["value"] == node["name"]
    ):
        lines.append(f"= {node['value']}")
    if node["grad"] is not None:
        lines.append(f"∂{output}/∂{node['name']} = {node['grad']}")
    return lines


#: Pages of more nodes than this are laid out with fewer of dot's passes (see layout_source).
FAST_PAGE_LAYOUT_ABOVE = 60


def layout_source(
    page: dict[str, Any],
    rankdir: str = "LR",
    char: float = CHAR,
    line: float = LINE,
    pad: float = PAD,
) -> str:
    """The DOT text Graphviz lays the page out from: nodes of the size their text needs (at
    ``char`` points a character and ``line`` points a line, ``pad`` around), edges with room
    for the label they will carry."""
    lines = [
        "digraph page {",
        f'  graph [rankdir={rankdir}, nodesep=0.3, ranksep=0.45, fontname="Helvetica"];',
        '  node [shape=box, fixedsize=true, label="", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=12];',
    ]
    if len(page["nodes"]) > FAST_PAGE_LAYOUT_ABOVE:
        # Fewer crossing-minimisation and ranking passes: labelled edges that span many
        # ranks (an input read at every step of a loop) take dot minutes otherwise.
        lines.append("  mclimit=0.1; nslimit=1;")
    for node in page["nodes"]:
        text = node_lines(node, page["output"])
        width = max(len(t) for t in text) * char + 2 * pad
        height = len(text) * line + pad
        lines.append(f"  {node['id']} [width={width / 72:.3f}, height={height / 72:.3f}];")
    for edge in page["edges"]:
        label = max([edge.get("local") or "", edge.get("shape") or ""], key=len)
        attrs = f' [label="{_dot_escape(label)}"]' if label else ""
        lines.append(f"  {edge['from']} -> {edge['to']}{attrs};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def place(page: dict[str, Any], plain: str) -> dict[str, Any]:
    """Add Graphviz's positions (``-Tplain`` output) to the page: each node's box and each
    edge's path in pixels, y downwards, with a margin.

    >>> p = {"nodes": [{"id": "n0"}, {"id": "n1"}], "edges": [{"from": "n0", "to": "n1"}]}
    >>> out = place(p, '''graph 1 2 1
    ... node n0 0.5 0.5 1 0.5 "" solid box black lightgrey
    ... node n1 1.5 0.5 1 0.5 "" solid box black lightgrey
    ... edge n0 n1 4 1 0.5 1.1 0.5 1.2 0.5 1.3 0.5 solid black
    ... stop''')
    >>> out["width"], out["height"], out["nodes"][0]["box"], out["edges"][0]["path"]
    (176, 104, [16, 34, 72, 36], 'M88 52C95.2 52 102.4 52 109.6 52')
    """
    margin, pt = 16, 72.0
    height = 0.0
    boxes: dict[str, list[float]] = {}
    paths: list[tuple[str, str, list[float], list[float] | None]] = []
    for line in plain.splitlines():
        fields = shlex.split(line)
        if not fields:
            continue
        if fields[0] == "graph":
            width, height = float(fields[2]), float(fields[3])
        elif fields[0] == "node":
            x, y, w, h = map(float, fields[2:6])
            boxes[fields[1]] = [x - w / 2, y + h / 2, w, h]
        elif fields[0] == "edge":
            n = int(fields[3])
            coords = list(map(float, fields[4 : 4 + 2 * n]))
            rest = fields[4 + 2 * n :]
            label = [float(rest[1]), float(rest[2])] if len(rest) > 3 else None
            paths.append((fields[1], fields[2], coords, label))

    def px(x: float) -> float:
        return round(x * pt + margin, 1)

    def py(y: float) -> float:
        return round((height - y) * pt + margin, 1)

    for node in page["nodes"]:
        x, top, w, h = boxes[node["id"]]
        node["box"] = [_n(px(x)), _n(py(top)), _n(round(w * pt, 1)), _n(round(h * pt, 1))]
    # Graphviz lists the edges in the order they were declared: a pair drawn twice (x * x)
    # takes its paths in turn.
    queue: dict[tuple[str, str], list[tuple[list[float], list[float] | None]]] = {}
    for a, b, coords, label in paths:
        queue.setdefault((a, b), []).append((coords, label))
    for edge in page["edges"]:
        coords, label = queue[(edge["from"], edge["to"])].pop(0)
        points = [(px(coords[k]), py(coords[k + 1])) for k in range(0, len(coords), 2)]
        d = f"M{_n(points[0][0])} {_n(points[0][1])}"
        for k in range(1, len(points) - 2, 3):
            d += "C" + " ".join(f"{_n(x)} {_n(y)}" for x, y in points[k : k + 3])
        edge["path"] = d
        edge["points"] = [[_n(x), _n(y)] for x, y in points]
        edge["label_at"] = [_n(px(label[0])), _n(py(label[1]))] if label else _middle(points)
        (x1, y1), (x2, y2) = points[-2], points[-1]
        run = math.hypot(x2 - x1, y2 - y1) or 1.0
        back = 16 / run  # the operand's badge sits on the edge, just before the arrowhead
        edge["port_at"] = [_n(round(x2 - (x2 - x1) * back, 1)), _n(round(y2 - (y2 - y1) * back, 1))]
    page["width"] = _n(round(width * pt + 2 * margin))
    page["height"] = _n(round(height * pt + 2 * margin))
    return page


def _middle(points: Sequence[tuple[float, float]]) -> list[float]:
    """The point halfway along the middle Bézier segment of a path."""
    segments = (len(points) - 1) // 3
    k = 3 * (segments // 2)
    p0, p1, p2, p3 = points[k : k + 4]
    x = (p0[0] + 3 * p1[0] + 3 * p2[0] + p3[0]) / 8
    y = (p0[1] + 3 * p1[1] + 3 * p2[1] + p3[1]) / 8
    return [_n(round(x, 1)), _n(round(y, 1))]


def _n(x: float) -> float:
    """A coordinate as it prints shortest: 16 not 16.0."""
    return int(x) if float(x).is_integer() else x


def walkthrough(
    graph: Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    precision: int | None = 4,
    rankdir: str = "LR",
    renderer: str = "auto",
    force: bool = True,
) -> dict[str, Any]:
    """The page's data with its layout, from Graphviz's dot or graphviz-pure (``force``: as
    for :func:`steps`)."""
    from ..render.image import choose, render

    page = steps(graph, bindings, of=of, precision=precision, force=force)
    plain = render(layout_source(page, rankdir), "plain", choose("plain", renderer))
    return place(page, plain.decode())
