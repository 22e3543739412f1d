"""Outputs that never destroy an input: the files a command has read are remembered, an output
that is one of them (by any path, a link included) is refused, and a regular file is replaced
through a temporary file made safely beside it, so a failed write leaves the old file whole.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "p.cg")
>>> write_file(path, b"y = x\\n")
>>> remember(path)
>>> write_file(path, b"")  # doctest: +ELLIPSIS
Traceback (most recent call last):
cgraph_cli.core.errors.UsageError: error: ...p.cg is an input of this command: refusing to overwrite it
>>> forget_all()
"""

from __future__ import annotations

import os
import stat

from ..core.errors import UsageError, cannot_write

_read: set[tuple[int, int]] = set()  # (device, inode) of the regular files read so far


def forget_all() -> None:
    """A new command starts with no inputs (a test runs many commands in one process)."""
    _read.clear()


def remember(path_or_fd: str | int) -> None:
    """Note a file the command reads (a path, or an open file's descriptor)."""
    try:
        info = os.fstat(path_or_fd) if isinstance(path_or_fd, int) else os.stat(path_or_fd)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(info.st_mode):
        _read.add((info.st_dev, info.st_ino))


def write_file(path: str, data: bytes) -> None:
    """Write ``data`` to ``path``, refusing (exit 2) a file this command has read: a regular file
    (or a new one) is replaced atomically through a temporary file beside it, keeping the old
    file's permissions; anything else (a FIFO, ``/dev/null``, a terminal) is written through,
    never replaced."""
    try:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            _replace(path, data, None)
            return
        if (info.st_dev, info.st_ino) in _read:
            raise UsageError(f"{path} is an input of this command: refusing to overwrite it")
        if stat.S_ISREG(info.st_mode):
            _replace(path, data, stat.S_IMODE(info.st_mode))
            return
        with open(path, "wb") as f:  # a folder raises IsADirectoryError here
            f.write(data)
    except OSError as e:
        raise cannot_write(path, e) from None


def _replace(path: str, data: bytes, mode: int | None) -> None:
    import tempfile  # here: not at start-up

    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".cgraph-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
