"""The forward and backward passes spelled out step by step, as a textbook does.

:func:`explain` turns a differentiated program into steps (plain data, the JSON format);
:func:`to_text` and :func:`to_markdown` write them for people.

>>> from cgraph_cli import grad
>>> r = grad("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3})
>>> print(to_text(explain(r.graph, r.values, r.adjoints)))
Forward pass
  1. p = x + y = 1 + 3 = 4
  2. g = p * z = 4 * (-3) = -12
Backward pass
  1. Start at the output: ∂g/∂g = 1
  2. Through *: ∂g/∂p = z = -3, ∂g/∂z = p = 4
  3. Through +: ∂p/∂x = 1, ∂p/∂y = 1
  4. Chain rule: ∂g/∂x = ∂g/∂p · ∂p/∂x = (-3) · 1 = -3
                 ∂g/∂y = ∂g/∂p · ∂p/∂y = (-3) · 1 = -3
Gradients: ∂g/∂x = -3, ∂g/∂y = -3, ∂g/∂z = 4
"""

from __future__ import annotations

from collections.abc import Sequence

from .ir import Graph
from .names import node_names
from .numfmt import format_number
from .ops import CALL, CONST, INFIX, OPS, PREC_ATOM
from .render.dot import ancestors, partials_at
from .render.source import combine


def explain(
    graph: Graph, values: Sequence[float], adjoints: Sequence[float], output: int | None = None
) -> dict:
    """The steps of both passes, as data (for tensor programs, see :mod:`explain_tensors`)."""
    from .forward import is_tensor_run

    if is_tensor_run(graph, values):
        from .explain_tensors import explain_tensors

        return explain_tensors(graph, values, adjoints, output)
    out = graph.output if output is None else output
    names = node_names(graph)
    reach = ancestors(graph, out)
    ops = [i for i in range(len(graph.ops)) if graph.ops[i].forward is not None]
    forward = [
        {
            "node": names[i],
            "op": graph.ops[i].name,
            "args": [names[a] for a in graph.args[i]],
            "arg_values": [values[a] for a in graph.args[i]],
            "value": values[i],
        }
        for i in ops
    ]
    through = []
    local: dict[int, tuple[float, ...]] = {}  # node -> its local partials
    for i in reversed(ops):
        if not reach[i]:
            continue
        op, args = graph.ops[i], graph.args[i]
        local[i] = partials_at(graph, values, i)
        partials = [  # none with respect to a constant: no gradient flows back to one
            {
                "wrt": names[a],
                "formula": op.derivative[k].format(*(names[x] for x in args), out=names[i]),
                "value": local[i][k],
            }
            for k, a in enumerate(args)
            if graph.ops[a] is not CONST
        ]
        if partials:
            through.append({"node": names[i], "op": op.name, "partials": partials})
    uses: dict[int, list[tuple[int, int]]] = {}  # node -> (consumer, argument position)
    for i in ops:
        if reach[i]:
            for k, a in enumerate(graph.args[i]):
                uses.setdefault(a, []).append((i, k))
    # Each node after every node that reads it (its gradient needs theirs): by the longest
    # path to the output, then in program order, so x comes before y when both feed p.
    depth = [0] * (out + 1)
    for i in range(out, -1, -1):
        if reach[i]:
            for a in graph.args[i]:
                depth[a] = max(depth[a], depth[i] + 1)
    order = sorted(
        (a for a in uses if a != out and graph.ops[a] is not CONST), key=lambda a: (depth[a], a)
    )
    chain = []
    for a in order:
        if uses[a] == [(out, uses[a][0][1])]:
            continue  # read once, by the output: its gradient is the local partial shown above
        terms = []
        for c, k in uses[a]:
            terms.append({"via": names[c], "upstream": adjoints[c], "local": local[c][k]})
        chain.append({"node": names[a], "terms": terms, "gradient": adjoints[a]})
    return {
        "output": names[out],
        "forward": forward,
        "backward": {
            "start": {"node": names[out], "gradient": 1.0},
            "through": through,
            "chain": chain,
        },
        "gradients": {name: adjoints[node] for name, node in graph.inputs.items()},
    }


def _formula(op_name: str, args: list[str]) -> str:
    op = OPS[op_name]
    return combine(op, [(a, PREC_ATOM) for a in args])[0]


