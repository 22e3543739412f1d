"""The two loops of automatic differentiation, under any interpretation of the op vocabulary.

:func:`reverse` walks a graph backwards from an output, each node passing each argument its
cotangent (:func:`pullback`: an elementwise op's local partials times the incoming gradient,
summed back over broadcast axes; any other op's vjp rule). :func:`push` walks it forwards,
each node's tangent its jvp rule applied to its arguments' tangents. Run with NumPy arrays
they compute (:mod:`cgraph_cli.run.vjp`, :mod:`cgraph_cli.run.jvp`); run under a graph builder
they record derivative programs (:mod:`cgraph_cli.passes.grad_graph`,
:mod:`cgraph_cli.passes.jvp_graph`); run under a formula printer they explain.

>>> from cgraph_cli import parse
>>> from cgraph_cli.core.interpret import ARRAYS
>>> g = parse("y = x * x")
>>> reverse(g, [3.0, 9.0], ARRAYS, g.output, 1.0, [True, True])[0]
6.0
"""

from __future__ import annotations

from .interpret import Interpretation
from .ir import Graph


# --- the one reverse loop ----------------------------------------------------------------------
def reverse(
    graph: Graph,
    values: list,
    e: Interpretation,
    out: int,
    seed,
    needs: list[bool],
    checked: bool = False,
    on_sum=None,
    before=None,
    wrap=None,
) -> list:
    """Adjoints of ``out`` under interpretation ``e``: ``values[i]`` is node i's value there
    (an array, or a node of the graph being built), ``needs[i]`` whether node i wants a
    gradient. A node that gets none has ``None``. ``checked``: a zero gradient contributes
    nothing even where a local derivative is infinite. ``on_sum(i, a, total, g)`` is called
    after each addition to ``adj[a]`` (error checks); ``before(i)`` before node i passes its
    gradient back; ``wrap(i, c)``, given what node i passes back, what to add instead (a
    compiled conditional's branch: only where it ran)."""
    adj: list = [None] * len(graph.ops)
    adj[out] = seed
    ops, all_args = graph.ops, graph.args
    for i in range(out, -1, -1):
        g = adj[i]
        if g is None or not ops[i].arity:
            continue
        if before is not None:
            before(i)
        for a, c in zip(all_args[i], pullback(e, graph, values, i, g, needs, checked)):
            if c is None:
                continue
            if wrap is not None:
                c = wrap(i, c)
            adj[a] = c if adj[a] is None else e.add(adj[a], c)
            if on_sum is not None:
                on_sum(i, a, adj[a], g)
    return adj


def pullback(
    e: Interpretation,
    graph: Graph,
    values: list,
    i: int,
    g,
    needs: list[bool],
    checked: bool = False,
) -> list:
    """What node ``i`` passes back to each argument, given its adjoint ``g`` (``None`` for an
    argument that needs no gradient)."""
    args = graph.args[i]
    return rule_pullback(
        e,
        graph.ops[i],
        [values[a] for a in args],
        values[i],
        graph.params.get(i, ()),
        g,
        [needs[a] for a in args],
        checked,
    )


def rule_pullback(
    e: Interpretation,
    op,
    xs: list,
    out,
    params: tuple,
    g,
    wanted: list[bool],
    checked: bool = False,
    summed: bool = True,
) -> list:
    """An op's cotangents for arguments ``xs`` and result ``out`` given the gradient ``g``:
    its vjp rule, or for an elementwise op each local partial times ``g``, summed back to the
    argument's shape (unless ``summed`` is false: explanations say so in words);
    ``None`` where ``wanted`` says no."""
    if op.vjp is not None:
        pulled = op.vjp(e, g, xs, out, params)
        return [c if want else None for want, c in zip(wanted, pulled)]
    cotangents: list = []
    for k, want in enumerate(wanted):
        rule = op.partials[k] if op.partials else None
        if rule is None or not want:
            cotangents.append(None)
            continue
        partial = rule(e, *xs, out)
        if partial.__class__ is float and partial in (1.0, -1.0):
            c = g if partial == 1.0 else e.neg(g)
        else:
            c = e.mul(g, partial)
            if checked:
                c = e.unless_zero(g, c, partial)
        cotangents.append(e.sum_to(c, e.shape(xs[k])) if summed else c)
    return cotangents


def push(
    graph: Graph, values: list, e: Interpretation, tan: list, checked: bool = False, on_node=None
) -> list:
    """Tangents of every node under interpretation ``e``, given ``tan`` with the inputs'
    tangents filled in (``None`` is zero). ``checked``: a zero tangent contributes nothing even
    where a local derivative is infinite. ``on_node(i, tangent, arg tangents)`` checks."""
    ops, params = graph.ops, graph.params
    for i, (op, args) in enumerate(zip(ops, graph.args)):
        ts = [tan[a] for a in args]
        if not op.arity or all(t is None for t in ts):
            continue
        xs = [values[a] for a in args]
        if op.jvp is not None:
            tan[i] = op.jvp(e, ts, xs, values[i], params.get(i, ()))
        else:
            tan[i] = elementwise_tangent(e, op, xs, values[i], ts, checked)
        if on_node is not None:
            on_node(i, ts)
    return tan


def elementwise_tangent(e, op, xs, out, ts, checked: bool):
    """An elementwise op's tangent: the sum of its local partials times its arguments'
    tangents ``ts`` (``None`` is zero), broadcast to the result's shape."""
    total = None
    for rule, t in zip(op.partials or (), ts):
        if t is None or rule is None:
            continue
        partial = rule(e, *xs, out)
        if partial.__class__ is float and partial in (1.0, -1.0):
            c = t if partial == 1.0 else e.neg(t)
        else:
            c = e.mul(partial, t)
            if checked:
                c = e.where(e.eq(t, 0.0), 0.0, c)
        total = e.add_tangents(total, c)
    if total is None:
        return None
    shape = e.shape(out)
    return total if e.shape(total) == shape else e.broadcast_to(total, shape)
