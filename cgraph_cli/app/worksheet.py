"""Exercise sheets (``cgraph worksheet``): a program's nodes as a table to fill in by hand,
the value of each node, its local derivatives and its gradient, with some cells left blank,
and the answer key; :mod:`cgraph_cli.render.handout` writes them as Markdown, LaTeX or HTML.

A seed draws the inputs not bound by the user (small integers, or numbers with one decimal,
so the arithmetic is doable by hand; a draw where some value is not finite is drawn again)
and, for a fraction of blanks, which cells are blank: one command gives every student a
different sheet, and the same command gives the same sheets again.

>>> s = sheet("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}, blank="gradients")
>>> [(r["node"], r["value"], r["gradient"]) for r in s["rows"]]
[('x', 1.0, -3.0), ('y', 3.0, -3.0), ('t1', 4.0, -3.0), ('z', -3.0, 4.0), ('g', -12.0, 1.0)]
>>> s["blanks"][:3]
[['x', 'gradient'], ['y', 'gradient'], ['t1', 'gradient']]
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from ..core.errors import CgraphError, UsageError
from ..core.ir import Graph
from ..core.numfmt import is_tensor

BLANKS = ("values", "gradients", "local", "all")
NUMBERS = ("int", "decimal")
DRAWS = 200  # draws tried before giving up on finding finite values


def draw(names: list[str], rng: random.Random, numbers: str = "int") -> dict[str, float]:
    """Values a student can compute with: integers from -5 to 5 but 0, or one decimal from
    -3 to 3 (not 0).

    >>> draw(["x", "y"], random.Random(1))
    {'x': -3.0, 'y': 5.0}
    """
    if numbers == "int":
        choices = [float(k) for k in range(-5, 6) if k]
    else:
        choices = [k / 10 for k in range(-30, 31) if k]
    return {name: rng.choice(choices) for name in names}


def sheet(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    blank: str | float = "all",
    seed: int | None = None,
    numbers: str = "int",
    of: str | None = None,
) -> dict[str, Any]:
    """One exercise: the bindings used, a row per node (constants aside) in the order the
    forward pass meets them, and the blank cells, as ``[node, cell]`` with cell
    "value", "gradient" or "local:K" (the K-th local derivative of that row). ``blank`` is
    "values", "gradients", "local", "all" or a fraction (0, 1] of all of those cells, drawn
    with ``seed``. Inputs not in ``bindings`` are drawn with ``seed`` when it is given, else
    take the program's defaults (drawn with seed 0 where there is none)."""
    from ..parse import parse
    from .api import grad
    from .explain import explain

    graph = program if isinstance(program, Graph) else parse(program)
    given = dict(bindings or {})
    free = [
        n for n in graph.inputs if n not in given and (seed is not None or n not in graph.defaults)
    ]
    rng = random.Random(seed or 0)
    result = fallback = None
    for _ in range(DRAWS):
        values = {**given, **draw(free, rng, numbers)}
        try:
            tried = grad(graph, values, of=of)
        except CgraphError:
            if not free:
                raise
            continue
        _numbers_only(tried)
        if not (_finite(tried.values) and _finite(tried.adjoints)):
            if not free:
                raise UsageError(
                    "some values or gradients of this program are not finite at these bindings",
                    hints=["bind the inputs to other values"],
                )
            continue
        fallback = fallback or tried
        if not free or _tame(tried):
            result = tried
            break
    result = result or fallback
    if result is None:
        raise UsageError(
            f"no draw of {', '.join(free)} in {DRAWS} gave finite values and gradients",
            hints=["bind some inputs yourself: NAME=VALUE"],
        )
    g, out = result.graph, result.output
    steps = explain(g, result.values, result.adjoints, out)
    rows = _rows(g, result, steps)
    cells = _blankable(rows, steps["output"])
    chosen = _choose(cells, blank, random.Random(seed or 0))
    used = {n: float(result.values[i]) for n, i in g.inputs.items()}
    return {
        "program": exercise_text(g.source.text, list(g.inputs)),
        "filename": g.source.filename,
        "output": steps["output"],
        "seed": seed,
        "bindings": used,
        "rows": rows,
        "blanks": [list(c) for c in chosen],
        "notes": list(getattr(g.control, "notes", ()) or ()),
    }


