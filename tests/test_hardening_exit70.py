"""Issue 25, no exit 70: standard output that cannot be written (a full disk), and the limits
that keep loops, Jacobians and Hessians from growing without bound."""

from __future__ import annotations

import errno
import io
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
