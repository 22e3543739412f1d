"""The ``cgraph`` command: a thin click layer over the library.

Each command reads the program, calls the library, renders, prints. Errors are turned into
messages and exit codes in one place, :meth:`_Group.invoke`.
"""

from __future__ import annotations

import enum
import os
import sys

import click

from . import __version__
from .errors import CgraphError

EXIT_CODES = """\b
Exit codes:
  0  success
  2  usage error: bad option, missing file, unreadable bindings file
  3  invalid program: syntax, unknown function, wrong argument count
  4  cannot evaluate: missing or unknown binding, log(-1), 1/0, overflow"""


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


def program_options(command):
    """SOURCE and bindings, shared by every command that runs a program."""
    options = [
        click.argument("args", nargs=-1, metavar="SOURCE [NAME=VALUE]..."),
        click.option("-e", "--expr", metavar="TEXT", help="Read the program from TEXT."),
        click.option("-f", "--file", "file_", metavar="PATH",
                     help="Read the program from PATH ('-' for standard input)."),
        click.option("--bind", "binds", multiple=True, metavar="NAME=VALUE",
                     help="Bind an input (repeatable); same as a positional NAME=VALUE."),
        click.option("--bindings", "bindings_file", metavar="FILE.json",
                     help="Bind inputs from a JSON object of name -> number."),
        click.option("--format", "fmt", type=click.Choice([f.value for f in Format]),
                     default="table", show_default=True, help="Output format."),
        click.option("--precision", type=click.IntRange(1, 17), metavar="N",
                     help="Significant digits in table and plain output (default: exact)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _load(args, expr, file_, binds, bindings_file):
    """The parsed program and its bindings (command line over file over source defaults)."""
    from .parser import parse
    from .sources import load_bindings, parse_binding, read_program

    if expr is None and file_ is None:
        source_arg, rest = (args[0], args[1:]) if args else (None, ())
    else:
        source_arg, rest = None, args
    source = read_program(source_arg, expr=expr, file=file_)
    bindings: dict[str, object] = dict(load_bindings(bindings_file)) if bindings_file else {}
    bindings.update(parse_binding(b) for b in (*binds, *rest))
    return parse(source.text, source.filename), bindings


def _emit(fmt: str, report: dict, table, plain) -> None:
    if fmt == Format.json.value:
        import json

        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    elif fmt == Format.plain.value:
        click.echo(plain())
    else:
        from rich.console import Console

        Console(highlight=False).print(table())


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES)
@click.version_option(__version__, "-V", "--version", prog_name="cgraph")
def main() -> None:
    """Computational graphs: values and gradients of expression programs.

    \b
      cgraph eval 'g = (x + y) * z' x=1 y=3 z=-3
      cgraph grad samples/seed.cg --format json

    SOURCE is program text, a file path, or '-' for standard input.
    """


@main.command("eval", epilog=EXIT_CODES)
@program_options
@click.option("--all", "show_all", is_flag=True, help="Also print every input and named value.")
@click.option("--of", metavar="NAME", help="Report this named value instead of the last one.")
def eval_command(args, expr, file_, binds, bindings_file, fmt, precision, show_all, of):
    """Run the forward pass and print the output's value.

    \b
    Examples:
      cgraph eval 'g = (x + y) * z' x=1 y=3 z=-3        # g = -12
      cgraph eval samples/neuron.cg --all               # every named value
      cgraph eval -e 'x^2 + 1' --bind x=3 --format plain
      echo 'y = 2 * x' | cgraph eval - x=4
    """
    from .api import evaluate
    from .report import eval_report

    graph, bindings = _load(args, expr, file_, binds, bindings_file)
    report = eval_report(evaluate(graph, bindings, of=of))

    def table():
        from .render.table import output_line, value_table

        return value_table(report, precision) if show_all else output_line(report, precision)

    def plain():
        from .render.text import eval_plain

        return eval_plain(report, show_all, precision)

    _emit(fmt, report, table, plain)


@main.command("grad", epilog=EXIT_CODES)
@program_options
@click.option("--of", metavar="NAME", help="Differentiate this named value (default: the last).")
@click.option("--wrt", metavar="A,B", multiple=True,
              help="Report only these names (inputs or named values); repeatable.")
def grad_command(args, expr, file_, binds, bindings_file, fmt, precision, of, wrt):
    """Run the forward and reverse passes: ∂output/∂input for every input.

    \b
    Examples:
      cgraph grad 'g = (x + y) * z' x=1 y=3 z=-3        # ∂g/∂x = -3, ∂g/∂y = -3, ∂g/∂z = 4
      cgraph grad samples/neuron.cg --wrt w1,w2 --precision 4
      cgraph grad samples/seed.cg --of p --format json
    """
    from .api import grad
    from .report import grad_report

    graph, bindings = _load(args, expr, file_, binds, bindings_file)
    names = [n.strip() for item in wrt for n in item.split(",") if n.strip()]
    report = grad_report(grad(graph, bindings, of=of), names or None)

    def table():
        from .render.table import gradient_table

        return gradient_table(report, precision)

    def plain():
        from .render.text import grad_plain

        return grad_plain(report, precision)

    _emit(fmt, report, table, plain)


def run() -> None:
    """Console-script entry point."""
    main(prog_name="cgraph")