def exercise_text(source: str, inputs: list[str]) -> str:
    r"""The program as the sheet shows it: its statements, without comments (which may give
    answers away) and with one ``input`` line naming the inputs without their defaults (the
    sheet gives the values it uses).

    >>> print(exercise_text("# o = 0.7071\ninput x = 2, w = -3  # x\no = tanh(x * w)  # -1", ["x", "w"]))
    input x, w
    o = tanh(x * w)
    """
    lines = [f"input {', '.join(inputs)}"] if inputs else []
    for line in source.splitlines():
        code = line.split("#", 1)[0].rstrip()
        if code and not code.lstrip().startswith("input"):
            lines.append(code)
    return "\n".join(lines)


def _tame(result) -> bool:
    """Whether a draw makes a good exercise: no value beyond 10,000, and no gradient below
    0.001 (a saturated function, tanh(13), all but zeroes the gradients behind it). Where no
    draw is tame (a gradient that is always 0), the first finite one is used."""
    return all(abs(float(v)) <= 1e4 for v in result.values if v is not None) and all(
        abs(float(g)) >= 1e-3 for g in result.adjoints if g is not None
    )


def _numbers_only(result) -> None:
    graph = result.graph
    tensors = [n for n, i in graph.inputs.items() if is_tensor(result.values[i])]
    if tensors or any(is_tensor(v) for v in result.values):
        raise UsageError(
            "a worksheet is done by hand: its program must compute with numbers, not tensors",
            hints=[f"{tensors[0]} is a tensor" if tensors else "some values are tensors"],
        )


def _finite(xs) -> bool:
    return all(x is None or math.isfinite(float(x)) for x in xs)


def _rows(graph: Graph, result, steps: dict) -> list[dict[str, Any]]:
    from ..core.names import node_names
    from ..core.ops import CONST
    from ..core.walks import ancestors

    names = node_names(graph)
    reach = ancestors(graph, result.output)
    forward = {s["node"]: s for s in steps["forward"]}
    through = {s["node"]: s for s in steps["backward"]["through"]}
    rows = []
    for i in range(result.output + 1):
        if not reach[i] or graph.ops[i] is CONST:
            continue
        name = names[i]
        locals_ = [
            {
                "wrt": p["wrt"],
                "formula": p["local"],
                "value": float(p["local_value"]),
            }
            for p in through.get(name, {"partials": []})["partials"]
            if p["local_value"] is not None  # sum, matmul: a reverse rule, no number
        ]
        rows.append(
            {
                "node": name,
                "kind": "input" if graph.ops[i].arity == 0 else "op",
                "computes": forward[name]["formula"] if name in forward else None,
                "value": float(result.values[i]),
                "locals": locals_,
                "gradient": float(result.adjoints[i]),
            }
        )
    return rows


def _blankable(rows: list[dict], output: str) -> dict[str, list[tuple[str, str]]]:
    """The cells each kind of blank leaves out: an input's value is given, as is the output's
    gradient (1, where the backward pass starts)."""
    values = [(r["node"], "value") for r in rows if r["kind"] == "op"]
    gradients = [(r["node"], "gradient") for r in rows if r["node"] != output]
    local = [(r["node"], f"local:{k}") for r in rows for k in range(len(r["locals"]))]
    return {"values": values, "gradients": gradients, "local": local}


def _choose(cells: dict[str, list[tuple[str, str]]], blank: str | float, rng) -> list:
    everything = cells["values"] + cells["local"] + cells["gradients"]
    if blank == "all":
        return everything
    if isinstance(blank, str):
        return cells[blank]
    if not 0 < blank <= 1:
        raise UsageError(f"--blank {blank}: a fraction must be more than 0 and at most 1")
    count = max(1, round(blank * len(everything)))
    picked = set(rng.sample(range(len(everything)), min(count, len(everything))))
    return [c for k, c in enumerate(everything) if k in picked]


def parse_blank(text: str) -> str | float:
    """``--blank``'s value: a kind of cell or a fraction.

    >>> parse_blank("gradients"), parse_blank("0.3")
    ('gradients', 0.3)
    """
    if text in BLANKS:
        return text
    try:
        fraction = float(text)
    except ValueError:
        raise UsageError(
            f"--blank {text}: not one of {', '.join(BLANKS)}, nor a fraction such as 0.5"
        ) from None
    if not 0 < fraction <= 1:
        raise UsageError(f"--blank {text}: a fraction must be more than 0 and at most 1")
    return fraction
