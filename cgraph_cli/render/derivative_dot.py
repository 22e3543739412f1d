"""The derivative program as a diagram (``render --derivative``): the forward graph exactly as
:func:`cgraph_cli.render.dot.diagram` draws it, and under it, in a band of its own, the
backward pass as the graph :mod:`cgraph_cli.passes.grad_graph` builds.

Each derivative statement (``dg_dx``) is a node in the same column as the forward node it is
the derivative with respect to, joined to it by a dashed line; the other derivative nodes
carry the colour of the band, and their edges run right to left, the way the backward pass
goes. A forward value the derivatives read appears in the band as a dashed copy of its name,
so that no edge crosses between the two bands but those links.

Pure: returns a ``graphviz.Digraph``; node ids are ``n<id>`` (forward, as in the diagram),
``d<id>`` (derivative nodes), ``s<k>`` (a statement that names an earlier value) and ``r<id>``
(a forward value read), written in order, so the same input gives the same bytes.

>>> from cgraph_cli import parse
>>> from cgraph_cli.app.diagrams import derivative_view
>>> g = parse("p = x + y; g = p * z")
>>> view, _ = derivative_view(g, {"x": 1, "y": 3, "z": -3})
>>> src = derivative_diagram(g, view).source
>>> "cluster_backward" in src and "dg_dx" in src and "n0 -> s2" in src
True
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.ir import Graph
from ..core.names import node_names
from ..core.numfmt import format_number, is_tensor, shape_text
from ..core.ops import CONST, INPUT
from ..core.walks import ancestors
from .dot import THEMES, DiagramOptions, Theme, _magnitude, _mix, _row, _tensor_html, _tint, diagram


@dataclass(frozen=True)
class DerivativeView:
    """What the band of a derivative diagram draws: the derivative program, its values
    (``None``: the structure only), the forward graph's values and gradients, and for each
    derivative statement ``(name, node of program, forward node it differentiates against)``.
    ``forward`` maps the program's forward nodes (ids below ``first_node``) to the forward
    graph's."""

    program: Graph
    values: Sequence | None
    statements: list[tuple[str, int, int | None]]
    first_node: int
    forward: dict[int, int]
    output: int
    forward_values: Sequence | None = None
    adjoints: Sequence | None = None

    @property
    def nodes(self) -> int:
        """How many nodes the band draws (derivative nodes, statements naming earlier values,
        and copies of the forward values read)."""
        return len(self.program.ops) - self.first_node + len(_aliases(self)) + len(_reads(self))


def derivative_diagram(
    graph: Graph,
    view: DerivativeView,
    options: DiagramOptions | None = None,
    edge_labels: Mapping[tuple[int, int], str] | None = None,
    fold=None,
    band=None,
):
    """The forward diagram of ``graph`` with the derivative program of ``view`` beside it
    (``edge_labels``, ``fold``: as :func:`cgraph_cli.render.dot.diagram` takes them;
    ``band``: the band's folded boxes, a :class:`cgraph_cli.app.folds.BandFold`)."""
    options = options or DiagramOptions()
    show_values = options.values and view.values is not None
    dot = diagram(
        graph,
        view.forward_values if show_values else None,
        view.adjoints if show_values else None,
        options,
        output=view.output,
        edge_labels=edge_labels,
        fold=fold,
    )
    colours = _Band(THEMES[options.theme])
    folded = _Folded(band, fold)
    cluster = _cluster(graph, view, colours, view.values if show_values else None, options, folded)
    # Written before the forward nodes: Graphviz then lays the band under them (written
    # after them, it rises above the forward graph in a left-to-right layout).
    at = next(k for k, line in enumerate(dot.body) if re.match(r"\tng?\d", line))
    dot.body[at:at] = [f"\t{line}" for line in cluster.__iter__(subgraph=True)]
    _links(dot, graph, view, colours, folded)
    return dot


class _Folded:
    """Where a folded band draws each derivative node: in its box (``dg<k>``) or itself."""

    def __init__(self, band, fold) -> None:
        self.boxes = list(band.boxes) if band else []
        self.rep: dict[int, int] = dict(band.rep) if band else {}
        self.hidden: set[int] = set(band.hidden) if band else set()
        self.forward: dict[int, int] = dict(fold.rep) if fold else {}

    def end(self, node: int) -> str:
        k = self.rep.get(node)
        return f"d{node}" if k is None else f"dg{k}"

    def forward_end(self, node: int) -> str:
        b = self.forward.get(node)
        return f"n{node}" if b is None else f"ng{b}"


