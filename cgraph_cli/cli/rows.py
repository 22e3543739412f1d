"""``--rows FILE`` on eval and grad: the program run once per row of a data file, rows out to
a data file (or, with ``--reduce``, one gradient over all rows, reported as grad reports)."""

from __future__ import annotations

import os

import click

from . import output
from .options import apply

ROWS_HELP = (
    "Run once per row of FILE (CSV, TSV, JSON Lines, Parquet, .npz; '-': CSV on standard "
    "input; wildcards for several files; sample:NAME for the sample data): each column named "
    "as an input binds it per row."
)


#: The options of a run over rows, by parameter name.
OPTIONS = {
    "rows_file": click.option(
        "--rows", "rows_file", metavar="FILE", type=click.Path(allow_dash=True), help=ROWS_HELP
    ),
    "rows_format": click.option(
        "--rows-format",
        type=click.Choice(["csv", "tsv", "jsonl", "parquet", "npz"]),
        help="The format of --rows FILE (default: from its extension).",
    ),
    "keep": click.option(
        "--keep",
        "keep",
        multiple=True,
        metavar="COLUMNS",
        help="Input columns to copy to each output row, comma-separated; repeatable.",
    ),
    "strict": click.option(
        "--strict",
        is_flag=True,
        help="A column that is not an input is an error (default: ignored, with a note).",
    ),
    "chunk_rows": click.option(
        "--chunk-rows",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Rows evaluated at a time (memory grows with it; default 65,536).",
    ),
    "engine": click.option(
        "--engine",
        type=click.Choice(["local", "dask"]),
        default="local",
        show_default=True,
        help="Run the rows in this process, or on Dask (one partition per file; the dask extra).",
    ),
    "scheduler": click.option(
        "--scheduler",
        metavar="ADDRESS",
        help="With --engine dask: a dask.distributed scheduler (tcp://host:8786); "
        "default: Dask's local scheduler.",
    ),
    "allow_errors": click.option(
        "--allow-errors",
        is_flag=True,
        help="Exit 0 even when some rows could not be evaluated (their error cells say why).",
    ),
}


def rows_options(command):
    """Every option of a run over rows: eval and grad."""
    return apply(command, list(OPTIONS.values()))


def check_rows_options(command):
    """The options of a run over rows that check takes (its rows are cases: nothing is kept,
    and a row that fails is a case's error)."""
    return apply(
        command, [OPTIONS[k] for k in ("rows_file", "rows_format", "strict", "chunk_rows")]
    )


def run(graph, bindings, options: dict, *, mode: str, of, wrt, show_all, fmt, precision, full):
    """The command's work when --rows is given."""
    from ..datafiles import RowWriter, count_rows, data_format, expand, read_chunks
    from ..errors import EvalError, UsageError
    from ..rows import CHUNK_ROWS, run_rows
    from .options import names

    path = options["rows_file"]
    paths = expand(path)
    in_format = data_format(path, options.get("rows_format"))
    reduce = options.get("reduce")
    if reduce is None and fmt == "plain":
        raise UsageError(
            "--format plain prints one set of values; with --rows, rows go out as a data file"
        )
    dask = options.get("engine") == "dask"
    if options.get("scheduler") and not dask:
        raise UsageError("--scheduler is for --engine dask")
    writer = None
    target = output.settings.output
    folder = (
        dask
        and target not in (None, "-")
        and (target.endswith(("/", os.sep)) or os.path.isdir(target))
    )
    if reduce is None and not folder:
        if target not in (None, "-"):
            out_format = data_format(target)
        else:
            out_format = "jsonl" if fmt == "json" else "csv"
        writer = RowWriter(target, out_format)
    if in_format != "npz" and in_format != "jsonl":
        from ..datafiles import pyarrow

        pyarrow(in_format)
    chunk_rows = options.get("chunk_rows") or CHUNK_ROWS
    common = dict(
        mode=mode,
        bindings=bindings,
        of=of,
        wrt=names(wrt) or None,
        show_all=show_all,
        keep=names(options.get("keep") or ()),
        reduce=reduce,
        strict=options.get("strict", False),
        write=writer.write if writer is not None else None,
        note=output.note,
    )
    if dask:
        from ..distributed import run_dask

        result = run_dask(
            graph, paths, in_format, scheduler=options.get("scheduler"),
            target=target if folder else None, chunk_rows=chunk_rows, **common,
        )  # fmt: skip
    else:
        with output.progress(count_rows(paths, in_format), "rows") as tick:
            result = run_rows(graph, read_chunks(paths, in_format, chunk_rows), tick=tick, **common)
    if writer is not None:
        writer.close()
    output.note(result.summary())
    if reduce is not None:
        _report(result, reduce, bindings, graph, fmt, precision, full)
    if result.errors and not options.get("allow_errors"):
        raise EvalError(
            f"{result.errors:,} of {result.rows:,} rows could not be evaluated",
            hints=["their error cells say why; --allow-errors to exit 0 all the same"],
        )


def _report(result, how, bindings, graph, fmt, precision, full) -> None:
    """The reduced gradient, as grad reports one."""
    from ..errors import EvalError

    if result.value is None:
        raise EvalError(f"no row could be evaluated: nothing to {how}")
    shared = {**graph.defaults, **bindings}
    report = {
        "output": result.output,
        "reduce": how,
        "rows": result.rows - result.errors,
        "errors": result.errors,
        "value": result.value,
        "values": {k: shared[k] for k in result.gradients},
        "gradients": result.gradients,
    }
    from ..numfmt import is_tensor

    if any(is_tensor(v) for v in [result.value, *result.gradients.values()]):
        report["shapes"] = {k: list(getattr(v, "shape", ())) for k, v in result.gradients.items()}
    if fmt == "json":
        from ..report import to_json_text

        output.write_text(to_json_text(report, schema="reduce"))
        return
    from ..bindings import check_bindings
    from ..render.table import gradient_table

    shown = dict(report, output=f"{how}({result.output})")
    shown["values"] = check_bindings(graph, shown["values"])
    output.write_rich(gradient_table(shown, precision, full))
