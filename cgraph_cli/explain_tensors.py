"""Step-by-step explanations of tensor programs: shapes through the forward pass, and each
node's reverse rule (its vjp) through the backward pass.

A scalar explanation multiplies local derivatives; with tensors each step applies an op's rule
to the incoming gradient: ``∂loss/∂H = ∂loss/∂Y @ W2ᵀ``, or for an elementwise op the
gradient times the local derivative, element by element (·), summed over the axes that
broadcasting stretched.

>>> from cgraph_cli import grad
>>> r = grad("y = sum(W @ x)", {"W": [[1, 2], [3, 4]], "x": [1, -1]})
>>> print(to_text(explain_tensors(r.graph, r.values, r.adjoints)))
Forward pass
  1. t1 = W @ x: (2, 2) @ (2,) -> (2,) = [-1, -1]
  2. y = sum(t1): (2,) -> () = -2
Backward pass
  1. Start at the output: ∂y/∂y = 1
  2. Through sum: y = sum(t1)
       ∂y/∂t1 = ∂y/∂y broadcast to the shape of t1 = [1, 1]
  3. Through @: t1 = W @ x
       ∂y/∂W = ∂y/∂t1 @ xᵀ = [[1, -1], [1, -1]]
       ∂y/∂x = Wᵀ @ ∂y/∂t1 = [4, 6]
Gradients
  ∂y/∂W = [[1, -1], [1, -1]]
  ∂y/∂x = [4, 6]
"""

from __future__ import annotations

from collections.abc import Sequence

from .arrays import np, show_shape
from .ir import Graph
from .names import node_names
from .numfmt import format_value
from .ops import CONST, LEAF, PREC_ATOM
from .render.dot import ancestors
from .render.source import combine
from .tensors import cotangents


def _shape(value) -> list[int]:
    return list(np.shape(value))


def reverse_rule(graph: Graph, i: int, k: int, g: str, names: list[str]) -> str:
    """The rule that gives argument ``k``'s gradient, as a formula over the gradient ``g``."""
    op, args = graph.ops[i], graph.args[i]
    if not op.elementwise:
        return op.adjoint[k].format(*(names[a] for a in args), g=g, out=names[i])
    if op.constant is not None:
        return g if op.constant[k] == 1.0 else f"-{g}"
    local = op.derivative[k].format(*(names[a] for a in args), out=names[i])
    return f"{g} · {local}" if " " not in local or local[0] == "[" else f"{g} · ({local})"


def explain_tensors(
    graph: Graph, values: Sequence, adjoints: Sequence, output: int | None = None
) -> dict:
    """The steps of both passes, as data (the JSON format of ``explain`` for tensor programs)."""
    out = graph.output if output is None else output
    names = node_names(graph)
    reach = ancestors(graph, out)
    ops = [i for i in range(out + 1) if graph.ops[i].style != LEAF]
    forward = [
        {
            "node": names[i],
            "op": graph.ops[i].name,
            "formula": _formula(graph, i, names),
            "arg_shapes": [_shape(values[a]) for a in graph.args[i]],
            "shape": _shape(values[i]),
            "value": values[i],
        }
        for i in ops
    ]
    through = []
    uses: dict[int, list[str]] = {}
    g_out = f"∂{names[out]}"
    for i in reversed(ops):
        if not reach[i]:
            continue
        gradient = f"{g_out}/∂{names[i]}"
        parts = []
        # As the reverse pass computed them: where the gradient is 0, an infinite local
        # derivative contributes 0, not nan (and NumPy says nothing).
        with np.errstate(all="ignore"):
            pulled = cotangents(graph, values, i, adjoints[i], checked=True)
        for k, (a, c) in enumerate(zip(graph.args[i], pulled)):
            if graph.ops[a] is CONST:
                continue
            uses.setdefault(a, []).append(names[i])
            summed = _summed_axes(graph, values, i, a)
            parts.append(
                {
                    "wrt": names[a],
                    "formula": reverse_rule(graph, i, k, gradient, names),
                    "summed_axes": summed,
                    "shape": _shape(c),
                    "value": c,
                }
            )
        if parts:  # a node of constants only passes no gradient back
            through.append(
                {
                    "node": names[i],
                    "op": graph.ops[i].name,
                    "formula": _formula(graph, i, names),
                    "gradients": parts,
                }
            )
    fanout = [
        {"node": names[a], "via": via, "gradient": adjoints[a]}
        for a, via in sorted(uses.items())
        if len(via) > 1
    ]
    return {
        "output": names[out],
        "tensors": True,
        "forward": forward,
        "backward": {
            "start": {"node": names[out], "gradient": 1.0},
            "through": through,
            "sums": fanout,
        },
        "gradients": {name: adjoints[node] for name, node in graph.inputs.items()},
    }


