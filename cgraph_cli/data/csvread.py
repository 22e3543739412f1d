"""A CSV or TSV file read in batches of rows for ``--rows`` (through pyarrow), and what every
reader of a data file shares: the file opened as the command's input, its column names
checked.

The columns the caller reads as numbers (the program's inputs) are converted by pyarrow's
CSV reader as it parses them, while every cell is a number; every other column is text. At
the first cell of those columns that is not a number, the file is read again as text from
the first row not given yet, every column cast chunk by chunk (see
:func:`cgraph_cli.data.datafiles.to_column`), so that a bad cell fails its row only, with the
same message as ever. Where the reader takes a cell as a number the text cast does not (one
with spaces around it), the text path binds it cell by cell to the same number.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "d.csv")
>>> _ = open(path, "w").write("x,id\\n1.5,a\\n2,b\\n")
>>> import pyarrow as pa
>>> [{k: (str(v.type), v.to_pylist()) for k, v in b.items()} for b in csv_batches(
...     pa, path, "csv", None, ["x"])][1:]
[{'x': ('double', [1.5, 2.0]), 'id': ('string', ['a', 'b'])}]
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import nullcontext
from typing import BinaryIO

from ..core.errors import UsageError, named
from .csvtext import BadRow, block_size, csv_problem, header_names
from .outputs import remember
from .sources import standard_input


def csv_batches(
    pa, path: str, fmt: str, given: str | None, numbers: Collection[str] = ()
) -> Iterator[dict]:
    """A CSV or TSV file's rows in batches, ``numbers`` read as float64 while they can be
    (not from standard input, which cannot be read twice), every other column as text
    (empty cells: null), so that a column of numbers with a word further down fails that row
    only, not the file; split at ``given``, else as the format and the header say. The
    first batch has no row: the columns, before any row is read."""
    delimiter = given or ("\t" if fmt == "tsv" else ",")
    stream = standard_input() if path == "-" else open_input(path)
    with stream if path != "-" else nullcontext():
        header = _header(stream, path)
        unquoted = _unquoted(header)
        if given is None and fmt == "csv" and b"," not in unquoted and b";" in unquoted:
            delimiter = ";"  # as spreadsheets write CSV where the decimal mark is a comma
        names = header_names(header, delimiter, path)
        if not names:
            return
        unique_names(names, path)
        yield {n: pa.array([], type=pa.string()) for n in names}  # the columns, before any row
        first = stream.read(1 << 16)
        if not first:  # a header and no row (pyarrow calls that an empty file)
            return
        reading = _Reading(pa, path, header, names, delimiter)
        typed = [n for n in names if n in numbers] if path != "-" else []
        done = 0  # rows given
        if typed:
            try:
                for batch in reading.batches(_Prepended(first, stream), typed):
                    done += batch.num_rows
                    yield batch_columns(batch)
                return
            except _NotANumber:  # a cell that is not a number: the rest as text
                stream.seek(len(header))
                first = stream.read(1 << 16)
        for batch in reading.batches(_Prepended(first, stream), ()):
            if done >= batch.num_rows:  # read as numbers already
                done -= batch.num_rows
                continue
            yield batch_columns(batch.slice(done) if done else batch)
            done = 0


class _NotANumber(Exception):
    """A column read as numbers holds a cell that is not one."""


class _Reading:
    """How a CSV file's rows are read: pyarrow's streaming reader over a stream of its rows
    (the header read apart), ``numbers`` as float64, the others as text."""

    def __init__(self, pa, path: str, header: bytes, names: list[str], delimiter: str):
        self.pa, self.path, self.header, self.names = pa, path, header, names
        self.delimiter = delimiter

    def batches(self, source, numbers: Collection[str]) -> Iterator:
        import pyarrow.csv as pc

        pa = self.pa
        convert = pc.ConvertOptions(
            column_types={n: pa.float64() if n in numbers else pa.string() for n in self.names},
            null_values=[""],
            strings_can_be_null=True,
        )
        bad, block = BadRow(offset=self.header.count(b"\n")), block_size(self.header)
        parse = pc.ParseOptions(delimiter=self.delimiter, invalid_row_handler=bad)
        # the names given, the header not parsed again: a quoted name may hold a line break
        read = pc.ReadOptions(column_names=self.names, block_size=block)
        try:
            reader = pc.open_csv(
                source, read_options=read, parse_options=parse, convert_options=convert
            )
            try:
                yield from reader
            finally:
                reader.close()  # its reading thread stopped: none is left to abort at exit
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            if numbers and bad.row is None:  # (a row of too many fields is said as ever)
                raise _NotANumber from None
            raise UsageError(csv_problem(e, self.path, self.names, bad, block)) from None


def _unquoted(header: bytes) -> bytes:
    """A header line without its quoted parts (a name may hold a comma or a semicolon).

    >>> _unquoted(b'"a,b";c')
    b';c'
    """
    return b"".join(header.split(b'"')[::2])


#: The most bytes of a CSV header, the column names: a million columns fit, and a name of
#: several megabytes.
HEADER_LIMIT = 1 << 26


def _header(stream, path: str) -> bytes:
    """The header of a CSV file: its first record, which a quoted name with a line break in
    it (``"x\ny",z``) makes more than one line.

    >>> import io
    >>> _header(io.BytesIO(b'"x\\ny",z\\n1,2\\n'), "f.csv")
    b'"x\\ny",z\\n'
    """
    parts = [stream.readline(HEADER_LIMIT + 1)]
    size, quotes = len(parts[0]), parts[0].count(b'"')
    while quotes % 2 and size <= HEADER_LIMIT:  # a quoted name goes on past a line break
        more = stream.readline(HEADER_LIMIT + 1)
        if not more:
            raise UsageError(f"{path}: the header's quote is never closed")
        parts.append(more)
        size, quotes = size + len(more), quotes + more.count(b'"')
    header = b"".join(parts)
    if len(header) > HEADER_LIMIT:
        raise UsageError(f"{path}: the header is longer than {HEADER_LIMIT:,} bytes")
    return header


class _Prepended:
    """A stream that gives ``head`` first, then the rest of ``stream`` (the header line read
    to learn the column names, given back to the CSV reader)."""

    def __init__(self, head: bytes, stream) -> None:
        self.head, self.stream = head, stream
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n < 0:
                data, self.head = self.head + self.stream.read(), b""
                return data
            data, self.head = self.head[:n], self.head[n:]
            return data
        return self.stream.read(n)

    def readable(self) -> bool:
        return True


def unique_names(names: list[str], path: str) -> None:
    """A file's column names are unique: one pass over them (counting each name's copies
    took 100 s for 100,000 columns)."""
    seen: set[str] = set()
    twice: set[str] = set()
    for n in names:
        (twice if n in seen else seen).add(n)
    if twice:
        raise UsageError(f"{path} has two columns named {named(min(twice))}")


def batch_columns(batch) -> dict:
    """A pyarrow record batch as a dict of its columns, by name."""
    return {name: batch.column(k) for k, name in enumerate(batch.schema.names)}


def open_input(path: str) -> BinaryIO:
    """The data file at ``path``, opened for reading and remembered as this command's input,
    so that no output of the command can overwrite it."""
    f = open(path, "rb")  # noqa: SIM115 - the caller closes it
    remember(f.fileno())
    return f
