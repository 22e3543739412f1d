"""The float program: a graph's operation nodes as flat steps for the scalar loops (the
forward loop in :mod:`cgraph_cli.run.evaluate`, the reverse loop in :mod:`cgraph_cli.run.vjp`),
compiled once per graph from the op table's rules and kept on it. Scalar programs never
import NumPy.

>>> from cgraph_cli import parse
>>> program = compile_program(parse("y = 2 * x + sin(x)"))
>>> [(node, p if isinstance(p, str) else p(0.0, 0.0)) for node, _, p, _, _ in program.steps]
[(2, 'scale'), (3, 1.0), (4, 'add')]
"""

from __future__ import annotations

from ..core.interpret import (
    constant_partials,
    partial_function,
    partials_function,
    swaps_arguments,
    value_function,
)
from ..core.ir import Graph, gc_paused
from ..core.ops import INPUT

# What a step passes back in the reverse loop (see FloatProgram):
SWAPPED = "swapped"  # adj[a] += values[b] * g; adj[b] += values[a] * g (mul)
ADD = "add"  # adj[a] += g; adj[b] += g
SUB = "sub"  # adj[a] += g; adj[b] -= g
PASS = "pass"  # adj[a] += g
NEGATE = "negate"  # adj[a] -= g
SCALE = "scale"  # adj[a] += values[b] * g (mul by a value that needs no gradient)


_FAR = 512  # nodes back: the graph's number of such a node is copied into the step


class Second:
    """A step's partial when only its second argument needs a gradient, and the op is not
    one whose arguments can simply swap places (``2 - x``, ``1 / x``, ``2 ^ x``): a float, or
    a function of (the second argument's value, the first's, the node's)."""

    __slots__ = ("partial",)

    def __init__(self, partial) -> None:
        self.partial = partial


class FloatProgram:
    """A graph's operation nodes as flat tuples for the float loops.

    ``steps`` holds ``(node, value function, partial, a, b or -1)`` in topological order:
    the forward loop reads it forwards, the reverse loop backwards. ``partial`` says what
    the node passes back to the arguments that need a gradient (those an input reaches
    through ops with derivatives; the others get nothing, so constants get no adjoint), made
    once per op and per which of its arguments need one, from the op table's rules: None
    (nothing), one of the kinds above, a float (``a``'s constant partial, ``b`` needing
    none), a tuple of two (both constant), a list holding a function of ``(*args, out)``
    giving every argument's, a :class:`Second`, or a function giving ``a``'s (of ``a``'s
    value, ``b``'s if ``b >= 0``, and the node's). A commutative op (add, mul) whose second
    argument alone needs a gradient has its arguments swapped here, so that it is ``a``.
    :func:`step_partials` reads any of them as a tuple.

    ``wide`` says an op takes more than two arguments (``where``): the loops then read
    ``args`` instead. ``tensor`` says the graph needs the array passes whatever its bindings
    are (an array constant, or an op with no float rule).
    """

    __slots__ = ("steps", "template", "tensor", "wide", "args")

    def __init__(self, graph: Graph) -> None:
        self.args = graph.args
        self.tensor = any(v.__class__ is not float for v in graph.consts.values())
        with gc_paused():
            made: dict = {}  # what _steps made, by op: the graph's ops, with no pass of their own
            steps = None if self.tensor else _steps(graph, made)
            self.tensor = steps is None
            self.steps: list = steps or []
            ops = (
                set(graph.ops)
                if steps is None
                else {k[0] if k.__class__ is tuple else k for k in made}
            )
            self.wide = any(op.arity > 2 for op in ops)
            template: list = [0.0] * len(graph.ops)  # constants in place; copied for every run
            for node, value in graph.consts.items():
                template[node] = value
        self.template = template


def compile_program(graph: Graph) -> FloatProgram:
    """The graph's :class:`FloatProgram`, compiled on first use."""
    program = graph.memo.get("program")
    if program is None:
        program = graph.memo["program"] = FloatProgram(graph)
    return program


