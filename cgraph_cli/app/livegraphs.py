"""The graphs a live page holds (``cgraph render P -o P.html --live``) for a program whose graph
that runs changes with its inputs: one per combination of branches its ``if/else`` take, or
per number of steps its loops run, found by trying inputs across the sliders' ranges and far
out on either side; the page draws the one the inputs take, in place of the one before.

Which graph new inputs take, the page's script works out as this module does: for if/else,
the static program compiled to JavaScript (the branch not taken never computed) says which
way each conditional goes (:func:`cgraph_cli.run.control.branches`); for loops, the inputs
that are a loop's number of steps (``for t in range(n)``) are the key.

>>> from cgraph_cli import parse
>>> g = parse("input e = 0.3\\ny = e * e if abs(e) < 1 else abs(e)")
>>> found = held_graphs(g, {"e": 0.3}, {"e": 0.3}, {}, None, True, dict(theme="light",
...     rankdir="LR", precision=4, renderer="auto"))
>>> [held["key"] for held in found["payload"]["variants"]]
['[true]', '[false]']
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..core.arrays import np
from ..core.errors import CgraphError
from ..core.ir import Graph
from ..core.ir_control import Static
from ..core.ops import INPUT

#: The most graphs a live page holds, and how many bindings are tried to find them.
MAX_HELD = 8
MAX_TRIED = 400


def slider_range(name: str, value: float, ranges: Mapping[str, tuple[float, float]]):
    """A number input's slider: ``ranges``' ends for it, else ±2 × |its value| (±1 for 0)."""
    if name in ranges:
        return ranges[name]
    reach = 2 * abs(value) or 1.0
    return -reach, reach


def held_graphs(graph: Graph, checked: Mapping, values: Mapping, ranges, of, force, drawing):
    """The page's payload (each graph it holds: its key, its ``<main>`` and ``<footer>``, its
    data, what ran; and what the script reads the key from) and the scripts (each graph's
    program, and for if/else the static program, which also says an error of the branch
    taken where the graph drawn holds the other). None for a loop whose inputs tried take one
    number of steps only, and for a program with both if/else and loops."""
    from ..passes.guards import is_select, marked
    from ..render.livepage import _script
    from ..run.compile_js import js_module
    from ..run.control import branches, ran_graph

    control = graph.control
    if not isinstance(control, Static) or (control.conds and control.loops):
        return None
    if control.conds:
        key = lambda b: _key(branches(graph, b))  # noqa: E731
        tries = _tries(values, ranges)
    else:
        steps = _steps_inputs(graph)
        if not steps:
            return None
        key = lambda b: _key([_number(b[n]) for n in steps])  # noqa: E731
        tries = _counts(values, ranges, steps)
    first = key(checked)
    if first == "null":
        return None
    found = {first: dict(checked)}
    for tried in tries:
        taken = key({**checked, **tried})
        if taken != "null" and taken not in found:
            found[taken] = {**checked, **tried}
            if len(found) == MAX_HELD:
                break
    held, programs = [], []
    for k, bindings in found.items():
        try:
            drawn = _drawn(graph, bindings, of, force, drawing, k)
            ran = ran_graph(graph, bindings)
            program = js_module(ran, of=of, bindings={**ran.defaults, **bindings})
        except CgraphError:  # (the graph that runs refuses these inputs: not held)
            continue
        held.append(drawn)
        programs.append(program)
    if not held or held[0]["key"] != first or (len(held) < 2 and not control.conds):
        return None
    payload: dict = {"variants": held}
    scripts = []
    if control.conds:
        static = marked(graph)
        payload["conds"] = [
            static.args[s][0] for s in range(len(static.ops)) if is_select(static, s)
        ]
        text = graph.source.text
        payload["condTexts"] = [
            " ".join(text[static.starts[c] : static.ends[c]].split()) for c in payload["conds"]
        ]
        try:  # (branches of shapes that do not broadcast: no static program, no graph held)
            static_program = js_module(graph, of=of)
        except CgraphError:
            return None
        scripts.append(
            _script(static_program + "\nglobalThis.cgraphStatic = globalThis.cgraphProgram;")
        )
    else:
        payload["steps"] = steps
    scripts += [
        _script(p + "\n(globalThis.cgraphVariantPrograms ||= []).push(globalThis.cgraphProgram);")
        for p in programs
    ]
    return {"payload": payload, "scripts": "\n".join(scripts)}


def _key(parts) -> str:
    """A graph's key as the page's script writes it (``JSON.stringify``)."""
    return json.dumps(parts, separators=(",", ":"))


def _number(x):
    """A number as JSON writes it in a page (3, not 3.0)."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _steps_inputs(graph: Graph) -> list[str]:
    """The inputs that are a loop's number of steps (``for t in range(n)``), in order."""
    names = []
    for loop in graph.control.loops:
        bound, node = loop.count or (None, None)
        if isinstance(bound, tuple) and bound[0] == "value" and node is not None:
            if graph.ops[node] is INPUT:
                names.append(graph.labels[node])
    return list(dict.fromkeys(names))


