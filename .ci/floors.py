"""Print pip constraints pinning every direct dependency of pyproject.toml to its floor.

`python .ci/floors.py > floors.txt; pip install -c floors.txt -e '.[test,data,dask,plot,video,onnx,lsp]'` installs
the lowest versions pyproject allows of what it names (the build backend, the dependencies, the
extras the tests need), and the newest of everything else: pip cannot resolve "lowest" by itself. A floor that
names a release that does not exist fails the install, as it should.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
FLOOR = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*[^;]*?>=\s*([^,;\s]+)")


def requirements(
    pyproject: dict,
    extras: tuple[str, ...] = ("test", "data", "dask", "plot", "video", "onnx", "lsp"),
) -> list[str]:
    """The requirement strings whose floors are pinned: build backend, dependencies, extras."""
    project = pyproject["project"]
    found = list(pyproject["build-system"]["requires"]) + list(project["dependencies"])
    for extra in extras:
        found += project["optional-dependencies"][extra]
    return found


def floors(requirements: list[str]) -> dict[str, str]:
    """``{name: lowest version}`` for each requirement; each must have a ``>=`` floor.

    >>> floors(["click>=8.2", "tomli>=2; python_version < '3.11'", "lark>=1.2,<2"])
    {'click': '8.2', 'tomli': '2', 'lark': '1.2'}
    """
    pinned: dict[str, str] = {}
    for requirement in requirements:
        m = FLOOR.match(requirement)
        if m is None:
            raise SystemExit(f"pyproject.toml: {requirement!r} has no >= floor to test")
        name, version = m.group(1).lower(), m.group(2)
        if pinned.setdefault(name, version) != version:  # the same floor in two extras is one
            raise SystemExit(f"pyproject.toml: {name} has two floors, {pinned[name]} and {version}")
    return pinned


def main() -> None:
    with open(ROOT / "pyproject.toml", "rb") as f:
        pinned = floors(requirements(tomllib.load(f)))
    sys.stdout.write("".join(f"{name}=={version}\n" for name, version in pinned.items()))


if __name__ == "__main__":
    main()
