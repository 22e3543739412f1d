"""Where the tests exercise each op of the op table, worked out from the table itself: the
parameters of the op's example, other values of each parameter (by its name), every argument
shape of a few that the op's shape rule accepts, and the range its arguments are drawn from. A
new op is exercised by the tests that use these without a line here; a parameter of a new kind
is tried at its example's value."""

from __future__ import annotations

import itertools
import math
from functools import cache

from cgraph_cli import parse
from cgraph_cli.core.arrays import ShapeMismatch
from cgraph_cli.core.interpret import value_function
from cgraph_cli.core.ops import OpSpec

Shape = tuple[int, ...]
#: The argument shapes tried: matrices, vectors, a number and a stack of matrices, no two of a
#: size alike but (2, 3) and (3, 2), so that a rule that mixes up an argument's axes meets a
#: shape it cannot take; and images (batch, channels, height, width) with the weights of a
#: convolution (3, 2, 2, 2) and (2, 1, 2, 2) in two groups, and what they and pools make.
SHAPES: tuple[Shape, ...] = (
    (2, 3),
    (3, 2),
    (3, 4),
    (3,),
    (2,),
    (6,),
    (),
    (2, 2, 3),
    (1, 2, 3, 3),
    (3, 2, 2, 2),
    (1, 3, 2, 2),
    (1, 2, 2, 2),
    (2, 1, 2, 2),
)
#: Values tried for a parameter, by its name in the table (`OpSpec.params`).
PARAMETERS: dict[str, tuple] = {
    "axis": (0, 1, -1),
    "shape": ((2, 3), (3, 2), (3,), (4,), (2, 1), (6,)),
    "indices": ((0,), (1,), (0, slice(1, None)), (slice(1, 3),)),
    "axes": ((1, 0), (0, 1), (0,), (1, 0, 2)),
    "size": ((1, 2, 3, 3), (3, 2, 2, 2), (2, 1, 2, 2)),
    "window": ((2, 2), (1, 2)),
    "strides": ((1, 1), (2, 1)),
    "pads": ((0, 0, 0, 0), (1, 0, 1, 1)),
    "dilations": ((1, 1), (1, 2)),
    "groups": (1, 2),
    "count_pads": (0, 1),
}
#: Where arguments are drawn from: the first range on which an op is finite and moderate.
RANGES = ((-2.0, 2.0), (0.2, 1.2))


@cache
def example(op: OpSpec) -> tuple[tuple[str, ...], tuple]:
    """The input names and the parameters of ``op``'s example, which parses to ``op``.

    >>> from cgraph_cli.core.ops import OPS
    >>> example(OPS["place"]), example(OPS["where"])
    ((('x',), ((4,), (slice(1, 3, None),))), (('c', 'x', 'y'), ()))
    """
    graph = parse(op.example)
    assert graph.ops[graph.output] is op, f"{op.name}: its example {op.example!r} is another op"
    return tuple(graph.inputs), graph.params.get(graph.output, ())


def parameters(op: OpSpec) -> list[tuple]:
    """The example's parameters, then every combination of ``PARAMETERS``' values for the
    op's parameters (those after the required ones may be left out).

    >>> from cgraph_cli.core.ops import OPS
    >>> parameters(OPS["sum"]), len(parameters(OPS["place"]))
    ([(), (0,), (1,), (-1,)], 24)
    """
    found = [example(op)[1]]
    values = [PARAMETERS.get(name, ()) for name in op.params]
    for given in range(op.required, len(op.params) + 1):
        for combination in itertools.product(*values[:given]):
            if combination not in found:
                found.append(combination)
    return found


def cases(op: OpSpec, params: list[tuple] | None = None) -> list[tuple[tuple[Shape, ...], tuple]]:
    """Every (argument shapes, parameters) of ``SHAPES`` and ``params`` (all of
    :func:`parameters` unless given) that ``op``'s shape rule accepts.

    >>> from cgraph_cli.core.ops import OPS
    >>> cases(OPS["outer"])[:2], cases(OPS["place"], [example(OPS["place"])[1]])
    ([(((3,), (3,)), ()), (((3,), (2,)), ())], [(((2,),), ((4,), (slice(1, 3, None),)))])
    """
    found = []
    for given in parameters(op) if params is None else params:
        for shapes in itertools.product(SHAPES, repeat=op.arity):
            try:
                op.shape(list(shapes), given)
            except ShapeMismatch:
                continue
            found.append((shapes, given))
    return found


@cache
def value_range(op: OpSpec) -> tuple[float, float]:
    """The first of ``RANGES`` on whose grid ``op``'s float rule is finite and below 10 in
    size everywhere (a pole, a log of 0, a division by 0 or a negative base rule the wide one
    out); the first for an op with no float rule.

    >>> from cgraph_cli.core.ops import OPS
    >>> value_range(OPS["sin"]), value_range(OPS["log"]), value_range(OPS["tan"])
    ((-2.0, 2.0), (0.2, 1.2), (0.2, 1.2))
    """
    if op.py is None:
        return RANGES[0]
    rule = value_function(op)
    for low, high in RANGES:
        grid = [low + (high - low) * k / 40 for k in range(41)]
        try:
            values = [rule(*p) for p in itertools.product(grid, repeat=op.arity)]
        except (ArithmeticError, ValueError):
            continue
        if all(math.isfinite(v) and abs(v) < 10 for v in values):
            return low, high
    raise AssertionError(f"{op.name}: no range in tests/op_cases.py RANGES suits it: add one")


def arguments(op: OpSpec, shapes, params, rng, low: float, high: float) -> list:
    """Arguments of ``shapes`` for ``op``: numbers drawn from ``low`` to ``high``, and for
    an argument that holds positions (take's), whole numbers from -m to m - 1, m the
    smallest size of any axis the op reads (so that every position is in range, whichever
    axis it is taken along)."""

    sizes = [n for k, s in enumerate(shapes) if k not in op.positions for n in s]
    sizes += [n for p in params if isinstance(p, tuple) for n in p if isinstance(n, int)]
    m = max(1, min(sizes, default=1))
    return [
        rng.integers(-m, m, size=s).astype(float) if k in op.positions
        else rng.uniform(low, high, size=s)
        for k, s in enumerate(shapes)
    ]  # fmt: skip


def example_cases(op: OpSpec) -> list[tuple[tuple[Shape, ...], tuple]]:
    """The cases of ``op``'s example (its parameters) whose shapes fit the arguments written
    in it (take(x, [0, -1, 0]): positions of shape (3,))."""
    graph = parse(op.example)
    written = {k: tuple(getattr(graph.consts[a], "shape", ()))
               for k, a in enumerate(graph.args[graph.output]) if a in graph.consts}  # fmt: skip
    return [
        (shapes, params)
        for shapes, params in cases(op, [example(op)[1]])
        if all(shapes[k] == shape for k, shape in written.items())
    ]
