"""Training filmed on the graph (``cgraph train ... --page FILE.html``): one self-contained
HTML file, from the data of :func:`cgraph_cli.app.film.film_frames`: the loss curve on top
(drawn here as SVG), a step slider with play and pause under it, the graph the interactive
page draws, whose values and gradients are those of the step chosen, and each parameter's
elements as a grid of cells coloured by their value.

>>> svg = loss_svg({"steps": [1, 2, 3], "loss": [4.0, 1.0, 0.25], "val": [], "total": 3})
>>> svg.startswith('<svg id="curve"'), svg.count("<polyline")
(True, 1)
"""

from __future__ import annotations

import html
import json
import math
from pathlib import PurePath
from typing import Any

from ..core.numfmt import format_number
from .page import _asset, document_head, graph_svg, theme_options

#: The loss curve's size (pixels of its viewBox) and the plot area inside it.
WIDTH, HEIGHT = 960, 160
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 14, 34
#: The most points of a curve drawn (the steps are thinned evenly beyond).
POINTS = 1500
#: A parameter with at most this many elements is drawn as a grid of coloured cells.
GRID_MAX = 256


def scale(curve: dict[str, Any]) -> dict[str, Any]:
    """How steps and losses map to the curve's pixels (the script places its marker with it):
    a logarithmic loss axis when the loss spans more than two decades."""
    losses = [x for x in curve["loss"] + [v for _, v in curve["val"]] if math.isfinite(x)]
    lo, hi = (min(losses), max(losses)) if losses else (0.0, 1.0)
    log = lo > 0 and hi / lo > 100
    first = curve["steps"][0] if curve["steps"] else 1
    return {
        "x0": LEFT,
        "x1": WIDTH - RIGHT,
        "y0": TOP,
        "y1": HEIGHT - BOTTOM,
        "first": first,
        "last": max(curve["total"], first + 1),
        "lo": lo,
        "hi": hi if hi > lo else lo + 1,
        "log": log,
    }


def _xy(s: dict[str, Any], step: float, loss: float) -> tuple[float, float]:
    x = s["x0"] + (step - s["first"]) / (s["last"] - s["first"]) * (s["x1"] - s["x0"])
    f = math.log10 if s["log"] else float
    t = (f(loss) - f(s["lo"])) / (f(s["hi"]) - f(s["lo"]))
    return round(x, 1), round(s["y1"] - t * (s["y1"] - s["y0"]), 1)


def loss_svg(curve: dict[str, Any]) -> str:
    """The loss at each step (and the validation loss) as an SVG chart, with a marker the
    script moves to the step shown."""
    s = scale(curve)
    pairs = [(a, b) for a, b in zip(curve["steps"], curve["loss"]) if math.isfinite(b)]
    every = max(1, math.ceil(len(pairs) / POINTS))
    kept = pairs[::every] + ([pairs[-1]] if pairs and (len(pairs) - 1) % every else [])
    line = " ".join(f"{x},{y}" for x, y in (_xy(s, a, b) for a, b in kept))
    parts = [
        f'<svg id="curve" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="The loss at '
        f'each step">',
        f'<rect class="plot" x="{s["x0"]}" y="{s["y0"]}" width="{s["x1"] - s["x0"]}" '
        f'height="{s["y1"] - s["y0"]}"/>',
        f'<polyline class="loss" points="{line}"/>',
    ]
    if curve["val"]:
        points = [_xy(s, a, b) for a, b in curve["val"]]
        parts.append(f'<polyline class="val" points="{" ".join(f"{x},{y}" for x, y in points)}"/>')
        parts += [f'<circle class="val" cx="{x}" cy="{y}" r="3.5"/>' for x, y in points]
    label = "loss (log scale)" if s["log"] else "loss"
    parts += [
        f'<text class="tick" x="{s["x0"] - 6}" y="{s["y0"] + 5}" text-anchor="end">'
        f"{format_number(s['hi'], 3)}</text>",
        f'<text class="tick" x="{s["x0"] - 6}" y="{s["y1"]}" text-anchor="end">'
        f"{format_number(s['lo'], 3)}</text>",
        f'<text class="tick" x="{s["x0"] - 6}" y="{(s["y0"] + s["y1"]) / 2 + 5}" '
        f'text-anchor="end">{label}</text>',
        f'<text class="tick" x="{s["x0"]}" y="{HEIGHT - 10}">step {s["first"]}</text>',
        f'<text class="tick" x="{s["x1"]}" y="{HEIGHT - 10}" text-anchor="end">'
        f"step {curve['total']}</text>",
        '<g id="marker"><line x1="0" x2="0" y1="0" y2="0"/><circle r="6" cx="0" cy="0"/></g>',
        "</svg>",
    ]
    return "\n".join(parts)


