"""Derivatives beyond the gradient, evaluated at the user's bindings: Hessians (forward mode
over the derivative program, as JAX's ``hessian``), Hessian-vector products, Jacobians and
forward-mode tangents. The programs they run come from :mod:`cgraph_cli.passes.derivatives`.

>>> from cgraph_cli import parse
>>> hessian(parse("f = x^2 * y + sin(y)"), {"x": 1, "y": 2})["hessian"]
[[4.0, 2.0], [2.0, -0.9092974268256817]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..core.errors import UsageError
from ..core.ir import Graph, resolve_name
from ..data.bindings import check_bindings
from ..passes.derivatives import wrt_inputs
from ..passes.grad_graph import grad_graph
from .control import ran_graph


def _require_number(graph: Graph, values: list, out: int) -> None:
    """Second derivatives are of an output that is a number."""
    shape = getattr(values[out], "shape", ())
    if shape:
        from ..core.errors import EvalError

        name = graph.display_name(out)
        raise graph.error(
            EvalError,
            f"{name} is a {tuple(shape)} tensor; second derivatives need a single number",
            out,
            hints=[
                f"reduce it: sum({name}) or mean({name}); for the first derivatives of every "
                "element: cgraph jacobian"
            ],
        )


#: The most elements of a Jacobian or a Hessian: 2**24 (4,096 x 4,096). Less than the 2**28 of
#: a value: the matrix is reported as numbers (a Hessian as lists, JSON as text), about 100
#: bytes an element, so 2**24 is some 1.7 GB at the peak.
MAX_MATRIX = 2**24


def _check_size(what: str, rows: int, cols: int) -> None:
    """Refuse a ``rows`` x ``cols`` matrix over :data:`MAX_MATRIX` elements, before anything is
    computed or allocated.

    >>> try:
    ...     _check_size("Jacobian", 100_000, 100_000)
    ... except Exception as e:
    ...     print(e.message)
    the Jacobian would have 100,000 x 100,000 = 10,000,000,000 elements (80 GB): more than
    the 16,777,216 cgraph computes
    """
    from ..core.arrays import size_text
    from ..core.errors import EvalError

    if rows * cols <= MAX_MATRIX:
        return
    raise EvalError(
        f"the {what} would have {rows:,} x {cols:,} = {rows * cols:,} elements "
        f"({size_text(rows * cols)}): more than the {MAX_MATRIX:,} cgraph computes",
        hints=[
            "ask for fewer inputs (--wrt)"
            + (" or a smaller output (--of)" if what == "Jacobian" else "")
            + ("; or one product with a direction, --vector" if what == "Hessian" else "")
        ],
    )


# --- numbers -------------------------------------------------------------------------------------
def _flat(value) -> list[float]:
    return [value] if value.__class__ is float else [float(v) for v in value.ravel()]


def _one_hot(shape: tuple[int, ...], k: int):
    if not shape:
        return 1.0
    from ..core.arrays import np

    t = np.zeros(shape)
    t.flat[k] = 1.0
    return t


def _labels(name: str, shape: tuple[int, ...]) -> list[str]:
    if not shape:
        return [name]
    from ..core.arrays import np

    return [f"{name}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*shape)]


def hessian(
    graph: Graph,
    bindings: Mapping | None = None,
    of: str | None = None,
    wrt: list[str] | None = None,
    vector: Mapping | None = None,
) -> dict:
    """The matrix of second derivatives of the output with respect to the inputs ``wrt``
    (default: all), by forward mode over the derivative program: one pass per input element
    (forward-over-reverse, as JAX's ``hessian``). Tensor inputs count element by element, in
    order (``"labels"`` names each row). With ``vector`` (a direction per input), only the
    Hessian-vector product, in one pass."""
    graph = ran_graph(graph, bindings)
    from ..run.evaluate import forward
    from ..run.jvp import jvp

    out = graph.output if of is None else resolve_name(graph, of)
    wrt = [w for w in wrt_inputs(graph, wrt)]
    for w in wrt:
        if w not in graph.inputs:
            raise UsageError(f"'{w}' is not an input: a Hessian is with respect to inputs")
    checked = check_bindings(graph, bindings)
    values = forward(graph, checked)
    _require_number(graph, values, out)
    shapes = {n: tuple(getattr(values[i], "shape", ())) for n, i in graph.inputs.items()}
    derived = grad_graph(graph, out, wrt, shapes)
    dg = derived.graph
    # (an input that nothing reads on the way to the output is not in the derivative program)
    point = {n: values[i] for n, i in graph.inputs.items() if n in dg.inputs}
    dvalues = forward(dg, point)
    holders = [dg.names[derived.gradients[w]] for w in wrt]
    report = {
        "output": graph.display_name(out),
        "value": values[out],
        "inputs": wrt,
        "gradients": {w: dvalues[h] for w, h in zip(wrt, holders)},
    }
    if any(shapes[w] for w in wrt):
        report["shapes"] = {w: list(shapes[w]) for w in wrt}
    if vector is not None:
        tangents = {n: v for n, v in vector.items() if n in dg.inputs}
        t = jvp(dg, dvalues, tangents)
        report["vector"] = dict(vector)
        report["hvp"] = {w: t[h] for w, h in zip(wrt, holders)}
        return report
    n = sum(math.prod(shapes[w]) for w in wrt)
    _check_size("Hessian", n, n)
    columns = []
    for w in wrt:
        size = math.prod(shapes[w])
        if w not in dg.inputs:  # the gradient does not depend on w: its columns are 0
            columns += [[0.0] * n] * size
            continue
        for k in range(size):
            t = jvp(dg, dvalues, {w: _one_hot(shapes[w], k)})
            columns.append([x for h in holders for x in _flat(t[h])])
    report["hessian"] = [list(row) for row in zip(*columns)] if columns else []
    report["labels"] = [label for w in wrt for label in _labels(w, shapes[w])]
    return report


def jacobian(
    graph: Graph,
    bindings: Mapping | None = None,
    of: str | None = None,
    wrt: list[str] | None = None,
    mode: str = "auto",
) -> dict:
    """The Jacobian of the output (any shape) with respect to each input in ``wrt``: per
    input, an array of shape ``output.shape + input.shape``. By rows (reverse mode: one pass
    per output element) or by columns (forward mode: one pass per input element), whichever
    needs fewer passes unless ``mode`` says."""
    graph = ran_graph(graph, bindings)
    from ..core.arrays import np
    from ..core.autodiff import reverse
    from ..core.interpret import ARRAYS
    from ..core.ops import CONST
    from ..core.walks import depends_on_input
    from ..run.evaluate import forward
    from ..run.jvp import jvp

    out = graph.output if of is None else resolve_name(graph, of)
    wrt = wrt_inputs(graph, wrt)
    for w in wrt:
        if w not in graph.inputs:
            raise UsageError(f"'{w}' is not an input: a Jacobian is with respect to inputs")
    values = forward(graph, check_bindings(graph, bindings))
    y = values[out]
    out_shape = tuple(getattr(y, "shape", ()))
    shapes = {w: tuple(getattr(values[graph.inputs[w]], "shape", ())) for w in wrt}
    rows, cols = math.prod(out_shape), sum(math.prod(s) for s in shapes.values())
    _check_size("Jacobian", rows, cols)
    if mode == "auto":
        mode = "reverse" if rows <= cols else "forward"
    blocks = {w: np.zeros(out_shape + shapes[w]) for w in wrt}
    if mode == "reverse":
        needs = [d and graph.ops[i] is not CONST for i, d in enumerate(depends_on_input(graph))]
        with np.errstate(all="ignore"):
            for k in range(rows):
                adj = reverse(graph, values, ARRAYS, out, _one_hot(out_shape, k), needs)
                for w in wrt:
                    g = adj[graph.inputs[w]]
                    row = np.zeros(shapes[w]) if g is None else np.broadcast_to(g, shapes[w])
                    blocks[w].reshape(rows, -1)[k] = np.ravel(row)
        passes = rows
    else:
        for w in wrt:
            size = math.prod(shapes[w])
            for k in range(size):
                t = jvp(graph, values, {w: _one_hot(shapes[w], k)})[out]
                blocks[w].reshape(rows, size)[:, k] = np.ravel(t)
        passes = cols
    return {
        "output": graph.display_name(out),
        "value": y,
        "jacobian": {w: (float(b) if b.ndim == 0 else b) for w, b in blocks.items()},
        "shapes": {"output": list(out_shape), "inputs": {w: list(s) for w, s in shapes.items()}},
        "mode": mode,
        "passes": passes,
    }


def tangents_report(graph: Graph, bindings: Mapping | None, tangents: Mapping) -> dict:
    """Forward mode: every named value with its tangent along ``tangents`` (by input)."""
    from ..run.evaluate import forward
    from ..run.jvp import jvp

    if not tangents:
        raise UsageError(
            "forward mode needs a direction", hints=["give a tangent per input: --tangent x=1"]
        )
    values = forward(graph, check_bindings(graph, bindings))
    t = jvp(graph, values, tangents)
    named = graph.named_nodes()
    out = graph.output
    return {
        "output": graph.display_name(out),
        "value": values[out],
        "tangents": dict(tangents),
        "jvp": t[out],
        "values": {n: values[i] for n, i in named.items()},
        "node_tangents": {n: t[i] for n, i in named.items()},
    }


def hessian_columns(
    graph: Graph,
    bindings: Mapping | None,
    columns: list[tuple[str, tuple[int, ...]]],
    of: str | int | None = None,
) -> list[dict]:
    """Some columns of the Hessian: for each ``(input, element)`` in ``columns`` (``()`` for
    an input that is a number), the derivative of every input's gradient along that element,
    ∂²output/∂input∂column, shaped as the input. One forward-mode pass over the derivative
    program per column, so a few entries of a large Hessian cost a few passes. ``of``: the
    output's name, or its node.

    >>> from cgraph_cli import parse
    >>> hessian_columns(parse("f = x^2 * y"), {"x": 1, "y": 2}, [("x", ()), ("y", ())])
    [{'x': 4.0, 'y': 2.0}, {'x': 2.0, 'y': 0.0}]
    """
    from ..run.evaluate import forward
    from ..run.jvp import jvp

    out = graph.output if of is None else of if isinstance(of, int) else resolve_name(graph, of)
    values = forward(graph, check_bindings(graph, bindings))
    _require_number(graph, values, out)
    point = {n: values[i] for n, i in graph.inputs.items()}
    shapes = {n: tuple(getattr(v, "shape", ())) for n, v in point.items()}
    derived = grad_graph(graph, out, list(graph.inputs), shapes)
    dvalues = forward(derived.graph, point)
    holders = {w: derived.graph.names[derived.gradients[w]] for w in graph.inputs}
    result = []
    for name, element in columns:
        direction = _one_hot(shapes[name], _flat_index(shapes[name], element))
        t = jvp(derived.graph, dvalues, {name: direction})
        result.append({w: t[h] for w, h in holders.items()})
    return result


def _flat_index(shape: tuple[int, ...], element: tuple[int, ...]) -> int:
    if not shape:
        return 0
    from ..core.arrays import np

    return int(np.ravel_multi_index(element, shape))
