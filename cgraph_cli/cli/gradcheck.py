"""``gradcheck``: every reverse-mode gradient (or second derivative) against a central finite
difference."""

from __future__ import annotations

from pathlib import Path

import click

from ..core.numfmt import DIGITS
from . import output
from .options import (
    EXIT_CODES,
    FiniteFloat,
    Interval,
    Whole,
    common_options,
    format_option,
    junit_option,
    load,
    of_option,
    output_option,
    precision_option,
    source_options,
)

GRADCHECK_EXIT = EXIT_CODES.replace(
    "  0  success\n  1  a check failed (check, gradcheck)\n",
    "  0  every gradient matches (kinks and undefined points skipped)\n"
    "  1  a gradient (with --order 2, a second derivative) differs from its\n"
    "     finite difference\n",
)
ROWS = 20  # gradcheck's table without --all-rows


@click.command(
    "gradcheck", short_help="Compare gradients with finite differences.", epilog=GRADCHECK_EXIT
)
@source_options
@of_option
@click.option(
    "--points",
    type=Whole(0, 100_000),
    default=0,
    help="Check at N random points instead of the given bindings.",
)
@click.option(
    "--seed", type=Whole(), default=0, show_default=True, help="Seed of the random points."
)
@click.option(
    "--range",
    "range_",
    type=Interval(),
    metavar="LO,HI",
    default="-2,2",
    show_default=True,
    help="Where random points draw each input not bound on the command line.",
)
@click.option(
    "--order",
    type=Whole(1, 2),
    default=1,
    show_default=True,
    metavar="N",
    help="2: check each second derivative (the Hessian, each pair of inputs once) against "
    "the central difference of the gradient.",
)
@click.option(
    "--eps",
    type=FiniteFloat(0, min_open=True),
    default=1e-6,
    show_default=True,
    help="Finite-difference step, relative: h = eps·max(1, |x|).",
)
@click.option(
    "--rtol",
    type=FiniteFloat(0),
    default=1e-5,
    show_default=True,
    help="Relative tolerance: |analytic - numeric| <= atol + rtol·max(|analytic|, |numeric|).",
)
@click.option(
    "--atol", type=FiniteFloat(0), default=1e-7, show_default=True, help="Absolute tolerance."
)
@format_option(["text", "json"], "text", "Report format (JSON holds every check).")
@precision_option("text output; default: 4")
@click.option(
    "--all-rows",
    is_flag=True,
    help=f"Print every row of the table; by default at most {ROWS}: the mismatches "
    "first, then the largest errors. (About 1.5 ms a row: for many thousands, "
    "--format json is quicker and holds every check.)",
)
@junit_option
@output_option
@common_options
def gradcheck_command(
    args,
    expr,
    file_,
    binds,
    bindings_file,
    of,
    points,
    seed,
    range_,
    order,
    eps,
    rtol,
    atol,
    fmt,
    precision,
    all_rows,
    junit,
):
    """Compare every reverse-mode gradient with a central finite difference; with --order 2,
    every second derivative ∂²output/∂a∂b with the central difference of the gradient
    ∂output/∂a along b.

    Points where a finite-difference step crosses a kink (relu, abs at 0; max, min at a tie)
    or leaves the domain are reported as skipped, not failed.

    \b
    Examples:
      cgraph gradcheck sample:neuron
      cgraph gradcheck 'y = x^3 - sin(x)' --points 100 --seed 1
      cgraph gradcheck sample:logistic --points 20 --range -1,1 --format json
      cgraph gradcheck sample:rosenbrock --order 2
      cgraph gradcheck sample:mlp --points 5 --junit gradcheck.xml
    """
    from ..app.gradcheck import check_gradients

    output.junit_first(junit, fmt)
    graph, bindings = load(args, expr, file_, binds, bindings_file)
    low, high = range_
    # At the user's own point, an evaluation error is the usual error (exit 4), not a skip.
    with output.progress(points or 1, "gradcheck") as advance:
        found = check_gradients(
            graph,
            bindings,
            of=of,
            points=points,
            seed=seed,
            low=low,
            high=high,
            order=order,
            eps=eps,
            rtol=rtol,
            atol=atol,
            on_point=advance,
        )
    checks = found.checks
    if fmt == "json":
        from ..app.report import to_json_text

        output.write_text(to_json_text(found.to_dict(), schema="gradcheck"))
    else:
        from rich.console import Group, RenderableType
        from rich.text import Text

        from ..render.table import gradcheck_table

        shown = checks if all_rows or len(checks) <= ROWS else found.worst(ROWS)
        parts: list[RenderableType] = [
            gradcheck_table(shown, found.output, precision or DIGITS, order)
        ]
        if len(shown) < len(checks):
            parts.append(
                Text(
                    f"{len(shown)} of {len(checks):,} rows: the mismatches first, "
                    "then the largest errors (--all-rows prints them all)"
                )
            )
        parts.append(Text(f"{found.passed} passed, {found.failed} failed, {found.skipped} skipped"))
        to_stderr = junit == "-" and output.settings.output in (None, "-")  # stdout: the XML
        output.write_rich(Group(*parts), err=to_stderr)
    if junit:
        name = graph.source.filename
        suite = "gradcheck" if name.startswith("<") else Path(name).stem  # as check's: the file
        output.write_bytes(found.junit(suite, rtol=rtol, atol=atol), junit)
    if not found.ok:
        raise click.exceptions.Exit(1)


COMMANDS = [gradcheck_command]
