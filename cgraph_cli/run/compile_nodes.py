"""Which nodes of a function's body the emitter (:mod:`.compile_emit`) treats apart: the
inputs no line would show, the comparisons NumPy takes as boolean masks, the values only
masked contributions read, and each node's last reader (when its variable is free again).

>>> from cgraph_cli import parse
>>> g = parse("y = where(x > 0, x, 0)")
>>> [g.ops[i].name for i in comparison_masks(g)], last_uses(g)  # (5: the end, read by none)
(['gt'], [5, 2, 4, 4, 5])
"""

from __future__ import annotations

from ..core.ir import MASK, Graph
from ..core.walks import last_readers
from .batch import absorbs, unread_inputs
from .compile_ifs import COMPARISONS


def unwatched_inputs(graph: Graph, variables) -> list[str]:
    """The inputs whose value, were it not finite, no result or checked line of the code
    would show: those that no op reads, and those that an op which may hide it reads (its
    other arguments are watched; an input's could only be, at every call)."""
    hiding = {a for i, op in enumerate(graph.ops) if absorbs(op) for a in graph.args[i]}
    unread = unread_inputs(graph, variables)
    return [n for n in variables if n in unread or graph.inputs.get(n) in hiding]


def comparison_masks(graph: Graph) -> set[int]:
    """The comparisons read only as the condition of ``where``: NumPy takes their boolean
    arrays as they are (no conversion to 0.0 and 1.0 and back). Not the named ones: a name
    is a value the module returns."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for i, args in enumerate(graph.args):
        for k, a in enumerate(args):
            readers.setdefault(a, []).append((i, k))
    named = set(graph.names.values()) | {graph.output}
    return {
        i
        for i, op in enumerate(graph.ops)
        if op.name in COMPARISONS
        and i not in named
        and readers.get(i)
        and all(graph.ops[j].name == "where" and k == 0 for j, k in readers[i])
    }


def masked_only(graph: Graph, returned: list[int] | None) -> set[int]:
    """The nodes computed only for what masked contributions (``where`` marked
    :data:`MASK`) read as their value: where the adjoint is 0 nothing of them is used, so the
    checked copy does not stop at them (a partial infinite there: ``sqrt`` at 0). From the
    last node to the first; the output, named and ``returned`` nodes are never such."""
    if MASK not in graph.params.values():
        return set()
    only: list[bool | None] = [None] * len(graph.ops)  # None: no reader yet
    for node in (graph.output, *graph.names.values(), *(returned or ())):
        only[node] = False
    masked = set()
    for r in range(len(graph.ops) - 1, -1, -1):
        mine = only[r] is True
        if mine:
            masked.add(r)
        mask = graph.params.get(r) == MASK
        for k, a in enumerate(graph.args[r]):
            ok = mine or (mask and k == 1)
            only[a] = ok if only[a] is None else (only[a] and ok)
    return masked


def last_uses(graph: Graph, laid: list[int] | None = None) -> list[int]:
    """For each node, the last node that reads it (the output and named nodes: the end),
    in the order ``laid`` when given (else the nodes' own)."""
    end = len(graph.ops)
    if laid is None:
        last = last_readers(graph)
    else:
        last = list(range(end))
        for i in laid:
            for a in graph.args[i]:
                last[a] = i
    for node in (graph.output, *graph.names.values(), *graph.inputs.values()):
        last[node] = end
    return last
