"""The ``cgraph`` command: a thin click layer over the library.

Each command reads the program, calls the library, renders, prints. Errors are turned into
messages and exit codes in one place, :meth:`_Group.invoke`.
"""

from __future__ import annotations

import enum
import os
import sys
from pathlib import Path

import click

from . import __version__
from .errors import CgraphError, cannot_write

SMALL_TENSOR = 16  # numfmt.SMALL; not imported here, to keep start-up light
EXIT_CODES = """\b
Exit codes:
  0  success
  2  usage error: bad option, missing file, unreadable bindings file,
     a name the program lacks (--of, --wrt, --focus), an unwritable output
  3  invalid program: syntax, unknown function, wrong argument count
  4  cannot evaluate: missing or unknown binding, shapes that do not fit,
     log(-1), 1/0, overflow
  130  interrupted (Ctrl-C)"""


class Format(enum.Enum):
    table = "table"
    json = "json"
    plain = "plain"


class _Group(click.Group):
    """Turns every library error into its message on stderr and its exit code."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CgraphError as e:
            _print_error(e.render(), located=e.where() is not None)
            ctx.exit(e.exit_code)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:  # Ctrl-C: not click's "Aborted!" with exit 1, a failed check's
            _print_error("interrupted")
            ctx.exit(130)
        except BrokenPipeError:
            # `cgraph ... | head`: the reader left; say nothing and do not let Python complain.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(141)
        except RecursionError:  # pragma: no cover - no code path recurses on graph depth
            _print_error("error: internal error: recursion limit reached; please report this")
            ctx.exit(70)
        except Exception as e:  # never show a traceback, unless asked to
            if os.environ.get("CGRAPH_DEBUG"):
                raise
            _print_error(
                f"error: internal error: {type(e).__name__}: {e}\n"
                "help: please report this; CGRAPH_DEBUG=1 shows the traceback"
            )
            ctx.exit(70)


def _print_error(text: str, located: bool = False) -> None:
    if not located:
        text = "cgraph: " + text
    if sys.stderr.isatty() and not os.environ.get("NO_COLOR"):
        lines = text.split("\n")
        lines[0] = lines[0].replace("error:", click.style("error:", fg="red", bold=True), 1)
        lines = [click.style("help:", fg="cyan") + ln[5:] if ln.startswith("help:") else ln
                 for ln in lines]
        text = "\n".join(lines)
    click.echo(text, err=True)


def _apply(command, options):
    for option in reversed(options):
        command = option(command)
    return command


def source_options(command):
    """SOURCE and bindings, shared by every command that runs a program."""
    return _apply(command, [
        click.argument("args", nargs=-1, metavar="SOURCE [NAME=VALUE]..."),
        click.option("-e", "--expr", metavar="TEXT", help="Read the program from TEXT."),
        click.option("-f", "--file", "file_", metavar="PATH",
                     help="Read the program from PATH ('-' for standard input)."),
        click.option("--bind", "binds", multiple=True, metavar="NAME=VALUE",
                     help="Bind an input (repeatable); same as a positional NAME=VALUE."),
        click.option("--bindings", "bindings_file", metavar="FILE",
                     help="Bind inputs from a JSON object of name -> number or nested list, "
                          "or a NumPy .npz file of named arrays."),
    ])


def _precision(default_help: str):
    return click.option("--precision", type=click.IntRange(1, 17), metavar="N",
                        help=f"Significant digits shown ({default_help}).")


def report_options(command):
    """Output format and precision of eval and grad."""
    return _apply(command, [
        click.option("--format", "fmt", type=click.Choice([f.value for f in Format]),
                     default="table", show_default=True, help="Output format."),
        _precision("table and plain output; default: exact"),
        click.option("--full", is_flag=True,
                     help=f"Show every element of tensors (tables summarise those over "
                          f"{SMALL_TENSOR} elements)."),
    ])


def diagram_options(command):
    """What a diagram shows and how it looks, shared by render and dot."""
    from .render.dot import THEMES

    return _apply(command, [
        click.option("--theme", type=click.Choice(list(THEMES)), default="light",
                     show_default=True, help="Colours for slides (light, dark) or paper (print)."),
        click.option("--rankdir", type=click.Choice(["LR", "TB", "RL", "BT"]), default="LR",
                     show_default=True, help="Layout direction: left to right, top to bottom..."),
        _precision("default: 4"),
        click.option("--no-values", is_flag=True, help="Leave out values (and gradients)."),
        click.option("--no-grads", is_flag=True, help="Leave out gradients."),
        click.option("--backward", is_flag=True,
                     help="Draw the backward pass: local derivatives on the edges."),
        click.option("--of", metavar="NAME", help="Differentiate this named value."),
        click.option("--focus", metavar="NAME", help="Draw only what leads to NAME."),
        click.option("--force", is_flag=True,
                     help="Draw graphs larger than 500 nodes (slow, and hard to read)."),
    ])


def _load(args, expr, file_, binds, bindings_file):
    """The parsed program and its bindings (command line over file over source defaults)."""
    from .parser import parse
    from .sources import command_line_bindings, load_bindings, read_program

    if expr is None and file_ is None:
        source_arg, rest = (args[0], args[1:]) if args else (None, ())
    else:
        source_arg, rest = None, args
    source = read_program(source_arg, expr=expr, file=file_)
    bindings: dict[str, object] = dict(load_bindings(bindings_file)) if bindings_file else {}
    bindings.update(command_line_bindings((*binds, *rest)))  # a name twice is a usage error
    return parse(source.text, source.filename), bindings


def _emit(fmt: str, report: dict, table, plain) -> None:
    if fmt == Format.json.value:
        from .report import to_json_text

        click.echo(to_json_text(report))
    elif fmt == Format.plain.value:
        click.echo(plain())
    else:
        from rich.console import Console

        Console(highlight=False).print(table())


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES.replace("  0  success\n", "  0  success\n  1  a check failed "
                                       "(check, gradcheck)\n"))
@click.version_option(__version__, "-V", "--version", prog_name="cgraph")
def main() -> None:
    """Computational graphs: values and gradients of expression programs.

    \b
      cgraph eval 'g = (x + y) * z' x=1 y=3 z=-3
      cgraph grad samples/seed.cg --format json
      cgraph render samples/seed.cg -o seed.png
      cgraph show samples/neuron.cg
      cgraph grad samples/mlp.cg                  # tensors: a two-layer perceptron

    SOURCE is program text, a file path, or '-' for standard input. Values are numbers or
    tensors (W='[[1,2],[3,4]]', --bindings weights.npz, W=@w.npy).
    """


@main.command("eval", short_help="Print the output's value (the forward pass).", epilog=EXIT_CODES)
@source_options
@report_options
@click.option("--all", "show_all", is_flag=True, help="Also print every input and named value.")
@click.option("--of", metavar="NAME", help="Report this named value instead of the last one.")
def eval_command(args, expr, file_, binds, bindings_file, fmt, precision, full, show_all, of):
    """Run the forward pass and print the output's value.

    \b
    Examples:
      cgraph eval 'g = (x + y) * z' x=1 y=3 z=-3        # g = -12
      cgraph eval samples/neuron.cg --all               # every named value
      cgraph eval -e 'x^2 + 1' --bind x=3 --format plain
      echo 'y = 2 * x' | cgraph eval - x=4
      cgraph eval 'y = W @ x' W='[[1,2],[3,4]]' x='[1,1]'   # y = [3, 7]
    """
    from .api import evaluate
    from .report import eval_report

    graph, bindings = _load(args, expr, file_, binds, bindings_file)
    report = eval_report(evaluate(graph, bindings, of=of))

    def table():
        from .render.table import output_line, value_table

        if show_all:
            return value_table(report, precision, full)
        return output_line(report, precision, full)

    def plain():
        from .render.text import eval_plain

        return eval_plain(report, show_all, precision)

    _emit(fmt, report, table, plain)


@main.command("grad", short_help="Print ∂output/∂input for every input.", epilog=EXIT_CODES)
@source_options
@report_options
@click.option("--of", metavar="NAME", help="Differentiate this named value (default: the last).")
@click.option("--wrt", metavar="A,B", multiple=True,
              help="Report only these names (inputs or named values); repeatable.")
def grad_command(args, expr, file_, binds, bindings_file, fmt, precision, full, of, wrt):
    """Run the forward and reverse passes: ∂output/∂input for every input.

    \b
    Examples:
      cgraph grad 'g = (x + y) * z' x=1 y=3 z=-3        # ∂g/∂x = -3, ∂g/∂y = -3, ∂g/∂z = 4
      cgraph grad samples/neuron.cg --wrt w1,w2 --precision 4
      cgraph grad samples/seed.cg --of p --format json
      cgraph grad 'loss = sum((W @ x - t)^2)' W='[[1,2],[3,4]]' x='[1,-1]' t='[0,1]'
      cgraph grad samples/mlp.cg --bindings weights.npz --format json
    """
    from .api import grad, resolve_name
    from .report import grad_report

    graph, bindings = _load(args, expr, file_, binds, bindings_file)
    names = [n.strip() for item in wrt for n in item.split(",") if n.strip()]
    for name in names:  # a misspelt --wrt is a usage error, before any missing binding
        resolve_name(graph, name)
    report = grad_report(grad(graph, bindings, of=of), names or None)

    def table():
        from .render.table import gradient_table

        return gradient_table(report, precision, full)

    def plain():
        from .render.text import grad_plain

        return grad_plain(report, precision)

    _emit(fmt, report, table, plain)


def _diagram(args, expr, file_, binds, bindings_file, theme, rankdir, precision, no_values,
             no_grads, backward, of, focus, force):
    from .draw import diagram_of
    from .render.dot import DiagramOptions

    graph, bindings = _load(args, expr, file_, binds, bindings_file)
    options = DiagramOptions(
        theme=theme, rankdir=rankdir, precision=precision or 4, values=not no_values,
        grads=not no_grads, backward=backward,
    )
    result = diagram_of(graph, bindings, options, of=of, focus=focus, force=force)
    if result.note:
        click.echo(f"note: {result.note}", err=True)
    return result, graph


class _RenderCommand(click.Command):
    """`render --help` says which renderer this machine would use."""

    def format_epilog(self, ctx, formatter) -> None:
        from .render.image import describe_renderers

        formatter.write_paragraph()
        formatter.write_text("Renderer: " + describe_renderers())
        super().format_epilog(ctx, formatter)


RENDER_EXIT = EXIT_CODES.replace("missing file,", "missing file, a format no renderer can write,")


@main.command("render", short_help="Draw the graph as PNG, SVG, PDF or DOT.", cls=_RenderCommand, epilog=RENDER_EXIT)
@source_options
@diagram_options
@click.option("-o", "--output", "output", metavar="FILE",
              help="Where to write ('-': standard output). Default: SOURCE's name, or graph.png.")
@click.option("--format", "fmt", type=click.Choice(["png", "svg", "pdf", "dot", "gv"]),
              help="Image format (default: from the file's extension, else png).")
@click.option("--dpi", type=click.IntRange(30, 1200), default=150, show_default=True,
              help="Resolution of PNG output.")
@click.option("--renderer", type=click.Choice(["auto", "dot", "graphviz-pure"]), default="auto",
              show_default=True, help="Graphviz's dot, or the bundled graphviz-pure.")
def render_command(args, expr, file_, binds, bindings_file, theme, rankdir, precision, no_values,
                   no_grads, backward, of, focus, force, output, fmt, dpi, renderer):
    """Draw the graph, annotated with values and gradients, as PNG, SVG, PDF or DOT.

    \b
    Examples:
      cgraph render 'g = (x + y) * z' x=1 y=3 z=-3 -o seed.png
      cgraph render samples/neuron.cg -o neuron.svg --theme dark --rankdir TB
      cgraph render samples/seed.cg --backward -o backward.png     # the chain rule, edge by edge
      cgraph render samples/seed.cg --no-values -o structure.pdf   # no bindings needed

    Each node shows its value and ∂output/∂node; the gradient cell is tinted blue when
    positive, red when negative, more strongly the larger it is (legend under the diagram).
    In tensor programs each edge is labelled with the shape it carries, and small tensors
    are drawn inside their nodes, element by element.
    """
    from .draw import output_format
    from .render.image import choose
    from .render.image import render as render_image

    diagram, graph = _diagram(args, expr, file_, binds, bindings_file, theme, rankdir,
                              precision, no_values, no_grads, backward, of, focus, force)
    kind = output_format(output, fmt)
    if kind in ("dot", "gv"):
        data = diagram.source.encode()
    else:
        data = render_image(diagram.source, kind, choose(kind, renderer), dpi)
    target = output or _default_output(graph.source.filename, kind)
    if target == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with open(target, "wb") as f:
            f.write(data)
    except OSError as e:
        raise cannot_write(target, e) from None
    click.echo(f"wrote {target} ({diagram.nodes} node{'' if diagram.nodes == 1 else 's'})", err=True)


def _default_output(filename: str, kind: str) -> str:
    """seed.png for samples/seed.cg, in the current folder; graph.png for text."""
    if filename.startswith("<"):  # <expr>, <stdin>
        return f"graph.{kind}"
    return f"{Path(filename).stem}.{kind}"


@main.command("dot", short_help="Print the diagram as Graphviz DOT.", epilog=EXIT_CODES)
@source_options
@diagram_options
def dot_command(args, expr, file_, binds, bindings_file, theme, rankdir, precision, no_values,
                no_grads, backward, of, focus, force):
    """Print the diagram as Graphviz DOT, for your own `dot` command line.

    \b
    Examples:
      cgraph dot samples/seed.cg | dot -Tpdf > seed.pdf
      cgraph dot samples/neuron.cg --backward --theme print > neuron.gv
    """
    diagram, _ = _diagram(args, expr, file_, binds, bindings_file, theme, rankdir, precision,
                          no_values, no_grads, backward, of, focus, force)
    click.echo(diagram.source, nl=False)


@main.command("show", short_help="Draw the graph as a tree in the terminal.", epilog=EXIT_CODES)
@source_options
@click.option("--of", metavar="NAME", help="Start the tree at this named value.")
@_precision("default: 4")
@click.option("--no-values", is_flag=True, help="Draw the structure only.")
@click.option("--depth", type=click.IntRange(1, 1000), default=40, show_default=True,
              metavar="N", help="Levels drawn below the top; deeper parts end in a line "
                                "naming where to continue with --of.")
def show_command(args, expr, file_, binds, bindings_file, of, precision, no_values, depth):
    """Draw the graph in the terminal: a tree from the output down, with values and gradients.

    A value used in several places is drawn once and referred to afterwards as ↑ name.
    A tree deeper than --depth levels stops there, with a line saying how many levels are left
    and which name to continue from with --of.

    \b
    Examples:
      cgraph show 'g = (x + y) * z' x=1 y=3 z=-3
      cgraph show samples/micrograd_sanity.cg
      cgraph show long.cg --of x60 --depth 20     # 20 levels from x60 down
    """
    from rich.console import Console

    from .draw import evaluate_for_drawing
    from .render.tree import graph_tree, tree_width

    graph, bindings = _load(args, expr, file_, binds, bindings_file)
    out, values, adjoints, note = evaluate_for_drawing(graph, bindings, of, not no_values)
    if note:
        click.echo(f"note: {note}", err=True)
    tree = graph_tree(graph, values, adjoints, out, precision or 4, depth)
    console = Console(highlight=False)
    console.width = max(console.width, tree_width(tree))  # wider than the terminal, not cut
    console.print(tree)


def _tolerant_streams() -> None:
    """Where the locale cannot spell ∂ or │ (LC_ALL=POSIX, a Latin-1 terminal), print them as
    escapes rather than crash on the first one."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not encoding or not hasattr(stream, "reconfigure"):
            continue
        try:
            "∂×│…".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            stream.reconfigure(errors="backslashreplace")


def run() -> None:
    """Console-script entry point."""
    _tolerant_streams()
    main(prog_name="cgraph")


from . import cli_checks  # noqa: E402, F401  (registers check, gradcheck, explain)