def _d(num: str, den: str) -> str:
    return f"∂{num}/∂{den}"


def lines(steps: dict, precision: int | None = None) -> tuple[list[str], list[str], str]:
    """The forward lines, the backward lines (a chain-rule step may span several), and the
    gradients line, in plain text; numbers to ``precision`` significant digits."""

    def f(x: float) -> str:
        return format_number(x, precision)

    def par(x: float) -> str:
        text = f(x)
        return f"({text})" if text.startswith("-") else text

    forward = []
    for s in steps["forward"]:
        shown = _formula(s["op"], s["args"])
        with_values = _formula(s["op"], [par(v) for v in s["arg_values"]])
        forward.append(f"{s['node']} = {shown} = {with_values} = {f(s['value'])}")
    out = steps["output"]
    backward = [f"Start at the output: {_d(out, out)} = 1"]
    for s in steps["backward"]["through"]:
        parts = []
        for p in s["partials"]:
            value = f(p["value"])
            formula = "" if p["formula"] == value else f" = {p['formula']}"
            parts.append(f"{_d(s['node'], p['wrt'])}{formula} = {value}")
        backward.append(f"Through {OPS[s['op']].symbol}: " + ", ".join(parts))
    chain = []
    for s in steps["backward"]["chain"]:
        symbolic = " + ".join(
            f"{_d(out, t['via'])} · {_d(t['via'], s['node'])}" for t in s["terms"]
        )
        numeric = " + ".join(f"{par(t['upstream'])} · {par(t['local'])}" for t in s["terms"])
        chain.append(f"{_d(out, s['node'])} = {symbolic} = {numeric} = {f(s['gradient'])}")
    if chain:
        indent = " " * len("Chain rule: ")
        backward.append("Chain rule: " + f"\n{indent}".join(chain))
    gradients = ", ".join(f"{_d(out, n)} = {f(g)}" for n, g in steps["gradients"].items())
    return forward, backward, f"Gradients: {gradients}"


def to_text(steps: dict, precision: int | None = None) -> str:
    if steps.get("tensors"):
        from . import explain_tensors

        return explain_tensors.to_text(steps, precision)
    forward, backward, gradients = lines(steps, precision)
    return layout(forward, backward, [gradients])


def layout(forward: list[str], backward: list[str], gradients: list[str]) -> str:
    """The numbered steps of both passes as text; a step's later lines indented under it."""
    out = ["Forward pass"]
    out += [f"  {k}. {line}" for k, line in enumerate(forward, 1)]
    out.append("Backward pass")
    for k, line in enumerate(backward, 1):
        head = f"  {k}. "
        out.append(head + line.replace("\n", "\n" + " " * len(head)))
    out += gradients
    return "\n".join(out)


def to_markdown(steps: dict, math: str = "plain", precision: int | None = None) -> str:
    """Markdown for notes and slides; ``math="latex"`` writes the formulas as $...$ LaTeX
    (for scalar programs; tensor programs are written in plain text formulas)."""
    if steps.get("tensors"):
        from . import explain_tensors

        return explain_tensors.to_markdown(steps, precision)
    if math == "latex":
        return _latex_markdown(steps, precision)
    forward, backward, gradients = lines(steps, precision)
    out = ["## Forward pass", ""]
    out += [f"{k}. `{line}`" for k, line in enumerate(forward, 1)]
    out += ["", "## Backward pass", ""]
    for k, line in enumerate(backward, 1):
        head, *rest = line.split("\n")
        if head.startswith("Chain rule: "):
            out.append(f"{k}. Chain rule:")
            out += [f"   - `{item.strip()}`" for item in [head[len("Chain rule: ") :], *rest]]
        else:
            label, _, body = head.partition(": ")
            out.append(f"{k}. {label}: `{body}`")
    key, _, body = gradients.partition(": ")
    out += ["", f"**{key}:** `{body}`"]
    return "\n".join(out) + "\n"


# --- LaTeX ---------------------------------------------------------------------------------------
_TEX_FUNCTIONS = {
    "sin": r"\sin",
    "cos": r"\cos",
    "tan": r"\tan",
    "exp": r"\exp",
    "log": r"\log",
    "tanh": r"\tanh",
    "sigmoid": r"\sigma",
}


