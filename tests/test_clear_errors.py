"""Errors said in cgraph's words: odd CSV files, folders, pipes, look-alike digits outside
programs. Each runs the command and checks the exit code and the message."""

from __future__ import annotations

import pytest

ODD_CSV = [
    # (file bytes, exit code, what the message says)
    (b"x,y\n1,2\n3\n", 2, "the row 3 has 1 field; the header names 2 columns"),
    (b"x,y\r1,2\r3,4\r", 2, "its lines end in a carriage return alone"),
    (b"\n1,2\n", 2, ":1: the first line is empty; it names the columns"),
    (b"x,,\n1,2,3\n", 2, "has two columns named ''"),
    (b"x,y\n1,\xe92\n", 2, "the column y holds bytes that are not UTF-8 text"),
    (b"x,y\n1," + b"2" * 3_000_000 + b"\n3,4\n", 2, "a line is longer than 1,048,576 bytes"),
]


@pytest.mark.parametrize("data, code, message", ODD_CSV)
def test_an_odd_csv_file_is_said_in_cgraphs_words(cli, tmp_path, data, code, message):
    path = tmp_path / "d.csv"
    path.write_bytes(data)
    result = cli("eval", "z = x * 2", "--rows", str(path))
    assert result.exit_code == code, result.stderr
    assert message in result.stderr
    for internal in ("CSV parse error", "straddl", "Expected 2 columns", "internal error"):
        assert internal not in result.stderr


def test_a_header_longer_than_a_block_is_read(cli, tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("q" * 3_000_000 + ",x\n1,2\n")
    result = cli("eval", "z = x * 2", "--rows", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1].startswith("4")


def test_a_folder_named_as_the_program_is_a_folder(cli, tmp_path, monkeypatch):
    # `cgraph eval progs`, progs/ a folder, said "no value for input 'progs'" (exit 4).
    (tmp_path / "progs").mkdir()
    monkeypatch.chdir(tmp_path)
    result = cli("eval", "progs")
    assert result.exit_code == 2
    assert "progs is a directory, not a program file" in result.stderr
    assert "pass it with -e" in result.stderr
    assert cli("eval", "-e", "progs", "progs=2").stdout == "progs = 2\n"


@pytest.mark.parametrize(
    "program, hints",
    [
        ("y = 2x", ["to multiply, write the operator: 2*x"]),
        ("y = 2 sin(x)", ["to multiply, write the operator: 2*sin(...)"]),
        (
            "y = (x)(x)",
            [
                "to multiply, write the operator: (...)*(...)",
                "separate statements with a newline or ';'",
            ],
        ),
        (
            "y = x x",
            ["to multiply, write the operator: x*x", "separate statements with a newline or ';'"],
        ),
        ("y = sin x", ["to call sin, put its argument in parentheses: sin(...)"]),
    ],
)
def test_a_product_written_as_on_paper_is_answered_with_its_operator(cli, program, hints):
    result = cli("eval", program, "x=1")
    assert result.exit_code == 3  # a syntax error
    assert [line[6:] for line in result.stderr.splitlines() if line.startswith("help: ")] == hints
