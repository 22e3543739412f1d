"""``worksheet``: exercise sheets with answer keys, drawn from a program."""

from __future__ import annotations

from pathlib import Path

import click

from . import output
from .options import (
    EXIT_CODES,
    FilePath,
    Whole,
    common_options,
    format_option,
    load,
    of_option,
    precision_option,
    source_options,
)


@click.command(
    "worksheet", short_help="Write exercise sheets and their answer keys.", epilog=EXIT_CODES
)
@source_options
@of_option
@click.option(
    "--blank",
    default="all",
    show_default=True,
    metavar="values|gradients|local|all|FRACTION",
    help="Which cells the student fills in: the values, the gradients, the local derivatives, "
    "all of them, or a fraction (0.3) of all of them drawn with --seed.",
)
@click.option(
    "--seed",
    type=Whole(),
    help="Draw the inputs not bound on the command line (and a fraction's blanks): the same "
    "seed gives the same sheet. Without it: the program's defaults.",
)
@click.option(
    "--count",
    type=Whole(1, 1000),
    default=1,
    show_default=True,
    help="Write this many sheets, with seeds --seed, --seed + 1... (1, 2... without --seed), "
    "numbered after -o's name: sheet-01.md, sheet-02.md...",
)
@click.option(
    "--numbers",
    type=click.Choice(["int", "decimal"]),
    default="int",
    show_default=True,
    help="Drawn inputs: integers from -5 to 5, or one decimal from -3 to 3 (never 0).",
)
@format_option(["markdown", "latex", "html", "json"], "markdown", "How to write the sheets.")
@precision_option("default: 4")
@click.option("--no-drawing", is_flag=True, help="Leave the graph's drawing out.")
@click.option(
    "-o",
    "--output",
    "target",
    metavar="FILE",
    type=FilePath("output", allow_dash=True),
    help="Write the sheet to FILE ('-', the default: standard output; with --count, the "
    "numbered files).",
)
@click.option(
    "--answers",
    metavar="FILE",
    type=FilePath("output"),
    help="Also write the answer key (numbered as the sheets are with --count).",
)
@common_options
def worksheet_command(
    args,
    expr,
    file_,
    binds,
    bindings_file,
    of,
    blank,
    seed,
    count,
    numbers,
    fmt,
    precision,
    no_drawing,
    target,
    answers,
):
    """Write an exercise: the program's graph and a table of its nodes (value, local
    derivatives, gradient) with blank cells to fill in by hand, and its answer key.

    \b
    Examples:
      cgraph worksheet sample:seed                          # the worked example, every cell blank
      cgraph worksheet sample:neuron --blank gradients --seed 7 -o sheet.md --answers key.md
      cgraph worksheet sample:seed --count 30 --format latex -o seed.tex --answers key.tex
      cgraph worksheet sample:neuron --blank 0.4 --seed 3 --format html -o sheet.html
    """
    from ..app.worksheet import parse_blank, sheet
    from ..core.errors import UsageError

    how = parse_blank(blank)
    if count > 1 and fmt != "json" and target in (None, "-"):
        raise UsageError(
            f"--count {count} writes {count} sheets: name them with -o FILE",
            hints=["-o sheets/week1.md writes sheets/week1-01.md, sheets/week1-02.md..."],
        )
    if fmt == "json" and answers:
        raise UsageError("--answers does not go with --format json, which holds every answer")
    graph, bindings = load(args, expr, file_, binds, bindings_file)
    seeds = [seed] if count == 1 else [(1 if seed is None else seed) + k for k in range(count)]
    sheets = [sheet(graph, bindings, blank=how, seed=s, numbers=numbers, of=of) for s in seeds]
    digits = precision or 4
    if fmt == "json":
        from ..app.report import to_json_text

        text = to_json_text({"sheets": sheets}, schema="worksheet")
        output.write_bytes((text + "\n").encode(), target or "-")
        return
    width = len(str(count))
    for k, s in enumerate(sheets, 1):
        drawing = None if no_drawing else _drawing(graph, s, fmt, of)
        number = f" {k}" if count > 1 else ""
        for path, key in ((target, False), (answers, True)):
            if path is None and key:
                continue
            text = _write(fmt, s, key, digits, drawing, number)
            where = _numbered(path, k, width) if count > 1 else (path or "-")
            output.write_bytes(text.encode(), where)
            if where != "-":
                output.note(f"wrote {where}")


def _write(fmt: str, s: dict, key: bool, digits: int, drawing, number: str) -> str:
    from ..render import handout as render

    write = {"markdown": render.markdown, "latex": render.latex, "html": render.html}[fmt]
    return write(s, key, digits, drawing, number).rstrip("\n") + "\n"


def _drawing(graph, s: dict, fmt: str, of) -> str | None:
    """The graph's structure (the graph that ran, for a program with if/else or loops)."""
    from ..app.diagrams import diagram, slides

    if fmt == "html":
        svg = diagram(graph, s["bindings"], of=of, values=False, grads=False).svg().decode()
        return svg[svg.index("<svg") :]
    kind = "mmd" if fmt == "markdown" else "tex"
    return slides(graph, s["bindings"], kind=kind, of=of, values=False, grads=False)[0]


def _numbered(path: str, k: int, width: int) -> str:
    """sheet.md, 3rd of 30 -> sheet-03.md."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}-{k:0{width}d}{p.suffix}"))


COMMANDS = [worksheet_command]
