"""``eval`` and ``grad``: the forward pass, and the forward and reverse passes."""

from __future__ import annotations

import click

from ..core.numfmt import DIGITS
from . import output
from .options import (
    EXIT_CODES,
    common_options,
    format_option,
    full_option,
    load,
    names,
    of_option,
    output_option,
    precision_option,
    source_options,
    wrt_option,
)
from .rows import refuse_without_rows, rows_options
from .rows import run as run_rows

FORMATS = ["text", "json", "plain"]
OLD_NAMES = {"table": "text"}


def report_options(command):
    command = full_option(command)
    command = precision_option("default: 4 in text, every digit in plain")(command)
    return format_option(
        FORMATS, "text", "Report format: a table, JSON, or NAME=VALUE lines.", OLD_NAMES
    )(command)


def emit(fmt: str, report: dict, text, plain, schema: str, simple=None) -> None:
    """The report in format ``fmt``; ``simple()``: the text table without rich, or None
    where it needs rich (:mod:`cgraph_cli.render.simple`), for output with no terminal and
    no colour."""
    if fmt == "json":
        from ..app.report import to_json_text

        output.write_text(to_json_text(report, schema=schema))
    elif fmt == "plain":
        output.write_text(plain())
    elif simple is not None and output.laid_out_plainly() and (done := simple()) is not None:
        output.write_text(done)
    else:
        from ..core.ir import gc_paused

        with gc_paused():  # importing rich makes many objects and no garbage
            table = text()
        output.write_rich(table)


@click.command("eval", short_help="Print the output's value (the forward pass).", epilog=EXIT_CODES)
@source_options
@report_options
@click.option("--all", "show_all", is_flag=True, help="Also print every input and named value.")
@of_option
@rows_options
@output_option
@common_options
def eval_command(
    args, expr, file_, binds, bindings_file, fmt, precision, full, show_all, of, **rows
):
    """Run the forward pass and print the output's value.

    \b
    Examples:
      cgraph eval 'g = (x + y) * z' x=1 y=3 z=-3        # g = -12
      cgraph eval sample:neuron --all                   # every named value
      cgraph eval -e 'x^2 + 1' --bind x=3 --format plain
      echo 'y = 2 * x' | cgraph eval - x=4
      cgraph eval 'y = W @ x' W='[[1,2],[3,4]]' x='[1,1]'   # y = [3, 7]
      cgraph eval sample:neuron --rows sample:neuron_inputs.csv --keep id  # a row per row
    """
    from ..app.api import evaluate
    from ..app.report import eval_report

    refuse_without_rows(rows)
    graph, bindings = load(args, expr, file_, binds, bindings_file, rows["rows_file"])
    if rows["rows_file"] is not None:
        return run_rows(
            graph,
            bindings,
            rows,
            mode="eval",
            of=of,
            wrt=(),
            show_all=show_all,
            fmt=fmt,
            precision=precision,
            full=full,
        )
    report = None
    if graph.control is not None and fmt != "json" and not show_all:
        from ..app.report import scanned_eval_report  # a long loop's value: from the scan

        report = scanned_eval_report(graph, bindings, of)
    if report is not None:
        pass
    elif graph.control is not None:  # the report lists every step's values: the graph that runs
        from ..app.results import Evaluation
        from ..run.program import evaluated

        report = eval_report(Evaluation(*evaluated(graph, bindings, of)))
    else:
        evaluation = evaluate(graph, bindings, of=of)
        output.keep(evaluation)  # (its values: see output.kept)
        report = eval_report(evaluation)

    def text():
        from ..render.table import output_line, value_table

        if show_all:
            return value_table(report, precision or DIGITS, full)
        return output_line(report, precision or DIGITS, full)

    def plain():
        from ..render.text import eval_plain

        return eval_plain(report, show_all, precision)

    def simple():
        from ..render.simple import output_text

        return None if show_all else output_text(report, precision or DIGITS)

    emit(fmt, report, text, plain, schema="eval", simple=None if full else simple)


@click.command("grad", short_help="Print ∂output/∂input for every input.", epilog=EXIT_CODES)
@source_options
@report_options
@of_option
@wrt_option
@rows_options
@click.option(
    "--reduce",
    type=click.Choice(["sum", "mean"]),
    help="With --rows: the gradient of the sum or mean of the output over all rows, with "
    "respect to the inputs every row shares (the weights).",
)
@click.option(
    "--per-step",
    is_flag=True,
    help="For a program with a loop: ∂output/∂value at every step, for each value the loop "
    "carries from step to step (backpropagation through time).",
)
@output_option
@common_options
def grad_command(
    args, expr, file_, binds, bindings_file, fmt, precision, full, of, wrt, per_step, **rows
):
    """Run the forward and reverse passes: ∂output/∂input for every input.

    \b
    Examples:
      cgraph grad 'g = (x + y) * z' x=1 y=3 z=-3        # ∂g/∂x = -3, ∂g/∂y = -3, ∂g/∂z = 4
      cgraph grad sample:neuron --wrt w1,w2 --precision 4
      cgraph grad sample:seed --of p --format json
      cgraph grad 'loss = sum((W @ x - t)^2)' W='[[1,2],[3,4]]' x='[1,-1]' t='[0,1]'
      cgraph grad sample:mlp --format json
      cgraph grad sample:neuron --rows sample:neuron_inputs.csv --wrt w1,w2 -o grads.parquet
      cgraph grad sample:logistic --rows sample:train.csv --reduce mean   # one step's gradient
      cgraph grad sample:logistic --rows sample:train.csv --delimiter , --reduce sum
      cgraph grad sample:huber e=3                      # the branch taken: the linear tail
      cgraph grad sample:rnn --per-step                 # ∂loss/∂h_t for every step t
    """
    from ..app.api import grad
    from ..app.report import grad_report
    from ..core.ir import resolve_name

    refuse_without_rows(rows)
    graph, bindings = load(args, expr, file_, binds, bindings_file, rows["rows_file"])
    if rows["rows_file"] is not None:
        return run_rows(
            graph,
            bindings,
            rows,
            mode="grad",
            of=of,
            wrt=wrt,
            show_all=False,
            fmt=fmt,
            precision=precision,
            full=full,
        )
    wanted = names(wrt)
    for name in wanted:  # a misspelt --wrt is a usage error, before any missing binding
        resolve_name(graph, name)
    report = None
    if graph.control is not None and fmt != "json" and not per_step:
        from ..app.report import scanned_grad_report  # a long loop's table: from the scan

        report = scanned_grad_report(graph, bindings, of, wanted or None)
    if report is not None:
        pass
    elif graph.control is not None:  # JSON lists every step's values: the graph that runs
        from ..app.results import Gradients
        from ..run.program import differentiated

        ran, values, adjoints, out = differentiated(graph, bindings, of)
        report = grad_report(Gradients(ran, values, out, adjoints), wanted or None, per_step)
    else:
        result = grad(graph, bindings, of=of)
        output.keep(result)  # (its values and adjoints: see output.kept)
        report = grad_report(result, wanted or None, per_step)

    def text():
        from ..render.table import gradient_table

        return gradient_table(report, precision or DIGITS, full)

    def plain():
        from ..render.text import grad_plain

        return grad_plain(report, precision)

    def simple():
        from ..render.simple import gradient_text

        return gradient_text(report, precision or DIGITS)

    emit(fmt, report, text, plain, schema="grad", simple=None if full else simple)


COMMANDS = [eval_command, grad_command]
