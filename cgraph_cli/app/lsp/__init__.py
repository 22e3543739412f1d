"""``cgraph lsp``: a language server for cgraph programs (the ``lsp`` extra: pygls).

:mod:`.analysis`, :mod:`.index`, :mod:`.features`, :mod:`.edits`, :mod:`.bindfile` and
:mod:`.positions` know cgraph and no LSP; :mod:`.server` alone speaks the protocol, through pygls.
"""

from __future__ import annotations

import importlib.util
import io
import sys

from ...core.errors import UsageError

EXTRA = "pip install 'cgraph-cli[lsp]'"


def serve() -> None:
    """Serve one editor over stdin and stdout; a :class:`UsageError` (exit 2) naming the extra
    when pygls is not installed, or saying so when either stream is no file or pipe."""
    missing = [m for m in ("pygls", "lsprotocol") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(
            f"cgraph lsp needs {' and '.join(missing)}",
            hints=[f"{EXTRA} (or: pip install pygls lsprotocol)"],
        )
    for name, stream in (("input", sys.stdin), ("output", sys.stdout)):
        try:
            stream.fileno()
        except (io.UnsupportedOperation, AttributeError, ValueError):
            raise UsageError(
                f"cgraph lsp talks to an editor on standard input and output, and standard "
                f"{name} here is not a file or a pipe",
                hints=["an editor starts it: see docs/lsp.md for the set-up of each"],
            ) from None
    from .server import serve as run

    run()