def _cluster(graph: Graph, view: DerivativeView, band, values, options, folded: _Folded):
    """The band: derivative nodes, statements that name earlier values, forward values read."""
    import graphviz

    theme, p = band.theme, view.program
    fmt = lambda x: format_number(x, options.precision)  # noqa: E731
    scale = _scale(view, values)
    named: dict[int, str] = {}  # derivative node -> the first statement naming it
    for name, node, _ in view.statements:
        if node >= view.first_node:
            named.setdefault(node, name)
    c = graphviz.Digraph(name="cluster_backward")
    c.attr(
        label=f"<{_band_title(graph, view)}>",
        labeljust="l",
        labelloc="t",
        style="rounded,filled",
        fillcolor=band.fill,
        color=band.border,
        fontcolor=theme.muted,
        fontsize="11",
        penwidth="1",
    )
    aliases = _aliases(view)
    order = sorted(
        range(len(view.statements)),
        key=lambda k: (view.statements[k][2] is None, view.statements[k][2] or 0),
    )
    _band_boxes(c, folded, band, values, fmt, scale, options)
    for k in order:  # statements first, as their forward nodes come: the band keeps their order
        name, node, _ = view.statements[k]
        if node in folded.rep:
            continue
        if k in aliases:
            label = _alias_label(name, _at(values, node), fmt, theme, scale)
            c.node(f"s{k}", f"<{label}>", **band.node_attrs(p, node, True))
        else:
            label = _node_label(p, node, name, _at(values, node), fmt, theme, scale)
            c.node(f"d{node}", f"<{label}>", **band.node_attrs(p, node, True))
    names = node_names(graph)
    for f in sorted(_reads(view) - _held_reads(view, folded)):  # forward values read: copies
        c.node(f"r{f}", names[f], **band.read_attrs())
    origins = _origins(graph, view)
    for i in range(view.first_node, len(p.ops)):
        if i not in named and i not in folded.rep and i not in folded.hidden:
            label = _node_label(p, i, None, _at(values, i), fmt, theme, scale)
            attrs = band.node_attrs(p, i, False)
            if i in origins:  # where it came from, on hovering over it in an SVG
                attrs["tooltip"] = f"made by the backward step through {origins[i]}"
            c.node(f"d{i}", f"<{label}>", **attrs)
    _band_edges(c, view, band, aliases, folded)
    return c


def _band_boxes(c, folded: _Folded, band, values, fmt, scale: float, options) -> None:
    """The band's folded boxes: a call's backward code as one box, ``∂ layer(h, W2, b2)``,
    with the gradients the call's inputs receive."""
    theme = band.theme
    for k, box in enumerate(folded.boxes):
        rows = [f'<TR><TD COLSPAN="2"><B>{html.escape(box.label)}</B></TD></TR>']
        for name, node in box.shows:
            value = _at(values, node)
            if value is None:
                rows.append(f'<TR><TD COLSPAN="2">{html.escape(name)}</TD></TR>')
                continue
            tint = lambda g: _tint(g, scale, theme)  # noqa: E731
            if is_tensor(value):
                cell = _tensor_html(value, fmt, tint, options.in_full)
                rows.append(_row(name, cell, theme.muted, html_value=True))
            else:
                rows.append(_row(name, fmt(value), theme.muted, tint(value)))
        attrs = {"shape": "box", "style": "rounded,filled", "fillcolor": band.node_fill}
        attrs.update(color=theme.backward, penwidth="1.6", peripheries="2", tooltip=box.label)
        c.node(f"dg{k}", f"<{_table(rows)}>", **attrs)


def _held_reads(view: DerivativeView, folded: _Folded) -> set[int]:
    """The forward values (their dashed copies) that only one folded box of the band reads:
    drawn inside it, not beside it."""
    if not folded.rep:
        return set()
    p = view.program
    readers: dict[int, set[str]] = {}
    for i in range(view.first_node, len(p.ops)):
        for a in p.args[i]:
            if a < view.first_node:
                readers.setdefault(view.forward[a], set()).add(folded.end(i))
    for k, (_, node, _) in enumerate(view.statements):  # aliases of forward values
        if node < view.first_node and k in _aliases(view):
            readers.setdefault(view.forward[node], set()).add("statement")
    return {f for f, ends in readers.items() if len(ends) == 1 and min(ends).startswith("dg")}


