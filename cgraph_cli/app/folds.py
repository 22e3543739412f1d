"""Which nodes a folded drawing draws as one box: each call of a function (a group of the
IR, :mod:`cgraph_cli.core.groups`) or each step of a loop, unless opened.

The plan says, for every node that a box stands for, which box; the renderer draws the box
with the value and gradient of the node the call returns, and the edges between boxes and
the nodes left open. Three rules, as TensorBoard draws name scopes and torchview repeated
blocks:

- ``depth`` levels are drawn, the program's own being the first: a call deeper is folded
  (``depth`` 1: every call; 2: the calls inside the top-level ones), unless ``expand`` names
  it (``layer#2``),
  its function (``layer``) or its loop (``for#1``);
- an input that only one box's nodes read (a layer's weights and bias) is drawn inside it;
- calls of one function in a chain (each reads the one before's result) with the same other
  arguments, and the steps of one loop, are drawn once, "× N" (an RNN's step).

>>> from cgraph_cli import parse
>>> g = parse("def layer(x, W, b):\\n    return tanh(W @ x + b)\\nh = layer(x, W1, b1)\\n"
...           "y = layer(h, W2, b2)")
>>> plan = fold_plan(g)
>>> [(box.label, box.holds) for box in plan.boxes]
[('layer(x, W1, b1)', ('W1', 'b1')), ('layer(h, W2, b2)', ('W2', 'b2'))]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core.errors import UsageError
from ..core.groups import Group, group_of
from ..core.ir import Graph
from ..core.ops import CONST, INPUT


@dataclass(frozen=True)
class Box:
    """One folded box: the groups it stands for (keys), its text, the node whose value and
    gradient it shows, the inputs drawn inside it, and how many calls or steps it rolls up."""

    keys: tuple[str, ...]
    label: str
    output: int
    holds: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class Fold:
    """A folded drawing's plan: ``rep`` maps each node a box stands for to its box."""

    boxes: list[Box] = field(default_factory=list)
    rep: dict[int, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.boxes)


def levels(graph: Graph) -> list[int]:
    """Each group's depth: 0 for a call at the top level, 1 inside one..."""
    out: list[int] = []
    for grp in graph.groups:  # a parent comes first
        out.append(0 if grp.parent < 0 else out[grp.parent] + 1)
    return out


def check_expand(graph: Graph, expand: Iterable[str]) -> None:
    """A :class:`UsageError` for an ``--expand`` that names no group of the program."""
    known = {n for grp in graph.groups for n in _names(grp)}
    for name in expand:
        if name not in known:
            shown = sorted({grp.name for grp in graph.groups} | {grp.key for grp in graph.groups})
            raise UsageError(
                f"--expand {name}: the program has no call or loop of that name",
                hints=["groups: " + (", ".join(shown[:20]) if shown else "none (no def, no loop)")],
            )


def _names(grp: Group) -> tuple[str, ...]:
    base = f"{grp.name}#{grp.number}"
    return (grp.name, base, grp.key)


def folded_calls(graph: Graph, depth: int = 1, expand: Iterable[str] = ()) -> dict[int, int]:
    """Each node a folded call made (its nested calls' nodes included), mapped to that call
    (an index into ``graph.groups``): the calls below the first ``depth`` levels that
    ``expand`` does not open. Loop steps are not folded here."""
    if not graph.groups:
        return {}
    return _node_heads(graph, _heads(graph, depth, expand, calls_only=True))


def _heads(graph: Graph, depth: int, expand: Iterable[str], calls_only: bool) -> list[int]:
    """The outermost groups drawn folded, in order: below the first ``depth`` levels (the
    program's own the first), not opened by ``expand``; the groups inside one are not."""
    opened = set(expand)
    level = levels(graph)
    heads: list[int] = []
    closed: set[int] = set()  # folded groups and everything inside them
    for k, grp in enumerate(graph.groups):  # a parent comes before its children
        if grp.parent in closed:
            closed.add(k)
        elif (
            (grp.kind == "call" or not calls_only)
            and level[k] >= depth - 1
            and not opened.intersection(_names(grp))
        ):
            heads.append(k)
            closed.add(k)
    return heads


def _node_heads(graph: Graph, heads: list[int]) -> dict[int, int]:
    """Each node inside a folded group, mapped to the folded group that holds it."""
    chosen = set(heads)
    top: list[int] = []  # per group: the folded group holding it, or -1
    for k, grp in enumerate(graph.groups):  # a parent's entry is made before its children's
        top.append(k if k in chosen else top[grp.parent] if grp.parent >= 0 else -1)
    return {i: top[k] for i, k in enumerate(group_of(graph)) if k >= 0 and top[k] >= 0}


