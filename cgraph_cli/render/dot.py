"""Graph -> Graphviz DOT, annotated with values and gradients.

Pure: returns a ``graphviz.Digraph`` (its ``.source`` is the DOT text); nothing is drawn here.
The same graph, values and options always give the same bytes: node ids are ``n<id>`` and
nodes and edges are written in node order.

Notation (:mod:`cgraph_cli.render.notation`): a node's gradient, the total ∂out/∂node over
every path, is written with a bar (``x̄``); a backward edge carries one op's local partial
(``∂t1/∂x``). Colour: with gradients shown, each gradient is tinted by its sign, a tensor's
entry by entry (blue positive, red negative; the print theme uses grey), more strongly the
larger its magnitude is relative to the largest in the graph; a summary of entries of both
signs is untinted and marked ``±`` (the one decision: :mod:`cgraph_cli.render.signs`). The
legend under the diagram says so.

>>> from cgraph_cli import grad
>>> r = grad("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3})
>>> src = diagram(r.graph, r.values, r.adjoints).source
>>> "n4 [" in src and "n2 -> n4" in src and "-12" in src
True
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.arrays import Value, np
from ..core.ir import Graph
from ..core.names import node_names
from ..core.numfmt import denoised, format_number, is_tensor, noise_floor, shape_text, shown_mean
from ..core.ops import CONST, INPUT
from ..core.walks import ancestors
from .notation import adjoint, is_name
from .signs import MARKS, entry_sign, mark, sign

if TYPE_CHECKING:
    import graphviz

#: Tensors with at most this many elements (and two axes) are drawn in full inside their
#: node, as a grid; larger ones as a summary.
SMALL_IN_NODE = 12


@dataclass(frozen=True)
class Theme:
    background: str
    text: str
    muted: str  # secondary text, edges: AA contrast (4.5:1) on the background and every fill
    input_fill: str
    op_fill: str
    const_fill: str
    output: str  # the output node's border
    positive: str  # gradient > 0
    negative: str  # gradient < 0
    # Edges of the backward view: neutral, since blue and red say a gradient's sign
    backward: str


THEMES = {
    "light": Theme(
        "#ffffff",
        "#1f2328",
        "#57606a",
        "#ddf4ff",
        "#ffffff",
        "#f6f8fa",
        "#8250df",
        "#2166ac",
        "#b2182b",
        "#1f2328",
    ),
    "dark": Theme(
        "#0d1117",
        "#e6edf3",
        "#9da7b3",
        "#0c2d6b",
        "#161b22",
        "#21262d",
        "#d2a8ff",
        "#79c0ff",
        "#ff7b72",
        "#e6edf3",
    ),
    "print": Theme(
        "#ffffff",
        "#000000",
        "#555555",
        "#eeeeee",
        "#ffffff",
        "#ffffff",
        "#000000",
        "#000000",
        "#000000",
        "#000000",
    ),
}
FONT = "Arial"  # Liberation Sans or Arimo where Arial is absent: all have ∂ and the glyphs


@dataclass(frozen=True)
class DiagramOptions:
    theme: str = "light"
    rankdir: str = "LR"
    precision: int | None = 4  # significant digits; None: exact
    values: bool = True
    grads: bool = True
    backward: bool = False  # draw the backward pass: local derivatives on the edges
    focus: int | None = None  # draw only the nodes that lead to this one
    # The gradient that tints most strongly; None: the largest in this diagram. A sequence of
    # frames passes its last frame's, so a tint means the same in every frame.
    scale: float | None = None
    # Tensors of at most this many elements (and two axes) are drawn in full, the rest as a
    # summary; 0 summarises every tensor (``--fit`` does when the grids make text too small).
    in_full: int = SMALL_IN_NODE
    # Calls of functions (and a loop's steps) drawn as one box each (see app/folds.py):
    # below the first ``depth`` levels (the program's own the first; 0: as 1), except the
    # groups ``expand`` names.
    collapse: bool = False
    depth: int = 0
    expand: tuple[str, ...] = ()


def diagram(
    graph: Graph,
    values: Sequence[Value] | None = None,
    adjoints: Sequence[Value] | None = None,
    options: DiagramOptions | None = None,
    output: int | None = None,
    prefix: str = "n",
    edge_labels: Mapping[tuple[int, int], str] | None = None,
    fold=None,
) -> graphviz.Digraph:
    """The DOT diagram of ``graph``; values and adjoints (∂output/∂node) label the nodes when
    given and asked for. ``prefix`` begins each node's DOT name (``n0``, ``n1``...): two
    diagrams drawn side by side need different ones. ``edge_labels``: the text of each
    backward edge ``(node, argument)`` when ``options.backward`` draws it. ``fold`` (a
    :class:`cgraph_cli.app.folds.Fold`): the boxes that stand for folded calls, and which nodes
    each stands for."""
    import graphviz

    options = options or DiagramOptions()
    theme = THEMES[options.theme]
    out = graph.output if output is None else output
    names = node_names(graph)
    values = values if options.values else None
    adjoints = adjoints if options.grads and values is not None else None
    shown = ancestors(graph, options.focus if options.focus is not None else out)
    scale = (
        max((_magnitude(adjoints[i]) for i in range(len(shown)) if shown[i]), default=0.0)
        if adjoints
        else 0.0
    )
    if options.scale is not None:
        scale = options.scale
    tensors = values is not None and any(is_tensor(v) for v in values)
    from ..core.interpret import commutative

    ordered = [len(a) > 1 and not commutative(op) for op, a in zip(graph.ops, graph.args)]

    dot = graphviz.Digraph("cgraph", format="svg")
    dot.attr(
        rankdir=options.rankdir,
        bgcolor=theme.background,
        fontname=FONT,
        fontcolor=theme.text,
        nodesep="0.3",
        ranksep="0.45",
        pad="0.25",
        newrank="true",
    )
    dot.attr(
        "node",
        fontname=FONT,
        fontsize="12",
        fontcolor=theme.text,
        color=theme.muted,
        penwidth="1.2",
        margin="0.06,0.04",
    )
    dot.attr(
        "edge",
        fontname=FONT,
        fontsize="10",
        fontcolor=theme.muted,
        color=theme.muted,
        arrowsize="0.7",
    )
    if sum(shown) > FAST_LAYOUT_ABOVE:
        # Fewer crossing-minimisation and ranking passes: a 2,000-node diagram lays out in
        # about a third of the time, a little less tidily.
        dot.attr(mclimit="0.1", nslimit="1")
    fmt = lambda x: format_number(x, options.precision)  # noqa: E731
    split = _split_leaves(graph, shown)
    labels = {}
    rep = fold.rep if fold else {}
    for b, box in enumerate(fold.boxes if fold else ()):
        grad = None if adjoints is None else adjoints[box.output]
        value = None if values is None else values[box.output]
        who = (names[out], names[box.output] if box.output >= 0 else "·")
        label = _box_label(box, theme, fmt, value, grad, scale, options.in_full, who)
        attrs = {"shape": "box", "style": "rounded,filled", "fillcolor": theme.op_fill}
        attrs.update(peripheries="2", tooltip=", ".join(box.keys)[:200])
        if rep.get(out) == b:
            attrs.update(color=theme.output, penwidth="2.4")
        dot.node(f"{prefix}g{b}", f"<{label}>", **attrs)
    for i in range(len(graph.ops)):
        if not shown[i] or i in rep:
            continue
        attrs = _node_attrs(graph, i, names, theme)
        grad = None if adjoints is None else adjoints[i]
        value = None if values is None else values[i]
        label = _label(graph, i, names, out, theme, fmt, value, grad, scale, options.in_full)
        if i == out:
            attrs.update(color=theme.output, penwidth="2.4")
        if i in split:
            labels[i] = (label, attrs)  # drawn beside each reader instead
            continue
        dot.node(f"{prefix}{i}", f"<{label}>", **attrs)
    drawn: set[tuple[str, str]] = set()
    single = _read_once(graph, shown, prefix, rep) if rep and options.backward else set()
    for i, args in enumerate(graph.args):
        if not shown[i]:
            continue
        for k, a in enumerate(args):
            if a in rep or i in rep:  # an edge into, out of or inside a folded box
                ends = (_end(prefix, rep, a), _end(prefix, rep, i))
                if ends[0] != ends[1] and ends not in drawn:
                    drawn.add(ends)
                    whole = ends[0] in single and i in rep
                    attrs = _folded_edge(graph, fold, rep, i, k, theme, options, edge_labels)
                    shape = ""
                    if tensors and values is not None and is_tensor(values[a]):
                        shape = shape_text(values[a])
                    if whole and "label" in attrs:  # all of a's gradient crosses: a̅
                        top = f"{html.escape(shape)}<BR/>" if shape else ""
                        attrs["label"] = f"<{top}{_bar(names[a])}>"
                    elif shape:
                        attrs["label"] = shape + (
                            "\\n" + attrs["label"] if "label" in attrs else ""
                        )
                    dot.edge(*ends, **attrs)
                continue
            tail = f"{prefix}{a}"
            if a in labels:
                tail = f"{prefix}{a}_{i}_{k}"
                label, attrs = labels[a]
                dot.node(tail, f"<{label}>", **{**attrs, "style": attrs["style"] + ",dashed"})
            attrs = _edge_attrs(graph, i, k, theme, options, edge_labels)
            if (
                tensors and values is not None and is_tensor(values[a])
            ):  # the shape of the value the edge carries
                attrs["label"] = shape_text(values[a]) + (
                    "\\n" + attrs["label"] if "label" in attrs else ""
                )
            if ordered[i]:  # x - 1 and 1 - x: the operands numbered where they arrive
                attrs.update(
                    headlabel=str(k + 1),
                    labelfontsize="10",
                    labelfontcolor=theme.muted,
                    labeldistance="1.4",
                    labelangle="35",
                )
            dot.edge(tail, f"{prefix}{i}", **attrs)
    if graph.control is not None and hasattr(graph.control, "loops"):  # the static view
        from .flow import add_frames

        add_frames(dot, graph, shown, prefix, theme)
    if adjoints is not None:
        dot.attr(
            label=f"<{_legend(theme, names[out], _summaries(adjoints, shown, options))}>",
            labelloc="b",
            labeljust="c",
            fontsize="10",
        )
    return dot


def _summaries(adjoints, shown, options: DiagramOptions) -> bool:
    """Whether a gradient the diagram shows is a summary rather than its entries."""
    return any(
        shown[i] and is_tensor(g) and (g.size > options.in_full or g.ndim > 2)
        for i, g in enumerate(adjoints)
    )


def _folded_edge(graph, fold, rep, i, k, theme, options, edge_labels) -> dict[str, str]:
    """An edge that meets a folded box, in the backward view: against the arrow, labelled
    with the local partial where it leaves the box into an open node, or where it enters the
    box with what the call passes back, its vector-Jacobian product (``vjp of layer(h, W2,
    b2)``; the drawing writes ``h̄`` instead where the box alone reads ``h``: all of its
    gradient crosses)."""
    if not options.backward:
        return {}
    if i in rep:  # into the box: the gradient the call passes back to its argument
        attrs = {"dir": "back", "color": theme.backward, "fontcolor": theme.backward}
        attrs["penwidth"] = "1.4"
        if graph.ops[graph.args[i][k]] is not CONST:
            attrs["label"] = f"vjp of {fold.boxes[rep[i]].label}"
        return attrs
    return _edge_attrs(graph, i, k, theme, options, edge_labels)


def _read_once(graph: Graph, shown, prefix: str, rep: Mapping[int, int]) -> set[str]:
    """The drawn ends (a node or a folded box) whose value one drawn end alone reads: the
    gradient that crosses their edge backwards is all of theirs."""
    readers: dict[str, set[str]] = {}
    for i, args in enumerate(graph.args):
        if shown[i]:
            for a in args:
                tail, head = _end(prefix, rep, a), _end(prefix, rep, i)
                if tail != head:
                    readers.setdefault(tail, set()).add(head)
    return {tail for tail, heads in readers.items() if len(heads) == 1}


def _end(prefix: str, rep: Mapping[int, int], i: int) -> str:
    """The DOT name an edge meets node ``i`` at: its folded box's, or its own."""
    b = rep.get(i)
    return f"{prefix}{i}" if b is None else f"{prefix}g{b}"


