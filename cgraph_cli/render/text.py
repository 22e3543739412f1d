"""Plain renderings for shell scripts: one ``name=value`` line each, numbers in shortest form,
tensors as JSON nested lists without spaces (``W=[[1,2],[3,4]]``: the form bindings take).

>>> print(plain_lines({"x": 1.0, "g": -12.0}))
x=1
g=-12
"""

from __future__ import annotations

from ..core.numfmt import plain_value


def plain_lines(pairs: dict, precision: int | None = None) -> str:
    return "\n".join(f"{name}={plain_value(value, precision)}" for name, value in pairs.items())


def eval_plain(report: dict, show_all: bool = False, precision: int | None = None) -> str:
    """``output=value``, or every named value with ``show_all``."""
    pairs = report["values"] if show_all else {report["output"]: report["value"]}
    return plain_lines(pairs, precision)


def grad_plain(report: dict, precision: int | None = None) -> str:
    """One ``input=gradient`` line per input; with per-step gradients, a line per step
    (``h_3=...``, ∂output/∂h after step 3; ``h_0``: before the loop); last, as the table
    ends, ``output=value``.

    >>> print(grad_plain({"output": "y", "value": 9.0, "gradients": {"x": 6.0}}))
    x=6
    y=9
    """
    lines = dict(report["gradients"])
    for name, grads in report.get("per_step", {}).items():
        lines.update({f"{name}_{t}": g for t, g in enumerate(grads) if g is not None})
    return plain_lines(lines, precision) + "\n" + _value_line(report, precision)


def jvp_plain(report: dict, precision: int | None = None) -> str:
    """``jvp=`` the output's tangent, the directional derivative (as ``--format json`` names
    it), then ``output=value``.

    >>> print(jvp_plain({"output": "o", "value": 0.5, "jvp": -1.5}))
    jvp=-1.5
    o=0.5
    """
    return plain_lines({"jvp": report["jvp"]}, precision) + "\n" + _value_line(report, precision)


def hessian_plain(report: dict, precision: int | None = None) -> str:
    """The Hessian a row per line, named by its input (or input element, ``W[0,1]``), the
    columns in the order of the lines; for a Hessian-vector product, ``input=(∇²f)·v`` per
    input. Then ``output=value``.

    >>> print(hessian_plain({"output": "f", "value": 2.0, "labels": ["x", "y"],
    ...                      "hessian": [[4.0, 2.0], [2.0, -1.0]]}))
    x=[4,2]
    y=[2,-1]
    f=2
    """
    if "hvp" in report:
        lines = dict(report["hvp"])
    else:
        lines = {label: row for label, row in zip(report["labels"], report["hessian"])}
    rows = "\n".join(
        f"{name}={_row(value, precision) if isinstance(value, list) else plain_value(value, precision)}"
        for name, value in lines.items()
    )
    return (rows + "\n" if rows else "") + _value_line(report, precision)


def _row(values, precision: int | None) -> str:
    """A list of numbers in the form a tensor takes: ``[4,2]``."""
    return "[" + ",".join(plain_value(v, precision) for v in values) + "]"


def _value_line(report: dict, precision: int | None) -> str:
    return plain_lines({report["output"]: report["value"]}, precision)
