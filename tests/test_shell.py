"""Shell completion (bash, zsh, fish) and the manual pages.

Completion is tested three ways: click's own API in-process; the bash script sourced in
``bash -c`` with COMP_WORDS as bash splits them (at ':' and '=' too); and real line editors in
a pseudo-terminal (bash's readline, zsh's zle) and fish's ``complete -C``, where the shell is
installed (CI installs bash only; zsh and fish tests are skipped without them).
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from cgraph_cli.cli import main
from cgraph_cli.cli.completion import COMPLETE_VAR, BashComplete
from cgraph_cli.cli.manpages import man_page, man_pages, page_name
from cgraph_cli.data.sources import sample_names

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
COMMANDS = sorted(main.commands)
SAMPLES = [f"sample:{n}" for n in sample_names()]


@pytest.fixture
def folder(tmp_path):
    """A working folder with a file and a folder whose names start like 'sample:'."""
    (tmp_path / "samfile.cg").write_text("g = x + 1\n")
    (tmp_path / "samdir").mkdir()
    (tmp_path / "other.json").write_text("{}")
    return tmp_path


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_CGRAPH", "COMP_"))}
    return {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "HOME": str(home)}


def _script(cli, shell: str, where: Path) -> Path:
    result = cli("completion", shell)
    assert result.exit_code == 0, result.stderr
    path = where / f"cgraph.{shell}"
    path.write_text(result.stdout)
    return path


# --- click's API, in-process -------------------------------------------------------------


def completions(args: list[str], incomplete: str) -> list[tuple[str, str]]:
    items = BashComplete(main, {}, "cgraph", COMPLETE_VAR).get_completions(args, incomplete)
    return [(item.type, item.value) for item in items]


@pytest.mark.parametrize(
    "args, incomplete, expected",
    [
        ([], "gr", [("plain", "grad"), ("plain", "gradcheck")]),
        ([], "compl", [("plain", "completion")]),
        ([], "comp", [("plain", "compile"), ("plain", "completion")]),
        (["render"], "--th", [("plain", "--theme")]),
        (["eval", "--format"], "j", [("plain", "json")]),
        (["render", "--theme"], "", [("plain", "light"), ("plain", "dark"), ("plain", "print")]),
        (["completion"], "", [("plain", "bash"), ("plain", "zsh"), ("plain", "fish")]),
        (["help"], "show", [("plain", "show")]),
        (["samples"], "ch", [("plain", "checks.toml")]),
        (["samples"], "neu", [("plain", "neuron")]),
    ],
)
def test_commands_options_and_choices_complete(args, incomplete, expected):
    assert completions(args, incomplete) == expected


@pytest.mark.parametrize(
    "args",
    [
        ["grad", "x.cg", "-o"],
        ["grad", "x.cg", "--output"],
        ["render", "x.cg", "-o"],
        ["eval", "--bindings"],
        ["eval", "-f"],
        ["check", "--spec"],
        ["check", "x.cg", "--junit"],
    ],
)
def test_path_options_complete_files(args):
    assert completions(args, "sa") == [("file", "sa")]


def test_frames_completes_folders():
    assert completions(["explain", "x.cg", "--frames"], "fr") == [("dir", "fr")]


def test_source_completes_samples_and_files():
    assert completions(["render"], "sam") == [*(("plain", s) for s in SAMPLES), ("file", "sam")]
    assert completions(["grad"], "sample:s") == [
        ("plain", "sample:seed"),
        ("plain", "sample:softmax_cross_entropy"),
    ]


@pytest.mark.parametrize("args", [["eval", "sample:seed"], ["eval", "-e", "g = x"]])
def test_nothing_is_offered_once_the_program_is_given(args):
    # What follows SOURCE is NAME=VALUE: neither a file nor a sample.
    assert completions(args, "") == []


@pytest.mark.parametrize(
    "line, args, incomplete, kept",
    [
        ("cgraph render sample:se", ["render"], "sample:se", 7),
        ("cgraph render sample:", ["render"], "sample:", 7),
        ("cgraph render 'sample:se", ["render"], "sample:se", 0),  # quoted: bash keeps it whole
        ("cgraph render 'my fi", ["render"], "my fi", 0),
        ("cgraph eval --bindings=sa", ["eval"], "--bindings=sa", 0),
        ("cgraph render ", ["render"], "", 0),
    ],
)
def test_bash_reads_the_line_as_typed(monkeypatch, line, args, incomplete, kept):
    monkeypatch.setenv("COMP_LINE", line)
    monkeypatch.setenv("COMP_POINT", str(len(line)))
    monkeypatch.setenv("COMP_WORDBREAKS", " \t\n\"'@><=;|&(:")
    completer = BashComplete(main, {}, "cgraph", COMPLETE_VAR)
    assert completer.get_completion_args() == (args, incomplete)
    assert completer.trim == kept


def test_a_failing_completion_prints_no_traceback(tmp_path):
    # Without the variables the script sets, click's completer raises KeyError.
    proc = subprocess.run(
        [str(BIN / "cgraph")],
        env={**_env(tmp_path), COMPLETE_VAR: "bash_complete"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0 and proc.stderr == "" and "Traceback" not in proc.stdout


# --- the completion command --------------------------------------------------------------


@pytest.mark.parametrize(
    "shell, line",
    [
        ("bash", "complete -o nosort -F _cgraph_completion cgraph"),
        ("zsh", "compdef _cgraph_completion cgraph"),
        ("fish", "complete --no-files --command cgraph"),
    ],
)
def test_completion_prints_the_script(cli, shell, line):
    result = cli("completion", shell)
    assert result.exit_code == 0
    assert line in result.stdout and f"{COMPLETE_VAR}={shell}_complete" in result.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_scripts_parse(cli, tmp_path, shell):
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    path = _script(cli, shell, tmp_path)
    check = [shell, "--no-execute" if shell == "fish" else "-n", str(path)]
    proc = subprocess.run(check, capture_output=True, text=True, env=_env(tmp_path))
    assert proc.returncode == 0 and proc.stderr == ""


def test_completion_guesses_the_shell_from_SHELL(cli, monkeypatch):
    monkeypatch.setenv("SHELL", "/usr/bin/zsh")
    assert "compdef _cgraph_completion cgraph" in cli("completion").stdout


@pytest.mark.parametrize("shell, said", [("/bin/tcsh", "$SHELL is '/bin/tcsh'"), ("", "not set")])
def test_completion_without_a_shell_it_knows_is_exit_2(cli, monkeypatch, shell, said):
    monkeypatch.setenv("SHELL", shell)
    result = cli("completion")
    assert result.exit_code == 2
    assert "cgraph: error: cannot tell which shell to complete for" in result.stderr
    assert said in result.stderr and "help: name it: cgraph completion bash" in result.stderr


def test_completion_of_an_unknown_shell_is_exit_2(cli):
    result = cli("completion", "tcsh")
    assert result.exit_code == 2 and "'tcsh' is not one of" in result.stderr


def test_completion_writes_to_o(cli, tmp_path):
    target = tmp_path / "cgraph.fish"
    assert cli("completion", "fish", "-o", str(target)).exit_code == 0
    assert "complete --no-files --command cgraph" in target.read_text()


# --- bash: the script, with COMP_WORDS as bash splits them -------------------------------

BASH_CALL = r"""
source "$1"
compopt() { local IFS=' '; printf 'compopt %s\n' "$*" >&2; }  # works only under readline: record instead
COMP_CWORD=$2 COMP_LINE=$3 COMP_POINT=${#3}
COMP_WORDS=("${@:4}")
_cgraph_completion cgraph
printf '%s\n' "${COMPREPLY[@]}"
"""


def bash_words(line: str) -> list[str]:
    """COMP_WORDS as bash makes them: split at spaces, and ':' and '=' are words of their own."""
    return re.findall(r"[^\s:=]+|[:=]", line) + ([""] if line.endswith(" ") else [])


@pytest.fixture
def bash(cli, folder):
    if not shutil.which("bash"):
        pytest.skip("bash is not installed")
    script = _script(cli, "bash", folder / "samdir")

    def complete(line: str) -> tuple[list[str], str]:
        words = bash_words(line)
        proc = subprocess.run(
            ["bash", "--norc", "--noprofile", "-c", BASH_CALL, "bash", str(script)]
            + [str(len(words) - 1), line, *words],
            capture_output=True,
            text=True,
            cwd=folder,
            env=_env(folder),
        )
        return [ln for ln in proc.stdout.split("\n") if ln], proc.stderr

    return complete


@pytest.mark.parametrize(
    "line, expected",
    [
        ("cgraph ren", ["render"]),
        ("cgraph render --th", ["--theme"]),
        ("cgraph render x.cg --theme ", ["light", "dark", "print"]),
        ("cgraph eval x.cg --format j", ["json"]),
        ("cgraph completion ", ["bash", "zsh", "fish"]),
        ("cgraph help gr", ["grad", "gradcheck"]),
        # bash splits sample:s at the colon and replaces only 's': the suggestions say the rest
        ("cgraph render sample:s", ["seed", "softmax_cross_entropy"]),
        ("cgraph render sample:", sample_names()),
        ("cgraph eval sample:seed ", []),
    ],
)
def test_bash_completes(bash, line, expected):
    assert bash(line) == (expected, "")


def test_bash_completes_samples_and_files_together(bash):
    replies, stderr = bash("cgraph render sam")
    assert sorted(replies) == sorted([*SAMPLES, "samdir", "samfile.cg"])
    assert stderr == "compopt -o filenames\n"  # readline quotes them and puts / after samdir


@pytest.mark.parametrize(
    "line",
    [
        "cgraph grad x.cg -o sam",
        "cgraph eval --bindings sam",
        "cgraph eval --bindings=sam",
        "cgraph check --spec sam",
        "cgraph check x.cg --junit sam",
        "cgraph eval -f sam",
    ],
)
def test_bash_completes_file_names(bash, line):
    assert bash(line) == (["samdir", "samfile.cg"], "compopt -o filenames\n")


def test_bash_takes_file_names_as_they_are(bash, folder):
    # Not as glob patterns: sam[1].cg must not turn into sam1.cg.
    (folder / "sam[1].cg").write_text("")
    (folder / "sam1.cg").write_text("")
    assert bash("cgraph eval -f sam[") == (["sam[1].cg"], "compopt -o filenames\n")


def test_bash_completes_folders_for_frames(bash):
    assert bash("cgraph explain x.cg --frames sam") == (["samdir"], "compopt -o filenames\n")


# --- real line editors in a pseudo-terminal, and fish's own completion --------------------


def _type_into(argv: list[str], setup: str, keys: str, expect: re.Pattern, cwd: Path) -> str:
    """Start an interactive shell, type ``setup`` and ``keys``, and return what it printed once
    ``expect`` matches (or after 20 s)."""
    # subprocess, not pty.fork: the test process may run threads by now (Dask's), and a fork
    # with Python code in the child can deadlock there; the shell gets the terminal as its
    # standard streams, in a session of its own.
    fd, terminal = pty.openpty()
    env = {**_env(cwd), "TERM": "dumb", "PS1": "$ ", "INPUTRC": "/dev/null"}
    env.pop("EDITOR", None)
    env.pop("VISUAL", None)
    child = subprocess.Popen(
        argv, stdin=terminal, stdout=terminal, stderr=terminal, cwd=cwd, env=env,
        start_new_session=True,
    )  # fmt: skip
    os.close(terminal)
    seen = b""

    def read_until(pattern: re.Pattern) -> None:
        nonlocal seen
        deadline = time.monotonic() + 20
        while not pattern.search(seen.decode(errors="replace")) and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    break

    try:
        # The shell may drop what is typed before it is ready: wait for READY (typed RE""ADY).
        os.write(fd, (setup + '; echo RE""ADY\n').encode())
        read_until(re.compile("READY"))
        os.write(fd, keys.encode())
        read_until(expect)
    finally:
        child.kill()
        child.wait()
        os.close(fd)
    return seen.decode(errors="replace")


# TAB completes; then Ctrl-A, 'echo ::', Ctrl-E, '::' and Enter print the line as completed.
SHOW_LINE = "\t\x01echo ::\x05::\n"


@pytest.mark.parametrize(
    "typed, completed",
    [
        ("cgraph render sample:se", "cgraph render sample:seed "),
        ("cgraph ren", "cgraph render "),
        ("cgraph render --theme d", "cgraph render --theme dark "),
        ("cgraph render samd", "cgraph render samdir/"),
    ],
)
@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_real_shell_completes_the_line(cli, folder, shell, typed, completed):
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    script = _script(cli, shell, folder / "samdir")
    if shell == "bash":
        argv, setup = ["bash", "--norc", "--noprofile", "-i"], f"source {script}"
    else:
        argv, setup = ["zsh", "-f", "-i"], f"autoload -U compinit; compinit -u; source {script}"
    # zsh takes back the space or / it put after a completion when the next key is not text.
    line = re.compile(rf"::{re.escape(completed.rstrip(' /'))}[ /]?::")
    seen = _type_into(argv, setup, typed + SHOW_LINE, line, folder)
    assert line.search(seen), seen[-500:]


def test_fish_completes(cli, folder):
    if not shutil.which("fish"):
        pytest.skip("fish is not installed")
    script = _script(cli, "fish", folder / "samdir")
    lines = ["cgraph render sam", "cgraph render sample:se", "cgraph explain x --frames s"]
    code = f"source {script}; " + "; echo ==; ".join(f"complete -C '{ln}'" for ln in lines)
    proc = subprocess.run(
        ["fish", "--no-config", "-c", code],
        capture_output=True,
        text=True,
        cwd=folder,
        env=_env(folder),
    )
    sam, seed, frames = (part.split("\n") for part in proc.stdout.strip().split("\n==\n"))
    assert "samfile.cg" in sam and "samdir/" in sam and len(sam) == len(SAMPLES) + 2
    assert "sample:seed\tThe worked example: an addition feeding a multiplication." in seed
    assert [ln.split("\t")[0] for ln in frames] == ["samdir/"]


# --- help and the manual pages -----------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_examples(cli, command):
    """The sqlite-utils model: every command has a summary, a description and examples."""
    cmd = main.commands[command]
    assert cmd.short_help and cmd.help
    result = cli(command, "--help")
    assert result.exit_code == 0
    examples = result.stdout.split("Examples:\n", 1)[1]
    assert re.search(rf"^\s+cgraph {command}\b", examples, re.M)
    assert "Exit codes:" in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_help_command_prints_the_commands_help(cli, command):
    result = cli("help", command)
    assert result.exit_code == 0
    assert result.stdout == cli(command, "--help").stdout


def test_help_without_a_command_is_cgraphs(cli):
    assert cli("help").stdout == cli("--help").stdout


def test_help_of_an_unknown_command_is_exit_2(cli):
    result = cli("help", "gard")
    assert result.exit_code == 2
    assert "cgraph: error: no command named 'gard'" in result.stderr
    assert "help: did you mean 'grad'?" in result.stderr


def test_help_man_prints_the_page(cli, tmp_path):
    assert cli("help", "grad", "--man").stdout == man_page("grad")
    assert cli("help", "--man").stdout == man_page(None)
    target = tmp_path / "cgraph-grad.1"
    assert cli("help", "grad", "--man", "-o", str(target)).exit_code == 0
    assert target.read_text() == man_page("grad")
    target = tmp_path / "grad.txt"
    assert cli("help", "grad", "-o", str(target)).exit_code == 0
    assert target.read_text() == cli("grad", "--help").stdout


def test_every_command_has_a_man_page():
    assert set(man_pages()) == {"cgraph.1"} | {f"cgraph-{c}.1" for c in COMMANDS}


def _troff(text: str) -> str:
    return text.replace("-", "\\-")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_page_has_every_section_and_option(command):
    page = man_page(command)
    sections = re.findall(r"^\.SH (.+)$", page, re.M)
    assert sections == [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "EXAMPLES",
        "EXIT STATUS",
        "SEE ALSO",
    ]
    assert f"\ncgraph\\-{command} \\- " in page and "\n.B 2\n" in page
    cmd = main.commands[command]
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.hidden:
            for name in param.opts:
                assert f"\\fB{_troff(name)}\\fR" in page, name
            if isinstance(param.type, click.Choice):
                assert _troff("|".join(param.type.choices)) in page
    assert "\\fB\\-h\\fR, \\fB\\-\\-help\\fR" in page


def test_a_page_shows_choices_ranges_and_defaults():
    page = man_page("render")
    assert "\\fB\\-\\-theme\\fR \\fIlight|dark|print\\fR" in page
    assert "Range: 30<=x<=1200. Default: \\fB150\\fR." in page
    assert "\\fB\\-\\-hidden\\fR" not in page and "kind_old" not in page


def test_the_program_page_lists_every_command():
    page = man_page(None)
    for command in COMMANDS:
        assert (
            f"\\fBcgraph {command}\\fR" in page and f".BR {_troff(page_name(command))} (1)" in page
        )
    assert ".SH ENVIRONMENT" in page and "NO_COLOR" in page


@pytest.mark.parametrize("name", [None, *COMMANDS])
def test_groff_renders_every_page_without_warnings(name, tmp_path):
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    page = tmp_path / "page.1"
    page.write_text(man_page(name), encoding="utf-8")
    proc = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-P-cbou", str(page)],
        capture_output=True,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert proc.returncode == 0 and proc.stderr.decode() == ""
    text = proc.stdout.decode("utf-8")
    assert "EXIT STATUS" in text and "--help" in text  # an ASCII hyphen, not groff's ‐


def test_groff_prints_what_a_reader_can_copy(tmp_path):
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    page = tmp_path / "page.1"
    page.write_text(man_page("grad"), encoding="utf-8")
    text = subprocess.run(
        ["groff", "-man", "-Tutf8", "-P-cbou", str(page)], capture_output=True
    ).stdout.decode()
    assert "cgraph grad 'g = (x + y) * z' x=1 y=3 z=-3" in text
    assert "∂g/∂x = -3" in text
    assert "sum((W @ x - t)^2)" in text


def test_docs_man_is_up_to_date():
    folder = ROOT / "docs" / "man"
    stale = [
        name
        for name, text in man_pages().items()
        if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text
    ]
    extra = sorted({p.name for p in folder.glob("*.1")} - set(man_pages()))
    assert not stale and not extra, f"docs/man is out of date ({stale + extra}): run `make man`"
