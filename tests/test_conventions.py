"""The CLI's conventions (issue 10), checked the way a user would: one vocabulary of options
in every command, -o FILE that writes what standard output would have, colour that follows
--color, NO_COLOR and FORCE_COLOR, output that behaves in pipes, errors in one style,
progress bars on terminals only, help examples that run as printed, and a quick start."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shlex
import struct
import subprocess
import sys
import termios
from pathlib import Path

import click
import pytest
from conftest import make_runner

from cgraph_cli.cli import main

ESC = "\x1b["
COMMANDS = sorted(main.commands)
NUMBERS = {
    "eval",
    "grad",
    "render",
    "dot",
    "show",
    "check",
    "gradcheck",
    "explain",
    "hessian",
    "jvp",
    "jacobian",
    "worksheet",
}
NAMED_OUTPUT = (NUMBERS - {"jvp"}) | {"diff", "optimize", "compile", "train"}  # taking --of
FORMATS = {
    "eval": ["text", "json", "plain"],
    "grad": ["text", "json", "plain"],
    "check": ["text", "json"],
    "gradcheck": ["text", "json"],
    "explain": ["text", "markdown", "json"],
    "diff": ["text", "json"],
    "hessian": ["text", "json", "plain"],
    "jvp": ["text", "json", "plain"],
    "jacobian": ["text", "json"],
    "optimize": ["text", "json"],
    "train": ["text", "json"],
    "worksheet": ["markdown", "latex", "html", "json"],
}
NO_GRADS = {"render", "dot", "show"}
# Options whose help says something particular to the command: the choices of --format, the
# default of --precision, render's default file, what --force draws, the tolerance's formula,
# the order (diff: derivatives up to N; gradcheck: which derivatives it checks), what
# --frames draws (explain: backward steps; optimize: passes).
OWN_HELP = {
    "--expand",  # render: calls drawn open; explain: calls explained inside
    "--depth",  # show: levels of the tree; render: levels of calls drawn open
    "--fit",  # render: the PNG's size; explain and optimize: each frame's
    "--rows",  # train: in mini-batches
    "--reduce",  # train: how a loss per row becomes the batch's
    "--eps",  # gradcheck: the finite-difference step; train: Adam's epsilon
    "--seed",  # gradcheck: random points; train: the shuffle's orders; worksheet: the draws
    "--range",  # gradcheck: where points are drawn; render --live: a slider's ends
    "--format",
    "--precision",
    "--output",
    "--force",
    "--rtol",
    "--order",
    "--mode",
    "--frames",
}
# A run of each command, as most users would type it.
RUNS = {
    "eval": ["eval", "sample:neuron", "--all"],
    "grad": ["grad", "sample:mlp"],
    "render": ["render", "sample:seed", "-T", "svg", "-o", "-"],
    "dot": ["dot", "sample:seed"],
    "show": ["show", "sample:neuron"],
    "check": ["check", "sample:seed", "--expect", "g=-12", "--expect-grad", "x=-3"],
    "gradcheck": ["gradcheck", "sample:neuron"],
    "explain": ["explain", "sample:seed"],
    "samples": ["samples"],
    "diff": ["diff", "sample:neuron"],
    "hessian": ["hessian", "sample:rosenbrock"],
    "jvp": ["jvp", "sample:neuron", "--tangent", "x1=1"],
    "jacobian": ["jacobian", "y = softmax(z)", "z=[1,2,3]"],
    "optimize": ["optimize", "sample:neuron", "--report"],
    "compile": ["compile", "sample:neuron"],
    "import": ["import", "sample:mlp.onnx"],
    "schema": ["schema", "grad"],
    "completion": ["completion", "bash"],
    "help": ["help", "grad"],
    "train": ["train", "sample:linear", "--wrt", "w,b", "--steps", "5", "--format", "json"],
    "worksheet": ["worksheet", "sample:seed", "--seed", "3"],
}
NO_COLOR_ENV = {"NO_COLOR": None, "FORCE_COLOR": None}  # whatever the tests run under
INSTALLED = Path(sys.executable).with_name("cgraph")
on_posix = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


def run(*args: str, input: str | None = None, env: dict | None = None):
    return make_runner().invoke(main, list(args), input=input, env={**NO_COLOR_ENV, **(env or {})})


def options(name: str) -> dict[str, click.Option]:
    """Every spelling of every visible option of command ``name``."""
    command = main.commands[name]
    return {
        spelling: p
        for p in command.params
        if isinstance(p, click.Option) and not p.hidden
        for spelling in p.opts
    }


def installed() -> list[str]:
    return [str(INSTALLED)] if INSTALLED.exists() else [sys.executable, "-m", "cgraph_cli"]


def on_terminal(args: list[str], stream: str, env: dict | None = None, columns: int = 80):
    """Run the installed command with ``stream`` (stdout or stderr) on a pseudo-terminal
    ``columns`` wide and the other one on a pipe; returns (exit code, terminal text, piped
    text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ.pop("COLUMNS", None)
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: slave}
    proc = subprocess.Popen(
        installed() + args,
        stdin=subprocess.DEVNULL,
        env={**environ, "TERM": "xterm", **(env or {})},
        **streams,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the other side closed: Linux says EIO
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    other = (proc.stderr if stream == "stdout" else proc.stdout).read()
    proc.wait()
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return proc.returncode, text, other.decode()


# 1. One vocabulary of options -----------------------------------------------------------------


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_output_color_and_quiet(name):
    found = options(name)
    if name == "lsp":  # standard output is the protocol's: no -o
        assert {"--color", "-q", "--quiet"} <= set(found) and "-o" not in found
        return
    assert {"-o", "--output", "--color", "-q", "--quiet"} <= set(found)
    assert list(found["--color"].type.choices) == ["auto", "always", "never"]
    assert found["-o"] is found["--output"]


@pytest.mark.parametrize("name", COMMANDS)
def test_format_is_the_report_format(name):
    found = options(name)
    if name in FORMATS:
        assert list(found["--format"].type.choices) == FORMATS[name]
    else:
        assert "--format" not in found
    assert ("--precision" in found) == (name in NUMBERS)
    assert ("--of" in found) == (name in NAMED_OUTPUT)
    assert ("--no-grads" in found) == (name in NO_GRADS)


def test_render_takes_its_image_type_from_type_or_from_the_output_name(tmp_path):
    types = ["png", "svg", "pdf", "html", "tex", "mmd", "dot", "gv"]
    assert list(options("render")["-T"].type.choices) == types
    assert run("render", "sample:seed", "-o", str(tmp_path / "seed.svg")).exit_code == 0
    assert b"<svg" in (tmp_path / "seed.svg").read_bytes()
    dot = run("render", "sample:seed", "-T", "dot", "-o", "-")
    assert dot.exit_code == 0 and dot.stdout.startswith("digraph")


def test_table_is_still_accepted_for_text():
    assert (
        run("grad", "sample:seed", "--format", "table").stdout == run("grad", "sample:seed").stdout
    )


def test_the_shared_options_say_the_same_in_every_command():
    helps: dict[str, dict[str, list[str]]] = {}
    for name in COMMANDS:
        for option in {id(p): p for p in options(name).values()}.values():
            helps.setdefault(option.opts[-1], {}).setdefault(option.help, []).append(name)
    differing = {opt: texts for opt, texts in helps.items() if len(texts) > 1}
    assert set(differing) <= OWN_HELP, differing
    assert all(h.startswith("Significant digits shown (") for h in helps["--precision"])
    assert len(helps["--of"]) == len(helps["--wrt"]) == 1


# (cgraph lsp has no -o: its standard output is the protocol, tests/test_lsp.py)
@pytest.mark.parametrize("name", [name for name in COMMANDS if name != "lsp"])
def test_output_file_holds_what_standard_output_would(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if name == "train":  # -o is the weights file, as issue 15 asks (cgraph train --help says so)
        written = run(*RUNS[name], "-o", str(tmp_path / "w.npz"))
        assert written.exit_code == 0 and '"steps": 5' in written.stdout
        assert (tmp_path / "w.npz").read_bytes()[:2] == b"PK"
        return
    shown = run(*RUNS[name])
    written = run(*RUNS[name], "-o", str(tmp_path / "out"))
    assert shown.exit_code == written.exit_code == 0, written.stderr
    assert (tmp_path / "out").read_bytes() == shown.stdout_bytes
    assert written.stdout == ""


def test_dash_is_standard_input_for_bindings_and_standard_output_for_junit():
    result = run(
        "grad", "y = a * b", "--bindings", "-", "--format", "plain", input='{"a": 2, "b": 5}'
    )
    assert result.stdout == "a=5\nb=2\ny=10\n"
    junit = run("check", "sample:seed", "--expect", "g=-12", "--junit", "-")
    assert junit.stdout.startswith("<?xml") and "1 passed, 0 failed" in junit.stderr


def test_quiet_silences_notes(tmp_path):
    target = str(tmp_path / "seed.svg")
    assert "wrote" in run("render", "sample:seed", "-o", target).stderr
    assert run("render", "sample:seed", "-o", target, "-q").stderr == ""


# 2. Colour --------------------------------------------------------------------------------------

FAILING = ["check", "y = 2 * x", "x=1", "--expect", "y=3"]


@pytest.mark.parametrize(
    "args", [RUNS["eval"], RUNS["grad"], RUNS["show"], RUNS["gradcheck"], FAILING]
)
def test_color_follows_the_option_then_force_color(args):
    assert ESC not in run(*args).stdout  # not a terminal
    assert ESC in run(*args, "--color", "always").stdout
    assert ESC in run(*args, env={"FORCE_COLOR": "1"}).stdout
    assert ESC not in run(*args, "--color", "never", env={"FORCE_COLOR": "1"}).stdout


def test_color_always_beats_no_color_in_tables_too():
    # rich read NO_COLOR itself and dropped the green of "ok" that --color always asked for
    result = run(*RUNS["gradcheck"], "--color", "always", env={"NO_COLOR": "1"})
    assert f"{ESC}32mok" in result.stdout


def test_a_failed_check_is_red_only_where_colour_is_wanted():
    assert f"{ESC}31m{ESC}1mFAIL" in run(*FAILING, env={"FORCE_COLOR": "1"}).stdout
    assert "FAIL" in run(*FAILING).stdout and ESC not in run(*FAILING).stdout


def test_error_messages_follow_color_too():
    program_error = ["eval", "y = 2 *", "--color"]
    assert ESC in run(*program_error, "always").stderr
    assert ESC not in run(*program_error, "never", env={"FORCE_COLOR": "1"}).stderr
    assert ESC in run("eval", "y = 2 *", env={"FORCE_COLOR": "1"}).stderr
    # a usage error comes before click reads --color: it is honoured all the same
    assert ESC in run("eval", "--color", "always", "--bogus").stderr
    assert ESC not in run("eval", "--color=never", "--bogus", env={"FORCE_COLOR": "1"}).stderr


def test_an_output_file_is_not_coloured_unless_asked(tmp_path):
    target = tmp_path / "report.txt"
    run(*FAILING, "-o", str(target), env={"FORCE_COLOR": "1"})
    assert "FAIL" in target.read_text() and ESC not in target.read_text()
    run(*FAILING, "-o", str(target), "--color", "always")
    assert ESC in target.read_text()


def test_options_do_not_carry_over_from_one_run_to_the_next():
    runner = make_runner()
    runner.invoke(main, [*FAILING, "--color", "always", "-q"], env=NO_COLOR_ENV)
    after = runner.invoke(main, ["eval", "--bogus"], env=NO_COLOR_ENV)
    assert ESC not in after.stderr


@on_posix
def test_no_color_on_a_terminal():
    code, text, _ = on_terminal(FAILING, "stdout")
    assert code == 1 and f"{ESC}31m" in text  # red FAIL on a terminal
    code, text, _ = on_terminal(FAILING, "stdout", env={"NO_COLOR": "1"})
    assert code == 1 and "FAIL" in text and ESC not in text


# 3. Output in pipes -----------------------------------------------------------------------------

LONG = "a_long_name_" * 25  # 300 characters


def _layout_faults(text: str) -> list[str]:
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return [ln for ln in plain.split("\n") if "…" in ln or ln.endswith(" ")]


@pytest.mark.parametrize("name", ["eval", "grad", "show", "gradcheck", "explain", "check"])
def test_piped_output_is_never_cut_padded_or_fitted_to_a_width(name):
    args = [name, f"y = {LONG} * 2 + sin({LONG})", f"{LONG}=1"]
    args += (
        ["--expect-grad", f"{LONG}=0"] if name == "check" else ["--all"] if name == "eval" else []
    )
    narrow = run(*args, env={"COLUMNS": "40"})
    assert narrow.exit_code in (0, 1), narrow.stderr
    assert _layout_faults(narrow.stdout) == []
    assert any(LONG in line for line in narrow.stdout.split("\n"))
    assert narrow.stdout == run(*args, env={"COLUMNS": "200"}).stdout
    assert _layout_faults(run(*args, "--color", "always").stdout) == []


def test_a_wide_matrix_keeps_each_row_on_one_line(tmp_path):
    matrix = [[i + j / 10 for j in range(30)] for i in range(30)]
    (tmp_path / "w.json").write_text(json.dumps({"W": matrix}))
    result = run("eval", "y = W * 2", "--bindings", str(tmp_path / "w.json"), "--full", "--all")
    assert result.exit_code == 0 and _layout_faults(result.stdout) == []
    rows = [ln for ln in result.stdout.split("\n") if re.match(r"\s*(W\s.*)?\[", ln)][:30]
    assert len(rows) == 30
    assert all(len(re.findall(r"-?\d+(?:\.\d+)?", r.split("[")[-1])) == 30 for r in rows)


@on_posix
def test_a_terminal_gets_its_own_width():
    args = ["eval", f"y = {LONG} * 2", f"{LONG}=1", "--all"]
    code, text, _ = on_terminal(args, "stdout", columns=60)
    assert code == 0
    assert max(len(re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", ln)) for ln in text.split("\n")) <= 60
    assert max(len(ln) for ln in run(*args).stdout.split("\n")) > 300


# 4. Errors in one style -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, command",
    [
        (["nosuch"], "main"),
        (["--bogus"], "main"),
        (["eval", "--bogus"], "main eval"),
        (["eval", "x", "--format", "xml"], "main eval"),
        (["eval", "x", "--of"], "main eval"),
        (["grad", "x", "--wrt"], "main grad"),
        (["render", "x", "-T", "jpg"], "main render"),
        (["show", "x", "--depth", "0"], "main show"),
        (["samples", "a", "b"], "main samples"),
        (["check", "x", "--color", "pink"], "main check"),
    ],
)
def test_usage_errors_are_in_cgraph_style(args, command):
    result = run(*args)
    assert result.exit_code == 2
    first, *rest = result.stderr.rstrip("\n").split("\n")
    assert first.startswith("cgraph: error: ") and "Usage:" not in result.stderr
    assert rest == [f"help: see '{command} --help'"]


def test_no_command_prints_the_help_not_an_error():
    result = run()
    assert result.exit_code == 2
    assert result.stderr.startswith("Usage: ") and "Commands:" in result.stderr
    assert "error" not in result.stderr.split("\n")[0]


def test_the_installed_command_names_itself_cgraph():
    proc = subprocess.run(installed() + ["eval", "x", "--of"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == (
        "cgraph: error: Option '--of' requires an argument.\nhelp: see 'cgraph eval --help'\n"
    )


# 5. Progress bars -------------------------------------------------------------------------------

BAR = "━"


@on_posix
def test_gradcheck_shows_a_bar_on_a_terminal_only():
    args = ["gradcheck", "y = x^3 - sin(x)", "--points", "300"]
    code, text, out = on_terminal(args, "stderr")
    assert code == 0 and "gradcheck" in text and BAR in text and "300 passed" in out
    assert on_terminal([*args, "-q"], "stderr")[1] == ""
    assert run(*args).stderr == ""  # a pipe


@on_posix
def test_explain_frames_shows_a_bar(tmp_path):
    args = ["explain", "sample:seed", "--frames", str(tmp_path), "--frames-format", "svg"]
    code, text, _ = on_terminal(args, "stderr")
    assert code == 0 and "frames" in text and BAR in text
    assert "wrote 5 frames" in text
    assert run(*args).stderr == f"wrote 5 frames to {tmp_path}\n"


@on_posix
def test_a_big_render_shows_a_bar(tmp_path):
    program = "\n".join(["y0 = x"] + [f"y{i} = y{i - 1} * 0.5 + x" for i in range(1, 34)])
    (tmp_path / "chain.cg").write_text(program)
    args = [str(tmp_path / "chain.cg"), "x=1", "-o", str(tmp_path / "chain.svg")]
    code, text, _ = on_terminal(["render", *args], "stderr")
    assert code == 0 and "drawing 100 nodes" in text and BAR in text
    code, text, _ = on_terminal(["render", "sample:seed", "-o", str(tmp_path / "s.svg")], "stderr")
    assert code == 0 and BAR not in text  # a small one is quick


# 6. Help examples run as printed ----------------------------------------------------------------


def _examples() -> list[tuple[str, str]]:
    found = []
    for name in ["", *COMMANDS]:
        text = run(*([name] if name else []), "--help").stdout
        for line in text.split("\n"):
            line = line.strip()
            if line.startswith("cgraph ") or (line.startswith("echo ") and "| cgraph " in line):
                found.append((name or "cgraph", line))
    return found


EXAMPLES = _examples()


def test_every_command_has_examples():
    assert {name for name, _ in EXAMPLES} == {"cgraph", *COMMANDS}


@pytest.mark.parametrize("name, line", EXAMPLES, ids=[line for _, line in EXAMPLES])
def test_help_examples_run_from_an_empty_folder(name, line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    given = None
    if line.startswith("echo "):
        echo, line = line.split("|", 1)
        given = shlex.split(echo)[1] + "\n"
    command = re.split(r"\s[|>#]", line)[0]
    result = run(*shlex.split(command)[1:], input=given)
    assert result.exit_code == 0, f"{line}\n{result.stderr}"


# 7. Start-up ------------------------------------------------------------------------------------


def _imported(code: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(proc.stdout.split("\n")[-2].split())


def test_importing_the_package_imports_no_pass():
    modules = _imported("import cgraph_cli")
    assert not modules & {
        "cgraph_cli.app.api",
        "cgraph_cli.parse.driver",
        "cgraph_cli.run.vjp",
        "difflib",
    }


def test_eval_imports_neither_diagrams_nor_checks():
    modules = _imported(
        "from cgraph_cli.cli import main\n"
        "main(['eval', 'x + 1', 'x=2', '--format', 'json'], standalone_mode=False)"
    )
    assert "cgraph_cli.cli.compute" in modules
    unneeded = {"cgraph_cli.cli.draw", "cgraph_cli.cli.checks", "cgraph_cli.render.dot"}
    assert not modules & (unneeded | {"pathlib", "rich", "numpy"})


GC_STATE = "import gc, sys; print(gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)"


def test_the_command_pauses_the_collector_while_it_imports_and_a_library_user_is_left_alone(
    tmp_path,
):
    # A program importing the library: the collector as it was, nothing frozen.
    proc = subprocess.run(
        [sys.executable, "-c", "import cgraph_cli.cli, gc; print(gc.isenabled(), gc.get_freeze_count())"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert proc.stdout.split() == ["True", "0"]
    # The command (python -m cgraph_cli, and a script called cgraph): the collector running
    # again once the imports are done, and what they made frozen.
    probe = tmp_path / "sitecustomize.py"
    probe.write_text(f"import atexit\natexit.register(lambda: exec({GC_STATE!r}))\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    script = tmp_path / "cgraph"
    script.write_text("from cgraph_cli.cli import run\nrun()\n")
    for argv in ([sys.executable, "-m", "cgraph_cli"], [sys.executable, str(script)]):
        proc = subprocess.run(
            [*argv, "eval", "x + 1", "x=2"], capture_output=True, text=True, env=env, check=True
        )
        assert proc.stdout.strip().endswith("= 3") and proc.stderr.split() == ["True", "True"], argv


def test_the_lazy_tables_name_every_command_and_public_name():
    import cgraph_cli
    from cgraph_cli.cli import group

    loaded = {name: main.commands[name] for name in group.LAZY_COMMANDS}
    families = [
        "compute",
        "derivatives",
        "optimize",
        "draw",
        "checks",
        "gradcheck",
        "explain",
        "samples",
        "schema",
        "completion",
        "help",
        "train",
        "worksheet",
        "imports",
        "lsp",
    ]
    listed = [c for m in families for c in sys.modules[f"cgraph_cli.cli.{m}"].COMMANDS]
    assert loaded == {c.name: c for c in listed}
    assert sorted(cgraph_cli.__all__) == sorted([*cgraph_cli._LAZY, "parse", "__version__"])
    assert all(getattr(cgraph_cli, name) is not None for name in cgraph_cli.__all__)


def test_loading_a_command_keeps_the_entry_point():
    modules = _imported(
        "import cgraph_cli.cli as cli\n"
        "cli.main(['eval', 'x + 1', 'x=2'], standalone_mode=False)\n"
        "assert cli.run is cli.group.run, cli.run"
    )
    assert "cgraph_cli.cli.compute" in modules
