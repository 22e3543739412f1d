"""Explanations (the steps of :func:`cgraph_cli.app.explain.explain`) written for people: plain
text, and markdown with plain or LaTeX formulas. Numbers are multiplied through local
derivatives as a textbook does; tensors flow through each op's reverse rule. The notation
is :mod:`cgraph_cli.render.notation`'s: x̄ the total gradient, ∂t/∂x one op's local partial.

>>> from cgraph_cli import grad
>>> from cgraph_cli.app.explain import explain
>>> r = grad("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3})
>>> print(to_text(explain(r.graph, r.values, r.adjoints)))
Forward pass
  1. p = x + y = 1 + 3 = 4
  2. g = p * z = 4 * (-3) = -12
Backward pass
  1. Start at the output: ḡ = 1   (a bar: the gradient over every path; ∂t/∂x: one op's local partial)
  2. Through *: ∂g/∂p = z = -3, ∂g/∂z = p = 4
  3. Through +: ∂p/∂x = 1, ∂p/∂y = 1
  4. Chain rule: x̄ = p̄ · ∂p/∂x = (-3) · 1 = -3
                 ȳ = p̄ · ∂p/∂y = (-3) · 1 = -3
Gradients: x̄ = -3, ȳ = -3, z̄ = 4
"""

from __future__ import annotations

from ..core.arrays import show_shape
from ..core.numfmt import format_number, format_value
from ..core.ops import OPS, PREC_ATOM
from ..parse.unparse import combine
from .formulas import Expr, Latex, tex_name
from .notation import KEY, KEY_TEX, adjoint, adjoint_tex, local_tex


def _symbol(step: dict) -> str:
    """The op a backward step goes through: its symbol (``*``), or a call's text."""
    op = OPS.get(step["op"])
    return op.symbol if op is not None else step.get("formula", step["op"])


def _partial_tex(term: dict, node: str) -> str:
    """A chain-rule term's local partial in LaTeX (by position where the op reads the node
    twice, as its text says)."""
    text = term.get("partial") or ""
    if "(operand " in text:
        return local_tex(term["via"], node, int(text.rsplit(" ", 1)[1].rstrip(")")))
    return local_tex(term["via"], node)


def _formula(op_name: str, args: list[str], function: str = "") -> str:
    if op_name == "call":  # a call of a function of the program, explained as one step
        return f"{function}({', '.join(args)})"
    return combine(OPS[op_name], [(a, PREC_ATOM) for a in args])[0]


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


def to_text(steps: dict, precision: int | None = None) -> str:
    if steps["tensors"]:
        forward, backward, gradients = tensor_lines(steps, precision)
        gradients = ["Gradients"] + [f"  {line}" for line in gradients]
    else:
        forward, backward, line = scalar_lines(steps, precision)
        gradients = [line]
    if "program" in steps:
        lines = [f"  {a} = {b}" for a, b in program_lines(steps, precision)]
        gradients += ["Derivative program"] + (lines or ["  none: the program has no inputs"])
    text = layout(forward, backward, gradients)
    if steps.get("control"):
        text = "\n".join(["Control flow", *(f"  {c}" for c in steps["control"]), text])
    return text


def to_markdown(steps: dict, math: str = "plain", precision: int | None = None) -> str:
    """Markdown for notes and slides; ``math="latex"`` writes the formulas as $...$ LaTeX."""
    control = ""
    if steps.get("control"):
        control = "\n".join(["## Control flow", "", *(f"- {c}" for c in steps["control"]), ""])
        control += "\n"
    if math == "latex":
        return (
            control
            + _latex_markdown(steps, precision)
            + _program_markdown(steps, precision, latex=True)
        )
    return control + _plain_markdown(steps, precision) + _program_markdown(steps, precision)


def _plain_markdown(steps: dict, precision: int | None) -> str:
    if steps["tensors"]:
        forward, backward, gradients = tensor_lines(steps, precision)
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
    forward, backward, total = scalar_lines(steps, precision)
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
    key, _, body = total.partition(": ")
    out += ["", f"**{key}:** `{body}`"]
    return "\n".join(out) + "\n"


