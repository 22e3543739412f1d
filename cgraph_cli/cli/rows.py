"""``--rows FILE`` on eval and grad: the program run once per row of a data file, rows out to
a data file (or, with ``--reduce``, one gradient over all rows, reported as grad reports)."""

from __future__ import annotations

import os

import click

from ..core.numfmt import DIGITS
from . import output
from .options import FilePath, Whole, apply

ROWS_HELP = (
    "Run once per row of FILE (CSV, TSV, JSON Lines, Parquet, .npz; '-': CSV on standard "
    "input; wildcards for several files; sample:NAME for the sample data): each column named "
    "as an input binds it per row."
)


class Delimiter(click.ParamType):
    """``--delimiter CHAR``: ``,`` ``;`` ``|`` or a tab (``tab``, ``\\t``), refused cleanly
    otherwise."""

    name = "delimiter"

    def convert(self, value, param, ctx):
        from ..core.errors import UsageError
        from ..data.csvtext import delimiter_char

        try:
            return delimiter_char(value if isinstance(value, str) else "")
        except UsageError:
            self.fail(f"{value!r} is not one cgraph reads: give , ; | or tab", param, ctx)


#: The options of a run over rows, by parameter name.
OPTIONS = {
    "rows_file": click.option(
        "--rows",
        "rows_file",
        metavar="FILE",
        type=FilePath("rows", allow_dash=True),
        help=ROWS_HELP,
    ),
    "rows_format": click.option(
        "--rows-format",
        type=click.Choice(["csv", "tsv", "jsonl", "parquet", "npz"]),
        help="The format of --rows FILE (default: from its extension).",
    ),
    "delimiter": click.option(
        "--delimiter",
        metavar="CHAR",
        type=Delimiter(),
        help="The character between the cells of a CSV or TSV file: , ; | or tab (default: "
        "tab for TSV; for CSV a comma, or ';' where the header has semicolons and no comma).",
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
        type=Whole(min=1),
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
        command,
        [OPTIONS[k] for k in ("rows_file", "rows_format", "delimiter", "strict", "chunk_rows")],
    )


def refuse_without_rows(options: dict) -> None:
    """The options of a run over rows given without --rows: a usage error, not ignored."""
    from ..core.errors import UsageError

    if options.get("rows_file") is not None:
        return
    given = [
        flag
        for key, flag in [
            ("rows_format", "--rows-format"),
            ("delimiter", "--delimiter"),
            ("keep", "--keep"),
            ("strict", "--strict"),
            ("chunk_rows", "--chunk-rows"),
            ("allow_errors", "--allow-errors"),
            ("scheduler", "--scheduler"),
            ("reduce", "--reduce"),
        ]  # fmt: skip
        if options.get(key)
    ]
    if options.get("engine", "local") != "local":
        given.append("--engine")
    if given:
        raise UsageError(f"{given[0]} is for a run over the rows of a data file: give --rows FILE")


def run(graph, bindings, options: dict, *, mode: str, of, wrt, show_all, fmt, precision, full):
    """The command's work when --rows is given."""
    from ..core.errors import EvalError, UsageError
    from ..data.datafiles import data_format, expand
    from ..data.datawriter import RowWriter
    from ..jobs.rows import check_files
    from .options import names

    path = options["rows_file"]
    paths = expand(path)
    in_format = data_format(path, options.get("rows_format"))
    delimiter = options.get("delimiter")
    if delimiter is not None and in_format not in ("csv", "tsv"):
        raise UsageError(f"--delimiter is for CSV and TSV rows, not {in_format.upper()}")
    reduce = options.get("reduce")
    if reduce is None and fmt == "plain":
        raise UsageError(
            "--format plain prints one set of values; with --rows, rows go out as a data file"
        )
    if reduce is None and (precision is not None or full):
        raise UsageError(
            "rows are written with every digit and element: --precision and --full are for "
            "reports (--reduce)"
        )
    dask = options.get("engine") == "dask"
    if options.get("scheduler") and not dask:
        raise UsageError("--scheduler is for --engine dask")
    if dask and path == "-":
        raise UsageError("--engine dask reads files, not standard input")
    writer = None
    target = output.settings.output
    folder = target not in (None, "-") and (target.endswith(("/", os.sep)) or os.path.isdir(target))
    if folder and (reduce is not None or not dask):
        raise UsageError(
            f"-o {target}: it is a folder",
            hints=["name a file (out.csv, out.parquet...); with --engine dask, a folder "
                   "gets the workers' Parquet parts"],
        )  # fmt: skip
    if reduce is None and not folder:
        if target not in (None, "-"):
            out_format = data_format(target, output=True)
        else:
            out_format = "jsonl" if fmt == "json" else "csv"
        writer = RowWriter(target, out_format)
    if in_format in ("csv", "tsv", "parquet"):
        from ..data.datafiles import pyarrow

        pyarrow(in_format)
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
    try:
        check_files(graph, paths, in_format, delimiter, **{k: common[k] for k in _HEADER_CHECKS})
        result = _run(graph, paths, in_format, options, target if folder else None, common)
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    if writer is not None:
        writer.close()
    output.note(result.summary())
    if reduce is not None:
        for sample in result.samples:
            output.note(f"note: {sample}")
        if result.errors > len(result.samples):
            output.note(f"note: ... and {result.errors - len(result.samples):,} more rows failed")
        _report(result, reduce, bindings, graph, fmt, precision, full)
    if result.errors and not options.get("allow_errors"):
        hint = "the notes above say why" if reduce else "their error cells say why"
        raise EvalError(
            f"{result.errors:,} of {result.rows:,} rows could not be evaluated",
            hints=[f"{hint}; --allow-errors to exit 0 all the same"],
        )


def _run(graph, paths, in_format, options, folder, common):
    """The rows through the engine: Dask's workers or this process, chunk by chunk."""
    from ..data.datafiles import count_rows, read_chunks
    from ..jobs.rows import CHUNK_ROWS, number_columns, run_rows

    chunk_rows = options.get("chunk_rows") or CHUNK_ROWS
    if options.get("engine") == "dask":
        from ..jobs.distributed import run_dask

        return run_dask(
            graph, paths, in_format, scheduler=options.get("scheduler"), target=folder,
            chunk_rows=chunk_rows, delimiter=options.get("delimiter"), **common,
        )  # fmt: skip
    numbers = number_columns(graph, common["keep"])
    chunks = read_chunks(
        paths, in_format, chunk_rows, delimiter=options.get("delimiter"), numbers=numbers
    )
    with output.progress(count_rows(paths, in_format), "rows") as tick:
        return run_rows(graph, chunks, tick=tick, **common)


_HEADER_CHECKS = ("mode", "bindings", "of", "wrt", "keep", "reduce", "show_all", "strict")


def _report(result, how, bindings, graph, fmt, precision, full) -> None:
    """The reduced gradient, as grad reports one."""
    from ..core.errors import EvalError
    from ..data.bindings import check_bindings

    if result.value is None:
        raise EvalError(f"no row could be evaluated, so there is nothing to {how}")
    shared = {**graph.defaults, **check_bindings(graph, bindings)}
    report = {
        "output": result.output,
        "reduce": how,
        "rows": result.count,
        "errors": result.errors,
        "value": result.value,
        "values": {k: shared[k] for k in result.gradients},
        "gradients": result.gradients,
    }
    from ..core.numfmt import is_tensor

    if any(is_tensor(v) for v in [result.value, *result.gradients.values()]):
        report["shapes"] = {k: list(getattr(v, "shape", ())) for k, v in result.gradients.items()}
    if fmt == "json":
        from ..app.report import to_json_text

        output.write_text(to_json_text(report, schema="reduce"))
    elif fmt == "plain":
        from ..render.text import grad_plain

        output.write_text(grad_plain(report, precision))
    else:
        from ..render.table import gradient_table

        output.write_rich(
            gradient_table(
                dict(report, output=f"{how}({result.output})"), precision or DIGITS, full
            )
        )
