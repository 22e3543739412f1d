"""Outputs that never destroy an input. The files named on the command line are claimed as
inputs or outputs while click reads the options, so an output that is an input (or another
output) is refused before anything runs; the files a command reads are remembered too, so one
reached some other way (a program a checks file names) is refused when it would be written;
and a regular file is replaced through a temporary file made safely beside it, so a failed or
interrupted write leaves the old file whole.

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
from typing import Any

from ..core.errors import UsageError, cannot_write

_read: set[tuple[int, int]] = set()  # (device, inode) of the regular files read so far
_claimed: list[tuple[str, str, str, object]] = []  # (role, option, shown, key) named so far


def forget_all() -> None:
    """A new command starts with no inputs (a test runs many commands in one process)."""
    _read.clear()
    _claimed.clear()


def remember(path_or_fd: str | int) -> None:
    """Note a file the command reads (a path, or an open file's descriptor)."""
    try:
        info = os.fstat(path_or_fd) if isinstance(path_or_fd, int) else os.stat(path_or_fd)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(info.st_mode):
        _read.add((info.st_dev, info.st_ino))


def _key(path: str, output: bool) -> object:
    """What makes two names one file: (device, inode) of a regular file; for an output that
    does not exist yet, its resolved path; None for what cannot be clobbered (a FIFO, a
    device, a folder) or an input that is not there (its reader says so)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return os.path.realpath(path) if output else None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def claim(path: str, role: str, option: str, origin: str | None = None) -> None:
    """``path``, named by ``option`` (on the command line, or in the file ``origin``), is an
    ``"input"`` or an ``"output"`` of this command: refuse (exit 2) an output that is the
    same file as an input or as another output, by any path or link, before anything runs.

    >>> import tempfile, os
    >>> data = os.path.join(tempfile.mkdtemp(), "d.csv")
    >>> _ = open(data, "w").write("x\\n1\\n")
    >>> claim(data, "input", "--rows")
    >>> claim(data, "output", "--log")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: --log ...d.csv is the file --rows reads: refusing to overwrite an input of this command
    help: write --log to another file
    >>> forget_all()
    """
    key = _key(path, role == "output")
    if key is None:
        return
    shown = f"{option} {path}" + (f" (in {origin})" if origin else "")
    for other_role, other_option, other_shown, other_key in _claimed:
        if other_key != key or "output" not in (role, other_role):
            continue
        if role == other_role:
            raise UsageError(
                f"{other_shown} and {shown} are the same file: one would overwrite the other",
                hints=["name two different files"],
            )
        out, out_option, reader = (
            (shown, option, other_option)
            if role == "output"
            else (other_shown, other_option, option)
        )
        raise UsageError(
            f"{out} is the file {reader} reads: refusing to overwrite an input of this command",
            hints=[f"write {out_option} to another file"],
        )
    _claimed.append((role, option, shown, key))
    if role == "input":
        remember(path)


def refuse_input(path: str) -> os.stat_result | None:
    """Refuse (exit 2) to write ``path`` if this command has read it; its ``stat`` if it
    exists."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    if (info.st_dev, info.st_ino) in _read:
        raise UsageError(f"{path} is an input of this command: refusing to overwrite it")
    return info


def check_writable(path: str) -> None:
    """Refuse (exit 2), before a long run, an output that could not be written at its end: a
    folder, a folder that does not exist or that this user cannot write in, an input.

    >>> check_writable("/no/such/folder/w.npz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: cannot write /no/such/folder/w.npz: ...
    """
    import errno
    import tempfile

    info = refuse_input(path)
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise cannot_write(path, IsADirectoryError(errno.EISDIR, "Is a directory"))
    if info is not None and not stat.S_ISREG(info.st_mode):
        return  # a FIFO or a device is written through: opening it now could block
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".cgraph-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise cannot_write(path, e) from None


class Output:
    """A file written in pieces, never destroying what was there until it is whole: a regular
    file (or a new one) is written to a temporary file made beside it (``mkstemp``: a name no
    one can guess, opened exclusively), which ``done()`` moves over it keeping the old file's
    permissions and ``discard()`` removes; anything else (a FIFO, ``/dev/null``, a terminal)
    is written through, never replaced. A file this command read is refused (exit 2).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "w.txt")
    >>> out = Output(path)
    >>> out.file.write(b"half")
    4
    >>> os.path.exists(path)
    False
    >>> out.done(); open(path).read()
    'half'
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.file: Any
        self._target = os.path.realpath(path)  # a symbolic link stays, its file is replaced
        self._tmp: str | None = None
        self._mode: int | None = None
        try:
            info = refuse_input(path)
            if info is not None and not stat.S_ISREG(info.st_mode):
                self.file = open(path, "wb")  # a folder raises IsADirectoryError here
                return
            import tempfile  # here: not at start-up

            self._mode = None if info is None else stat.S_IMODE(info.st_mode)
            folder = os.path.dirname(self._target)
            try:
                fd, self._tmp = tempfile.mkstemp(dir=folder, prefix=".cgraph-", suffix=".tmp")
            except PermissionError:
                if info is None or not os.access(path, os.W_OK):
                    raise
                self.file = open(path, "wb")  # a file we may write in a folder we may not
                return
            self.file = os.fdopen(fd, "wb")
            if info is not None and hasattr(os, "posix_fadvise"):
                self.file = Settling(self.file)
        except OSError as e:
            raise cannot_write(path, e) from None

    def done(self) -> None:
        """Finish: the new file takes the old one's place."""
        try:
            self.file.close()
            if self._tmp is None:
                return
            mode = self._mode
            if mode is None:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(self._tmp, mode)
            os.replace(self._tmp, self._target)
            self._tmp = None
        except OSError as e:
            self.discard()
            raise cannot_write(self.path, e) from None
        except BaseException:  # Ctrl-C (waiting for the write-back thread, say): no litter
            self.discard()
            raise

    def discard(self) -> None:
        """Give up: the temporary file goes, the old file stays as it was."""
        try:
            self.file.close()
        except OSError:
            pass
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None


def listed(manifest: str, pattern: str) -> set[str]:
    """The names a manifest cgraph wrote lists (one a line), those that match ``pattern``
    only: a name, never a path."""
    import re

    try:
        with open(manifest, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return set()
    except OSError as e:
        raise cannot_write(manifest, e) from None
    return {line for line in text.splitlines() if re.fullmatch(pattern, line)}


def write_list(manifest: str, names) -> None:
    """The manifest of the files cgraph writes in a folder: their names, one a line."""
    write_file(manifest, "".join(f"{name}\n" for name in sorted(names)).encode())


def write_file(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through an :class:`Output`: refused (exit 2) if this command
    read ``path``; a regular file replaced atomically, anything else written through."""
    out = Output(path)
    try:
        out.file.write(data)
    except OSError as e:
        out.discard()
        raise cannot_write(path, e) from None
    except BaseException:
        out.discard()
        raise
    out.done()


#: Bytes written between two hand-overs to the kernel's write-back (:class:`Settling`).
SETTLE = 1 << 20


class Settling:
    """A file that will replace another one, whose bytes the kernel is asked to start writing
    to the disk as they come, a megabyte at a time, by a thread of its own. ext4 writes a
    file's data out before a rename over another file returns (so that a crash leaves the old
    file or the new one, never an empty one): for an 8 MB output, 3.5 ms at ``done()``, with
    the command waiting. Started as the file is written, that work runs beside the writing.
    Advice only (``posix_fadvise``: pages still being written stay cached): an error stops
    it, and nothing else changes.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "w.bin")
    >>> with open(path, "wb") as raw:
    ...     f = Settling(raw)
    ...     f.write(b"x" * (3 * SETTLE)), f.tell()
    ...     f.close()
    (3145728, 3145728)
    >>> os.path.getsize(path)
    3145728
    """

    def __init__(self, file) -> None:
        self._file = file
        self._sent = 0  # bytes handed to the thread so far
        self._written = 0
        self._thread: Any = None
        self._ranges: Any = None

    def write(self, data) -> int:
        n = self._file.write(data)
        self._written += n
        if self._written - self._sent >= SETTLE:
            self._written = self._sent = self._send()
        return n

    def _send(self) -> int:
        """The bytes written since the last hand-over, handed over; where the file is now."""
        self._file.flush()  # in the kernel's hands, then written back
        end = self._file.tell()  # (a writer that seeks back, as a zip file does: from here)
        if end > self._sent:
            if self._thread is None:
                self._start()
            self._ranges.put((self._sent, end - self._sent))
        return end

    def _start(self) -> None:
        import queue  # here: not at start-up
        import threading

        self._ranges = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._settle, args=(self._file.fileno(), self._ranges), daemon=True,
            name="cgraph-write-back",
        )  # fmt: skip
        self._thread.start()

    @staticmethod
    def _settle(fd: int, ranges) -> None:
        advise = True
        while True:
            item = ranges.get()
            if item is None:
                return
            if advise:
                start, length = item
                try:
                    os.posix_fadvise(fd, start, length, os.POSIX_FADV_DONTNEED)
                except OSError:
                    advise = False

    def close(self) -> None:
        """The thread done (it holds the descriptor's number), then the file closed."""
        if self._thread is not None:
            self._ranges.put(None)
            self._thread.join()
            self._thread = None
        self._file.close()

    def __enter__(self) -> Settling:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getattr__(self, name: str):
        return getattr(self._file, name)
