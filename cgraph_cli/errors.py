"""Errors that carry a place in the source, and the caret excerpt that shows it.

Every error a user can cause is a :class:`CgraphError`. Its ``exit_code`` is the documented exit
status of the CLI; its ``span`` (half-open character offsets) locates it in the program text.
"""

from __future__ import annotations

from typing import NamedTuple


class Span(NamedTuple):
    """Half-open character offsets ``[start, end)`` into the program text.

    >>> Span(4, 9).start, Span(4, 9).end
    (4, 9)
    """

    start: int
    end: int


class Source(NamedTuple):
    """Program text and the name to show for it (a path, ``<expr>`` or ``<stdin>``)."""

    text: str
    filename: str = "<expr>"


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset.

    >>> line_col("a = 1\\nb = a +", 12)
    (2, 7)
    """
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def render_caret(text: str, span: Span, *, gutter: bool = True) -> str:
    """The source line holding ``span.start`` with ``^~~~`` under the span (first line only).

    >>> print(render_caret("g = x +* y", Span(6, 7)))
        1 | g = x +* y
          |       ^
    """
    line_no, col = line_col(text, span.start)
    line_start = span.start - (col - 1)
    line_end = text.find("\n", line_start)
    if line_end < 0:
        line_end = len(text)
    line = text[line_start:line_end].rstrip("\r")
    # Tabs become one space each so that the caret lines up with what the terminal shows.
    shown = line.replace("\t", " ")
    width = max(1, min(span.end, line_end) - span.start)
    marker = " " * (col - 1) + "^" + "~" * (width - 1)
    if not gutter:
        return f"{shown}\n{marker}"
    number = str(line_no)
    pad = " " * max(4, len(number))
    return f"{number.rjust(len(pad))} | {shown}\n{pad} | {marker}"


class CgraphError(Exception):
    """Base of every error a user can cause. ``exit_code`` is the CLI's exit status."""

    exit_code = 1
    kind = "error"

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        source: Source | None = None,
        *,
        hints: tuple[str, ...] | list[str] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source
        self.hints = tuple(hints)

    def located(self, source: Source) -> CgraphError:
        """Attach the program text if the error does not know it yet; returns ``self``."""
        if self.source is None:
            self.source = source
        return self

    def where(self) -> str | None:
        """``FILE:LINE:COL`` of the error, or ``None`` when it has no place in a program."""
        if self.span is None or self.source is None:
            return None
        line, col = line_col(self.source.text, self.span.start)
        return f"{self.source.filename}:{line}:{col}"

    def render(self) -> str:
        """The full message as the CLI prints it: place, message, caret excerpt, hints.

        >>> err = ParseError("expected an expression after '+'", Span(7, 7), Source("g = x +"))
        >>> print(err.render())
        <expr>:1:8: error: expected an expression after '+'
            1 | g = x +
              |        ^
        """
        where = self.where()
        head = f"{where}: error: {self.message}" if where else f"error: {self.message}"
        parts = [head]
        if where:
            parts.append(render_caret(self.source.text, self.span))
        parts.extend(f"help: {hint}" for hint in self.hints)
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.render()


class UsageError(CgraphError):
    """The command line itself is wrong: a missing file, an unreadable bindings file (exit 2)."""

    exit_code = 2


class ParseError(CgraphError):
    """The program is not valid cgraph: syntax, unknown function, wrong arity, bad bytes (exit 3)."""

    exit_code = 3


class EvalError(CgraphError):
    """The program is valid but cannot be evaluated with these bindings (exit 4)."""

    exit_code = 4


class BindingError(EvalError):
    """A missing, unknown or non-finite binding (exit 4)."""


class DomainError(EvalError):
    """An operation left its domain: ``log(-1)``, ``1/0``, overflow (exit 4)."""


class UnknownNameError(UsageError):
    """``--of``, ``--wrt`` or ``--focus`` names nothing in the program (exit 2)."""


def cannot_write(path, error: OSError) -> UsageError:
    """``cannot write PATH: why``, the why in plain words rather than an errno's name.

    >>> import errno
    >>> print(cannot_write("out.png", IsADirectoryError(errno.EISDIR, "Is a directory")))
    error: cannot write out.png: it is a folder
    """
    import errno
    from pathlib import Path

    path = Path(path)
    code = error.errno
    if code == errno.EISDIR:
        why = "it is a folder"
    elif code == errno.EEXIST:  # making a folder where a file is
        why = "it is a file, not a folder"
    elif code == errno.ENOTDIR:
        file = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        why = f"{file} is a file, not a folder" if file else "part of the path is not a folder"
    elif code == errno.ENOENT:
        missing = [p for p in path.parents if not p.exists()]
        why = f"the folder {missing[-1]} does not exist" if missing else "no such file or folder"
    elif code in (errno.EACCES, errno.EPERM):
        why = "no permission to write there"
    elif code == errno.EROFS:
        why = "the file system is read-only"
    elif code in (errno.ENOSPC, errno.EDQUOT):
        why = "the disk is full"
    else:
        why = (error.strerror or str(error) or type(error).__name__).lower()
    return UsageError(f"cannot write {path}: {why}")
