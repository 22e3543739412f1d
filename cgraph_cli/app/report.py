"""The data each command reports, as plain dicts: the JSON contract, and the source of the
table and plain renderings.

>>> from cgraph_cli import grad
>>> grad_report(grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}))["gradients"]
{'x': -3.0, 'y': -3.0, 'z': 4.0}
"""

from __future__ import annotations

import re

from ..core.ir import wrt_node
from ..core.numfmt import is_tensor
from .results import Evaluation, Gradients


def eval_report(ev: Evaluation) -> dict:
    """``{"output", "value", "values"}``: ``values`` holds every input and named node. When a
    value is a tensor (a NumPy array, a nested list in JSON), ``"shapes"`` gives each value's
    shape (``[]`` for a number)."""
    values = ev.named
    values.setdefault(ev.output_name, ev.value)
    report: dict[str, object] = {"output": ev.output_name, "value": ev.value, "values": values}
    if ev.graph.control is not None and hasattr(ev.graph.control, "guards"):
        report["guards"] = [guard.as_json() for guard in ev.graph.control.guards]
    if any(is_tensor(v) for v in values.values()):
        report["shapes"] = {name: list(getattr(v, "shape", ())) for name, v in values.items()}
    return report


def grad_report(gr: Gradients, wrt: list[str] | None = None, per_step: bool = False) -> dict:
    """The eval report plus ``"gradients"``: ∂output/∂name for each input (or each of
    ``wrt``); with ``per_step``, ``"per_step"``: for each value a loop carries, ∂output/∂value
    at each step."""
    report = eval_report(gr)
    names = list(gr.graph.inputs) if not wrt else wrt
    report["gradients"] = {name: gr.adjoints[wrt_node(gr.graph, name)] for name in names}
    if per_step:
        report["per_step"] = per_step_gradients(gr)
    if "shapes" in report:
        for name in names:  # a --wrt name that is not in values (an unnamed node) still has one
            report["shapes"].setdefault(name, list(getattr(report["gradients"][name], "shape", ())))
    return report


def _scannable(graph, bindings, of: str | None) -> int | None:
    """The output's node where a long loop's report may come from the scan (see
    :func:`scanned_grad_report`), else None."""
    from ..core.ir import resolve_name
    from ..run.scan import AT_ONCE, steps_times_body

    out = graph.output if of is None else resolve_name(graph, of)
    if any(loop.lo <= out < loop.hi for loop in getattr(graph.control, "loops", ())):
        return None
    return out if steps_times_body(graph, bindings) >= AT_ONCE else None


def scanned_eval_report(graph, bindings, of: str | None) -> dict | None:
    """What the table and plain reports of ``eval`` show without ``--all`` (the output's
    value) for a program with long loops, from the scan; None where the graph that runs must
    answer (as for :func:`scanned_grad_report`)."""
    from ..run.scan import scan_forward

    out = _scannable(graph, bindings, of)
    found = None if out is None else scan_forward(graph, bindings, of)
    if found is None:
        return None
    name = graph.display_name(out)
    report: dict = {"output": name, "value": found[0], "values": {name: found[0]}}
    if is_tensor(found[0]):
        report["shapes"] = {name: list(found[0].shape)}
    return report


def scanned_grad_report(graph, bindings, of: str | None, wrt: list[str] | None) -> dict | None:
    """What the table and plain reports of ``grad`` show (each input's value and gradient,
    the output's value) for a program with long loops, from the scan
    (:mod:`cgraph_cli.run.scan`) without the graph that runs; None where that graph must
    answer: short loops (their graph is cheaper), an output of a loop's body (named by step
    there), a ``wrt`` that is not an input, and whatever the scan leaves to it."""
    from ..data.bindings import check_bindings, input_values
    from ..run.scan import scan_grad

    out = _scannable(graph, bindings, of)
    if out is None or any(w not in graph.inputs for w in wrt or ()):
        return None
    found = scan_grad(graph, bindings, of)
    if found is None:
        return None
    value, gradients = found
    name = graph.display_name(out)
    values = {**input_values(graph, check_bindings(graph, bindings))[0], name: value}
    report: dict = {"output": name, "value": value, "values": values}
    report["gradients"] = {w: gradients[w] for w in wrt or graph.inputs}
    if any(is_tensor(v) for v in values.values()):
        report["shapes"] = {n: list(getattr(v, "shape", ())) for n, v in values.items()}
    return report


