"""What pyproject.toml declares holds: one version, the license, the Pythons and dependency floors
CI tests, graphviz-pure only where it has wheels (and a message naming Graphviz elsewhere), and
README images that show on a package index."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import cgraph_cli
from cgraph_cli.render import image

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
SEED = str(ROOT / "samples" / "seed.cg")


def ci_variable(name: str) -> str:
    m = re.search(rf"^{name}=(\S+)", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)
    assert m, f".ci/run sets no {name}"
    return m.group(1)


def floors_module():
    spec = importlib.util.spec_from_file_location("floors", ROOT / ".ci" / "floors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- version, license, metadata ------------------------------------------------------------------
def test_the_version_is_written_once_in_the_package(cli):
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    source = ROOT / PYPROJECT["tool"]["hatch"]["version"]["path"]
    assert f'__version__ = "{cgraph_cli.__version__}"' in source.read_text()
    for flag in ("--version", "-V"):
        assert cli(flag).stdout == f"cgraph, version {cgraph_cli.__version__}\n"


def test_mit_license_file():
    text = (ROOT / "LICENSE").read_text()
    assert PROJECT["license"] == "MIT" and text.startswith("MIT License\n")
    assert re.search(r"Copyright \(c\) \d{4} cgraph developers", text)
    assert "LICENSE" in PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]


def test_project_urls():
    home = "https://github.com/cgraph-dev/cgraph"
    assert PROJECT["urls"] == {
        "Homepage": home,
        "Documentation": home + "/tree/main/docs",
        "Source": home,
        "Issues": home + "/issues",
    }


def test_classifiers_name_every_python_ci_tests():
    """.ci/run tests the oldest and newest; the classifiers list every one in between."""
    oldest, newest = ci_variable("OLDEST"), ci_variable("NEWEST")
    assert PROJECT["requires-python"] == f">={oldest}"
    listed = [
        c.rsplit(" :: ", 1)[1]
        for c in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    first, last = int(oldest.split(".")[1]), int(newest.split(".")[1])
    assert listed == [f"3.{minor}" for minor in range(first, last + 1)]


# --- dependency floors ---------------------------------------------------------------------------
def test_every_dependency_has_a_floor_that_ci_pins():
    floors = floors_module()
    pinned = floors.floors(floors.requirements(PYPROJECT))
    names = {Requirement(r).name.lower() for r in floors.requirements(PYPROJECT)}
    assert set(pinned) == names
    assert pinned["click"] == "8.2" and pinned["graphviz-pure"] == "0.2.1"
    assert pinned["numpy"] == "2.0"  # NumPy 1 has 32 axes; cgraph allows 64


def test_floors_refuses_a_requirement_without_one():
    floors = floors_module()
    with pytest.raises(SystemExit, match="'rich' has no >= floor"):
        floors.floors(["click>=8.1", "rich"])
    with pytest.raises(SystemExit, match="numpy has two floors"):
        floors.floors(["numpy>=2.0; python_version < '3.13'", "numpy>=2.1"])


# --- graphviz-pure where it has wheels -----------------------------------------------------------
PLATFORMS = [
    ("linux", "x86_64"),
    ("linux", "aarch64"),
    ("darwin", "x86_64"),
    ("darwin", "arm64"),
    ("win32", "AMD64"),
    ("win32", "ARM64"),
    ("linux", "ppc64le"),
    ("linux", "s390x"),
    ("linux", "armv7l"),
    ("linux", "i686"),
    ("win32", "x86"),
    ("freebsd14", "amd64"),
    ("cygwin", "x86_64"),
]


@pytest.mark.parametrize("system,machine", PLATFORMS)
def test_graphviz_pure_is_required_exactly_where_messages_suggest_it(system, machine):
    """pyproject's environment markers and image.pure_installable agree."""
    pure = [Requirement(r) for r in PROJECT["dependencies"] if r.startswith("graphviz-pure")]
    assert pure and all(r.marker is not None for r in pure)
    env = {"sys_platform": system, "platform_machine": machine}
    required = any(r.marker.evaluate(env) for r in pure)
    assert required == image.pure_installable(system, machine)
    assert required == ((system, machine) in PLATFORMS[:6])


@pytest.fixture
def no_renderer(monkeypatch):
    monkeypatch.setattr(image, "locate", lambda name: None)


@pytest.fixture
def ppc64le(monkeypatch, no_renderer):
    """A Linux machine graphviz-pure has no wheel for, without Graphviz."""
    monkeypatch.setattr(image.sys, "platform", "linux")
    monkeypatch.setattr(image.platform, "machine", lambda: "ppc64le")


@pytest.mark.parametrize("suffix", ["png", "svg", "pdf"])
def test_without_a_wheel_the_message_names_graphviz_only(ppc64le, cli, tmp_path, suffix):
    result = cli("render", SEED, "-o", str(tmp_path / f"seed.{suffix}"))
    assert result.exit_code == 2
    assert f"error: no installed renderer can write {suffix.upper()}" in result.stderr
    assert (
        "help: install Graphviz: apt-get install graphviz, brew install graphviz" in result.stderr
    )
    assert "help: .dot files work everywhere\n" in result.stderr
    assert "graphviz-pure" not in result.stderr


def test_asking_for_graphviz_pure_without_a_wheel(ppc64le, cli, tmp_path):
    result = cli("render", SEED, "-o", str(tmp_path / "s.png"), "--renderer", "graphviz-pure")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert "error: the renderer 'graphviz-pure' is not installed" in lines[0]
    assert lines[1:3] == [
        "help: graphviz-pure has no build for linux ppc64le",
        "help: install Graphviz: apt-get install graphviz, brew install graphviz, or graphviz.org",
    ]


def test_with_a_wheel_the_message_offers_graphviz_pure(monkeypatch, no_renderer, cli, tmp_path):
    monkeypatch.setattr(image.sys, "platform", "darwin")
    monkeypatch.setattr(image.platform, "machine", lambda: "arm64")
    result = cli("render", SEED, "-o", str(tmp_path / "seed.svg"))
    assert result.exit_code == 2
    assert "help: pip install graphviz-pure (PNG and SVG), or install Graphviz" in result.stderr


# --- README ----------------------------------------------------------------------------------------
def test_readme_images_are_relative_and_exist():
    """The README's images are files of the checkout by relative path, so that they show offline,
    in a fork and in a clone (issue 30); a package index would need absolute URLs, but cgraph is
    not on one."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)", readme)
    images += re.findall(r"<img[^>]*\ssrc=[\"']([^\"']+)", readme)
    assert images
    for path in images:
        assert not re.match(r"[a-z]+:", path), path
        assert (ROOT / path).is_file(), path
