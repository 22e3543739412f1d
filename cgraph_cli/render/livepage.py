"""The live page's parts (``cgraph render P -o P.html --live``): the panel of inputs and
buttons above the graph, and its scripts: the program compiled to JavaScript, then
``live.js``, which runs it on every change and writes the numbers into the page. The page
itself is :func:`cgraph_cli.render.page.page`'s.

>>> parts = live_parts("", "{}", "globalThis.cgraphProgram = {};", "")
>>> sorted(parts), parts["scripts"].count("<script")
(['css', 'panel', 'scripts'], 3)
"""

from __future__ import annotations

from ..core.errors import UsageError
from .page import _asset


def _script(text: str) -> str:
    """``text`` in a script element; it cannot end the element early."""
    if "</script" in text.lower() or "<!--" in text:
        raise UsageError("the compiled program holds text that would end the page's script")
    return f"<script>\n{text}\n</script>"


def live_parts(
    controls: str, payload: str, program: str, guards: str = "", variants: str = ""
) -> dict[str, str]:
    """The panel (``controls``: each input's fields) and the scripts: ``guards`` (the traced
    program, its conditions' values), ``variants`` (script elements: the static program and
    the program of each graph the page holds, for a program with if/else), ``program`` (the
    graph that ran) and the page's ``payload`` (JSON: the inputs as bound, their shapes, the
    conditions, the graphs it holds)."""
    panel = f"""<section class="live" aria-label="Inputs">
<div class="live-inputs">{controls}</div>
<div class="live-buttons">
<button type="button" id="live-step">One gradient step</button>
<label>learning rate <input type="range" id="live-lr" min="-3" max="0" step="0.01" value="-1"
aria-label="learning rate (log scale)"> <output id="live-lr-text">0.1</output></label>
<button type="button" id="live-reset">Reset</button>
<label><input type="checkbox" id="live-freeze" checked> freeze the data (inputs ticked
"data")</label>
<output id="live-time" class="muted"></output>
</div>
<p id="live-error" class="live-error" role="alert" hidden></p>
<p id="live-note" class="live-note" role="status" hidden></p>
</section>"""
    scripts = "\n".join(
        [
            f'<script type="application/json" id="cgraph-live">{payload}</script>',
            _script(guards) if guards else "",
            variants,
            _script(program),
            _script(_asset("live.js")),
        ]
    )
    return {"panel": panel, "scripts": scripts, "css": _asset("live.css")}
