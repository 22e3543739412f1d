"""Rows out to a data file, chunk by chunk: CSV and TSV (without quotes where none is needed),
Parquet through pyarrow (the ``data`` extra), JSON Lines, and NumPy's ``.npz`` (held to the
end). The reading side is :mod:`cgraph_cli.data.datafiles`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..core.arrays import np
from ..core.errors import UsageError
from .ahead import Behind, InOrder
from .datafiles import pyarrow
from .outputs import Output

#: Rows a writer holds while a column has no value yet (its type unknown).
_HOLD = 1_000_000
#: Values pyarrow encodes at a time into a Parquet page (its own default: 1,024).
_BATCH = 1 << 16


class RowWriter:
    """Rows out, chunk by chunk. ``write`` takes a dict of columns, each a float64 array (nan:
    an empty cell), a list of Python values (None: empty; lists for tensors, text), or a
    column read from the input (kept as it was); ``close`` finishes the file. ``path`` None
    or ``-``: standard output. To a Parquet file, chunks are written by a thread of their
    own, up to two behind ``write``; to a CSV or TSV file, formatted by two threads, up to
    four under way, and written in order. ``write`` must not change a table it was given
    after; an error writing one is raised by a later ``write`` or by ``close``, which then
    discards the file.

    >>> import os, tempfile, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "out.csv")
    >>> writer = RowWriter(path, "csv")
    >>> writer.write({"y": np.array([1.5, np.nan]), "error": [None, "row 2: log(-1), ..."]})
    >>> writer.close()
    >>> print(open(path).read().strip())
    "y","error"
    1.5,
    ,"row 2: log(-1), ..."
    """

    def __init__(self, path: str | None, fmt: str, text: tuple[str, ...] = ("error",)) -> None:
        self.path = None if path in (None, "-") else path
        self.text = text  # columns of text, even when every cell is empty
        self.fmt = fmt
        self._writer: Any = None
        self._types: dict = {}
        self._pending: list[dict] = []
        self._held = 0
        self._npz: dict[str, list] = {}
        self._empty: tuple = (object(), None)  # a tuple of empty cells seen, and its column
        self._file: Any = None
        self._out: Output | None = None
        # pyarrow's writers let go of Python's lock: to a file, Parquet is written behind the
        # caller, CSV formatted by two threads at once (its numbers as text: most of the time)
        to_file = self.path is not None
        self._behind = Behind(self._write_now) if to_file and fmt == "parquet" else None
        self._formats = (
            InOrder(_csv_bytes, self._put) if to_file and fmt in ("csv", "tsv") else None
        )
        if fmt not in ("jsonl", "npz"):
            pyarrow(fmt)  # before any work: a missing extra is said first

    def _sink(self):
        if self._file is None:
            if self.path is None:
                self._file = sys.stdout.buffer
                if self.fmt in ("csv", "tsv") and sys.stdout.isatty():
                    self._file = _Terminal(self._file)
            else:
                self._out = Output(self.path)
                self._file = self._out.file
        return self._file

    def write(self, columns: dict) -> None:
        try:
            if self._behind is not None:
                self._behind(columns)
            else:
                self._write_now(columns)
        except OSError as e:
            raise self._named(e) from None

    def _write_now(self, columns: dict) -> None:
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
            k: self._text(pa, v) if k in self.text else _arrow(pa, v, as_text)
            for k, v in columns.items()
        }
        if self._writer is None:
            # The types come from the first rows that have a value in every column: until
            # then (a column whose rows all failed so far), batches wait here.
            for k, a in arrays.items():
                if not pa.types.is_null(a.type):
                    self._types.setdefault(k, a.type)
            self._pending.append(arrays)
            self._held += len(next(iter(arrays.values()), ()))
            if len(self._types) == len(arrays) or self._held >= _HOLD:
                self._start(pa)
            return
        self._write(pa, arrays)

    def _text(self, pa, cells):
        """A column of text (``error``): the one made last time when ``cells`` is the same
        tuple of empty cells again (run_rows gives one such tuple to every chunk where no
        row failed: reading its cells again costs a tenth of writing the chunk)."""
        if cells is self._empty[0]:
            return self._empty[1]
        column = _text(pa, cells)
        if cells.__class__ is tuple and column.null_count == len(column):
            self._empty = (cells, column)
        return column

    def _start(self, pa) -> None:
        """Settle the types (a column with no value yet: text or numbers) and write what
        waited."""
        pending, self._pending = self._pending, []
        for k in pending[0]:
            self._types.setdefault(k, pa.string() if k in self.text else pa.float64())
        for arrays in pending:
            self._write(pa, arrays)

    def _write(self, pa, arrays: dict) -> None:
        csv = self.fmt in ("csv", "tsv")
        for k, a in arrays.items():
            if a.type != self._types[k]:
                try:
                    arrays[k] = a.cast(self._types[k])
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    if csv:  # CSV has no types: written as it comes
                        continue
                    raise UsageError(
                        f"column {k} holds {self._types[k]} in the first rows and {a.type} "
                        f"later: {self.fmt} needs one type per column",
                        hints=["write JSON Lines (-o out.jsonl), which has no types"],
                    ) from None
        batch = pa.RecordBatch.from_pydict(arrays)
        if csv:  # a batch at a time, the header first: each batch may have its own types
            work = (batch, self._writer is None, "\t" if self.fmt == "tsv" else ",")
            self._writer = self._writer or "started"
            if self._formats is not None:
                self._formats(work)
            else:
                self._put(_csv_bytes(work))
            return
        if self._writer is None:
            self._writer = self._open(batch.schema)
        self._writer.write_batch(batch)

    def _open(self, schema):
        """The Parquet writer: dictionary encoding for the columns read from the input (text,
        lists), not for the numbers, whose values seldom repeat (pyarrow tries a dictionary
        per row group and gives up once it is large: 8x the time of the plain encoding, and a
        larger file, for a chunk of random float64 values), nor for the error column, whose
        every message names its row. Values are encoded a chunk at a time, not pyarrow's 1,024
        (a row group of 65,536 numbers: 3% less time)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        encoded = [
            f.name for f in schema if not pa.types.is_floating(f.type) and f.name not in self.text
        ]
        return pq.ParquetWriter(
            self._sink(), schema, use_dictionary=encoded, write_batch_size=_BATCH
        )

    def _put(self, data: bytes) -> None:
        self._sink().write(data)

    def close(self) -> None:
        try:
            self._close()
        except OSError as e:
            self.discard()
            raise self._named(e) from None
        except BaseException:
            self.discard()
            raise

    def _named(self, error: OSError) -> Exception:
        """A failed write (a full disk) said of the file written, not of standard output as
        an error without a file name is (exit 2 all the same)."""
        if self.path is None or error.filename is not None:
            return error
        from ..core.errors import cannot_write

        return cannot_write(self.path, error)

    def _close(self) -> None:
        if self._behind is not None:
            self._behind.finish()
        if self.fmt == "npz":
            arrays = {k: _npz_array(k, v, k in self.text) for k, v in self._npz.items()}
            _savez(self._sink(), arrays)
        else:
            if self._pending:
                import pyarrow as pa

                self._start(pa)
            if self._formats is not None:
                self._formats.finish()
            if self._writer is not None and self.fmt == "parquet":
                self._writer.close()
        if self._out is not None:
            self._out.done()
        elif self._file is not None:
            self._file.flush()

    def discard(self) -> None:
        """Give up (an error, Ctrl-C): a file that was there stays as it was."""
        if self._behind is not None:
            self._behind.stop()
        if self._formats is not None:
            self._formats.stop()
        if self.fmt == "parquet" and self._writer is not None:
            writer, self._writer = self._writer, None
            try:  # closed now, not when collected (onto a file closed by then)
                writer.close()
            except (OSError, ValueError):
                pass
        if self._out is not None:
            self._out.discard()


