"""Rich renderings for the terminal. Pure: they return renderables, the CLI prints them.

>>> from rich.console import Console
>>> import io
>>> from cgraph_cli import grad
>>> from cgraph_cli.report import grad_report
>>> out = io.StringIO()
>>> Console(file=out, width=60, color_system=None).print(gradient_table(
...     grad_report(grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}))))
>>> print(out.getvalue().rstrip())
  input   value   ∂g/∂input
 ───────────────────────────
  x           1          -3
  y           3          -3
  z          -3           4
<BLANKLINE>
  g = -12
"""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..numfmt import format_number


def _wrap(name: str) -> str:
    """``g`` stays ``g``; an unnamed output ``x + 1`` becomes ``(x + 1)`` inside ∂·/∂·."""
    return name if name.isidentifier() else f"({name})"


def output_line(report: dict, precision: int | None = None) -> Text:
    text = Text()
    text.append(report["output"], style="bold")
    text.append(f" = {format_number(report['value'], precision)}")
    return text


def value_table(report: dict, precision: int | None = None) -> Table:
    """Every input and named node with its value; the output in bold."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)
    table.add_column("name")
    table.add_column("value", justify="right")
    for name, value in report["values"].items():
        style = "bold" if name == report["output"] else None
        table.add_row(name, format_number(value, precision), style=style)
    return table


def gradient_table(report: dict, precision: int | None = None) -> Group:
    """Per input: its value and ∂output/∂input, then the output's value."""
    out = _wrap(report["output"])
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)
    table.add_column("input")
    table.add_column("value", justify="right")
    table.add_column(f"∂{out}/∂input", justify="right")
    values = report["values"]
    for name, g in report["gradients"].items():
        table.add_row(name, format_number(values[name], precision), format_number(g, precision))
    return Group(table, Text(""), Text("  ") + output_line(report, precision))


def gradcheck_table(checks: list, output: str) -> Table:
    """Per point and input: the analytic gradient, the finite difference, the error, the status."""
    out = _wrap(output)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)
    for name, justify in (("point", "right"), ("input", "left"), ("value", "right"),
                          (f"∂{out}/∂input", "right"), ("numeric", "right"),
                          ("error", "right"), ("status", "left")):
        table.add_column(name, justify=justify, no_wrap=True)
    styles = {"ok": "green", "mismatch": "bold red", "kink": "yellow", "undefined": "yellow"}
    words = {"ok": "ok", "mismatch": "MISMATCH", "kink": "skip (kink)", "undefined": "skip (undefined)"}
    for k, c in checks:
        def show(x):
            return "" if x is None else format_number(x, 6)

        table.add_row(str(k), c.name, show(c.point[c.name]), show(c.analytic), show(c.numeric),
                      "" if c.error is None else f"{c.error:.1e}",
                      Text(words[c.status], style=styles[c.status]))
    return table
