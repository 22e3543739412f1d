"""Hardening of what users pass besides the program: SOURCE files, bindings, --expect values.

No input may give a wrong answer, a crash (exit 70), a hang, or unbounded memory use. A file
that cannot be used is exit 2 ("cannot read FILE: why"); a value typed on the command line that
cannot be used is exit 4. Binary test files are built here, in tmp_path.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

import cgraph_cli
from cgraph_cli.core.errors import BindingError
from cgraph_cli.data import sources

SUM = "y = sum(W)"


def error_of(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    return result.stderr


def npy_bytes(array, **kwargs) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, **kwargs)
    return buffer.getvalue()


def npz_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def npy_header(shape: tuple, descr: str = "<f8") -> bytes:
    """A version 1.0 .npy header, as numpy.save writes it, for any claimed shape."""
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


def claim_unpacked_size(data: bytes, size: int) -> bytes:
    """The zip with its (only) member's uncompressed size in the central directory replaced."""
    at = data.index(b"PK\x01\x02") + 24
    return data[:at] + size.to_bytes(4, "little") + data[at + 4 :]


def claim_member_count(data: bytes, count: int) -> bytes:
    at = data.rindex(b"PK\x05\x06")
    fields = count.to_bytes(2, "little") * 2
    return data[: at + 8] + fields + data[at + 12 :]


# 1. binding files that are not what they claim -------------------------------------------------
GOOD = np.array([1.0, 2.0])
ONE_ARRAY_FILES = {  # file name -> (bytes, the reason after "cannot read FILE: ")
    "empty.npy": (b"", "it is empty"),
    "archive.npy": (npz_bytes(W=GOOD), "it is an .npz archive of named arrays, not one array"),
    "cut.npy": (npy_bytes(GOOD)[:-4], "it is truncated: its header promises 16 bytes of data"),
    "huge.npy": (
        npy_header((10**12,)) + bytes(16),
        "it is truncated: its header promises 7.3 TiB of data (a (1000000000000,) array",
    ),
    "longer.npy": (npy_bytes(GOOD) + b"\0" * 8, "it has 8 bytes after the data its header"),
    "damaged.npy": (npy_header((2,))[:20] + b"}" * 200, "it has a damaged NumPy header"),
    "text.npy": (b"[1, 2]", "it is not a NumPy .npy file"),
    "deep.npy": (npy_header((1,) * 65) + bytes(8), "it has 65 axes; arrays have at most 64"),
}
ARCHIVES = {
    "empty.npz": (b"", "it is empty"),
    "single.npz": (npy_bytes(GOOD), "it is a single NumPy array (.npy), not an .npz archive"),
    "text.npz": (b'{"W": [1, 2]}', "it is not an .npz archive"),
    "cut.npz": (npz_bytes(W=GOOD)[:100], "it is not a readable .npz (zip) archive"),
    "garbage.npz": (
        npz_bytes(W=GOOD)[:30] + b"garbage" * 20,
        "it is not a readable .npz (zip) archive",
    ),
    "bomb.npz": (
        claim_unpacked_size(zip_bytes({"W.npy": npy_bytes(GOOD)}), 2**32 - 1),
        "its arrays would unpack to 4.0 GiB, more than the 256 MiB cgraph reads",
    ),
    "members.npz": (
        claim_member_count(zip_bytes({"W.npy": npy_bytes(GOOD)}), 60_000),
        "it lists more than 10,000 members",
    ),
    "notes.npz": (
        zip_bytes({"W.npy": npy_bytes(GOOD), "notes.txt": b"1.5"}),
        "its member 'notes.txt' is not a NumPy array (.npy)",
    ),
    "cutmember.npz": (
        zip_bytes({"W.npy": npy_bytes(GOOD)[:-8]}),
        "its array 'W' is truncated: its header promises 16 bytes",
    ),
}


@pytest.mark.parametrize("name", ONE_ARRAY_FILES)
def test_a_file_that_is_not_one_npy_array_is_exit_2(cli, tmp_path, name):
    data, reason = ONE_ARRAY_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    err = error_of(cli("eval", SUM, f"W=@{path}"), 2)
    assert err.startswith(f"cgraph: error: cannot read {path}: {reason}")


@pytest.mark.parametrize("name", ARCHIVES)
def test_a_file_that_is_not_an_npz_archive_of_arrays_is_exit_2(cli, tmp_path, name):
    data, reason = ARCHIVES[name]
    path = tmp_path / name
    path.write_bytes(data)
    err = error_of(cli("eval", SUM, "--bindings", str(path)), 2)
    assert err.startswith(f"cgraph: error: cannot read {path}: {reason}")


