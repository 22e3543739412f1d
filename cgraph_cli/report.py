"""The data each command reports, as plain dicts: the JSON contract, and the source of the
table and plain renderings.

>>> from cgraph_cli import grad
>>> grad_report(grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}))["gradients"]
{'x': -3.0, 'y': -3.0, 'z': 4.0}
"""

from __future__ import annotations

import re

from .api import Evaluation, Gradients, resolve_name
from .numfmt import is_tensor


def eval_report(ev: Evaluation) -> dict:
    """``{"output", "value", "values"}``: ``values`` holds every input and named node. When a
    value is a tensor (a NumPy array, a nested list in JSON), ``"shapes"`` gives each value's
    shape (``[]`` for a number)."""
    values = ev.named
    values.setdefault(ev.output_name, ev.value)
    report = {"output": ev.output_name, "value": ev.value, "values": values}
    if any(is_tensor(v) for v in values.values()):
        report["shapes"] = {name: list(getattr(v, "shape", ())) for name, v in values.items()}
    return report


def grad_report(gr: Gradients, wrt: list[str] | None = None) -> dict:
    """The eval report plus ``"gradients"``: ∂output/∂name for each input (or each of ``wrt``)."""
    report = eval_report(gr)
    names = list(gr.graph.inputs) if not wrt else wrt
    report["gradients"] = {name: gr.adjoints[resolve_name(gr.graph, name)] for name in names}
    if "shapes" in report:
        for name in names:  # a --wrt name that is not in values (an unnamed node) still has one
            report["shapes"].setdefault(name, list(getattr(report["gradients"][name], "shape", ())))
    return report


_SHAPE = re.compile(r"\[\s*((?:\d+,?\s*)+?)\s*\]")


def to_json_text(report: dict) -> str:
    """The report as indented JSON, each tensor as nested lists on one line.

    >>> import numpy as np
    >>> print(to_json_text({"W": np.eye(2), "x": 1.0, "shapes": {"W": [2, 2]}}))
    {
      "W": [[1.0, 0.0], [0.0, 1.0]],
      "x": 1.0,
      "shapes": {
        "W": [2, 2]
      }
    }
    """
    import json

    arrays: list = []

    def placeholder(value):
        if hasattr(value, "tolist"):
            arrays.append(value.tolist())
            return f"\0{len(arrays) - 1}"
        raise TypeError(f"{type(value).__name__} is not JSON serializable")

    text = json.dumps(report, indent=2, ensure_ascii=False, default=placeholder)
    # Shapes (short lists of whole numbers) on one line too.
    text = _SHAPE.sub(lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text)
    for k, rows in enumerate(arrays):
        text = text.replace(f'"\\u0000{k}"', json.dumps(rows), 1)
    return text
