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
>>> for e in w["events"][3:]:
...     print(e["caption"])
Start at the output: ḡ = 1   (a bar: the gradient over every path; ∂t/∂x: one op's local partial)
t̅1̅ += ḡ · ∂g/∂t1 = 1 · (-3) = -3
z̄ += ḡ · ∂g/∂z = 1 · 4 = 4
x̄ += t̅1̅ · ∂t1/∂x = (-3) · 1 = -3
ȳ += t̅1̅ · ∂t1/∂y = (-3) · 1 = -3
Gradients: x̄ = -3, ȳ = -3, z̄ = 4
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.arrays import np
from ..core.interpret import commutative
from ..core.ir import Graph
from ..core.names import node_names
from ..core.numfmt import (
    format_number,
    format_value,
    is_tensor,
    nested,
    shape_text,
)
from ..core.ops import CONST, INPUT
from ..core.walks import ancestors
from ..render.layout import layout_source, place
from ..render.notation import KEY, adjoint
from ..render.signs import mark, sign

#: A tensor with at most this many elements is written in full inside its node.
IN_NODE = 6


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
            "grad": _grad_text(adjoints[i], precision) if has_grad else None,  # type: ignore[index]
            "grad_full": _full(adjoints[i], precision) if has_grad else None,  # type: ignore[index]
            # the one sign rule of the drawings too: 0 (untinted) for entries of both signs
            "sign": sign(adjoints[i]) if has_grad else 0,  # type: ignore[index]
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
    Unless ``force``, more than :data:`cgraph_cli.render.layout.MAX_NODES` nodes in the graph that ran
    (a loop's steps count) is a :class:`UsageError`, before any of the page is made."""
    from ..render.prose import scalar_lines, tensor_lines
    from ..run.program import differentiated
    from .explain import explain

    g, values, adjoints, out = differentiated(graph, bindings, of)
    if not force:
        from ..render.layout import diagram_size

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

    o = names[out]
    nodes, edges = figure(g, values, adjoints, out, precision)
    shown = list(nodes)  # what leads to the output, in order
    into = {(int(e["to"][1:]), e["arg"]): k for k, e in enumerate(edges)}
    for node in nodes.values():
        node.update(formula=None, locals=[], chain=[], adjoint=adjoint(node["name"]))

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
            "caption": f"Start at the output: {adjoint(o)} = 1   ({KEY})",
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
    within = _within(g, shown)
    shares: dict[int, dict[int, Any]] = {}  # group -> argument -> what its vjp passes back
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
                caption = f"{adjoint(names[a])} += {part['rule']} = {full(part['value'])}"
                term = f"via {names[i]}: {part['rule']}"
                edge["local"] = part["partial"]
            else:
                local = short(part["local_value"])
                product = f"{par(adjoints[i])} · {par(part['local_value'])}"
                caption = (
                    f"{adjoint(names[a])} += {adjoint(names[i])} · {part['partial']} = "
                    f"{product} = {short(part['value'])}"
                )
                term = f"{adjoint(names[i])} · {part['partial']} = {product}"
                edge["local"] = f"{part['partial']} = {local}"
            if tensors or part["local_value"] is None:
                nodes[i]["locals"].append(f"{adjoint(names[a])} += {part['rule']}")
            else:
                formula = part["local"] if part["local"] not in (None, local) else None
                nodes[i]["locals"].append(
                    part["partial"] + (f" = {formula}" if formula else "") + f" = {local}"
                )
            terms.setdefault(a, []).append(term)
            for k_ in within[i] - within[a]:  # the edge leaves these calls: their vjp's share
                share = shares.setdefault(k_, {})
                share[a] = part["value"] if a not in share else share[a] + part["value"]
            total = adjoints[a] if done else sums[a]
            if done and readers[a] > 1:
                caption += (
                    f"; all {readers[a]} paths in: {adjoint(names[a])} = {short(adjoints[a])}"
                )
            events.append(
                {
                    "phase": "backward",
                    "caption": caption,
                    "grads": {f"n{a}": {"text": _grad_text(total, precision), "complete": done}},
                    "active": [f"n{a}"],
                    "edges": [edge["id"]],
                }
            )
    for a, ts in terms.items():
        nodes[a]["chain"] = ts
    finals = ", ".join(
        f"{adjoint(n)} = {short(v)}" for n, v in data["gradients"].items() if g.inputs[n] in nodes
    )
    events.append(
        {
            "phase": "done",
            "caption": f"Gradients: {finals}" if finals else f"{o} has no inputs to differentiate",
            "active": [],
            "edges": [],
        }
    )
    groups = _page_groups(g, shown, within, names, values, adjoints, shares, precision)
    for i in shown:
        nodes[i]["group"] = _innermost(g, within[i])
    return {
        "output": o,
        "value": short(values[out]),
        "groups": groups,
        "tensors": tensors,
        "notes": list(getattr(g.control, "notes", ()) or ()),
        "source": g.source.text,
        "filename": g.source.filename,
        "nodes": [nodes[i] for i in shown],
        "edges": edges,
        "events": events,
    }


def _within(g: Graph, shown: Sequence[int]) -> dict[int, frozenset[int]]:
    """The groups (calls, loop steps) each shown node lies in, nested ones included."""
    if not g.groups:
        return {i: frozenset() for i in shown}
    from ..core.groups import group_of

    inner = group_of(g)
    out: dict[int, frozenset[int]] = {}
    for i in shown:
        ks, k = [], inner[i]
        while k >= 0:
            ks.append(k)
            k = g.groups[k].parent
        out[i] = frozenset(ks)
    return out


def _innermost(g: Graph, ks: frozenset[int]) -> str | None:
    """The page's id of the innermost of groups ``ks`` (the one no other of them is inside)."""
    parents = {g.groups[k].parent for k in ks}
    inner = [k for k in ks if k not in parents]
    return f"c{inner[0]}" if inner else None


def _page_groups(g, shown, within, names, values, adjoints, shares, precision) -> list[dict]:
    """The page's groups: each call of a function and each loop step with a shown node, with
    what its box shows folded (the value and gradient of what it returns) and the captions of
    its two steps folded (its value; its vector-Jacobian product, what it passes back to each
    argument)."""
    members: dict[int, list[str]] = {}
    for i in shown:
        for k in within[i]:
            members.setdefault(k, []).append(f"n{i}")
    groups = []
    for k in sorted(members):
        grp = g.groups[k]
        o = grp.output
        title = f"step {grp.step} of {grp.label}" if grp.kind == "step" else grp.label
        share = shares.get(k, {})
        order = [a for a in grp.args if a in share] + sorted(set(share) - set(grp.args))
        passed = ", ".join(
            f"{adjoint(names[a])} += {_grad_text(share[a], precision)}"
            for a in dict.fromkeys(order)
        )
        what = {
            "call": f"{names[o]} = {title}",
            "module": f"the module {title}: {names[o]}",
        }.get(grp.kind, f"{title}: {names[o]}")
        groups.append(
            {
                "id": f"c{k}",
                "key": grp.key,
                "label": title,
                "kind": grp.kind,
                "parent": f"c{grp.parent}" if grp.parent >= 0 else None,
                "output": f"n{o}",
                "nodes": members[k],
                "value": _short(values[o], precision),
                "grad": _grad_text(adjoints[o], precision),
                "adjoint": adjoint(names[o]),
                "sign": sign(adjoints[o]),
                "forward": f"{what} = {_short(values[o], precision)}",
                "backward": f"Back through {title}, its vector-Jacobian product: {passed}"
                if passed
                else f"Back through {title}: nothing it reads has a gradient",
            }
        )
    return groups


def _grad_text(x, precision: int | None) -> str:
    """A gradient inside its node: as :func:`_short`; a tensor shown by its shape alone says
    the signs of its entries (:func:`cgraph_cli.render.signs.mark`: ``+``, ``−``, or ``±``
    for both signs, whose colour is neutral)."""
    text = _short(x, precision)
    if is_tensor(x) and text.endswith("tensor") and x.size:
        signs = mark(x)
        return f"{text}, all 0" if signs == "0" else f"{signs} {text}"
    return text


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
