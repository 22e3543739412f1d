"""DOT text -> PNG, SVG or PDF bytes, with Graphviz's ``dot`` or the ``graphviz-pure`` package.

``dot`` is used where it is on PATH; otherwise ``graphviz-pure`` (a self-contained port of
``dot`` that cgraph installs where it has wheels: Linux, macOS and Windows on x86-64 and ARM64),
which draws PNG and SVG but not PDF.

>>> sorted(FORMATS)
['dot', 'gv', 'pdf', 'png', 'svg']
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError

FORMATS = {"png", "svg", "pdf", "dot", "gv"}  # dot and gv are the DOT text itself
RENDERERS = ("auto", "dot", "graphviz-pure")
# "plain" (positions as text) is for the interactive page's layout, not offered as a type.
_CAN = {
    "dot": frozenset({"png", "svg", "pdf", "plain"}),
    "graphviz-pure": frozenset({"png", "svg", "plain"}),
}
#: The largest side of a PNG: what a screen or a projector shows (a larger drawing is scaled
#: down to it, and the command says so: SVG keeps every size, --fit folds it to a slide).
PNG_MAX_PIXELS = 8000
INSTALL_DOT = "install Graphviz: apt-get install graphviz, brew install graphviz, or graphviz.org"
# Where graphviz-pure has wheels (it has no sdist): the environment markers in pyproject.toml.
PURE_PLATFORMS = frozenset(
    {
        ("linux", "x86_64"),
        ("linux", "aarch64"),
        ("darwin", "x86_64"),
        ("darwin", "arm64"),
        ("win32", "AMD64"),
        ("win32", "ARM64"),
    }
)


def pure_installable(system: str | None = None, machine: str | None = None) -> bool:
    """Whether ``pip install graphviz-pure`` works on this platform (``sys.platform``,
    ``platform.machine()``), so whether a message may suggest it.

    >>> pure_installable("linux", "x86_64"), pure_installable("linux", "ppc64le")
    (True, False)
    """
    system = sys.platform if system is None else system
    machine = platform.machine() if machine is None else machine
    return (system, machine) in PURE_PLATFORMS


@dataclass(frozen=True)
class Renderer:
    name: str  # "dot" or "graphviz-pure"
    path: str

    @property
    def formats(self) -> frozenset[str]:
        return _CAN[self.name]


def locate(name: str) -> Renderer | None:
    """The renderer called ``name`` if it is installed."""
    path = shutil.which(name)
    if path is None and name == "graphviz-pure":
        # installed beside this Python (a virtual environment that is not activated)
        beside = Path(sys.executable).parent / "graphviz-pure"
        path = str(beside) if beside.is_file() else None
    return Renderer(name, path) if path else None


def describe_renderers() -> str:
    """One line for --help: which renderer `auto` picks here."""
    dot, pure = locate("dot"), locate("graphviz-pure")
    if dot:
        return f"auto uses Graphviz's dot ({dot.path}) for PNG, SVG and PDF."
    if pure:
        return f"auto uses graphviz-pure ({pure.path}): PNG and SVG; PDF needs Graphviz's dot."
    return "No renderer found: only DOT output works; " + INSTALL_DOT + "."


def choose(fmt: str, preference: str = "auto") -> Renderer:
    """The renderer for ``fmt``, or a :class:`UsageError` that says what to install."""
    names = ("dot", "graphviz-pure") if preference == "auto" else (preference,)
    for name in names:
        renderer = locate(name)
        if renderer is not None and fmt in renderer.formats:
            return renderer
    if (
        preference == "graphviz-pure"
        and locate("graphviz-pure")
        and fmt not in _CAN["graphviz-pure"]
    ):
        problem = f"graphviz-pure cannot write {fmt.upper()}"
    elif preference != "auto":
        problem = f"the renderer {preference!r} is not installed"
    else:
        problem = f"no installed renderer can write {fmt.upper()}"
    pure = pure_installable()
    hints = [
        "pip install graphviz-pure (PNG and SVG), or " + INSTALL_DOT
        if pure and fmt != "pdf" and preference != "dot"
        else INSTALL_DOT
    ]
    if not pure and preference == "graphviz-pure":
        hints.insert(0, f"graphviz-pure has no build for {sys.platform} {platform.machine()}")
    hints.append(
        ".dot files work everywhere"
        + (", and .png and .svg work with graphviz-pure" if fmt == "pdf" and pure else "")
    )
    raise UsageError(problem, hints=hints)


def render(
    source: str, fmt: str, renderer: Renderer, dpi: float | None = None, pinned: bool = False
) -> bytes:
    """Run the renderer on DOT ``source``; ``pinned``: a laid-out source (Graphviz's
    ``-Tdot``), drawn where it was laid out (``neato -n2``)."""
    command = [renderer.path, f"-T{fmt}"] + (["-Kneato", "-n2"] if pinned else [])
    if fmt == "png":
        dpi = dpi or 96
        # Scale a huge drawing down to at most PNG_MAX_PIXELS a side: a 500-node chain would
        # otherwise be a bitmap of gigabytes (SVG and PDF have no such limit).
        side = PNG_MAX_PIXELS / dpi
        command += [f"-Gdpi={dpi}", f"-Gsize={side:.0f},{side:.0f}"]
    try:
        done = subprocess.run(command, input=source.encode(), capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise UsageError(f"{renderer.name} took more than 10 minutes; try --focus") from None
    except OSError as e:
        raise UsageError(f"cannot run {renderer.path}: {e.strerror}") from None
    if done.returncode != 0:
        detail = [
            ln
            for ln in done.stderr.decode(errors="replace").splitlines()
            if ln.strip() and "Warning" not in ln
        ]
        why = detail[-1] if detail else f"exit status {done.returncode}"
        if done.returncode < 0 or done.returncode == 137:
            why = "it was stopped (out of memory?)"
        raise UsageError(
            f"{renderer.name} failed: {why}", hints=["try SVG, or draw less with --focus NAME"]
        )
    return done.stdout


def output_format(path: str | None, fmt: str | None) -> str:
    """The image type: ``-T``, else the file's extension, else PNG."""
    from ..render.image import FORMATS

    if fmt:
        return fmt
    if path and path != "-" and "." in path.rsplit("/", 1)[-1]:
        ext = path.rsplit(".", 1)[-1].lower()
        ext = "html" if ext == "htm" else ext
        if ext not in FORMATS | {"html", "tex", "mmd"}:
            raise UsageError(
                f"cannot tell the format of {path!r} from its extension",
                hints=["use .png, .svg, .pdf, .html, .tex, .mmd, .dot or .gv, or say -T TYPE"],
            )
        return ext
    return "png"


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its header.

    >>> png_size(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(8) + (640).to_bytes(4, "big") + (480).to_bytes(4, "big"))
    (640, 480)
    """
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
