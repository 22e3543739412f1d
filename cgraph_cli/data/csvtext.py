"""CSV and TSV text for ``--rows``: the header line's names, and what is wrong with a file said
in cgraph's words, with the line, rather than the CSV reader's (pyarrow's ``Expected 2
columns, got 1``, ``straddling object straddles two block boundaries``).

>>> header_names(b"x,y\\n", ",", "d.csv")
['x', 'y']
>>> header_names(b"\\n", ",", "d.csv")
Traceback (most recent call last):
cgraph_cli.core.errors.UsageError: error: d.csv:1: the first line is empty; it names the columns
"""

from __future__ import annotations

import re

from ..core.errors import UsageError, named

#: Bytes the CSV reader takes at once, at least; a line must fit in one block.
BLOCK = 1 << 20

#: The delimiters ``--delimiter`` takes, by the names it takes them by.
DELIMITERS = {",": ",", ";": ";", "|": "|", "\t": "\t", "\\t": "\t", "tab": "\t"}


def delimiter_char(text: str) -> str:
    r"""The delimiter ``--delimiter TEXT`` names: ``,``, ``;``, ``|``, or a tab (``tab``,
    ``\t`` or the character); anything else is a :class:`UsageError`.

    >>> delimiter_char(";"), delimiter_char("tab"), delimiter_char("\\t") == delimiter_char("\t")
    (';', '\t', True)
    >>> delimiter_char(":")
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: --delimiter ':' is not one cgraph reads
    help: give one of , ; | or tab (\t)
    """
    found = DELIMITERS.get(text.lower() if text.isalpha() else text)
    if found is None:
        shown = repr(text) if len(text) < 20 else repr(text[:17]) + "..."
        raise UsageError(
            f"--delimiter {shown} is not one cgraph reads",
            hints=["give one of , ; | or tab (\\t)"],
        )
    return found


def header_names(header: bytes, delimiter: str, path: str) -> list[str]:
    """The column names of a header line (a file of no bytes: none); a long name is read
    whole (the csv module's field limit, 128 KiB, would refuse it with an internal error)."""
    import csv

    if not header:
        return []
    line = header.decode("utf-8-sig", "replace")
    if not line.strip("\r\n"):
        raise UsageError(f"{path}:1: the first line is empty; it names the columns")
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(line) + 1))
    try:
        return next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error as e:
        if "\r" in line.rstrip("\r\n"):
            raise UsageError(
                f"{path}: its lines end in a carriage return alone (\\r)",
                hints=["save it with \\n or \\r\\n line ends"],
            ) from None
        raise UsageError(f"{path}:1: cannot read the header: {e}") from None
    finally:
        csv.field_size_limit(limit)


def block_size(header: bytes) -> int:
    """The CSV reader's block: the header and a line or two of its length fit in one."""
    return max(BLOCK, 4 * len(header))


class BadRow:
    """Remembers the first row whose number of fields is not the header's (the CSV reader's
    handler of invalid rows), to say it with its line."""

    def __init__(self, offset: int = 0) -> None:
        self.row: tuple[int, int, int | None, str] | None = None
        self.offset = offset  # lines before the reader's first (the header, read apart)

    def __call__(self, row) -> str:
        if self.row is None:
            number = None if row.number is None else row.number + self.offset
            self.row = (row.expected_columns, row.actual_columns, number, row.text)
        return "error"


def csv_problem(e: Exception, path: str, names: list[str], bad: BadRow, block: int) -> str:
    """What is wrong with a CSV file, from the reader's error ``e``, in cgraph's words.

    >>> bad = BadRow(); bad.row = (2, 1, 3, "7")
    >>> csv_problem(ValueError("Row #3: Expected 2 columns"), "d.csv", ["x", "y"], bad, 1)
    'd.csv:3: the row 7 has 1 field; the header names 2 columns'
    """
    text = " ".join(str(e).split())
    if bad.row is not None:
        expected, actual, number, line = bad.row
        where = f"{path}:{number}" if number is not None else path
        fields = f"{actual} field{'' if actual == 1 else 's'}"
        return f"{where}: the row {named(line)} has {fields}; the header names {expected} columns"
    utf8 = re.search(r"column #(\d+): CSV conversion error to string: invalid UTF8", text)
    if utf8 and int(utf8.group(1)) < len(names):
        column = named(names[int(utf8.group(1))])
        return f"{path}: the column {column} holds bytes that are not UTF-8 text"
    if "straddling object" in text:
        return f"{path}: a line is longer than {block:,} bytes, the most cgraph reads at once"
    if "cannot infer number of columns" in text:
        return f"{path}:1: cannot read the header line"
    return f"cannot read {path}: {text[:300]}"
