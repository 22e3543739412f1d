"""The `cgraph` command end to end: output formats, sources, bindings, exit codes, messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = str(ROOT / "samples" / "seed.cg")
PROGRAM = "g = (x + y) * z"
BIND = ("x=1", "y=3", "z=-3")


def test_eval_prints_the_output(cli):
    result = cli("eval", PROGRAM, *BIND)
    assert result.exit_code == 0
    assert result.stdout == "g = -12\n"


def test_eval_all_lists_every_named_value(cli):
    result = cli("eval", "p = x + y\ng = p * z", *BIND, "--all")
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert rows == [["x", "1"], ["y", "3"], ["z", "-3"], ["p", "4"], ["g", "-12"]]


def test_grad_table(cli):
    result = cli("grad", PROGRAM, *BIND)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["input", "value", "∂g/∂input"]
    assert [line.split() for line in lines[2:5]] == [
        ["x", "1", "-3"],
        ["y", "3", "-3"],
        ["z", "-3", "4"],
    ]
    assert lines[-1].strip() == "g = -12"


def test_grad_json_is_the_documented_contract(cli):
    result = cli("grad", SEED, "--format", "json")
    assert json.loads(result.stdout) == {
        "schema_version": 1,
        "output": "g",
        "value": -12.0,
        "values": {"x": 1.0, "y": 3.0, "z": -3.0, "p": 4.0, "g": -12.0},
        "gradients": {"x": -3.0, "y": -3.0, "z": 4.0},
    }


def test_eval_json(cli):
    result = cli("eval", PROGRAM, *BIND, "--format", "json")
    assert json.loads(result.stdout) == {
        "schema_version": 1,
        "output": "g",
        "value": -12.0,
        "values": {"x": 1.0, "y": 3.0, "z": -3.0, "g": -12.0},
    }


def test_plain_formats_are_name_value_lines(cli):
    assert cli("eval", PROGRAM, *BIND, "--format", "plain").stdout == "g=-12\n"
    assert cli("eval", SEED, "--all", "--format", "plain").stdout == "x=1\ny=3\nz=-3\np=4\ng=-12\n"
    assert cli("grad", PROGRAM, *BIND, "--format", "plain").stdout == "x=-3\ny=-3\nz=4\ng=-12\n"


def test_numbers_print_in_shortest_exact_form(cli):
    result = cli("eval", "g = x / 10", "x=1", "--format", "plain")
    assert result.stdout == "g=0.1\n"
    assert (
        cli("eval", "g = x * 3", "x=0.1", "--format", "plain").stdout == "g=0.30000000000000004\n"
    )


def test_grad_of_and_wrt(cli):
    result = cli("grad", SEED, "--of", "p", "--wrt", "x,z", "--format", "json")
    report = json.loads(result.stdout)
    assert (report["output"], report["value"], report["gradients"]) == (
        "p",
        4.0,
        {"x": 1.0, "z": 0.0},
    )
    # an intermediate can be reported too: ∂g/∂p = z
    assert json.loads(cli("grad", SEED, "--wrt", "p", "--format", "json").stdout)["gradients"] == {
        "p": -3.0
    }


def test_unnamed_output_is_labelled_by_its_text(cli):
    result = cli("grad", "x * x + 1", "x=3")
    assert "∂(x * x + 1)/∂input" in result.stdout
    report = json.loads(cli("eval", "x*x  +  1", "x=3", "--format", "json").stdout)
    assert report["output"] == "x*x + 1" and report["value"] == 10.0


def test_sources_file_text_stdin(cli, tmp_path):
    path = tmp_path / "prog.cg"
    path.write_text("input x = 2\ny = x * 5\n")
    assert cli("eval", str(path), "--format", "plain").stdout == "y=10\n"
    assert cli("eval", "-f", str(path), "x=1", "--format", "plain").stdout == "y=5\n"
    assert cli("eval", "-", "x=3", "--format", "plain", input="y = x + 1").stdout == "y=4\n"
    assert cli("eval", "-f", "-", "x=3", "--format", "plain", input="y = x + 2").stdout == "y=5\n"
    assert cli("eval", "-e", "y = x - 1", "x=3", "--format", "plain").stdout == "y=2\n"


def test_bindings_precedence_command_line_over_file_over_source(cli, tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"x": 10, "y": 20}))
    program = "input x = 1, y = 2, z = 3\ng = x + y + z"
    run = lambda *extra: cli("eval", program, "--format", "plain", *extra).stdout  # noqa: E731
    assert run() == "g=6\n"
    assert run("--bindings", str(path)) == "g=33\n"
    assert run("--bindings", str(path), "y=0") == "g=13\n"
    assert run("--bindings", str(path), "--bind", "x=0") == "g=23\n"


def error_of(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    return result.stderr


def test_syntax_error_exit_3_with_caret(cli):
    err = error_of(cli("eval", "g = (x + y) *", "x=1"), 3)
    assert err == (
        "<expr>:1:14: error: expected an expression after '*'\n"
        "   1 | g = (x + y) *\n"
        "     |              ^\n"
    )


def test_error_in_a_file_names_the_file(cli, tmp_path):
    path = tmp_path / "bad.cg"
    path.write_text("p = x + 1\ng = sinn(p)\n")
    err = error_of(cli("eval", str(path), "x=1"), 3)
    assert err.startswith(f"{path}:2:5: error: unknown function 'sinn'\n")
    assert "help: did you mean 'sin'?" in err


def test_not_utf8_exit_3(cli, tmp_path):
    path = tmp_path / "latin1.cg"
    path.write_bytes("p = x + 1\ny = p * 2 # caf\xe9\n".encode("latin-1"))
    err = error_of(cli("eval", str(path), "x=1"), 3)
    assert err.startswith(f"{path}:2:16: error: the program is not UTF-8 text: byte 0xe9")


def test_empty_program_exit_3(cli):
    assert "the program has no statements" in error_of(cli("eval", "-", input=""), 3)


def test_missing_binding_exit_4_lists_them_and_shows_how(cli):
    err = error_of(cli("grad", PROGRAM, "y=3"), 4)
    assert err.startswith("<expr>:1:6: error: no values for inputs 'x', 'z'\n")
    assert "help: bind them: x=VALUE z=VALUE" in err


def test_unknown_binding_exit_4_with_did_you_mean(cli):
    err = error_of(cli("eval", PROGRAM, *BIND, "zz=1"), 4)
    assert err.startswith("cgraph: error: the program has no input named 'zz'\n")
    assert "help: did you mean 'z'?" in err


@pytest.mark.parametrize("value", ["nan", "inf", "abc", ""])
def test_non_finite_binding_exit_4(cli, value):
    assert "is not a" in error_of(cli("eval", PROGRAM, "x=" + value, "y=1", "z=1"), 4)


@pytest.mark.parametrize(
    "program, bindings, text",
    [
        ("g = log(x)", ["x=-1"], "log(-1) is undefined"),
        ("g = sqrt(x)", ["x=-4"], "sqrt(-4) is undefined"),
        ("g = 1 / x", ["x=0"], "1 / 0 is undefined"),
        ("g = 0 / x", ["x=0"], "0 / 0 is undefined"),
        ("g = x ^ 0.5", ["x=-2"], "(-2) ^ 0.5 is undefined"),
        ("g = exp(x)", ["x=1e4"], "exp(10000) overflows"),
    ],
)
def test_domain_errors_exit_4_with_place(cli, program, bindings, text):
    err = error_of(cli("grad", program, *bindings), 4)
    assert err.startswith(f"<expr>:1:5: error: {text}")
    assert "   1 | " + program in err


def test_usage_errors_exit_2(cli, tmp_path):
    assert "no such file: missing.cg" in error_of(cli("eval", "missing.cg"), 2)
    assert "a binding is NAME=VALUE" in error_of(cli("eval", PROGRAM, "x"), 2)
    assert "No such option" in error_of(cli("eval", PROGRAM, "--nope"), 2)
    bad = tmp_path / "b.json"
    bad.write_text('{"x": 1,,}')
    assert f"{bad}:1:9: error: {bad} is not valid JSON" in error_of(
        cli("eval", PROGRAM, "--bindings", str(bad)), 2
    )
    bad.write_text("[1, 2]")
    assert "must hold a JSON object" in error_of(cli("eval", PROGRAM, "--bindings", str(bad)), 2)
    assert "no such file" in error_of(
        cli("eval", PROGRAM, "--bindings", str(tmp_path / "no.json")), 2
    )


def test_bindings_file_with_a_non_number_exit_2(cli, tmp_path):
    # What is wrong in a bindings file is a usage error (exit 2); typed as x=one it is exit 4.
    path = tmp_path / "b.json"
    path.write_text('{"x": "one"}')
    assert "the value of 'x' is not a number" in error_of(
        cli("eval", "g = x", "--bindings", str(path)), 2
    )


def test_unknown_names_for_of_and_wrt_exit_2(cli):
    assert "did you mean 'p'?" in error_of(cli("grad", SEED, "--of", "pp"), 2)
    assert "no name 'w'" in error_of(cli("grad", SEED, "--wrt", "w"), 2)


@pytest.mark.parametrize("command", ["eval", "grad"])
def test_every_command_has_help_with_an_example(cli, command):
    result = cli(command, "--help")
    assert result.exit_code == 0
    assert "Examples:" in result.stdout and "cgraph " + command in result.stdout
    assert "Exit codes:" in result.stdout


def test_version(cli):
    from cgraph_cli import __version__

    result = cli("--version")
    assert result.exit_code == 0 and __version__ in result.stdout


def _run_installed(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("cgraph")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "cgraph_cli"]
    return subprocess.run(
        command + list(args),
        capture_output=True,
        text=True,
        input=input,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )


def test_installed_entry_point_runs_a_sample():
    proc = _run_installed("grad", "samples/seed.cg", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["gradients"] == {"x": -3.0, "y": -3.0, "z": 4.0}


def test_python_dash_m_and_errors_without_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "cgraph_cli", "eval", "g = log(x)", "x=-1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 4
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("<expr>:1:5: error: log(-1) is undefined")


def test_closed_stdout_is_quiet():
    # `cgraph ... | head -0`: the reader goes away; no traceback, no noise
    program = "\n".join(f"v{i} = x + {i}" for i in range(3000))
    proc = subprocess.run(
        f"{sys.executable} -m cgraph_cli eval - x=1 --all --format plain | head -c 0",
        shell=True,
        capture_output=True,
        text=True,
        input=program,
    )
    assert proc.stderr == ""


def test_the_command_ends_with_everything_written(cli, tmp_path, monkeypatch):
    # The command leaves without Python's teardown (group.leave): what it still held in its
    # buffers reaches a pipe and an -o file whole, and its exit code is the command's.
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # standard output buffered
    source = tmp_path / "long.cg"
    source.write_text("\n".join(f"v{i} = x + {i}" for i in range(3000)))
    args = ("eval", str(source), "x=1", "--all", "--format", "plain")
    expected = cli(*args).stdout
    assert len(expected) > 30_000
    proc = _run_installed(*args)
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", expected)
    written = tmp_path / "values.txt"
    proc = _run_installed(*args, "-o", str(written))
    assert (proc.returncode, proc.stdout) == (0, "") and written.read_text() == expected
    proc = _run_installed("eval", "g = log(x)", "x=-1")
    assert proc.returncode == 4 and proc.stderr.startswith("<expr>:1:5: error: log(-1)")


def test_precision_rounds_table_and_plain_not_json(cli):
    neuron = str(ROOT / "samples" / "neuron.cg")
    assert (
        cli("grad", neuron, "--wrt", "x1", "--precision", "3", "--format", "plain").stdout
        == "x1=-1.5\no=0.707\n"
    )
    assert " 0.7071\n" in cli("eval", neuron, "--all", "--precision", "4").stdout
    exact = json.loads(cli("grad", neuron, "--precision", "3", "--format", "json").stdout)
    assert exact["gradients"]["x1"] == -1.4999999999999993


def test_grad_plain_ends_with_the_output_value_as_the_table_does(cli):
    neuron = str(ROOT / "samples" / "neuron.cg")
    report = json.loads(cli("grad", neuron, "--format", "json").stdout)
    lines = cli("grad", neuron, "--format", "plain").stdout.splitlines()
    pairs = [line.split("=", 1) for line in lines]
    assert pairs[-1] == ["o", repr(report["value"])]
    assert {k: float(v) for k, v in pairs[:-1]} == report["gradients"]
    table = cli("grad", neuron).stdout
    assert table.rstrip().splitlines()[-1].strip().startswith("o = ")  # the value last there too
