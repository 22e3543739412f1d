"""The interactive page: one self-contained HTML file (SVG, script and style inside, no
request of any kind) that steps through both passes of a program, from the data of
:func:`cgraph_cli.app.walkthrough.walkthrough`.

Without its script the page shows the finished graph (every value and gradient); the script
hides what a step has not computed yet and replays the events up to the current step.

>>> from cgraph_cli import parse
>>> from cgraph_cli.app.walkthrough import steps
>>> from cgraph_cli.render.layout import place
>>> data = steps(parse("y = 2 * x"), {"x": 3})
>>> plain = "graph 1 3 1\\n" + "".join(
...     f"node {n['id']} {k + 0.5} 0.5 1 0.5 \\"\\" solid box black white\\n"
...     for k, n in enumerate(data["nodes"])) + "".join(
...     f"edge {e['from']} {e['to']} 4 1 0.5 1.1 0.5 1.2 0.5 1.3 0.5 solid black\\n"
...     for e in data["edges"]) + "stop"
>>> html = page(place(data, plain))
>>> html.startswith("<!DOCTYPE html>"), "://" in html  # no address of any kind
(True, False)
"""

from __future__ import annotations

import html
import json
import re
from importlib.resources import files
from pathlib import PurePath
from typing import Any

from .dot import THEMES, Theme
from .layout import LINE, PAD

FONT = '"Liberation Sans", Arial, Helvetica, sans-serif'
TOP = PAD + 14  # the padding above a node's first line, plus the font's ascent


def _asset(name: str) -> str:
    return files("cgraph_cli.render").joinpath(name).read_text(encoding="utf-8")


def theme_css(name: str, theme: Theme) -> str:
    """A theme's colours as CSS variables (the diagrams' themes, so one contrast check holds
    both)."""
    pairs = {
        "bg": theme.background,
        "fg": theme.text,
        "muted": theme.muted,
        "input": theme.input_fill,
        "op": theme.op_fill,
        "const": theme.const_fill,
        "output": theme.output,
        "pos": theme.positive,
        "neg": theme.negative,
    }
    body = " ".join(f"--{k}: {v};" for k, v in pairs.items())
    return f':root[data-theme="{name}"] {{ {body} }}'


def theme_options(theme: str) -> str:
    """The theme menu's options, ``theme`` selected."""
    return "".join(
        f'<option value="{n}"{" selected" if n == theme else ""}>{n}</option>' for n in THEMES
    )


def document_head(name: str, title: str, theme: str, css: str) -> str:
    """An offline page's head, up to its open ``<style>`` element: the Content-Security-Policy
    that forbids every request (styles and scripts inline only, images as data: URLs), the
    themes' colours, then ``css``."""
    e = html.escape
    themes = "\n".join(theme_css(n, t) for n, t in THEMES.items())
    return f"""<!DOCTYPE html>
<html lang="en" data-theme="{e(theme)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>{e(name)}: {e(title)}</title>
<style>
body {{ font-family: {FONT}; }}
{themes}
{css}"""


