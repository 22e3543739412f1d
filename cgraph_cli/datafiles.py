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
import sys
from collections.abc import Iterator
from typing import Any

from .arrays import np
from .errors import UsageError, cannot_write

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


def data_format(path: str, given: str | None = None) -> str:
    """The format of a data file: ``given``, else its extension's (``-``: CSV).

    >>> data_format("runs/part-1.parquet"), data_format("-"), data_format("x.txt", "tsv")
    ('parquet', 'csv', 'tsv')
    """
    if given:
        return given
    if path == "-":
        return "csv"
    ext = os.path.splitext(path)[1].lower()
    if ext not in EXTENSIONS:
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
        return [_sample_data(path.removeprefix("sample:"))]
    if path == "-" or not glob.has_magic(path):
        if path != "-" and not os.path.isfile(path):
            what = "is a folder" if os.path.isdir(path) else "does not exist"
            raise UsageError(f"cannot read {path}: it {what}")
        return [path]
    found = sorted(p for p in glob.glob(path) if os.path.isfile(p))
    if not found:
        raise UsageError(f"no file matches {path}")
    return found


def _sample_data(name: str) -> str:
    from .sources import samples_folder

    folder = samples_folder() / "data"
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    if name not in names:
        raise UsageError(
            f"no sample data file named '{name}'", hints=["sample data: " + ", ".join(names)]
        )
    return str(folder / name)


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
        problems = {int(r): f"the cell of {name} is empty" for r in np.flatnonzero(nulls)}
        return Column(array, problems, {})
    if hasattr(cells, "to_pylist"):
        cells = cells.to_pylist()
    return _cell_by_cell(name, list(cells))


def _numeric(cells):
    """A float64 array (nan for empty cells) when the column holds numbers only, else None."""
    if isinstance(cells, np.ndarray):
        if cells.dtype.kind in "fiu":
            return cells.astype(float, copy=False)
        return None
    if hasattr(cells, "type"):  # a pyarrow array
        import pyarrow as pa

        t = cells.type
        if pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_decimal(t):
            return cells.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return None
    if all(c is None or (isinstance(c, (int, float)) and not isinstance(c, bool)) for c in cells):
        return np.array([np.nan if c is None else float(c) for c in cells], dtype=float)
    return None


def _nulls(cells):
    if isinstance(cells, np.ndarray):
        return np.zeros(len(cells), dtype=bool)
    if hasattr(cells, "is_null"):
        return cells.is_null().to_numpy(zero_copy_only=False)
    return np.array([c is None for c in cells], dtype=bool)


def _cell_by_cell(name: str, cells: list) -> Column:
    """Cells of any kind, each checked as a binding: numbers, arrays, JSON text."""
    from .bindings import check_value
    from .errors import BindingError

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
def read_chunks(paths: list[str], fmt: str, chunk_rows: int) -> Iterator[tuple[str, int, dict]]:
    """The rows of the files in turn, in chunks of at most ``chunk_rows`` rows: ``(file, index
    of the chunk's first row in the file, columns)``, columns as pyarrow or NumPy arrays.

    >>> chunks = list(read_chunks(expand("sample:train.csv"), "csv", 32))
    >>> [(start, len(columns["x"])) for _, start, columns in chunks]
    [(0, 32), (32, 8)]
    """
    for path in paths:
        start = 0
        for chunk in _rechunk(_batches(path, fmt, chunk_rows), chunk_rows):
            yield path, start, chunk
            start += _length(chunk)