def test_an_npz_with_two_arrays_of_one_name_is_exit_2(cli, tmp_path):
    path = tmp_path / "twice.npz"
    with zipfile.ZipFile(path, "w") as archive, pytest.warns(UserWarning, match="Duplicate"):
        archive.writestr("W.npy", npy_bytes(GOOD))
        archive.writestr("W.npy", npy_bytes(GOOD * 2))
    err = error_of(cli("eval", SUM, "--bindings", str(path)), 2)
    assert "it holds two arrays named 'W'" in err


def test_the_kind_of_a_file_comes_from_its_bytes_where_that_is_unambiguous(cli, tmp_path):
    (tmp_path / "w.json").write_bytes(npy_bytes(GOOD))  # a .npy by any other name
    (tmp_path / "b.data").write_bytes(npz_bytes(W=GOOD * 2))
    result = cli("eval", SUM, f"W=@{tmp_path / 'w.json'}", "--format", "plain")
    assert result.exit_code == 0 and result.stdout == "y=3\n"
    result = cli("eval", SUM, "--bindings", str(tmp_path / "b.data"), "--format", "plain")
    assert result.exit_code == 0 and result.stdout == "y=6\n"


def test_a_huge_header_is_refused_without_allocating(cli, tmp_path):
    # The header claims 8 PB; only the header and 16 bytes exist. Must not try to allocate.
    path = tmp_path / "w.npy"
    path.write_bytes(npy_header((10**15,)) + bytes(16))
    err = error_of(cli("eval", SUM, f"W=@{path}"), 2)
    assert "it is truncated: its header promises 7.1 PiB of data" in err