def _tex_name(name: str) -> str:
    try:
        float(name)
        return name
    except ValueError:
        pass
    escaped = name.replace("_", r"\_").replace("'", "'")
    return escaped if len(name) == 1 else rf"\mathit{{{escaped}}}"


def _tex_number(x: float, precision: int | None = None) -> str:
    text = format_number(x, precision)
    return f"({text})" if text.startswith("-") else text


def _tex_d(num: str, den: str) -> str:
    return rf"\frac{{\partial {_tex_name(num)}}}{{\partial {_tex_name(den)}}}"


def _tex_op(op_name: str, args: list[str]) -> str:
    op = OPS[op_name]
    if op.name == "div":
        return rf"\frac{{{args[0]}}}{{{args[1]}}}"
    if op.name == "pow":
        return f"{args[0]}^{{{args[1]}}}"
    if op.name == "sqrt":
        return rf"\sqrt{{{args[0]}}}"
    if op.name == "abs":
        return rf"\left|{args[0]}\right|"
    if op.style == INFIX:
        symbol = {"*": r"\cdot", "-": "-", "+": "+"}[op.symbol]
        return f"{args[0]} {symbol} {args[1]}"
    if op.style == CALL:
        fn = _TEX_FUNCTIONS.get(op.name, rf"\operatorname{{{op.name}}}")
        return rf"{fn}\left({', '.join(args)}\right)"
    return f"-{args[0]}"


def _tex_formula(text: str) -> str:
    for plain, tex in (
        ("·", r" \cdot "),
        ("²", "^2"),
        ("log(", r"\log("),
        ("cos(", r"\cos("),
        ("sin(", r"\sin("),
        ("sign(", r"\operatorname{sign}("),
    ):
        text = text.replace(plain, tex)
    return text


def _latex_markdown(steps: dict, precision: int | None = None) -> str:
    def f(x: float) -> str:
        return format_number(x, precision)

    out_name = steps["output"]
    md = ["## Forward pass", ""]
    for k, s in enumerate(steps["forward"], 1):
        names = [_tex_name(a) for a in s["args"]]
        nums = [_tex_number(v, precision) for v in s["arg_values"]]
        md.append(
            f"{k}. ${_tex_name(s['node'])} = {_tex_op(s['op'], names)} = "
            f"{_tex_op(s['op'], nums)} = {f(s['value'])}$"
        )
    md += [
        "",
        "## Backward pass",
        "",
        f"1. Start at the output: ${_tex_d(out_name, out_name)} = 1$",
    ]
    k = 1
    for s in steps["backward"]["through"]:
        k += 1
        parts = []
        for p in s["partials"]:
            value = f(p["value"])
            formula = "" if p["formula"] == value else f" = {_tex_formula(p['formula'])}"
            parts.append(f"${_tex_d(s['node'], p['wrt'])}{formula} = {value}$")
        md.append(
            f"{k}. Through ${_tex_op(s['op'], ['a', 'b'][: OPS[s['op']].arity])}$: "
            + ", ".join(parts)
        )
    if steps["backward"]["chain"]:
        md.append(f"{k + 1}. Chain rule:")
        for s in steps["backward"]["chain"]:
            symbolic = " + ".join(
                rf"{_tex_d(out_name, t['via'])} {_tex_d(t['via'], s['node'])}" for t in s["terms"]
            )
            numeric = " + ".join(
                rf"{_tex_number(t['upstream'], precision)} \cdot {_tex_number(t['local'], precision)}"
                for t in s["terms"]
            )
            md.append(
                f"   - ${_tex_d(out_name, s['node'])} = {symbolic} = {numeric} = "
                f"{f(s['gradient'])}$"
            )
    grads = ", ".join(f"${_tex_d(out_name, n)} = {f(g)}$" for n, g in steps["gradients"].items())
    md += ["", f"**Gradients:** {grads}"]
    return "\n".join(md) + "\n"


def frame_order(graph: Graph, output: int | None = None) -> list[int]:
    """The nodes in the order the backward pass finalises their gradients: the output, then
    every node that leads to it, closest first (constants have none)."""
    out = graph.output if output is None else output
    reach = ancestors(graph, out)
    return [i for i in range(out, -1, -1) if reach[i] and graph.ops[i] is not CONST]