def fold_plan(
    graph: Graph,
    shown: list[bool] | None = None,
    *,
    depth: int = 1,
    expand: Iterable[str] = (),
) -> Fold:
    """The boxes of ``graph`` drawn folded (see the module's docstring); ``shown``: the nodes
    drawn at all (default: every node)."""
    groups = graph.groups
    if not groups:
        return Fold()
    n = len(graph.ops)
    shown = shown if shown is not None else [True] * n
    folded = _heads(graph, depth, expand, calls_only=False)
    runs = _chains(graph, folded)
    members = group_of(graph)
    box_of = {k: b for b, run in enumerate(runs) for k in run}
    rep = {i: box_of[k] for i, k in _node_heads(graph, folded).items() if shown[i]}
    flowing = {groups[run[0]].args[0] for run in runs if groups[run[0]].args}
    flowing |= {
        graph.args[i][0]
        for i in rep
        if graph.ops[i].name == "index" and groups[members[i]].kind == "step"
    }
    holds = _held_inputs(graph, shown, rep, flowing)
    boxes = []
    for b, run in enumerate(runs):
        first, last = groups[run[0]], groups[run[-1]]
        label = first.label if len(run) == 1 else f"{first.label} × {len(run)}"
        names = tuple(str(graph.labels[i]) for i in holds.get(b, ()) if graph.labels[i])
        boxes.append(Box(tuple(groups[k].key for k in run), label, last.output, names, len(run)))
        for i in holds.get(b, ()):
            rep[i] = b
    return Fold(boxes, rep)


def _chains(graph: Graph, folded: list[int]) -> list[list[int]]:
    """The folded groups in runs: consecutive siblings of one function in a chain with the
    same other arguments, or consecutive steps of one loop, make one run."""
    runs: list[list[int]] = []
    for k in folded:
        grp = graph.groups[k]
        if runs:
            prev = graph.groups[runs[-1][-1]]
            if _continues(prev, grp):
                runs[-1].append(k)
                continue
        runs.append([k])
    return runs


def _continues(prev: Group, grp: Group) -> bool:
    if (prev.kind, prev.name, prev.parent) != (grp.kind, grp.name, grp.parent):
        return False
    if grp.kind == "step":
        return prev.number == grp.number and prev.hi == grp.lo
    if prev.output not in grp.args:
        return False
    chained = grp.args.index(prev.output)
    return all(a == b for j, (a, b) in enumerate(zip(prev.args, grp.args)) if j != chained)


def _held_inputs(
    graph: Graph, shown: list[bool], rep: dict[int, int], flowing: set[int]
) -> dict[int, list[int]]:
    """Per box, the inputs (and unnamed constants) read only by the nodes it stands for: its
    weights; not the data that flows through it (``flowing``: a call's first argument, a
    sequence a loop indexes)."""
    readers: dict[int, set[int]] = {}
    outside: set[int] = set()
    for i, args in enumerate(graph.args):
        if not shown[i]:
            continue
        for a in args:
            op = graph.ops[a]
            if op is INPUT or (op is CONST and graph.labels[a] is None and a not in rep):
                if i in rep and a not in flowing:
                    readers.setdefault(a, set()).add(rep[i])
                else:
                    outside.add(a)
    held: dict[int, list[int]] = {}
    for a, boxes in readers.items():
        if len(boxes) == 1 and a not in outside and a != graph.output and a not in rep:
            held.setdefault(next(iter(boxes)), []).append(a)
    return held


@dataclass(frozen=True)
class BandBox:
    """One folded box of the derivative band: the backward code of a call (``∂ layer(h, W2,
    b2)``), the box of the forward drawing it stands under, and the statements it shows:
    the gradients the call's inputs receive (``dloss_dh``, ``dloss_dW2``), as
    ``(name, program node)``."""

    label: str
    under: int
    shows: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class BandFold:
    """The derivative band folded as the forward drawing is (``render --derivative
    --collapse``): its boxes, and the box each derivative node stands in."""

    boxes: list[BandBox] = field(default_factory=list)
    rep: dict[int, int] = field(default_factory=dict)
    # constants of the backward code that only boxes read (several): not drawn
    hidden: set[int] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.boxes)