# 2. no pickle is ever loaded --------------------------------------------------------------------
class _Touch:
    """Unpickling this creates a file: the proof that a pickle ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_pickled_object_arrays_are_refused_and_never_run(cli, tmp_path):
    marker = tmp_path / "pickle-ran"
    evil = np.array([_Touch(marker), 1.0], dtype=object)
    (tmp_path / "w.npy").write_bytes(npy_bytes(evil, allow_pickle=True))
    buffer = io.BytesIO()
    np.savez(buffer, W=evil)
    (tmp_path / "w.npz").write_bytes(buffer.getvalue())
    (tmp_path / "raw.npy").write_bytes(pickle.dumps(_Touch(marker)))

    err = error_of(cli("eval", SUM, f"W=@{tmp_path / 'w.npy'}"), 2)
    assert "it holds pickled Python objects (object), which cgraph never loads" in err
    err = error_of(cli("eval", SUM, "--bindings", str(tmp_path / "w.npz")), 2)
    assert "its array 'W' holds pickled Python objects (object), which cgraph never loads" in err
    err = error_of(cli("eval", SUM, f"W=@{tmp_path / 'raw.npy'}"), 2)
    assert "it is not a NumPy .npy file" in err
    assert not marker.exists()


def test_no_code_path_can_unpickle_user_data():
    """np.load is not used at all (cgraph parses .npy/.npz itself), nor pickle."""
    package = Path(cgraph_cli.__file__).parent
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"allow_pickle\s*=\s*True", text), path
        assert not re.search(r"\b(np|numpy)\.load\(", text), path
        assert not re.search(
            r"^\s*(import|from)\s+(pickle|_pickle|dill|joblib|shelve)\b", text, re.MULTILINE
        ), path


# 3. deep nesting --------------------------------------------------------------------------------
DEEP = "[" * 10_000 + "1" + "]" * 10_000


def test_deep_nesting_on_the_command_line_is_exit_4(cli):
    err = error_of(cli("eval", SUM, f"W={DEEP}"), 4)
    assert "the value of 'W' is nested 10000 levels deep; arrays have at most 64 axes" in err
    err = error_of(cli("eval", SUM, "W=" + "[" * 65 + "1" + "]" * 65), 4)
    assert "nested 65 levels deep" in err
    result = cli("eval", SUM, "W=" + "[" * 64 + "1" + "]" * 64, "--format", "plain")
    assert result.exit_code == 0 and result.stdout == "y=1\n"


def test_deep_nesting_in_a_file_and_in_expect_is_exit_2(cli, tmp_path):
    for depth in (100, 10_000):
        path = tmp_path / f"deep{depth}.json"
        path.write_text('{"W": ' + "[" * depth + "1" + "]" * depth + "}")
        err = error_of(cli("eval", SUM, "--bindings", str(path)), 2)
        assert f"cannot read {path}: " in err and "more than 64 levels deep" in err
        path.write_text("[" * depth + "1" + "]" * depth)
        assert "more than 64 levels deep" in error_of(cli("eval", SUM, f"W=@{path}"), 2)
    err = error_of(cli("check", SUM, "W=[1]", "--expect", f"W={DEEP}"), 2)
    assert "the expected value of 'W' is nested 10000 levels deep" in err


def test_deep_nesting_from_python_is_a_binding_error():
    deep: list = [1.0]
    for _ in range(500):
        deep = [deep]
    with pytest.raises(BindingError, match="nested more than 64 levels deep"):
        cgraph_cli.evaluate(SUM, {"W": deep})


# 4. integers too long to convert ----------------------------------------------------------------
DIGITS = "7" * 5000


def test_integers_of_5000_digits(cli, tmp_path):
    err = error_of(cli("eval", SUM, f"W=[1, {DIGITS}]"), 4)
    assert "the value of 'W' holds an integer of 5,000 digits, too large for a float64" in err
    err = error_of(cli("eval", "y = x", f"x={DIGITS}"), 4)
    assert "the value of 'x' is not a finite number: '777" in err and len(err) < 200
    path = tmp_path / "b.json"
    path.write_text(f'{{"x": {DIGITS}}}')
    err = error_of(cli("eval", "y = x", "--bindings", str(path)), 2)
    assert f"cannot read {path}: it holds an integer of 5,000 digits" in err
    err = error_of(cli("check", SUM, "W=[1]", "--expect", f"W=[{DIGITS}]"), 2)
    assert "the expected value of 'W' holds an integer of 5,000 digits" in err
    err = error_of(cli("check", "y = x", "x=1", "--expect", f"y={DIGITS}"), 2)
    assert "an expectation is NAME=NUMBER or NAME=[ARRAY]" in err and len(err) < 300
    path.write_text('{"x": 1e400}')
    assert "the value of 'x' is not a finite number" in error_of(
        cli("eval", "y = x", "--bindings", str(path)), 2
    )


def test_huge_python_integers_are_binding_errors():
    with pytest.raises(BindingError, match="not a finite number: an integer of about 5,000"):
        cgraph_cli.evaluate("y = x", {"x": 10**5000})
    with pytest.raises(BindingError, match="not a finite number"):
        cgraph_cli.evaluate(SUM, {"W": [1, 10**400]})


# 5. dtypes --------------------------------------------------------------------------------------
REFUSED = [
    (np.array([1 + 2j]), "complex numbers (complex128)"),
    (np.array([True, False]), "true/false values (bool)"),
    (np.array(["1.5"]), "text (<U3)"),
    (np.array([b"1.5"]), "bytes (|S3)"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "dates (datetime64[D])"),
    (np.array([5], dtype="timedelta64[s]"), "time spans (timedelta64[s])"),
    (np.zeros(2, dtype=[("a", "<f8")]), "records ([('a', '<f8')])"),
]


@pytest.mark.parametrize("array, words", REFUSED, ids=[str(a.dtype) for a, _ in REFUSED])
def test_arrays_of_anything_but_real_numbers_are_refused(cli, tmp_path, array, words):
    reason = f"holds {words}; cgraph computes with real numbers"
    (tmp_path / "w.npy").write_bytes(npy_bytes(array))
    (tmp_path / "w.npz").write_bytes(npz_bytes(W=array))
    err = error_of(cli("eval", SUM, f"W=@{tmp_path / 'w.npy'}"), 2)
    assert f"cannot read {tmp_path / 'w.npy'}: it {reason}" in err
    err = error_of(cli("eval", SUM, "--bindings", str(tmp_path / "w.npz")), 2)
    assert f"cannot read {tmp_path / 'w.npz'}: its array 'W' {reason}" in err
    with pytest.raises(BindingError, match=re.escape(f"the value of 'W' {reason}")):
        cgraph_cli.evaluate(SUM, {"W": array})


@pytest.mark.parametrize(
    "value, words",
    [
        ("[1, true]", "true/false values (booleans)"),
        ('["1", 2]', "text (strings)"),
        ("[[1, 2], [null, 3]]", "null"),
        ('[{"a": 1}]', "JSON objects"),
    ],
)
def test_json_values_of_anything_but_numbers_are_refused(cli, tmp_path, value, words):
    reason = f"holds {words}; cgraph computes with real numbers"
    assert f"the value of 'W' {reason}" in error_of(cli("eval", SUM, f"W={value}"), 4)
    path = tmp_path / "b.json"
    path.write_text(f'{{"W": {value}}}')
    err = error_of(cli("eval", SUM, "--bindings", str(path)), 2)
    assert f"cannot read {path}: the value of 'W' {reason}" in err


def test_booleans_and_complex_numbers_from_python_are_refused():
    with pytest.raises(BindingError, match="is true or false"):
        cgraph_cli.evaluate("y = x", {"x": True})
    with pytest.raises(BindingError, match="is a complex number"):
        cgraph_cli.evaluate("y = x", {"x": 1 + 2j})


def test_integers_and_floats_of_any_precision_and_layout_are_read_but_not_booleans(cli, tmp_path):
    matrix = [[1, 0], [0, 1]]
    for dtype in ["int8", "uint16", ">i8", "float16", "float32", ">f8", "longdouble"]:
        np.save(tmp_path / "w.npy", np.asfortranarray(np.array(matrix, dtype=dtype) * [[1], [3]]))
        result = cli("eval", "y = W @ [1, 10]", f"W=@{tmp_path / 'w.npy'}", "--format", "plain")
        assert (result.exit_code, result.stdout) == (0, "y=[1,30]\n"), dtype
    np.save(tmp_path / "w.npy", np.array(matrix, dtype=bool))  # 1 and 0 before, silently
    assert "it holds true/false values (bool)" in error_of(
        cli("eval", "y = W @ [1, 10]", f"W=@{tmp_path / 'w.npy'}"), 2
    )


def test_bad_values_in_a_file_are_exit_2_and_on_the_command_line_exit_4(cli, tmp_path):
    np.savez(tmp_path / "w.npz", W=np.array([1.0, np.nan]))
    err = error_of(cli("eval", SUM, "--bindings", str(tmp_path / "w.npz")), 2)
    assert "cannot read" in err and "the value of 'W' holds a value that is not a finite" in err
    (tmp_path / "b.json").write_text('{"W": [[1, 2], [3]]}')
    err = error_of(cli("eval", SUM, "--bindings", str(tmp_path / "b.json")), 2)
    assert "the value of 'W' is not a rectangular array of numbers" in err
    assert "not a rectangular array" in error_of(cli("eval", SUM, "W=[[1, 2], [3]]"), 4)


# 6. files ---------------------------------------------------------------------------------------
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize(
    "args, what",
    [
        (["-f", "/dev/zero"], "a program file"),
        (["/dev/zero"], "a program file"),
        (["y = x", "x=@/dev/zero"], "a JSON file"),
        (["y = x", "--bindings", "/dev/zero"], "a bindings file"),
    ],
)
def test_endless_files_stop_at_the_limit(cli, args, what):
    err = error_of(cli("eval", *args), 2)
    assert err.startswith(f"cgraph: error: /dev/zero is larger than 16 MiB (the limit for {what})")


def test_large_files_are_refused_before_reading(cli, tmp_path, monkeypatch):
    big = tmp_path / "big.cg"
    with open(big, "wb") as f:  # sparse: nothing is written, and nothing is read
        f.truncate(sources.TEXT_LIMIT + 1)
    assert "big.cg is larger than 16 MiB (the limit for a program file)" in error_of(
        cli("eval", str(big)), 2
    )
    monkeypatch.setattr(sources, "ARRAY_LIMIT", 1000)
    np.save(tmp_path / "w.npy", np.zeros(200))
    err = error_of(cli("eval", SUM, f"W=@{tmp_path / 'w.npy'}"), 2)
    assert "w.npy is larger than 1000 bytes (the limit for a NumPy file)" in err
    monkeypatch.setattr(sources, "TEXT_LIMIT", 100)
    err = error_of(cli("eval", "-", "x=1", input="y = x" + " " * 200), 2)
    assert "standard input is larger than 100 bytes (the limit for a program)" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_pipes_work_as_files(cli, tmp_path):
    """Like bash's <(...): a pipe as SOURCE, -f, NAME=@FILE and --bindings."""

    def run(text: str, *args: str):
        fifo = tmp_path / f"pipe{len(list(tmp_path.iterdir()))}"
        os.mkfifo(fifo)
        writer = threading.Thread(target=fifo.write_text, args=(text,), daemon=True)
        writer.start()
        result = cli("eval", *[a.replace("PIPE", str(fifo)) for a in args], "--format", "plain")
        writer.join(5)
        assert result.exit_code == 0, result.stderr
        return result.stdout

    assert run("y = 2 * x", "PIPE", "x=3") == "y=6\n"
    assert run("y = 3 * x", "-f", "PIPE", "x=3") == "y=9\n"
    assert run("[1, 2]", SUM, "W=@PIPE") == "y=3\n"
    assert run('{"x": 7}', "y = x", "--bindings", "PIPE") == "y=7\n"


