"""Data files for running a program once per row (``--rows``): CSV, TSV, JSON Lines and Parquet
through pyarrow (the ``data`` extra), and NumPy's ``.npz``; read in chunks of rows and written
chunk by chunk, so that a file larger than memory streams through.

A column becomes a :class:`Column`: one float64 value per row (an array per row for a list
column or JSON-array cells), with the rows that cannot be bound (an empty cell, a text that is
not a number) set apart, each with the reason.

>>> column = to_column("x", [1.0, None, 3.0])
>>> column.values.tolist(), column.problems
([1.0, nan, 3.0], {1: 'the cell of x is empty'})
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Collection, Iterator
from contextlib import nullcontext

from ..core.arrays import np
from ..core.errors import UsageError
from .ahead import ahead
from .csvread import batch_columns, csv_batches, open_input, unique_names
from .csvtext import delimiter_char
from .sources import standard_input

#: Formats by file extension; anything else needs --rows-format.
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npz": "npz",
}
FORMATS = ("csv", "tsv", "jsonl", "parquet", "npz")
EXTRA = "pip install 'cgraph-cli[data]'"


def data_format(path: str, given: str | None = None, output: bool = False) -> str:
    """The format of a data file: ``given``, else its extension's (``-``: CSV); ``output``:
    a file to write, whose extension alone says.

    >>> data_format("runs/part-1.parquet"), data_format("-"), data_format("x.txt", "tsv")
    ('parquet', 'csv', 'tsv')
    """
    if given:
        return given
    if path == "-":
        return "csv"
    ext = os.path.splitext(path)[1].lower()
    if ext not in EXTENSIONS:
        if output:
            raise UsageError(
                f"cannot tell what format to write {path} in from its extension",
                hints=["name it .csv, .tsv, .jsonl, .parquet or .npz"],
            )
        raise UsageError(
            f"cannot tell the format of {path} from its extension",
            hints=[
                f"name it .csv, .tsv, .jsonl, .parquet or .npz, or say --rows-format {{{','.join(FORMATS)}}}"
            ],
        )
    return EXTENSIONS[ext]


def expand(path: str) -> list[str]:
    """The files a ``--rows`` argument names: itself, the files its wildcards match (sorted,
    so that rows come out in the same order every time), or ``sample:NAME``, a data file that
    ships with the samples (``sample:train.csv``).

    >>> [os.path.basename(p) for p in expand("sample:train.csv")]
    ['train.csv']
    """
    if path.startswith("sample:"):
        from .sources import sample_data

        return [sample_data(path.removeprefix("sample:"))]
    if path == "-" or not glob.has_magic(path):
        if path != "-" and not os.path.isfile(path):
            if _stream(path):  # bash's <(cat d.csv) is /dev/fd/63
                raise UsageError(
                    f"cannot read {path}: it is a pipe, and --rows reads a file twice (its "
                    "header first, then its rows)",
                    hints=["send it to standard input instead: cat d.csv | cgraph ... --rows -"],
                )
            what = "is a folder" if os.path.isdir(path) else "does not exist"
            raise UsageError(f"cannot read {path}: it {what}")
        return [path]
    found = sorted(p for p in glob.glob(path) if os.path.isfile(p))
    if not found:
        raise UsageError(f"no file matches {path}")
    return found


def _stream(path: str) -> bool:
    """Whether ``path`` is a pipe or a device: something read once, front to back."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def pyarrow(fmt: str):
    """pyarrow, or a usage error naming the extra that installs it."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.csv  # noqa: F401
    except ImportError:
        raise UsageError(
            f"{fmt.upper()} files need pyarrow, which is not installed", hints=[EXTRA]
        ) from None
    import pyarrow as pa

    return pa


class Column:
    """One column of a chunk as the program reads it: ``values`` holds a value per row (shape
    ``(rows, *shape)``); ``problems`` the rows that cannot be bound, by index, with why;
    ``odd`` the rows whose array has another shape than the first row's (bound one by one)."""

    __slots__ = ("values", "problems", "odd")

    def __init__(self, values, problems: dict[int, str], odd: dict[int, object]) -> None:
        self.values = values
        self.problems = problems
        self.odd = odd

    def cell(self, row: int):
        """Row ``row``'s value as a binding (a float or an array)."""
        if row in self.odd:
            return self.odd[row]
        value = self.values[row]
        return float(value) if np.ndim(value) == 0 else value


