"""``cgraph lsp``: a language server for cgraph programs (the ``lsp`` extra: pygls).

:mod:`.analysis`, :mod:`.index`, :mod:`.features`, :mod:`.edits`, :mod:`.bindfile` and
:mod:`.positions` know cgraph and no LSP; :mod:`.server` alone speaks the protocol, through pygls.
"""

from __future__ import annotations

import importlib.util

from ...core.errors import UsageError

EXTRA = "pip install 'cgraph-cli[lsp]'"


def serve() -> None:
    """Serve one editor over stdin and stdout; a :class:`UsageError` (exit 2) naming the extra
    when pygls is not installed."""
    missing = [m for m in ("pygls", "lsprotocol") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(
            f"cgraph lsp needs {' and '.join(missing)}",
            hints=[f"{EXTRA} (or: pip install pygls lsprotocol)"],
        )
    from .server import serve as run

    run()
