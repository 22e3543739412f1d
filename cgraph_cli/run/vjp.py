"""The reverse pass (vjp): adjoints ∂out/∂node for every node, from the op table's rules.

:func:`reverse` is the one reverse loop: it walks the graph backwards from the output with
``adj[out] = seed``, and each node passes each argument its cotangent (an elementwise op: the
incoming gradient times its local partial, summed back over broadcast axes; any other op: its
vjp rule), added up over the uses of the argument. It runs under any interpretation of the op
vocabulary: NumPy arrays (:func:`vjp_arrays`), or a graph builder, which makes the derivative
program (:mod:`cgraph_cli.passes.grad_graph`). Scalar programs take a loop specialised for
speed, compiled from the same rules (:func:`vjp` on floats).

>>> from cgraph_cli import parse
>>> from cgraph_cli.run.evaluate import forward
>>> g = parse("y = x * x")
>>> vjp(g, forward(g, {"x": 3}))[g.inputs["x"]]
6.0
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from itertools import islice
from operator import itemgetter

from ..core.arrays import np, show_shape
from ..core.autodiff import reverse
from ..core.errors import DomainError, EvalError
from ..core.interpret import (
    ARRAYS,
    constant_partials,
    partial_function,
    partials_function,
    swaps_arguments,
)
from ..core.ir import Graph, gc_paused
from ..core.ops import CONST
from ..core.walks import depends_on_input
from ..data.bindings import all_finite, finite
from .evaluate import (
    SWAPPED,
    at,
    compile_program,
    element,
    is_tensor_run,
    no_memory,
    slope_error,
    step_partials,
)


def vjp(graph: Graph, values: list, of: int | None = None, seed: float = 1.0) -> list:
    """Adjoints of node ``of`` (default: the output) with respect to every node; a node no
    input reaches (a constant) has none: 0.

    >>> from cgraph_cli import forward, parse
    >>> g = parse("p = x + y; g = p * z")
    >>> vjp(g, forward(g, {"x": 1, "y": 3, "z": -3}))
    [-3.0, -3.0, -3.0, 4.0, 1.0]
    """
    if is_tensor_run(graph, values):
        return vjp_arrays(graph, values, of, seed)
    out = graph.output if of is None else of
    program = compile_program(graph)
    adj = [0.0] * len(graph.ops)
    adj[out] = seed
    if program.wide:
        # Only nodes up to `out` can reach it: skip the instructions after it.
        after = len(program.steps) - bisect_right(program.steps, out, key=itemgetter(0))
        _float_reverse_wide(graph, values, islice(reversed(program.steps), after, None), adj)
    else:
        back = back_steps(graph, program)
        after = bisect_left(back, -out, key=_minus_node)
        _float_reverse(graph, values, islice(back, after, None) if after else back, adj)
    if not all(math.isfinite(adj[n]) for n in graph.inputs.values()):
        raise _first_undefined(graph, values, out, seed)
    return adj


def _minus_node(step: tuple) -> int:
    return -step[0]


# What a step of the reverse loop passes back (see back_steps), besides SWAPPED (mul):
ADD = "add"  # adj[a] += g; adj[b] += g
SUB = "sub"  # adj[a] += g; adj[b] -= g
PASS = "pass"  # adj[a] += g
NEGATE = "negate"  # adj[a] -= g
SCALE = "scale"  # adj[a] += values[b] * g (mul by a value that needs no gradient)


def back_steps(graph: Graph, program) -> list:
    """The reverse loop's steps, last node first, made once per graph from the op table's
    rules: ``(node, partial, a, b)`` for each operation node with an argument that needs a
    gradient (one an input reaches); the others pass nothing, so constants get no adjoint.
    ``partial`` is one of the kinds above, a float (a constant partial for ``a``), a tuple
    of two (for ``a`` and ``b``), a function (of ``a``'s value, ``b``'s if ``b >= 0``, and the
    node's) giving ``a``'s partial, or a list holding a function giving both. When only one
    argument needs a gradient, it is ``a``, and ``b`` the other (or -1)."""
    back = program.back
    if back is not None:
        return back
    depends = depends_on_input(graph)
    ops = graph.ops
    made: dict = {}  # op, or (op, which arguments need a gradient) -> (partial, swap) or None
    back = []
    add = back.append
    key: tuple
    with gc_paused():
        for i, _, _, a, b in reversed(program.steps):
            op = ops[i]
            if b < 0:
                key = (op, depends[a])
            elif depends[a] and depends[b]:
                kind = made.get(op, 0)
                if kind == 0:
                    kind = made[op] = _back_kind(op, (True, True))
                if kind is not None:
                    add((i, kind[0], a, b))
                continue
            else:
                key = (op, depends[a], depends[b])
            kind = made.get(key, 0)
            if kind == 0:
                kind = made[key] = _back_kind(op, key[1:])
            if kind is not None:
                add((i, kind[0], b, a) if kind[1] else (i, kind[0], a, b))
    program.back = back
    return back


def _back_kind(op, needs: tuple[bool, ...]) -> tuple[object, bool] | None:
    """A step's ``partial`` for ``op`` (see :func:`back_steps`), and whether its arguments
    swap places (the second alone needs a gradient); None if it passes nothing back."""
    rules = op.partials or ()
    needs = tuple(need and k < len(rules) and rules[k] is not None for k, need in enumerate(needs))
    if not op.differentiable or not any(needs):
        return None
    if all(needs) and len(needs) == 2:
        if swaps_arguments(op):
            return SWAPPED, False
        both = constant_partials(op)
        if both is None:
            return [partials_function(op, needs)], False
        kinds: dict[tuple[float, ...], object] = {(1.0, 1.0): ADD, (1.0, -1.0): SUB}
        return kinds.get(both, both), False
    k = needs.index(True)
    partial = partial_function(op, k)
    if isinstance(partial, float):
        partial = {1.0: PASS, -1.0: NEGATE}.get(partial, partial)
    elif len(needs) == 2 and swaps_arguments(op):
        partial = SCALE
    return partial, k == 1


def _float_reverse(graph: Graph, values: list, back, adj: list) -> None:
    """The hot loop: each step's kind read inline, the commonest first, with no call and no
    allocation but a float's for them (``bench/bench_core.py`` times it against a bare tape
    loop). A step whose node gets no gradient is skipped before its partial is computed, so
    that an undefined one there raises nothing."""
    add, sub, swapped, passes, negate, scale = ADD, SUB, SWAPPED, PASS, NEGATE, SCALE
    i = -1
    try:
        with gc_paused():  # the partials of a step with a list would otherwise wake it
            for i, p, a, b in back:
                if p is add:
                    g = adj[i]
                    adj[a] += g
                    adj[b] += g
                elif p is swapped:
                    g = adj[i]
                    adj[a] += values[b] * g
                    adj[b] += values[a] * g
                elif p is passes:
                    adj[a] += adj[i]
                elif p is scale:
                    adj[a] += values[b] * adj[i]
                elif p is sub:
                    g = adj[i]
                    adj[a] += g
                    adj[b] -= g
                elif p is negate:
                    adj[a] -= adj[i]
                else:
                    g = adj[i]
                    if g == 0.0:
                        continue  # nothing flows back through this node
                    kind = p.__class__
                    if kind is float:
                        adj[a] += p * g
                    elif kind is tuple:
                        adj[a] += p[0] * g
                        adj[b] += p[1] * g
                    elif kind is list:
                        pa, pb = p[0](values[a], values[b], values[i])
                        adj[a] += pa * g
                        adj[b] += pb * g
                    elif b < 0:
                        adj[a] += p(values[a], values[i]) * g
                    else:
                        adj[a] += p(values[a], values[b], values[i]) * g
    except (ArithmeticError, ValueError):
        raise slope_error(graph, i, values) from None


def _float_reverse_wide(graph: Graph, values: list, steps, adj: list) -> None:
    """The same loop for graphs with an op of more than two arguments (``where``), reading
    the forward steps; an argument no input reaches gets nothing here either."""
    depends = depends_on_input(graph)
    i = -1
    try:
        for i, _, p, _, _ in steps:
            g = adj[i]
            if g == 0.0:
                continue
            args = graph.args[i]
            for a, pa in zip(args, step_partials(p, values, args, i)):
                if depends[a]:
                    adj[a] += pa * g
    except (ArithmeticError, ValueError):
        raise slope_error(graph, i, values) from None


def _first_undefined(graph: Graph, values, out: int, seed: float) -> DomainError:
    """The reverse pass again, node by node, to find where a gradient went non-finite."""
    adj = [0.0] * len(graph.ops)
    adj[out] = seed
    depends = depends_on_input(graph)
    from .evaluate import local_partials

    for i in range(out, -1, -1):
        g = adj[i]
        if g == 0.0 or not graph.ops[i].arity:
            continue
        partials = local_partials(graph, values, i)
        for arg, partial in zip(graph.args[i], partials):
            adj[arg] += partial * g
            if depends[arg] and not math.isfinite(adj[arg]):
                if math.isfinite(partial):
                    return graph.error(
                        DomainError,
                        f"the gradient through {graph.text(i)} overflows: it is too large "
                        "for a float64",
                        i,
                        hints=[
                            f"the gradient with respect to {graph.display_name(arg)} "
                            "exceeds about 1.8e308"
                        ],
                    )
                return slope_error(graph, i, values)
    return graph.error(DomainError, "a gradient is not a finite number", out)  # pragma: no cover


# --- arrays ------------------------------------------------------------------------------------
def require_scalar(graph: Graph, values: list, node: int) -> None:
    """A gradient is of one number: say how to get one from a tensor ``node``."""
    value = values[node]
    if value.__class__ is float or np.ndim(value) == 0:
        return
    name = graph.display_name(node)
    shown = name if name.isidentifier() else f"({name})"
    first = ", ".join("0" for _ in np.shape(value))
    hint = (
        f"reduce it, as a loss does: sum({name}) or mean({name}); "
        f"or pick one element: {shown}[{first}]"
    )
    if np.size(value) == 0:
        hint = f"it is empty, so it has no element to pick; sum({name}) is 0"
    raise graph.error(
        EvalError,
        f"{name} is a {show_shape(np.shape(value))} tensor; gradients need a single number",
        node,
        hints=[hint],
    )


def vjp_arrays(graph: Graph, values: list, of: int | None = None, seed: float = 1.0) -> list:
    """Adjoints of node ``of`` (a number) with respect to every node, shaped like the nodes;
    nodes the output does not depend on get zeros."""
    out = graph.output if of is None else of
    require_scalar(graph, values, out)
    needs = [n and graph.ops[i] is not CONST for i, n in enumerate(depends_on_input(graph))]
    adj = _array_reverse(graph, values, out, seed, needs, checked=False)
    if not all(all_finite(adj[n]) for n in graph.inputs.values() if adj[n] is not None):
        # Again, slowly: an infinite partial met by a zero gradient contributes nothing; any
        # other non-finite gradient raises at the node that made it.
        adj = _array_reverse(graph, values, out, seed, needs, checked=True)
    return [
        (np.zeros_like(values[i]) if values[i].__class__ is not float else 0.0) if a is None else a
        for i, a in enumerate(adj)
    ]


def _array_reverse(graph, values, out, seed, needs, checked: bool) -> list:
    def check(i: int, a: int, total, g) -> None:
        if needs[a] and not finite(total):
            raise _slope_error(graph, values, i, a, total, g)

    with np.errstate(all="ignore"):
        try:
            return reverse(
                graph, values, ARRAYS, out, seed, needs, checked, check if checked else None
            )
        except MemoryError:
            raise no_memory(graph, out, values) from None


def _slope_error(graph: Graph, values: list, i: int, a: int, adj, g) -> DomainError:
    """The error for node ``i`` that passed argument ``a`` a gradient ``adj`` that is not
    finite: for an elementwise op whose local derivative is not finite, at the first such
    element (``sqrt(0)`` at ``[1]``); else the gradient itself overflowed."""
    op = graph.ops[i]
    if op.vjp is None:
        shape = np.shape(values[i])
        xs = [values[x] for x in graph.args[i]]
        for k, rule in enumerate(op.partials or ()):
            if rule is None or graph.args[i][k] != a:
                continue
            p = np.broadcast_to(rule(ARRAYS, *xs, values[i]), shape)
            bad = ~np.isfinite(p) & (np.broadcast_to(g, shape) != 0.0)
            if bad.any():
                return slope_error(graph, i, values, *element(graph, values, i, bad))
    return graph.error(
        DomainError,
        f"the gradient through {graph.text(i)} overflows{at(~np.isfinite(adj))}: "
        f"it is too large for a float64",
        i,
        hints=[f"the gradient with respect to {graph.display_name(a)} exceeds about 1.8e308"],
    )
