"""A long left-to-right drawing wrapped into rows, as text wraps on a page, for ``--fit``.

Graphviz lays a chain out as one long row: on a 16:9 slide a 36-node RNN is a strip with 5-pixel
text. Wrapping keeps Graphviz's own layout (its ranks and the order within each rank) and cuts
it between ranks into rows of about equal width, stacked top to bottom; each node is pinned
where its row puts it and Graphviz's ``neato`` draws the edges again around the pinned nodes.

>>> plain = '''graph 1 6 1
... node a 0.5 0.5 1 0.5 a solid box black lightgrey
... node b 2.5 0.5 1 0.5 b solid box black lightgrey
... node c 4.5 0.5 1 0.5 c solid box black lightgrey
... stop'''
>>> bands(columns(placements(plain)), 2)
[[0.5, 2.5], [4.5]]
>>> text, width, height = wrapped("digraph g { a -> b -> c }", plain, 2)
>>> "layout=neato" in text, width, height  # rows: a b, then c (plus the layout's margin)
(True, 4.0, 2.0)
"""

from __future__ import annotations

import re

#: Space between two rows, in inches.
ROW_GAP = 0.5
#: Up to this many nodes, edges are routed around the nodes; beyond, drawn as curves.
ROUTED_NODES = 120


def straightened(dot: str) -> str:
    """``dot`` with every node but the constants (drawn dashed) in one group: Graphviz then
    keeps the edges between them straight, and ``x = f(x) * 0.9`` repeated is a straight line
    instead of a staircase that each constant pushes down.

    >>> straightened('digraph g {\\n\\tnode [shape=box]\\n\\tn0 [style="rounded,dashed"]\\n}')
    'digraph g {\\n\\tnode [group=main shape=box]\\n\\tn0 [style="rounded,dashed" group=""]\\n}'
    """
    dot = dot.replace("\tnode [", "\tnode [group=main ", 1)
    return re.sub(r'^(\t+\w+ \[.*style="[^"]*dashed[^"]*".*)\]$', r'\1 group=""]', dot, flags=re.M)


def drawing_size(plain: str) -> tuple[float, float]:
    """The width and height of the drawing in Graphviz's ``plain`` output, in inches (its
    first line: graph SCALE WIDTH HEIGHT)."""
    _, _, width, height = plain.split("\n", 1)[0].split()[:4]
    return float(width), float(height)


def placements(plain: str) -> list[tuple[str, float, float, float, float]]:
    """The nodes of Graphviz's ``plain`` output: name, centre x and y, width and height, in
    inches (y grows upwards)."""
    nodes = []
    for line in plain.splitlines():
        if line.startswith("node "):
            _, name, x, y, w, h = line.split(" ", 6)[:6]
            nodes.append((name.strip('"'), float(x), float(y), float(w), float(h)))
    return nodes


def columns(nodes) -> dict[float, list]:
    """The nodes of a left-to-right layout by rank: Graphviz centres a rank's nodes on one x."""
    by_x: dict[float, list] = {}
    for node in nodes:
        by_x.setdefault(round(node[1], 2), []).append(node)
    return dict(sorted(by_x.items()))


def bands(cols: dict[float, list], rows: int) -> list[list[float]]:
    """The ranks (their x) cut into at most ``rows`` runs of about equal width, in order."""
    xs = list(cols)
    if not xs:
        return []
    left = {x: min(n[1] - n[3] / 2 for n in cols[x]) for x in xs}
    right = {x: max(n[1] + n[3] / 2 for n in cols[x]) for x in xs}
    width = right[xs[-1]] - left[xs[0]]
    target = width / rows
    out: list[list[float]] = [[]]
    start = left[xs[0]]
    for x in xs:
        # past the row's share by more than half this rank: begin the next row with it
        if out[-1] and len(out) < rows and right[x] - start > target + (right[x] - left[x]) / 2:
            out.append([])
            start = left[x]
        out[-1].append(x)
    return out


