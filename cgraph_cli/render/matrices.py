"""Tables for derivatives beyond the gradient: a Hessian, a Jacobian, forward-mode tangents.
Pure: they return rich renderables; the CLI prints them.

>>> import io
>>> from rich.console import Console
>>> from cgraph_cli import parse
>>> from cgraph_cli.run.higher import hessian
>>> out = io.StringIO()
>>> report = hessian(parse("f = x^2 * y + sin(y)"), {"x": 1, "y": 2})
>>> Console(file=out, width=60, color_system=None).print(hessian_table(report))
>>> print(out.getvalue().rstrip())
 ∂²f/∂row∂column   x         y
───────────────────────────────
 x                 4         2
 y                 2   -0.9093
<BLANKLINE>
  f = 2.909
"""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..core.numfmt import format_number, format_value
from .table import output_line

MAX_SHOWN = 12  # rows and columns of a Hessian table; larger ones are summarised


def _out(name: str) -> str:
    return name if name.isidentifier() else f"({name})"


def hessian_table(report: dict, precision: int | None = None, full: bool = False) -> Group:
    """The Hessian, rows and columns labelled by input (or input element); a large one is
    summarised unless ``full``. Or, for a Hessian-vector product, one row per input."""
    out = _out(report["output"])
    digits = precision or 4
    if "hvp" in report:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False)
        table.add_column("input")
        table.add_column(f"(∇²{out})·v", justify="right")
        for name, value in report["hvp"].items():
            table.add_row(name, format_value(value, digits, full, rows=""))
        return Group(table, Text(""), _value_line(report, digits))
    labels, matrix = report["labels"], report["hessian"]
    n = len(labels)
    shown = range(n) if full or n <= MAX_SHOWN else range(MAX_SHOWN)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column(f"∂²{out}/∂row∂column")
    for j in shown:
        table.add_column(labels[j], justify="right")
    for i in shown:
        table.add_row(labels[i], *(format_number(matrix[i][j], digits) for j in shown))
    parts: list[Table | Text] = [table]
    if len(shown) < n:
        parts.append(
            Text(f"  the first {MAX_SHOWN} of {n} rows and columns (--full shows all)", style="dim")
        )
    return Group(*parts, Text(""), _value_line(report, digits))


def _value_line(report: dict, digits: int) -> Text:
    return output_line({"output": report["output"], "value": report["value"]}, digits, indent=2)


def jacobian_table(report: dict, precision: int | None = None, full: bool = False) -> Group:
    """Per input, the Jacobian block (output shape + input shape), and how it was found."""
    out = _out(report["output"])
    digits = precision or 4
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("input")
    table.add_column("shape", justify="right")
    table.add_column(f"∂{out}/∂input")
    for name, block in report["jacobian"].items():
        shape = str(tuple(getattr(block, "shape", ())))
        table.add_row(name, shape, format_value(block, digits, full), end_section=True)
    passes = report["passes"]
    how = Text(
        f"  {report['mode']} mode: {passes} pass{'es' if passes != 1 else ''} "
        f"({'one per output element' if report['mode'] == 'reverse' else 'one per input element'})",
        style="dim",
    )
    return Group(table, how, Text(""), _value_line(report, digits))


def tangents_table(report: dict, precision: int | None = None, full: bool = False) -> Group:
    """Every named value with its tangent along the direction given (forward mode)."""
    digits = precision
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("name")
    table.add_column("value", justify="right")
    table.add_column("tangent", justify="right")
    for name, value in report["values"].items():
        style = "bold" if name == report["output"] else None
        table.add_row(
            name,
            format_value(value, digits, full, rows=""),
            format_value(report["node_tangents"][name], digits, full, rows=""),
            style=style,
        )
    direction = ", ".join(
        f"{n} = {format_value(v, digits, rows='')}" for n, v in report["tangents"].items()
    )
    return Group(Text(f"  direction: {direction}", style="dim"), table)