def graph_svg(data: dict[str, Any]) -> str:
    """The graph of ``data`` (with its layout) as the page draws it: every node a ``g`` with
    the node's id, its value's text ``ID-v`` and its gradient's ``ID-g``, each edge a ``g``
    with its path and labels (the interactive page's, the live page's and ``train --page``'s).
    """
    e = html.escape
    out = data["output"]
    parts = [
        # As wide as the page allows, from 70% of its natural size (text still readable; the
        # canvas scrolls below that) to twice it (a projector's back row).
        f'<svg id="graph" viewBox="0 0 {data["width"]} {data["height"]}" style="min-width: '
        f'{round(0.7 * data["width"])}px; max-width: {2 * data["width"]}px" role="group" '
        f'aria-label="The graph of {e(out)}: {len(data["nodes"])} nodes">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="1" refY="5" '
        'markerUnits="userSpaceOnUse" markerWidth="11" markerHeight="11" orient="auto">'
        '<path d="M0 0L10 5L0 10z" class="arrowhead"/></marker></defs>',
    ]
    groups = data.get("groups") or []
    parts += [_group_frame(grp) for grp in groups]  # open: an outline behind its nodes
    for edge in data["edges"]:
        lx, ly = edge["label_at"]
        labels = []
        if edge["shape"]:
            labels.append(f'<tspan x="{lx}" dy="0" class="eshape">{e(edge["shape"])}</tspan>')
        if edge["local"]:
            dy = LINE if edge["shape"] else 0
            labels.append(
                f'<tspan x="{lx}" dy="{dy}" class="elocal" id="{edge["id"]}-l">'
                f"{e(edge['local'])}</tspan>"
            )
        port = ""
        if edge["port"]:
            px, py = edge["port_at"]
            port = (
                f'<g class="port"><circle cx="{px}" cy="{py}" r="8"/>'
                f'<text x="{px}" y="{py + 4}">{edge["port"]}</text></g>'
            )
        text = (
            f'<text class="elabel" x="{lx}" y="{ly + 4}">{"".join(labels)}</text>' if labels else ""
        )
        parts.append(
            f'<g class="edge" id="{edge["id"]}"><path d="{edge["path"]}" '
            f'marker-end="url(#arrow)"/>{text}{port}</g>'
        )
    for node in data["nodes"]:
        x, y, w, h = node["box"]
        cx = round(x + w / 2, 1)
        classes = f"node {node['kind']}" + (" output" if node["output"] else "")
        head = (
            f'<tspan class="glyph">{e(node["glyph"])}</tspan>  '
            f'<tspan class="{"name" if node["named"] else "name unnamed"}">'
            f"{e(node['name'])}</tspan>"
            if node["kind"] == "op"
            else f'<tspan class="name">{e(node["name"])}</tspan>'
        )
        lines = [f'<text x="{cx}" y="{y + TOP}" class="head">{head}</text>']
        row = 1
        if not (node["kind"] == "const" and node["value"] == node["name"]):
            lines.append(
                f'<text x="{cx}" y="{y + TOP + LINE}" class="val" id="{node["id"]}-v">'
                f"= {e(node['value'])}</text>"
            )
            row += 1
        if node["grad"] is not None:
            lines.append(
                f'<text x="{cx}" y="{y + TOP + LINE * row}" {_painted(node)} '
                f'id="{node["id"]}-g">{e(node["adjoint"])} = {painted(node["grad"])}</text>'
            )
        label = f"{node['name']}: " + (
            node["formula"] or ("input" if node["kind"] == "input" else "constant")
        )
        parts.append(
            f'<g class="{classes}" id="{node["id"]}" data-node="{e(node["name"])}" '
            'tabindex="0" role="button" '
            f'aria-label="{e(label)}"><rect x="{x}" y="{y}" width="{w}" height="{h}" rx="8"/>'
            + "".join(lines)
            + "</g>"
        )
    parts += [_group_box(grp) for grp in groups]  # folded: a box over its nodes
    parts.append("</svg>")
    return "\n".join(parts)


#: A number as the page writes it (see page.js, which paints the steps the same way).
NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?(?:e[+-]?\d+)?|inf|nan)")


def painted(text: str) -> str:
    """A gradient's text as SVG: a tensor written out element by element has each element
    coloured by its own sign (``tspan`` of class pos, neg); anything else is left as it is
    (its text element takes the colour of its one sign, :func:`_painted`).

    >>> painted("[0.5, -2, 0]")
    '[<tspan class="pos">0.5</tspan>, <tspan class="neg">-2</tspan>, <tspan>0</tspan>]'
    """
    if not text.startswith("["):
        return html.escape(text)

    def one(m: re.Match) -> str:
        x = float(m.group(0))
        kind = ' class="pos"' if x > 0 else ' class="neg"' if x < 0 else ""
        return f"<tspan{kind}>{m.group(0)}</tspan>"

    return NUMBER.sub(one, html.escape(text))


def _painted(item: dict[str, Any]) -> str:
    """The class of a gradient's text element: its one sign's colour, unless its elements
    are painted one by one."""
    if item["grad"].startswith("["):
        return 'class="grad"'
    return 'class="grad' + {1: " pos", -1: " neg", 0: ""}[item["sign"]] + '"'


