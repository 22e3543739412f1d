"""The reverse pass (vjp): adjoints ∂out/∂node for every node, from the op table's partials.

The forward program runs backwards from the output with ``adj[out] = 1``; each node passes
``partial * adj[node]`` to each argument with ``+=``, so fan-out sums over paths.

>>> from cgraph_cli import parse
>>> from cgraph_cli.forward import forward
>>> g = parse("y = x * x")
>>> vjp(g, forward(g, {"x": 3}))[g.inputs["x"]]
6.0
"""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import islice

from .errors import DomainError
from .forward import SWAPPED, compile_program, is_tensor_run, slope_error
from .ir import Graph, gc_paused
from .ops import INPUT


def vjp(graph: Graph, values: list[float], of: int | None = None, seed: float = 1.0) -> list[float]:
    """Adjoints of node ``of`` (default: the output) with respect to every node."""
    if is_tensor_run(graph, values):
        from .tensors import vjp_tensors

        return vjp_tensors(graph, values, of, seed)
    out = graph.output if of is None else of
    program = compile_program(graph)
    adj = [0.0] * len(graph.ops)
    adj[out] = seed
    # Only nodes up to `out` can reach it: skip the instructions after it.
    skip = len(program.ids) - bisect_right(program.ids, out)
    steps = islice(program.backward, skip, None)
    i = -1
    try:
        with gc_paused():  # the partials' tuples would otherwise wake the collector
            for i, p, a, b in steps:
                g = adj[i]
                if g == 0.0:
                    continue  # nothing flows back through this node
                if b < 0:
                    pa = p[0] if p.__class__ is tuple else p(values[a], values[i])[0]
                    adj[a] += pa * g
                else:
                    if p is SWAPPED:
                        adj[a] += values[b] * g
                        adj[b] += values[a] * g
                        continue
                    pa, pb = p if p.__class__ is tuple else p(values[a], values[b], values[i])
                    adj[a] += pa * g
                    adj[b] += pb * g
    except (ArithmeticError, ValueError):
        raise slope_error(graph, i, values) from None
    if not all(math.isfinite(adj[n]) for n in graph.inputs.values()):
        raise _first_undefined(graph, values, program.backward[skip:], out, seed)
    return adj


def _first_undefined(graph: Graph, values, steps, out: int, seed: float) -> DomainError:
    """Rerun the reverse pass slowly to find the node whose local derivative went non-finite."""
    adj = [0.0] * len(graph.ops)
    adj[out] = seed
    depends = _depends_on_input(graph)
    for i, p, a, b in steps:
        g = adj[i]
        if g == 0.0:
            continue
        args = (a,) if b < 0 else (a, b)
        if p is SWAPPED:
            partials = (values[b], values[a])
        else:
            partials = p if p.__class__ is tuple else p(*(values[x] for x in args), values[i])
        for arg, partial in zip(args, partials):
            adj[arg] += partial * g
            if depends[arg] and not math.isfinite(adj[arg]):
                return slope_error(graph, i, values)
    # Unreachable while the fast loop and this one agree; kept as a clear message regardless.
    return graph.error(DomainError, "a gradient is not a finite number", out)


def _depends_on_input(graph: Graph) -> list[bool]:
    depends = [False] * len(graph.ops)
    for i, (op, args) in enumerate(zip(graph.ops, graph.args)):
        depends[i] = op is INPUT or any(depends[a] for a in args)
    return depends
