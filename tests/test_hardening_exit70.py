"""Issue 25, no exit 70: standard output that cannot be written (a full disk), and the limits
that keep loops, Jacobians and Hessians from growing without bound."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
import warnings

import pytest

from cgraph_cli.cli import main

# Per command: arguments with which it succeeds and prints to standard output.
SUCCEEDS = {
    "eval": ["sample:seed"],
    "grad": ["sample:seed"],
    "diff": ["sample:seed"],
    "hessian": ["sample:seed"],
    "jvp": ["sample:seed", "--tangent", "x=1"],
    "jacobian": ["sample:seed"],
    "optimize": ["sample:seed"],
    "compile": ["sample:seed"],
    "import": ["sample:mlp.onnx"],
    "render": ["sample:seed", "--format", "dot", "-o", "-"],
    "dot": ["sample:seed"],
    "show": ["sample:seed"],
    "check": ["sample:seed", "--expect", "g=-12"],
    "gradcheck": ["sample:seed"],
    "explain": ["sample:seed"],
    "train": ["sample:linear", "--wrt", "w,b", "--steps", "2"],
    "worksheet": ["sample:seed"],
    "samples": [],
    "schema": ["eval"],
    "completion": ["bash"],
    "help": [],
}
FULL = "cgraph: error: cannot write to standard output: No space left on device\n"


class FullDisk(io.RawIOBase):
    """A standard output on a full disk: every write fails with ENOSPC."""

    code = errno.ENOSPC  # kept here: a stream still open at the interpreter's exit writes
    # after the module's globals are gone

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise OSError(self.code, "No space left on device")


def test_every_command_is_listed():
    # `cgraph lsp` serves an editor on standard input until told to exit: its help alone here
    assert sorted([*SUCCEEDS, "lsp"]) == sorted(main.commands)


def test_full_disk_on_standard_output_for_the_language_servers_help(monkeypatch, capsys):
    full = io.TextIOWrapper(io.BufferedWriter(FullDisk()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", full)
    assert main.main(["lsp", "--help"], standalone_mode=False) == 2
    assert capsys.readouterr().err == FULL


@pytest.mark.parametrize("command", sorted(SUCCEEDS))
@pytest.mark.parametrize("extra", [[], ["--help"]])
def test_full_disk_on_standard_output(command, extra, monkeypatch, capsys):
    full = io.TextIOWrapper(io.BufferedWriter(FullDisk()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", full)
    code = main.main([command, *SUCCEEDS[command], *extra], standalone_mode=False)
    assert code == 2
    assert capsys.readouterr().err == FULL


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "-e", "g = X * 2", "--rows", "sample:xor.csv"],
        ["grad", "-e", "g = sum(X * 2)", "--rows", "sample:xor.csv", "--format", "json"],
        ["render", "sample:seed", "-T", "svg", "-o", "-"],
        ["eval", "-e", "g = x * 2", "x=[" + ",".join(["1"] * 100_000) + "]", "--full"],
        ["grad", "sample:mlp", "--format", "json", "--color", "never"],
    ],
)
def test_full_disk_under_rows_images_and_large_outputs(args, monkeypatch, capsys):
    full = io.TextIOWrapper(io.BufferedWriter(FullDisk()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", full)
    assert main.main(args, standalone_mode=False) == 2
    assert capsys.readouterr().err.endswith(FULL)


@pytest.mark.parametrize("command", sorted(SUCCEEDS))
def test_a_full_disk_leaves_no_buffer_to_fail_again_at_exit(command, monkeypatch, capsys):
    """What the failed write left buffered is dropped: Python, flushing the stream at exit or
    collecting it, would fail again and print an "Exception ignored" traceback (Python 3.13
    prints it for every stream collected, so the suite printed dozens)."""
    full = io.TextIOWrapper(io.BufferedWriter(FullDisk()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", full)
    assert main.main([command, *SUCCEEDS[command]], standalone_mode=False) == 2
    if not full.closed:  # as the interpreter does at exit: nothing left to fail
        full.flush()
    full.close()  # as collecting it does
    assert capsys.readouterr().err.endswith(FULL)


EMBEDDED = """
import errno, io, sys
from cgraph_cli.cli import main

