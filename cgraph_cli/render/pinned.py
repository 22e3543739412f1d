"""A sequence of drawings that differ only in their nodes' text (the frames of ``explain
--frames``) drawn on one layout: Graphviz lays out one of them (the last, whose text is the
widest), and each frame is that layout with its own labels put in, drawn with the positions
kept (``neato -n2``). The frames then have one size, nothing moves from one frame to the
next, and no frame is laid out again.

>>> laid = 'digraph g {\\n\\tgraph [bb="0,0,54,36"];\\n\\ta\\t[label=<<B>7</B>>, pos="27,18"];\\n}\\n'
>>> layout = Layout(laid)
>>> layout.keys
['a']
>>> layout.with_labels({"a": "<I>?</I>"})
'digraph g {\\n\\tgraph [bb="0,0,54,36"];\\n\\ta\\t[label=<<I>?</I>>, pos="27,18"];\\n}\\n'
>>> node_labels('digraph g {\\n\\tb [label=<<B>x</B>> shape=box]\\n\\ta -> b\\n}')
{'b': '<B>x</B>'}
"""

from __future__ import annotations

import re

from .image import Renderer, render

#: A node statement: its name, then its attributes (Graphviz's own output puts a tab between;
#: python-graphviz's, a space). Edges (``a -> b``) and ``graph``/``node``/``edge`` defaults
#: are not nodes.
_NODE = re.compile(r'^\t+"?(\w+)"?[ \t]+\[', re.M)
_DEFAULTS = {"graph", "node", "edge"}


def _html_end(text: str, i: int) -> int:
    """The index after the ``>`` that closes the HTML label opened by ``<`` at ``i``."""
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError("an HTML label that does not close")


def _label_spans(dot: str) -> list[tuple[str, int, int]]:
    """Each node's HTML label in ``dot``: its name and where the label's text (inside the
    outer ``<`` and ``>``) begins and ends. Linear in the text."""
    starts = [(m.group(1), m.end()) for m in _NODE.finditer(dot) if m.group(1) not in _DEFAULTS]
    spans = []
    for k, (name, at) in enumerate(starts):
        stop = starts[k + 1][1] if k + 1 < len(starts) else len(dot)
        found = dot.find("label=<", at, stop)
        if found >= 0:
            opening = found + len("label=")
            spans.append((name, opening + 1, _html_end(dot, opening) - 1))
    return spans


def node_labels(dot: str) -> dict[str, str]:
    """The HTML label of every node of ``dot``, by name."""
    return {name: dot[a:b] for name, a, b in _label_spans(dot)}


class Layout:
    """A laid-out DOT text (Graphviz's ``-Tdot``) cut around its nodes' labels, to be drawn
    again with other labels in the same places."""

    def __init__(self, laid: str) -> None:
        self.parts: list[str] = []
        self.keys: list[str] = []
        at = 0
        for name, a, b in _label_spans(laid):
            self.parts.append(laid[at:a])
            self.keys.append(name)
            self.parts.append(laid[a:b])
            at = b
        self.parts.append(laid[at:])
        found = re.search(r'\bbb="([-0-9.e]+),([-0-9.e]+),([-0-9.e]+),([-0-9.e]+)"', laid)
        x0, y0, x1, y1 = (float(v) for v in found.groups()) if found else (0, 0, 0, 0)
        self.size = (x1 - x0, y1 - y0)  # the drawing, in points

    def with_labels(self, labels: dict[str, str], replace: tuple[str, str] | None = None) -> str:
        """The layout with each node named in ``labels`` given that label (the others keep
        theirs); ``replace``: one more text to put in place of another (a caption)."""
        out = [self.parts[0]]
        for k, key in enumerate(self.keys):
            out.append(labels.get(key, self.parts[2 * k + 1]))
            out.append(self.parts[2 * k + 2])
        text = "".join(out)
        if replace is not None:
            text = text.replace(replace[0], replace[1], 1)
        return text

    def padded(self, text: str, size: tuple[int, int], dpi: float, extra=(0.0, 0.0)) -> str:
        """``text`` (this layout) with a margin that makes it ``size`` pixels at ``dpi``:
        the drawing centred; ``extra``: pixels more on each axis (a correction)."""
        width, height = size
        pad_x = ((width + extra[0]) / dpi - self.size[0] / 72) / 2
        pad_y = ((height + extra[1]) / dpi - self.size[1] / 72) / 2
        pad = f'pad="{max(0.0, pad_x):.4f},{max(0.0, pad_y):.4f}"'
        return re.sub(r'\bpad="?[0-9.,]+"?', pad, text, count=1)


def laid_out(dot: str, renderer: Renderer) -> Layout:
    """``dot`` laid out by Graphviz (its own layout engine: ``dot``, or ``neato`` for a
    drawing wrapped into rows), as a :class:`Layout`."""
    return Layout(render(dot, "dot", renderer).decode())


def draw(text: str, fmt: str, renderer: Renderer, dpi: float | None = None) -> bytes:
    """A laid-out DOT text drawn as it was laid out (``neato -n2``: nodes and edges kept)."""
    return render(text, fmt, renderer, dpi, pinned=True)


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height, from its header."""
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