def to_column(name: str, cells) -> Column:
    """A column from a pyarrow array, a NumPy array, or a list of cells (numbers, None, lists,
    JSON text)."""
    array = _numeric(cells)
    if array is not None:
        nulls = _nulls(cells)
        empty = () if nulls is None else np.flatnonzero(nulls).tolist()
        problems = {r: f"the cell of {name} is empty" for r in empty}
        return Column(array, problems, {})
    if hasattr(cells, "to_pylist"):
        cells = cells.to_pylist()
    cells = list(cells)
    arrays = _json_arrays(cells)
    if arrays is not None:
        return Column(arrays, {}, {})
    return _cell_by_cell(name, cells)


_NOT_NUMBERS = re.compile(r"[^0-9eE.,+\-\[\]\s]")  # true, null, NaN, Infinity, quotes...


def _json_arrays(cells: list):
    """A column of JSON arrays of numbers of one shape, parsed in one go (a float64 array with
    the rows along its first axis); None when any cell needs a look of its own (empty, text
    other than numbers, ragged, too large), which :func:`_cell_by_cell` gives."""
    if not cells or not all(isinstance(c, str) and c.lstrip().startswith("[") for c in cells):
        return None
    joined = ",".join(cells)
    if _NOT_NUMBERS.search(joined) or "[]" in joined.replace(" ", ""):
        return None
    try:
        with np.errstate(all="ignore"):
            values = np.array(json.loads("[" + joined + "]"), dtype=float)
    except (ValueError, RecursionError):
        return None
    return values if values.ndim > 1 and np.isfinite(values).all() else None


def _numeric(cells):
    """A float64 array (nan for empty cells) when the column holds numbers only, else None."""
    if isinstance(cells, np.ndarray):
        if cells.dtype.kind in "fiu":
            return cells.astype(float, copy=False)
        return None
    if hasattr(cells, "type"):  # a pyarrow array
        import pyarrow as pa

        t = cells.type
        if t == pa.float64():  # (a cast to the same type costs as much as a copy)
            return cells.to_numpy(zero_copy_only=False)
        if pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_decimal(t):
            # read as float64 as CSV and JSON cells are: 2**53 + 1 becomes 2**53, not an error
            return cells.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)
        if pa.types.is_string(t) or pa.types.is_large_string(t):  # CSV cells, as text
            try:  # every cell a number (or empty): one cast; else cell by cell
                return cells.cast(pa.float64()).to_numpy(zero_copy_only=False)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
        return None
    if all(c is None or (isinstance(c, (int, float)) and not isinstance(c, bool)) for c in cells):
        return np.array([np.nan if c is None else float(c) for c in cells], dtype=float)
    return None


def _nulls(cells):
    """Which cells are empty (None: none is, as in any NumPy array)."""
    if isinstance(cells, np.ndarray):
        return None
    if hasattr(cells, "is_null"):
        if cells.null_count == 0:
            return None
        return cells.is_null().to_numpy(zero_copy_only=False)
    return np.array([c is None for c in cells], dtype=bool)


def _cell_by_cell(name: str, cells: list) -> Column:
    """Cells of any kind, each checked as a binding: numbers, arrays, JSON text."""
    from ..core.errors import BindingError
    from .bindings import check_value

    bound: list = []
    problems: dict[int, str] = {}
    for r, cell in enumerate(cells):
        if cell is None or (isinstance(cell, str) and not cell.strip()):
            problems[r] = f"the cell of {name} is empty"
            bound.append(None)
            continue
        try:
            bound.append(check_value(name, cell.strip() if isinstance(cell, str) else cell))
        except BindingError as e:
            problems[r] = e.message
            bound.append(None)
    first = next((v for v in bound if v is not None), 0.0)
    shape = np.shape(first)
    values = np.full((len(cells), *shape), np.nan)
    odd: dict[int, object] = {}
    for r, v in enumerate(bound):
        if v is None:
            continue
        if np.shape(v) == shape:
            values[r] = v
        else:  # a row of its own shape: bound by itself
            odd[r] = v
    return Column(values, problems, odd)


