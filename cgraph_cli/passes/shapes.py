"""The shape pass: every node's shape from its inputs' and the op table's shape rules, before
anything is computed, so that shapes that do not fit are reported at their place in the
program, and a result too large to hold is refused before it is allocated.

>>> import numpy as np
>>> from cgraph_cli import parse
>>> g = parse("y = sum(W @ x)")
>>> shapes_of_values(g, [np.ones((2, 3)), np.ones(3), None, None])
[(2, 3), (3,), (2,), ()]
"""

from __future__ import annotations

import math

from ..core import arrays as A
from ..core.arrays import MAX_AXES, NoValue, ShapeMismatch, shape_of, show_shape, size_text
from ..core.errors import EvalError
from ..core.ir import Graph
from ..core.ops import CONST, INPUT, POSTFIX


class ShapeError(EvalError):
    """Shapes that do not fit together (exit code 4, like every error found before running)."""


def shapes_of_values(graph: Graph, values: list) -> list[tuple[int, ...]]:
    """Every node's shape, the leaves' taken from ``values``. The last result is kept per
    graph: a training loop runs with the same input shapes every time."""
    key = tuple(shape_of(values[n]) for n in graph.inputs.values())
    cached = graph.memo.get("shapes")
    if cached is not None and cached[0] == key:
        return cached[1]
    out = _infer(
        graph, [shape_of(v) if graph.ops[i].arity == 0 else () for i, v in enumerate(values)]
    )
    graph.memo["shapes"] = (key, out)
    return out


def _infer(graph: Graph, leaves: list) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = list(leaves)
    params = graph.params
    for i, (op, args) in enumerate(zip(graph.ops, graph.args)):
        if op is INPUT or op is CONST:
            continue
        try:
            out[i] = op.shape([out[a] for a in args], params.get(i, ()))
        except NoValue as e:
            raise graph.error(ShapeError, f"{graph.text(i)} {e}", i) from None
        except ShapeMismatch as e:
            raise graph.error(ShapeError, str(e), i) from None
        if len(out[i]) > MAX_AXES or math.prod(out[i]) > A.MAX_ELEMENTS:
            raise _too_large(graph, i, out)
    return out


def _too_large(graph: Graph, i: int, shapes: list) -> ShapeError:
    """The error for node ``i`` whose result NumPy cannot hold (more than 64 axes) or that
    would take more memory than one value may (:data:`A.MAX_ELEMENTS`)."""
    op, shape = graph.ops[i], shapes[i]
    what = "indexing" if op.style == POSTFIX else op.symbol
    given = " and ".join(show_shape(shapes[a]) for a in graph.args[i])
    hints = [f"its argument{'s are' if len(graph.args[i]) > 1 else ' is'} {given}"]
    if len(shape) > MAX_AXES:
        return graph.error(
            ShapeError,
            f"the result of {what} would have {len(shape)} axes; a tensor has at "
            f"most {MAX_AXES} (NumPy's limit)",
            i,
            hints=hints,
        )
    return graph.error(
        ShapeError,
        f"the result of {what} would be a {show_shape(shape)} tensor of "
        f"{size_text(math.prod(shape))}; the limit is {A.MAX_ELEMENTS:,} elements "
        f"({size_text(A.MAX_ELEMENTS)}) per value",
        i,
        hints=hints,
    )
