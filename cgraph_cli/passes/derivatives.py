"""Derivatives beyond the gradient: derivative programs of any order, Hessians, forward mode
(jvp) and Jacobians. Each is the graph transform of :mod:`cgraph_cli.passes.grad_graph` or the
one forward-mode and reverse loops, evaluated with the user's bindings.

>>> from cgraph_cli import parse, to_source
>>> print(to_source(derivative_program(parse("f = x^3"), order=2).graph), end="")
f = x ^ 3
df_dx = 3 * x ^ 2
d2f_dx2 = 6 * x
>>> hessian(parse("f = x^2 * y + sin(y)"), {"x": 1, "y": 2})["hessian"]
[[4.0, 2.0], [2.0, -0.9092974268256817]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from ..core.ir import Graph, resolve_name
from .grad_graph import Derived, grad_graph, input_shapes

if TYPE_CHECKING:
    from .jvp_graph import TangentProgram

MAX_ORDER = 4


@dataclass(frozen=True)
class Program:
    """A derivative program of some order: the graph, the output differentiated, and for
    each tuple of names differentiated against (``("x",)``, ``("x", "y")``) the statement
    holding that derivative."""

    graph: Graph
    output: str
    order: int
    derivatives: dict[tuple[str, ...], str] = field(default_factory=dict)

    @property
    def gradients(self) -> dict[str, str]:
        """The first derivatives, by input (order 1)."""
        return {k[0]: v for k, v in self.derivatives.items() if len(k) == 1}


def derivative_name(out: str, names: tuple[str, ...]) -> str:
    """``df_dx``, ``d2f_dx2``, ``d2f_dxdy``, ``d3f_dx2dy``: as a textbook writes them
    (``d2o_dw1dw1`` for a name ending in a digit).

    >>> derivative_name("f", ("x", "x", "y")), derivative_name("o", ("w1", "w1"))
    ('d3f_dx2dy', 'd2o_dw1dw1')
    """
    order = len(names)
    parts, k = [], 0
    while k < order:
        run = 1
        while k + run < order and names[k + run] == names[k]:
            run += 1
        if names[k][-1].isdigit():  # d2o_dx1dx1, not d2o_dx12 (which reads as x12)
            parts.extend([f"d{names[k]}"] * run)
        else:
            parts.append(f"d{names[k]}{run if run > 1 else ''}")
        k += run
    return f"d{order if order > 1 else ''}{out}_{''.join(parts)}"


def _inputs(graph: Graph, wrt: list[str] | None) -> list[str]:
    wrt = list(graph.inputs) if not wrt else wrt
    for name in wrt:
        resolve_name(graph, name)
    return wrt


def ran_graph(graph: Graph, bindings: Mapping | None) -> Graph:
    """The graph that runs for ``bindings`` (a program with if/else or loops is differentiated
    as it runs: one branch, the loops unrolled); straight-line code as it is."""
    if graph.control is None or not hasattr(graph.control, "loops"):
        return graph
    from ..core.errors import BindingError
    from ..run.control import run_graph

    try:
        return run_graph(graph, bindings)
    except BindingError as e:
        raise UsageError(
            "this program has if/else or a loop: its derivatives are those of the graph that "
            "runs for given bindings (a derivative program with its own branches and loops "
            "is not built yet)",
            hints=[*e.hints, "give every input a value, e.g. cgraph diff samples/huber.cg e=3"],
        ) from None


def derivative_program(
    graph: Graph,
    bindings: Mapping | None = None,
    of: str | None = None,
    wrt: list[str] | None = None,
    order: int = 1,
    intermediates: bool = True,
) -> Program:
    """The program with its derivatives up to ``order`` with respect to ``wrt`` (default:
    every input), each a statement (``d2f_dxdy``); mixed ones once (∂²f/∂x∂y = ∂²f/∂y∂x).
    Shapes come from ``bindings`` or the inputs' defaults. ``intermediates``: the derivative
    with respect to each named value is a statement too (``dg_dp``)."""
    graph = ran_graph(graph, bindings)
    if not 1 <= order <= MAX_ORDER:
        raise UsageError(f"the order is 1 to {MAX_ORDER}, got {order}")
    out = graph.output if of is None else resolve_name(graph, of)
    asked = wrt or None  # derivatives asked for by name: only what they read is a statement
    wrt = _inputs(graph, wrt)
    shapes = input_shapes(graph, _checked(graph, bindings))
    if order > 1 and any(shapes.get(w) for w in wrt if w in graph.inputs):
        raise UsageError(
            "derivatives of order 2 and more are programs for inputs that are numbers",
            hints=["for tensors, cgraph hessian gives the blocks of second derivatives"],
        )
    base = graph.display_name(out)
    base = base if base.isidentifier() else "out"
    derived: Derived = grad_graph(
        graph,
        out,
        asked,
        shapes,
        names_for={w: derivative_name(base, (w,)) for w in wrt},
        intermediates=intermediates,
    )
    current = derived.graph
    derivatives: dict[tuple[str, ...], str] = {(w,): derived.gradients[w] for w in wrt}
    for k in range(2, order + 1):
        for names, holder in [(n, h) for n, h in derivatives.items() if len(n) == k - 1]:
            later = [w for w in wrt if wrt.index(w) >= wrt.index(names[-1])]
            step = grad_graph(
                current,
                current.names[holder],
                later,
                shapes,
                names_for={w: derivative_name(base, (*names, w)) for w in later},
                intermediates=False,  # ∂²f/∂x∂y, not the derivative of every first one
            )
            current = step.graph
            derivatives.update({(*names, w): step.gradients[w] for w in later})
    return Program(current, graph.display_name(out), order, derivatives)


def tangent_program(
    graph: Graph,
    bindings: Mapping | None = None,
    of: str | None = None,
    wrt: list[str] | None = None,
) -> TangentProgram:
    """The forward-mode derivative program: the tangent of every value the output reads.
    With one input in ``wrt`` that is a number, along that input (statements ``dp_dx``:
    ∂p/∂x for each value p); else along a tangent input ``<name>_dot`` for each input of
    ``wrt`` (default: every input), bound when the program runs. Shapes come from
    ``bindings`` or the defaults.

    >>> from cgraph_cli import parse, to_source
    >>> print(to_source(tangent_program(parse("p = sin(x); y = p * x"), wrt=["x"]).graph), end="")
    p = sin(x)
    y = p * x
    dp_dx = cos(x)
    dy_dx = x * dp_dx + p
    """
    from .jvp_graph import jvp_graph

    graph = ran_graph(graph, bindings)
    out = graph.output if of is None else resolve_name(graph, of)
    for name in wrt or ():
        if name not in graph.inputs:
            resolve_name(graph, name)  # an unknown name: did you mean...
            raise UsageError(
                f"'{name}' is not an input: forward mode pushes tangents from inputs",
                hints=["the program's inputs: " + ", ".join(graph.inputs)],
            )
    shapes = input_shapes(graph, _checked(graph, bindings))
    # ∂p/∂x is a tangent only for an x that is a number (for a tensor, a tangent is a
    # directional derivative: along a tangent input).
    direction: dict[str, float] | list[str]
    if wrt and len(wrt) == 1 and not shapes.get(wrt[0]):
        direction = {wrt[0]: 1.0}
    else:
        direction = wrt or list(graph.inputs)
    return jvp_graph(graph, direction, out, shapes)


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


def _checked(graph: Graph, bindings: Mapping | None) -> dict:
    from ..data.bindings import check_bindings

    return check_bindings(graph, bindings)


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
    wrt = [w for w in _inputs(graph, wrt)]
    for w in wrt:
        if w not in graph.inputs:
            raise UsageError(f"'{w}' is not an input: a Hessian is with respect to inputs")
    checked = _checked(graph, bindings)
    values = forward(graph, checked)
    _require_number(graph, values, out)
    shapes = {n: tuple(getattr(values[i], "shape", ())) for n, i in graph.inputs.items()}
    derived = grad_graph(graph, out, wrt, shapes)
    dg = derived.graph
    point = {n: values[i] for n, i in graph.inputs.items()}
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
        tangents = {n: v for n, v in vector.items()}
        t = jvp(dg, dvalues, tangents)
        report["vector"] = dict(vector)
        report["hvp"] = {w: t[h] for w, h in zip(wrt, holders)}
        return report
    columns = []
    for w in wrt:
        size = math.prod(shapes[w])
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
    from ..core.interpret import ARRAYS
    from ..core.ir import depends_on_input
    from ..core.ops import CONST
    from ..run.evaluate import forward
    from ..run.jvp import jvp
    from ..run.vjp import reverse

    out = graph.output if of is None else resolve_name(graph, of)
    wrt = _inputs(graph, wrt)
    for w in wrt:
        if w not in graph.inputs:
            raise UsageError(f"'{w}' is not an input: a Jacobian is with respect to inputs")
    values = forward(graph, _checked(graph, bindings))
    y = values[out]
    out_shape = tuple(getattr(y, "shape", ()))
    shapes = {w: tuple(getattr(values[graph.inputs[w]], "shape", ())) for w in wrt}
    rows, cols = math.prod(out_shape), sum(math.prod(s) for s in shapes.values())
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
    values = forward(graph, _checked(graph, bindings))
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
    values = forward(graph, _checked(graph, bindings))
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
