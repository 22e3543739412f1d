"""The pre-commit hooks' runner (``.pre-commit-hooks.yaml`` at the top of the repository):
``cgraph-gradcheck`` runs ``cgraph gradcheck`` on each program file pre-commit passes it (a
command takes one program), with the hook's ``args`` as options. Its exit code is the worst of
theirs: 1 when a gradient differs from its finite difference, 2 to 4 for an error.

``python -m cgraph_cli.cli.hooks gradcheck [OPTION]... FILE.cg...``

>>> split(["--points", "20", "a.cg", "--range", "-1,1", "b.cg"])
(['--points', '20', '--range', '-1,1'], ['a.cg', 'b.cg'])
"""

from __future__ import annotations

import subprocess
import sys

HOOKS = ("gradcheck",)


def split(args: list[str]) -> tuple[list[str], list[str]]:
    """The options (every argument that does not name a ``.cg`` file) and the files, each in
    order: pre-commit gives the hook's ``args`` first, then the files."""
    files = [a for a in args if a.endswith(".cg") and not a.startswith("-")]
    return [a for a in args if a not in files], files


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in HOOKS:
        print(f"usage: python -m cgraph_cli.cli.hooks {'|'.join(HOOKS)} [OPTION]... FILE...",
              file=sys.stderr)  # fmt: skip
        return 2
    options, files = split(args[1:])
    worst = 0
    for path in files:
        print(f"{path}:", flush=True)
        command = [sys.executable, "-m", "cgraph_cli", args[0], path, *options]
        worst = max(worst, subprocess.run(command).returncode)
    return worst


if __name__ == "__main__":
    sys.exit(main())
