"""The optimizer: the passes, listed as data, run until none changes anything.

Each pass is one module with a function ``pass(graph, known) -> (graph, rewrites)`` (``known``:
the input shapes that bindings or defaults give). Together, ``fold``, ``cse``, ``simplify``
and ``stabilize`` make one pass over the graph in topological order that builds the result
through a hash-consing builder (:func:`~cgraph_cli.passes.rewrite.walk`): at each node the
folding rule, then the lookup of an equal node already built (CSE), then the simplifying and
stabilizing rules, each node a rule makes going through the same rules; so one pass leaves
nothing for a second. ``dce`` runs before it and, where the pass rewrote something, after it.
The graph each pass returns is validated. The optimized program keeps every input of the
original declared, so the same bindings run it.

>>> from cgraph_cli import parse
>>> result = optimize(parse("y = sin(x)*2*3 + sin(x)*0 + log(sum(exp(v)))"))
>>> print(result.source, end="")
y = 6 * sin(x) + logsumexp(v)
>>> result.summary()
'15 nodes -> 7: cse 1, simplify 4, stabilize 1'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ..core.errors import UsageError
from ..core.ir import Graph, GraphBuilder, relayout, resolve_name, validate
from . import fold as _fold
from . import simplify as _simplify
from . import stabilize as _stabilize
from .cse import cse
from .dce import dce
from .rewrite import BUDGET, TEXTS, Rewrite, walk

#: The passes in the order they run; ``--passes`` picks from these names. All but ``dce``
#: run as one pass (see the module's text).
PASSES = {
    "dce": dce,
    "fold": _fold.fold,
    "cse": cse,
    "simplify": _simplify.simplify,
    "stabilize": _stabilize.stabilize,
}
MAX_ROUNDS = 8  # rounds of all the passes at most (each round that changes nothing ends it)


class PassReport(NamedTuple):
    """What one pass did over all the rounds."""

    name: str
    rewrites: list[Rewrite]


class Optimized:
    """An optimized program: ``graph``, the ``original`` it came from, and what each pass
    rewrote (``passes``).

    >>> from cgraph_cli import parse
    >>> result = optimize(parse("y = (x + 0) * (2 * 3)"))
    >>> result, [(p.name, [r.before for r in p.rewrites]) for p in result.passes if p.rewrites]
    (<Optimized 7 nodes -> 3: fold 1, simplify 2>, [('fold', ['2 * 3']), ('simplify', ['x + 0', '(x + 0) * (2 * 3)'])])
    """

    __slots__ = ("graph", "original", "passes")

    def __init__(self, graph: Graph, original: Graph, passes: list[PassReport]) -> None:
        self.graph, self.original, self.passes = graph, original, passes

    @property
    def source(self) -> str:
        """The optimized program as text (it parses back to :attr:`graph`)."""
        from ..parse.unparse import to_source

        return to_source(self.graph)

    def summary(self) -> str:
        """``N nodes -> M: pass count, ...`` (the passes that rewrote something)."""
        counts = ", ".join(f"{p.name} {len(p.rewrites)}" for p in self.passes if p.rewrites)
        head = f"{len(self.original.ops)} nodes -> {len(self.graph.ops)}"
        return f"{head}: {counts}" if counts else f"{head}: nothing to rewrite"

    def __repr__(self) -> str:
        return f"<Optimized {self.summary()}>"


def parse_passes(text: str | None) -> list[str]:
    """The pass names in ``--passes`` (comma-separated), checked; all of them if None."""
    if text is None:
        return list(PASSES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PASSES]
    if unknown or not names:
        raise UsageError(
            f"unknown pass '{unknown[0]}'" if unknown else "--passes names no pass",
            hints=["passes: " + ", ".join(PASSES)],
        )
    return [n for n in PASSES if n in names]  # always in the pipeline's order


def optimize(
    graph: Graph,
    passes: Sequence[str] | None = None,
    *,
    of: str | None = None,
    bindings: Mapping[str, Any] | None = None,
    on_pass: Callable[[str, Graph, list[Rewrite]], None] | None = None,
    budget: int | None = None,
    texts: bool = True,
) -> Optimized:
    """Run ``passes`` (default: all, in :data:`PASSES` order) over ``graph`` until they
    change nothing; ``of``: optimize for that named value instead of the output;
    ``bindings``: values whose shapes the rules may rely on (else the inputs' defaults);
    ``on_pass``: called with the pass's name, the graph and the rewrites after each pass that
    changed something (the one pass of fold, cse, simplify and stabilize is named after those
    that rewrote something, joined by ``+``: ``fold+simplify``); ``budget``: the most rewrites to make (``--frames`` draws the program
    after each one); ``texts`` False: the rewrites are counted but carry no program text
    (for callers that want only the graph: writing the texts is half the passes' time).

    >>> from cgraph_cli import parse
    >>> print(optimize(parse("y = log(1 + exp(x * 1))")).source, end="")
    y = softplus(x)
    """
    from ..core.ir_control import refuse

    refuse(graph, "optimize")
    token = BUDGET.set(None if budget is None else [budget])
    told = TEXTS.set(texts)
    try:
        return _optimize(graph, passes, of, bindings, on_pass)
    finally:
        TEXTS.reset(told)
        BUDGET.reset(token)


def _optimize(graph, passes, of, bindings, on_pass) -> Optimized:
    original = graph
    if of is not None:
        node = resolve_name(graph, of)
        statements = [(k, n, v) for k, n, v, _ in graph.statements()]
        # The statements up to the one that gives `of` its value: a later one may rename it.
        last = max(
            (k for k, (_, n, v) in enumerate(statements) if n == of and v == node), default=None
        )
        if last is None:  # an input (or a value no statement names): a bare expression
            kept = [s for s in statements if s[0] == "input"] + [("bare", of, node)]
        else:
            kept = statements[: last + 1]
        graph = relayout(graph, kept, node, of)
    known = known_shapes(graph, bindings or {})
    chosen = list(passes) if passes is not None else list(PASSES)
    done: dict[str, list[Rewrite]] = {name: [] for name in chosen}
    steps = _steps(chosen)
    quiet = 0  # the steps in a row that changed nothing
    for k in range(MAX_ROUNDS * len(steps)):
        name, run = steps[k % len(steps)]
        size = len(graph.ops)
        before = graph
        graph, rewrites = run(graph, known)
        for r in rewrites:
            done[r.pass_name].append(r)
        quiet += 1
        if graph is not before:
            validate(graph)
        if rewrites or len(graph.ops) != size:
            quiet = 0
            if on_pass is not None:
                on_pass(_made_by(rewrites) or name, graph, rewrites)
        # Each step leaves nothing for itself to do: done when every other one found nothing.
        if k >= len(steps) - 1 and quiet >= len(steps) - 1:
            break
    declared = _declare_missing(graph, list(original.inputs), original.defaults)
    if declared is not graph or not steps:  # (each step's graph was validated)
        validate(declared)
    return Optimized(declared, original, [PassReport(n, done[n]) for n in chosen])


Step = Callable[[Graph, Mapping[str, tuple[int, ...]]], tuple[Graph, list[Rewrite]]]


def _steps(chosen: Sequence[str]) -> list[tuple[str, Step]]:
    """The steps a round makes: ``dce``, then the one pass of the other passes chosen."""
    together = [n for n in PASSES if n != "dce" and n in chosen]
    if "dce" not in chosen:
        steps: list[tuple[str, Step]] = []
    elif together:  # the one pass lays the graph out again: dce need not
        steps = [("dce", lambda graph, known: dce(graph, known, lay_out=False))]
    else:
        steps = [("dce", dce)]
    early = _fold.RULES if "fold" in chosen else ()
    late = (_simplify.RULES if "simplify" in chosen else ()) + (
        _stabilize.RULES if "stabilize" in chosen else ()
    )
    merge = "cse" in chosen
    if together:

        def one(graph: Graph, known: Mapping[str, tuple[int, ...]]):
            return walk(graph, late, known, early=early, merge=merge)

        steps.append(("+".join(together), one))
    return steps


def _made_by(rewrites: list[Rewrite]) -> str:
    """The passes that made ``rewrites``, in the pipeline's order, joined by ``+``."""
    names = {r.pass_name for r in rewrites}
    return "+".join(n for n in PASSES if n in names)


def known_shapes(graph: Graph, bindings: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Each input's shape where a binding (a number, nested lists or an array) or a default
    gives it."""
    if bindings:  # text from the command line, lists from JSON: values, checked
        from ..data.bindings import check_bindings

        bindings = check_bindings(graph, bindings)
    known: dict[str, tuple[int, ...]] = {}
    for name in graph.inputs:
        value = bindings.get(name, graph.defaults.get(name))
        if value is None:
            continue
        if isinstance(value, (int, float)):
            known[name] = ()
        else:
            from ..core.arrays import np

            known[name] = tuple(np.shape(value))
    return known


def _declare_missing(graph: Graph, names: list[str], defaults: Mapping) -> Graph:
    """``graph`` with an ``input`` statement first for each of ``names`` it no longer uses."""
    missing = [n for n in names if n not in graph.inputs]
    if not missing:
        return graph
    b = GraphBuilder(graph.source)
    for name in missing:
        b.statement("input", name, b.input(name))
        if name in defaults:
            b.graph.defaults[name] = defaults[name]
    new: list[int] = []
    b.graph.defaults.update(graph.defaults)
    for kind, name, node, end in graph.statements():  # each statement's own nodes, then it
        for i in range(len(new), end):
            new.append(b.copy(graph, i, tuple(new[a] for a in graph.args[i])))
        if kind != "input":
            b.name(new[node], name)
        b.statement(kind, name, new[node])
    return b.finish(new[graph.output], graph.output_label)
