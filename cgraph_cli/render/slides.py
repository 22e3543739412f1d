"""Diagrams as text for slides: TikZ (``.tex``, for Beamer and any LaTeX document) and
Mermaid (``.mmd``, for Markdown slides and pages that draw Mermaid), each node with its value
and gradient, from the figure of :func:`cgraph_cli.app.walkthrough.figure` (TikZ also from its
Graphviz layout, so the picture matches the PNG's).

>>> from cgraph_cli import parse
>>> from cgraph_cli.app.walkthrough import figure
>>> nodes, edges = figure(parse("d = a - b"), [3.0, 1.0, 2.0], [1.0, -1.0, 1.0], 2)
>>> print(mermaid({"output": "d", "nodes": list(nodes.values()), "edges": edges}))
flowchart LR
  %% x̄, a bar over a name: the gradient of d with respect to it
  n0["<b>a</b><br/>= 3<br/>ā = 1"]:::input
  n1["<b>b</b><br/>= 1<br/>b̄ = -1"]:::input
  n2["<b>− d</b><br/>= 2<br/>d̄ = 1"]:::output
  n0 -->|"1"| n2
  n1 -->|"2"| n2
  classDef input fill:#ddf4ff,stroke:#57606a,color:#1f2328
  classDef op fill:#ffffff,stroke:#57606a,color:#1f2328
  classDef const fill:#f6f8fa,stroke:#57606a,color:#1f2328,stroke-dasharray:4 3
  classDef output fill:#ffffff,stroke:#8250df,stroke-width:3px,color:#1f2328
>>> print(tex("x_1 ≥ 2×y − 1 % ∂"))
x\\_1 \\ensuremath{\\geq} 2\\ensuremath{\\times}y \\ensuremath{-} 1 \\% \\ensuremath{\\partial}
"""

from __future__ import annotations

import re
from typing import Any

from .dot import THEMES
from .layout import node_lines
from .texchars import tex_char

# Characters with a meaning to TeX, and the non-ASCII ones cgraph writes, as pdfLaTeX sets them
# without any package beyond TikZ.
_TEX = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "%": r"\%",
    "_": r"\_",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
    "<": r"\ensuremath{<}",
    ">": r"\ensuremath{>}",
    "|": r"\ensuremath{|}",
    "-": r"\ensuremath{-}",
    "−": r"\ensuremath{-}",
    "×": r"\ensuremath{\times}",
    "÷": r"\ensuremath{\div}",
    "·": r"\ensuremath{\cdot}",
    "∂": r"\ensuremath{\partial}",
    "≤": r"\ensuremath{\leq}",
    "≥": r"\ensuremath{\geq}",
    "…": r"\dots{}",
    "ᵀ": r"\textsuperscript{T}",
}
_TEX.update({chr(0x2080 + d): rf"\textsubscript{{{d}}}" for d in range(10)})  # c₂


def tex(text: str) -> str:
    """``text`` as LaTeX that pdfLaTeX sets as written; any other non-ASCII character (a
    user's name may have them) as :func:`~cgraph_cli.render.texchars.tex_char` writes it.

    >>> print(tex("dβ_x = 50%"))
    d\\ensuremath{\\beta}\\_x = 50\\%

    A name under a bar (``x̄``, ``t̅1̅``: a gradient, see :mod:`cgraph_cli.render.notation`)
    as one ``\\overline``:

    >>> print(tex("t\u03051\u0305 = 1"))
    \\ensuremath{\\overline{\\mbox{t1}}} = 1
    """
    parts = _BARRED.split(text)  # odd parts: the characters under one bar
    return "".join(
        rf"\ensuremath{{\overline{{\mbox{{{_plain(p.replace(_MACRON, '').replace(_OVER, ''))}}}}}}}"
        if k % 2
        else _plain(p)
        for k, p in enumerate(parts)
    )


_MACRON, _OVER = "\u0304", "\u0305"
_BARRED = re.compile(f"((?:.[{_MACRON}{_OVER}])+)")


def _plain(text: str) -> str:
    return "".join(_TEX.get(c) or (c if c.isascii() else tex_char(c)) for c in text)


