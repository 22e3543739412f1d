"""The pre-commit hooks of .pre-commit-hooks.yaml, as another project runs them: `pre-commit
try-repo` installs them from a copy of this checkout (a fresh virtual environment, the package
built as pip builds it: from the machine's package index, the local mirror offline) and runs
them in a scratch git repository holding a checks file and programs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_install import NOT_IN_A_CHECKOUT

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.install

CUBE = "input x = 2\ny = x^3\n"
CHECKS = '[[case]]\nfile = "cube.cg"\nexpect = { y = 8 }\ngradcheck = true\n'


def git(folder: Path, *args: str) -> None:
    identity = ["-c", "user.name=cgraph tests", "-c", "user.email=tests@cgraph.invalid"]
    subprocess.run(["git", *identity, *args], cwd=folder, check=True, capture_output=True)


@pytest.fixture(scope="module")
def try_repo(tmp_path_factory):
    """``pre-commit try-repo CHECKOUT --all-files`` in a scratch repository: (exit code, output)."""
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]' installs it)")
    if shutil.which("git") is None:
        pytest.skip("git is not installed: pre-commit installs hooks from a git repository")
    checkout = tmp_path_factory.mktemp("hooks") / "cgraph"
    shutil.copytree(ROOT, checkout, ignore=NOT_IN_A_CHECKOUT)
    git(checkout, "init", "-q")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "cgraph")
    project = tmp_path_factory.mktemp("project")
    git(project, "init", "-q")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")))
    env.pop("PYTHONPATH", None)  # the hooks run the package pre-commit installed, nothing else

    def run(files: dict[str, str], *how: str) -> tuple[int, str]:
        """The project holding ``files`` alone; pre-commit's ``how`` (default: try-repo)."""
        for old in project.iterdir():
            if old.name != ".git":
                old.unlink()
        for name, text in files.items():
            (project / name).write_text(text, encoding="utf-8")
        git(project, "add", "-A")
        command = [sys.executable, "-m", "pre_commit", *(how or ("try-repo", str(checkout)))]
        done = subprocess.run(
            [*command, "--all-files"], cwd=project, env=env, capture_output=True, text=True
        )
        return done.returncode, done.stdout + done.stderr

    run.checkout = checkout  # type: ignore[attr-defined]
    return run


def test_the_hooks_pass_on_a_project_whose_checks_hold(try_repo):
    code, out = try_repo({"cube.cg": CUBE, "checks.toml": CHECKS})
    assert code == 0, out
    assert "cgraph check --spec...." in out and "cgraph gradcheck...." in out
    assert out.count("Passed") == 2, out


def test_the_hooks_fail_on_a_failing_case_and_a_broken_program(try_repo):
    wrong = CHECKS.replace("y = 8", "y = 9")
    code, out = try_repo({"cube.cg": CUBE, "checks.toml": wrong, "broken.cg": "y = (x\n"})
    assert code == 1, out
    assert out.count("Failed") == 2, out
    assert "FAIL  y = 8 (expected 9, difference 1)" in out  # cgraph check's report
    assert "broken.cg:\n" in out and "broken.cg:1:7: error: expected ')'" in out  # by name
    assert "cube.cg:\n" in out and "1 passed, 0 failed, 0 skipped" in out


def test_the_four_lines_of_the_docs_install_both_hooks(try_repo):
    """The .pre-commit-config.yaml of docs/commands/check.md, "Use it in pre-commit", with the
    repository's URL and rev pointing at the copy of this checkout."""
    page = (ROOT / "docs" / "commands" / "check.md").read_text(encoding="utf-8")
    section = page.split("\n### Use it in pre-commit\n", 1)[1].split("\n## ", 1)[0]
    config = re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1)
    assert len(config.splitlines()) == 4, config
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=try_repo.checkout,
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    config = config.replace("https://github.com/cgraph-dev/cgraph", str(try_repo.checkout))
    config = re.sub(r"rev: main\b", f"rev: {head}", config)
    files = {"cube.cg": CUBE, "checks.toml": CHECKS, ".pre-commit-config.yaml": config}
    code, out = try_repo(files, "run")
    assert code == 0, out
    assert "cgraph check --spec...." in out and "cgraph gradcheck...." in out
    assert out.count("Passed") == 2, out