def _origins(graph: Graph, view: DerivativeView) -> dict[int, str]:
    """For each derivative node, the forward statement it was made while differentiating
    (``p = softmax(z)``): the forward node with the same span in the source."""
    names = node_names(graph)
    spans = {(graph.starts[i], graph.ends[i]): i for i in range(len(graph.ops))}
    p = view.program
    out = {}
    for i in range(view.first_node, len(p.ops)):
        f = spans.get((p.starts[i], p.ends[i]))
        if f is not None and graph.ops[f].arity:
            out[i] = f"{names[f]} = {graph.text(f)}"
    return out


def _at(values, i: int):
    return None if values is None else values[i]


class _Band:
    """The colours of the band: the theme's backward colour, faded into the background."""

    def __init__(self, theme: Theme) -> None:
        self.theme = theme
        self.fill = _mix(theme.background, theme.backward, 0.05)
        self.border = _mix(theme.background, theme.backward, 0.35)
        self.node_fill = _mix(theme.background, theme.backward, 0.12)
        self.edge = _mix(theme.background, theme.backward, 0.75)
        self.link = _mix(theme.background, theme.backward, 0.45)

    def node_attrs(self, graph: Graph, i: int, statement: bool) -> dict[str, str]:
        if graph.ops[i] is CONST and not statement:
            return {
                "shape": "box",
                "style": "rounded,filled,dashed",
                "fillcolor": self.fill,
                "color": self.border,
                "fontsize": "11",
            }
        attrs = {"shape": "box", "style": "rounded,filled", "fillcolor": self.node_fill}
        attrs["color"] = self.theme.backward if statement else self.border
        if statement:
            attrs["penwidth"] = "1.6"
        return attrs

    def read_attrs(self) -> dict[str, str]:
        return {
            "shape": "box",
            "style": "rounded,dashed",
            "color": self.theme.muted,
            "fontcolor": self.theme.muted,
            "fontsize": "11",
        }


def _aliases(view: DerivativeView) -> set[int]:
    """The statements that name a value something else holds already (``dg_dp = z``,
    ``dg_dx = dg_dp``): each gets a node of its own."""
    seen: set[int] = set()
    out = set()
    for k, (_, node, _) in enumerate(view.statements):
        if node < view.first_node or node in seen:
            out.add(k)
        seen.add(node)
    return out


def _reads(view: DerivativeView) -> set[int]:
    """The forward nodes (of the forward graph) the derivative nodes and aliases read
    (constants too: a derivative rule's 2 is the program's 2 when it has one)."""
    p = view.program
    out = {
        view.forward[a]
        for i in range(view.first_node, len(p.ops))
        for a in p.args[i]
        if a < view.first_node
    }
    aliases = _aliases(view)
    for k, (_, node, _) in enumerate(view.statements):
        if k in aliases and node < view.first_node and _earlier_name(view, k) is None:
            out.add(view.forward[node])
    return out


def _earlier_name(view: DerivativeView, k: int) -> int | None:
    """The latest earlier derivative statement naming the same node as statement ``k``
    (``dg_dx = dg_dp``), as the program text writes it; None if there is none."""
    node = view.statements[k][1]
    for j in range(k - 1, -1, -1):
        if view.statements[j][1] == node:
            return j
    return None


def _band_edges(c, view: DerivativeView, band: _Band, aliases: set[int], folded) -> None:
    """The data flow inside the band, drawn right to left: each edge is written from reader
    to argument with its arrow turned back, so the layout ranks readers first. An edge into
    or out of a folded box is drawn once; one inside a box, not at all."""
    p = view.program
    attrs = {"color": band.edge, "dir": "back", "arrowsize": "0.6"}
    held = _held_reads(view, folded)
    drawn: set[tuple[str, str]] = set()

    def edge(head: str, tail: str) -> None:
        if head != tail and (head, tail) not in drawn:
            drawn.add((head, tail))
            c.edge(head, tail, **attrs)

    for i in range(view.first_node, len(p.ops)):
        for a in p.args[i]:
            if (a < view.first_node and view.forward[a] in held) or a in folded.hidden:
                continue
            tail = folded.end(a) if a >= view.first_node else f"r{view.forward[a]}"
            edge(folded.end(i), tail)
    for k in sorted(aliases):
        node = view.statements[k][1]
        if node in folded.rep:
            continue
        j = _earlier_name(view, k)
        if j is not None:
            source = f"s{j}" if j in aliases and node not in folded.rep else folded.end(node)
        else:
            source = f"r{view.forward[node]}"
        edge(f"s{k}", source)