def _counts(values: Mapping, ranges, steps: list[str]) -> list[dict]:
    """Numbers of steps to try: each input of ``steps`` alone, the whole numbers of its
    slider's range from its value outwards."""
    tries = []
    for name in steps:
        value = float(np.asarray(values[name]))
        lo, hi = slider_range(name, value, ranges)
        whole = range(max(0, int(np.ceil(lo))), int(np.floor(hi)) + 1)
        tries += [{name: float(k)} for k in sorted(whole, key=lambda k: abs(k - value))]
    return tries[:MAX_TRIED]


def _tries(values: Mapping, ranges) -> list[dict]:
    """Bindings to try for other branches: each number input alone across its slider's range
    and far out on either side (0, ±0.01 to ±1,000 times its size), then pairs of them."""
    numbers = {n: float(v) for n, v in values.items() if np.ndim(v) == 0}
    spread: dict[str, list[float]] = {}
    for name, value in numbers.items():
        lo, hi = slider_range(name, value, ranges)
        size = max(abs(value), 1.0)
        far = [s * f * size for f in (0.01, 0.1, 0.5, 1, 2, 10, 100, 1000) for s in (1, -1)]
        spread[name] = [lo + (hi - lo) * k / 8 for k in range(9)] + [0.0] + far
    tries = [{n: x} for n, xs in spread.items() for x in xs]
    names = list(spread)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            pairs = [(x, y) for x in spread[names[a]][::3] for y in spread[names[b]][::3]]
            tries += [{names[a]: x, names[b]: y} for x, y in pairs]
    return tries[:MAX_TRIED]


def _drawn(graph: Graph, bindings: Mapping, of, force, drawing: dict, key: str) -> dict:
    """One graph the page holds: its key, the page's ``<main>`` and ``<footer>`` for it, its
    data and what ran (which branch, how many steps; without these bindings' numbers, which
    are not the page's)."""
    from ..render.page import page as write_page
    from .walkthrough import walkthrough

    theme = drawing["theme"]
    options = {k: v for k, v in drawing.items() if k != "theme"}
    data = walkthrough(graph, bindings, of=of, force=force, **options)
    said = _said(graph, bindings)
    data["notes"] = said  # (its footer's, without these bindings' numbers: the page's differ)
    markup = write_page(data, theme=theme)
    main = markup[markup.index("<main>") + 6 : markup.index("</main>")]
    footer = markup[markup.index("<footer>") + 8 : markup.index("</footer>")]
    return {"key": key, "main": main, "footer": footer, "data": data, "note": "; ".join(said)}


def _said(graph: Graph, bindings: Mapping) -> list[str]:
    """What ran for ``bindings``, without their numbers: which branch each if/else took (once
    each, in order), how many steps each loop ran."""
    from ..run.control import ran_graph

    guards = ran_graph(graph, bindings).control.guards
    return list(dict.fromkeys(guard.rule() for guard in guards))
