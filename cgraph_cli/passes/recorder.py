"""The op vocabulary as graph building: the interpretation under which the reverse and
forward-mode loops (:mod:`cgraph_cli.core.autodiff`) write derivative programs instead of
computing numbers (:mod:`.grad_graph`, :mod:`.jvp_graph`, the JavaScript target).

>>> from cgraph_cli.core.ir import GraphBuilder
>>> from cgraph_cli.core.ops import OPS
>>> b = GraphBuilder()
>>> x = b.input("x")
>>> e = Recorder(b)
>>> b.graph.ops[e.mul(e.sin(x), 2.0)].name
'mul'
"""

from __future__ import annotations

from ..core.interpret import Interpretation
from ..core.ir import GraphBuilder
from ..core.ops import CONST, OPS
from .simplify import cannot_fail


class Recorder(Interpretation):
    """The op vocabulary as graph building: ``e.mul(a, b)`` adds (or finds) a node. Node ids
    are ints; numbers written in rules are floats and become constants. With ``mask``
    (params of ``where``: :data:`~cgraph_cli.core.ir.MASK`, or :data:`~cgraph_cli.core.ir.IF`
    for a branch computed only where taken), a reverse pass run ``checked`` writes each
    contribution whose partial may not be finite where the forward values are (nodes below
    ``forward``) as ``where(g, c, 0)`` with those params: 0 where the adjoint ``g`` is 0."""

    def __init__(self, builder: GraphBuilder, mask: tuple = (), forward: int = 0) -> None:
        self.b = builder
        self.mask, self.forward = mask, forward

    def unless_zero(self, g, c, partial):
        if not self.mask:
            return super().unless_zero(g, c, partial)
        b = self.b
        if g.__class__ is not int or b.graph.ops[g] is CONST or c.__class__ is not int:
            return c  # the seed, or a number: never 0 here (0 passes nothing back)
        if partial.__class__ is not int or cannot_fail(b.graph, partial, self.forward):
            return c  # finite wherever the forward values are
        zero = b.const(0.0)
        if b.shape_of(c) != b.result_shape(_WHERE, (g, c, zero), self.mask):
            return c  # (c has the shape of g times the partial: never)
        return b.apply(_WHERE, (g, c, zero), self.mask)

    def lift(self, x) -> int:
        return x if x.__class__ is int else self.b.const(float(x))

    def apply(self, op, args, params):
        return self.b.apply(op, [self.lift(a) for a in args], params)

    def shape(self, x) -> tuple[int, ...]:
        return self.b.shape_of(x) if x.__class__ is int else ()


_WHERE = OPS["where"]
