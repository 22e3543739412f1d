"""The run over rows on Dask (``--engine dask``): one partition per data file, each read,
evaluated and reduced by a worker with the code the single-machine engine runs.

The client reads the first row to learn the columns' shapes, compiles the program's NumPy
module once (:mod:`cgraph_cli.run.engine`) and ships its *source text*, with the program's text,
as plain data: each worker ``exec``'s the module once and keeps it (no closure is pickled).
A worker runs :func:`cgraph_cli.jobs.rows.run_rows` over its file chunk by chunk, with the
shipped module in the same driver (:class:`cgraph_cli.run.engine.Driver`), so its rows get
exactly what the local engine gives them, errors included. ``--reduce`` sums per file, then
once on the client. Workers need cgraph installed and the files at the same paths.

Dask's local scheduler runs it in threads of this process by default; ``scheduler`` is the
address of a ``dask.distributed`` scheduler (``tcp://host:8786``) to run it on a cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..core.arrays import np
from ..core.errors import UsageError, cannot_write
from ..core.ir import Graph
from .rows import RowsResult, run_rows

EXTRA = "pip install 'cgraph-cli[dask]'"
#: A worker's programs and engines, by the hash of what the client sent.
_PREPARED: dict[str, tuple[Graph, Any]] = {}


def dask_modules():
    """dask, dask.dataframe and pandas, or a usage error naming the extra."""
    try:
        import dask
        import dask.dataframe as dd
        import pandas as pd
    except ImportError:
        raise UsageError(
            "--engine dask needs Dask, which is not installed", hints=[EXTRA]
        ) from None
    return dask, dd, pd


def run_dask(
    graph: Graph,
    paths: list[str],
    fmt: str,
    *,
    scheduler: str | None = None,
    target: str | None = None,
    write: Callable[[dict], None] | None = None,
    chunk_rows: int,
    note: Callable[[str], None] | None = None,
    delimiter: str | None = None,
    **options: Any,
) -> RowsResult:
    """Run ``graph`` over the rows of ``paths`` on Dask (``options`` as
    :func:`cgraph_cli.jobs.rows.run_rows` takes them). Rows go, in order, to ``write`` (from the
    client) or, with ``target`` a folder, to Parquet files written by the workers
    (``part.0.parquet``...); with ``reduce``, the result holds the sum or mean. ``delimiter``:
    the CSV files', as :func:`cgraph_cli.data.datafiles.read_chunks` takes it.

    >>> from cgraph_cli import parse
    >>> from cgraph_cli.data.datafiles import expand
    >>> program = parse("input w = 0.5, b = -1; loss = softplus(-(w * x + b) * (2 * t - 1))")
    >>> result = run_dask(program, expand("sample:train.csv"), "csv", chunk_rows=16,
    ...                   mode="grad", reduce="mean")
    >>> result.count, sorted(result.gradients)
    (40, ['b', 'w'])
    """
    if fmt == "npz":
        raise UsageError("--engine dask reads CSV, TSV, JSON Lines and Parquet files, not .npz")
    dask, dd, pd = dask_modules()
    started = time.perf_counter()
    # A Client makes itself Dask's scheduler in the process's config, and one that failed
    # halfway may leave it so: the config is put back as it was, whatever happened.
    saved = {k: dask.config.config[k] for k in _CLIENT_KEYS if k in dask.config.config}
    client = None
    try:
        client = _client(scheduler)
        # Object columns stay objects (a tensor cell is a list, not its text).
        with dask.config.set({"dataframe.convert-string": False}):
            result = _run(dask, dd, pd, graph, paths, (fmt, delimiter), target, write,
                          chunk_rows, note, _workers(client), options)  # fmt: skip
    finally:
        if client is not None:
            client.close()
        for key in _CLIENT_KEYS:
            if key in saved:
                dask.config.config[key] = saved[key]
            else:
                dask.config.config.pop(key, None)
    result.seconds = time.perf_counter() - started
    return result


def _run(dask, dd, pd, graph, paths, read, target, write, chunk_rows, note, workers, options):
    job, first = _job(graph, paths, read, chunk_rows, note, options)
    reduce = options.get("reduce")
    meta = _frame(pd, first.tables[0]) if reduce is None else _sums(pd, first)
    job["columns"] = list(meta.columns)
    frame = dd.from_map(_evaluate_file, paths, job=job, meta=meta.iloc[:0])
    result = RowsResult()
    result.output, result.ignored = first.output, first.ignored
    if reduce is not None:
        _reduce(frame.compute(), reduce, result)
    elif target is not None:
        errors = frame["error"].notnull().sum()
        schema = _schema(meta)
        try:
            _own_folder(target, frame.npartitions)
            written = frame.to_parquet(target, compute=False, write_index=False, schema=schema)
            _, result.errors, result.rows = dask.compute(written, errors, frame["error"].size)
        except OSError as e:  # a folder that is a file, cannot be made or written
            why = "it is not a folder" if isinstance(e, FileExistsError) else e.strerror or e
            where = f"{target}: {e.filename}" if e.filename and e.filename != target else target
            raise UsageError(f"cannot write {where}: {why}") from None
    else:
        assert write is not None
        _write_in_order(dask, frame, write, result, workers)
    return result


#: The list of the parts cgraph wrote in an output folder, beside them (a reader of the
#: dataset skips names that start with a dot).
PARTS = ".cgraph-parts"
_PART = r"part\.\d+\.parquet"


def _own_folder(target: str, parts: int) -> None:
    """Make ``target`` ready for ``parts`` Parquet parts: an earlier run's parts (its list
    names them) go, so none is left to change the dataset; a folder that holds anything else
    is refused (exit 2), so no file of the user's is overwritten or read back as rows."""
    import os

    from ..data.outputs import listed, write_list

    manifest = os.path.join(target, PARTS)
    if os.path.isdir(target):
        earlier = listed(manifest, _PART)
        others = sorted(set(os.listdir(target)) - earlier - {PARTS})
        if others:
            shown = ", ".join(others[:3]) + (
                f" and {len(others) - 3} more" if len(others) > 3 else ""
            )
            raise UsageError(
                f"-o {target} holds files cgraph did not write ({shown}): refusing to write "
                "the parts among them",
                hints=["name a new or empty folder"],
            )
        for name in earlier:
            try:
                os.unlink(os.path.join(target, name))
            except FileNotFoundError:
                pass
            except OSError as e:
                raise cannot_write(os.path.join(target, name), e) from None
    else:
        try:
            os.makedirs(target, exist_ok=True)
        except OSError as e:
            raise cannot_write(target, e) from None
    write_list(manifest, [f"part.{k}.parquet" for k in range(parts)])


