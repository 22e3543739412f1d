"""The `check`, `gradcheck` and `explain` commands (registered on the `cgraph` group)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from .cli import EXIT_CODES, _load, _precision, main, source_options
from .errors import UsageError, cannot_write, visible

CHECK_EXIT = EXIT_CODES.replace("  0  success\n", "  0  success: every assertion holds\n"
                                "  1  an assertion failed, or a case of --spec could not run\n")
CHECK_EXIT = CHECK_EXIT.replace("unreadable bindings file", "unreadable bindings file, a mistake in the spec file")
GRADCHECK_EXIT = EXIT_CODES.replace(
    "  0  success\n", "  0  every gradient matches (kinks and undefined points skipped)\n"
    "  1  a gradient differs from its finite difference\n",
)


class FiniteFloat(click.FloatRange):
    """A finite number (not inf, not nan) in a range: tolerances and steps."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class Interval(click.ParamType):
    """``LO,HI``: two finite numbers, LO < HI, whose distance is finite too."""

    name = "LO,HI"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            low, high = (float(v) for v in value.split(","))
        except ValueError:
            low = high = math.nan
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            self.fail(f"LO,HI must be two finite numbers with LO < HI, got {value!r}.", param, ctx)
        if not math.isfinite(high - low):
            self.fail(f"HI - LO must be a finite number too, got {value!r}.", param, ctx)
        return low, high


ROWS = 20  # gradcheck's table without --all-rows


@main.command("check", short_help="Assert values and gradients (for CI).", epilog=CHECK_EXIT)
@source_options
@click.option("--expect", multiple=True, metavar="NAME=VALUE",
              help="Assert a named value (repeatable).")
@click.option("--expect-grad", "expect_grad", multiple=True, metavar="NAME=VALUE",
              help="Assert ∂output/∂NAME (repeatable).")
@click.option("--of", metavar="NAME", help="The output to differentiate (default: the last).")
@click.option("--rtol", type=FiniteFloat(0), default=1e-9, show_default=True,
              help="Relative tolerance: |actual - expected| <= atol + rtol·|expected|.")
@click.option("--atol", type=FiniteFloat(0), default=1e-12, show_default=True,
              help="Absolute tolerance.")
@click.option("--spec", metavar="FILE.toml", help="Run the cases of a checks file instead.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format.")
@click.option("--junit", metavar="FILE",
              help="Also write a JUnit XML report to FILE ('-': standard output, and the text "
                   "report to standard error).")
def check_command(args, expr, file_, binds, bindings_file, expect, expect_grad, of, rtol, atol,
                  spec, fmt, junit):
    """Assert values and gradients, for CI: exit 0 when all hold, 1 when any fails.

    \b
    Examples:
      cgraph check samples/seed.cg --expect g=-12 --expect-grad x=-3 --expect-grad z=4
      cgraph check samples/neuron.cg --expect o=0.7071 --rtol 1e-4
      cgraph check --spec samples/checks.toml --junit report.xml

    A spec file holds [[case]] tables: name, file (relative to the spec, and inside its
    folder) or program, bindings, of, expect, expect_grad, rtol, atol (see the README).
    Every case runs: one that cannot (a syntax error, a missing file, log(-1)) is reported
    as an error of that case, and the exit code is 1.
    """
    from .checks import (
        Case,
        CaseRun,
        junit_xml,
        load_spec,
        parse_expectation,
        report,
        run_case,
        run_cases,
    )

    if junit == "-" and fmt == "json":
        raise UsageError("--junit - and --format json would both write to standard output",
                         hints=["write the JUnit report to a file: --junit report.xml"])
    if spec:
        if args or expr or file_ or expect or expect_grad:
            raise UsageError("--spec runs the spec's cases: give no program or expectations too")
        runs = run_cases(load_spec(spec))
    else:
        if not expect and not expect_grad:
            raise UsageError("nothing to check", hints=["give --expect NAME=VALUE or "
                                                        "--expect-grad NAME=VALUE, or --spec FILE"])
        graph, bindings = _load(args, expr, file_, binds, bindings_file)
        case = Case("", graph, bindings, dict(map(parse_expectation, expect)),
                    dict(map(parse_expectation, expect_grad)), of, rtol, atol)
        runs = [CaseRun("", run_case(case))]
    if fmt == "json":
        from .report import to_json_text

        click.echo(to_json_text(report(runs)))
    else:
        click.echo(_check_text(runs, bool(spec)), err=junit == "-")
    if junit:
        _write_junit(junit, junit_xml(runs, Path(spec).stem if spec else "cgraph"))
    if not all(run.ok for run in runs):
        raise click.exceptions.Exit(1)


