"""A non-editable `pip install .` into a fresh virtual environment works: the entry point runs,
the parser's tables load from inside the installed package, and neither Lark nor a cache
folder is needed. The install is the CI recipe of docs/commands/check.md, run as written in a
copy of the checkout."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cgraph_cli

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.install

NOT_IN_A_CHECKOUT = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", ".hypothesis", ".ruff_cache", "build", "dist", "*.egg-info"
)


def ci_recipe(which: str = "in cgraph's repository") -> list[str]:
    """The `run:` commands of the GitHub Actions workflow under "Use it in CI" in
    docs/commands/check.md whose first line (a comment) says ``which``."""
    page = (ROOT / "docs" / "commands" / "check.md").read_text(encoding="utf-8")
    section = page.split("\n### Use it in CI\n", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    block = next((b for b in blocks if which in b.splitlines()[0]), None)
    assert block, f"docs/commands/check.md: no yaml block {which} under 'Use it in CI'"
    runs = re.findall(r"^\s*(?:- )?run:\s*(.*)$", block, re.MULTILINE)
    assert runs and all(r and r[0] not in "|>" for r in runs), runs  # one command a line
    return runs


@pytest.fixture(scope="module")
def recipe(tmp_path_factory) -> dict:
    """Run the docs' CI recipe in a copy of the checkout, in a fresh virtual environment
    (what actions/setup-python gives); its venv serves the other tests."""
    checkout = tmp_path_factory.mktemp("checkout") / "cgraph"
    shutil.copytree(ROOT, checkout, ignore=NOT_IN_A_CHECKOUT)
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = dict(os.environ, VIRTUAL_ENV=str(venv), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env.pop("PYTHONPATH", None)
    runs = [
        (command, subprocess.run(command, shell=True, cwd=checkout, env=env, capture_output=True))
        for command in ci_recipe()
    ]
    return {"venv": venv, "checkout": checkout, "runs": runs}


@pytest.fixture(scope="module")
def venv(recipe) -> Path:
    assert recipe["runs"][0][0] == "pip install ."
    return recipe["venv"]


def test_the_ci_recipe_runs_as_written(recipe):
    for command, done in recipe["runs"]:
        assert done.returncode == 0, f"{command}\n{done.stdout.decode()}{done.stderr.decode()}"
    report = (recipe["checkout"] / "cgraph-report.xml").read_text()
    assert "<testsuite" in report and 'failures="0"' in report


# The files the other project's workflow names, at its top: a checks file and a model.
PROJECT = {
    "model.cg": (ROOT / "samples" / "logistic.cg").read_text(encoding="utf-8"),
    "checks.toml": '[[case]]\nfile = "model.cg"\nexpect = { z = 0.5 }\n'
    "gradcheck = { points = 5 }\n",
}


def test_the_workflow_for_another_project_runs_as_written(recipe, tmp_path):
    """The workflow of "Use it in CI" for another project: its commands run in a folder holding
    the files it names, the install from the git URL replaced by this checkout's."""
    runs = ci_recipe("in your project")
    assert runs[0] == 'pip install "cgraph-cli @ git+https://github.com/cgraph-dev/cgraph"'
    for name, text in PROJECT.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    venv = recipe["venv"]
    env = dict(os.environ, VIRTUAL_ENV=str(venv), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env.pop("PYTHONPATH", None)
    for command in [f'pip install "{recipe["checkout"]}"', *runs[1:]]:
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True)
        assert done.returncode == 0, f"{command}\n{done.stdout.decode()}{done.stderr.decode()}"
    reports = sorted(p.name for p in tmp_path.glob("*.xml"))  # what the upload step takes
    assert reports == ["gradcheck.xml", "report.xml"]
    for name, tests in (("report.xml", "21"), ("gradcheck.xml", "80")):  # 1 + 5 x 4; 20 x 4
        suite = (tmp_path / name).read_text(encoding="utf-8")
        assert f'tests="{tests}" failures="0"' in suite, suite[:300]


def test_installed_version_is_the_package_version(venv, tmp_path):
    """`cgraph --version`, the installed metadata and `cgraph_cli.__version__` agree."""
    code = (
        "import importlib.metadata as m, cgraph_cli; "
        "print(m.version('cgraph-cli'), cgraph_cli.__version__)"
    )
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.stdout.split() == [cgraph_cli.__version__] * 2, proc.stderr
    proc = subprocess.run(
        [str(venv / "bin" / "cgraph"), "--version"], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.stdout == f"cgraph, version {cgraph_cli.__version__}\n"


def test_the_license_ships_in_the_wheel(venv, tmp_path):
    code = (
        "import importlib.metadata as m; d = m.distribution('cgraph-cli'); "
        "print(d.metadata['License-Expression']); "
        "print(*[f.name for f in d.files if f.name == 'LICENSE'])"
    )
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.stdout.split() == ["MIT", "LICENSE"], proc.stderr


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
        "import sys, cgraph_cli; from cgraph_cli.parse import tables as t; cgraph_cli.parse('y = x + 1'); "
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


def test_the_interactive_page_takes_its_script_and_style_from_the_package(venv, tmp_path):
    proc = subprocess.run(
        [str(venv / "bin" / "cgraph"), "render", "sample:seed", "-o", "seed.html"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "seed.html").read_text(encoding="utf-8")
    assert "function render()" in page and "#graph .node rect" in page


def test_man_pages_install_next_to_the_command(venv, tmp_path):
    # man finds bin/../share/man by itself: `man cgraph-grad` works where `cgraph` does.
    page = venv / "share" / "man" / "man1" / "cgraph-grad.1"
    assert page.read_text(encoding="utf-8") == (ROOT / "docs" / "man" / "cgraph-grad.1").read_text(
        encoding="utf-8"
    )
    assert (venv / "share" / "man" / "man1" / "cgraph.1").is_file()


def test_the_wheel_marks_the_package_typed(venv):
    # PEP 561: without py.typed, mypy and pyright ignore the hints of an installed package.
    found = list(venv.glob("lib/python*/site-packages/cgraph_cli/py.typed"))
    assert found, "cgraph_cli/py.typed is not in the wheel"


def test_pygments_finds_the_language_by_its_entry_point(venv, tmp_path):
    """`pygmentize -l cgraph` (and any MkDocs or Sphinx site) highlights a program once cgraph is
    installed: the lexer is found through the `pygments.lexers` entry point."""
    proc = subprocess.run(
        [str(venv / "bin" / "pygmentize"), "-l", "cgraph", "-f", "raw"],
        input="input x = 1\ny = sin(x)  # a comment\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Token.Name.Builtin\t'sin'" in proc.stdout
    assert "Token.Comment.Single\t'# a comment'" in proc.stdout
    assert "Token.Error" not in proc.stdout