def _box_label(box, theme: Theme, fmt, value, grad, scale, in_full, names) -> str:
    """A folded call's box: the call as written, the inputs drawn inside it, and the value
    and gradient of what it returns."""
    e = html.escape
    rows = [f'<TR><TD COLSPAN="2"><B>{e(box.label)}</B></TD></TR>']
    if box.holds:
        inside = e(", ".join(box.holds))
        rows.append(
            f'<TR><TD COLSPAN="2"><FONT COLOR="{theme.muted}" POINT-SIZE="11">'
            f"holds {inside}</FONT></TD></TR>"
        )
    if value is not None:
        cell = _tensor_html(value, fmt, None, in_full) if is_tensor(value) else f" {e(fmt(value))} "
        rows.append(_row("value", cell, theme.muted, html_value=True))
    if grad is not None:
        key = _bar(names[1])
        if is_tensor(grad):
            cell = _tensor_html(grad, fmt, lambda g: _tint(g, scale, theme), in_full)
            rows.append(_row(key, cell, theme.muted, html_value=True))
        elif not (grad.__class__ is float and math.isnan(grad)):
            rows.append(_row(key, fmt(grad), theme.muted, _tint(grad, scale, theme)))
    table = "".join(rows)
    return f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">{table}</TABLE>'


#: In diagrams of more nodes than this, an input or constant read in many places is drawn
#: once beside each reader (dashed): edges from one node to hundreds of ranks make Graphviz's
#: layout take minutes.
SPLIT_ABOVE, SPLIT_FAN_OUT = 60, 4
FAST_LAYOUT_ABOVE = 200