def _write_junit(target: str, data: bytes) -> None:
    if target == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with open(target, "wb") as f:
            f.write(data)
    except OSError as e:
        raise cannot_write(target, e) from None


def _check_text(runs, grouped: bool) -> str:
    from .numfmt import SMALL, format_number, is_tensor, nested, summary

    def f(value) -> str:  # exact: a failed check is read digit by digit
        if not is_tensor(value):
            return format_number(value)
        return nested(value) if value.size <= SMALL else summary(value, 17)

    lines = []
    indent = "  " if grouped else ""
    for run in runs:
        if grouped:
            lines.append(f"{visible(run.case)}:")
        for r in run.results:
            mark = click.style("ok  ", fg="green") if r.ok else click.style("FAIL", fg="red",
                                                                             bold=True)
            detail = f"expected {f(r.expected)}" + ("" if r.ok else f", difference {f(r.difference)}")
            if r.shapes_differ:
                detail = f"expected {f(r.expected)}: the shapes differ"
            lines.append(f"{indent}{mark}  {r.label} = {f(r.actual)} ({detail})")
        if run.error is not None:
            first, *rest = run.error.render().split("\n")
            lines.append(f"{indent}{click.style('ERROR', fg='red', bold=True)}  "
                         + first.replace("error: ", "", 1))
            lines.extend(f"{indent}       {line}" for line in rest)
    results = [r for run in runs for r in run.results]
    passed = sum(r.ok for r in results)
    summary_line = f"{passed} passed, {len(results) - passed} failed"
    errors = sum(run.error is not None for run in runs)
    if errors:
        summary_line += f", {errors} case{'s' if errors > 1 else ''} could not run"
    lines.append(summary_line)
    return "\n".join(lines)


@main.command("gradcheck", short_help="Compare gradients with finite differences.", epilog=GRADCHECK_EXIT)
@source_options
@click.option("--of", metavar="NAME", help="The output to differentiate (default: the last).")
@click.option("--points", type=click.IntRange(0, 100_000), default=0,
              help="Check at N random points instead of the given bindings.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random points.")
@click.option("--range", "range_", type=Interval(), metavar="LO,HI", default="-2,2",
              show_default=True,
              help="Where random points draw each input not bound on the command line.")
@click.option("--eps", type=FiniteFloat(0, min_open=True), default=1e-6, show_default=True,
              help="Finite-difference step, relative: h = eps·max(1, |x|).")
@click.option("--rtol", type=FiniteFloat(0), default=1e-5, show_default=True,
              help="Relative tolerance.")
@click.option("--atol", type=FiniteFloat(0), default=1e-7, show_default=True,
              help="Absolute tolerance.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format (JSON holds every check).")
@click.option("--all-rows", is_flag=True,
              help=f"Print every row of the table; by default at most {ROWS}: the mismatches "
                   "first, then the largest errors. (About 1.5 ms a row: for many thousands, "
                   "--format json is quicker and holds every check.)")
