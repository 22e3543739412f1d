"""The live page (``cgraph render P -o P.html --live``): the interactive page with a control for
each input (a slider and a number field for a number, a grid of number fields for a tensor of
up to :data:`GRID` elements) that recomputes, in the browser, every value and gradient with the
program compiled to JavaScript (``cgraph compile --target js``: the same numbers as ``cgraph
grad``), and buttons for one gradient step, a reset and freezing the inputs that are data.

A program whose graph that runs changes with its inputs (an if/else, or a loop whose number
of steps is an input) is drawn as it ran for the bindings given, and drawn again when new
inputs take another graph that the page holds (:mod:`cgraph_cli.app.livegraphs`); for one it
does not hold, or a program with both if/else and loops whose inputs would take another branch,
the page says which and how to draw that one, and shows no number it did not compute. A
tensor's length is fixed on the page.

>>> html = live_page("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}, ranges={"x": (-5, 5)})
>>> 'data-input="x"' in html, 'min="-5"' in html, "cgraphProgram" in html
(True, True, True)
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ..core.arrays import np
from ..core.errors import UsageError
from ..core.ir import Graph
from ..core.numfmt import format_number
from .livegraphs import held_graphs, slider_range

#: A tensor input with at most this many elements gets a grid of number fields.
GRID = 16
#: Inputs with these names are data (the checkbox "freeze the data" keeps them as they are).
DATA_NAMES = re.compile(r"(x|xs|X|y|ys|Y|t|T|target|targets|label|labels|data)\d*$")


def _plain(value: Any) -> float | list[float]:
    """A value as JSON holds it: a number, or a tensor's elements in order."""
    return float(value) if np.ndim(value) == 0 else np.ravel(value).astype(float).tolist()


def _controls(graph: Graph, values: Mapping[str, Any], ranges, data: list[str]) -> str:
    """Each input's control, by its kind: a slider and a field, a grid of fields, or its shape
    (fixed) for a larger tensor."""
    e = html.escape
    rows = []
    for name, value in values.items():
        frozen = (
            f'<label class="frozen" title="Data: not moved by a gradient step while data is '
            f'frozen"><input type="checkbox" data-data="{e(name)}"'
            f"{' checked' if name in data else ''}> data</label>"
        )
        if np.ndim(value) == 0:
            lo, hi = slider_range(name, float(value), ranges)
            if not lo <= float(value) <= hi:  # the slider would show another value than used
                shown = format_number(float(value))
                raise UsageError(
                    f"--range {name}={format_number(lo)},{format_number(hi)} leaves out "
                    f"{name}'s value, {shown}",
                    hints=[f"bind {name} inside it ({name}={format_number((lo + hi) / 2)}), "
                           "or widen the range"],
                )  # fmt: skip
            shown = format_number(float(value))
            rows.append(
                f'<div class="live-input"><label for="in-{e(name)}">{e(name)}</label>'
                f'<input type="range" id="slide-{e(name)}" data-slider="{e(name)}" '
                f'min="{lo!r}" max="{hi!r}" step="any" value="{float(value)!r}" '
                f'aria-label="{e(name)}: slider">'
                f'<input type="number" id="in-{e(name)}" data-input="{e(name)}" step="any" '
                f'value="{shown}">{frozen}</div>'
            )
        elif np.size(value) <= GRID:
            shape = np.shape(value)
            cols = shape[-1]
            cells = "".join(
                f'<input type="number" data-input="{e(name)}" data-index="{k}" step="any" '
                f'value="{format_number(float(x))}" aria-label="{e(name)} element {k}">'
                for k, x in enumerate(np.ravel(value))
            )
            rows.append(
                f'<div class="live-input"><span class="label">{e(name)}</span>'
                f'<div class="field-grid" style="grid-template-columns: repeat({cols}, 4.6rem)">'
                f"{cells}</div>{frozen}</div>"
            )
        else:
            rows.append(
                f'<div class="live-input"><span class="label">{e(name)}</span>'
                f'<span class="fixed">a {tuple(np.shape(value))} tensor, as bound (more than '
                f"{GRID} elements)</span></div>"
            )
    return "".join(rows)


def _guards(graph: Graph, bindings: Mapping) -> tuple[str, list[dict]]:
    """For a program with if/else: the graph as traced (its conditions included) as a script
    that sets ``cgraphGuards``, and each condition's node, what it was and what it says."""
    from ..core.ir_control import Static, which
    from ..data.bindings import check_bindings
    from ..parse.driver import parse_source
    from ..run.compile_js import js_module
    from ..run.control import Tracer

    if not isinstance(graph.control, Static):
        return "", []
    tracer = Tracer(graph, check_bindings(graph, bindings))
    traced = parse_source(graph.source, tracer)
    found = []
    decided = [guard for guard in tracer.guards if guard.kind == "if"]
    for guard, node in zip(decided, tracer.conditions):  # (a loop's step each its own node)
        other = which(not guard.value)
        found.append({"node": node, "holds": bool(guard.value), "text": guard.text, "other": other})
    if not found:
        return "", []
    script = js_module(traced, of=None)
    return script + "\nglobalThis.cgraphGuards = globalThis.cgraphProgram;\n", found


def live_page(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    theme: str = "light",
    rankdir: str = "LR",
    precision: int = 4,
    renderer: str = "auto",
    force: bool = False,
) -> str:
    """The live page's HTML (see the module's docstring); ``ranges``: a slider's ends by
    input name (default: ±2 × |the bound value|, ±1 for 0)."""
    from ..data.bindings import check_bindings
    from ..parse import parse
    from ..render.page import page as write_page
    from ..run.compile_js import js_module
    from ..run.control import ran_graph
    from .walkthrough import walkthrough

    graph = program if isinstance(program, Graph) else parse(program)
    ranges = dict(ranges or {})
    data = walkthrough(graph, bindings, of=of, precision=precision, rankdir=rankdir,
                       renderer=renderer, force=force)  # fmt: skip
    ran = ran_graph(graph, bindings)
    checked = {**ran.defaults, **check_bindings(graph, bindings)}
    for name, (lo, hi) in ranges.items():
        if name not in ran.inputs:
            raise UsageError(f"--range {name}: the program has no input {name}")
        if not lo < hi:
            raise UsageError(f"--range {name}={lo:g},{hi:g}: the low end must be below the high")
    values = {name: checked[name] for name in ran.inputs}  # a condition may read one not drawn
    for name in ranges:
        if name in values and np.ndim(values[name]):
            raise UsageError(f"--range {name}: {name} is a tensor; its fields take any number")
    script = js_module(ran, of=of, bindings=checked)
    drawing = dict(theme=theme, rankdir=rankdir, precision=precision, renderer=renderer)
    found = held_graphs(graph, checked, values, ranges, of, force, drawing)
    guards_script, guards = ("", []) if found else _guards(graph, checked)
    data_inputs = [n for n in values if DATA_NAMES.fullmatch(n)]
    live = {
        "inputs": {k: _plain(v) for k, v in values.items()},
        "shapes": {k: list(np.shape(v)) for k, v in values.items()},
        "guards": guards,
        **(found["payload"] if found else {}),
        "source": PurePath(graph.source.filename).name,  # no path of this machine on a slide
        "precision": precision,
    }
    payload = json.dumps(live, separators=(",", ":")).replace("<", "\\u003c")
    controls = _controls(ran, values, ranges, data_inputs)
    from ..render.livepage import live_parts

    parts = live_parts(controls, payload, script, guards_script, found["scripts"] if found else "")
    return write_page(data, theme=theme, live=parts)