def _steps(graph: Graph, made: dict) -> list | None:
    """The steps of :class:`FloatProgram`, or None at the first op with no float rule. What
    a step needs depends only on its op and on which arguments an input reaches
    (:func:`~cgraph_cli.core.walks.depends_on_input`, worked out here as the loop goes), so
    it is made once per such pair, not once per node (and looked up by the op alone in the
    commonest case, two arguments that both need a gradient). ``made``, filled in here: op,
    or (op, which arguments need a gradient) -> its step, or None."""
    depends: list[bool] = []  # whether an input reaches each node
    steps: list = []
    add, reach, far = steps.append, depends.append, _FAR
    key: tuple
    # Each step holds its own copies of the numbers of arguments made long before (a + 0 is
    # a new int above 256): the loops touch each number they unpack, and the graph's, made as
    # it was parsed, lie anywhere in memory; these lie by the step (10-15% of both loops on a
    # random graph of 1e5 nodes). The number of a recent node is near anyway.
    for i, op, args in zip(range(len(graph.ops)), graph.ops, graph.args):
        n = len(args)
        if n == 2:
            a, b = args
            if depends[a] and depends[b]:
                step = made.get(op) or _make(made, op, op, (True, True))
            else:
                key = (op, depends[a], depends[b])
                step = made.get(key) or _make(made, key, op, key[1:])
                if step is not None and step[3]:
                    a, b = b, a
            if i - a > far:
                a += 0
            if i - b > far:
                b += 0
        elif n == 1:
            a, b = args[0], -1
            key = (op, depends[a])
            step = made.get(key) or _make(made, key, op, key[1:])
            if i - a > far:
                a += 0
        elif n:
            a, b = args[0], args[1]
            key = (op, *(depends[x] for x in args))
            step = made.get(key) or _make(made, key, op, key[1:])
        else:
            reach(op is INPUT)
            continue
        if step is None:
            return None
        f, p, d, _ = step
        add((i, f, p, a, b))
        reach(d)
    return steps


def _make(made: dict, key, op, needs: tuple[bool, ...]) -> tuple | None:
    """A step for ``op`` whose arguments ``needs`` a gradient: (value function, partial,
    whether an input reaches the node, whether its arguments swap places); None for an op
    with no float rule."""
    step = None
    if op.py is not None:
        rules = op.partials or ()
        needs = tuple(n and k < len(rules) and rules[k] is not None for k, n in enumerate(needs))
        partial, swap = _partial(op, needs) if op.differentiable and any(needs) else (None, False)
        step = (value_function(op), partial, op.differentiable and any(needs), swap)
    made[key] = step
    return step


def _partial(op, needs: tuple[bool, ...]) -> tuple[object, bool]:
    """A step's ``partial`` for ``op`` (see :class:`FloatProgram`), and whether its two
    arguments swap places."""
    if len(needs) > 2:
        return [partials_function(op, needs)], False
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
    swap = k == 1 and (swaps_arguments(op) or constant_partials(op) == (1.0, 1.0))
    if k == 1 and not swap:
        return Second(partial), False
    if isinstance(partial, float):
        partial = {1.0: PASS, -1.0: NEGATE}.get(partial, partial)
    elif len(needs) == 2 and swaps_arguments(op):
        partial = SCALE
    return partial, swap


_CONSTANT = {ADD: (1.0, 1.0), SUB: (1.0, -1.0), PASS: (1.0, 0.0), NEGATE: (-1.0, 0.0)}


def step_partials(p, values: list, args, node: int) -> tuple:
    """A step's local partials at ``values``, one per argument of ``args`` (``a`` and ``b`` as
    the step holds them, or the node's for an op of more than two): what its ``partial``
    (:class:`FloatProgram`) stands for, 0 for an argument that needs no gradient. (The
    reverse loop reads it inline instead: that loop is the hot one.)

    >>> step_partials(SWAPPED, [3.0, 4.0, 12.0], (0, 1), 2)
    (4.0, 3.0)
    >>> step_partials(Second(-1.0), [3.0, 4.0, -1.0], (0, 1), 2)
    (0.0, -1.0)
    """
    n = len(args)
    if p is None:
        return (0.0,) * n
    if p.__class__ is str:
        if p is SWAPPED:
            return (values[args[1]], values[args[0]])
        if p is SCALE:
            return (values[args[1]], 0.0)
        return _CONSTANT[p][:n]
    if p.__class__ is float:
        return (p, 0.0)[:n]
    if p.__class__ is tuple:
        return p
    if p.__class__ is list:
        return p[0](*[values[x] for x in args], values[node])
    if p.__class__ is Second:
        q = p.partial
        a, b = args
        return (0.0, q if q.__class__ is float else q(values[b], values[a], values[node]))
    if n == 1:
        return (p(values[args[0]], values[node]),)
    return (p(values[args[0]], values[args[1]], values[node]), 0.0)