class FullDisk(io.RawIOBase):
    def writable(self):
        return True

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

sys.stdout = io.TextIOWrapper(io.BufferedWriter(FullDisk()), encoding="utf-8")
sys.exit(main.main(sys.argv[1:], standalone_mode=False))
"""


@pytest.mark.parametrize(
    "args", [["eval", "sample:seed"], ["grad", "sample:mlp", "--format", "json"]]
)
def test_a_program_calling_main_on_a_full_disk_exits_without_a_python_complaint(args):
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", EMBEDDED, *args], capture_output=True, text=True
    )
    assert (done.returncode, done.stderr) == (2, FULL)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_full_disk_for_real():
    """The device itself: no Python complaint at exit, exit 2 and one line."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "cgraph_cli", "eval", "g = x * 2", "x=1"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert (done.returncode, done.stderr) == (2, FULL)


NOT_UTF8 = os.fsdecode(b"\xff.cg")  # what Python gives for a file name with the byte 0xff


@pytest.mark.parametrize(
    "args",
    [
        ["compile", NOT_UTF8],
        ["compile", NOT_UTF8, "-o", os.fsdecode(b"\xfe.py")],
        ["worksheet", NOT_UTF8, "x=1"],
        ["worksheet", NOT_UTF8, "x=1", "-o", os.fsdecode(b"\xfe.html")],
        ["render", NOT_UTF8, "x=1", "--format", "html"],
        ["explain", NOT_UTF8, "x=1", "--format", "json"],
    ],
)
def test_a_file_name_that_is_not_utf8(cli, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    with open(os.fsencode(tmp_path) + b"/\xff.cg", "w") as f:
        f.write("g = x * 2\n")
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    written = [p for p in os.listdir(tmp_path) if p != NOT_UTF8]
    text = result.stdout + "".join(open(p, encoding="utf-8").read() for p in written)
    assert "\\xff.cg" in text or args[0] in ("render", "explain")
    assert "\udcff" not in result.stderr


def test_an_error_names_the_file_with_its_byte(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open(b"\xff.cg", "w") as f:
        f.write("g = x *\n")
    result = cli("eval", NOT_UTF8, "x=1")
    assert result.exit_code == 3
    assert result.stderr.startswith("\\xff.cg:1:8: error:")


LOOP = "h = 0\nfor t in range({bound}):\n    h = h + x\ng = h\n"


@pytest.mark.parametrize(
    ("bound", "binds"), [("1000000000000", []), ("n", ["n=1e12"]), ("len(xs)", [])]
)
def test_a_loop_of_too_many_steps_is_refused_before_it_runs(cli, bound, binds, monkeypatch):
    import cgraph_cli.run.control as control

    if bound == "len(xs)":  # a sequence of 11 elements, over a limit of 10 for the test
        monkeypatch.setattr(control, "MAX_LOOP_STEPS", 10)
        binds = ["xs=[" + ",".join(["1"] * 11) + "]"]
    result = cli("eval", "-e", LOOP.format(bound=bound), "x=1", *binds)
    assert result.exit_code == 4, result.stderr
    first, line, caret = result.stderr.splitlines()[:3]
    assert first.startswith("<expr>:2:1: error: the loop `for t in range(")
    assert "steps: more than the" in first
    assert line == f"   2 | for t in range({bound}):"
    assert caret.startswith("     | ^~~~")


def test_nested_loops_count_every_step(cli, monkeypatch):
    import cgraph_cli.run.control as control

    monkeypatch.setattr(control, "MAX_LOOP_STEPS", 100)
    program = "h = 0\nfor t in range({n}):\n    for s in range(10):\n        h = h + x\ng = h\n"
    assert cli("eval", "-e", program.format(n=9), "x=1").exit_code == 0  # 9 + 9 * 10 steps
    result = cli("eval", "-e", program.format(n=10), "x=1")  # 10 + 9 * 10, then 10 more
    assert result.exit_code == 4
    assert "after 100 steps already run" in result.stderr


def test_a_loop_whose_graph_grows_too_large_is_refused(cli, monkeypatch):
    import cgraph_cli.run.control as control

    monkeypatch.setattr(control, "MAX_RUN_NODES", 50)
    result = cli("eval", "-e", LOOP.format(bound=100), "x=1")
    assert result.exit_code == 4
    assert "unrolls into more than 50 operations" in result.stderr
    assert cli("eval", "-e", LOOP.format(bound=10), "x=1").exit_code == 0


@pytest.mark.parametrize(
    ("command", "program", "size"),
    [
        ("jacobian", "y = x * 2", "20,000 x 20,000 = 400,000,000 elements (3.2 GB)"),
        ("hessian", "y = sum(x * x)", "20,000 x 20,000 = 400,000,000 elements (3.2 GB)"),
        ("jacobian", "y = sum(x) * x", "20,000 x 20,000 = 400,000,000 elements (3.2 GB)"),
    ],
)
def test_a_jacobian_or_hessian_too_large_is_refused_before_allocating(
    cli, tmp_path, command, program, size
):
    import numpy as np

    np.save(tmp_path / "x.npy", np.ones(20_000))
    result = cli(command, "-e", program, f"x=@{tmp_path / 'x.npy'}")
    assert result.exit_code == 4, result.stderr
    what = command.capitalize()
    assert result.stderr.startswith(f"cgraph: error: the {what} would have {size}: more than")
    assert "more than the 16,777,216 cgraph computes" in result.stderr
    assert "--wrt" in result.stderr


def test_parquet_integers_past_2_53_are_read_as_float64_like_csv(cli, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    big = [1, 2**53 + 1, 2**63 - 1]
    pq.write_table(pa.table({"x": pa.array(big, pa.int64())}), tmp_path / "x.parquet")
    (tmp_path / "x.csv").write_text("x\n" + "\n".join(map(str, big)) + "\n")
    parquet = cli("eval", "-e", "g = x", "--rows", str(tmp_path / "x.parquet"))
    csv = cli("eval", "-e", "g = x", "--rows", str(tmp_path / "x.csv"))
    assert parquet.exit_code == csv.exit_code == 0, parquet.stderr
    assert parquet.stdout == csv.stdout
    assert "9.007199254740992e+15" in parquet.stdout


def test_a_json_lines_cell_nested_too_deeply(cli, tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "x.jsonl").write_text('{"x": 1}\n{"x": ' + deep + "}\n")
    result = cli("eval", "-e", "g = x", "--rows", str(tmp_path / "x.jsonl"))
    assert result.exit_code == 2
    assert "x.jsonl:2: a cell nests arrays or objects too deeply" in result.stderr


def test_a_csv_header_with_a_line_break_in_a_quoted_name(cli, tmp_path):
    pytest.importorskip("pyarrow")
    (tmp_path / "x.csv").write_text('"x\ny",z\n1,2\n"3\n",4\n')
    result = cli("eval", "-e", "g = z", "--rows", str(tmp_path / "x.csv"))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == '"g","error"\n2,\n4,\n'
    assert "x\\ny" in result.stderr  # the column ignored, its name escaped
    (tmp_path / "y.csv").write_text('"x,z\n1,2\n')
    result = cli("eval", "-e", "g = z", "--rows", str(tmp_path / "y.csv"))
    assert result.exit_code == 2
    assert "y.csv: the header's quote is never closed" in result.stderr


@pytest.mark.parametrize("command", ["eval", "grad", "compile", "show", "jacobian"])
@pytest.mark.parametrize(
    "call",
    ["place(x, [-1], 0)", "place(x, [2, -1], 0)", "broadcast_to(x, [-1])", "sum_to(x, [-3])"],
)
def test_a_negative_size_in_a_shape_written_in_a_call(cli, command, call):
    result = cli(command, "-e", f"y = sum({call})", "x=2")
    assert result.exit_code == 4, result.stderr
    op = call.split("(")[0]
    assert f"is not a shape for {op}: its sizes are whole numbers, at least 0" in result.stderr
    assert result.stderr.startswith("<expr>:1:9: error:")


def test_a_python_warning_reaches_stderr_without_a_path(cli, monkeypatch):
    import numpy as np

    def warns(*args, **kwargs):
        np.exp(np.array([1000.0]))  # NumPy's RuntimeWarning, raised in site-packages

    monkeypatch.setattr(main.commands["samples"], "callback", warns)
    with warnings.catch_warnings():  # as outside pytest, which makes warnings errors
        warnings.simplefilter("default")
        result = cli("samples")
    assert result.exit_code == 0
    assert result.stderr == "cgraph: warning: overflow encountered in exp\n"


@pytest.mark.parametrize(
    ("redirect", "args", "message"),
    [
        ("<&-", ["eval", "-", "x=1"], "cgraph: error: standard input is closed\n"),
        (
            "<&-",
            ["eval", "-e", "g = x", "--rows", "-"],
            "cgraph: error: standard input is closed\n",
        ),
        (
            ">&-",
            ["eval", "-e", "g = x", "x=1"],
            "cgraph: error: cannot write to standard output: it is closed\n",
        ),
    ],
)
def test_a_closed_standard_stream(redirect, args, message):
    line = " ".join(f"'{a}'" for a in [sys.executable, "-m", "cgraph_cli", *args])
    done = subprocess.run(["sh", "-c", f"exec {line} {redirect}"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr


def test_the_largest_jacobian_allowed_is_computed(cli, monkeypatch):
    import cgraph_cli.run.higher as higher

    monkeypatch.setattr(higher, "MAX_MATRIX", 6)
    assert cli("jacobian", "-e", "y = x * 2", "x=[1, 2]").exit_code == 0  # 2 x 2
    assert cli("hessian", "-e", "y = sum(x * x)", "x=[1, 2]").exit_code == 0
    result = cli("hessian", "-e", "y = sum(x * x)", "x=[1, 2, 3]")  # 3 x 3
    assert result.exit_code == 4
    assert "3 x 3 = 9 elements (72 bytes): more than the 6 cgraph computes" in result.stderr


def test_the_per_step_norm_of_a_large_gradient_is_not_inf(cli):
    program = "input xs = [1, 2, 3]\nh = 0\nfor t in range(len(xs)):\n    h = h * w + xs[t] * v\ng = sum(h)\n"
    result = cli("grad", "-e", program, "w=1e100", "v=[1, 1]", "--per-step")
    assert result.exit_code == 0, result.stderr
    assert "1.414e200" in result.stdout and " inf" not in result.stdout


def test_too_many_derivative_statements_are_refused_before_any_is_made(cli):
    program = "y = " + " * ".join(f"sin(a{i})" for i in range(100))
    result = cli("diff", "-e", program, "--order", "3")
    assert result.exit_code == 4
    assert result.stderr.startswith(
        "cgraph: error: derivatives of 100 inputs up to order 3 are 176,850 statements: more "
        "than the 10,000 cgraph writes"
    )
    assert cli("diff", "-e", program, "--order", "3", "--wrt", "a1,a2").exit_code == 0


def test_a_librarys_deprecation_notice_to_its_callers_is_not_shown(cli, monkeypatch):
    """matplotlib 3.9 calls pyparsing 3.3 by its old names: pyparsing's DeprecationWarning is
    for matplotlib's developers, not for the person drawing a loss curve."""

    def warns(*args, **kwargs):
        for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
            warnings.warn_explicit(
                "'oneOf' deprecated - use 'one_of'",
                category,
                "pyparsing/util.py",
                1,
                module="matplotlib._mathtext",
            )
        warnings.warn_explicit(
            "an old way of cgraph's",
            DeprecationWarning,
            "cgraph_cli/x.py",
            1,
            module="cgraph_cli.x",
        )

    monkeypatch.setattr(main.commands["samples"], "callback", warns)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        result = cli("samples")
    assert result.exit_code == 0
    assert result.stderr == "cgraph: warning: an old way of cgraph's\n"