# --- the derivative program ---------------------------------------------------------------
def program_lines(steps: dict, precision: int | None = None) -> list[tuple[str, str]]:
    """The derivative statements of ``steps["program"]`` as ``(name, formula = value)``, the
    value left out where the formula says it already (``dg_dw = 0``).

    >>> program_lines({"tensors": False, "program": {"statements": [
    ...     {"name": "dg_dp", "formula": "z", "value": -3.0},
    ...     {"name": "dg_dw", "formula": "0", "value": 0.0}]}})
    [('dg_dp', 'z = -3'), ('dg_dw', '0')]
    """
    lines = []
    for s in steps["program"]["statements"]:
        value = _value_text(steps, s["value"], precision)
        same = value == s["formula"]
        lines.append((s["name"], s["formula"] if same else f"{s['formula']} = {value}"))
    return lines


def _value_text(steps: dict, value, precision: int | None) -> str:
    if steps["tensors"]:
        return format_value(value, precision or 4, rows="", shape=True)
    return format_number(value, precision)


def _program_markdown(steps: dict, precision: int | None, latex: bool = False) -> str:
    """The derivative program: a code block (each value in a comment), or with ``latex`` one
    ``$...$`` line per statement."""
    if "program" not in steps:
        return ""
    out = ["", "## Derivative program", ""]
    statements = steps["program"]["statements"]
    if not statements:
        return "\n".join([*out, "None: the program has no inputs."]) + "\n"
    if latex:
        for s in statements:
            value = _value_text(steps, s["value"], precision)
            tail = "" if value == s["formula"] else f" = {value}"
            out.append(f"- ${tex_name(s['name'])} = {s['formula_tex']}{tail}$")
        return "\n".join(out) + "\n"
    code = [f"{s['name']} = {s['formula']}" for s in statements]
    width = max(map(len, code), default=0)
    out.append("```")
    for line, s in zip(code, statements):
        out.append(f"{line.ljust(width)}  # {_value_text(steps, s['value'], precision)}")
    out.append("```")
    return "\n".join(out) + "\n"


# --- numbers -----------------------------------------------------------------------------------
def scalar_lines(steps: dict, precision: int | None = None) -> tuple[list[str], list[str], str]:
    """The forward lines, the backward lines (a chain-rule step may span several), and the
    gradients line, in plain text; numbers to ``precision`` significant digits."""

    def f(x: float) -> str:
        return format_number(x, precision)

    def par(x: float) -> str:
        text = f(x)
        return f"({text})" if text.startswith("-") else text

    forward = []
    for s in steps["forward"]:
        with_values = _formula(s["op"], [par(v) for v in s["arg_values"]], s.get("function", ""))
        forward.append(f"{s['node']} = {s['formula']} = {with_values} = {f(s['value'])}")
    out = steps["output"]
    backward = [f"Start at the output: {adjoint(out)} = 1   ({KEY})"]
    for s in steps["backward"]["through"]:
        parts = []
        for p in s["partials"]:
            value = f(p["local_value"])
            formula = "" if p["local"] in (None, value) else f" = {p['local']}"
            parts.append(f"{p['partial']}{formula} = {value}")
        backward.append(f"Through {_symbol(s)}: " + ", ".join(parts))
    chain = []
    for s in steps["backward"]["sums"]:
        symbolic = " + ".join(f"{adjoint(t['via'])} · {t['partial']}" for t in s["terms"])
        numeric = " + ".join(f"{par(t['upstream'])} · {par(t['local'])}" for t in s["terms"])
        chain.append(f"{adjoint(s['node'])} = {symbolic} = {numeric} = {f(s['gradient'])}")
    if chain:
        indent = " " * len("Chain rule: ")
        backward.append("Chain rule: " + f"\n{indent}".join(chain))
    gradients = ", ".join(f"{adjoint(n)} = {f(g)}" for n, g in steps["gradients"].items())
    return forward, backward, f"Gradients: {gradients}"


