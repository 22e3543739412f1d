"""What the optimization passes share: a walk that copies a graph node by node, asking a
pass's rule for a replacement, and the shapes the rules may rely on.

A rule is ``rule(w, i, op, args, params)``: ``i`` the node of the old graph, ``args`` its
arguments already in the new graph. It returns a node of the new graph equal to node ``i``
(made with ``w.b``, the new graph's builder), or None to copy the node as it is. Each
replacement is recorded as a :class:`Rewrite` with the source span it came from. The new
graph keeps the old one's statements (mapped), laid out again by :func:`~cgraph_cli.core.ir.relayout`,
which drops the nodes no statement needs any more.

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
        self.b = GraphBuilder(old.source)
        self.new: list[int] = []
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

    def record(self, pass_name: str, i: int, after: int) -> None:
        """Note that old node ``i`` became new node ``after``."""
        old = self.old
        if not TEXTS.get():
            self.rewrites.append(Rewrite(pass_name, old.starts[i], old.ends[i], "", ""))
            return
        self.rewrites.append(
            Rewrite(pass_name, old.starts[i], old.ends[i], self.text(i, old), self.text(after))
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


def walk(
    graph: Graph,
    pass_name: str,
    rule: Rule,
    known: Mapping[str, tuple[int, ...]] | None = None,
    *,
    merge_consts: bool = False,
) -> tuple[Graph, list[Rewrite]]:
    """``graph`` copied node by node, ``rule`` asked at each operation node; the copy laid
    out again without the nodes nothing needs. Returns it and the rewrites made.
    ``merge_consts``: equal constants become one node."""
    w = Walk(graph, known)
    b, new = w.b, w.new
    consts: dict = {}
    for i, op in enumerate(graph.ops):
        start, end = graph.starts[i], graph.ends[i]
        b.span = (start, end)
        if op is CONST and merge_consts:  # a named constant stays itself: its name is how it reads
            key = (value_key(graph.consts[i]), graph.labels[i])
            if key not in consts:
                consts[key] = b.copy(graph, i)
            new.append(consts[key])
            continue
        if op is INPUT or op is CONST:
            new.append(b.copy(graph, i))
            continue
        args = tuple(new[a] for a in graph.args[i])
        params = graph.params.get(i, ())
        found = rule(w, i, op, args, params) if has_budget() else None
        if found is None:
            new.append(b.add(op, args, start, end, params))
        else:
            spend()
            new.append(found)
            w.record(pass_name, i, found)
    for name, default in graph.defaults.items():
        b.graph.defaults[name] = default
    statements = [(kind, name, new[node]) for kind, name, node, _ in graph.statements()]
    out = relayout(b.graph, statements, new[graph.output], graph.output_label)
    return out, w.rewrites


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
