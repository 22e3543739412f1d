"""Training filmed on the graph (``cgraph train ... --page FILE.html``): the steps a run takes,
kept at most :data:`MAX_FRAMES` of them (every step, or every 2nd, 4th... as the run grows),
each drawn on the interactive page's graph with the values and gradients of that step.

A frame is one step as it happened: the parameters going into it, its batch, its loss (the
log's) and the gradients its update used. The last frame is the result: the parameters
``train -o`` saves, and the loss over all the rows (the report's).

>>> from cgraph_cli import parse
>>> from cgraph_cli.jobs.training import train
>>> graph = parse("input x = 3\\nf = (x - 1)^2")
>>> film = Film(["x"], limit=4)
>>> result = train(graph, wrt=["x"], lr=0.1, steps=10, watch=film)
>>> [step for step, _ in film.frames()]
[1, 5, 9, 10]
>>> frames = film_frames(graph, None, film, result)
>>> frames["frames"][-1]["label"], frames["frames"][-1]["params"]["x"] == [result.params["x"]]
('trained', True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.arrays import np
from ..core.ir import Graph

#: The most steps a page keeps (a 200-epoch run: every step).
MAX_FRAMES = 200


class Film:
    """The ``watch`` of :func:`cgraph_cli.jobs.training.train`: keeps steps 1, 1 + s, 1 + 2s...
    (``s`` doubling whenever more than ``limit`` are kept) and the last step, each as its
    inputs with the parameters copied (the update changes them in place)."""

    def __init__(self, wrt: Sequence[str], limit: int = MAX_FRAMES) -> None:
        self.wrt, self.limit, self.stride = list(wrt), limit, 1
        self.kept: list[tuple[int, dict]] = []
        self.last: tuple[int, dict] | None = None

    def __call__(self, step: int, inputs: Mapping[str, object]) -> None:
        shot = {k: (np.array(v, dtype=float) if k in self.wrt else v) for k, v in inputs.items()}
        self.last = (step, shot)
        if self.kept and (step - self.kept[0][0]) % self.stride:
            return
        self.kept.append((step, shot))
        if len(self.kept) > self.limit:
            self.stride *= 2
            first = self.kept[0][0]
            self.kept = [(s, x) for s, x in self.kept if (s - first) % self.stride == 0]

    def frames(self) -> list[tuple[int, dict]]:
        """The steps kept, the last one included."""
        if self.last is not None and (not self.kept or self.kept[-1][0] != self.last[0]):
            return [*self.kept, self.last]
        return list(self.kept)


def _loss_graph(graph: Graph, inputs: Mapping, of: str | None, reduce: str):
    """The graph whose output is the loss training used: the program's, or its mean (sum)
    over the rows when it has one value per row; and its output's name."""
    from ..jobs.training import evaluate_value, reduced
    from ..run.control import ran_graph

    if np.ndim(evaluate_value(graph, inputs, of)):
        ran = ran_graph(graph, inputs)
        out = ran.output if of is None else ran.names.get(of, ran.inputs.get(of, ran.output))
        return reduced(ran, out, reduce)
    return graph, of


def _texts(graph: Graph, nodes: list[dict], inputs: Mapping, of, wrt) -> dict[str, Any]:
    """One step's texts for the page's nodes (value, gradient, sign; None for a constant) and
    the parameters' elements at full precision; no texts when another graph ran (a branch
    that changed)."""
    from ..core.names import node_names
    from ..render.signs import sign
    from ..run.program import differentiated
    from .walkthrough import _grad_text, _short

    g, values, adjoints, out = differentiated(graph, inputs, of)
    ids = [int(n["id"][1:]) for n in nodes]
    names = node_names(g)
    texts = None
    if max(ids) < len(g.ops) and all(names[i] == n["name"] for i, n in zip(ids, nodes)):
        texts = [
            None
            if n["kind"] == "const"
            else [_short(values[i], 4), _grad_text(adjoints[i], 4), sign(adjoints[i])]
            for i, n in zip(ids, nodes)
        ]
    params = {w: np.ravel(values[g.inputs[w]]).astype(float).tolist() for w in wrt}
    grads = {w: np.ravel(adjoints[g.inputs[w]]).astype(float).tolist() for w in wrt}
    return {"nodes": texts, "params": params, "grads": grads, "value": float(values[out])}


def film_frames(
    graph: Graph,
    bindings: Mapping[str, object] | None,
    film: Film,
    result,
    *,
    of: str | None = None,
    rows: Mapping[str, object] | None = None,
    reduce: str = "mean",
) -> dict[str, Any]:
    """The page's data: the graph laid out (as the interactive page draws it, at the trained
    parameters over all ``rows``), one frame per step kept and one for the result, the loss
    of every step and the validation losses."""
    from ..data.bindings import check_bindings
    from .walkthrough import walkthrough

    fixed = {**graph.defaults, **check_bindings(graph, bindings)}
    final = {**fixed, **result.params, **(rows or {})}
    loss_graph, loss_of = _loss_graph(graph, final, of, reduce)
    data = walkthrough(loss_graph, final, of=loss_of, force=True)
    data.pop("events")
    log = {r["step"]: r for r in result.history}
    frames = []
    for step, inputs in film.frames():
        record = log.get(step, {})
        frame = _texts(loss_graph, data["nodes"], inputs, loss_of, film.wrt)
        frame.update(step=step, epoch=record.get("epoch"), loss=record.get("loss"), label="step")
        frames.append(frame)
    last = _texts(loss_graph, data["nodes"], final, loss_of, film.wrt)
    last.update(step=result.steps, epoch=None, loss=result.final_loss, label="trained")
    frames.append(last)
    data["frames"] = frames
    data["params"] = list(film.wrt)
    data["curve"] = {
        "steps": [r["step"] for r in result.history],
        "loss": [r["loss"] for r in result.history],
        "val": [list(v) for v in result.val_loss],
        "total": result.steps,
    }
    return data


def film_page(
    graph: Graph,
    bindings: Mapping[str, object] | None,
    film: Film,
    result,
    *,
    of: str | None = None,
    rows_file: str | None = None,
    rows_format: str | None = None,
    delimiter: str | None = None,
    reduce: str = "mean",
    title: str = "",
    theme: str = "light",
) -> str:
    """The HTML of ``train --page``: :func:`film_frames` drawn by
    :func:`cgraph_cli.render.trainpage.train_page` (``rows_file``: the rows trained on, whose
    loss the last frame shows)."""
    from ..jobs.training import load_rows
    from ..render.trainpage import train_page

    rows = load_rows(rows_file, rows_format, graph, film.wrt, delimiter)[0] if rows_file else None
    data = film_frames(graph, bindings, film, result, of=of, rows=rows, reduce=reduce)
    return train_page(data, title or f"training {', '.join(film.wrt)}", theme)