def _split_leaves(graph: Graph, shown: list[bool]) -> set[int]:
    if sum(shown) <= SPLIT_ABOVE:
        return set()
    readers = [0] * len(graph.ops)
    for i, args in enumerate(graph.args):
        if shown[i]:
            for a in args:
                readers[a] += 1
    return {
        i for i, n in enumerate(readers) if n > SPLIT_FAN_OUT and graph.ops[i] in (INPUT, CONST)
    }


def _node_attrs(graph: Graph, i: int, names, theme: Theme) -> dict[str, str]:
    op = graph.ops[i]
    if op is INPUT:
        return {"shape": "box", "style": "rounded,filled", "fillcolor": theme.input_fill}
    if op is CONST:
        return {
            "shape": "box",
            "style": "rounded,filled,dashed",
            "fillcolor": theme.const_fill,
            "fontsize": "11",
        }
    return {"shape": "box", "style": "rounded,filled", "fillcolor": theme.op_fill}


def _label(
    graph: Graph, i: int, names, out: int, theme: Theme, fmt, value, grad, scale, in_full
) -> str:
    op = graph.ops[i]
    e = html.escape
    rows = []
    if op is INPUT:
        head = f"<B>{e(names[i])}</B>"
    elif op is CONST:
        head = f"{e(names[i])}" if graph.labels[i] is None else f"<B>{e(names[i])}</B>"
    else:
        name = (
            f"<B>{e(names[i])}</B>"
            if graph.labels[i] or i == out
            else f'<FONT COLOR="{theme.muted}">{e(names[i])}</FONT>'
        )
        size = 17 if len(op.glyph) == 1 else 13  # a symbol reads larger than a function name
        head = f'<FONT POINT-SIZE="{size}">{e(op.glyph)}</FONT>  {name}'
    rows.append(f'<TR><TD COLSPAN="2">{head}</TD></TR>')
    if value is not None and not (op is CONST and graph.labels[i] is None and not is_tensor(value)):
        if is_tensor(value):
            rows.append(
                _row("value", _tensor_html(value, fmt, None, in_full), theme.muted, html_value=True)
            )
        else:
            rows.append(_row("value", fmt(value), theme.muted))
    if grad is not None and op is not CONST:
        key = _bar(names[i])
        if grad.__class__ is float and math.isnan(grad):  # not reached yet (a backward frame)
            rows.append(_row(key, "?", theme.muted))
        elif is_tensor(grad):
            cell = _tensor_html(grad, fmt, lambda g: _tint(g, scale, theme), in_full)
            rows.append(_row(key, cell, theme.muted, html_value=True))
        else:
            rows.append(_row(key, fmt(grad), theme.muted, _tint(grad, scale, theme)))
    table = "".join(rows)
    return f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">{table}</TABLE>'


