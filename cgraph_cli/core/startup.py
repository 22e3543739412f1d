"""Whether this process is the ``cgraph`` command, and the collector paused for its start-up.

Imported first of all (by the package's ``__init__``): the command's imports make many objects
and no garbage, and the cyclic collector would only rescan them.
"""

from __future__ import annotations

import gc
import sys


def _run_as_command() -> bool:
    """Whether this process is the ``cgraph`` command (its script, or ``python -m
    cgraph_cli``) rather than a program importing the library."""
    argv0 = (getattr(sys, "argv", None) or [""])[0]
    if argv0 == "-m":  # python -m NAME, while NAME is found: which NAME?
        given = getattr(sys, "orig_argv", [])
        module = given[given.index("-m") + 1 : given.index("-m") + 2] if "-m" in given else []
        return module == ["cgraph_cli"] or "-mcgraph_cli" in given
    name = argv0.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name in ("cgraph", "cgraph.exe", "cgraph-script.py")


# The command's imports (this package, the parser, click, the commands) make many objects
# and no garbage: the cyclic collector would only rescan them, about 3 ms of every command's
# start. It stays paused until cgraph_cli.cli has imported everything, which then freezes
# those objects (gc.freeze: never scanned again) and resumes it. A program importing the
# library is left as it was.
AS_COMMAND = _run_as_command()
PAUSED_FOR_COMMAND = gc.isenabled() and AS_COMMAND
if PAUSED_FOR_COMMAND:
    gc.disable()
