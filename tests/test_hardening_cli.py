"""Hardening of the CLI (issue 9): deep trees, large frame sets, unwritable outputs, unknown
names, Ctrl-C, locales that cannot spell ∂, and readers that go away."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from cgraph_cli import validate
from cgraph_cli.core.errors import Source, UnknownNameError, UsageError
from cgraph_cli.core.ir import GraphBuilder
from cgraph_cli.core.ops import OPS

ROOT = Path(__file__).resolve().parent.parent
SEED = str(ROOT / "samples" / "seed.cg")
CHECKS = str(ROOT / "samples" / "checks.toml")


def chain_program(n: int) -> str:
    """x1 = x0 + 1, x2 = x1 * x0, x3 = x2 + 1, ...: n statements, n levels deep."""
    lines = ["x1 = x0 + 1"]
    lines += [
        f"x{i} = x{i - 1} * x0" if i % 2 == 0 else f"x{i} = x{i - 1} + 1" for i in range(2, n + 1)
    ]
    return "\n".join(lines) + "\n"


def chain_graph(n: int):
    """The same shape as `chain_program` without the parser (100,000 statements parse in
    seconds): x_i = x_{i-1} (+ or ×) x0."""
    b = GraphBuilder(Source("", "<chain>"))
    x0 = node = b.input("x0", 0, 0)
    for i in range(1, n + 1):
        node = b.add(OPS["mul" if i % 2 == 0 else "add"], (node, x0), 0, 0)
        b.name(node, f"x{i}")
        b.statement("=", f"x{i}", node)
    return validate(b.finish(node, f"x{n}"))


# --- 1. show: a depth limit, and where to continue --------------------------------------------
def test_show_of_a_20000_statement_chain_stops_at_40_levels_naming_where_to_go_on(cli, tmp_path):
    path = tmp_path / "chain.cg"
    path.write_text(chain_program(20_000))
    start = time.perf_counter()
    result = cli("show", str(path), "x0=1")
    assert result.exit_code == 0, result.stderr
    assert time.perf_counter() - start < 20  # was 43 s; about 1 s now
    lines = result.stdout.splitlines()
    assert len(lines) < 100  # 40 levels, two lines each at the most
    cut = [line for line in lines if "…" in line]
    assert len(cut) == 1
    assert cut[0].endswith("└── … 19,960 more levels: continue with --of x19960")
    # the line above the cut is x19960 itself, drawn whole although it is 40 levels deep
    assert "x19960 = x19959 * x0 = 9981    ∂x20000/∂x19960 = 1" in lines[lines.index(cut[0]) - 1]


def test_a_100000_deep_tree_draws_in_bounded_lines():
    from cgraph_cli.render.tree import graph_tree, tree_width

    graph = chain_graph(100_000)
    tree = graph_tree(graph)
    out = io.StringIO()
    Console(file=out, width=tree_width(tree), color_system=None).print(tree)
    lines = out.getvalue().splitlines()
    assert lines[0] == "x100000 = x99999 * x0"
    assert len(lines) < 100
    cut = [line for line in lines if "…" in line]
    assert len(cut) == 1 and cut[0].endswith("└── … 99,960 more levels: continue with --of x99960")


def test_show_depth_option(cli, tmp_path):
    path = tmp_path / "chain.cg"
    path.write_text(chain_program(100))
    result = cli("show", str(path), "--no-values", "--depth", "3")
    assert result.stdout.splitlines()[:4] == [
        "x100 = x99 * x0",
        "├── x99 = x98 + 1",
        "│   ├── x98 = x97 * x0",
        "│   │   ├── x97 = x96 + 1",
    ]
    assert "│   │   │   └── … 97 more levels: continue with --of x97" in result.stdout
    assert len(result.stdout.splitlines()) == 8
    more = cli("show", str(path), "--no-values", "--depth", "3", "--of", "x97")  # carries on
    assert more.stdout.startswith("x97 = x96 + 1\n")
    assert "… 94 more levels: continue with --of x94" in more.stdout
    result = cli("show", str(path), "--no-values", "--depth", "0")
    assert result.exit_code == 2 and "--depth" in result.stderr
    assert "Levels drawn below the top" in cli("show", "--help").stdout


def test_show_deeper_than_the_terminal_is_wide_loses_no_node(cli, tmp_path):
    # rich used to drop, silently, every label past ~19 levels of an 80-column console
    path = tmp_path / "chain.cg"
    path.write_text(chain_program(35))
    result = cli("show", str(path), "x0=1")
    assert result.exit_code == 0
    for i in range(1, 36):
        assert f"x{i} = x{i - 1} " in result.stdout, i
    assert "…" not in result.stdout


def test_a_deep_unnamed_expression_points_to_depth(cli):
    result = cli("show", "g = " + "sin(" * 50 + "x" + ")" * 50, "--no-values")
    assert result.exit_code == 0
    assert result.stdout.rstrip().endswith("… 10 more levels: draw more with --depth 50")
    full = cli("show", "g = " + "sin(" * 50 + "x" + ")" * 50, "--no-values", "--depth", "50")
    assert "…" not in full.stdout and full.stdout.rstrip().endswith("└── x  input")


def test_the_cut_names_the_deepest_name_above_an_unnamed_node(cli):
    # x1 is named; the sin nodes under it are not: continue from x1
    program = "x1 = " + "sin(" * 45 + "x0" + ")" * 45 + "\ng = x1 + 1"
    result = cli("show", program, "--no-values")
    assert "… 6 more levels: continue with --of x1" in result.stdout


# --- 2. explain --frames: the render limit ----------------------------------------------------
def test_explain_frames_of_a_1000_node_program_is_refused_unless_forced(cli, tmp_path):
    program = "\n".join(["x1 = x0 + 1"] + [f"x{i} = x{i - 1} * 2" for i in range(2, 501)])
    frames = tmp_path / "frames"
    result = cli("explain", "-e", program, "x0=1", "--frames", str(frames))
    assert result.exit_code == 2
    assert "each frame would have 1,001 nodes; more than 500 are slow" in result.stderr
    assert "--of NAME, or all of it with --force" in result.stderr
    assert result.stdout == "" and not frames.exists()  # refused before any work
    assert "--force" in cli("explain", "--help").stdout


def test_explain_force_passes_the_frame_limit(tmp_path):
    from cgraph_cli.app.frames import frames_folder

    graph = chain_graph(600)
    with pytest.raises(UsageError, match="601 nodes"):
        frames_folder(graph, None, tmp_path / "a")
    assert frames_folder(graph, None, tmp_path / "b", force=True).is_dir()
    assert frames_folder(graph, "x10", tmp_path / "c").is_dir()  # --of: a small part


# --- 3. outputs that cannot be written --------------------------------------------------------
def render_to(cli, target) -> object:
    return cli("render", SEED, "--format", "dot", "-o", str(target))


def test_render_under_a_file(cli, tmp_path):
    (tmp_path / "file.txt").write_text("")
    result = render_to(cli, tmp_path / "file.txt" / "x.dot")
    assert result.exit_code == 2
    assert result.stderr == (
        f"cgraph: error: cannot write {tmp_path}/file.txt/x.dot: "
        f"{tmp_path}/file.txt is a file, not a folder\n"
    )


def test_render_into_a_missing_folder(cli, tmp_path):
    result = render_to(cli, tmp_path / "missing" / "deeper" / "x.dot")
    assert result.exit_code == 2
    assert result.stderr.endswith(f"x.dot: the folder {tmp_path}/missing does not exist\n")


def test_render_onto_a_folder(cli, tmp_path):
    (tmp_path / "seed.dot").mkdir()
    result = render_to(cli, tmp_path / "seed.dot")
    assert result.exit_code == 2
    assert result.stderr == f"cgraph: error: cannot write {tmp_path}/seed.dot: it is a folder\n"


def test_frames_where_a_folder_is_named_like_a_frame(cli, tmp_path):
    (tmp_path / "frames" / "frame-1.svg").mkdir(parents=True)
    result = cli("explain", SEED, "--frames", str(tmp_path / "frames"), "--frames-format", "svg")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"cgraph: error: {tmp_path}/frames/frame-1.svg was not written by explain --frames: "
        "refusing to overwrite it\n"
    )
    assert [p.name for p in (tmp_path / "frames").iterdir()] == ["frame-1.svg"]


def test_frames_under_a_file_or_into_a_file(cli, tmp_path):
    (tmp_path / "file.txt").write_text("")
    result = cli("explain", SEED, "--frames", str(tmp_path / "file.txt" / "frames"))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.endswith(f"{tmp_path}/file.txt is a file, not a folder\n")
    result = cli("explain", SEED, "--frames", str(tmp_path / "file.txt"))
    assert result.exit_code == 2
    assert result.stderr.endswith("file.txt: it is a file, not a folder\n")


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes in read-only folders"
)
def test_frames_into_a_read_only_folder(cli, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    result = cli("explain", SEED, "--frames", str(folder), "--frames-format", "svg")
    assert result.exit_code == 2
    assert result.stderr.endswith("frame-1.svg: no permission to write there\n")


# --- 4. unknown names are usage errors --------------------------------------------------------
NAME_OPTIONS = [
    ("eval", "--of"),
    ("grad", "--of"),
    ("grad", "--wrt"),
    ("render", "--of"),
    ("render", "--focus"),
    ("dot", "--of"),
    ("dot", "--focus"),
    ("show", "--of"),
    ("check", "--of"),
    ("gradcheck", "--of"),
    ("explain", "--of"),
]


@pytest.mark.parametrize("command, option", NAME_OPTIONS)
def test_an_unknown_name_is_a_usage_error_with_a_suggestion(cli, command, option):
    extra = {"render": ["--format", "dot", "-o", "-"], "check": ["--expect", "g=-12"]}
    result = cli(command, SEED, option, "pp", *extra.get(command, []))
    assert result.exit_code == 2, result.stderr
    assert result.stderr == (
        "cgraph: error: the program has no name 'pp'\n"
        "help: did you mean 'p'?\n"
        "help: names in the program: x, y, z, p, g\n"
    )


def test_an_unknown_wrt_comes_before_a_missing_binding(cli):
    result = cli("grad", "g = x * y", "--wrt", "w")
    assert result.exit_code == 2 and "no name 'w'" in result.stderr


def test_the_list_of_names_is_bounded():
    with pytest.raises(UnknownNameError) as err:
        from cgraph_cli.core.ir import resolve_name

        resolve_name(chain_graph(5_000), "x4999x")
    assert err.value.exit_code == 2
    assert err.value.hints[0] == "did you mean 'x4999'?"
    assert err.value.hints[1].endswith("x28, x29, … (4,971 more)")


def test_the_library_raises_a_usage_error():
    from cgraph_cli import grad

    with pytest.raises(UsageError, match="no name 'w'"):
        grad("y = x * x", {"x": 3}).wrt("w")


# --- 5. Ctrl-C --------------------------------------------------------------------------------
def test_an_interrupted_command_exits_130_with_one_line(cli, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("cgraph_cli.app.api.evaluate", interrupted)
    result = cli("eval", "y = x", "x=1")
    assert result.exit_code == 130
    assert result.stderr == "cgraph: interrupted\n"
    assert "130  interrupted (Ctrl-C)" in cli("eval", "--help").stdout


def _entry_point() -> list[str]:
    exe = Path(sys.executable).with_name("cgraph")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "cgraph_cli"]


def _blocked_reading_stdin(pid: int) -> bool:
    try:  # the syscall number (0: read) and its first argument (fd 0)
        return Path(f"/proc/{pid}/syscall").read_text().startswith("0 0x0 ")
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs Linux's /proc")
def test_ctrl_c_on_the_installed_command():
    proc = subprocess.Popen(
        _entry_point() + ["eval", "-", "x=1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not _blocked_reading_stdin(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)  # until it waits for the program on stdin, inside the command
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert err.decode() == "cgraph: interrupted\n" and out == b""


# --- 6. a locale that cannot spell ∂ ----------------------------------------------------------
POSIX = {"LC_ALL": "POSIX", "PYTHONUTF8": "0", "PYTHONIOENCODING": "", "NO_COLOR": "1"}
EVERY_COMMAND = {
    "eval": ["eval", SEED, "--all"],
    "grad": ["grad", SEED],
    "render": ["render", SEED, "--format", "dot", "-o", "-"],
    "dot": ["dot", SEED],
    "show": ["show", SEED],
    "check": ["check", SEED, "--expect", "g=-12", "--expect-grad", "x=-3"],
    "gradcheck": ["gradcheck", SEED],
    "explain": ["explain", SEED, "--format", "markdown"],
    "help": ["grad", "--help"],
    "error": ["grad", SEED, "--of", "∂g"],
}


def _run(args, env, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        _entry_point() + args, capture_output=True, cwd=cwd, env={**os.environ, **env}, timeout=60
    )


@pytest.mark.parametrize("encoding", ["", "latin-1"])
@pytest.mark.parametrize("command", EVERY_COMMAND)
def test_every_command_in_a_locale_without_unicode(command, encoding):
    proc = _run(EVERY_COMMAND[command], {**POSIX, "PYTHONIOENCODING": encoding})
    assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr
    assert proc.returncode == (2 if command == "error" else 0), proc.stderr


def test_grad_in_a_posix_locale_writes_escapes():
    proc = _run(["grad", SEED], POSIX)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode("utf-8")  # click writes UTF-8 where the locale says ASCII
    assert "∂g/∂input" in text or "\\u2202g/\\u2202input" in text


def test_junit_is_utf8_whatever_the_locale(tmp_path):
    report = tmp_path / "r.xml"
    proc = _run(["check", "--spec", CHECKS, "--junit", str(report)], POSIX)
    assert proc.returncode == 0, proc.stderr
    text = report.read_bytes().decode("utf-8")
    assert text.startswith("<?xml version='1.0' encoding='utf-8'?>") and "∂" in text


# --- 7. a reader that goes away ---------------------------------------------------------------
WIDE = (
    "\n".join(f"v{i} = a{i} * x + {i}" for i in range(400))
    + "\ns = "
    + " + ".join(f"v{i}" for i in range(400))
)
BIG_OUTPUT = {
    "eval": ["eval", "-", "--all", "--bindings", "B"],
    "grad": ["grad", "-", "--bindings", "B"],
    "grad-json": ["grad", "-", "--bindings", "B", "--format", "json"],
    "render": ["render", "-", "--no-values", "--force", "--format", "dot", "-o", "-"],
    "dot": ["dot", "-", "--no-values", "--force"],
    "show": ["show", "-", "--bindings", "B"],
    "check": ["check", "-", "--bindings", "B", *[f"--expect=v{i}={i + 1}" for i in range(400)]],
    "gradcheck": ["gradcheck", "y = sin(x)", "--points", "300"],
    "explain": ["explain", "-", "--bindings", "B"],
}


@pytest.mark.parametrize("command", BIG_OUTPUT)
def test_a_reader_that_stops_early_gets_no_noise(command, tmp_path):
    bindings = tmp_path / "b.json"
    bindings.write_text(json.dumps({"x": 1, **{f"a{i}": 1 for i in range(400)}}))
    args = [str(bindings) if a == "B" else a for a in BIG_OUTPUT[command]]
    with open(tmp_path / "err", "wb") as err:
        proc = subprocess.Popen(
            _entry_point() + args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=ROOT,
        )
        proc.stdin.write(WIDE.encode())
        proc.stdin.close()
        head = proc.stdout.read(10)  # `| head -c 10`
        proc.stdout.close()
        proc.wait(timeout=60)
    assert len(head) == 10
    assert (tmp_path / "err").read_text() == ""
    assert proc.returncode in (0, 141)  # 141: as a shell reports a reader gone (128 + SIGPIPE)


@pytest.mark.parametrize("sample", ["seed", "neuron", "huber", "softmax_cross_entropy"])
def test_a_line_that_show_prints_parses_when_pasted_back(cli, sample):
    """show writes its formulas in the language's own symbols (-, *, not − and ×), so that a
    student can paste a line into a program."""
    import re

    import cgraph_cli as cg

    printed = cli("show", f"sample:{sample}", "--no-values").stdout
    statements = [
        re.sub(r"^[│├└─\s]*", "", line)
        for line in printed.splitlines()
        if " = " in line and "↑" not in line
    ]
    assert statements
    for statement in statements:
        cg.parse(statement)  # raises a ParseError on a symbol the language refuses


def test_a_file_option_refuses_standard_output_where_it_cannot_take_it(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a file named "-" would be written here
    result = cli("train", "input w = 1\nloss = (w - 3)^2", "--wrt", "w", "--page", "-")
    assert result.exit_code == 2
    assert "'-' (standard output) cannot take this file" in result.stderr
    assert not (tmp_path / "-").exists()


def test_a_junit_report_that_cannot_be_written_is_refused_before_the_checks(cli, tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    result = cli("gradcheck", "sample:neuron", "--junit", str(folder))
    assert result.exit_code == 2 and "it is a folder" in result.stderr
    assert result.stdout == ""  # nothing ran


def test_a_command_that_refuses_control_flow_points_at_it(cli):
    result = cli("compile", "sample:rnn", "--target", "js")
    assert result.exit_code == 2
    assert "rnn.cg:7:1: error: --target js does not take programs with loops" in result.stderr


@pytest.mark.parametrize(
    "ranges, message",
    [
        (["--range", "e=5,10"], "--range e=5,10 leaves out e's value, 0.3"),
        (["--range", "e=1,2", "--range", "e=-1,1"], "--range gives e two ranges: give one"),
    ],
)
def test_a_slider_range_that_cannot_hold_its_input_is_refused(cli, tmp_path, ranges, message):
    page = tmp_path / "huber.html"
    result = cli("render", "sample:huber", "-o", str(page), "--live", *ranges)
    assert result.exit_code == 2 and message in result.stderr
    assert not page.exists()
