"""Groups of nodes: what each call of a function made, and each step of a loop as it ran
(``graph.groups``).

The graph the passes read stays flat: a call of ``layer`` stands for its body, inlined. Each
call leaves a :class:`Group` behind, for the views (a folded box ``layer(h, W2, b2)``), for
error messages (``in layer(h, W2, b2) called at model.cg:6:5``) and for the derived graphs
(the backward pass of ``layer#2`` is the group ``∂ layer#2``). A group holds the nodes
``lo`` to ``hi - 1``, its nested calls' included; where a graph is not built call by call (a
derived graph), ``graph.memo["group_of"]`` gives each node's innermost group instead.

>>> from cgraph_cli import parse
>>> g = parse("def sq(u):\\n    return u * u\\ny = sq(x) + sq(2)")
>>> [(grp.key, grp.label) for grp in g.groups]
[('sq#1', 'sq(x)'), ('sq#2', 'sq(2)')]
>>> group_of(g)
[-1, 0, -1, 1, -1]
"""

from __future__ import annotations

from typing import NamedTuple

from .errors import Source, line_col


class Group(NamedTuple):
    """One call of a function (kind "call"), or one step of a loop in the graph that ran (kind
    "step", name "for", the loop's header as its label): its name, which call of it this is
    (1 for the first; a loop: which loop of the program), the
    enclosing group (an index into ``graph.groups``, -1 at the top), the call as written, its
    span, its argument nodes, the node it returns, and the nodes it made (``lo`` to ``hi``)."""

    kind: str
    name: str
    number: int
    parent: int
    label: str
    start: int
    end: int
    args: tuple[int, ...]
    output: int
    lo: int
    hi: int
    step: str = ""  # a loop's step: its variable and number, ``t=3``

    @property
    def key(self) -> str:
        """``layer#2``: the second call of ``layer`` in the program; ``for#1[t=3]``: a step of
        the program's first loop, as it ran."""
        return f"{self.name}#{self.number}" + (f"[{self.step}]" if self.step else "")


def group_of(graph) -> list[int]:
    """The innermost group of every node (an index into ``graph.groups``), -1 for a node of
    the program's top level. Linear in nodes times the depth of nesting."""
    found = graph.memo.get("group_of")
    if found is not None:
        return found
    out = [-1] * len(graph.ops)
    for k, grp in enumerate(graph.groups):  # a parent comes before its children
        out[grp.lo : grp.hi] = [k] * (grp.hi - grp.lo)
    graph.memo["group_of"] = out
    return out


def path(graph, k: int) -> str:
    """The path of group ``k``: ``layer#2/``, nested ``block#1/layer#2/``; ``""`` for -1.

    >>> from cgraph_cli import parse
    >>> g = parse("def f(u):\\n    return u + 1\\ndef h(u):\\n    return f(u) * 2\\ny = h(x)")
    >>> path(g, 1)
    'h#1/f#1/'
    """
    keys = []
    while k >= 0:
        grp = graph.groups[k]
        keys.append(grp.key)
        k = grp.parent
    return "".join(f"{key}/" for key in reversed(keys))


def chain(graph, k: int) -> list[Group]:
    """Group ``k`` and the groups around it, innermost first."""
    out = []
    while k >= 0:
        out.append(graph.groups[k])
        k = graph.groups[k].parent
    return out


def called_at(graph, node: int) -> str:
    """Where the node was made, as an error message's tail: `` in layer(h, W2, b2) called at
    model.cg:6:5`` (each enclosing call, innermost first); ``""`` at the top level."""
    if not graph.groups or node < 0 or node >= len(graph.ops):
        return ""
    k = group_of(graph)[node]
    return "".join(_at(graph.source, grp) for grp in chain(graph, k))


def _at(source: Source, grp: Group) -> str:
    if grp.kind == "module":  # a module of an imported model: no call in the text
        return f" in the model's module {grp.label}"
    line, col = line_col(source.text, grp.start)
    return f" in {grp.label} called at {source.filename}:{line}:{col}"
