"""Frames: the backward pass drawn one step at a time (``explain --frames``) and the
optimizer's passes (``optimize --frames``), as numbered images in a folder, an animated GIF or
an H.264 video. Only the frames an earlier run of the same command wrote are replaced.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..core.errors import UsageError, cannot_write
from ..core.ir import Graph, resolve_name
from ..core.walks import ancestors
from ..data.outputs import listed, write_file, write_list
from ..render.dot import DiagramOptions
from ..render.fit import png_bytes, same_canvas
from ..render.layout import diagram_size
from ..render.notation import adjoint
from ..render.signs import mark
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
) -> list:
    """One diagram per step of the backward pass: frame k shows the gradients of the first k
    nodes the pass reaches (the output first); the others show "?". Each frame is captioned
    with its step (``step 3 of 9 of the backward pass: t̅1̅ = -3``: the gradient over every path,
    in the notation of :mod:`cgraph_cli.render.notation`). Every frame tints by
    the same scale (the largest gradient of the last frame) and, as PNG, has the same canvas;
    the frames an earlier run left in ``folder`` go first. ``fit``: PNG frames of exactly that
    size (a slide), the calls of functions folded where the text would be under 14 px.
    ``gif``, ``mp4``: also an animation, a video. Returns the paths. ``on_frame()`` is called
    after each frame (a progress bar)."""
    import math

    from ..core.names import node_names
    from ..core.numfmt import format_value, is_tensor, shape_text
    from ..render.dot import THEMES, _magnitude
    from ..render.image import choose, render
    from .diagrams import Diagram
    from .explain import frame_order

    order = frame_order(graph, result.output)
    renderer = choose(fmt)
    reach = ancestors(graph, result.output)
    scale = max((_magnitude(result.adjoints[i]) for i in order if reach[i]), default=0.0)
    options = DiagramOptions(precision=precision, backward=True, theme=theme, scale=scale)
    folded = fit is not None and _small_at(graph, result, options, fit, renderer)
    if folded:
        options = replace(options, collapse=True)
    names = node_names(graph)
    # Folded, a node inside a box changes nothing drawn: one frame per box (at what it returns)
    hidden = _inside_boxes(graph) if folded else set()
    steps = [k for k in range(1, len(order) + 1) if order[k - 1] not in hidden]
    width = len(str(len(steps)))
    frames = []
    for n, k in enumerate(steps, 1):
        known = set(order[:k])
        adjoints = [a if i in known else math.nan for i, a in enumerate(result.adjoints)]
        dot = dot_diagram(graph, result.values, adjoints, options, output=result.output)
        node = order[k - 1]
        grad = result.adjoints[node]
        small = not is_tensor(grad) or grad.size <= 6
        shown = (
            format_value(grad, precision, rows="")
            if small
            else f"{mark(grad)} {shape_text(grad)} tensor"
        )
        caption = f"step {n} of {len(steps)} of the backward pass: {adjoint(names[node])} = {shown}"
        drawing = Diagram(dot.source, len(graph.ops)).titled(caption)
        if fit is not None:
            data = drawing.fitted(fit)[0]
        else:
            data = render(drawing.dot, fmt, renderer, dpi)
        frames.append((f"frame-{n:0{width}d}.{fmt}", data))
        if on_frame is not None:
            on_frame()
    return save_frames(frames, folder, "explain", THEMES[theme].background, gif, mp4)


def _inside_boxes(graph: Graph) -> set[int]:
    """The nodes a folded drawing hides inside its boxes (all but what each box returns)."""
    from .folds import fold_plan

    plan = fold_plan(graph)
    return {i for i, b in plan.rep.items() if i != plan.boxes[b].output}


def _small_at(graph: Graph, result, options, fit: tuple[int, int], renderer) -> bool:
    """Whether the finished frame's text would be under 14 px at ``fit`` and folding the
    calls (and loop steps) makes it larger."""
    from ..render.fit import LEGIBLE_PX
    from .diagrams import Diagram

    if not graph.groups:
        return False
    whole = dot_diagram(graph, result.values, result.adjoints, options, output=result.output)
    px = Diagram(whole.source, len(graph.ops)).fitted(fit)[1]
    if px >= LEGIBLE_PX:
        return False
    folded = replace(options, collapse=True)
    dot = dot_diagram(graph, result.values, result.adjoints, folded, output=result.output)
    return Diagram(dot.source, len(graph.ops)).fitted(fit)[1] > px


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
):
    """Write ``frames`` (name, bytes) into ``folder``, the frames of ``kind`` ("explain",
    "optimize"): those its earlier run left there (its manifest names them) go first, and
    nothing else there is removed or overwritten (exit 2 before any is written). PNG frames
    are padded to one canvas (the largest, centred, on ``background``: Pillow, the plot
    extra); ``gif``: the frames as an animated GIF, 1.2 s each and 3 s on the last; ``mp4``:
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
        wanted = gif is not None or mp4 is not None
        images = same_canvas([data for _, data in frames], background, required=wanted)
        if images is not None:
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
