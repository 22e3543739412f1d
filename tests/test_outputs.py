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


@pytest.mark.parametrize("how", ["same", "dot", "symlink", "hardlink"])
@pytest.mark.parametrize(
    "command", [["compile", "p.cg", "-o"], ["eval", "p.cg", "x=1", "-o"], ["diff", "p.cg", "-o"]]
)
def test_output_that_is_the_program_is_refused(tmp_path, monkeypatch, how, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.cg").write_text(PROGRAM)
    target = {"same": "p.cg", "dot": "./p.cg", "symlink": "s.cg", "hardlink": "h.cg"}[how]
    if how == "symlink":
        os.symlink("p.cg", "s.cg")
    if how == "hardlink":
        os.link("p.cg", "h.cg")
    result = run(*command, target)
    assert result.exit_code == 2
    assert "is an input of this command" in result.output
    assert (tmp_path / "p.cg").read_text() == PROGRAM


def test_check_junit_over_its_spec_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = '[[case]]\nprogram = "y = 2 * x"\nbindings = {x = 1}\nexpect = {y = 2}\n'
    (tmp_path / "a.toml").write_text(spec)
    result = run("check", "--spec", "a.toml", "--junit", "a.toml")
    assert result.exit_code == 2
    assert (tmp_path / "a.toml").read_text() == spec


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