def per_step_gradients(gr: Gradients) -> dict[str, list]:
    """For each value a loop carries from step to step (an RNN's ``h``), ∂output/∂value at
    each step, from its value before the loop (step 0; None when that is a constant): backpropagation through time, laid out. Empty for a program
    without loops."""
    run = gr.graph.control
    if run is None or not hasattr(run, "carried"):
        return {}
    return {
        name: [None if node is None else gr.adjoints[node] for node in run.steps[name]]
        for name in run.carried
    }


def to_json_text(report: dict, schema: str | None = None) -> str:
    """The report as indented JSON, each tensor as nested lists on one line, and so each shape
    (a list of whole numbers). Time linear in the size of the report. JSON has no infinity
    and no NaN: a number that is not finite (a local derivative at a point where it is
    infinite, in an explanation) is written as ``null``. With ``schema`` (a command's name,
    see :mod:`cgraph_cli.schemas`), the document starts with its ``"schema_version"``.

    >>> print(to_json_text({"output": "y", "value": 2.0}, schema="eval"))
    {
      "schema_version": 1,
      "output": "y",
      "value": 2.0
    }

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
    import os

    if schema is not None:
        from ..schemas import VERSIONS

        report = {"schema_version": VERSIONS[schema], **report}
    arrays: list = []
    # A placeholder string per array, with a random part no string in the report can guess.
    tag = f"\0{os.urandom(8).hex()}:"

    def placeholder(value):
        if hasattr(value, "tolist"):
            arrays.append(value)
            return f"{tag}{len(arrays) - 1}"
        raise TypeError(f"{type(value).__name__} is not JSON serializable")

    import json  # here: the text and plain reports never need it

    text = json.dumps(_finite(report), indent=2, ensure_ascii=False, default=placeholder)

    def one_line(m: re.Match) -> str:
        if m.group(1) is not None:
            return re.sub(_NOT_FINITE, "null", json.dumps(arrays[int(m.group(1))].tolist()))
        return "[" + ", ".join(m.group(2).replace(",", " ").split()) + "]"

    # One pass: placeholders, and lists of whole numbers. An indented list spans lines, and no
    # JSON string holds a raw newline, so the second pattern never matches inside a string.
    pattern = rf'"\\u0000{tag[1:]}(\d+)"|\[\n\s*(\d+(?:,\n\s*\d+)*)\n\s*\]'
    return re.sub(pattern, one_line, text)


_NOT_FINITE = r"-?Infinity|NaN"  # a pattern: compiled (and cached) by re on first use


def _finite(value):
    """``value`` with every float that is not finite replaced by None (reports nest a few
    levels of dicts and lists, built by cgraph, never by a user)."""
    if value.__class__ is float:
        return value if value - value == 0.0 else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def optimize_report(result) -> dict:
    """``cgraph optimize --format json``: the program, node counts, and each pass's rewrites
    with their place in the original program."""
    from ..core.errors import line_col

    text = result.original.source.text

    def place(r) -> dict:
        line, column = line_col(text, r.start)
        return {"line": line, "column": column, "before": r.before, "after": r.after}

    return {
        "program": result.source,
        "before": {"nodes": len(result.original.ops)},
        "after": {"nodes": len(result.graph.ops)},
        "passes": [
            {"name": p.name, "rewrites": [place(r) for r in p.rewrites]} for p in result.passes
        ],
    }
