"""Forward mode as a graph transform: a program -> the program that also computes every named
value's tangent along a direction, as JAX's ``jvp`` of a jaxpr does.

The one forward-mode loop (:func:`cgraph_cli.core.autodiff.push`) runs over the program with the
op table's rules interpreted by the :class:`~cgraph_cli.passes.recorder.Recorder`, so each
tangent is a node built from cgraph's own ops, simplified as it is built. A direction is either
symbolic, a new input per input (``x_dot``, bound when the program runs, as JAX's tangent
inputs), or fixed numbers: a 1 on one input and nothing elsewhere gives the textbook
forward-mode derivative program, ∂value/∂x for every value.

>>> from cgraph_cli import parse, to_source
>>> print(to_source(jvp_graph(parse("p = x + y; g = p * z"), {"x": 1.0}).graph), end="")
p = x + y
g = p * z
dp_dx = 1
dg_dx = z
>>> t = jvp_graph(parse("g = sin(x) * y"))
>>> print(to_source(t.graph), end="")
input x_dot
input y_dot
t1 = sin(x)
g = t1 * y
g_dot = y * (cos(x) * x_dot) + t1 * y_dot
>>> t.tangents
{'x': 'x_dot', 'y': 'y_dot', 'g': 'g_dot'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.errors import BindingError
from ..core.ir import Graph, relayout
from ..core.ops import CONST, INPUT
from ..core.walks import ancestors
from .grad_graph import (
    _copy,
    _fresh,
    _identifier,
    _own_constant,
    forward_statements,
    input_shapes,
)
from .recorder import Recorder


@dataclass(frozen=True)
class TangentProgram:
    """A forward-mode derivative program: the graph; the output's name (``c_2`` for the
    second value called c, the text of a bare expression); for each input with a tangent
    input and each named value the output reads, by that name, the name holding its
    tangent."""

    graph: Graph
    output: str
    tangents: dict[str, str]


def jvp_graph(
    graph: Graph,
    tangents: Sequence[str] | Mapping[str, float | None] | None = None,
    output: int | None = None,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    also: Sequence[int] = (),
) -> TangentProgram:
    """The forward program followed by the tangent of each value the output reads, along the
    direction ``tangents`` gives: input names (default: every input), each getting a tangent
    input ``<name>_dot``; or a mapping from input name to a number (the same number in every
    element of a tensor input) or ``None`` (a tangent input). Tangents are named
    ``<name>_dot``, or ``d<name>_d<x>`` when the direction is 1 on the one input ``x``.
    ``shapes`` (each input's, by name; default: as :func:`input_shapes` finds them)
    specialise the rules that need one. ``also``: other nodes whose tangents are named too
    (the gradients of a derivative program, for a Hessian-vector product), with what they
    read. An input the program does not have is a
    :class:`~cgraph_cli.core.errors.BindingError`."""
    from ..core.autodiff import push
    from ..core.names import node_names

    out = graph.output if output is None else output
    given: Mapping[str, float | None] = (
        dict.fromkeys(graph.inputs if tangents is None else tangents)
        if tangents is None or not isinstance(tangents, Mapping)
        else tangents
    )
    unknown = [name for name in given if name not in graph.inputs]
    if unknown:
        raise BindingError(
            f"the program has no input named '{unknown[0]}' to take a tangent",
            hints=["the program's inputs: " + (", ".join(graph.inputs) or "none")],
        )
    shapes = dict(input_shapes(graph) if shapes is None else shapes)
    taken = set(graph.named_nodes()) | set(graph.inputs) | set(filter(None, graph.labels))
    symbolic = {w: _fresh(f"{w}_dot", taken) for w, t in given.items() if t is None}
    for w, name in symbolic.items():
        shapes[name] = tuple(shapes.get(w, ()))
    b = _copy(graph, shapes)
    e = Recorder(b)
    n = len(graph.ops)
    tan: list = [None] * n
    for w, t in given.items():
        i = graph.inputs[w]
        if t is None:
            tan[i] = b.input(symbolic[w], graph.starts[i], graph.ends[i])
        else:
            t = float(t)
            shape = tuple(shapes.get(w, ()))
            if t != 0.0:
                tan[i] = e.broadcast_to(t, shape) if shape else t
    last_named = max([out, *also])
    if also:  # what any of them reads, by one backwards sweep
        reach = [False] * n
        for seed in [out, *also]:
            reach[seed] = True
        for i in range(last_named, -1, -1):
            if reach[i]:
                for a in graph.args[i]:
                    reach[a] = True
    else:
        reach = ancestors(graph, out)
    push(graph, list(range(n)), e, tan)
    unit = [w for w, t in given.items() if t is not None and t != 0.0]
    one = len(unit) == 1 and not symbolic and given[unit[0]] == 1.0
    names = [_identifier(name) for name in node_names(graph)]

    # A value is known by its name (c_2 for the second value called c); the output, if it
    # has none (a bare expression), by its text, and its tangent as out_dot.
    output_name = names[out]
    if graph.ops[out] is INPUT and out == graph.output:  # t = x: the output is t
        output_name = graph.output_label
    if not output_name.isidentifier():
        output_name = graph.display_name(out)

    def tangent_name(i: int) -> str:
        base = output_name if i == out else names[i]
        base = base if base.isidentifier() else "out"
        return f"d{base}_d{unit[0]}" if one else f"{base}_dot"

    uses: dict[int, int] = {}
    for i in range(n, len(b.graph.ops)):
        for a in b.graph.args[i]:
            uses[a] = uses.get(a, 0) + 1
    statements = [("input", name, b.graph.inputs[name]) for name in symbolic.values()]
    result = {w: name for w, name in symbolic.items()}
    later: list[tuple[str, str, int]] = []
    named: set[int] = set()
    for i in range(last_named + 1):
        if not reach[i] or (i != out and graph.ops[i] in (INPUT, CONST)):
            continue
        node = tan[i]
        labelled = graph.labels[i] is not None or i == out
        if node is None and not labelled:
            continue
        if node is None or node.__class__ is not int:
            zero = 0.0 if node is None else float(node)
            shape = b.shape_of(i)
            node = b.const(zero) if not shape else e.broadcast_to(zero, shape)
        if not labelled and (node < n or node in named or uses.get(node, 0) < 2):
            continue  # an unnamed value's tangent, read once: written inline
        if b.graph.ops[node] is CONST:
            node = _own_constant(b, node)
        name = _fresh(tangent_name(i), taken)
        later.append(("=", name, node))
        named.add(node)
        if labelled:
            result[output_name if i == out else names[i]] = name
    if not later:  # the output is a constant: its tangent is 0
        name = _fresh(tangent_name(out), taken)
        later.append(("=", name, _own_constant(b, b.const(0.0))))
        result[output_name] = name
    forward = forward_statements(graph, b, later, set(), taken, names)
    k = next((k for k, s in enumerate(forward) if s[0] != "input"), len(forward))
    statements = forward[:k] + statements + forward[k:] + later  # tangent inputs after inputs
    _, last, node = statements[-1]
    derived = relayout(b.graph, statements, node, last)
    return TangentProgram(derived, output_name, result)
