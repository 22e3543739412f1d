"""The graph as a tree in the terminal, from the output down to the inputs.

A node read in several places is drawn once, in full, and referred to afterwards as
``↑ name``. Built with an explicit stack: deep programs cost no recursion.

>>> import io
>>> from rich.console import Console
>>> from cgraph_cli import grad
>>> r = grad("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3})
>>> out = io.StringIO()
>>> Console(file=out, width=70, color_system=None).print(graph_tree(r.graph, r.values, r.adjoints))
>>> print(out.getvalue().rstrip())
g = p × z = -12    ∂g/∂g = 1
├── p = x + y = 4    ∂g/∂p = -3
│   ├── x = 1  input    ∂g/∂x = -3
│   └── y = 3  input    ∂g/∂y = -3
└── z = -3  input    ∂g/∂z = 4
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from rich.tree import Tree

from ..ir import Graph
from ..names import node_names
from ..numfmt import format_number, format_value, is_tensor
from ..ops import CONST, INPUT, PREC_ATOM
from .source import combine


def graph_tree(
    graph: Graph,
    values: Sequence[float] | None = None,
    adjoints: Sequence[float] | None = None,
    output: int | None = None,
    precision: int | None = None,
) -> Tree:
    out = graph.output if output is None else output
    names = node_names(graph)
    who = names[out] if names[out].isidentifier() else "out"
    def fmt(x) -> str:
        if is_tensor(x):  # on one line; summarised when large
            return format_value(x, precision, rows="", shape=True)
        return format_number(x, precision)

    def line(i: int) -> Text:
        op = graph.ops[i]
        text = Text()
        text.append(names[i], style="bold")
        if op is INPUT:
            if values is not None:
                text.append(f" = {fmt(values[i])}")
            text.append("  input", style="dim")
        elif op is CONST:
            if graph.labels[i] is not None:
                text.append(f" = {fmt(graph.consts[i])}")
            text.append("  constant", style="dim")
        else:
            formula = combine(op, [(names[a], PREC_ATOM) for a in graph.args[i]], symbol=op.glyph,
                              params=graph.params.get(i, ()))[0]
            text.append(" = " + formula, style="cyan")
            if values is not None:
                text.append(f" = {fmt(values[i])}")
        if adjoints is not None and op is not CONST:
            g = adjoints[i]
            style = "dim" if is_tensor(g) else "green" if g > 0 else "red" if g < 0 else "dim"
            gap = "\n  " if is_tensor(g) else "    "  # a tensor's gradient on a line of its own
            text.append(f"{gap}∂{who}/∂{names[i]} = ", style="dim")
            text.append(fmt(g), style=style)
        return text

    root = Tree(line(out), guide_style="dim")
    drawn = {out}
    # Depth first, in reading order: a node is added when popped, so the first place a reader
    # meets it (top to bottom) is where it is drawn in full.
    stack = [(a, root) for a in reversed(graph.args[out])]
    while stack:
        node, parent = stack.pop()
        if node in drawn and graph.ops[node] is not CONST:
            parent.add(Text(f"↑ {names[node]}", style="dim"))
            continue
        drawn.add(node)
        branch = parent.add(line(node))
        stack.extend((a, branch) for a in reversed(graph.args[node]))
    return root