def tikz(fig: dict[str, Any], theme: str = "light", command: str = "") -> str:
    """A ``tikzpicture`` (in a ``\\resizebox`` that shrinks it to the line's width, never
    enlarges it) of a laid-out figure; ``\\input`` it where it goes, after
    ``\\usepackage{tikz}`` (Beamer loads graphicx, which ``\\resizebox`` needs)."""
    t = THEMES[theme]
    out = fig["output"]
    colours = {
        "cgtext": t.text,
        "cgmuted": t.muted,
        "cginput": t.input_fill,
        "cgop": t.op_fill,
        "cgconst": t.const_fill,
        "cgout": t.output,
        "cgpos": t.positive,
        "cgneg": t.negative,
        "cgbg": t.background,
    }
    head = [
        f"% {command or 'cgraph render'}: the graph of {tex(out)} in TikZ, each node with its",
        "% value and gradient. Needs \\usepackage{tikz} (and graphicx, which Beamer loads);",
        "% \\input this file where the picture goes.",
        f"% A bar over a name: the gradient of {tex(out)} with respect to it over every path.",
        *(f"\\definecolor{{{k}}}{{HTML}}{{{v.lstrip('#').upper()}}}" for k, v in colours.items()),
        "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%",
        "\\begin{tikzpicture}[x=1pt, y=-1pt, font=\\sffamily\\small, text=cgtext,",
        "  cgnode/.style={draw=cgmuted, rounded corners=3pt, align=center, inner sep=2pt,",
        "    line width=0.6pt},",
        "  cg input/.style={cgnode, fill=cginput}, cg op/.style={cgnode, fill=cgop},",
        "  cg const/.style={cgnode, fill=cgconst, dashed},",
        "  cg output/.style={draw=cgout, line width=1.6pt},",
        "  cg edge/.style={draw=cgmuted, line width=0.7pt, -stealth},",
        "  cg port/.style={circle, draw=cgmuted, fill=cgbg, inner sep=0.5pt,",
        "    font=\\sffamily\\tiny},",
        "  cg shape/.style={fill=cgbg, inner sep=1pt, text=cgmuted, font=\\sffamily\\scriptsize}]",
    ]
    if t.background.lower() != "#ffffff":
        w, h = fig["width"], fig["height"]
        head.append(f"\\fill[cgbg] (0,0) rectangle ({w},{h});")
    body = []
    for node in fig["nodes"]:
        x, y, w, h = node["box"]
        lines = node_lines(node, out, " ")
        texts = [f"\\textbf{{{tex(lines[0])}}}"] + [tex(s) for s in lines[1:-1]]
        if node["grad"] is not None:
            sign = {1: "cgpos", -1: "cgneg", 0: "cgtext"}[node["sign"]]
            name = node["name"] if node["name"].isidentifier() else "out"
            grad = f"$\\overline{{\\mbox{{{tex(name)}}}}}$ = {tex(node['grad'])}"
            texts.append(f"\\textcolor{{{sign}}}{{\\textbf{{{grad}}}}}")
        elif len(lines) > 1:
            texts.append(tex(lines[-1]))
        style = f"cg {node['kind']}" + (", cg output" if node["output"] else "")
        content = " \\\\ ".join(texts)
        body.append(
            f"\\node[{style}, minimum width={w}pt, minimum height={h}pt] ({node['id']}) "
            f"at ({_c(x + w / 2)},{_c(y + h / 2)}) {{{content}}};"
        )
    for edge in fig["edges"]:
        p = edge["points"]
        path = f"({p[0][0]},{p[0][1]})"
        if (len(p) - 1) % 3:  # a shared value's lane (layout.py): straight lines, not curves
            path += "".join(f" -- ({x},{y})" for x, y in p[1:-1])
        for k in range(1, len(p) - 2, 3) if not (len(p) - 1) % 3 else ():
            (ax, ay), (bx, by), (cx, cy) = p[k : k + 3]
            path += f" .. controls ({ax},{ay}) and ({bx},{by}) .. ({cx},{cy})"
        body.append(f"\\draw[cg edge] {path} -- ({edge['to']});")
        if edge.get("shape"):
            lx, ly = edge["label_at"]
            body.append(f"\\node[cg shape] at ({lx},{ly}) {{{tex(edge['shape'])}}};")
        if edge["port"]:
            px, py = edge["port_at"]
            body.append(f"\\node[cg port] at ({px},{py}) {{{edge['port']}}};")
    return "\n".join([*head, *body, "\\end{tikzpicture}}", ""])


def _c(x: float) -> str:
    return f"{x:g}"


def mermaid(fig: dict[str, Any], theme: str = "light", rankdir: str = "LR") -> str:
    """A Mermaid flowchart of a figure (no layout needed: Mermaid lays it out)."""
    t = THEMES[theme]
    out = fig["output"]
    lines = [f"flowchart {rankdir}"]
    if any(node["grad"] is not None for node in fig["nodes"]):
        lines.append(f"  %% x̄, a bar over a name: the gradient of {out} with respect to it")
    for node in fig["nodes"]:
        text = node_lines(node, out, " ")
        label = "<br/>".join([f"<b>{_mmd(text[0])}</b>", *(_mmd(s) for s in text[1:])])
        kind = "output" if node["output"] else node["kind"]
        lines.append(f'  {node["id"]}["{label}"]:::{kind}')
    for edge in fig["edges"]:
        marks = [str(edge["port"])] if edge["port"] else []
        marks += [edge["shape"]] if edge.get("shape") else []
        label = f'|"{_mmd(" ".join(marks))}"|' if marks else ""
        lines.append(f"  {edge['from']} -->{label} {edge['to']}")
    stroke = f"stroke:{t.muted},color:{t.text}"
    lines += [
        f"  classDef input fill:{t.input_fill},{stroke}",
        f"  classDef op fill:{t.op_fill},{stroke}",
        f"  classDef const fill:{t.const_fill},{stroke},stroke-dasharray:4 3",
        f"  classDef output fill:{t.op_fill},stroke:{t.output},stroke-width:3px,color:{t.text}",
    ]
    return "\n".join(lines)


def _mmd(text: str) -> str:
    """Text inside a quoted Mermaid label: quotes and angle brackets as entities."""
    return (
        text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )
