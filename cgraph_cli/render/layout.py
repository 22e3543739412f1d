"""The geometry of the page and the slides: how large each node's box is for the text it
holds, the DOT text Graphviz lays the page out from, its positions read back in pixels, and the
largest diagram cgraph draws unless forced.

Pure: nothing here evaluates; Graphviz runs in :mod:`cgraph_cli.render.image`.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from typing import Any

from ..core.errors import UsageError
from ..core.ir import Graph
from ..core.walks import ancestors
from .notation import total

CHAR = 8.2  # the width of a character at the page's 14 px font, generously (digits: ~7.8)
LINE = 20  # the height of a line of text in a node
PAD = 12


def node_lines(node: dict[str, Any], output: str, gap: str = "  ") -> list[str]:
    """The lines of text a node holds when everything is known (which sets its size); ``gap``
    between an op's glyph and its name."""
    head = f"{node['glyph']}{gap}{node['name']}" if node["kind"] == "op" else node["name"]
    lines = [head]
    if node["value"] is not None and not (
        node["kind"] == "const" and node["value"] == node["name"]
    ):
        lines.append(f"= {node['value']}")
    if node["grad"] is not None:  # the total gradient, x̄ (see render/notation.py)
        lines.append(f"{total(node['name'])} = {node['grad']}")
    return lines


