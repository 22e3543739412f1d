"""The ``cgraph`` command: a thin click layer over the library.

Each command reads the program, calls the library, renders, prints (:mod:`.output` decides
where and how). Errors become messages and exit codes in one place, :class:`.group.Group`. The
commands live in one module per family (run, draw, checks, explain, samples) and are
registered explicitly in :mod:`.group`.
"""

import gc

from ..core.startup import PAUSED_FOR_COMMAND

# Importing click and the app makes many objects and no garbage: the cyclic collector would
# only rescan them (a few milliseconds of every command's start). Paused while importing; in
# the cgraph command (paused since cgraph_cli began importing), what the imports made is then
# frozen, so that no later collection scans it either.
_collecting = gc.isenabled()
gc.disable()
try:
    from .group import main, run
finally:
    if PAUSED_FOR_COMMAND:
        gc.freeze()
        gc.enable()
    elif _collecting:
        gc.enable()

__all__ = ["main", "run"]
