"""Worksheets (the data of :func:`cgraph_cli.app.worksheet.sheet`) for people: Markdown (with a
Mermaid drawing of the graph), LaTeX (a document pdfLaTeX sets, with a TikZ drawing) and HTML
(a page that prints, with an SVG drawing). The answer key is the same sheet with every cell
filled in and the ones the students fill in marked.

>>> from cgraph_cli.app.worksheet import sheet
>>> s = sheet("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}, blank="values")
>>> print("\\n".join(markdown(s).splitlines()[-6:]))
|---|---|---|---|---|
| x | input | 1 |  | -3 |
| y | input | 3 |  | -3 |
| t1 | x + y | ____ | ∂t1/∂x = 1, ∂t1/∂y = 1 | -3 |
| z | input | -3 |  | 4 |
| g | t1 * z | ____ | ∂g/∂t1 = -3, ∂g/∂z = 4 | 1 |

The notation is the explanations' (:mod:`cgraph_cli.render.notation`): the last column is the
gradient over every path, headed ``x̄``; a local derivative is one op's, ``∂t1/∂x``, its
operand named by its place where the op reads one node twice (``∂t1/∂(operand 2)``).
"""

from __future__ import annotations

import html as _html
from pathlib import PurePath
from typing import Any

from ..core.numfmt import format_number
from .notation import local, positions
from .slides import tex

BLANK = "____"


def _cells(s: dict[str, Any], key: bool, precision: int | None, mark, blank: str, dee=None):
    """Each row's cells as text: (node, computes, value, locals, gradient); a blank cell is
    ``blank`` on the sheet, and ``mark(text)`` in the key. ``dee(num, den)`` writes a
    derivative's name (and the operand's place, where a node is read twice)."""
    dee = dee or local
    blanks = {tuple(b) for b in s["blanks"]}

    def cell(node: str, which: str, text: str) -> str:
        if (node, which) not in blanks:
            return text
        return mark(text) if key else blank

    out = []
    for r in s["rows"]:
        n = r["node"]
        value = cell(n, "value", format_number(r["value"], precision))
        at = positions([p["wrt"] for p in r["locals"]])
        locals_ = ", ".join(
            f"{dee(n, p['wrt'], at[k])} = "
            f"{cell(n, f'local:{k}', format_number(p['value'], precision))}"
            for k, p in enumerate(r["locals"])
        )
        grad = cell(n, "gradient", format_number(r["gradient"], precision))
        out.append((n, r["computes"] or "input", value, locals_, grad))
    return out


def _title(s: dict[str, Any], key: bool, number: str = "") -> str:
    # The file's name alone: where it lies on the teacher's machine is not for the students.
    name = PurePath(s["filename"]).name if not s["filename"].startswith("<") else "a program"
    what = "Answer key" if key else "Worksheet"
    seed = f" (seed {s['seed']})" if s["seed"] is not None else ""
    return f"{what}{number}: {name}{seed}"


def _bindings(s: dict[str, Any], precision: int | None) -> str:
    return ", ".join(f"{n} = {format_number(v, precision)}" for n, v in s["bindings"].items())


INSTRUCTIONS = (
    "Fill in every blank. The forward pass gives the values, top to bottom; each local "
    "derivative ∂t/∂x is that of the row's node t with respect to one of its arguments x (the "
    "others held), at these values; the backward pass gives the gradients x̄ (a bar: the "
    "gradient of {out} with respect to the row's node, over every path), bottom to top, "
    "starting from 1 at {out} and summing over every node a value feeds."
)
#: The head of the gradients' column.
GRADIENT = "gradient x̄"


def markdown(
    s: dict[str, Any],
    key: bool = False,
    precision: int | None = 4,
    drawing: str | None = None,
    number: str = "",
) -> str:
    """The sheet (or its key) in Markdown; ``drawing``: a Mermaid flowchart to include."""
    out = s["output"]
    lines = [f"# {_title(s, key, number)}", "", "```", s["program"].rstrip(), "```", ""]
    lines += [f"With {_bindings(s, precision)}.", ""] if s["bindings"] else []
    lines += [f"> {note}" for note in s["notes"]] + ([""] if s["notes"] else [])
    if drawing:
        lines += ["```mermaid", drawing, "```", ""]
    lines += [
        "Marked in bold: the cells to fill in." if key else INSTRUCTIONS.format(out=out),
        "",
        f"| node | computes | value | local derivatives | {GRADIENT} |",
        "|---|---|---|---|---|",
    ]
    for row in _cells(s, key, precision, lambda t: f"**{t}**", BLANK):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines)