def _row(
    key: str, value: str, key_color: str, fill: str | None = None, html_value: bool = False
) -> str:
    """One row of a node's table: ``key`` (HTML: a gradient's is :func:`_bar`) and its value."""
    e = html.escape
    bg = f' BGCOLOR="{fill}"' if fill else ""
    cell = value if html_value else f" {e(value)} "
    return (
        f'<TR><TD ALIGN="LEFT"><FONT COLOR="{key_color}" POINT-SIZE="10">{key}</FONT></TD>'
        f'<TD ALIGN="RIGHT"{bg}>{cell}</TD></TR>'
    )


def _bar(name: str) -> str:
    """A node's gradient as its row's key: a one-letter name with a macron, ``x̄`` (the font
    sets it close over the letter), a longer one under one unbroken line (Graphviz's ``<O>``;
    combining lines over ``t1`` sit at two heights).

    >>> _bar("x"), _bar("t1"), _bar("x * x")
    ('x̄', '<O>t1</O>', '<O>out</O>')
    """
    name = name if is_name(name) else "out"
    return html.escape(adjoint(name)) if len(name) == 1 else f"<O>{html.escape(name)}</O>"


def _magnitude(x) -> float:
    """|x|, or the largest |element| of a tensor; 0 for a gradient not known yet (nan)."""
    if is_tensor(x):
        return float(abs(x).max(initial=0.0))  # an empty tensor's gradient: nothing
    return 0.0 if math.isnan(x) else abs(x)


