"""The commonest tables of :mod:`cgraph_cli.render.table`, laid out without rich: the text
rich prints for them when the output is not a terminal and has no colour (at its natural
width, no trailing spaces), character for character. Importing rich took about a fifth of
a ``cgraph grad`` on a small program. Anything these do not cover (a tensor, a per-step
table, a name or number that is not plain ASCII, which rich might measure or read as markup
differently) gives None, and the caller draws it with rich.

>>> from cgraph_cli import grad
>>> from cgraph_cli.app.report import grad_report
>>> print(gradient_text(grad_report(grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}))))
 input   value   ∂g/∂input
───────────────────────────
 x           1          -3
 y           3          -3
 z          -3           4
<BLANKLINE>
  g = -12
"""

from __future__ import annotations

from ..core.numfmt import format_number

_WIDTH = 9_000  # below the width output.write_rich gives rich for a file or a pipe


def _plain(text: str) -> bool:
    """Whether rich would print ``text`` as it is, one cell a character (no markup, emoji
    code, control character or wide letter)."""
    return text.isascii() and text.isprintable() and not any(c in text for c in "[]:\\")


def _wrap(name: str) -> str:
    return name if name.isidentifier() else f"({name})"


def _table(header: list[str], rows: list[list[str]], right: list[bool]) -> list[str]:
    """rich's ``Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)``: a space of
    padding on each side of every cell, columns apart by a space, a rule under the header."""
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]

    def line(cells: list[str]) -> str:
        shown = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
        return (" " + "   ".join(shown)).rstrip()

    rule = "─" * (sum(widths) + 3 * len(widths) - 1)
    return [line(header), rule, *(line(r) for r in rows)]


def gradient_text(report: dict, precision: int | None = None) -> str | None:
    """:func:`~cgraph_cli.render.table.gradient_table` of a program of numbers, as text."""
    if "shapes" in report or report.get("per_step") or not _plain(report["output"]):
        return None
    values = report["values"]
    rows = []
    for name, g in report["gradients"].items():
        if name not in values:
            return None
        rows.append([name, format_number(values[name], precision), format_number(g, precision)])
    header = ["input", "value", f"∂{_wrap(report['output'])}/∂input"]
    if not all(_plain(cell) for row in rows for cell in row):
        return None
    table = _table(header, rows, [False, True, True])
    line = output_text(report, precision, indent=2)
    if line is None or len(table[1]) > _WIDTH:  # wider than rich's page: it would wrap
        return None
    return "\n".join([*table, "", line])


def output_text(report: dict, precision: int | None = None, indent: int = 0) -> str | None:
    """:func:`~cgraph_cli.render.table.output_line` of a number, as text."""
    value = report["value"]
    if value.__class__ is not float or not _plain(report["output"]):
        return None
    shown = f"{' ' * indent}{report['output']} = {format_number(value, precision)}"
    return shown if _plain(shown) and len(shown) < _WIDTH else None
