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
from itertools import islice
from operator import itemgetter

from ..core.arrays import np, show_shape
from ..core.autodiff import reverse
from ..core.errors import DomainError, EvalError
from ..core.interpret import ARRAYS
from ..core.ir import Graph, gc_paused
from ..core.ops import CONST
from ..core.walks import depends_on_input
from ..data.bindings import all_finite, finite
from .evaluate import at, element, is_tensor_run, no_memory, slope_error
from .floats import (
    ADD,
    NEGATE,
    PASS,
    SCALE,
    SUB,
    SWAPPED,
    Second,
    compile_program,
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
    # Only nodes up to `out` can reach it: skip the steps after it (none, for the output).
    after = 0
    if program.steps and program.steps[-1][0] > out:
        from bisect import bisect_right  # (here: most calls are of the output)

        after = len(program.steps) - bisect_right(program.steps, out, key=itemgetter(0))
    steps = islice(reversed(program.steps), after, None) if after else reversed(program.steps)
    if program.wide:
        _float_reverse_wide(graph, values, steps, adj)
    else:
        _float_reverse(graph, values, steps, adj)
    if not all(math.isfinite(adj[n]) for n in graph.inputs.values()):
        raise _first_undefined(graph, values, out, seed)
    return adj


def _float_reverse(graph: Graph, values: list, steps, adj: list) -> None:
    """The hot loop: each step's partial read inline, the commonest kinds first, with no call
    and no allocation but a float's for them (``bench/bench_core.py`` times it against a bare
    tape loop). A step whose node gets no gradient is skipped first: an undefined partial
    there raises nothing, and the nodes that do not reach the output cost a comparison."""
    add, sub, swapped, passes, negate, scale = ADD, SUB, SWAPPED, PASS, NEGATE, SCALE
    i = -1
    try:
        with gc_paused():  # a step with a list makes a tuple, which would wake the collector
            for i, _, p, a, b in steps:
                g = adj[i]
                if g == 0.0:
                    continue  # nothing flows back through this node (most, in some graphs)
                if p is add:
                    adj[a] += g
                    adj[b] += g
                elif p is swapped:
                    adj[a] += values[b] * g
                    adj[b] += values[a] * g
                elif p is passes:
                    adj[a] += g
                elif p is scale:
                    adj[a] += values[b] * g
                elif p is sub:
                    adj[a] += g
                    adj[b] -= g
                elif p is negate:
                    adj[a] -= g
                elif p is None:
                    continue  # nothing needs a gradient from this node
                else:
                    kind = p.__class__
                    if kind is float:
                        adj[a] += p * g
                    elif kind is Second:
                        q = p.partial
                        if q.__class__ is not float:
                            q = q(values[b], values[a], values[i])
                        adj[b] += q * g
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
        for i, _, p, a, b in steps:
            g = adj[i]
            if g == 0.0:
                continue
            args = graph.args[i]
            if len(args) < 3:  # as the step holds them (add and mul may swap theirs)
                args = (a,) if b < 0 else (a, b)
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
