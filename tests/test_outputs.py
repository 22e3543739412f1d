"""An output never destroys an input of the same command: the same file by another path or a
link is refused with exit 2 before anything is written; other targets are replaced atomically,
and a FIFO is written through, not replaced."""

from __future__ import annotations

import os
import stat
import threading

import pytest
from click.testing import CliRunner

from cgraph_cli.cli import main

PROGRAM = "y = (x + 1) * 2\n"


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


#: (command, the file it reads, given as {in}, and written as {out}): each output option of each
#: command against each kind of input: SOURCE, NAME=@FILE, --bindings, --rows, --spec, --resume,
#: --config; and two outputs of one command.
CLASHES = [
    ["compile", "{in}", "-o", "{out}"],
    ["eval", "{in}", "x=1", "-o", "{out}"],
    ["diff", "{in}", "-o", "{out}"],
    ["render", "{in}", "-T", "svg", "-o", "{out}"],
    ["explain", "{in}", "x=1", "-o", "{out}"],
    ["worksheet", "{in}", "-o", "{out}"],
    ["eval", "p.cg", "x=@{in}", "-o", "{out}", "#w.npy"],
    ["eval", "p.cg", "--bindings", "{in}", "-o", "{out}", "#w.json"],
    ["eval", "p.cg", "--rows", "{in}", "-o", "{out}", "#d.csv"],
    ["grad", "p.cg", "--rows", "{in}", "-o", "{out}", "#d.csv"],
    ["eval", "p.cg", "--rows", "*.csv", "-o", "{out}", "#d.csv"],
    ["train", "p.cg", "--wrt", "x", "--rows", "{in}", "--log", "{out}", "#d.csv"],
    ["train", "p.cg", "--wrt", "x", "--rows", "{in}", "-o", "{out}", "#d.csv"],
    ["train", "p.cg", "--wrt", "x", "--config", "{in}", "--plot", "{out}", "#c.toml"],
    ["train", "p.cg", "--wrt", "x", "--resume", "{in}", "-o", "{out}", "#w.npz"],
    ["check", "--spec", "{in}", "--junit", "{out}", "#a.toml"],
    ["worksheet", "p.cg", "-o", "{in}", "--answers", "{out}", "#a.md"],
]


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("how", ["same", "dot", "symlink", "hardlink"])
@pytest.mark.parametrize("command", CLASHES, ids=lambda c: " ".join(c))
def test_an_output_that_is_an_input_is_refused_before_anything_runs(
    tmp_path, monkeypatch, how, command
):
    import numpy as np

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.cg").write_text(PROGRAM)
    (tmp_path / "d.csv").write_text("x\n1\n2\n")
    (tmp_path / "w.json").write_text('{"x": 1}')
    (tmp_path / "c.toml").write_text("[train]\nsteps = 3\n")
    (tmp_path / "a.toml").write_text(
        '[[case]]\nprogram = "y = 2 * x"\nbindings = {x = 1}\nexpect = {y = 4}\n'
    )
    (tmp_path / "a.md").write_text("my notes\n")
    np.save(tmp_path / "w.npy", np.array(1.0))
    np.savez(tmp_path / "w.npz", x=np.array(1.0))
    *args, name = command if command[-1].startswith("#") else [*command, "#p.cg"]
    name = name[1:]
    target = {"same": name, "dot": f"./{name}", "symlink": "s.lnk", "hardlink": "h.lnk"}[how]
    if how == "symlink":
        os.symlink(name, "s.lnk")
    if how == "hardlink":
        os.link(name, "h.lnk")
    before = _files(tmp_path)
    result = run(*[a.replace("{in}", name).replace("{out}", target) for a in args])
    assert result.exit_code == 2, result.output
    assert "refusing to overwrite" in result.output or "overwrite the other" in result.output
    assert _files(tmp_path) == before