def gradcheck_command(args, expr, file_, binds, bindings_file, of, points, seed, range_, eps,
                      rtol, atol, fmt, all_rows):
    """Compare every reverse-mode gradient with a central finite difference.

    Points where a finite-difference step crosses a kink (relu, abs at 0; max, min at a tie)
    or leaves the domain are reported as skipped, not failed.

    \b
    Examples:
      cgraph gradcheck samples/neuron.cg
      cgraph gradcheck 'y = x^3 - sin(x)' --points 100 --seed 1
      cgraph gradcheck samples/logistic.cg --points 20 --range -1,1 --format json
    """
    from .api import grad, resolve_name
    from .forward import check_bindings
    from .gradcheck import gradcheck, random_points, worst_first

    graph, bindings = _load(args, expr, file_, binds, bindings_file)
    out = None if of is None else resolve_name(graph, of)
    if points:
        low, high = range_
        places = random_points(graph, points, seed, check_bindings(graph, bindings), low, high)
    else:
        # At the user's own point, an evaluation error is the usual error (exit 4), not a skip.
        values = grad(graph, bindings, of=of).values
        places = [{n: values[i] for n, i in graph.inputs.items()}]
    checks = [(k, c) for k, p in enumerate(places, 1)
              for c in gradcheck(graph, p, of=out, eps=eps, rtol=rtol, atol=atol)]
    counts = {s: 0 for s in ("ok", "mismatch", "kink", "undefined")}
    for _, c in checks:
        counts[c.status] += 1
    if fmt == "json":
        from .report import to_json_text

        click.echo(to_json_text({
            "passed": counts["ok"], "failed": counts["mismatch"],
            "skipped": counts["kink"] + counts["undefined"],
            "checks": [{"point": k, "bindings": c.point, "input": c.label, "analytic": c.analytic,
                        "numeric": c.numeric, "error": c.error, "status": c.status}
                       for k, c in checks],
        }))
    else:
        from rich.console import Console

        from .render.table import gradcheck_table

        shown = checks if all_rows or len(checks) <= ROWS else worst_first(checks, ROWS)
        Console(highlight=False).print(gradcheck_table(shown, graph.display_name(
            graph.output if out is None else out)))
        if len(shown) < len(checks):
            click.echo(f"{len(shown)} of {len(checks):,} rows: the mismatches first, then the "
                       "largest errors (--all-rows prints them all)")
        skipped = counts["kink"] + counts["undefined"]
        click.echo(f"{counts['ok']} passed, {counts['mismatch']} failed, {skipped} skipped")
    if counts["mismatch"]:
        raise click.exceptions.Exit(1)


@main.command("explain", short_help="Spell out both passes step by step.", epilog=EXIT_CODES)
@source_options
@click.option("--of", metavar="NAME", help="The output to differentiate (default: the last).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text",
              show_default=True, help="How to write the steps.")
@click.option("--math", type=click.Choice(["plain", "latex"]), default="plain", show_default=True,
              help="Formulas in markdown: plain text or $LaTeX$.")
@_precision("default: 4")
@click.option("--frames", metavar="DIR", help="Also draw one diagram per backward step in DIR.")
@click.option("--frames-format", type=click.Choice(["png", "svg"]), default="png",
              show_default=True, help="Image format of the frames.")
@click.option("--force", is_flag=True,
              help="Draw frames of graphs larger than 500 nodes (one diagram per node: slow).")
def explain_command(args, expr, file_, binds, bindings_file, of, fmt, math, precision, frames,
                    frames_format, force):
    """Spell out the forward and backward passes, step by step, like a worked example.

    \b
    Examples:
      cgraph explain 'g = (x + y) * z' x=1 y=3 z=-3
      cgraph explain samples/neuron.cg --format markdown --math latex > neuron.md
      cgraph explain samples/seed.cg --frames frames/     # one PNG per backward step
    """
    from .api import grad
    from .explain import explain, to_markdown, to_text

    graph, bindings = _load(args, expr, file_, binds, bindings_file)
    if frames:  # refuse before any work: too large, or nowhere to write
        from .draw import frames_folder

        frames = frames_folder(graph, of, frames, force)
    result = grad(graph, bindings, of=of)
    steps = explain(graph, result.values, result.adjoints, result.output)
    digits = precision or 4
    if fmt == "json":
        from .report import to_json_text

        click.echo(to_json_text(steps))
    elif fmt == "markdown":
        click.echo(to_markdown(steps, math, digits), nl=False)
    else:
        click.echo(to_text(steps, digits))
    if frames:
        from .draw import write_frames

        written = write_frames(graph, result, frames, frames_format, digits)
        click.echo(f"wrote {len(written)} frames to {frames}", err=True)