def latex(
    s: dict[str, Any],
    key: bool = False,
    precision: int | None = 4,
    drawing: str | None = None,
    number: str = "",
) -> str:
    """A LaTeX document (article, tikz) of the sheet or its key; ``drawing``: TikZ to include."""
    out = s["output"]
    rows = _cells(s, key, precision, lambda t: f"\x00M{t}\x00E", "\x00B")
    marks = {"\x00M": r"\fbox{", "\x00E": "}", "\x00B": r"\underline{\hspace{1.6cm}}"}
    body = []
    for row in rows:
        cells = []
        for c in row:
            c = tex(c)  # the marks are ASCII controls, which tex() leaves alone
            for mark, code in marks.items():
                c = c.replace(mark, code)
            cells.append(c)
        body.append(" & ".join(cells) + r" \\[4pt]")
    notes = "".join(rf"\par\emph{{{tex(n)}}}" for n in s["notes"])
    given = rf"With {tex(_bindings(s, precision))}.\par" if s["bindings"] else ""
    say = "Boxed: the cells to fill in." if key else tex(INSTRUCTIONS.format(out=out))
    return "\n".join(
        [
            r"\documentclass[11pt]{article}",
            r"\usepackage[margin=2cm]{geometry}",
            r"\usepackage{tikz}",
            r"\usepackage{array}",
            r"\pagestyle{empty}",
            r"\begin{document}",
            rf"\section*{{{tex(_title(s, key, number))}}}",
            r"\begin{flushleft}\ttfamily",
            *(tex(line).replace(" ", "~") + r"\\" for line in s["program"].rstrip().splitlines()),
            r"\end{flushleft}",
            given + notes,
            r"\medskip",
            rf"\begin{{center}}{drawing}\end{{center}}" if drawing else "",
            r"\medskip",
            say,
            r"\par\medskip",
            r"\renewcommand{\arraystretch}{1.6}",
            r"\begin{tabular}{l l l >{\raggedright\arraybackslash}p{5.2cm} l}",
            r"\textbf{node} & \textbf{computes} & \textbf{value} & \textbf{local "
            r"derivatives} & \textbf{gradient $\bar{x}$} \\ \hline",
            *body,
            r"\end{tabular}",
            r"\end{document}",
            "",
        ]
    )


HTML_STYLE = """
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 2rem auto;
       max-width: 60rem; padding: 0 1rem; color: #1f2328; }
pre { background: #f6f8fa; padding: 0.6rem 0.9rem; border-radius: 6px; }
table { border-collapse: collapse; width: 100%; margin-top: 1rem; }
th, td { border: 1px solid #57606a; padding: 0.45rem 0.6rem; text-align: left; }
th { background: #f6f8fa; }
.blank { display: inline-block; min-width: 5em; border-bottom: 1.5px solid #1f2328; }
mark { background: #fff8c5; font-weight: 700; }
.drawing svg { max-width: 100%; height: auto; }
@media print { body { margin: 0; } }
"""


def html(
    s: dict[str, Any],
    key: bool = False,
    precision: int | None = 4,
    drawing: str | None = None,
    number: str = "",
) -> str:
    """A page of the sheet or its key (it prints as it shows); ``drawing``: an inline SVG."""
    e = _html.escape
    out = s["output"]
    blank = "\x00BLANK\x00"
    rows = _cells(s, key, precision, lambda t: f"\x00MARK\x00{t}\x00END\x00", blank)

    def cell(text: str) -> str:
        text = e(text).replace(blank, '<span class="blank"></span>')
        return text.replace("\x00MARK\x00", "<mark>").replace("\x00END\x00", "</mark>")

    body = "\n".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    say = "Highlighted: the cells to fill in." if key else INSTRUCTIONS.format(out=out)
    notes = "".join(f"<p><em>{e(n)}</em></p>" for n in s["notes"])
    given = f"<p>With {e(_bindings(s, precision))}.</p>" if s["bindings"] else ""
    figure = f'<div class="drawing">{drawing}</div>' if drawing else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{e(_title(s, key, number))}</title>
<style>{HTML_STYLE}</style>
</head>
<body>
<h1>{e(_title(s, key, number))}</h1>
<pre><code>{e(s["program"].rstrip())}</code></pre>
{given}{notes}{figure}
<p>{e(say)}</p>
<table>
<thead><tr><th>node</th><th>computes</th><th>value</th><th>local derivatives</th><th>{e(GRADIENT)}</th></tr></thead>
<tbody>
{body}
</tbody>
</table>
</body>
</html>
"""