def _group_frame(grp: dict[str, Any]) -> str:
    """An open group: its outline, headed by the call as written and a button that folds it."""
    e = html.escape
    x, y, w, h = grp["box"]
    return (
        f'<g class="group-frame" id="{grp["id"]}"><rect x="{x}" y="{y}" width="{w}" '
        f'height="{h}" rx="10"/><text x="{x + 10}" y="{y + 17}" class="ghead" tabindex="0" '
        f'role="button" aria-label="Fold {e(grp["label"])} into one box">'
        f"▾ {e(grp['label'])}</text></g>"
    )


def _group_box(grp: dict[str, Any]) -> str:
    """A folded group: one box over its nodes, with the call as written and the value and
    gradient of what it returns; hidden until the script folds the group."""
    e = html.escape
    x, y, w, h = grp["fold"]
    cx = round(x + w / 2, 1)
    top = y + max(TOP, h / 2 - LINE)
    return (
        f'<g class="node group-box hidden" id="{grp["id"]}-box" tabindex="0" role="button" '
        f'aria-label="{e(grp["label"])}: folded; Enter opens it">'
        f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="10"/><rect x="{x + 4}" '
        f'y="{y + 4}" width="{w - 8}" height="{h - 8}" rx="7" class="inner"/>'
        f'<text x="{cx}" y="{top}" class="head"><tspan class="glyph">▸</tspan>  '
        f'<tspan class="name">{e(grp["label"])}</tspan></text>'
        f'<text x="{cx}" y="{top + LINE}" class="val" id="{grp["id"]}-v">= {e(grp["value"])}'
        f'</text><text x="{cx}" y="{top + 2 * LINE}" {_painted(grp)} id="{grp["id"]}-g">'
        f"{e(grp['adjoint'])} = {painted(grp['grad'])}</text></g>"
    )


