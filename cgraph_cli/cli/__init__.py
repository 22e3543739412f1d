"""The ``cgraph`` command: a thin click layer over the library.

Each command reads the program, calls the library, renders, prints (:mod:`.output` decides
where and how). Errors become messages and exit codes in one place, :class:`.app.Group`. The
commands live in one module per family (run, draw, checks, explain, samples) and are
registered explicitly in :mod:`.app`.
"""

from .app import main, run

__all__ = ["main", "run"]