def _tensor_html(x, fmt, tint=None, in_full: int = SMALL_IN_NODE) -> str:
    """A small tensor (at most ``in_full`` elements) as a grid of its elements (a gradient's
    each tinted by ``tint`` of its own sign), a large one as its shape, mean and range (a
    gradient's marked with the signs of its entries, :func:`~cgraph_cli.render.signs.mark`,
    and tinted only where they share one)."""
    e = html.escape
    if x.size == 0:
        return f" [] {e(shape_text(x))} "
    flat = x.ravel()
    floor = noise_floor(flat)
    if x.size > in_full or x.ndim > 2:
        low, high = denoised(float(flat.min()), floor), denoised(float(flat.max()), floor)
        text = f"{shape_text(x)}  mean {fmt(shown_mean(flat))}  [{fmt(low)}, {fmt(high)}]"
        if tint is None:
            return f" {e(text)} "
        s = sign(x)
        fill = tint(s * float(abs(flat[np.isfinite(flat)]).max(initial=0.0))) if s else None
        bg = f' BGCOLOR="{fill}"' if fill else ""
        return (
            '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
            f'<TR><TD ALIGN="RIGHT"{bg}> {e(mark(x))} {e(text)} </TD></TR></TABLE>'
        )
    rows = []
    for row in x.reshape(1, -1) if x.ndim == 1 else x:
        cells = []
        for v in row.tolist():
            v = denoised(v, floor)
            fill = tint(v) if tint and entry_sign(v, floor) else None
            bg = f' BGCOLOR="{fill}"' if fill else ""
            cells.append(f'<TD ALIGN="RIGHT"{bg}>{e(fmt(v))}</TD>')
        rows.append("<TR>" + "".join(cells) + "</TR>")
    return (
        '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="1" CELLPADDING="1">'
        + "".join(rows)
        + "</TABLE>"
    )


