"""The options commands share, as decorators, so that each means one thing everywhere, and
the parameter types that check values before any work is done."""

from __future__ import annotations

import click

from . import output
from .paramtypes import SEED as SEED  # the parameter types, here for the commands
from .paramtypes import Choice as Choice
from .paramtypes import FilePath as FilePath
from .paramtypes import FiniteFloat as FiniteFloat
from .paramtypes import Floats as Floats
from .paramtypes import Interval as Interval
from .paramtypes import Whole as Whole
from .paramtypes import named_files as named_files

SMALL_TENSOR = 16  # numfmt.SMALL; not imported here, to keep start-up light
OF_HELP = "The named value to report or differentiate (default: the program's last statement)."
#: Every command's help ends with the exit codes.
EXIT_CODES = """\b
Exit codes:
  0  success
  1  a check failed (check, gradcheck)
  2  usage error: bad option, missing or unreadable file, a name the
     program lacks (--of, --wrt, --focus), an unwritable output or
     one that is an input of the command
  3  invalid program: syntax, unknown function, wrong argument count
  4  cannot evaluate: missing or unknown binding, shapes that do not fit,
     log(-1), 1/0, overflow; with --rows, rows that failed
  130  interrupted (Ctrl-C)"""
WRT_HELP = (
    "Only these names (inputs or named values), comma-separated; repeatable (default: every "
    "input; train: the inputs it learns, required)."
)


def apply(command, options):
    for option in reversed(options):
        command = option(command)
    return command


def _set(name):
    def callback(ctx, param, value):
        setattr(output.settings, name, value)
        return value

    return callback


def common_options(command):
    """--color, -q and (for commands that print) -o, on every command."""
    return apply(
        command,
        [
            click.option(
                "--color",
                type=click.Choice(["auto", "always", "never"]),
                default="auto",
                show_default=True,
                expose_value=False,
                callback=_set("color"),
                help="Colour the output (auto: on a terminal, unless NO_COLOR is set; "
                "FORCE_COLOR forces it).",
            ),
            click.option(
                "-q",
                "--quiet",
                is_flag=True,
                expose_value=False,
                callback=_set("quiet"),
                help="No notes and no progress bars on standard error.",
            ),
        ],
    )


def output_option(command):
    """-o/--output FILE: where the report goes ('-': standard output, the default)."""
    return click.option(
        "-o",
        "--output",
        metavar="FILE",
        expose_value=False,
        callback=_set("output"),
        type=FilePath("output", allow_dash=True),
        help="Write the output to FILE instead of standard output ('-': standard output).",
    )(command)


def junit_option(command):
    """--junit FILE: a JUnit XML report besides the text one (check, gradcheck)."""
    return click.option(
        "--junit",
        metavar="FILE",
        type=FilePath("output", allow_dash=True),
        help="Also write a JUnit XML report to FILE ('-': standard output, and the text "
        "report to standard error).",
    )(command)


def source_options(command):
    """SOURCE and bindings, shared by every command that runs a program."""
    return apply(
        command,
        [
            click.argument(
                "args",
                nargs=-1,
                metavar="SOURCE [NAME=VALUE]...",
                type=FilePath("source", allow_dash=True),
                shell_complete=_complete_source,
            ),
            click.option("-e", "--expr", metavar="TEXT", help="Read the program from TEXT."),
            click.option(
                "-f",
                "--file",
                "file_",
                metavar="PATH",
                type=FilePath("input", allow_dash=True),
                help="Read the program from PATH ('-': standard input).",
            ),
            click.option(
                "--bind",
                "binds",
                multiple=True,
                metavar="NAME=VALUE",
                help="Bind an input (repeatable); the same as a positional NAME=VALUE.",
            ),
            click.option(
                "--bindings",
                "bindings_file",
                metavar="FILE",
                type=FilePath("input", allow_dash=True),
                help="Bind inputs from a JSON object of name -> number or nested list, "
                "or a NumPy .npz file of named arrays ('-': JSON on standard input).",
            ),
        ],
    )