# --- reading ---------------------------------------------------------------------------------
def read_chunks(
    paths: list[str],
    fmt: str,
    chunk_rows: int,
    *,
    delimiter: str | None = None,
    numbers: Collection[str] = (),
) -> Iterator[tuple[str, int, dict]]:
    """The rows of the files in turn, in chunks of at most ``chunk_rows`` rows: ``(file, index
    of the chunk's first row in the file, columns)``, columns as pyarrow or NumPy arrays.
    ``delimiter``: a CSV or TSV file's (``,``, ``;``, ``|``, ``tab``); by default a CSV file's
    is ``,``, or ``;`` where the header has semicolons and no comma. ``numbers``: the columns
    of a CSV or TSV file to read as numbers while every cell is one (the program's inputs;
    the others, and all of them from a cell on that is not a number, are read as text and
    cast chunk by chunk, so that a bad cell fails its row only). The next chunks of a CSV,
    TSV or Parquet file are read by a thread of their own while the caller works on one.

    >>> chunks = list(read_chunks(expand("sample:train.csv"), "csv", 32))
    >>> [(start, len(columns["x"])) for _, start, columns in chunks]
    [(0, 32), (32, 8)]
    """
    if delimiter is not None:
        delimiter = delimiter_char(delimiter)
        if fmt not in ("csv", "tsv"):
            raise UsageError(f"--delimiter is for CSV and TSV rows, not {fmt.upper()}")
    for path in paths:
        start = 0
        chunks = _rechunk(_batches(path, fmt, chunk_rows, delimiter, numbers), chunk_rows)
        if path != "-" and fmt in _AHEAD:  # (standard input: a thread could wait on it forever)
            chunks = ahead(chunks)  # the next chunks read while the caller works on this one
        for chunk in chunks:
            yield path, start, chunk
            start += _length(chunk)


#: Formats read ahead by a thread: pyarrow's readers, which let go of Python's lock (JSON
#: Lines is parsed by Python, and an .npz file is read whole).
_AHEAD = ("csv", "tsv", "parquet")


def column_names(path: str, fmt: str, delimiter: str | None = None) -> list[str]:
    """A data file's columns, from its header or its first row (an .npz file is read)."""
    for _, _, chunk in read_chunks([path], fmt, 1, delimiter=delimiter):
        return list(chunk)
    return []


def count_rows(paths: list[str], fmt: str) -> int | None:
    """The number of rows when the files say it without being read (Parquet), else None."""
    if fmt != "parquet":
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    except (pa.ArrowInvalid, OSError):
        return None  # said when the file is read


def _batches(
    path: str, fmt: str, chunk_rows: int, delimiter: str | None, numbers: Collection[str]
) -> Iterator[dict]:
    if path == "-" and fmt in ("parquet", "npz"):
        raise UsageError(f"standard input holds CSV, TSV or JSON Lines rows, not {fmt}")
    if fmt == "npz":
        arrays = _npz(path)
        rows = {len(a) for a in arrays.values()}
        if len(rows) > 1:
            raise UsageError(f"the arrays of {path} have different numbers of rows: {sorted(rows)}")
        n = rows.pop() if rows else 0
        for start in range(0, max(n, 1), chunk_rows):  # a file of no rows: one empty chunk
            yield {k: a[start : start + chunk_rows] for k, a in arrays.items()}
        return
    if fmt == "jsonl":
        yield from _json_lines(path, chunk_rows)
        return
    pa = pyarrow(fmt)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            # Without pre-buffering: memory bounded by a chunk, not the file.
            parquet = pq.ParquetFile(path, pre_buffer=False)
            unique_names(parquet.schema_arrow.names, path)
            yield {
                n: pa.array([], type=t)
                for n, t in zip(parquet.schema_arrow.names, parquet.schema_arrow.types)
            }
            for batch in parquet.iter_batches(batch_size=chunk_rows):
                yield batch_columns(batch)
            return
        yield from csv_batches(pa, path, fmt, delimiter, numbers)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
        raise UsageError(f"cannot read {path} as {fmt.upper()}: {_arrow_message(e)}") from None


