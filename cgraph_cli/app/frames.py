"""Frames: the backward pass drawn one step at a time (``explain --frames``) and the
optimizer's passes (``optimize --frames``), as numbered images in a folder, an animated GIF or
an H.264 video. Only the frames an earlier run of the same command wrote are replaced.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UsageError, cannot_write
from ..core.ir import Graph, resolve_name
from ..core.walks import ancestors
from ..data.outputs import listed, write_file, write_list
from ..render.dot import DiagramOptions
from ..render.fit import png_bytes, same_canvas
from ..render.layout import diagram_size
from ..render.notation import total
from .diagrams import dot_diagram


def frames_folder(graph: Graph, of: str | None, folder, force: bool = False):
    """Check, before any work, that frames of ``of`` (default: the output) are small enough to
    draw and that ``folder`` can be made; returns it as a ``Path``.

    >>> import tempfile
    >>> from cgraph_cli import parse
    >>> with tempfile.TemporaryDirectory() as where:
    ...     frames_folder(parse("g = x + y"), None, f"{where}/frames").is_dir()
    True
    """

    out = graph.output if of is None else resolve_name(graph, of)
    diagram_size(graph, out, force, what="each frame", narrow="--of NAME")
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise cannot_write(folder, e) from None
    return folder


def write_frames(
    graph: Graph,
    result,
    folder,
    fmt: str = "png",
    precision: int = 4,
    on_frame=None,
    theme: str = "light",
    dpi: int = 110,
    gif: str | None = None,
    mp4: str | None = None,
    fit: tuple[int, int] | None = None,
    renderer: str = "auto",
) -> list:
    """One diagram per step of the backward pass (see :func:`explain_frames`), written into
    ``folder``; the frames an earlier run left there go first. ``gif``, ``mp4``: also an
    animation, a video. Returns the paths. ``on_frame()`` is called after each frame (a
    progress bar)."""
    from ..render.dot import THEMES

    frames = explain_frames(graph, result, fmt, precision, on_frame, theme, dpi, fit, renderer)
    return save_frames(frames, folder, "explain", THEMES[theme].background, gif, mp4, size=fit)


def explain_frames(
    graph: Graph,
    result,
    fmt: str = "png",
    precision: int = 4,
    on_frame=None,
    theme: str = "light",
    dpi: int = 110,
    fit: tuple[int, int] | None = None,
    renderer: str = "auto",
) -> list[tuple[str, bytes]]:
    """The frames of the backward pass, ``(name, image)``: frame k shows the gradients of the
    first k nodes the pass reaches (the output first); the others show "?", and a caption
    says the step (``step 5 of 14, backward: ∂loss/∂Y = ...``). Every frame tints by the same
    scale (the largest gradient of the last frame) and is drawn on one layout (the last
    frame's), so nothing moves and every frame has one size. ``fit``: frames of exactly that
    many pixels, the drawing as large as fits (as ``render --fit``), each call folded into
    one box where the text would otherwise be under 14 px; then a frame is drawn only when
    a drawn node's gradient arrives."""
    from ..render.dot import _magnitude
    from ..render.image import choose
    from ..render.pinned import draw, laid_out, node_labels, png_size
    from .explain import frame_order

    order = frame_order(graph, result.output)
    reach = ancestors(graph, result.output)
    scale = max((_magnitude(result.adjoints[i]) for i in order if reach[i]), default=0.0)
    options = DiagramOptions(precision=precision, backward=True, theme=theme, scale=scale)
    plain = choose("png" if fit else fmt, renderer)
    seq = FrameSequence(graph, result, order, options)
    best = seq.dot(len(seq.steps) - 1)
    if fit is not None:
        seq, best, dpi = _fitted(seq, fit, renderer)
    layout = laid_out(best, plain)
    final = seq.caption_html(len(seq.steps) - 1)
    width = len(str(len(seq.steps)))
    extra = (0.0, 0.0)
    frames = []
    for k in range(len(seq.steps)):
        text = layout.with_labels(node_labels(seq.dot(k)), (final, seq.caption_html(k)))
        if fit is not None:
            data = draw(layout.padded(text, fit, dpi, extra), fmt, plain, dpi)
            got = png_size(data)
            if k == 0 and got != fit:  # Graphviz rounds: correct the margin once
                extra = (fit[0] - got[0], fit[1] - got[1])
                data = draw(layout.padded(text, fit, dpi, extra), fmt, plain, dpi)
        else:
            data = draw(text, fmt, plain, dpi)
        frames.append((f"frame-{k + 1:0{width}d}.{fmt}", data))
        if on_frame is not None:
            on_frame()
    return frames


def _fitted(seq: FrameSequence, size: tuple[int, int], renderer: str):
    """The frames' drawing that reads largest at ``size`` (as ``render --fit`` chooses):
    tensors drawn as grids, else summarised, else each call folded into one box; returns
    the sequence, its last frame's DOT as laid out for the size, and the dots per inch."""
    from ..render.fit import LEGIBLE_PX, READABLE_PX, best_fit, text_px

    def tried(candidate: FrameSequence) -> tuple[float, str, FrameSequence]:
        scale, dot = best_fit(candidate.dot(len(candidate.steps) - 1), size, renderer)
        return scale, dot, candidate

    best = tried(seq)
    if text_px(best[1], best[0]) < READABLE_PX and seq.has_grids():
        summarised = tried(seq.with_options(in_full=0))
        if summarised[0] > best[0] * 1.1:
            best = summarised
    if text_px(best[1], best[0]) < LEGIBLE_PX and seq.graph.groups:
        folded = tried(best[2].with_options(collapse=True))
        if folded[0] > best[0]:
            best = folded
    scale, dot, chosen = best
    return chosen, dot, 72 * scale


class FrameSequence:
    """The frames of a backward pass drawn with ``options``: which steps get a frame (every
    node's, or with the calls folded, those a drawn box or node shows), each frame's DOT and
    caption."""

    def __init__(self, graph: Graph, result, order: list[int], options: DiagramOptions):
        self.graph, self.result, self.order, self.options = graph, result, order, options
        self.plan = None
        if options.collapse and graph.groups:
            from .folds import fold_plan

            self.plan = fold_plan(graph)
        self.steps = drawn_steps(order, self.plan)
        self.captions = [self._caption(k) for k in range(len(self.steps))]
        self.width = max(len(c) for c in self.captions) if self.captions else 0

    def with_options(self, **changes) -> FrameSequence:
        from dataclasses import replace

        return FrameSequence(self.graph, self.result, self.order, replace(self.options, **changes))

    def has_grids(self) -> bool:
        """Whether some tensor is drawn element by element (summarising it could help)."""
        from ..core.numfmt import is_tensor

        full = self.options.in_full
        return any(is_tensor(v) and 0 < v.size <= full and v.ndim <= 2 for v in self.result.values)

    def dot(self, k: int) -> str:
        """Frame ``k``'s DOT, its caption above the drawing."""
        import math

        known = set(self.order[: self.steps[k] + 1])
        adjoints = [a if i in known else math.nan for i, a in enumerate(self.result.adjoints)]
        r = self.result
        dot = dot_diagram(self.graph, r.values, adjoints, self.options, output=r.output).source
        return captioned(dot, self.caption_html(k))

    def caption_html(self, k: int) -> str:
        """Caption ``k`` as the HTML inside the frame's label: every caption as wide as the
        longest (so that one layout holds them all), its text set left."""
        import html

        width = round(self.width * CAPTION_CHAR_PT)
        return (
            f'<TABLE BORDER="0" CELLPADDING="0" CELLSPACING="0" WIDTH="{width}"><TR>'
            f'<TD ALIGN="LEFT"><FONT POINT-SIZE="{CAPTION_PT}">'
            f"{html.escape(self.captions[k], quote=False)}</FONT></TD></TR></TABLE>"
        )

    def _caption(self, k: int) -> str:
        from ..core.names import node_names

        graph, r = self.graph, self.result
        names = node_names(graph)
        node = self.order[self.steps[k]]
        return frame_caption(graph, names, r.output, node, r.adjoints[node], k, len(self.steps),
                             self.options.precision, self._box_of(node))  # fmt: skip

    def _box_of(self, node: int) -> str | None:
        if not self.plan or node not in self.plan.rep:
            return None
        return self.plan.boxes[self.plan.rep[node]].label


#: The caption's type size (points), and the width that holds one of its characters.
CAPTION_PT = 15
CAPTION_CHAR_PT = 8.2
#: A caption's most characters: a long formula ends in "…".
CAPTION_CHARS = 110


def drawn_steps(order: list[int], plan) -> list[int]:
    """The steps (indices into ``order``) that get a frame: every one, or with ``plan``
    folding calls into boxes, those of a node drawn open or of what a box returns."""
    if not plan:
        return list(range(len(order)))
    outputs = {box.output for box in plan.boxes}
    return [k for k, i in enumerate(order) if i not in plan.rep or i in outputs]


def frame_caption(
    graph: Graph, names, out: int, node: int, gradient, k: int, n: int, precision, box=None
) -> str:
    """The caption of frame ``k`` of ``n``: the step, the gradient that arrived and where.

    >>> from cgraph_cli import grad
    >>> from cgraph_cli.core.names import node_names
    >>> r = grad("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3})
    >>> frame_caption(r.graph, node_names(r.graph), 4, 2, -3.0, 1, 5, 4)
    'step 2 of 5, backward: p̄ = -3   (p = x + y)'
    """
    from ..core.ops import INPUT, PREC_ATOM
    from ..parse.unparse import combine

    text = f"step {k + 1} of {n}, backward: {total(names[node])} = "
    text += short_value(gradient, precision)
    if node == out:
        text += "   (the output: the backward pass starts here)"
    elif box is not None:
        text += f"   (what {box} returns)"
    elif graph.ops[node] is not INPUT:
        args = [(names[a], PREC_ATOM) for a in graph.args[node]]
        formula = combine(graph.ops[node], args, params=graph.params.get(node, ()))[0]
        text += f"   ({names[node]} = {formula})"
    return text if len(text) <= CAPTION_CHARS else text[: CAPTION_CHARS - 1] + "…"


def short_value(value, precision) -> str:
    """A value in a few characters: a number, a small tensor in full, a large one's shape
    and range."""
    from ..core.numfmt import format_number, is_tensor, nested, shape_text

    if not is_tensor(value):
        return format_number(value, precision)
    if value.size <= 4:
        return nested(value, precision)
    flat = value.ravel()
    low, high = (format_number(float(f(flat)), precision) for f in (min, max))
    return f"{shape_text(value)} tensor in [{low}, {high}]"


def captioned(dot: str, caption: str) -> str:
    """``dot`` under a caption (``caption``: HTML), as :meth:`Diagram.titled` puts a title:
    the nodes in a frame without a border, labelled at the top; the legend stays under."""
    import re

    lines = dot.rstrip().rstrip("}").splitlines()
    node = re.compile(r"\tn(g?\d)")
    head = [lines[0]] + [line for line in lines[1:] if not node.match(line)]
    body = [f"\t{line}" for line in lines[1:] if node.match(line)]
    frame = [
        "\tsubgraph cluster_title {",
        f"\t\tlabel=<{caption}> labelloc=t labeljust=l peripheries=0 margin=12",
        *body,
        "\t}",
    ]
    return "\n".join([*head, *frame, "}"]) + "\n"


#: The list of the frames a command wrote in a folder, one name a line, beside them: a new
#: run of the same command removes exactly those, and refuses to write over anything else.
MANIFEST = ".cgraph-frames-{kind}"
_FRAME_NAME = r"[\w-]+\.(png|svg)"


def save_frames(
    frames: list,
    folder,
    kind: str,
    background: str,
    gif: str | None = None,
    mp4: str | None = None,
    size: tuple[int, int] | None = None,
):
    """Write ``frames`` (name, bytes) into ``folder``, the frames of ``kind`` ("explain",
    "optimize"): those its earlier run left there (its manifest names them) go first, and
    nothing else there is removed or overwritten (exit 2 before any is written). PNG frames
    are padded to one canvas (``size``, or the largest; centred, on ``background``: Pillow,
    the plot extra) where they differ; ``gif``: the frames as an animated GIF, 1.2 s each and 3 s on the last; ``mp4``:
    the same as an H.264 video (PyAV, the video extra). Returns the paths written."""

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise cannot_write(folder, e) from None
    manifest = folder / MANIFEST.format(kind=kind)
    earlier = listed(str(manifest), _FRAME_NAME)
    for name, _ in frames:
        if name not in earlier and (folder / name).exists():
            raise UsageError(
                f"{folder / name} was not written by {kind} --frames: refusing to overwrite it",
                hints=["draw the frames into another folder (or an empty one)"],
            )
    names = [name for name, _ in frames]
    write_list(str(manifest), {*earlier, *names})
    for old in earlier - set(names):
        try:
            (folder / old).unlink(missing_ok=True)
        except OSError as e:
            raise cannot_write(folder / old, e) from None
    pngs = all(name.endswith(".png") for name, _ in frames)
    images = None
    if pngs and frames:
        from ..render.pinned import png_size

        wanted = gif is not None or mp4 is not None
        sizes = {png_size(data) for _, data in frames}
        uniform = len(sizes) == 1 and (size is None or sizes == {size})
        if wanted or not uniform:  # decoded only to pad frames to one canvas, or to animate
            required = wanted or size is not None
            images = same_canvas([data for _, data in frames], background, required, size)
        if images is not None and not uniform:
            frames = [(name, png_bytes(image)) for (name, _), image in zip(frames, images)]
    paths = []
    for name, data in frames:
        write_file(str(folder / name), data)
        paths.append(folder / name)
    write_list(str(manifest), names)
    if gif is not None and images:
        import io

        durations = [1200] * (len(images) - 1) + [3000]
        buffer = io.BytesIO()
        images[0].save(
            buffer, "GIF", save_all=True, append_images=images[1:], duration=durations, loop=0
        )
        write_file(gif, buffer.getvalue())
    if mp4 is not None and images:
        save_video(images, mp4, background)
    return paths


#: Frames a second in a video of frames; each frame is shown 1.2 s (6 frames), the last 3 s.
VIDEO_RATE = 5


def save_video(images: list, path, background: str) -> None:
    """The Pillow ``images`` (one size) as an H.264 MP4 that plays everywhere (yuv420p, so the
    canvas is padded to even sides): 1.2 s each, 3 s on the last."""
    from PIL import Image

    try:
        import av
    except ImportError:
        raise UsageError(
            "--mp4 needs PyAV",
            hints=["pip install 'cgraph-cli[video]' (or: pip install av)"],
        ) from None
    width, height = images[0].size
    even = (width + width % 2, height + height % 2)
    counts = [6] * (len(images) - 1) + [15]
    import io

    buffer = io.BytesIO()
    try:
        with av.open(buffer, "w", format="mp4") as video:
            stream = video.add_stream("libx264", rate=VIDEO_RATE, options={"crf": "18"})
            stream.width, stream.height = even
            stream.pix_fmt = "yuv420p"
            for image, count in zip(images, counts):
                canvas = Image.new("RGB", even, background)
                canvas.paste(image, (0, 0))
                frame = av.VideoFrame.from_image(canvas)
                for _ in range(count):
                    video.mux(stream.encode(frame))
            video.mux(stream.encode())
    except av.error.FFmpegError as e:  # an FFmpeg without x264, say
        raise UsageError(f"cannot make the video {path}: {e}") from None
    write_file(str(path), buffer.getvalue())