def _tint(grad: float, scale: float, theme: Theme) -> str | None:
    """The fill of a number of the gradient: its sign's colour (:func:`sign`), stronger the
    larger ``|grad|`` is beside ``scale``; none for 0, or where nothing is tinted."""
    if sign(grad) == 0 or scale == 0.0:
        return None
    strength = 0.18 + 0.5 * math.sqrt(min(1.0, abs(grad) / scale))
    if theme.positive == theme.negative:  # print: grey by magnitude only
        return _mix(theme.background, "#888888", strength)
    return _mix(theme.background, theme.positive if grad > 0 else theme.negative, strength)


def _mix(a: str, b: str, t: float) -> str:
    ca = [int(a[k : k + 2], 16) for k in (1, 3, 5)]
    cb = [int(b[k : k + 2], 16) for k in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(ca, cb))


def _edge_attrs(graph, i, k, theme, options, edge_labels) -> dict[str, str]:
    """Edge ``k`` of node ``i``: drawn as the backward pass runs it (against the arrow, in the
    backward colour) where a gradient flows along it, labelled with what ``edge_labels`` holds
    for it (the local partial with its number, or the reverse rule: see
    :func:`cgraph_cli.app.explain.edge_labels`)."""
    if not options.backward:
        return {}
    op = graph.ops[i]
    args = graph.args[i]
    if graph.ops[args[k]] is CONST or not op.differentiable:  # no gradient flows back here
        return {}
    if op.vjp is None and op.partials is not None and op.partials[k] is None:  # where's c
        return {}
    attrs = {"dir": "back", "color": theme.backward, "fontcolor": theme.backward, "penwidth": "1.4"}
    label = edge_labels.get((i, k)) if edge_labels else None
    if label:
        attrs["label"] = label  # a plain label: Graphviz's own quoting escapes it
    return attrs


def _legend(theme: Theme, out: str, summaries: bool = False) -> str:
    """The key under a diagram of gradients, in short rows (it must not widen a narrow
    drawing): what a bar is, what each colour says, and (where a summary is drawn) what its
    sign marks say."""
    muted = f'<FONT COLOR="{theme.muted}">'
    if theme.positive == theme.negative:
        swatches = [
            (_mix(theme.background, "#888888", 0.3), "small |x̄|"),
            (_mix(theme.background, "#888888", 0.68), "large |x̄|"),
        ]
    else:
        swatches = [
            (_mix(theme.background, color, s), text)
            for color, s, text in (
                (theme.negative, 0.68, "−large"),
                (theme.negative, 0.3, "−small"),
                (theme.positive, 0.3, "+small"),
                (theme.positive, 0.68, "+large"),
            )
        ]
    who = html.escape(out if out.isidentifier() else "out")
    cells = "".join(f'<TD BGCOLOR="{fill}"> {text} </TD>' for fill, text in swatches)
    rows = [
        f"<TR><TD>{muted}x̄ (gradient of {who}):</FONT></TD>{cells}</TR>",
    ]
    if summaries:
        marks = ", ".join(f"{m} {said}" for m, said in MARKS.items() if m != "0")
        rows.append(
            f'<TR><TD COLSPAN="{len(swatches) + 1}">{muted}a summary: '
            f"{html.escape(marks)} (untinted)</FONT></TD></TR>"
        )
    return '<TABLE BORDER="0" CELLSPACING="2" CELLPADDING="2">' + "".join(rows) + "</TABLE>"
