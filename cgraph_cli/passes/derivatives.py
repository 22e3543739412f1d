"""Derivative programs: reverse mode to any order (each order the transform of
:mod:`cgraph_cli.passes.grad_graph` applied to the last), and forward mode
(:mod:`cgraph_cli.passes.jvp_graph`). Their values at the user's bindings (Hessians, Jacobians,
tangents) are :mod:`cgraph_cli.run.higher`'s.

>>> from cgraph_cli import parse, to_source
>>> print(to_source(derivative_program(parse("f = x^3"), order=2).graph), end="")
f = x ^ 3
df_dx = 3 * x ^ 2
d2f_dx2 = 6 * x
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from ..core.ir import Graph, resolve_name
from ..core.ir_control import Static
from .grad_graph import Derived, grad_graph, input_shapes

if TYPE_CHECKING:
    from .jvp_graph import TangentProgram

MAX_ORDER = 4
#: The most derivative statements a program may get: n inputs to order k make C(n+k-1, k) of
#: order k alone (100 inputs to order 3: 171,700), each a reverse pass over a program that
#: grows with them; 30 inputs to order 3 (5,455) take about a minute.
MAX_DERIVATIVES = 10_000


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


def wrt_inputs(graph: Graph, wrt: list[str] | None) -> list[str]:
    wrt = list(graph.inputs) if not wrt else wrt
    for name in wrt:
        resolve_name(graph, name)
    return wrt


def require_straight_line(graph: Graph) -> None:
    """A derivative program is built from the graph that runs (one branch, the loops
    unrolled): :func:`cgraph_cli.run.control.ran_graph` makes it for given bindings."""
    if isinstance(graph.control, Static):
        raise UsageError(
            "this program has if/else or a loop: its derivative program is that of the graph "
            "that runs for given bindings",
            hints=["run it first: run_graph(graph, bindings)"],
        )


def _check_count(n: int, order: int) -> None:
    """Refuse derivatives of ``n`` inputs up to ``order`` that would be more than
    :data:`MAX_DERIVATIVES` statements, before any is made.

    >>> _check_count(30, 3)  # 30 + 465 + 4,960
    """
    import math

    from ..core.errors import EvalError

    count = sum(math.comb(n + k - 1, k) for k in range(1, order + 1))
    if count > MAX_DERIVATIVES:
        raise EvalError(
            f"derivatives of {n:,} inputs up to order {order} are {count:,} statements: more "
            f"than the {MAX_DERIVATIVES:,} cgraph writes",
            hints=["ask for fewer inputs (--wrt) or a lower --order"],
        )


def derivative_program(
    graph: Graph,
    bindings: Mapping | None = None,
    of: str | None = None,
    wrt: list[str] | None = None,
    order: int = 1,
    intermediates: bool = True,
    mask: tuple = (),
) -> Program:
    """The program with its derivatives up to ``order`` with respect to ``wrt`` (default:
    every input), each a statement (``d2f_dxdy``); mixed ones once (∂²f/∂x∂y = ∂²f/∂y∂x).
    Shapes come from ``bindings`` or the inputs' defaults. ``intermediates``: the derivative
    with respect to each named value is a statement too (``dg_dp``). ``mask``: see
    :func:`~cgraph_cli.passes.grad_graph.grad_graph` (the first derivatives')."""
    require_straight_line(graph)
    if not 1 <= order <= MAX_ORDER:
        raise UsageError(f"the order is 1 to {MAX_ORDER}, got {order}")
    out = graph.output if of is None else resolve_name(graph, of)
    asked = wrt or None  # derivatives asked for by name: only what they read is a statement
    wrt = wrt_inputs(graph, wrt)
    shapes = input_shapes(graph, _checked(graph, bindings))
    if order > 1 and any(shapes.get(w) for w in wrt if w in graph.inputs):
        raise UsageError(
            "derivatives of order 2 and more are programs for inputs that are numbers",
            hints=["for tensors, cgraph hessian gives the blocks of second derivatives"],
        )
    _check_count(len(wrt), order)
    base = graph.display_name(out)
    base = base if base.isidentifier() else "out"
    derived: Derived = grad_graph(
        graph,
        out,
        asked,
        shapes,
        names_for={w: derivative_name(base, (w,)) for w in wrt},
        intermediates=intermediates,
        mask=mask,
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

    require_straight_line(graph)
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


def _checked(graph: Graph, bindings: Mapping | None) -> dict:
    from ..data.bindings import check_bindings

    return check_bindings(graph, bindings)
