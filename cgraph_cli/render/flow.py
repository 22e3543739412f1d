"""Control flow in the static graph's diagram: a frame around each loop's body (its header and
its number of steps on the frame) with a dashed back edge for each value carried to the next
step, and frames around the two branches of each conditional.

Frames nest as the program does; they are written as DOT text with an explicit stack (no
recursion). Used by :func:`cgraph_cli.render.dot.diagram` when ``graph.control`` is a
:class:`cgraph_cli.core.ir_control.Static`.
"""

from __future__ import annotations

import html

from ..core.ir import Graph
from ..core.ops import INPUT


def frames(graph: Graph, shown: list[bool]) -> list[tuple[str, str, set[int]]]:
    """``(kind, label, nodes)`` per frame: ``"loop"`` for a loop's body (its variable too),
    ``"then"`` and ``"else"`` for a conditional's branches (the nodes made for each branch's
    text alone: not its inputs, not values named before)."""
    flow = graph.control
    out: list[tuple[str, str, set[int]]] = []
    for loop in flow.loops:
        body = {i for i in range(loop.lo, loop.hi) if shown[i]}  # the variable's node too
        label = f"for {loop.var} in range({loop.bound})   {loop.trips}"
        out.append(("loop", label, body))
    for node, (cstart, cend) in flow.conds.items():
        condition = " ".join(graph.source.text[cstart:cend].split())
        for kind, arg, label in (
            ("then", graph.args[node][1], f"if {condition}"),
            ("else", graph.args[node][2], "else"),
        ):
            # the branch's own text, within the conditional's: a branch that is a name made
            # earlier (`y if y < 5 else -y`) has a span elsewhere, and no nodes of its own
            start = max(graph.starts[arg], graph.starts[node])
            end = min(graph.ends[arg], graph.ends[node])
            inside = {
                i
                for i in range(node)
                if shown[i]
                and graph.ops[i] is not INPUT
                and start <= graph.starts[i]
                and graph.ends[i] <= end
                and graph.labels[i] is None
            }
            if inside:
                out.append((kind, label, inside))
    return out


def add_frames(dot, graph: Graph, shown: list[bool], prefix: str, theme) -> None:
    """Add the frames and back edges of ``graph``'s control flow to ``dot``."""
    found = frames(graph, shown)
    if not found:
        return
    # Each frame inside the smallest frame that holds all its nodes; the rest at the top.
    order = sorted(range(len(found)), key=lambda k: -len(found[k][2]))
    parent: dict[int, int] = {}
    for pos, k in enumerate(order):
        for j in reversed(order[:pos]):
            if found[k][2] <= found[j][2]:
                parent[k] = j
                break
    children: dict[int, list[int]] = {}
    for k in order:
        children.setdefault(parent.get(k, -1), []).append(k)
    lines: list[str] = []
    stack: list[tuple[int, bool]] = [(k, False) for k in reversed(children.get(-1, []))]
    while stack:
        k, closing = stack.pop()
        if closing:
            lines.append("\t}")
            continue
        kind, label, nodes = found[k]
        own = nodes - set().union(*(found[c][2] for c in children.get(k, [])))
        style = "rounded,dashed" if kind != "loop" else "rounded"
        color = theme.output if kind == "loop" else theme.muted
        lines += [
            f"\tsubgraph cluster_{kind}_{k} {{",
            f'\t\tlabel=<<b>{html.escape(label)}</b>> labeljust="l" fontsize="11"',
            f'\t\tstyle="{style}" color="{color}" fontcolor="{color}" penwidth="1.2"',
            *(f"\t\t{prefix}{i}" for i in sorted(own)),
        ]
        stack.append((k, True))
        stack.extend((c, False) for c in reversed(children.get(k, [])))
    dot.body.extend(line + "\n" for line in lines)
    for loop in graph.control.loops:
        for last, before, name in loop.back:
            if shown[last] and shown[before]:
                dot.edge(
                    f"{prefix}{last}",
                    f"{prefix}{before}",
                    label=f"{name}: next step ({loop.trips})",
                    style="dashed",
                    color=theme.output,
                    fontcolor=theme.output,
                    constraint="false",
                )
