"""Data files at the limit (issue 28): a CSV file's input columns read as numbers by the CSV
reader while every cell is one, and as text from the first cell that is not (the rows as
before: a bad cell fails its row, with the same message); chunks read ahead and written
behind by threads of their own, in order, with errors said where they were."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from cgraph_cli import CgraphError, parse, run_rows
from cgraph_cli.data.datafiles import read_chunks
from cgraph_cli.data.datawriter import RowWriter

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS = 150_000  # about 2.5 MB: the CSV reader's blocks are 1 MB, so the file takes three


def _csv(tmp_path, cells: dict[int, str], name: str = "d.csv"):
    """x, c and id for ROWS rows, ``cells`` in place of some cells of x."""
    rng = np.random.default_rng(5)
    x = [repr(float(v)) for v in rng.uniform(0.1, 4.0, ROWS)]
    for r, text in cells.items():
        x[r] = text
    c = rng.uniform(-1, 1, ROWS).tolist()
    lines = [f"{a},{b!r},r{k}" for k, (a, b) in enumerate(zip(x, c))]
    path = tmp_path / name
    path.write_text("x,c,id\n" + "\n".join(lines) + "\n")
    return str(path)


def _cells(table: dict) -> dict:
    def plain(v):
        v = v.to_pylist() if hasattr(v, "to_pylist") else v.tolist() if hasattr(v, "tolist") else v
        return ["nan" if c != c else c for c in v]

    return {k: plain(v) for k, v in table.items()}


def _run(path: str, numbers, mode: str = "eval"):
    graph = parse("y = sqrt(x) * c + log(x)")
    tables: list[dict] = []
    chunks = read_chunks([path], "csv", 65_536, numbers=numbers)
    result = run_rows(
        graph, chunks, mode=mode, keep=["id"], write=lambda t: tables.append(_cells(t))
    )
    return result, tables


@pytest.mark.parametrize("mode", ["eval", "grad"])
def test_a_bad_cell_in_a_later_block_reads_the_rest_as_text_with_the_rows_as_before(tmp_path, mode):
    bad = {7: "", 9: "nan", 100: '"2.5"', 120_000: "abc", 120_001: "-1", 149_999: "1e400"}
    path = _csv(tmp_path, bad)
    typed, tables = _run(path, ["x", "c"], mode)
    text, before = _run(path, (), mode)  # every cell read as text, as every file was
    assert tables == before
    assert typed.errors == text.errors == 5
    errors = [e for t in tables for e in t["error"] if e is not None]
    assert errors[0] == f"row 8: the cell of x is empty ({path})"
    assert errors[2].startswith("row 120001: the value of 'x' is not a number: 'abc'")
    assert errors[3].startswith("row 120002: sqrt(-1) is undefined")


def test_input_columns_are_read_as_numbers_until_a_cell_is_not_one(tmp_path):
    path = _csv(tmp_path, {100_000: "abc"})
    chunks = [c for _, _, c in read_chunks([path], "csv", 65_536, numbers=["x"])]
    assert [str(c["x"].type) for c in chunks] == ["double", "string", "string"]
    assert all(str(c["id"].type) == "string" for c in chunks)  # not an input: as read
    clean = _csv(tmp_path, {}, "clean.csv")
    chunks = [c for _, _, c in read_chunks([clean], "csv", 65_536, numbers=["x", "c"])]
    assert [str(c["x"].type) for c in chunks] == ["double"] * 3
    assert sum(len(c["x"]) for c in chunks) == ROWS


def test_a_kept_input_column_is_written_as_it_was_read(cli, tmp_path):
    path = tmp_path / "k.csv"
    path.write_text('x,id\n1.50,a\n,b\n 2,c\n"3",d\n')
    out = tmp_path / "out.csv"
    done = cli("eval", "-e", "y = 2 * x", "--rows", str(path), "--keep", "x", "-o", str(out))
    assert done.exit_code == 4  # a row failed
    assert out.read_text().splitlines()[1:] == [
        "1.50,3,",
        f",,row 2: the cell of x is empty ({path})",
        " 2,4,",
        "3,6,",
    ]


def test_a_row_of_too_many_fields_is_said_after_the_rows_before_it(tmp_path):
    path = _csv(tmp_path, {130_000: "1,2"})  # a quoted comma would be one cell: this is two

    def read(numbers):
        given = []
        with pytest.raises(CgraphError) as caught:
            for _, start, chunk in read_chunks([path], "csv", 65_536, numbers=numbers):
                given.append((start, len(chunk["x"])))
        return given, caught.value.message

    given, message = read(["x", "c"])
    assert (given, message) == read(())  # as the text path says it
    assert given == [(0, 65_536)]
    assert message.startswith(f"{path}: the row 1,2,")
    assert message.endswith(",r130000 has 4 fields; the header names 3 columns")


def test_a_reader_left_early_stops_its_thread(tmp_path):
    path = _csv(tmp_path, {})
    chunks = read_chunks([path], "csv", 1_000, numbers=["x"])
    next(chunks)
    chunks.close()
    names = [t.name for t in threading.enumerate()]
    assert "cgraph-read-ahead" not in names


def test_an_error_writing_behind_is_raised_by_close_and_the_file_discarded(tmp_path):
    out = tmp_path / "out.parquet"
    out.write_bytes(b"the file that was there")
    writer = RowWriter(str(out), "parquet")
    writer.write({"y": np.array([1.0, 2.0]), "error": [None, None]})
    writer.write({"y": ["a", "b"], "error": [None, None]})  # text where numbers were
    with pytest.raises(CgraphError, match="column y holds double in the first rows"):
        writer.write({"y": np.array([3.0]), "error": [None]})
        writer.close()
    assert out.read_bytes() == b"the file that was there"
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]  # no temporary file left


def test_rows_written_behind_are_the_rows_in_order(tmp_path):
    out = tmp_path / "out.parquet"
    writer = RowWriter(str(out), "parquet")
    for k in range(20):
        writer.write({"y": np.arange(k * 100, (k + 1) * 100, dtype=float), "error": (None,) * 100})
    writer.close()
    assert pq.read_table(out)["y"].to_pylist() == list(np.arange(2000.0))


def test_csv_formatted_by_threads_is_the_text_written_in_one(tmp_path, capsysbinary):
    def tables():
        for k in range(12):  # some chunks hold a comma or a quote: those are quoted
            errors = [None] * 50
            if k % 5 == 2:
                errors[3] = f'row {k * 50 + 4}: log(-1), "undefined"'
            yield {"y": np.linspace(k, k + 1, 50), "error": errors}

    out = tmp_path / "out.csv"
    writer = RowWriter(str(out), "csv")
    for table in tables():
        writer.write(table)
    writer.close()
    at_once = RowWriter(None, "csv")  # standard output: each chunk formatted and written in turn
    for table in tables():
        at_once.write(table)
    at_once.close()
    text = out.read_bytes()
    assert text == capsysbinary.readouterr().out
    assert text.count(b'"y","error"') == 1 and text.startswith(b'"y","error"\n0,\n')
    assert b'"row 104: log(-1), ""undefined"""' in text


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_column_of_empty_cells_given_again_is_written_as_given_each_time(tmp_path, fmt):
    # RowWriter keeps the column it made of a tuple of empty cells (run_rows gives one such
    # tuple to each chunk where no row failed): chunks with an error between are their own.
    none = (None,) * 3
    chunks = [none, [None, "row 5: log(-1) is undefined", None], none, (None, None, "bad")]
    path = str(tmp_path / f"out.{fmt}")
    writer = RowWriter(path, fmt)
    for k, errors in enumerate(chunks):
        writer.write({"y": np.full(3, float(k)), "error": errors})
    writer.close()
    table = pq.read_table(path) if fmt == "parquet" else pa.csv.read_csv(path)
    assert table["y"].to_pylist() == [float(k) for k in range(4) for _ in range(3)]
    empty = None if fmt == "parquet" else ""  # (a CSV file's empty cell reads as "")
    errors = [empty if c is None else c for c in table["error"].to_pylist()]
    assert errors == [*(empty,) * 4, "row 5: log(-1) is undefined", *(empty,) * 6, "bad"]
