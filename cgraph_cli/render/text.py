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
    (``h_3=...``, ∂output/∂h after step 3; ``h_0``: before the loop)."""
    lines = dict(report["gradients"])
    for name, grads in report.get("per_step", {}).items():
        lines.update({f"{name}_{t}": g for t, g in enumerate(grads) if g is not None})
    return plain_lines(lines, precision)