def count_rows(paths: list[str], fmt: str) -> int | None:
    """The number of rows when the files say it without being read (Parquet, .npz)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    if fmt == "npz":
        return sum(len(next(iter(_npz(p).values()), ())) for p in paths)
    return None


def _batches(path: str, fmt: str, chunk_rows: int) -> Iterator[dict]:
    if fmt == "npz":
        arrays = _npz(path)
        rows = {len(a) for a in arrays.values()}
        if len(rows) > 1:
            raise UsageError(f"the arrays of {path} have different numbers of rows: {sorted(rows)}")
        n = rows.pop() if rows else 0
        for start in range(0, n, chunk_rows):
            yield {k: a[start : start + chunk_rows] for k, a in arrays.items()}
        return
    pa = pyarrow(fmt)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            # Without pre-buffering: memory bounded by a chunk, not the file.
            parquet = pq.ParquetFile(path, pre_buffer=False)
            for batch in parquet.iter_batches(batch_size=chunk_rows):
                yield _columns(batch)
            return
        stream = sys.stdin.buffer if path == "-" else path
        if fmt == "jsonl":
            import pyarrow.json as pj

            reader = pj.open_json(stream)
        else:
            import pyarrow.csv as pc

            parse = pc.ParseOptions(delimiter="\t" if fmt == "tsv" else ",")
            reader = pc.open_csv(stream, parse_options=parse)
        for batch in reader:
            yield _columns(batch)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
        raise UsageError(f"cannot read {path} as {fmt.upper()}: {_arrow_message(e)}") from None


def _columns(batch) -> dict:
    return {name: batch.column(k) for k, name in enumerate(batch.schema.names)}


def _arrow_message(e: Exception) -> str:
    return " ".join(str(e).split())[:300]


def _npz(path: str) -> dict:
    from .arrayfiles import Unreadable, read_npz

    try:
        with open(path, "rb") as f:
            data = f.read()
        arrays = read_npz(data)
    except (OSError, Unreadable) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    return {k: np.atleast_1d(np.asarray(v)) for k, v in arrays.items()}


def _rechunk(batches: Iterator[dict], chunk_rows: int) -> Iterator[dict]:
    """Batches of any size (a CSV reader's are set by bytes) as chunks of ``chunk_rows``."""
    pending: list[dict] = []
    held = 0
    for batch in batches:
        n = _length(batch)
        if not n:
            continue
        pending.append(batch)
        held += n
        while held >= chunk_rows:
            chunk, pending = _take(pending, chunk_rows)
            held -= chunk_rows
            yield chunk
    if held:
        yield _take(pending, held)[0]


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
    import pyarrow as pa

    if len({a.type for a in arrays}) > 1:  # a CSV column read as numbers, then as text
        arrays = [a.cast(pa.string()) for a in arrays]
    return pa.concat_arrays(arrays)


# --- writing ---------------------------------------------------------------------------------
class RowWriter:
    """Rows out, chunk by chunk. ``write`` takes a dict of columns, each a float64 array (nan:
    an empty cell), a list of Python values (None: empty; lists for tensors, text), or a
    column read from the input (kept as it was); ``close`` finishes the file. ``path`` None
    or ``-``: standard output.

    >>> import tempfile, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "out.csv")
    >>> writer = RowWriter(path, "csv")
    >>> writer.write({"y": np.array([1.5, np.nan]), "error": [None, "row 2: ..."]})
    >>> writer.close()
    >>> print(open(path).read().strip())
    "y","error"
    1.5,
    ,"row 2: ..."
    """

    def __init__(self, path: str | None, fmt: str, text: tuple[str, ...] = ("error",)) -> None:
        self.path = None if path in (None, "-") else path
        self.text = text  # columns of text, even when every cell is empty
        self.fmt = fmt
        self._writer: Any = None
        self._types: dict = {}
        self._npz: dict[str, list] = {}
        self._file: Any = None
        if fmt not in ("jsonl", "npz"):
            pyarrow(fmt)  # before any work: a missing extra is said first

    def _sink(self):
        if self._file is None:
            if self.path is None:
                self._file = sys.stdout.buffer
            else:
                try:
                    self._file = open(self.path, "wb")
                except OSError as e:
                    raise cannot_write(self.path, e) from None
        return self._file

    def write(self, columns: dict) -> None:
        if self.fmt == "npz":
            for k, v in columns.items():
                if not isinstance(v, np.ndarray):
                    v = _plain_cells(v, numbers=True)
                self._npz.setdefault(k, []).append(v)
            return
        if self.fmt == "jsonl":
            names = list(columns)
            cells = [_plain_cells(v) for v in columns.values()]
            text = "".join(
                json.dumps(dict(zip(names, row)), allow_nan=False) + "\n" for row in zip(*cells)
            )
            self._sink().write(text.encode())
            return
        import pyarrow as pa

        as_text = self.fmt in ("csv", "tsv")  # CSV has no lists: a tensor is its JSON text
        arrays = {
            k: _text(pa, v) if k in self.text else _arrow(pa, v, as_text)
            for k, v in columns.items()
        }
        if self._writer is None:
            self._types = {k: a.type for k, a in arrays.items()}
            self._types.update(
                {
                    k: pa.string() if k in self.text else pa.float64()
                    for k, a in arrays.items()
                    if pa.types.is_null(a.type)
                }
            )
        for k, a in arrays.items():
            if a.type != self._types[k]:
                try:
                    arrays[k] = a.cast(self._types[k])
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    raise UsageError(f"column {k} changed its type between chunks") from None
        batch = pa.RecordBatch.from_pydict(arrays)
        if self._writer is None:
            self._writer = self._open(batch.schema)
        self._writer.write_batch(batch)

    def _open(self, schema):
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetWriter(self._sink(), schema)
        import pyarrow.csv as pc

        options = pc.WriteOptions(
            delimiter="\t" if self.fmt == "tsv" else ",", quoting_style="needed"
        )
        return pc.CSVWriter(self._sink(), schema, write_options=options)

    def close(self) -> None:
        if self.fmt == "npz":
            arrays = {k: _npz_array(v, k in self.text) for k, v in self._npz.items()}
            np.savez(self._sink(), **arrays)
        elif self._writer is not None:
            self._writer.close()
        if self._file is not None:
            if self.path is not None:
                self._file.close()
            else:
                self._file.flush()


def _text(pa, cells: list):
    """A column of text or empty cells (``error``): all empty in one step."""
    if cells.count(None) == len(cells):
        return pa.nulls(len(cells), pa.string())
    return pa.array(cells, type=pa.string())


def _arrow(pa, column, text: bool):
    """A column as a pyarrow array (for CSV, a list cell as JSON text)."""
    if isinstance(column, np.ndarray):
        return pa.array(column, mask=np.isnan(column), type=pa.float64())
    if hasattr(column, "type"):  # read from the input
        if text and (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
            return pa.array([None if c is None else json.dumps(c) for c in column.to_pylist()])
        return column
    if text and any(isinstance(c, list) for c in column):
        return pa.array([None if c is None else json.dumps(c) for c in column], type=pa.string())
    return pa.array(column)


def _plain_cells(column, numbers: bool = False) -> list:
    """A column as Python values (None: an empty cell; nan too unless ``numbers``)."""
    if hasattr(column, "to_pylist"):
        column = column.to_pylist()
    elif isinstance(column, np.ndarray):
        if numbers:
            return list(column)
        column = column.tolist()
    if numbers:
        return list(column)
    return [None if isinstance(c, float) and c != c else c for c in column]


def _npz_array(parts: list, text: bool):
    if all(isinstance(p, np.ndarray) for p in parts):  # numbers: nan for an empty cell
        return np.concatenate(parts)
    cells = [c for part in parts for c in part]
    sample = [c for c in cells if c is not None]
    if text or (sample and all(isinstance(c, str) for c in sample)):
        return np.array(["" if c is None else c for c in cells])
    if sample and isinstance(sample[0], list):
        shape = np.shape(sample[0])
        return np.array([np.full(shape, np.nan) if c is None else c for c in cells], dtype=float)
    return np.array([np.nan if c is None else c for c in cells], dtype=float)