def test_a_file_read_some_other_way_is_refused_when_written(tmp_path, monkeypatch):
    """A program a checks file names is read while the cases run: the JUnit report over it is
    refused then, and the program stays as it was."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.cg").write_text(PROGRAM)
    (tmp_path / "a.toml").write_text(
        '[[case]]\nfile = "p.cg"\nbindings = {x = 1}\nexpect = {y = 4}\n'
    )
    result = run("check", "--spec", "a.toml", "--junit", "p.cg")
    assert result.exit_code == 2
    assert "is the file case 1 of a.toml reads" in result.output
    assert "case 1" not in result.output.split("error")[0]  # refused before any case ran
    assert (tmp_path / "p.cg").read_text() == PROGRAM


def test_output_replaces_atomically_and_keeps_mode(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.cg").write_text(PROGRAM)
    (tmp_path / "out.txt").write_text("old")
    os.chmod("out.txt", 0o600)
    assert run("eval", "p.cg", "x=1", "-o", "out.txt").exit_code == 0
    assert (tmp_path / "out.txt").read_text().strip() == "y = 4"
    assert stat.S_IMODE(os.stat("out.txt").st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "p.cg"]


def test_fifo_is_written_through(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.cg").write_text(PROGRAM)
    os.mkfifo("pipe")
    got = []
    reader = threading.Thread(target=lambda: got.append(open("pipe").read()))
    reader.start()
    assert run("eval", "p.cg", "x=1", "-o", "pipe").exit_code == 0
    reader.join(10)
    assert got == ["y = 4\n"]
    assert stat.S_ISFIFO(os.stat("pipe").st_mode)


def test_kept_cells_on_a_terminal_show_escapes_and_a_file_gets_them_byte_for_byte(
    tmp_path, monkeypatch
):
    import pty
    import subprocess
    import sys

    (tmp_path / "p.cg").write_text(PROGRAM)
    (tmp_path / "d.csv").write_bytes(b"x,name\n1,\x1b[2Jwiped\n")
    command = [sys.executable, "-m", "cgraph_cli", "eval", "p.cg", "--rows", "d.csv"]
    command += ["--keep", "name", "-q"]
    leader, follower = pty.openpty()
    done = subprocess.run(command, cwd=tmp_path, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    shown = os.read(leader, 65536)
    os.close(leader)
    assert done.returncode == 0, done.stderr
    assert b"\x1b" not in shown and b"\\x1b[2Jwiped" in shown
    monkeypatch.chdir(tmp_path)
    assert run("eval", "p.cg", "--rows", "d.csv", "--keep", "name", "-o", "out.csv").exit_code == 0
    assert b"\x1b[2Jwiped" in (tmp_path / "out.csv").read_bytes()


def test_a_dask_output_folder_holds_only_this_runs_parts(tmp_path, monkeypatch):
    pytest.importorskip("dask.dataframe")
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.cg").write_text(PROGRAM)
    (tmp_path / "d.csv").write_text("x\n1\n2\n3\n")
    command = ["eval", "p.cg", "--rows", "d.csv", "--engine", "dask", "-o", "out/", "-q"]
    assert run(*command).exit_code == 0
    (tmp_path / "out" / "part.7.parquet").write_bytes(b"")  # as if an earlier run left it
    (tmp_path / "out" / ".cgraph-parts").write_text("part.0.parquet\npart.7.parquet\n")
    assert run(*command).exit_code == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".cgraph-parts",
        "part.0.parquet",
    ]
    assert pq.read_table(tmp_path / "out").column("y").to_pylist() == [4.0, 6.0, 8.0]
    (tmp_path / "out" / "notes.txt").write_text("mine")
    result = run(*command)
    assert result.exit_code == 2 and "holds files cgraph did not write (notes.txt)" in result.output
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"


def test_man_pages_are_written_beside_a_users_page_without_removing_it(tmp_path):
    from cgraph_cli.cli.manpages import write_man_pages

    (tmp_path / "cgraph-notes.1").write_text(".TH NOTES 1\nmine\n")
    (tmp_path / "cgraph-gone.1").write_text('.TH CGRAPH\\-GONE 1 "" "cgraph 0.0" "cgraph manual"\n')
    write_man_pages(tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    assert "cgraph-notes.1" in names and "cgraph-gone.1" not in names and "cgraph-eval.1" in names


def test_an_output_through_a_symbolic_link_replaces_the_file_and_keeps_the_link(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.cg").write_text(PROGRAM)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "out.txt").write_text("old")
    os.symlink("shared/out.txt", "out.txt")
    assert run("eval", "p.cg", "x=1", "-o", "out.txt").exit_code == 0
    assert os.path.islink("out.txt")
    assert (tmp_path / "shared" / "out.txt").read_text() == "y = 4\n"
    assert sorted(p.name for p in (tmp_path / "shared").iterdir()) == ["out.txt"]


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary_file(tmp_path, monkeypatch):
    from cgraph_cli.core.errors import UsageError
    from cgraph_cli.data import outputs

    target = tmp_path / "w.npz"
    target.write_bytes(b"the old weights")

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs.os, "replace", full_disk)
    with pytest.raises(UsageError, match="cannot write .*w.npz"):
        outputs.write_file(str(target), b"new")
    assert target.read_bytes() == b"the old weights"
    assert [p.name for p in tmp_path.iterdir()] == ["w.npz"]


def test_ctrl_c_while_an_output_is_finished_leaves_the_old_file_and_no_temporary_file(
    tmp_path, monkeypatch
):
    # done() waits for the write-back thread of a replacing output (write_file of a large
    # page, train's --log): Ctrl-C there left a .cgraph-*.tmp of the whole output behind.
    from cgraph_cli.data import outputs

    target = tmp_path / "page.html"
    target.write_bytes(b"the old page")

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs.os, "chmod", interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_file(str(target), b"z" * (2 * outputs.SETTLE))
    assert target.read_bytes() == b"the old page"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]
    assert not [t for t in threading.enumerate() if t.name == "cgraph-write-back"]


#: A run of every command that prints to standard output.
PRINTING = [
    ["eval", "sample:seed"],
    ["grad", "sample:mlp"],
    ["grad", "sample:seed", "--format", "json"],
    ["diff", "sample:seed"],
    ["hessian", "sample:neuron"],
    ["jvp", "sample:seed", "--tangent", "x=1"],
    ["jacobian", "-e", "y = x * [1, 2]", "x=1"],
    ["optimize", "sample:rewrites"],
    ["compile", "sample:seed"],
    ["render", "sample:seed", "-T", "svg", "-o", "-"],
    ["dot", "sample:seed"],
    ["show", "sample:seed"],
    ["check", "sample:seed", "--expect", "g=-12"],
    ["gradcheck", "sample:seed"],
    ["explain", "sample:seed"],
    ["train", "-e", "y = (x - 3)^2", "x=1", "--wrt", "x", "--steps", "2", "--log", "-"],
    ["worksheet", "sample:seed"],
    ["eval", "-e", "y = 2 * x", "--rows", "sample:train.csv", "-q"],
    ["samples"],
    ["schema", "eval"],
    ["completion", "bash"],
    ["help", "eval"],
    ["eval", "--help"],
    ["--help"],
    ["--version"],
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", PRINTING, ids=lambda c: " ".join(c))
def test_a_full_disk_on_standard_output_is_said_plainly_with_exit_2(command):
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "cgraph_cli", *command],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert (
        done.stderr == "cgraph: error: cannot write to standard output: No space left on device\n"
    )


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="needs posix_fadvise")
@pytest.mark.parametrize("fmt", ["parquet", "csv", "npz", "jsonl"])
def test_a_large_output_replacing_a_file_is_written_back_as_it_goes_and_read_back_whole(
    tmp_path, monkeypatch, fmt
):
    """Over an existing file, the rows (several megabytes) are handed to the kernel's
    write-back a megabyte at a time by a thread of the output's own: the file read back holds
    every row, the thread is gone when the command ends, and a new file is written plainly."""
    import numpy as np

    pa_csv = pytest.importorskip("pyarrow.csv")
    pq = pytest.importorskip("pyarrow.parquet")
    from cgraph_cli.data import outputs
    from cgraph_cli.data.datawriter import RowWriter

    made = []

    class Seen(outputs.Settling):
        def write(self, data):
            made.append(self)
            return super().write(data)

    monkeypatch.setattr(outputs, "Settling", Seen)
    rng = np.random.default_rng(0)
    chunks = [rng.normal(size=40_000) for _ in range(8)]  # 2.5 MB of float64
    target = str(tmp_path / f"out.{fmt}")
    for old in (False, True):
        if old:
            with open(target, "wb") as f:
                f.write(b"the old file")
        writer = RowWriter(target, fmt)
        for chunk in chunks:
            writer.write({"y": chunk})
        writer.close()
        assert bool(made) == old and all(m._sent >= outputs.SETTLE for m in made[-1:])
        assert not [t for t in threading.enumerate() if t.name == "cgraph-write-back"]
        if fmt == "npz":
            got = np.load(target)["y"]
        elif fmt == "jsonl":
            import json

            got = [json.loads(line)["y"] for line in open(target)]
        elif fmt == "csv":
            got = pa_csv.read_csv(target)["y"].to_numpy()
        else:
            got = pq.read_table(target)["y"].to_numpy()
        assert np.array_equal(np.asarray(got, dtype=float), np.concatenate(chunks))
        outputs.forget_all()
        os.unlink(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_write_back_advice_that_fails_changes_nothing(tmp_path, monkeypatch):
    from cgraph_cli.data import outputs

    calls = []

    def refused(*args):
        calls.append(args)
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(outputs.os, "posix_fadvise", refused, raising=False)
    target = tmp_path / "w.bin"
    target.write_bytes(b"old")
    out = outputs.Output(str(target))
    for _ in range(4):
        out.file.write(b"z" * outputs.SETTLE)
    out.done()
    assert target.read_bytes() == b"z" * (4 * outputs.SETTLE)
    assert len(calls) == 1  # the first refusal stops the advice


def test_a_replacing_output_works_as_a_file_does_in_a_with_and_after_seeking_back(tmp_path):
    """Settling stands for the file it wraps: in a with statement, and for a writer that seeks
    back to write a header again (as a zip file does), the bytes land where they were put."""
    from cgraph_cli.data import outputs

    path = tmp_path / "w.bin"
    with outputs.Settling(open(path, "wb")) as f:
        f.write(b"a" * (2 * outputs.SETTLE))
        f.seek(0)
        f.write(b"HEAD")
        f.seek(0, os.SEEK_END)
        f.write(b"b" * outputs.SETTLE)
    assert f.closed
    data = path.read_bytes()
    assert data[:4] == b"HEAD" and len(data) == 3 * outputs.SETTLE and data[-1:] == b"b"
    assert not [t for t in threading.enumerate() if t.name == "cgraph-write-back"]


@pytest.mark.skipif(os.name != "posix", reason="needs setrlimit")
@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl", "npz"])
def test_rows_to_a_file_that_cannot_grow_name_the_file_not_standard_output(tmp_path, fmt):
    # A full disk (here: the file size limit) writing --rows -o out.csv said "cannot write to
    # standard output", where nothing was written to standard output.
    import subprocess
    import sys

    pytest.importorskip("pyarrow")
    data = tmp_path / "in.csv"
    data.write_text("x\n" + "".join(f"{i * 0.6180339887498949 % 1!r}\n" for i in range(250_000)))
    target = tmp_path / f"out.{fmt}"
    target.write_bytes(b"the old rows")

    limited = (  # set by the child itself: no fork from a test process with threads
        "import resource, runpy, sys\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({3 << 19}, {3 << 19}))\n"
        "sys.argv[0] = 'cgraph'\n"
        "runpy.run_module('cgraph_cli', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", limited, "eval", "y = x * 3", "--rows", str(data)]
        + ["-o", str(target), "-q"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"cgraph: error: cannot write {target}: file too large\n"
    assert target.read_bytes() == b"the old rows"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", f"out.{fmt}"]
