"""Rich renderings for the terminal. Pure: they return renderables, the CLI prints them.

>>> from rich.console import Console
>>> import io
>>> from cgraph_cli import grad
>>> from cgraph_cli.app.report import grad_report
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
from rich.console import Group, JustifyMethod
from rich.table import Table
from rich.text import Text

from ..core.numfmt import SMALL, TENSOR_DIGITS, format_number, format_value, is_tensor, shape_text


def _wrap(name: str) -> str:
    """``g`` stays ``g``; an unnamed output ``x + 1`` becomes ``(x + 1)`` inside ∂·/∂·."""
    return name if name.isidentifier() else f"({name})"


def output_line(
    report: dict, precision: int | None = None, full: bool = False, indent: int = 0
) -> Text:
    """``g = -12``; a tensor output with its shape, its rows aligned under the first (the
    line starting ``indent`` spaces in)."""
    text = Text(" " * indent)
    text.append(report["output"], style="bold")
    value = report["value"]
    if is_tensor(value):
        lead = " " * (indent + len(report["output"]) + 3)
        text.append(f" = {format_value(value, precision, full, rows=chr(10) + lead)}")
        if full or value.size <= SMALL:  # a summary starts with the shape
            text.append(f"    shape {shape_text(value)}", style="dim")
    else:
        text.append(f" = {format_number(value, precision)}")
    return text


def _cell(value, precision: int | None, full: bool, tensors: bool) -> str:
    """A table cell: in a tensor program, numbers to the same digits as tensor elements;
    otherwise exact unless ``precision``."""
    if is_tensor(value):
        return format_value(value, precision, full)
    return format_number(value, precision or (TENSOR_DIGITS if tensors else None))


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
        table.add_row(*cells, _cell(value, precision, full, shapes), style=style)
    return table


def gradient_table(report: dict, precision: int | None = None, full: bool = False) -> Group:
    """Per input: its value and ∂output/∂input, then the output's value. For tensor programs,
    each input's gradient (a tensor of its shape) goes on the rows under its value, which
    keeps two matrices from sharing a line."""
    out = _wrap(report["output"])
    values = report["values"]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)
    table.add_column("input")
    if "shapes" not in report:
        table.add_column("value", justify="right")
        table.add_column(f"∂{out}/∂input", justify="right")
        for name, g in report["gradients"].items():
            table.add_row(name, format_number(values[name], precision), format_number(g, precision))
    else:
        table.add_column("shape", justify="right")
        table.add_column(f"value, then ∂{out}/∂input")
        for name, g in report["gradients"].items():
            if name in values:
                table.add_row(name, shape_text(g), _cell(values[name], precision, full, True))
            table.add_row(
                Text(f"  ∂{out}/∂{_wrap(name)}", style="dim"),
                "",
                _cell(g, precision, full, True),
                end_section=True,
            )
    parts: list = [table, Text(""), output_line(report, precision, full, indent=2)]
    for name, grads in report.get("per_step", {}).items():
        parts += [Text(""), per_step_table(out, name, grads, precision, full)]
    return Group(*parts)


def per_step_table(out: str, name: str, grads: list, precision: int | None, full: bool) -> Table:
    """∂output/∂state at each step of a loop, with its size (the norm, for a tensor): how the
    gradient shrinks or grows as it flows back through the steps."""
    from ..core.arrays import np

    table = Table(title=f"∂{out}/∂{_wrap(name)} at each step", box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("step", justify="right")
    table.add_column(f"∂{out}/∂{_wrap(name)}_t")
    table.add_column("norm", justify="right")
    for t, g in enumerate(grads):
        if g is None:
            table.add_row(str(t), Text("a constant: no gradient", style="dim"), "")
            continue
        norm = _norm(np.asarray(g, dtype=float))
        table.add_row(str(t), _cell(g, precision, full, True), format_number(norm, precision or 4))
    return table


def _norm(g) -> float:
    """The Euclidean norm of ``g``, scaled so that squares do not overflow: [1e200, 1e200] has
    the norm 1.414e200, not inf.

    >>> from cgraph_cli.core.arrays import np
    >>> f"{_norm(np.array([1e200, 1e200])):.4g}", _norm(np.zeros(2))
    ('1.414e+200', 0.0)
    """
    from ..core.arrays import np

    top = float(np.max(np.abs(g))) if g.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return top
    return top * float(np.linalg.norm(g / top))


def gradcheck_table(checks: list, output: str, precision: int = 6, order: int = 1) -> Table:
    """Per point and input: the analytic gradient, the finite difference, the error, the status.
    With ``order`` 2, per point and pair of inputs: the second derivative (no value column)."""
    out = _wrap(output)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)
    columns: list[tuple[str, JustifyMethod]] = [
        ("point", "right"),
        ("input", "left"),
        ("value", "right"),
        (f"∂{out}/∂input", "right"),
        ("numeric", "right"),
        ("error", "right"),
        ("status", "left"),
    ]
    if order == 2:
        columns[1:4] = [("derivative", "left"), (f"∂²{out}", "right")]
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True)
    styles = {"ok": "green", "mismatch": "bold red", "kink": "yellow", "undefined": "yellow"}
    words = {
        "ok": "ok",
        "mismatch": "MISMATCH",
        "kink": "skip (kink)",
        "undefined": "skip (undefined)",
    }
    for k, c in checks:

        def show(x):
            return "" if x is None else format_number(x, precision)

        cells = [
            str(k),
            c.label,
            show(c.value),
            show(c.analytic),
            show(c.numeric),
            "" if c.error is None else f"{c.error:.1e}",
            Text(words[c.status], style=styles[c.status]),
        ]
        if order == 2:
            del cells[2]  # a pair of inputs has no one value
        table.add_row(*cells)
    return table