def band_fold(graph: Graph, view, plan: Fold) -> BandFold:
    """The boxes of ``view``'s derivative band (a ``DerivativeView``) for the forward
    drawing's ``plan``: the backward code of each folded call (the derived graph's group
    ``∂ layer#2``) in one box under the call's box; a statement is shown in the box when it
    is the gradient of an input of the call (drawn outside the call's box, or held in it).

    >>> from cgraph_cli import parse
    >>> from cgraph_cli.app.diagrams import derivative_view
    >>> g = parse(open("samples/layers.cg").read())
    >>> band = band_fold(g, derivative_view(g)[0], fold_plan(g))
    >>> [(box.label, [name for name, _ in box.shows]) for box in band.boxes][1:]
    [('∂ layer(h, W2, b2)', ['dloss_db2', 'dloss_dW2', 'dloss_dh']), ('∂ mse(y, t)', ['dloss_dy', 'dloss_dt'])]
    """
    program = view.program
    if not plan or not program.groups:
        return BandFold()
    forward_box = {key: b for b, box in enumerate(plan.boxes) for key in box.keys}
    groups = program.groups

    def under(k: int) -> int | None:  # the forward box of the folded call group k is in
        while k >= 0:
            grp = groups[k]
            found = forward_box.get(grp.key.removeprefix("∂ ")) if grp.kind == "grad" else None
            if found is not None:
                return found
            k = grp.parent
        return None

    members = group_of(program)
    boxed = {k: under(k) for k in set(members[view.first_node :]) if k >= 0}
    opened = sorted({b for b in boxed.values() if b is not None})
    index = {b: n for n, b in enumerate(opened)}
    rep = {
        i: index[b]
        for i in range(view.first_node, len(program.ops))
        if (b := boxed.get(members[i])) is not None and program.ops[i] is not CONST
    }
    readers: dict[int, set[int]] = {}  # a constant is in the box that alone reads it
    for i in range(view.first_node, len(program.ops)):
        for a in program.args[i]:
            if a >= view.first_node and program.ops[a] is CONST:
                readers.setdefault(a, set()).add(rep.get(i, -1))
    hidden = {a for a, r in readers.items() if -1 not in r}  # backward code's own numbers
    rep.update({a: min(r) for a, r in readers.items() if len(r) == 1 and -1 not in r})
    shows: dict[int, list[tuple[str, int]]] = {}
    for name, node, target in view.statements:
        n = rep.get(node)
        if n is None or target is None:
            continue
        if plan.rep.get(target) != opened[n] or graph.ops[target] is INPUT:
            shows.setdefault(n, []).append((name, node))
    boxes = [
        BandBox(f"∂ {plan.boxes[b].label}", b, tuple(shows.get(n, ())))
        for n, b in enumerate(opened)
    ]
    return BandFold(boxes, rep, hidden - set(rep))


def statement_groups(graph: Graph) -> Graph | None:
    """The program with each statement that makes two nodes or more as a group of its own
    (kind "statement", labelled with the statement as written), for a drawing that must fold
    to be read and has no call or loop step to fold; None where no statement has two nodes,
    or the program has calls, loops or conditionals of its own. The graph is shared, only its
    groups differ.

    >>> from cgraph_cli import parse
    >>> g = statement_groups(parse("p = x + y\\nc = 2 * p + 1\\nc += c * c"))
    >>> [grp.label for grp in g.groups]
    ['c = 2 * p + 1', 'c += c * c']
    """
    import copy
    import re

    if graph.groups or graph.control is not None:
        return None
    groups: list[Group] = []
    inner = [-1] * len(graph.ops)
    start = 0
    for kind, name, node, count in graph.statements():
        members = [i for i in range(start, count) if graph.ops[i] is not INPUT]
        start = count
        if kind == "input" or len(members) < 2 or node not in members:
            continue
        text = graph.text(node)
        label = text if re.match(rf"{re.escape(name)}\s*\S+=", text) else f"{name} = {text}"
        for i in members:
            inner[i] = len(groups)
        groups.append(
            Group(
                "statement",
                "line",
                len(groups) + 1,
                -1,
                label,
                graph.starts[node],
                graph.ends[node],
                (),
                node,
                members[0],
                members[-1] + 1,
            )  # fmt: skip
        )
    if not groups:
        return None
    folded = copy.copy(graph)
    folded.groups = groups
    folded.memo = {**graph.memo, "group_of": inner}
    return folded