def _formula(graph: Graph, i: int, names: list[str]) -> str:
    args = [(names[a], PREC_ATOM) for a in graph.args[i]]
    return combine(graph.ops[i], args, params=graph.params.get(i, ()))[0]


def _summed_axes(graph: Graph, values: Sequence, i: int, a: int) -> list[int]:
    """The axes of node ``i``'s shape that broadcasting added or stretched for argument ``a``
    (an elementwise op sums its gradient over them)."""
    if not graph.ops[i].elementwise:
        return []
    out, arg = np.shape(values[i]), np.shape(values[a])
    lead = len(out) - len(arg)
    return list(range(lead)) + [
        lead + k for k, n in enumerate(arg) if n == 1 and out[lead + k] != 1
    ]


def lines(steps: dict, precision: int | None = None) -> tuple[list[str], list[str], list[str]]:
    """The forward lines, the backward steps (a head line, then one line per gradient) and
    the gradient lines, in plain text."""

    def f(value) -> str:
        return format_value(value, precision or 4, rows="", shape=True)

    forward = []
    for s in steps["forward"]:
        shapes = [show_shape(x) for x in s["arg_shapes"]]
        flow = (" @ " if s["op"] == "matmul" else ", ").join(shapes)
        forward.append(
            f"{s['node']} = {s['formula']}: {flow} -> {show_shape(s['shape'])} = {f(s['value'])}"
        )
    out = steps["output"]
    backward = [f"Start at the output: ∂{out}/∂{out} = 1"]
    for s in steps["backward"]["through"]:
        parts = [f"Through {_symbol(s['op'])}: {s['node']} = {s['formula']}"]
        for p in s["gradients"]:
            summed = ""
            if p["summed_axes"]:
                axes = ", ".join(map(str, p["summed_axes"]))
                summed = f", summed over axis {axes} (broadcast)"
            parts.append(f"  ∂{out}/∂{p['wrt']} = {p['formula']}{summed} = {f(p['value'])}")
        if len(parts) > 1:
            backward.append("\n".join(parts))
    for s in steps["backward"]["sums"]:
        via = " + ".join(f"(via {v})" for v in s["via"])
        backward.append(
            f"Sum over the uses of {s['node']}: ∂{out}/∂{s['node']} = {via} = {f(s['gradient'])}"
        )
    gradients = [f"∂{out}/∂{n} = {f(g)}" for n, g in steps["gradients"].items()]
    return forward, backward, gradients


def _symbol(op_name: str) -> str:
    from .ops import OPS

    return OPS[op_name].symbol


def to_text(steps: dict, precision: int | None = None) -> str:
    from .explain import layout

    forward, backward, gradients = lines(steps, precision)
    return layout(forward, backward, ["Gradients"] + [f"  {line}" for line in gradients])


def to_markdown(steps: dict, precision: int | None = None) -> str:
    forward, backward, gradients = lines(steps, precision)
    out = ["## Forward pass", ""]
    out += [f"{k}. `{line}`" for k, line in enumerate(forward, 1)]
    out += ["", "## Backward pass", ""]
    for k, line in enumerate(backward, 1):
        head, *rest = line.split("\n")
        out.append(f"{k}. {head}" if rest else f"{k}. `{head}`")
        out += [f"   - `{item.strip()}`" for item in rest]
    out += ["", "## Gradients", ""]
    out += [f"- `{line}`" for line in gradients]
    return "\n".join(out) + "\n"