def _grids(data: dict[str, Any]) -> str:
    """A grid of cells for each parameter (a matrix's rows as rows), coloured by the script."""
    shapes = {n["name"]: n["shape"] for n in data["nodes"] if n["kind"] == "input"}
    out = []
    for name in data["params"]:
        shape = shapes.get(name, [])
        size = math.prod(shape)
        if size > GRID_MAX:
            continue
        cols = shape[-1] if shape else 1
        cells = "".join(f'<span class="cell" data-k="{k}"></span>' for k in range(size))
        style = f"grid-template-columns: repeat({cols}, 1.2rem)"
        out.append(
            f'<figure class="grid"><figcaption>{html.escape(name)} '
            f'<span class="shape">{"scalar" if not shape else tuple(shape)}</span></figcaption>'
            f'<div class="cells" data-param="{html.escape(name)}" style="{style}">{cells}</div>'
            f'<div class="cells grads" data-grad="{html.escape(name)}" style="{style}">{cells}'
            "</div></figure>"
        )
    return "".join(out)


def train_page(data: dict[str, Any], title: str, theme: str = "light") -> str:
    """The HTML of ``train --page`` for ``data`` (:func:`cgraph_cli.app.film.film_frames`),
    opening at the trained parameters."""
    e = html.escape
    name = PurePath(data["filename"]).name if not data["filename"].startswith("<") else "cgraph"
    shown = {**data, "filename": name, "scale": scale(data["curve"])}
    payload = json.dumps(shown, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    payload = payload.replace("<", "\\u003c")
    last = len(data["frames"]) - 1
    themes = theme_options(theme)
    css = _asset("page.css") + "\n" + _asset("trainpage.css")
    return f"""{document_head(name, title, theme, css)}
</style>
</head>
<body class="film">
<header>
<h1><span class="file">{e(name)}</span> <span class="result">{e(title)}</span></h1>
<label class="theme">Theme <select id="theme">{themes}</select></label>
</header>
<section class="curve">
{loss_svg(data["curve"])}
<ul class="legend"><li><span class="swatch line"></span> training loss (each step)</li>
{'<li><span class="swatch val"></span> validation loss (each epoch)</li>' if data["curve"]["val"] else ""}</ul>
<nav class="controls" aria-label="Steps">
<button type="button" id="play" aria-label="Play (space)">▶ Play</button>
<label class="slider">Step <input type="range" id="frame" min="0" max="{last}" value="{last}"></label>
<output id="counter" for="frame"></output>
<span class="now">loss <output id="loss-now" for="frame"></output></span>
</nav>
<p id="caption" class="caption" aria-live="polite"></p>
</section>
<main>
<section class="stage">
<div class="canvas">
{graph_svg(data)}
</div>
</section>
<aside class="details weights"><h2>The parameters</h2>
<p class="hint">Each cell an element, blue above 0, red below, paler near 0: the value (the
scale: the largest it gets in the run), then, smaller, its gradient at this step (the scale:
this step's largest). Hover a cell for its numbers.</p>
{_grids(data)}
</aside>
</main>
<footer>
<details><summary>The program</summary><pre><code>{e(data["source"].rstrip())}</code></pre></details>
<p class="made">Made by cgraph train --page: the graph at each step of a training run. This file needs no network.</p>
</footer>
<script type="application/json" id="cgraph-data">{payload}</script>
<script>
{_asset("signs.js")}
{_asset("trainpage.js")}
</script>
</body>
</html>
"""
