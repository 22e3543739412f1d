"""The data each command reports, as plain dicts: the JSON contract, and the source of the
table and plain renderings.

>>> from cgraph_cli import grad
>>> grad_report(grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}))["gradients"]
{'x': -3.0, 'y': -3.0, 'z': 4.0}
"""

from __future__ import annotations

from .api import Evaluation, Gradients, resolve_name


def eval_report(ev: Evaluation) -> dict:
    """``{"output", "value", "values"}``: ``values`` holds every input and named node."""
    values = ev.named
    values.setdefault(ev.output_name, ev.value)
    return {"output": ev.output_name, "value": ev.value, "values": values}


def grad_report(gr: Gradients, wrt: list[str] | None = None) -> dict:
    """The eval report plus ``"gradients"``: ∂output/∂name for each input (or each of ``wrt``)."""
    report = eval_report(gr)
    names = list(gr.graph.inputs) if not wrt else wrt
    report["gradients"] = {name: gr.adjoints[resolve_name(gr.graph, name)] for name in names}
    return report
