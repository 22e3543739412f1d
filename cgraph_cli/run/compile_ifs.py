"""Conditionals in a compiled module's code: which nodes of a function's body compute under
which guard (:mod:`cgraph_cli.passes.guards`: the branch not taken is never computed), the
order that computes each guard's conditions first, and the lines grouped under an ``if`` per
guard, for the Python targets (:mod:`cgraph_cli.run.compile_emit`) and the JavaScript one
(:mod:`cgraph_cli.run.compile_js`)."""

from __future__ import annotations

from ..core.ir import IF, Graph
from ..passes.guards import ALWAYS, WHERE, guard_text, has_selects, needs, order

#: The comparisons and their Python operators (a condition that is one is 0 or 1: finite).
COMPARISONS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def conditionals(graph: Graph, returned: list[int] | None, statements: set[str] | None):
    """For a graph with conditionals (marked selects): each node's guard, the order that
    computes the conditions first (:mod:`cgraph_cli.passes.guards`), and each condition
    that is not a comparison and each branch (checked where they are made: the interpreter
    stops at a condition before it takes a branch, at a branch before a result hides it),
    with the selects (which hide nothing: the branch not taken is not
    computed). The values computed in any case: the output, ``returned`` and the
    named ``statements`` (default: every named value). Else None, the nodes' own order and no nodes."""
    selects = [i for i, p in graph.params.items() if p == IF and graph.ops[i] is WHERE]
    if not selects:
        return None, range(len(graph.ops)), (set(), set())
    roots = {graph.output, *statement_nodes(graph, statements), *(returned or ())}
    guards = needs(graph, roots)
    tested = {  # conditions, and branches (a result sees a branch only where it is taken)
        a
        for s in selects
        for k, a in enumerate(graph.args[s])
        if graph.ops[a].arity and (k or graph.ops[a].name not in COMPARISONS)
    }
    return guards, order(graph, guards), (set(selects), tested)


def statement_nodes(graph: Graph, statements: set[str] | None) -> list[int]:
    """The nodes of the program's ``statements`` (by name; None: every named value)."""
    if statements is None:
        return list(graph.names.values())
    return [i for n, i in graph.names.items() if n in statements]


def grouped(graph, lines, spans, laid, guards, names, optional, holds="{0}") -> list[str]:
    """The lines of ``laid`` nodes, those of a node that a guard holds in an ``if`` of it
    (consecutive nodes under the same guard in one; an empty line is none); a node of
    ``optional`` set to None before its ``if`` (returned where it is not computed).
    ``holds``: the test that a condition (``{0}``) holds."""
    ends = [hi for _, hi in spans.values()]
    out = lines[: min((lo for lo, _ in spans.values()), default=len(lines))]
    current = None
    for i in laid:
        if i not in spans:
            continue
        lo, hi = spans[i]
        guard = guards[i]
        block = [line for line in lines[lo:hi] if line]  # ("": a node with no line here)
        if guard == ALWAYS or not guard:
            out += block
            current = None
            continue
        if i in optional:
            out.append(f"    {names[i]} = None")
            current = None
        if not block:
            continue
        test = guard_text(graph, guard, names, holds, "not " + holds)
        if test != current:
            out.append(f"    if {test}:")
            current = test
        out += ["    " + line for line in block]
    out += lines[max(ends, default=len(lines)) :]
    return out


class Atoms:
    """The writer's atoms by node, as a list would give them (for a guard's text)."""

    def __init__(self, writer) -> None:  # a compile_js writer
        self.writer = writer

    def __getitem__(self, j: int) -> str:
        return self.writer.atom(j)


def js_guards(graph: Graph, derived: Graph, adjoints: list):
    """Each node's guard (a program with if/else) and the order that computes the
    conditions first, over the forward program and the backward pass built after it; no
    guards and the nodes' order else. Computed in any case: the output, the statements and
    every adjoint (the results list them)."""
    if not has_selects(graph):
        return None, range(len(derived.ops))
    roots = [graph.output, *graph.names.values(), *(a for a in adjoints if a.__class__ is int)]
    guards = needs(derived, roots)
    return guards, order(derived, guards)
