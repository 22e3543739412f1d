"""The graph as a tree in the terminal, from the output down to the inputs.

A node read in several places is drawn once, in full, and referred to afterwards as
``↑ name``. Built with an explicit stack: deep programs cost no recursion. The tree stops
``depth`` levels below its root, with a line saying how many levels are left and which name to
continue from (``--of``): a terminal cannot show more, and drawing a deep tree costs its depth
on every line.

>>> import io
>>> from rich.console import Console
>>> from cgraph_cli import grad
>>> r = grad("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3})
>>> out = io.StringIO()
>>> Console(file=out, width=70, color_system=None).print(graph_tree(r.graph, r.values, r.adjoints))
>>> print(out.getvalue().rstrip())
g = p * z = -12    ∂g/∂g = 1
├── p = x + y = 4    ∂g/∂p = -3
│   ├── x = 1  input    ∂g/∂x = -3
│   └── y = 3  input    ∂g/∂y = -3
└── z = -3  input    ∂g/∂z = 4
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from rich.tree import Tree

from ..core.ir import Graph
from ..core.names import program_names
from ..core.numfmt import format_number, format_value, is_tensor
from ..core.ops import CONST, INPUT, PREC_ATOM
from ..parse.unparse import combine

#: Levels drawn below the root before the tree is cut (``cgraph show --depth``).
DEPTH = 40
MAX_DEPTH = 1000  # a line 4,000 columns wide
#: Columns each level indents, and the room a label gets before it wraps.
GUIDE, LABEL = 4, 40


def graph_tree(
    graph: Graph,
    values: Sequence[float] | None = None,
    adjoints: Sequence[float] | None = None,
    output: int | None = None,
    precision: int | None = None,
    depth: int = DEPTH,
) -> Tree:
    """The tree of ``output`` (default: the graph's), ``depth`` levels deep at the most."""
    out = graph.output if output is None else output
    names = program_names(graph)  # c_2, not c₂: a line pasted back parses
    who = names[out] if names[out].isidentifier() else "out"

    def fmt(x) -> str:
        if is_tensor(x):  # on one line; summarised when large
            return format_value(x, precision, rows="", shape=True)
        return format_number(x, precision)

    def line(i: int, params: dict | None = None) -> Text:
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
            formula = combine(
                op,
                [((params or {}).get(a, names[a]), PREC_ATOM) for a in graph.args[i]],
                # the language's own symbols (-, *): a line pasted back parses
                params=graph.params.get(i, ()),
            )[0]
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

    calls = _calls(graph)

    def call_line(i: int, grp) -> Text:
        text = Text()
        text.append(names[i], style="bold")
        text.append(f" = {grp.label}", style="cyan")
        if values is not None:
            text.append(f" = {fmt(values[i])}")
        text.append("  call", style="dim")
        return text

    def body(i: int, grp, branch: Tree, level: int, anchor):
        """The call's body under it (its own nodes, down to its parameters), then the call's
        arguments, as any node's arguments."""
        inside = branch.add(Text(f"in {grp.name}:", style="dim"))
        params = dict(zip(grp.args, _parameters(graph, grp)))
        return [(i, inside, level, anchor, grp, params)] + [
            (a, branch, level + 1, anchor, None, None) for a in grp.args
        ]

    top = calls.get(out)
    root = Tree(call_line(out, top) if top else line(out), guide_style="dim")
    drawn = {out}
    named = graph.named_nodes()
    heights: list[int] | None = None
    # Depth first, in reading order: a node is added when popped, so the first place a reader
    # meets it (top to bottom) is where it is drawn in full. `anchor` is the deepest node on
    # the way down that --of can name (a reassigned name's older node it cannot). A call's
    # result is drawn as the call, its body indented under it (`within`: the call whose body
    # is being drawn, whose nodes stop at its parameters).
    stack: list = (
        list(reversed(body(out, top, root, 1, None)))
        if top
        else [(a, root, 1, None, None, None) for a in reversed(graph.args[out])]
    )
    while stack:
        node, parent, level, anchor, within, params = stack.pop()
        if within is not None and node in params:  # a parameter: the argument, by name
            parent.add(Text(f"{params[node]} ← {names[node]}", style="dim"))
            continue
        if within is not None and node == within.output and parent.label.plain.startswith("in "):
            branch = parent.add(line(node, params))  # the body's result: its formula
            stack.extend(
                (a, branch, level + 1, anchor, within, params) for a in reversed(graph.args[node])
            )
            continue
        if node in drawn and graph.ops[node] is not CONST:
            parent.add(Text(f"↑ {names[node]}", style="dim"))
            continue
        drawn.add(node)
        grp = calls.get(node)
        if grp is not None:  # the call, folded (its body not drawn) past the depth
            branch = parent.add(call_line(node, grp))
            if level < depth:
                stack.extend(reversed(body(node, grp, branch, level + 1, anchor)))
            else:
                branch.add(
                    Text(
                        f"… its body and arguments: draw more with --depth {depth + 1}", style="dim"
                    )
                )
            continue
        branch = parent.add(line(node, params))
        if named.get(names[node]) == node:
            anchor = node
        if level < depth:
            stack.extend(
                (a, branch, level + 1, anchor, within, params) for a in reversed(graph.args[node])
            )
        elif graph.args[node]:
            if heights is None:
                heights = _heights(graph, out)
            branch.add(_cut(heights[node], depth, None if anchor is None else names[anchor]))
    return root


def _calls(graph: Graph) -> dict:
    """The calls of functions by the node each returns (a node made by the call)."""
    return {
        grp.output: grp
        for grp in graph.groups
        if grp.kind == "call" and grp.lo <= grp.output < grp.hi
    }


def _parameters(graph: Graph, grp) -> list[str]:
    """The parameters of the function ``grp`` calls, in order (``?`` where unknown)."""
    found = graph.functions.get(grp.name)
    return list(found[0]) if found else ["?"] * len(grp.args)


def _heights(graph: Graph, last: int) -> list[int]:
    """Levels below each node up to ``last`` (0 for inputs and constants), in one pass."""
    heights = [0] * (last + 1)
    for i in range(last + 1):
        if graph.args[i]:
            heights[i] = 1 + max(heights[a] for a in graph.args[i])
    return heights


class Cut(Text):
    """The line where a tree stops: how many levels are left, and how to see them."""


def _cut(levels: int, depth: int, name: str | None) -> Cut:
    more = f"… {levels:,} more level{'' if levels == 1 else 's'}"
    if name is not None:
        return Cut(f"{more}: continue with --of {name}", style="yellow")
    return Cut(f"{more}: draw more with --depth {min(depth + levels, MAX_DEPTH)}", style="yellow")


def tree_width(tree: Tree) -> int:
    """The columns ``tree`` needs so that each label has room (up to ``LABEL`` columns) and the
    line where it stops is whole: rich drops the labels of a tree wider than its console.

    >>> t = Tree("a"); _ = t.add("b").add("some text")
    >>> tree_width(t)
    17
    """
    need, stack = 0, [(tree, 0)]
    while stack:
        node, level = stack.pop()
        label = node.label
        text = label.plain if isinstance(label, Text) else str(label)
        wide = max(cell_len(line) for line in text.split("\n"))
        need = max(need, GUIDE * level + (wide if isinstance(label, Cut) else min(wide, LABEL)))
        stack.extend((child, level + 1) for child in node.children)
    return need