def wrapped(dot: str, plain: str, rows: int) -> tuple[str, float, float]:
    """``dot`` (laid out left to right, as ``plain`` says) with every node pinned in ``rows``
    rows, for Graphviz's neato to draw, and the drawing's width and height in inches as the
    rows give them (the nodes' extent, plus what the layout had beyond its nodes: the legend,
    a title), so that layouts can be compared without drawing each. An input or constant
    whose readers are all in a later row moves to the left of its first reader there; a
    frame's title (``Diagram.titled``) becomes text above the first row."""
    nodes = placements(plain)
    cols = columns(nodes)
    cut = bands(cols, rows)
    members = [[n for x in band for n in cols[x]] for band in cut]
    row_of = {n[0]: r for r, band in enumerate(members) for n in band}
    at = {n[0]: n for n in nodes}
    readers: dict[str, list[str]] = {}
    for line in plain.splitlines():
        if line.startswith("edge "):
            tail, head = (t.strip('"') for t in line.split(" ", 3)[1:3])
            readers.setdefault(tail, []).append(head)
    fed = {head for heads in readers.values() for head in heads}
    beside: dict[str, int] = {}  # leaves moved beside each reader so far
    for name, heads in readers.items():
        first = min(row_of[h] for h in heads)
        if name in fed or first <= row_of[name]:
            continue
        reader = min((at[h] for h in heads if row_of[h] == first), key=lambda n: n[1])
        leaf = at[name]
        below = beside.get(reader[0], 0)
        beside[reader[0]] = below + 1
        x = reader[1] - reader[3] / 2 - 0.55 - leaf[3] / 2  # room for an edge label
        y = reader[2] - below * (leaf[4] + 0.15)
        members[row_of[name]].remove(leaf)
        members[first].append((name, x, y, leaf[3], leaf[4]))
    pins = []
    top = 0.0
    wide = 0.0
    for band in members:
        if not band:  # every node of the row moved beside its reader in a later row
            continue
        left = min(n[1] - n[3] / 2 for n in band)
        high = max(n[2] + n[4] / 2 for n in band)
        low = min(n[2] - n[4] / 2 for n in band)
        wide = max(wide, max(n[1] + n[3] / 2 for n in band) - left)
        for name, x, y, _, _ in band:
            pins.append(f'\t"{name}" [pos="{x - left:.3f},{y - high + top:.3f}!"]')
        top -= high - low + ROW_GAP
    graph_w, graph_h = drawing_size(plain)
    extra_w = graph_w - (max(n[1] + n[3] / 2 for n in nodes) - min(n[1] - n[3] / 2 for n in nodes))
    extra_h = graph_h - (max(n[2] + n[4] / 2 for n in nodes) - min(n[2] - n[4] / 2 for n in nodes))
    title = re.search(
        r"\tsubgraph cluster_title \{\n\t+(label=<(<.*>)> labelloc=t labeljust=l )", dot
    )
    if title:  # neato keeps no room for a frame's label: the title is pinned text instead
        dot = dot.replace(title.group(1), 'label="" ', 1)  # else it takes the legend's
        # as wide as the rows and centred over them, its text set left: flush with the rows
        text = (
            f'<TABLE BORDER="0" CELLPADDING="0" WIDTH="{round(wide * 72)}"><TR>'
            f'<TD ALIGN="LEFT">{title.group(2)}</TD></TR></TABLE>'
        )
        pins.append(
            f"\tcgraph_title [shape=plaintext margin=0 label=<{text}> "
            f'pos="{wide / 2:.3f},{ROW_GAP:.3f}!"]'
        )
    body = dot.rstrip()
    assert body.endswith("}"), "a DOT graph ends with }"
    # neato keeps pinned nodes where they are and routes the edges around them; that takes
    # time quadratic in the nodes (10 s for 240), so a larger graph gets curves that may cross
    # a node (0.05 s): its text is too small for a slide anyway.
    splines = "true" if len(nodes) <= ROUTED_NODES else "curved"
    text = body[:-1] + f"\tlayout=neato splines={splines}\n" + "\n".join(pins) + "\n}\n"
    return text, wide + extra_w, -top - ROW_GAP + extra_h
