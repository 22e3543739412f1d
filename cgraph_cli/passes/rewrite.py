"""What the optimization passes share: a walk that rebuilds a graph in one pass, node by node,
through a hash-consing builder that asks the passes' rules for a replacement, and the shapes
the rules may rely on.

A rule is ``rule(w, i, op, args, params)``: ``i`` the node of the old graph, ``args`` its
arguments already in the new graph. It returns a node of the new graph equal to node ``i``
(made with ``w.b``, the new graph's builder, whose ``apply`` puts what it makes through the
rules too), or None to copy the node as it is. Each replacement is recorded as a
:class:`Rewrite` with the source span it came from. The new graph keeps the old one's
statements (mapped), laid out again by :func:`~cgraph_cli.core.ir.relayout`, which drops the
nodes no statement needs any more.

Shapes: a program is optimized before it has bindings, so an input's shape is often unknown.
A node's shape is kept as the set of things whose broadcast gives it: inputs of unknown shape
(by name), shapes known (tuples), and nodes whose shape cannot be said (by number). A number
has the empty set. Elementwise ops take the union; ``x * 1`` may become ``x`` only where both
have the same set, which holds for any shapes the inputs turn out to have.

>>> from cgraph_cli import parse
>>> [sorted(map(str, s)) for s in shapes(parse("y = sum(v) * x + sin(x)"))]
[['v'], [], ['x'], ['x'], ['x'], ['x']]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import NamedTuple

from ..core.arrays import frozen
from ..core.ir import Graph, GraphBuilder, relayout, value_key
from ..core.ops import CONST, INPUT, OpSpec

Sig = frozenset  # a shape, as the set of what broadcasts to it

#: Rewrites the passes may still make (None: any number), so that a slide sequence can show
#: the program after each one: :func:`cgraph_cli.passes.optimize.optimize` sets it.
BUDGET: ContextVar[list[int] | None] = ContextVar("budget", default=None)


#: Whether the rewrites carry their texts (the expression before and after): False where
#: only the optimized graph is wanted (a compiled module, a derivative program), since writing
#: them was half of the passes' time.
TEXTS: ContextVar[bool] = ContextVar("texts", default=True)


def has_budget() -> bool:
    """Whether one more rewrite may be made."""
    left = BUDGET.get()
    return left is None or left[0] > 0


def spend() -> None:
    """Count a rewrite made against the budget."""
    left = BUDGET.get()
    if left is not None:
        left[0] -= 1


_PROBES = ((2, 3, 4), (5, 6, 7))  # shapes an op's shape rule is tried on, to see what it keeps


class Rewrite(NamedTuple):
    """One replacement a pass made: where (the old node's span), and the expression before
    and after, as program text."""

    pass_name: str
    start: int
    end: int
    before: str
    after: str


class Walk:
    """The state of one pass over ``old``: the new graph's builder ``b``, old -> new node
    numbers, the rewrites so far, and the shapes of the new graph's nodes."""

    def __init__(self, old: Graph, known: Mapping[str, tuple[int, ...]] | None = None) -> None:
        self.old = old
        self.known = dict(known or {})
        self.b = _Builder(self, old.source)
        self.new: list[int] = []
        self.early: Rules = ()  # the rules asked before an equal node is looked for (fold)
        self.late: Rules = ()  # and after (simplify, stabilize)
        self.rules: Rules = ()  # both, for the nodes the rules make
        self.merge = False  # equal nodes are one (cse)
        self.i = -1  # the old node being rebuilt
        self.rewrites: list[Rewrite] = []
        self._sigs: list[Sig] = []
        self._texts: dict[int, str] = {}

    # shapes ----------------------------------------------------------------------------------
    def shape(self, node: int) -> Sig:
        """The shape of node ``node`` of the graph being built (worked out up to it)."""
        sigs = self._sigs
        while len(sigs) <= node:
            sigs.append(_sig(self.b.graph, len(sigs), sigs, self.known))
        return sigs[node]

    def is_number(self, node: int) -> bool:
        """Whether ``node`` is a single number, whatever the inputs' shapes."""
        return not self.shape(node)

    def const_value(self, node: int) -> float | None:
        """The float a constant node of the new graph holds, else None."""
        return self.b.const_value(node)

    # text ------------------------------------------------------------------------------------
    def text(self, node: int, graph: Graph | None = None) -> str:
        """A node's expression as program text (of the new graph unless ``graph``), cut short
        where it gets long."""
        from ..parse.unparse import expression

        graph = graph or self.b.graph
        return expression(graph, node)

    def ask(
        self, rules: Rules, op: OpSpec, args: tuple[int, ...], params: tuple, made: bool = False
    ) -> int | None:
        """The first of ``rules`` to rewrite ``op(*args, *params)``: its node, the rewrite
        recorded at the old node being rebuilt; None where none does (or no budget is left).
        ``made``: a node a rule is making, written as it would have been (not the old node's
        text) in the rewrite."""
        if not rules or not has_budget():
            return None
        for name, rule in rules:
            found = rule(self, self.i, op, args, params)
            if found is not None:
                spend()
                raw = None
                if made and TEXTS.get():  # a node nothing reads: relayout drops it
                    raw = self.b.add(op, args, *self.b.span, params)
                self.record(name, self.i, found, raw)
                return found
        return None

    def record(self, pass_name: str, i: int, after: int, before: int | None = None) -> None:
        """Note that old node ``i`` became new node ``after``: the old node's text (the
        program's own, where the one pass rewrites the program), or new node ``before``'s."""
        old = self.old
        shown = "computed once" if pass_name == "cse" else ""
        if not TEXTS.get():
            self.rewrites.append(Rewrite(pass_name, old.starts[i], old.ends[i], "", shown))
            return
        was = self.text(i, old) if before is None else self.text(before)
        self.rewrites.append(
            Rewrite(pass_name, old.starts[i], old.ends[i], was, shown or self.text(after))
        )


def shapes(graph: Graph, known: Mapping[str, tuple[int, ...]] | None = None) -> list[Sig]:
    """Every node's shape, as the set of what broadcasts to it (see the module's text)."""
    sigs: list[Sig] = []
    for n in range(len(graph.ops)):
        sigs.append(_sig(graph, n, sigs, known or {}))
    return sigs


def _sig(g: Graph, n: int, sigs: list[Sig], known: Mapping[str, tuple[int, ...]]) -> Sig:
    op = g.ops[n]
    if op is INPUT:
        name = g.labels[n]
        shape = known.get(name or "")
        return _concrete(shape) if shape is not None else Sig((name,))
    if op is CONST:
        return _concrete(tuple(getattr(g.consts[n], "shape", ())))
    args = [sigs[a] for a in g.args[n]]
    params = g.params.get(n, ())
    shapes = [only_shape(s) for s in args]
    if all(s is not None for s in shapes):
        try:
            return _concrete(tuple(op.shape(shapes, params)))
        except Exception:  # shapes that do not fit: the evaluation will say so
            return Sig((n,))
    if op.elementwise:
        return Sig().union(*args)
    if op.arity == 1:
        try:
            out = [tuple(op.shape([p], params)) for p in _PROBES]
        except Exception:
            return Sig((n,))
        if out == [(), ()]:
            return Sig()
        if out == list(_PROBES):
            return args[0]
    return Sig((n,))


def _concrete(shape: tuple[int, ...]) -> Sig:
    return Sig((shape,)) if shape else Sig()


def only_shape(sig: Sig) -> tuple[int, ...] | None:
    """The shape a set stands for when it holds known shapes only (None otherwise)."""
    if not sig:
        return ()
    if len(sig) == 1:
        (item,) = sig
        if isinstance(item, tuple):
            return item
    return None


Rule = Callable[[Walk, int, OpSpec, tuple[int, ...], tuple], "int | None"]
Rules = tuple[tuple[str, Rule], ...]  # (pass name, rule), asked in order


class _Builder(GraphBuilder):
    """The new graph's builder in a walk: :meth:`apply` (what the rules build with) asks the
    walk's rules first, so that what a rule makes is rewritten too, and hash-conses when the
    walk merges (an op on the same arguments with the same parameters is one node, equal
    constants are one)."""

    __slots__ = ("walk", "consts")

    def __init__(self, walk: Walk, source) -> None:
        super().__init__(source)
        self.walk = walk
        self.consts: dict = {}  # (value, label) -> node, when merging

    def apply(self, op: OpSpec, args, params: tuple = ()) -> int:
        w, args = self.walk, tuple(args)
        key = (op, args, repr(params))
        if w.merge and key in self._memo:
            return self._memo[key]
        found = w.ask(w.rules, op, args, params, made=True)
        if found is None:
            found = self.add(op, args, *self.span, params)
        if w.merge:
            self._memo[key] = found
        return found

    def const(self, value, start: int | None = None, end: int | None = None, label=None) -> int:
        key = (value_key(value), label)  # a named constant stays itself: its name is how it reads
        if self.walk.merge and key in self.consts:
            return self.consts[key]
        node = self.add(CONST, (), *self._where(start, end))
        self.graph.consts[node] = frozen(value)
        if self.walk.merge:
            self.consts[key] = node
        return node


def walk(
    graph: Graph,
    late: Rules,
    known: Mapping[str, tuple[int, ...]] | None = None,
    *,
    early: Rules = (),
    merge: bool = False,
) -> tuple[Graph, list[Rewrite]]:
    """``graph`` rebuilt in one pass in topological order: at each operation node the
    ``early`` rules are asked, then (``merge``) an equal node already built is taken (a
    rewrite of the pass ``cse``), then the ``late`` rules; a rule's result is itself made
    through the same rules (so one pass leaves nothing for another to rewrite); the copy is
    laid out again without the nodes nothing needs. Returns it and the rewrites made.

    The recursion of a rule's result through the rules is as deep as the rules nest (a
    rule's arguments were rewritten already), never as deep as the graph."""
    w = Walk(graph, known)
    w.early, w.late, w.rules, w.merge = early, late, early + late, merge
    b, new, ops = w.b, w.new, graph.ops
    for i, op in enumerate(ops):
        w.i = i
        b.span = start, end = graph.starts[i], graph.ends[i]
        if op is INPUT:
            new.append(b.input(graph.labels[i] or "", start, end))
        elif op is CONST:
            new.append(b.const(graph.consts[i], start, end, graph.labels[i]))
        else:
            node = _rebuild(w, op, tuple(new[a] for a in graph.args[i]), i)
            label = graph.labels[i]
            if label is not None and node in b.graph.consts:  # a constant a statement names:
                g = b.graph  # its own (as the parser makes it), where it was found
                node = b.const(g.consts[node], g.starts[node], g.ends[node], label)
            elif b.graph.labels[node] is None:
                # Named as the old node is, for the texts of the rewrites (``2 * lse``, as the
                # program reads, not the whole expression); relayout names the nodes again.
                b.graph.labels[node] = label
            new.append(node)
    for name, default in graph.defaults.items():
        b.graph.defaults[name] = default
    statements = [(kind, name, new[node]) for kind, name, node, _ in graph.statements()]
    out = relayout(b.graph, statements, new[graph.output], graph.output_label)
    return out, w.rewrites


def _rebuild(w: Walk, op: OpSpec, args: tuple[int, ...], i: int) -> int:
    """Old node ``i``, an operation on ``args`` (new nodes), in the new graph."""
    b, params = w.b, w.old.params.get(i, ())
    found = w.ask(w.early, op, args, params)
    if found is not None:
        return found
    key = (op, args, repr(params))
    if w.merge and has_budget():
        found = b._memo.get(key)
        if found is not None:
            spend()
            w.record("cse", i, found)
            return found
    found = w.ask(w.late, op, args, params)
    if found is None:
        found = b.add(op, args, *b.span, params)
    if w.merge:
        b._memo[key] = found
    return found


#: The largest ``|c|`` that ``c * (d * x)`` may be gathered under (see :func:`gathers`).
GATHER_LIMIT = 8.0


def gathers(
    c: float, d: float | None, product: float | None, *, overflow_is_error: bool = True
) -> bool:
    """Whether ``c * (d * x)`` may become ``(c * d) * x``, ``product`` being ``c * d`` as folded:
    whether the two agree to a few units in the last place, for every ``x``, wherever the
    original evaluates (and the gathered form errs where the original does).

    Floats re-associate only up to rounding *inside the range*; ``d * x`` may leave it where
    ``c * d * x`` would not. Overflowing there is an error the gathered form would hide, and
    it can happen only where ``|c| < 1`` brings the value back; underflowing there loses up to
    half the subnormal spacing, which ``c`` then magnifies, up to ``1e200 * (1e-200 * x)`` being
    0 at ``x = 1e-300``. So ``c`` must be in ``1 < |c| <= 8`` (the loss then stays within
    four units of the subnormal spacing; ``|c| = 1`` has its own rules). And the product must
    be a normal float: one that underflows (``1e-200 * 1e-200`` is 0) or is subnormal (it has
    lost digits) or overflows changes every value, not one edge. A zero ``d`` is exact:
    ``c * (0 * x)`` and ``(c * 0) * x`` are the same signed zero.

    ``overflow_is_error=False`` (a derivative program being built, whose ungathered form no
    one wrote) also lets ``|c| < 1`` gather: ``0.125 * (2 * t)`` is ``0.25 * t``; the values
    then differ only where ``d * x`` would overflow, and there the gathered one is right.

    >>> gathers(2.0, 3.0, 6.0), gathers(1e-200, 1e-200, 0.0), gathers(0.5, 4.0, 2.0)
    (True, False, False)
    """
    import math

    if d is None or product is None:  # a tensor: gathered as the numbers it holds are not
        return False
    low = 1.0 if overflow_is_error else 0.0
    if not low < abs(c) <= GATHER_LIMIT or abs(c) == 1.0 or not math.isfinite(product):
        return False
    return d == 0.0 or abs(product) >= sys.float_info.min
