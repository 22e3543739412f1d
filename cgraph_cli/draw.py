"""Diagrams of a program: evaluate what can be evaluated, then build the DOT, then render.

>>> from cgraph_cli import parse
>>> d = diagram_of(parse("g = (x + y) * z"), {"x": 1, "y": 3, "z": -3})
>>> d.nodes, d.note
(5, None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from .api import evaluate, resolve_name
from .errors import UsageError, cannot_write
from .ir import Graph, ancestors
from .passes.vjp import vjp
from .render.dot import DiagramOptions, diagram

#: Beyond this many nodes a diagram is slow to lay out and unreadable; --force draws anyway.
MAX_NODES = 500


@dataclass(frozen=True)
class Diagram:
    dot: object  # graphviz.Digraph
    nodes: int  # nodes drawn
    note: str | None  # what the user should know (values left out, and why)

    @property
    def source(self) -> str:
        return self.dot.source


def diagram_of(
    graph: Graph,
    bindings: Mapping[str, object] | None = None,
    options: DiagramOptions | None = None,
    *,
    of: str | None = None,
    focus: str | None = None,
    force: bool = False,
) -> Diagram:
    """The annotated diagram of ``graph``. Missing bindings leave the values out (with a note)
    instead of failing; any other evaluation error is raised."""
    options = options or DiagramOptions()
    out = graph.output if of is None else resolve_name(graph, of)
    focus_node = None if focus is None else resolve_name(graph, focus)
    count = diagram_size(graph, out if focus_node is None else focus_node, force)
    _, values, adjoints, note = evaluate_for_drawing(graph, bindings, of, options.values)
    if focus_node is not None:
        options = replace(options, focus=focus_node)
    return Diagram(diagram(graph, values, adjoints, options, output=out), count, note)


def diagram_size(
    graph: Graph,
    node: int,
    force: bool = False,
    *,
    what: str = "the diagram",
    narrow: str = "--focus NAME",
) -> int:
    """The nodes a diagram of ``node`` draws; a :class:`UsageError` above :data:`MAX_NODES`
    unless ``force``. ``what`` and ``narrow`` word the message for frames (``--of NAME``).

    >>> from cgraph_cli import parse
    >>> diagram_size(parse("g = (x + y) * z"), 4)
    5
    """
    count = sum(ancestors(graph, node))
    if count > MAX_NODES and not force:
        raise UsageError(
            f"{what} would have {count:,} nodes; more than {MAX_NODES} are slow to lay out "
            "and hard to read",
            hints=[
                f"draw the part that leads to one value with {narrow}, or all of it with --force"
            ],
        )
    return count


def evaluate_for_drawing(graph: Graph, bindings, of: str | None, wanted: bool = True):
    """``(output node, values, adjoints, note)``: values and adjoints are ``None`` when not
    wanted, or when inputs lack bindings (the note then says which, and how to give them)."""
    out = graph.output if of is None else resolve_name(graph, of)
    if not wanted:
        return out, None, None, None
    missing = [n for n in graph.inputs if n not in graph.defaults and n not in (bindings or {})]
    if missing:
        note = (
            "values need bindings: "
            + " ".join(f"{m}=VALUE" for m in missing)
            + "; drawing the structure only"
        )
        return out, None, None, note
    from .numfmt import is_tensor, shape_text

    ev = evaluate(graph, bindings, of=of)
    if is_tensor(ev.value):
        note = (
            f"{ev.output_name} is a {shape_text(ev.value)} tensor: gradients need a single "
            "number (sum(...) or an element); drawing values only"
        )
        return out, ev.values, None, note
    return out, ev.values, vjp(graph, ev.values, of=out), None


def output_format(path: str | None, fmt: str | None) -> str:
    """The image type: ``-T``, else the file's extension, else PNG."""
    from .render.image import FORMATS

    if fmt:
        return fmt
    if path and path != "-" and "." in path.rsplit("/", 1)[-1]:
        ext = path.rsplit(".", 1)[-1].lower()
        if ext not in FORMATS:
            raise UsageError(
                f"cannot tell the format of {path!r} from its extension",
                hints=["use .png, .svg, .pdf, .dot or .gv, or say -T TYPE"],
            )
        return ext
    return "png"


def frames_folder(graph: Graph, of: str | None, folder, force: bool = False):
    """Check, before any work, that frames of ``of`` (default: the output) are small enough to
    draw and that ``folder`` can be made; returns it as a ``Path``.

    >>> import tempfile
    >>> from cgraph_cli import parse
    >>> with tempfile.TemporaryDirectory() as where:
    ...     frames_folder(parse("g = x + y"), None, f"{where}/frames").is_dir()
    True
    """
    from pathlib import Path

    out = graph.output if of is None else resolve_name(graph, of)
    diagram_size(graph, out, force, what="each frame", narrow="--of NAME")
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise cannot_write(folder, e) from None
    return folder


def write_frames(
    graph: Graph, result, folder, fmt: str = "png", precision: int = 4, on_frame=None
) -> list:
    """One diagram per step of the backward pass: frame k shows the gradients of the first k
    nodes the pass reaches (the output first); the others show "?". Returns the paths.
    ``on_frame()`` is called after each frame (a progress bar)."""
    import math
    from pathlib import Path

    from .explain import frame_order
    from .render.image import choose, render

    order = frame_order(graph, result.output)
    renderer = choose(fmt)
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise cannot_write(folder, e) from None
    width = len(str(len(order)))
    options = DiagramOptions(precision=precision, backward=True)
    paths = []
    for k in range(1, len(order) + 1):
        known = set(order[:k])
        adjoints = [a if i in known else math.nan for i, a in enumerate(result.adjoints)]
        dot = diagram(graph, result.values, adjoints, options, output=result.output)
        path = folder / f"frame-{k:0{width}d}.{fmt}"
        try:
            path.write_bytes(render(dot.source, fmt, renderer, 110))
        except OSError as e:
            raise cannot_write(path, e) from None
        paths.append(path)
        if on_frame is not None:
            on_frame()
    return paths