def test_files_that_are_not_utf8_are_named(cli, tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes('{"x": 1}\n{"caf\xe9": 2}'.encode("latin-1"))
    err = error_of(cli("eval", "y = x", "--bindings", str(path)), 2)
    assert err.startswith(
        f"cgraph: error: {path} is not UTF-8 text: byte 0xe9 at line 2, column 6\n"
    )
    spec = tmp_path / "checks.toml"
    spec.write_bytes('[[case]]\nprogram = "y = x"  # caf\xe9\n'.encode("latin-1"))
    err = error_of(cli("check", "--spec", str(spec)), 2)
    assert f"{spec} is not UTF-8 text: byte 0xe9 at line 2, column 25" in err


def test_directories_are_named_as_such(cli, tmp_path):
    folder = str(tmp_path)
    assert f"{folder} is a directory, not a program file" in error_of(cli("eval", folder), 2)
    assert f"{folder} is a directory, not a program file" in error_of(cli("eval", "-f", folder), 2)
    assert f"{folder} is a directory, not a bindings file" in error_of(
        cli("eval", "y = x", "--bindings", folder), 2
    )
    assert f"{folder} is a directory" in error_of(cli("eval", "y = x", f"x=@{folder}"), 2)


def test_an_at_sign_without_a_file_name(cli):
    err = error_of(cli("eval", SUM, "W=@"), 2)
    assert err.startswith("cgraph: error: W=@ needs a file name after @\n")


def test_empty_json_files_say_so(cli, tmp_path):
    path = tmp_path / "b.json"
    path.write_text("  \n")
    assert f"cannot read {path}: it is empty" in error_of(
        cli("eval", "y = x", "--bindings", str(path)), 2
    )


# 7. the same input bound twice ------------------------------------------------------------------
def test_an_input_bound_twice_on_the_command_line_is_exit_2(cli, tmp_path):
    err = error_of(cli("eval", "y = x", "x=1", "x=2"), 2)
    assert err.startswith("cgraph: error: 'x' is bound twice on the command line: x=1 and x=2\n")
    err = error_of(cli("eval", "y = x", "x=1", "--bind", "x=2"), 2)
    assert "'x' is bound twice on the command line" in err
    path = tmp_path / "b.json"
    path.write_text('{"x": 1, "x": 2}')
    assert f"cannot read {path}: it binds 'x' twice" in error_of(
        cli("eval", "y = x", "--bindings", str(path)), 2
    )
    # The command line still overrides a bindings file, and unknown names keep their hint.
    path.write_text(json.dumps({"x": 10}))
    result = cli("eval", "y = x", "--bindings", str(path), "x=2", "--format", "plain")
    assert result.exit_code == 0 and result.stdout == "y=2\n"
    assert "did you mean 'x'?" in error_of(cli("eval", "y = x", "x=1", "xx=2"), 4)


@pytest.mark.parametrize(
    "value, odd", [("１２", "U+FF11 FULLWIDTH DIGIT ONE"), ("١٢", "U+0661 ARABIC-INDIC DIGIT ONE")]
)
def test_look_alike_digits_are_refused_outside_programs_too(cli, tmp_path, value, odd):
    typed = cli("eval", "-e", "y = x * 2", f"x={value}")
    assert typed.exit_code == 4
    assert (
        f"holds '{value[0]}' ({odd})" in typed.stderr
        and "help: digits are ASCII: type 12" in typed.stderr
    )
    (tmp_path / "d.csv").write_text(f"x\n{value}\n3\n", encoding="utf-8")
    rows = cli("eval", "-e", "y = x * 2", "--rows", str(tmp_path / "d.csv"), "-q")
    assert rows.exit_code == 4
    assert rows.stdout.splitlines()[1].startswith(",row 1: the value of 'x' is not a number")
    assert rows.stdout.splitlines()[2] == "6,"


def test_rows_from_a_named_pipe_say_it_is_a_pipe_and_how_to_send_it(cli, tmp_path):
    import os

    os.mkfifo(tmp_path / "rows")  # never opened: the refusal comes before any read
    r = cli("eval", "-e", "y = x * 2", "--rows", str(tmp_path / "rows"))
    assert r.exit_code == 2
    assert "it is a pipe, and --rows reads a file twice" in r.stderr and "--rows -" in r.stderr
