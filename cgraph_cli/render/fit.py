"""A drawing fitted to a box (``--fit``: a slide, or WIDTHxHEIGHT in pixels): the layout
that fills it best (left to right, top to bottom, a straight chain, or a long row wrapped into
rows), and drawings brought to one canvas (the frames of an animation, a fitted slide).

>>> fit_size("16:9")
(1920, 1080)
"""

from __future__ import annotations

import re

from ..core.errors import UsageError

SLIDES = {"16:9": (1920, 1080), "4:3": (1440, 1080), "16:10": (1920, 1200)}


#: Nodes' text this many pixels high reads from the back of a room on a 1080p projector.
READABLE_PX = 20
#: Under this, cgraph says the text is small for a projector, and folds the calls of functions
#: (and a loop's steps) into boxes where the drawing has them.
LEGIBLE_PX = 14


def text_px(dot: str, scale: float) -> float:
    """The height in pixels of the nodes' text in ``dot`` drawn at ``scale`` pixels a point."""
    font = re.search(r"node \[[^]]*fontsize=(\d+)", dot)
    return (int(font.group(1)) if font else 14) * scale


def best_fit(dot: str, size: tuple[int, int], renderer: str) -> tuple[float, str]:
    """The layout of ``dot`` that fills ``size`` (pixels) best: its scale in pixels a point,
    and its DOT. A long left-to-right layout is also tried wrapped into rows: each wrapping
    judged by the size its rows give, and only the best drawn (neato routes the edges of
    a 150-node graph in seconds)."""
    from ..render.image import choose, render
    from ..render.wrap import drawing_size, straightened, wrapped

    width, height = size
    plain = choose("plain", renderer)
    found = re.search(r"\bpad=\"?([0-9.]+)", dot)
    pad = 2 * float(found.group(1)) if found else 0.0  # around the drawing, in inches

    def scale_of(w: float, h: float) -> float:  # inches -> pixels a point
        return min(width / ((w + pad) * 72), height / ((h + pad) * 72))

    def measured(layout: str) -> float:
        return scale_of(*drawing_size(layout))

    options: list[tuple[float, str, bool]] = []  # scale, DOT, whether only estimated
    # Not the backward view: neato would set its derivatives on the edges' lines.
    rows_allowed = "cluster_" not in dot.replace("cluster_title", "") and "dir=back" not in dot
    # Left to right (wrapped into rows too), top to bottom, and both with a chain kept
    # straight (a tall slide takes a straight column)
    for direction, straight in (("LR", False), ("TB", False), ("LR", True), ("TB", True)):
        candidate = re.sub(r"rankdir=\w+", f"rankdir={direction}", dot, count=1)
        if straight:
            candidate = straightened(candidate)
        layout = render(candidate, "plain", plain).decode()
        laid_w, laid_h = drawing_size(layout)
        options.append((scale_of(laid_w, laid_h), candidate, False))
        aspect = laid_w / laid_h
        if direction == "LR" and rows_allowed:
            for rows in range(2, 9):  # rows only while the strip is wider than the box
                if aspect / rows**2 < 0.25 * width / height:
                    break
                rowed, w, h = wrapped(candidate, layout, rows)
                options.append((scale_of(w, h), rowed, True))
    scale, best, estimated = max(options, key=lambda o: o[0])
    if estimated:  # drawn now: its real size (edges and labels may reach past the nodes)
        scale = measured(render(best, "plain", plain).decode())
    return scale, best


def fit_size(text: str) -> tuple[int, int]:
    """``--fit``'s box in pixels: a slide's shape (16:9 is 1920×1080, 1080p) or WxH.

    >>> fit_size("16:9"), fit_size("4:3"), fit_size("1280x720")
    ((1920, 1080), (1440, 1080), (1280, 720))
    """
    if text in SLIDES:
        return SLIDES[text]
    found = re.fullmatch(r"(\d{2,5})[x×](\d{2,5})", text.strip())
    if not found or not all(16 <= int(n) <= 16384 for n in found.groups()):
        raise UsageError(
            f"--fit {text}: not a slide's shape nor WIDTHxHEIGHT in pixels",
            hints=[f"use {', '.join(SLIDES)} or a size such as 1280x720 (16 to 16384 a side)"],
        )
    return int(found.group(1)), int(found.group(2))


def same_canvas(
    pngs: list[bytes],
    background: str,
    required: bool = False,
    size: tuple[int, int] | None = None,
    shrink: bool = False,
):
    """The PNG images as Pillow images of one size (the largest, or ``size``), or None without
    Pillow (then the frames keep their own sizes, unless ``required``: a usage error naming the
    extra). ``shrink``: one image (a fitted slide) and the factor it was scaled by, ``(image,
    factor)``: scaled down to ``size`` where Graphviz drew it a few pixels larger, never
    cropped."""
    import io

    try:
        from PIL import Image
    except ImportError:
        if required:
            raise UsageError(
                "--gif, --mp4 and --fit need Pillow",
                hints=[
                    "pip install 'cgraph-cli[plot]' or 'cgraph-cli[video]' (or: pip install pillow)"
                ],
            ) from None
        return None
    Image.MAX_IMAGE_PIXELS = None  # Graphviz's drawings, of the sizes asked for: no bomb
    images = [Image.open(io.BytesIO(data)).convert("RGB") for data in pngs]
    width, height = size or (max(i.width for i in images), max(i.height for i in images))
    factor = 1.0
    if shrink and (images[0].width > width or images[0].height > height):
        factor = min(width / images[0].width, height / images[0].height)
        new = (max(1, round(images[0].width * factor)), max(1, round(images[0].height * factor)))
        images[0] = images[0].resize(new, Image.Resampling.LANCZOS)
    out = []
    for image in images:
        canvas = Image.new("RGB", (width, height), background)
        canvas.paste(image, ((width - image.width) // 2, (height - image.height) // 2))
        out.append(canvas)
    return (out[0], factor) if shrink else out


def png_bytes(image) -> bytes:
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
