"""A non-editable `pip install .` into a fresh virtual environment works: the entry point runs
and the grammar is read from inside the installed package."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.install


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    pip = subprocess.run(
        [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", str(ROOT)],
        capture_output=True, text=True,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return where


def test_installed_command_runs_a_sample(venv, tmp_path):
    proc = subprocess.run(
        [str(venv / "bin" / "cgraph"), "grad", str(ROOT / "samples" / "seed.cg"), "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["gradients"] == {"x": -3.0, "y": -3.0, "z": 4.0}


def test_grammar_ships_inside_the_package(venv, tmp_path):
    code = "import cgraph_cli.grammar as g; print(g.grammar_path())"
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip())
    assert path.is_file() and "site-packages" in path.parts
    assert path.read_text() == (ROOT / "grammars" / "cgraph.lark").read_text()


def test_module_entry_point(venv, tmp_path):
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "cgraph_cli", "eval", "g = (x + y) * z", "x=1", "y=3", "z=-3"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert (proc.returncode, proc.stdout) == (0, "g = -12\n")