#: The keys of Dask's config a Client sets for the process.
_CLIENT_KEYS = ("scheduler", "shuffle")


#: What Dask raises when time runs out: before Python 3.11, asyncio's TimeoutError is not the
#: built-in one (distributed's WorkerStartTimeoutError is asyncio's).
TIMEOUTS = (TimeoutError, asyncio.TimeoutError)


def _client(scheduler: str | None):
    if scheduler is None:
        return None
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed", hints=[EXTRA]) from None
    from .scheduler import check_scheduler, timeout

    seconds = timeout()
    check_scheduler(scheduler, seconds)  # its form, and a Dask scheduler's handshake
    failure = None
    try:
        client = Client(scheduler, timeout=f"{seconds}s")
    except (OSError, *TIMEOUTS) as e:
        why = str(e) or f"no answer within {seconds:g} s"
        failure = UsageError(f"cannot reach the Dask scheduler at {scheduler}: {why}")
    except Exception as e:  # noqa: BLE001 - the peer's doing: not Dask's messages, no TLS set up
        failure = UsageError(
            f"cannot connect to the Dask scheduler at {scheduler}: {type(e).__name__}: {e}"
        )
    if failure is not None:
        # The half-made Client is closed now, by its finalizer: its close takes a lock that every
        # Client's start shares, so run later by the garbage collector in the middle of another
        # Client's start (the next command in the same process) it would wait for ever.
        import gc

        gc.collect()
        raise failure
    try:  # with no worker, the job would wait for ever
        client.wait_for_workers(1, timeout=seconds)
    except TIMEOUTS:
        client.close()
        raise UsageError(
            f"the Dask scheduler at {scheduler} has no workers (none came within {seconds:g} s)",
            hints=["start one: dask worker " + scheduler],
        ) from None
    return client


def _workers(client) -> int:
    if client is None:
        import os

        return os.cpu_count() or 1
    return max(1, len(client.scheduler_info().get("workers", {})))


