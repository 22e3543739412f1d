"""A non-editable `pip install .` into a fresh virtual environment works: the entry point runs,
the parser's tables load from inside the installed package, and neither Lark nor a cache
folder is needed."""

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
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return where


def test_installed_command_runs_a_sample(venv, tmp_path):
    proc = subprocess.run(
        [
            str(venv / "bin" / "cgraph"),
            "grad",
            str(ROOT / "samples" / "seed.cg"),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["gradients"] == {"x": -3.0, "y": -3.0, "z": 4.0}


def test_tables_ship_inside_the_package_and_lark_is_not_needed(venv, tmp_path):
    code = (
        "import sys, cgraph_cli, cgraph_cli._tables as t; cgraph_cli.parse('y = x + 1'); "
        "print(t.__file__); print('lark' in sys.modules)"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    path, lark_loaded = proc.stdout.split()
    assert "site-packages" in Path(path).parts and lark_loaded == "False"
    assert list(home.iterdir()) == []  # nothing cached, nothing written
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "show", "lark"], capture_output=True, text=True
    )
    assert pip.returncode != 0  # lark is not a dependency of an installed cgraph


def test_module_entry_point(venv, tmp_path):
    proc = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "cgraph_cli",
            "eval",
            "g = (x + y) * z",
            "x=1",
            "y=3",
            "z=-3",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert (proc.returncode, proc.stdout) == (0, "g = -12\n")


def test_json_schemas_ship_inside_the_package(venv, tmp_path):
    proc = subprocess.run(
        [str(venv / "bin" / "cgraph"), "schema", "explain"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["$id"] == "https://cgraph.dev/schemas/explain.schema.json"


def test_man_pages_install_next_to_the_command(venv, tmp_path):
    # man finds bin/../share/man by itself: `man cgraph-grad` works where `cgraph` does.
    page = venv / "share" / "man" / "man1" / "cgraph-grad.1"
    assert page.read_text(encoding="utf-8") == (ROOT / "docs" / "man" / "cgraph-grad.1").read_text(
        encoding="utf-8"
    )
    assert (venv / "share" / "man" / "man1" / "cgraph.1").is_file()