def _json_lines(path: str, chunk_rows: int) -> Iterator[dict]:
    """A JSON Lines file's rows: one object per line (blank lines skipped), a key per column;
    a key missing from a line is an empty cell."""
    stream = standard_input() if path == "-" else open_input(path)
    with stream if path != "-" else nullcontext():
        records: list[dict] = []
        seen = False
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line, parse_int=float)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise UsageError(f"{path}:{number}: not a line of JSON: {e}") from None
            except RecursionError:  # json recurses on nesting: [[[[...]]]] 100,000 deep
                raise UsageError(
                    f"{path}:{number}: a cell nests arrays or objects too deeply",
                    hints=["a cell is a number or an array of at most 64 axes"],
                ) from None
            if not isinstance(record, dict):
                raise UsageError(
                    f'{path}:{number}: a line of JSON Lines is an object, {{"x": 1}}',
                    hints=["a file of one JSON array is not JSON Lines"],
                )
            records.append(record)
            if len(records) == chunk_rows:
                yield _from_records(records)
                records, seen = [], True
        if records or not seen:
            yield _from_records(records)


def _from_records(records: list[dict]) -> dict:
    names = list(dict.fromkeys(k for r in records for k in r))
    return {n: [r.get(n) for r in records] for n in names}


def _arrow_message(e: Exception) -> str:
    return " ".join(str(e).split())[:300]


def _npz(path: str) -> dict:
    from .arrayfiles import Unreadable, read_npz

    try:
        with open_input(path) as f:
            data = f.read()
        arrays = read_npz(data)
    except (OSError, Unreadable) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    return {k: np.atleast_1d(np.asarray(v)) for k, v in arrays.items()}


def _rechunk(batches: Iterator[dict], chunk_rows: int) -> Iterator[dict]:
    """Batches of any size (a CSV reader's are set by bytes) as chunks of ``chunk_rows``; a
    file of no rows gives one chunk of no rows (its columns)."""
    pending: list[dict] = []
    held = 0
    empty: dict | None = None
    given = False
    for batch in batches:
        n = _length(batch)
        if not n:
            empty = batch if empty is None else empty
            continue
        pending.append(batch)
        held += n
        while held >= chunk_rows:
            chunk, pending = _take(pending, chunk_rows)
            held -= chunk_rows
            given = True
            yield chunk
    if held:
        yield _take(pending, held)[0]
    elif not given and empty is not None:
        yield empty


def _length(batch: dict) -> int:
    return len(next(iter(batch.values()))) if batch else 0


def _take(pending: list[dict], n: int) -> tuple[dict, list[dict]]:
    """The first ``n`` rows of the pending batches, and what remains."""
    parts, rest, need = [], [], n
    for batch in pending:
        m = _length(batch)
        if need >= m:
            parts.append(batch)
            need -= m
        elif need > 0:
            parts.append({k: v[:need] for k, v in batch.items()})
            rest.append({k: v[need:] for k, v in batch.items()})
            need = 0
        else:
            rest.append(batch)
    if len(parts) == 1:
        return parts[0], rest
    return {k: _concat([p[k] for p in parts]) for k in parts[0]}, rest


def _concat(arrays: list):
    if isinstance(arrays[0], np.ndarray):
        return np.concatenate(arrays)
    if isinstance(arrays[0], list):  # JSON Lines cells
        return [c for a in arrays for c in a]
    import pyarrow as pa

    if len({a.type for a in arrays}) > 1:  # a CSV column read as numbers, then as text
        arrays = [a.cast(pa.string()) for a in arrays]
    return pa.concat_arrays(arrays)