# --- tensors ---------------------------------------------------------------------------------
def tensor_lines(
    steps: dict, precision: int | None = None
) -> tuple[list[str], list[str], list[str]]:
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
    backward = [f"Start at the output: {adjoint(out)} = 1   ({KEY})"]
    shared = {s["node"] for s in steps["backward"]["sums"]}  # read more than once: summed
    for s in steps["backward"]["through"]:
        parts = [f"Through {_symbol(s)}: {s['node']} = {s['formula']}"]
        for p in s["partials"]:
            into = "+=" if p["wrt"] in shared or p.get("operand") else "="
            line = f"  {adjoint(p['wrt'])} {into} {p['rule']}{_summed(p)} = {f(p['value'])}"
            parts.append(line)
        backward.append("\n".join(parts))
    for s in steps["backward"]["sums"]:
        via = " + ".join(f"(via {t['via']})" for t in s["terms"])
        backward.append(
            f"Sum over the uses of {s['node']}: {adjoint(s['node'])} = {via} = {f(s['gradient'])}"
        )
    gradients = [f"{adjoint(n)} = {f(g)}" for n, g in steps["gradients"].items()]
    return forward, backward, gradients


def _summed(p: dict) -> str:
    if not p["summed_axes"]:
        return ""
    return f", summed over axis {', '.join(map(str, p['summed_axes']))} (broadcast)"


# --- LaTeX -------------------------------------------------------------------------------------
def _latex_markdown(steps: dict, precision: int | None = None) -> str:
    def f(x) -> str:
        if steps["tensors"]:
            return format_value(x, precision or 4, rows="", shape=False)
        return format_number(x, precision)

    def tex_number(x: float) -> str:
        text = format_number(x, precision)
        return f"({text})" if text.startswith("-") else text

    out_name = steps["output"]
    md = ["## Forward pass", ""]
    for k, s in enumerate(steps["forward"], 1):
        with_values = ""
        if not steps["tensors"]:
            latex = Latex()
            numbers = [Expr(tex_number(v), PREC_ATOM) for v in s["arg_values"]]
            if s["op"] == "call":
                call = ", ".join(tex_number(v) for v in s["arg_values"])
                with_values = rf" = \operatorname{{{s['function']}}}\left({call}\right)"
            else:
                with_values = f" = {latex.write(latex.apply(OPS[s['op']], numbers, ()))}"
        md.append(
            f"{k}. ${tex_name(s['node'])} = {s['formula_tex']}{with_values} = {f(s['value'])}$"
        )
    md += [
        "",
        "## Backward pass",
        "",
        f"1. Start at the output: ${adjoint_tex(out_name)} = 1$ ({KEY_TEX})",
    ]
    k = 1
    for s in steps["backward"]["through"]:
        k += 1
        parts = []
        for p in s["partials"]:
            if steps["tensors"] or p["local_tex"] is None:
                target = adjoint_tex(p["wrt"])
                into = "\\mathrel{+}=" if p.get("operand") else "="
                parts.append(f"${target} {into} {p['rule_tex']}$")
            else:
                value = f(p["local_value"])
                formula = "" if p["local"] == value else f" = {p['local_tex']}"
                parts.append(f"${p['partial_tex']}{formula} = {value}$")
        md.append(f"{k}. Through ${tex_name(s['node'])} = {s['formula_tex']}$: " + ", ".join(parts))
    sums = steps["backward"]["sums"]
    if sums and not steps["tensors"]:
        md.append(f"{k + 1}. Chain rule:")
        for s in sums:
            symbolic = " + ".join(
                rf"{adjoint_tex(t['via'])} \, {_partial_tex(t, s['node'])}" for t in s["terms"]
            )
            numeric = " + ".join(
                rf"{tex_number(t['upstream'])} \cdot {tex_number(t['local'])}" for t in s["terms"]
            )
            md.append(
                f"   - ${adjoint_tex(s['node'])} = {symbolic} = {numeric} = {f(s['gradient'])}$"
            )
    elif sums:
        md.append(f"{k + 1}. Sums over uses:")
        for s in sums:
            via = " + ".join(rf"\text{{(via }}{tex_name(t['via'])}\text{{)}}" for t in s["terms"])
            md.append(f"   - ${adjoint_tex(s['node'])} = {via}$")
    grads = ", ".join(f"${adjoint_tex(n)} = {f(g)}$" for n, g in steps["gradients"].items())
    md += ["", f"**Gradients:** {grads}"]
    return "\n".join(md) + "\n"