#: Pages of more nodes than this are laid out with fewer of dot's passes (see layout_source).
FAST_PAGE_LAYOUT_ABOVE = 60
#: On such a page, a node read in this many places or more is drawn as shared (see
#: shared_sources).
SHARED_USES = 5


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
    declared: dict[str | None, list[str]] = {}
    for node in page["nodes"]:
        text = node_lines(node, page["output"])
        width = max(len(t) for t in text) * char + 2 * pad
        height = len(text) * line + pad
        declared.setdefault(node.get("group"), []).append(
            f"{node['id']} [width={width / 72:.3f}, height={height / 72:.3f}];"
        )
    lines += _clusters(page.get("groups") or [], declared)
    shared = shared_sources(page)
    for edge in page["edges"]:
        if edge["from"] in shared:  # routed by place(), below the layout
            continue
        label = max([edge.get("local") or "", edge.get("shape") or ""], key=len)
        attrs = f' [label="{_dot_escape(label)}"]' if label else ""
        lines.append(f"  {edge['from']} -> {edge['to']}{attrs};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def shared_sources(page: dict[str, Any]) -> set[str]:
    """On a large page, the nodes read in more than :data:`SHARED_USES` places (an input at
    every step of a chain): dot spends minutes ranking the edges from them across the whole
    layout (each a chain of placeholders through every rank it spans), so they are left out
    of its layout and drawn by :func:`place` along a lane below it.

    >>> edges = [{"from": "a", "to": f"n{k}"} for k in range(5)]
    >>> shared_sources({"nodes": [{}] * 61, "edges": edges}), shared_sources({"nodes": [],
    ...     "edges": edges})
    ({'a'}, set())
    """
    if len(page["nodes"]) <= FAST_PAGE_LAYOUT_ABOVE:
        return set()
    uses: dict[str, int] = {}
    for edge in page["edges"]:
        uses[edge["from"]] = uses.get(edge["from"], 0) + 1
    return {n for n, k in uses.items() if k >= SHARED_USES}


def _clusters(groups: list[dict[str, Any]], declared: dict[str | None, list[str]]) -> list[str]:
    """The nodes' declarations, each inside the clusters of the groups (calls, loop steps) it
    lies in, so that Graphviz keeps a group's nodes together, with room above for its header.
    Nested groups nest; built with a stack, not recursion."""
    children: dict[str | None, list[str]] = {}
    labels = {grp["id"]: _dot_escape(grp["label"]) for grp in groups}
    for grp in groups:
        children.setdefault(grp["parent"], []).append(grp["id"])
    lines = [f"  {d}" for d in declared.get(None, [])]
    stack: list[tuple[str, bool]] = [(c, True) for c in reversed(children.get(None, []))]
    depth = 1
    while stack:
        gid, opening = stack.pop()
        if not opening:
            depth -= 1
            lines.append("  " * depth + "}")
            continue
        pad = "  " * depth
        lines.append(  # the header's room: its text at a size a little over the page's
            f'{pad}subgraph cluster_{gid} {{ label="{labels[gid]}  "; fontsize=16; '
            f"margin={GROUP_MARGIN};"
        )
        lines += [f"{pad}  {d}" for d in declared.get(gid, [])]
        depth += 1
        stack.append((gid, False))
        stack += [(c, True) for c in reversed(children.get(gid, []))]
    return lines


#: The height (points) Graphviz leaves above a group's nodes for its header on the page, and
#: its margin around them.
GROUP_HEAD = 22
GROUP_MARGIN = 8


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
    margin, pt = MARGIN, 72.0
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
    lanes = _lanes(page)
    up = lanes.pop("", 0)
    for edge in page["edges"]:
        if edge["from"] in lanes:
            _along_lane(edge, page, lanes[edge["from"]])
            continue
        coords, label = queue[(edge["from"], edge["to"])].pop(0)
        points = [(px(coords[k]), py(coords[k + 1]) - up) for k in range(0, len(coords), 2)]
        d = f"M{_n(points[0][0])} {_n(points[0][1])}"
        for k in range(1, len(points) - 2, 3):
            d += "C" + " ".join(f"{_n(x)} {_n(y)}" for x, y in points[k : k + 3])
        edge["path"] = d
        edge["points"] = [[_n(x), _n(y)] for x, y in points]
        edge["label_at"] = [_n(px(label[0])), _n(py(label[1]) - up)] if label else _middle(points)
        (x1, y1), (x2, y2) = points[-2], points[-1]
        run = math.hypot(x2 - x1, y2 - y1) or 1.0
        back = 16 / run  # the operand's badge sits on the edge, just before the arrowhead
        edge["port_at"] = [_n(round(x2 - (x2 - x1) * back, 1)), _n(round(y2 - (y2 - y1) * back, 1))]
    _group_boxes(page)
    page["width"] = _n(round(width * pt + 2 * margin))
    low = max((n["box"][1] + n["box"][3] for n in page["nodes"]), default=0)
    page["height"] = _n(round(low + margin if up or lanes else height * pt + 2 * margin))
    return page


#: The page's margin around the layout (pixels).
MARGIN = 16
#: The gap (pixels) above each shared node's row below the layout.
LANE = 24


def _lanes(page: dict[str, Any]) -> dict[str, float]:
    """Each shared node (see :func:`shared_sources`) moved to a row of its own below the
    layout, at its left, and the y of the lane its edges run along from it: its middle. The
    other nodes move up by the room dot kept for the shared ones above them (the edges dot
    routed follow them: the shift is returned under the key "")."""
    shared = shared_sources(page)
    if not shared:
        return {}
    rest = [n["box"] for n in page["nodes"] if n["id"] not in shared]
    # the room dot left where it put the shared nodes (above the rest) is taken back
    up = min(b[1] for b in rest) - MARGIN if rest else 0
    for node in page["nodes"]:
        node["box"][1] = _n(round(node["box"][1] - up, 1))
    bottom = max(b[1] + b[3] for b in rest) if rest else 0
    left = min(b[0] for b in rest) if rest else MARGIN
    lanes = {}
    for node in page["nodes"]:
        if node["id"] in shared:
            x, y, w, h = node["box"]
            top = bottom + LANE
            node["box"] = [_n(left), _n(round(top, 1)), w, h]
            lanes[node["id"]] = round(top + h / 2, 1)
            bottom = top + h
    lanes[""] = up
    return lanes


def _along_lane(edge: dict[str, Any], page: dict[str, Any], lane: float) -> None:
    """An edge from a shared node: from its box's right side along its lane, then up into
    the box that reads it; the label beside the way up."""
    box = {n["id"]: n["box"] for n in page["nodes"]}
    sx, sy, sw, sh = box[edge["from"]]
    tx, ty, tw, th = box[edge["to"]]
    x1, x2, y2 = sx + sw, tx + tw / 2, ty + th + 11  # the arrowhead's room below the box
    points = [(x1, lane), (x2, lane), (x2, y2)]
    edge["points"] = [[_n(round(x, 1)), _n(round(y, 1))] for x, y in points]
    edge["path"] = "M" + "L".join(f"{_n(round(x, 1))} {_n(round(y, 1))}" for x, y in points)
    edge["label_at"] = [_n(round(x2, 1)), _n(round((y2 + lane) / 2, 1))]
    edge["port_at"] = [_n(round(x2, 1)), _n(round(y2 + 16, 1))]


def _group_boxes(page: dict[str, Any]) -> None:
    """Each group's box: around its nodes and the groups inside it, with room for its header
    above (where Graphviz left it: see :func:`_clusters`)."""
    groups = page.get("groups") or []
    boxes = {n["id"]: n["box"] for n in page["nodes"]}
    inner: dict[str, list[list[float]]] = {}
    for node in page["nodes"]:
        if node.get("group"):
            inner.setdefault(node["group"], []).append(node["box"])
    for grp in reversed(groups):  # a group after the groups around it: the inner ones first
        held = inner.get(grp["id"], [])
        if not held:
            held = [boxes[grp["output"]]] if grp["output"] in boxes else [[0, 0, 0, 0]]
        left = min(b[0] for b in held) - GROUP_MARGIN
        top = min(b[1] for b in held) - GROUP_MARGIN - GROUP_HEAD
        right = max(b[0] + b[2] for b in held) + GROUP_MARGIN
        bottom = max(b[1] + b[3] for b in held) + GROUP_MARGIN
        wide = (len(grp["label"]) + 4) * CHAR + 2 * PAD  # its header, and the box's ▸
        if right - left < wide:
            left, right = (left + right - wide) / 2, (left + right + wide) / 2
        grp["box"] = [_n(round(left, 1)), _n(round(top, 1)), _n(round(right - left, 1)),
                      _n(round(bottom - top, 1))]  # fmt: skip
        # Folded, one box where the node it returns is (the flow goes on from there), wide
        # enough for the call as written: its other nodes are hidden, their room left empty.
        ox, oy, ow, oh = boxes.get(grp["output"], held[-1])
        width = min(max(ow, wide), right - left)
        height = max(oh, 3 * LINE + PAD)
        x = max(left, min(ox + ow - width, right - width))
        y = max(top, min(oy + oh / 2 - height / 2, bottom - height))
        grp["fold"] = [_n(round(x, 1)), _n(round(y, 1)), _n(round(width, 1)), _n(round(height, 1))]
        if grp["parent"]:
            inner.setdefault(grp["parent"], []).append(grp["box"])


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


#: Beyond this many nodes a diagram is slow to lay out and unreadable; --force draws anyway.
MAX_NODES = 500


def diagram_size(
    graph: Graph,
    node: int,
    force: bool = False,
    *,
    what: str = "the diagram",
    narrow: str = "--focus NAME",
) -> int:
    """The nodes a diagram of ``node`` draws; a :class:`UsageError` above :data:`MAX_NODES`
    unless ``force``. ``what`` and ``narrow`` word the message for frames (``--of NAME``) and
    pages (nothing narrows them: ``""``).

    >>> from cgraph_cli import parse
    >>> diagram_size(parse("g = (x + y) * z"), 4)
    5
    """
    count = sum(ancestors(graph, node))
    check_size(count, force, what, narrow)
    return count


def check_size(count: int, force: bool, what: str, narrow: str) -> None:
    if count > MAX_NODES and not force:
        raise UsageError(
            f"{what} would have {count:,} nodes; more than {MAX_NODES} are slow to lay out "
            "and hard to read",
            hints=[
                f"draw the part that leads to one value with {narrow}, or all of it with --force"
                if narrow
                else "draw it all the same with --force"
            ],
        )