def inline_svg(svg: bytes, prefix: str = "") -> str:
    """Graphviz's SVG document as an element to put inside HTML: no XML prolog, doctype or
    comments, no namespace addresses (HTML needs none, and the page names no address), and
    its ids begun with ``prefix`` (one page may hold several drawings; ids are unique).

    >>> inline_svg(b'<?xml version="1.0"?>\\n<!-- c -->\\n<svg width="8pt" '
    ...            b'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
    ...            b'<g id="node1"/></svg>\\n', "light-")
    '<svg width="8pt"><g id="light-node1"/></svg>'
    """
    import re

    text = svg.decode("utf-8")
    text = re.sub(r"<\?xml.*?\?>|<!DOCTYPE[^>]*>|<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r'\s+xmlns(?::\w+)?="[^"]*"', "", text)
    text = text.replace("xlink:href", "href")
    if prefix:
        text = re.sub(r'\b(id|href)="(#?)', rf'\1="\2{prefix}', text)
        text = text.replace("url(#", f"url(#{prefix}")
    return text.strip()


def _static_views(static: dict[str, str] | None, what: str) -> str:
    """The program as written (``what``: both branches of each if, each loop's body once),
    one drawing per theme; the page shows the one of its theme."""
    if not static:
        return ""
    drawings = "".join(
        f'<div class="static-view" data-for-theme="{name}">{svg}</div>'
        for name, svg in static.items()
    )
    return (
        f'<details class="static" open><summary>The program as written: {what} (the graph '
        f'above is the one that ran)</summary><div class="canvas">{drawings}</div></details>'
    )


def page(
    data: dict[str, Any],
    theme: str = "light",
    title: str | None = None,
    static: dict[str, str] | None = None,
    static_what: str = "",
    live: dict[str, str] | None = None,
) -> str:
    """The HTML page for ``data`` (with its layout), opening in ``theme``; ``static``: for a
    program with control flow, its static graph as inline SVG in each theme (theme name ->
    ``<svg>`` element), shown under the graph that ran; ``static_what``: what it shows (both
    branches of each ``if``, each loop's body once); ``live``: the live page's panel and
    scripts (:func:`cgraph_cli.render.livepage.live_parts`)."""
    live = live or {"panel": "", "scripts": "", "css": ""}
    e = html.escape
    title = title or f"{data['output']} = {data['value']}"
    # The file's name alone: where it lies on this machine is nobody's business on a slide.
    name = PurePath(data["filename"]).name if not data["filename"].startswith("<") else "cgraph"
    long = data["source"].count("\n") > 14
    shown = {**data, "filename": name if not data["filename"].startswith("<") else data["filename"]}
    payload = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
    # No "<" at all inside the script element: neither "</script>" nor "<!--" can end it.
    payload = payload.replace("<", "\\u003c")
    notes = "".join(f"<li>{e(n)}</li>" for n in data["notes"])
    themes = theme_options(theme)
    return f"""{document_head(name, title, theme, _asset("page.css"))}
{live["css"]}
</style>
</head>
<body>
<header>
<h1><span class="file">{e(name)}</span> <span class="result">{e(title)}</span></h1>
<nav class="controls" aria-label="Steps">
<button type="button" id="first" aria-label="Back to the start (Home)" title="Home">Start</button>
<button type="button" id="prev" aria-label="Previous step (←)" title="←">◀ Back</button>
<button type="button" id="next" aria-label="Next step (→)" title="→">Next ▶</button>
<button type="button" id="last" aria-label="Last step (End)" title="End">End</button>
<label class="slider">Step <input type="range" id="step" min="0" max="{len(data["events"])}" value="{len(data["events"])}"></label>
<output id="counter" for="step">{len(data["events"])} / {len(data["events"])}</output>
<label class="theme">Theme <select id="theme">{themes}</select></label>
</nav>
<nav class="view" aria-label="View">
<button type="button" id="zoom-out" aria-label="Zoom out (−)" title="−">−</button>
<output id="zoom-level">100%</output>
<button type="button" id="zoom-in" aria-label="Zoom in (+)" title="+">+</button>
<button type="button" id="zoom-fit" aria-label="Fit the graph (0)" title="0">Fit</button>
<label class="find">Find <input type="search" id="search" placeholder="a node's name (/)" aria-label="Find a node by its name" size="14"></label>
<output id="search-result" for="search"></output>
</nav>
</header>
{live["panel"]}
<main>
<section class="stage">
<p id="phase" class="phase">Both passes done</p>
<p id="caption" class="caption" aria-live="polite">{e(data["events"][-1]["caption"])}</p>
<div class="canvas">
{graph_svg(data)}
</div>
<ul class="legend">
<li><span class="swatch pos"></span> gradient &gt; 0 (blue, no sign)</li>
<li><span class="swatch neg"></span> gradient &lt; 0 (red, with its minus sign)</li>
<li>+ (4, 3) tensor, − (2,) tensor: a gradient shown by its shape, all of one sign; ± both signs (not coloured)</li>
<li>x̄ (a bar): the gradient of the output over every path; ∂t/∂x: one op's local partial</li>
<li><span class="badge">1</span> <span class="badge">2</span> operand order where it matters (−, ÷, ^, @)</li>
<li><span class="swatch const"></span> constant (dashed)</li>
<li>Keys: → next, ← back, Home start, End finish, + and − zoom, 0 fits, / finds a node; drag to pan, ctrl + wheel zooms; Tab to a node for its details</li>
</ul>
</section>
<aside id="details" class="details" aria-live="polite">
<h2>Details</h2>
<p class="hint">Click a node, or Tab to it, to see its value, its local derivatives and its gradient by the chain rule.</p>
</aside>
</main>
<footer>
<details{"" if long else " open"}><summary>The program</summary><pre><code>{e(data["source"].rstrip())}</code></pre></details>
{f"<details open><summary>Control flow</summary><ul>{notes}</ul></details>" if notes else ""}
{_static_views(static, static_what)}
<p class="made">Made by cgraph: a computational graph, stepped through its forward and backward passes. This file needs no network.</p>
</footer>
<script type="application/json" id="cgraph-data">{payload}</script>
<script>
{_asset("signs.js")}
{_asset("page.js")}
</script>
{live["scripts"]}
</body>
</html>
"""
