"""Issue 25, no exit 70: standard output that cannot be written (a full disk), and the limits
that keep loops, Jacobians and Hessians from growing without bound."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys

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

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_every_command_is_listed():
    assert sorted(SUCCEEDS) == sorted(main.commands)


@pytest.mark.parametrize("command", sorted(SUCCEEDS))
@pytest.mark.parametrize("extra", [[], ["--help"]])
def test_full_disk_on_standard_output(command, extra, monkeypatch, capsys):
    full = io.TextIOWrapper(io.BufferedWriter(FullDisk()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", full)
    code = main.main([command, *SUCCEEDS[command], *extra], standalone_mode=False)
    assert code == 2
    assert capsys.readouterr().err == FULL


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