def _complete_source(ctx, param, incomplete):
    """SOURCE completes to files and folders, and to sample:NAME; what follows it (NAME=VALUE)
    to nothing."""
    from click.shell_completion import CompletionItem

    if ctx.params.get("args") or ctx.params.get("expr") or ctx.params.get("file_"):
        return []
    items = []
    if "sample:".startswith(incomplete) or incomplete.startswith("sample:"):
        items += [
            CompletionItem(f"sample:{n}", help=about)
            for n, about in sample_summaries()
            if f"sample:{n}".startswith(incomplete)
        ]
    if not incomplete.startswith("sample:"):
        items.append(CompletionItem(incomplete, type="file"))
    return items


def complete_folders(ctx, param, incomplete):
    """A folder name (--frames): the shell lists folders.

    >>> complete_folders(None, None, "fr")[0].type
    'dir'
    """
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="dir")]


def sample_summaries() -> list[tuple[str, str]]:
    """Each sample's name and the first sentence of the comment it starts with.

    >>> dict(sample_summaries())["seed"]
    'The worked example: an addition feeding a multiplication.'
    """
    from ..data.sources import sample_names, sample_path

    summaries = []
    for name in sample_names():
        lines = sample_path(name).read_text(encoding="utf-8").splitlines()
        comment = []
        for line in lines:
            if not line.startswith("#"):
                break
            comment.append(line.lstrip("# ").strip())
        text = " ".join(comment)
        end = text.find(". ")
        summaries.append((name, text if end < 0 else text[: end + 1]))
    return summaries


def precision_option(default_help: str):
    return click.option(
        "--precision",
        type=Whole(1, 17),
        metavar="N",
        help=f"Significant digits shown ({default_help}).",
    )


def view_option(command):
    """``--view``: for a program with conditionals or loops, which graph to draw."""
    return click.option(
        "--view",
        type=click.Choice(["auto", "static", "run"]),
        default="auto",
        show_default=True,
        help="For a program with if/else or loops: the static graph (both branches, each "
        "loop once, framed) or the graph that runs for the bindings (one branch, loops "
        "unrolled). auto: run when every input has a value.",
    )(command)


def of_option(command):
    return click.option("--of", metavar="NAME", help=OF_HELP)(command)


def wrt_option(command):
    return click.option("--wrt", metavar="A,B", multiple=True, help=WRT_HELP)(command)


def names(wrt: tuple[str, ...]) -> list[str]:
    """``--wrt a,b --wrt c`` -> ``["a", "b", "c"]``."""
    return [n.strip() for item in wrt for n in item.split(",") if n.strip()]


def format_option(
    choices: list[str],
    default: str,
    help_text: str = "Report format.",
    aliases: dict[str, str] | None = None,
):
    return click.option(
        "--format",
        "fmt",
        type=Choice(choices, aliases),
        default=default,
        show_default=True,
        help=help_text,
    )


def full_option(command):
    return click.option(
        "--full",
        is_flag=True,
        help=f"Show every element of tensors (tables summarise those over {SMALL_TENSOR} "
        "elements).",
    )(command)


def no_values_option(command):
    return click.option(
        "--no-values", is_flag=True, help="Leave out values and gradients: the structure only."
    )(command)


def no_grads_option(command):
    return click.option("--no-grads", is_flag=True, help="Leave out gradients.")(command)


def load(args, expr, file_, binds, bindings_file, rows_file=None):
    """The parsed program and its bindings (command line over file over source defaults).
    Standard input holds one of the program, the bindings and the rows (``--rows -``)."""
    from ..data.sources import command_line_bindings, load_bindings, read_program
    from ..parse import parse

    if expr is None and file_ is None:
        source_arg, rest = (args[0], args[1:]) if args else (None, ())
    else:
        source_arg, rest = None, args
    readers = [
        what
        for what, reads in [
            ("program", "-" in (source_arg, file_)),
            ("bindings", bindings_file == "-"),
            ("rows", rows_file == "-"),
        ]
        if reads
    ]
    if len(readers) > 1:
        from ..core.errors import UsageError

        raise UsageError(
            f"standard input can hold the {readers[0]} or the {readers[1]}, not both",
            hints=["give one of them as a file"],
        )
    bindings: dict[str, object] = dict(load_bindings(bindings_file)) if bindings_file else {}
    bindings.update(command_line_bindings((*binds, *rest)))  # a name twice is a usage error
    path = file_ if file_ not in (None, "-") else source_arg
    if expr is None and path and str(path).lower().endswith(".onnx"):
        from ..imports.onnx import load_onnx  # a model: its inputs' shapes from the bindings

        return load_onnx(path, bindings), bindings
    source = read_program(source_arg, expr=expr, file=file_)
    graph = parse(source.text, source.filename)
    output.keep(graph)  # let go of at the process's end, not node by node as the command returns
    return graph, bindings


