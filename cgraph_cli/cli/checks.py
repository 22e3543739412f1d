"""``check``: assertions for CI, from the command line, a checks file or the rows of a data file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..core.errors import UsageError, visible
from . import output
from .options import (
    EXIT_CODES,
    FilePath,
    FiniteFloat,
    common_options,
    format_option,
    junit_option,
    load,
    of_option,
    output_option,
    precision_option,
    source_options,
)
from .rows import check_rows_options, refuse_without_rows

CHECK_EXIT = EXIT_CODES.replace(
    "  1  a check failed (check, gradcheck)\n",
    "  1  an assertion failed, or a case of --spec could not run\n",
).replace("missing or unreadable file,", "missing or unreadable file, a mistake in the spec file,")


@click.command("check", short_help="Assert values and gradients (for CI).", epilog=CHECK_EXIT)
@source_options
@click.option(
    "--expect", multiple=True, metavar="NAME=VALUE", help="Assert a named value (repeatable)."
)
@click.option(
    "--expect-grad",
    "expect_grad",
    multiple=True,
    metavar="NAME=VALUE",
    help="Assert ∂output/∂NAME (repeatable).",
)
@click.option(
    "--expect-hessian",
    "expect_hessian",
    multiple=True,
    metavar="NAME,NAME=VALUE",
    help="Assert a second derivative ∂²output/∂NAME∂NAME of inputs (repeatable); "
    "elements of tensor inputs as cgraph hessian labels them: 'W[0, 1],x[2]=0.5'.",
)
@of_option
@click.option(
    "--rtol",
    type=FiniteFloat(0),
    default=1e-9,
    show_default=True,
    help="Relative tolerance: |actual - expected| <= atol + rtol·|expected|.",
)
@click.option(
    "--atol", type=FiniteFloat(0), default=1e-12, show_default=True, help="Absolute tolerance."
)
@click.option(
    "--spec",
    metavar="FILE.toml",
    type=FilePath("input"),
    help="Run the cases of a checks file instead.",
)
@format_option(["text", "json"], "text")
@precision_option("text output; default: exact, to read a failure digit by digit")
@junit_option
@check_rows_options
@click.option(
    "--expect-column",
    "expect_column",
    multiple=True,
    metavar="NAME[=COLUMN]",
    help="With --rows: assert the named value NAME against the column COLUMN (default: the "
    "column NAME) of every row (repeatable).",
)
@output_option
@common_options
def check_command(
    args,
    expr,
    file_,
    binds,
    bindings_file,
    expect,
    expect_grad,
    expect_hessian,
    of,
    rtol,
    atol,
    spec,
    fmt,
    precision,
    junit,
    rows_file,
    rows_format,
    delimiter,
    strict,
    chunk_rows,
    expect_column,
):
    """Assert values, gradients and second derivatives, for CI: exit 0 when all hold, 1 when
    any fails.

    \b
    Examples:
      cgraph check sample:seed --expect g=-12 --expect-grad x=-3 --expect-grad z=4
      cgraph check sample:neuron --expect o=0.7071 --rtol 1e-4
      cgraph check sample:rosenbrock --expect-hessian x,y=480 --expect-hessian x,x=1330
      cgraph check --spec sample:checks.toml --junit report.xml
      cgraph check sample:logistic --rows sample:cases.csv --expect-column loss --rtol 1e-6

    A spec file holds [[case]] tables: name, file (relative to the spec, and inside its
    folder) or program, bindings, of, expect, expect_grad, expect_hessian (keys "x,y"),
    gradcheck (true, or { points = 20, range = [-1, 1] }: as cgraph gradcheck), rtol, atol
    (see docs/commands/check.md;
    `cgraph samples checks.toml` prints the one that --spec sample:checks.toml runs, over
    the samples). Every case runs: one that cannot (a syntax error, a missing file, log(-1))
    is reported as an error of that case, and the exit code is 1.
    """
    from ..app.cases import parse_expectation, parse_hessian_expectation
    from ..app.checks import check

    output.junit_first(junit, fmt)
    if rows_file is None:  # --chunk-rows, --strict, --rows-format alone: refused, not ignored
        refuse_without_rows(
            {"rows_format": rows_format, "delimiter": delimiter, "strict": strict,
             "chunk_rows": chunk_rows}
        )  # fmt: skip
    if rows_file is not None or expect_column:
        found = _check_rows(
            args, expr, file_, binds, bindings_file, of, rtol, atol, rows_file, rows_format,
            delimiter, strict, chunk_rows, expect_column, bool(spec or expect or expect_grad or expect_hessian),
        )  # fmt: skip
    elif spec:
        if args or expr or file_ or expect or expect_grad or expect_hessian:
            raise UsageError("--spec runs the spec's cases: give no program or expectations too")
        spec = _spec_path(spec)
        found = check(spec=spec)
    else:
        if not expect and not expect_grad and not expect_hessian:
            raise UsageError(
                "nothing to check",
                hints=[
                    "give --expect NAME=VALUE, --expect-grad NAME=VALUE or "
                    "--expect-hessian NAME,NAME=VALUE, or --spec FILE"
                ],
            )
        graph, bindings = load(args, expr, file_, binds, bindings_file)
        found = check(
            graph,
            bindings,
            expect=dict(map(parse_expectation, expect)),
            expect_grad=dict(map(parse_expectation, expect_grad)),
            expect_hessian=dict(map(parse_hessian_expectation, expect_hessian)),
            of=of,
            rtol=rtol,
            atol=atol,
        )
    runs = found.runs
    if fmt == "json":
        from ..app.report import to_json_text

        output.write_text(to_json_text(found.to_dict(), schema="check"))
    elif junit == "-" and output.settings.output in (None, "-"):
        click.echo(
            _check_text(runs, bool(spec or rows_file), precision, sys.stderr),
            err=True,
            color=output.color_for(sys.stderr),
        )
    else:
        output.write_text(_check_text(runs, bool(spec or rows_file), precision))
    if junit:
        output.write_bytes(found.junit(_suite(spec, rows_file)), junit)
    if not found.ok:
        raise click.exceptions.Exit(1)


def _check_rows(
    args, expr, file_, binds, bindings_file, of, rtol, atol, rows_file, rows_format, delimiter,
    strict, chunk_rows, expect_column, more,
):  # fmt: skip
    """check --rows FILE --expect-column NAME[=COLUMN]: every row a case."""
    from ..app.rowchecks import check_rows
    from ..data.datafiles import data_format, expand, read_chunks
    from ..jobs.rows import CHUNK_ROWS, check_files

    if rows_file is None or not expect_column:
        raise UsageError("--rows FILE and --expect-column NAME[=COLUMN] go together")
    if more:
        raise UsageError("with --rows, assertions are --expect-column NAME[=COLUMN] only")
    expect = {}
    for item in expect_column:
        name, _, column = item.partition("=")
        expect[name.strip()] = column.strip() or name.strip()
    graph, bindings = load(args, expr, file_, binds, bindings_file, rows_file)
    paths = expand(rows_file)
    fmt = data_format(rows_file, rows_format)
    check_files(  # every file's columns, before any row runs
        graph, paths, fmt, delimiter, bindings=bindings, of=of, show_all=True, strict=strict,
        expected=list(dict.fromkeys(expect.values())),
    )  # fmt: skip
    chunks = read_chunks(paths, fmt, chunk_rows or CHUNK_ROWS, delimiter=delimiter)
    return check_rows(
        graph, chunks, expect=expect, bindings=bindings, of=of, rtol=rtol, atol=atol,
        strict=strict, note=output.note,
    )  # fmt: skip


def _suite(spec, rows_file) -> str:
    """The JUnit suite's name: the checks file's or the data file's, without its folder and
    extension."""
    name = spec or rows_file
    return Path(name.removeprefix("sample:")).stem if name else "cgraph"


def _spec_path(spec: str) -> str:
    """``--spec sample:checks.toml``: the checks file shipped with the samples (whose cases
    name the sample programs beside it), as SOURCE takes ``sample:NAME``."""
    if not spec.startswith("sample:") or os.path.exists(spec):
        return spec
    from ..data.sources import samples_folder

    name = spec.removeprefix("sample:")
    if name != "checks.toml":
        raise UsageError(
            f"no checks file named '{spec}'", hints=["the samples have one: sample:checks.toml"]
        )
    return str(samples_folder() / name)


def _check_text(runs, grouped: bool, precision: int | None = None, stream=None) -> str:
    from ..app.checks_report import counts
    from ..app.gradcheck import SKIPPED
    from ..core.numfmt import SMALL, format_number, is_tensor, nested, summary

    def f(value) -> str:  # exact by default: a failed check is read digit by digit
        if not is_tensor(value):
            return format_number(value, precision)
        return nested(value, precision) if value.size <= SMALL else summary(value, precision or 17)

    def mark(text, **kw):
        return output.style(text, stream, **kw)

    lines = []
    indent = "  " if grouped else ""
    for run in runs:
        if grouped:
            lines.append(f"{visible(run.case)}:")
        for r in run.results:
            sign = mark("ok  ", fg="green") if r.ok else mark("FAIL", fg="red", bold=True)
            detail = f"expected {f(r.expected)}" + (
                "" if r.ok else f", difference {f(r.difference)}"
            )
            if r.gradcheck is not None:  # the analytic gradient against the numeric slope
                detail = f"numeric {f(r.expected)}" + (
                    "" if r.ok else f", difference {f(r.difference)} > tolerance {f(r.tolerance)}"
                )
                if r.skipped:
                    sign, detail = mark("skip", fg="yellow"), SKIPPED[r.gradcheck.status]
                    lines.append(f"{indent}{sign}  {r.label}: {detail}")
                    continue
            elif r.shapes_differ:
                detail = f"expected {f(r.expected)}: the shapes differ"
            lines.append(f"{indent}{sign}  {r.label} = {f(r.actual)} ({detail})")
        if run.error is not None:
            first, *rest = run.error.render().split("\n")
            lines.append(
                f"{indent}{mark('ERROR', fg='red', bold=True)}  " + first.replace("error: ", "", 1)
            )
            lines.extend(f"{indent}       {line}" for line in rest)
    summary_line = counts([r for run in runs for r in run.results])
    errors = sum(run.error is not None for run in runs)
    if errors:
        summary_line += f", {errors} case{'s' if errors > 1 else ''} could not run"
    lines.append(summary_line)
    return "\n".join(lines)


COMMANDS = [check_command]
