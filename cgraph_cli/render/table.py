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

from ..numfmt import format_number, format_value, is_tensor, shape_text


def _wrap(name: str) -> str:
    """``g`` stays ``g``; an unnamed output ``x + 1`` becomes ``(x + 1)`` inside ∂·/∂·."""
    return name if name.isidentifier() else f"({name})"


def output_line(report: dict, precision: int | None = None, full: bool = False) -> Text:
    """``g = -12``; a tensor output with its shape, its rows aligned under the first."""
    text = Text()
    text.append(report["output"], style="bold")
    value = report["value"]
    if is_tensor(value):
        lead = " " * (len(report["output"]) + 3)
        shown = format_value(value, precision, full, rows="\n " + lead)
        text.append(f" = {shown}")
        text.append(f"    ({shape_text(value)})", style="dim")
    else:
        text.append(f" = {format_number(value, precision)}")
    return text


def _cell(value, precision: int | None, full: bool) -> str:
    return format_value(value, precision, full) if is_tensor(value) else format_number(
        value, precision)


def value_table(report: dict, precision: int | None = None, full: bool = False) -> Table:
    """Every input and named node with its value (and shape, for tensor programs); the output
    in bold. Tensors over :data:`numfmt.SMALL` elements are summarised unless ``full``."""
    shapes = "shapes" in report
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)
    table.add_column("name")
    if shapes:
        table.add_column("shape", justify="right")
    table.add_column("value", justify="left" if shapes else "right")
    for name, value in report["values"].items():
        style = "bold" if name == report["output"] else None
        cells = [name, shape_text(value)] if shapes else [name]
        table.add_row(*cells, _cell(value, precision, full), style=style)
    return table


def gradient_table(report: dict, precision: int | None = None, full: bool = False) -> Group:
    """Per input: its value and ∂output/∂input (a tensor of its shape), then the output."""
    out = _wrap(report["output"])
    shapes = "shapes" in report
    justify = "left" if shapes else "right"
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)
    table.add_column("input")
    if shapes:
        table.add_column("shape", justify="right")
    table.add_column("value", justify=justify)
    table.add_column(f"∂{out}/∂input", justify=justify)
    values = report["values"]
    for name, g in report["gradients"].items():
        value = values.get(name, g)
        cells = [name, shape_text(g)] if shapes else [name]
        table.add_row(*cells, _cell(value, precision, full), _cell(g, precision, full))
    return Group(table, Text(""), Text("  ") + output_line(report, precision, full))


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