class _Terminal:
    """Rows on a terminal: a cell's control characters (an escape sequence in the data, say)
    shown as escapes, not obeyed; a file or a pipe gets the cells byte for byte."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        from ..core.errors import visible

        text = visible(data.decode("utf-8", errors="replace"), keep="\n\t")
        self.stream.write(text.encode())

    def flush(self) -> None:
        self.stream.flush()


def _csv_bytes(work: tuple) -> bytes:
    """A batch as CSV text: ``(batch, header, delimiter)``, the header line first if asked;
    no quotes where none is needed (pyarrow's "needed" quotes all text)."""
    import pyarrow as pa
    import pyarrow.csv as pc

    batch, header, delimiter = work
    try:
        return _csv_text(pc, batch, header, delimiter, "none")
    except pa.ArrowInvalid:  # a comma, a quote or a line break in some cell
        return _csv_text(pc, batch, header, delimiter, "needed")


def _csv_text(pc, batch, header: bool, delimiter: str, quoting: str) -> bytes:
    import io

    buffer = io.BytesIO()
    options = pc.WriteOptions(include_header=header, delimiter=delimiter, quoting_style=quoting)
    pc.write_csv(batch, buffer, write_options=options)
    return buffer.getvalue()


def _text(pa, cells: list):
    """A column of text or empty cells (``error``): all empty in one step."""
    if cells.count(None) == len(cells):
        return pa.nulls(len(cells), pa.string())
    return pa.array(cells, type=pa.string())


def _arrow(pa, column, text: bool):
    """A column as a pyarrow array (for CSV, a list cell as JSON text)."""
    if isinstance(column, np.ndarray):
        with np.errstate(all="ignore"):  # (a sum that overflows is no nan)
            # squares, by BLAS's dot (a third of a sum's time): nan only where a value is
            total = np.vdot(column, column) if column.size else 0.0
        if total == total:  # no nan in the column (one would make the sum nan): no mask
            return pa.array(column, type=pa.float64())
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


def _savez(file, arrays: dict) -> None:
    """``np.savez(file, **arrays)``: a zip of ``.npy`` files, uncompressed; the zip file
    closed on an error too (NumPy before 2.1 left it to be closed when collected, onto a file
    closed by then: a full disk printed "Exception ignored in ZipFile.__del__" and its
    traceback under cgraph's message)."""
    import zipfile

    with zipfile.ZipFile(file, mode="w", compression=zipfile.ZIP_STORED) as zf:
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(value), allow_pickle=False)


def _npz_array(name: str, parts: list, text: bool):
    """A column as one array of the rows (nan for an empty cell; text: "")."""
    if all(isinstance(p, np.ndarray) for p in parts):
        return np.concatenate(parts) if parts else np.zeros(0)
    cells = [c for part in parts for c in part]
    sample = [c for c in cells if c is not None]
    if text or (sample and all(isinstance(c, str) for c in sample)):
        return np.array(["" if c is None else str(c) for c in cells])
    shapes = {np.shape(c) for c in sample}
    if len(shapes) > 1:
        raise UsageError(
            f"the rows of {name} have different shapes: an .npz array needs one",
            hints=["write Parquet or JSON Lines (-o out.parquet), whose cells are lists"],
        )
    shape = shapes.pop() if shapes else ()
    return np.array([np.full(shape, np.nan) if c is None else c for c in cells], dtype=float)
