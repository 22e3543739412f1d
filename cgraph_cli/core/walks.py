"""Sweeps over a graph's columns and the names they hold: which nodes lead to a node, which
depend on an input, which node reads each one last; a fresh name; an index as written.

They read a graph through :class:`GraphLike`, what every graph has, rather than the
:class:`~cgraph_cli.core.ir.Graph` class: the printer (:mod:`cgraph_cli.parse.unparse`) uses
them too, and a graph's repr prints through it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from .ops import INPUT, OpSpec


class GraphLike(Protocol):
    """A graph as columns indexed by node id, and its statements (see
    :class:`~cgraph_cli.core.ir.Graph`, which is one)."""

    @property
    def ops(self) -> Sequence[OpSpec]: ...
    @property
    def args(self) -> Sequence[tuple[int, ...]]: ...
    @property
    def labels(self) -> Sequence[str | None]: ...
    @property
    def consts(self) -> Mapping[int, Any]: ...
    @property
    def params(self) -> Mapping[int, tuple]: ...
    @property
    def inputs(self) -> Mapping[str, int]: ...
    @property
    def defaults(self) -> Mapping[str, Any]: ...
    @property
    def stmt_names(self) -> Sequence[str]: ...
    def statements(self) -> Iterator[tuple[str, str, int, int]]: ...


def show_subscript(item) -> str:
    """An index as written: ``1``, ``:``, ``1:3``, ``::2``."""
    if not isinstance(item, slice):
        return str(item)
    parts = ["" if p is None else str(p) for p in (item.start, item.stop, item.step)]
    return ":".join(parts[:2] if item.step is None else parts)


def last_readers(graph: GraphLike) -> list[int]:
    """For each node, the last node that reads it (-1: none does).

    >>> from cgraph_cli import parse
    >>> last_readers(parse("p = x + y; g = p * z"))
    [2, 2, 4, 4, -1]
    """
    last = [-1] * len(graph.ops)
    for i, args in enumerate(graph.args):
        for a in args:
            last[a] = i
    return last


def fresh(name: str, taken: set[str], first: int = 1, counts: dict[str, int] | None = None) -> str:
    """``name``, or else ``name_<first>``, ``name_<first + 1>``...: the first that is not in
    ``taken`` (then added to it). ``counts`` remembers where each name's numbering got to, so
    that a name asked for again and again costs no search from the start.

    >>> taken = {"x", "x_2"}
    >>> fresh("x", taken, first=2), fresh("y", taken), sorted(taken)
    ('x_3', 'y', ['x', 'x_2', 'x_3', 'y'])
    """
    k = (first - 1) if counts is None else counts.get(name, first - 1)
    var = name
    while var in taken:
        k += 1
        var = f"{name}_{k}"
    if counts is not None:
        counts[name] = k
    taken.add(var)
    return var


def ancestors(graph: GraphLike, node: int) -> list[bool]:
    """Which nodes lead to ``node`` (itself included), by one backwards sweep.

    >>> from cgraph_cli import parse
    >>> ancestors(parse("a = x + 1; b = y * 2"), 2)
    [True, True, True, False, False, False]
    """
    keep = [False] * len(graph.ops)
    keep[node] = True
    for i in range(node, -1, -1):
        if keep[i]:
            for a in graph.args[i]:
                keep[a] = True
    return keep


def depends_on_input(graph: GraphLike) -> list[bool]:
    """Which nodes depend on an input through ops that have derivatives: only they have
    gradients (a comparison's value is a constant to differentiation: 0 or 1).

    >>> from cgraph_cli import parse
    >>> depends_on_input(parse("y = abs(1) * x + (x > 0)"))
    [False, False, True, True, False, False, True]
    """
    depends: list[bool] = []
    add = depends.append
    for op, args in zip(graph.ops, graph.args):
        if op is INPUT:
            add(True)
        elif not op.differentiable:
            add(False)
        elif len(args) == 2:  # most ops: no generator for any()
            add(depends[args[0]] or depends[args[1]])
        elif len(args) == 1:
            add(depends[args[0]])
        else:
            add(any([depends[a] for a in args]))
    return depends