def _links(dot, graph: Graph, view: DerivativeView, band: _Band, folded: _Folded) -> None:
    """Each statement joined to the forward node it differentiates against, in its column
    (if the diagram draws that node: not an input the output does not read); a folded box
    of the band, to the box of the call whose backward code it holds."""
    aliases = _aliases(view)
    drawn = ancestors(graph, view.output)
    attrs = {"style": "dashed", "color": band.link, "arrowhead": "none", "penwidth": "1.1"}
    for k, box in enumerate(folded.boxes):
        dot.edge(f"ng{box.under}", f"dg{k}", **attrs)
        dot.body.append(f"\t{{rank=same; ng{box.under}; dg{k}}}\n")
    for k, (_, node, target) in enumerate(view.statements):
        if target is None or not drawn[target] or node in folded.rep:
            continue
        shown = f"s{k}" if k in aliases else f"d{node}"
        forward = folded.forward_end(target)
        dot.edge(forward, shown, **attrs)
        if forward.startswith("n") and not forward.startswith("ng"):  # a box is in a column
            dot.body.append(f"\t{{rank=same; {forward}; {shown}}}\n")


def _scale(view: DerivativeView, values) -> float:
    """The largest derivative drawn, for tinting as the forward diagram's gradients are."""
    if values is None:
        return 0.0
    return max((_magnitude(values[node]) for _, node, _ in view.statements), default=0.0)


def _band_title(graph: Graph, view: DerivativeView) -> str:
    out = graph.display_name(view.output)
    who = html.escape(out if out.isidentifier() else "out")
    return (
        f"<B>backward pass</B>: the derivative program; "
        f"each d{who}_d<I>name</I> holds <O><I>name</I></O>, the gradient over every path"
    )


def _node_label(p: Graph, i: int, name, value, fmt, theme: Theme, scale: float) -> str:
    e = html.escape
    op = p.ops[i]
    if op is CONST and name is None:
        text = fmt(value) if value is not None and not is_tensor(value) else None
        if text is None:
            from ..core.names import const_name

            text = const_name(p.consts[i])
        return _table([f'<TR><TD COLSPAN="2">{e(text)}</TD></TR>'])
    glyph = op.glyph if op is not INPUT else ""
    size = 17 if len(glyph) == 1 else 13
    head = f'<FONT POINT-SIZE="{size}">{e(glyph)}</FONT>' if glyph else ""
    if name is not None:
        head += f"  <B>{e(name)}</B>" if head else f"<B>{e(name)}</B>"
    rows = [f'<TR><TD COLSPAN="2">{head}</TD></TR>']
    rows += _value_rows(value, name is not None, fmt, theme, scale)
    return _table(rows)


def _alias_label(name: str, value, fmt, theme: Theme, scale: float) -> str:
    head = f'<FONT POINT-SIZE="13">=</FONT>  <B>{html.escape(name)}</B>'
    return _table(
        [f'<TR><TD COLSPAN="2">{head}</TD></TR>', *_value_rows(value, True, fmt, theme, scale)]
    )


def _value_rows(value, statement: bool, fmt, theme: Theme, scale: float) -> list[str]:
    if value is None:
        return []
    tint = (lambda g: _tint(g, scale, theme)) if statement else None
    if is_tensor(value) and not statement:  # a step on the way: its shape says enough
        return [_row("shape", shape_text(value), theme.muted)]
    if is_tensor(value):
        return [_row("value", _tensor_html(value, fmt, tint), theme.muted, html_value=True)]
    return [_row("value", fmt(value), theme.muted, tint(value) if tint else None)]


def _table(rows: list[str]) -> str:
    return (
        '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">'
        + "".join(rows)
        + "</TABLE>"
    )