def _job(graph: Graph, paths, read, chunk_rows, note, options) -> tuple[dict, RowsResult]:
    """What every worker needs, as plain data, from a run of the first row on the client
    (which also says, here, whatever is wrong with the columns or the bindings); ``read``:
    the files' format and delimiter."""
    from ..data.datafiles import read_chunks

    fmt, delimiter = read
    head = next(read_chunks(paths[:1], fmt, 1, delimiter=delimiter), None)
    if head is None:
        raise UsageError(f"{paths[0]} has no rows")
    first = run_rows(graph, [head], note=note, **options)
    source = first.engine.source
    key = hashlib.sha256((graph.source.text + "\0" + source).encode()).hexdigest()
    job = {
        "key": key,
        "program": graph.source.text,
        "filename": graph.source.filename,
        "source": source,
        "format": fmt,
        "delimiter": delimiter,
        "chunk_rows": chunk_rows,
        # Each file's sums, however the client combines them (a mean is over every row).
        "options": {
            **options,
            "bindings": dict(options.get("bindings") or {}),
            "reduce": "sum" if options.get("reduce") else None,
        },
    }
    return job, first


def _prepared(job: Mapping) -> tuple[Graph, Any]:
    """The program and its engine on this worker: parsed and ``exec``'d once."""
    found = _PREPARED.get(job["key"])
    if found is None:
        from ..parse import parse
        from ..run.engine import Engine

        graph = parse(job["program"], job["filename"])
        found = _PREPARED[job["key"]] = (graph, Engine(job["source"]))
    return found


def _evaluate_file(path: str, job: Mapping):
    """One partition: a file's rows evaluated, as a pandas DataFrame (with reduce, the file's
    sums in one row)."""
    import pandas as pd

    from ..data.datafiles import read_chunks

    graph, engine = _prepared(job)
    chunks = read_chunks([path], job["format"], job["chunk_rows"], delimiter=job["delimiter"])
    result = run_rows(graph, chunks, engine=engine, **job["options"])
    if job["options"].get("reduce") is not None:
        return _sums(pd, result)
    frames = [_frame(pd, t) for t in result.tables]
    if not frames:  # a file with a header and no rows
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in job["columns"]})
    return pd.concat(frames, ignore_index=True)


def _frame(pd, table: dict):
    """An output table as a DataFrame: numbers as float64 (nan: empty), the rest as objects."""
    columns = {}
    for name, column in table.items():
        if isinstance(column, np.ndarray):
            columns[name] = column
        elif hasattr(column, "to_pylist"):  # a column kept from the input
            columns[name] = pd.Series(column.to_pylist(), dtype=object)
        else:
            columns[name] = pd.Series(column, dtype=object)
    return pd.DataFrame(columns)


def _schema(head):
    """The Parquet schema of the output, from its first row: numbers, text (``error``, which
    is empty there), lists for tensors."""
    import pyarrow as pa

    fields = []
    for name in head.columns:
        column = head[name]
        if column.dtype == np.float64:
            kind = pa.float64()
        else:
            kind = pa.array(column.tolist()).type
            if pa.types.is_null(kind):
                kind = pa.string()
        fields.append(pa.field(name, kind))
    return pa.schema(fields)


def _sums(pd, result: RowsResult):
    """A file's contribution to --reduce, in one row: its sums and the rows counted."""
    row = {
        "rows": [result.rows],
        "errors": [result.errors],
        "count": [result.count],
        "value": [np.nan if result.value is None else result.value],
    }
    for name, g in result.gradients.items():
        row["d:" + name] = pd.Series([np.asarray(g)], dtype=object)
    return pd.DataFrame(row)


def _reduce(parts, how: str, result: RowsResult) -> None:
    """The files' sums as one: the sum, or the mean over every row counted."""
    result.rows = int(parts["rows"].sum())
    result.errors = int(parts["errors"].sum())
    result.count = int(parts["count"].sum())
    if not result.count:
        return
    scale = 1.0 / result.count if how == "mean" else 1.0
    used = parts[parts["count"] > 0]
    result.value = float(used["value"].sum()) * scale
    for column in [c for c in parts.columns if c.startswith("d:")]:
        total = sum(used[column].tolist(), np.zeros(()))
        result.gradients[column[2:]] = (
            float(total) * scale if np.ndim(total) == 0 else total * scale
        )


def _write_in_order(dask, frame, write, result: RowsResult, workers: int) -> None:
    """The partitions computed a few at a time (as many as the workers can take, twice) and
    written in their order, so that the client holds a few files' rows at most."""
    parts = frame.to_delayed()
    window = max(2, 2 * workers)
    for start in range(0, len(parts), window):
        for df in dask.compute(*parts[start : start + window]):
            if df is None or not len(df):
                continue
            result.rows += len(df)
            result.errors += int(df["error"].notnull().sum())
            write({c: _column(df[c]) for c in df.columns})


def _column(series):
    if series.dtype == np.float64:
        return series.to_numpy()
    return [None if v is None or (isinstance(v, float) and v != v) else v for v in series]