def frames_options(what: str):
    """``--frames DIR`` (``what``: the diagrams it draws) and ``--frames-format``, shared by
    the commands that write a slide sequence."""

    def decorate(command):
        from ..render.dot import THEMES

        command = click.option(
            "--mp4",
            metavar="FILE",
            type=FilePath("output", dir_okay=False),
            help="Also make the frames a video (H.264; PyAV, the video extra).",
        )(command)
        command = click.option(
            "--gif",
            metavar="FILE",
            type=FilePath("output", dir_okay=False),
            help="Also animate the frames into FILE (PNG frames; Pillow, the plot extra).",
        )(command)
        command = click.option(
            "--theme",
            type=click.Choice(list(THEMES)),
            default="light",
            show_default=True,
            help="Colours for slides (light, dark) or paper (print).",
        )(command)
        command = click.option(
            "--fit",
            metavar="16:9|4:3|16:10|WxH",
            help="PNG frames of exactly this size (16:9: 1920x1080), the drawing as large as "
            "fits, as render --fit draws it; calls folded where the text would be small.",
        )(command)
        command = click.option(
            "--frames-format",
            type=click.Choice(["png", "svg"]),
            default="png",
            show_default=True,
            help="Image type of the frames.",
        )(command)
        return click.option(
            "--frames",
            metavar="DIR",
            type=click.Path(),
            shell_complete=complete_folders,
            help=what,
        )(command)

    return decorate


def also_written(*files) -> str:
    """The note on the animations written beside the frames: " and seed.gif", or nothing."""
    return "".join(f" and {f}" for f in files if f)


def frames_fit(frames, frames_format: str, fit: str | None):
    """``--fit``'s size in pixels for PNG frames (None without it); a usage error without
    --frames or with SVG frames, before any work."""
    from ..core.errors import UsageError
    from ..render.fit import fit_size

    if fit is None:
        return None
    if not frames:
        raise UsageError("--fit sizes the frames: say where they go with --frames DIR")
    if frames_format != "png":
        raise UsageError("--fit makes PNG frames", hints=["leave out --frames-format svg"])
    return fit_size(fit)


def check_gif(frames, frames_format: str, gif, mp4=None) -> None:
    """--gif and --mp4 animate the PNG frames: they need them, a file of their type in a
    folder that exists, and their libraries; all checked before any frame is drawn."""
    import importlib.util
    from pathlib import Path

    from ..core.errors import UsageError

    needs = {"--gif": ("gif", ["PIL"], "plot"), "--mp4": ("mp4", ["PIL", "av"], "video")}
    for option, given in (("--gif", gif), ("--mp4", mp4)):
        if given is None:
            continue
        if not frames:
            raise UsageError(f"{option} animates the frames: say where they go with --frames DIR")
        if frames_format != "png":
            raise UsageError(
                f"{option} animates PNG frames", hints=["leave out --frames-format svg"]
            )
        kind, modules, extra = needs[option]
        if not given.lower().endswith("." + kind) or Path(given).name == "." + kind:
            shown = repr(given) if given in ("", "-") else given
            raise UsageError(
                f"{option} writes a file of type {kind.upper()}, not {shown}",
                hints=[f"name it NAME.{kind}: {option} animation.{kind}"],
            )
        folder = Path(given).parent
        if not folder.is_dir():
            raise UsageError(f"cannot write {given}: the folder {folder} does not exist")
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        if missing:
            names = {"PIL": "Pillow", "av": "PyAV"}
            raise UsageError(
                f"{option} needs {' and '.join(names[m] for m in missing)}",
                hints=[f"pip install 'cgraph-cli[{extra}]'"],
            )
