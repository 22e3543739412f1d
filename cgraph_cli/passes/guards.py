"""Conditionals compiled: ``a if c else b`` as a Python (or JavaScript) ``if``, so that the
branch not taken is never computed, forward or backward, as in the graph that runs.

The static graph holds a conditional as a select node ``where(c, a, b)`` over both branches
(:class:`~cgraph_cli.core.ir_control.Static`). :func:`marked` copies it with each select
marked (its params :data:`IF`), a straight-line graph every pass takes: the derivative
program keeps the marks, the optimizer too (a marked select is never rewritten into an
unmarked one). :func:`needs` finds, for each node of such a graph, when its value is needed:
always, or only where some conditions hold (a guard: paths of ``(condition, holds)`` tests from
the outside in). :func:`order` lays the nodes out so that every condition a guard tests comes
before the nodes it guards. The derivative program wraps what a node passes back in the
guard of that node (:func:`wrap`), so that the backward pass of a branch not taken is never
computed either: its adjoint is 0 without a line run.

>>> from cgraph_cli import parse
>>> g = marked(parse("y = log(x) if x > 0 else 0"))
>>> [(g.ops[i].name, sorted(guard) if guard is not ALWAYS else "always")
...  for i, guard in enumerate(needs(g, [g.output]))]
[('input', 'always'), ('log', [((3, True),)]), ('const', 'always'), ('gt', 'always'), ('const', [((3, False),)]), ('where', 'always')]
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Iterable

from ..core.errors import UsageError
from ..core.ir import IF, Graph
from ..core.ir_control import Static
from ..core.ops import OPS

WHERE = OPS["where"]

Path = tuple[tuple[int, bool], ...]  # (a condition's node, whether it holds), outside in
Guard = frozenset  # of paths: needed where one of them holds
ALWAYS: Guard = frozenset({()})
NEVER: Guard = frozenset()
#: The most paths one guard may hold (a value read in many branches of many conditionals).
MAX_PATHS = 64


def marked(graph: Graph) -> Graph:
    """``graph`` (a static graph with conditionals) with its selects marked :data:`IF`: a
    straight-line graph where it has no loop (else its loops kept); the graph itself when it
    has no conditional."""
    control = graph.control
    if not isinstance(control, Static) or not control.conds:
        return graph
    out = copy.copy(graph)
    out.params = dict(graph.params)
    for node in control.conds:
        out.params[node] = IF
    out.control = control if control.loops else None
    out.memo = {}
    return out


def is_select(graph: Graph, i: int) -> bool:
    """Whether node ``i`` is a marked select (``a if c else b``)."""
    return graph.ops[i] is WHERE and graph.params.get(i) == IF


def has_selects(graph: Graph) -> bool:
    """Whether ``graph`` has a marked select."""
    return any(p == IF for p in graph.params.values())


def _absorbed(paths: Iterable[Path]) -> Guard:
    """The paths without those that need all another needs and more (``c`` holds covers
    ``c and d``)."""
    kept: list[Path] = []
    for path in sorted(set(paths), key=len):
        if not any(set(k) <= set(path) for k in kept):
            kept.append(path)
    return frozenset(kept)


def _extended(guard: Guard, test: tuple[int, bool]) -> Guard:
    """``guard``'s paths, each with ``test`` (a condition and whether it holds) after it: once
    (a path that tests it already the same way keeps it), and none that needs a condition to
    hold and not to; absorbed as :func:`_absorbed` says."""
    c, side = test
    out = []
    for path in guard:
        if (c, not side) in path:
            continue
        out.append(path if test in path else path + (test,))
    return _absorbed(out)


def needs(graph: Graph, roots: Iterable[int]) -> list[Guard]:
    """Each node's guard: :data:`ALWAYS`, or the paths of choices under which some root (a
    value the function computes in any case) reads it; :data:`NEVER` for a node no root
    reads. From the last node to the first, no recursion."""
    guards: list[Guard] = [NEVER] * len(graph.ops)
    for r in roots:
        guards[r] = ALWAYS

    def join(a: int, guard: Guard) -> None:
        have = guards[a]
        if have is ALWAYS or not guard:
            return
        if guard is ALWAYS or () in guard:
            guards[a] = ALWAYS
            return
        joined = _absorbed(have | guard) if have else guard
        if len(joined) > MAX_PATHS:
            raise UsageError(
                f"compile does not take this program: a value is read under more than "
                f"{MAX_PATHS} different combinations of its conditionals",
                hints=["eval, grad and the other commands run it, on the graph that runs"],
            )
        guards[a] = joined

    for i in range(len(graph.ops) - 1, -1, -1):
        guard = guards[i]
        if not guard:
            continue
        args = graph.args[i]
        if is_select(graph, i):
            c, a, b = args
            join(c, guard)
            join(a, _extended(guard, (c, True)))
            join(b, _extended(guard, (c, False)))
        else:
            for a in args:
                join(a, guard)
    return guards


def order(graph: Graph, guards: list[Guard]) -> list[int]:
    """The nodes in an order that computes each one after its arguments and after every
    condition its guard tests (the lowest id first among those ready: the program's order,
    moved only where a condition comes later than a branch in it)."""
    n = len(graph.ops)
    waiting = [0] * n
    readers: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        deps = set(graph.args[i])
        if graph.ops[i].arity:  # inputs and constants are there from the start
            for path in guards[i] if guards[i] is not ALWAYS else ():
                deps.update(c for c, _ in path)
        deps.discard(i)
        waiting[i] = len(deps)
        for d in deps:
            readers[d].append(i)
    ready = [i for i in range(n) if not waiting[i]]
    heapq.heapify(ready)
    laid: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        laid.append(i)
        for r in readers[i]:
            waiting[r] -= 1
            if not waiting[r]:
                heapq.heappush(ready, r)
    if len(laid) < n:
        raise UsageError(
            "compile does not take this program yet: a value computed in a branch of one "
            "conditional is read by another whose condition that branch decides",
            hints=["eval, grad and the other commands run it, on the graph that runs"],
        )
    return laid


def guard_text(
    graph: Graph,
    guard: Guard,
    names,
    true: str,
    false: str,
    *,
    and_: str = " and ",
    or_: str = " or ",
    never: str = "False",
) -> str:
    """The test of ``guard`` (its paths absorbed, as :func:`needs` makes them) as code: each
    path's tests joined by ``and_`` (from the outside in, so that a condition is read only
    where its select is computed), the paths by ``or_``; ``never`` for a guard that never
    holds. ``true``/``false``: the test that a condition's value (``{0}``) holds or not
    (Python ``{0}`` and ``not {0}``; JavaScript ``{0} !== 0``...); the joiners are
    Python's unless given (JavaScript's: ``&&``, ``||``, ``false``)."""
    if not guard:
        return never
    alternatives = []
    for tests in sorted(guard):
        texts = [(true if side else false).format(names[c]) for c, side in tests]
        joined = and_.join(texts)
        alternatives.append(f"({joined})" if len(texts) > 1 and len(guard) > 1 else joined)
    return or_.join(alternatives)


def wrap(builder, graph: Graph, guard: Guard, value: int) -> int:
    """In the derivative program being built (``builder``, whose nodes of the forward pass
    keep their ids), ``value`` where ``guard`` holds, else 0: nested marked selects, one a
    choice, so that nothing of ``value`` is computed where the guard fails."""
    if guard is ALWAYS or guard == ALWAYS:
        return value
    zero = builder.const(0.0)
    result = zero
    for path in sorted(guard, reverse=True):  # the first path outermost
        inner = value
        for c, side in reversed(path):  # the innermost choice first
            args = (c, inner, result) if side else (c, result, inner)
            inner = builder.apply(WHERE, args, IF)
        result = inner
    return result


def check_conditions(graph: Graph, shape_of) -> None:
    """Refuse, as the interpreter does, a conditional whose condition is a tensor
    (``shape_of(node)``: its shape when known, else None): `a if c else b` takes one branch
    for one number."""
    from ..core.errors import Span
    from ..core.ir_control import tensor_condition

    for s in range(len(graph.ops)):
        if not is_select(graph, s):
            continue
        c = graph.args[s][0]
        shape = shape_of(c)
        if shape:
            span = Span(graph.starts[c], graph.ends[c])
            text = " ".join(graph.source.text[span.start : span.end].split())
            raise tensor_condition(text, shape, span, graph.source)
