"""Errors that carry a place in the source, and the caret excerpt that shows it.

Every error a user can cause is a :class:`CgraphError`. Its ``exit_code`` is the documented exit
status of the CLI; its ``span`` (half-open character offsets) locates it in the program text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
    """1-based line and column of a character offset. Lines end at ``\\n``, ``\\r\\n`` or a
    lone ``\\r``, as Python reads source.

    >>> line_col("a = 1\\nb = a +", 12), line_col("a = 1\\r\\nb = a +", 13)
    ((2, 7), (2, 7))
    """
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + text.count("\r", 0, offset) - text.count("\r\n", 0, offset)
    return line + 1, offset - _line_start(text, offset) + 1


def _line_start(text: str, offset: int) -> int:
    return max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1


def _line_end(text: str, offset: int) -> int:
    ends = [k for k in (text.find("\n", offset), text.find("\r", offset)) if k >= 0]
    return min(ends) if ends else len(text)


# Characters a terminal would act on or hide instead of showing: C0 and C1 controls, DEL, and
# the invisible format characters (bidirectional overrides, zero-width spaces, the BOM).
_HIDDEN = (  # compiled on first use (re caches it): not at start-up
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\xad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb"
    "\udc80-\udcff]"  # the bytes of a file name that is not UTF-8, as os.fsdecode gives them
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}


def _escape(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8 (surrogateescape)
        code -= 0xDC00
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: str, keep: str = "") -> str:
    """``text`` with every control or invisible character written as an escape (``\\x1b``,
    ``\\r``, ``\\u202e``), so that nothing a user typed can move the cursor, recolour the
    terminal or hide itself in a message. Characters in ``keep`` (a newline, say) stay.

    >>> visible("x\\x1b[2Jy\\u200b")
    'x\\\\x1b[2Jy\\\\u200b'
    """
    if text.isascii() and text.isprintable():  # nothing to escape (and no pattern to compile)
        return text
    return re.sub(_HIDDEN, lambda m: m.group() if m.group() in keep else _escape(m.group()), text)


def shorten(text: str, limit: int = 40) -> str:
    """``text``, or its start and end around ``…`` with its length when it is longer than
    ``limit`` characters (a 100,000-digit number is not worth printing whole).

    >>> shorten("1234567890" * 10, 20)
    '1234567890123…4567890 (100 characters)'
    """
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]}…{text[head - limit :]} ({len(text):,} characters)"


#: Characters of a name from data (a column, a key) that a message shows; a longer one is cut.
NAME_LIMIT = 60
#: Names from data that a message lists before it says how many more there are.
LIST_LIMIT = 20


def named(name: str) -> str:
    """A name that came from data (a column, a key) as a message shows it: at most
    :data:`NAME_LIMIT` characters, a longer one cut around ``…`` with its length (a 10 MB
    column name is not printed whole).

    >>> named("x"), named(""), named("w" * 100)
    ('x', "''", 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww…wwwwwwwwwwwwwwwwwwww (100 characters)')
    """
    return shorten(name, NAME_LIMIT) if name else "''"


def listed(names: Sequence[str]) -> str:
    """Names from data as a message lists them: each :func:`named`, at most
    :data:`LIST_LIMIT` of them, then how many more.

    >>> listed(["a", "b"]), listed([f"c{i}" for i in range(100_000)])[-24:]
    ('a, b', 'c18, c19 and 99,980 more')
    """
    shown = ", ".join(named(n) for n in names[:LIST_LIMIT])
    more = len(names) - LIST_LIMIT
    return shown if more <= 0 else f"{shown} and {more:,} more"


def _width(char: str) -> int:
    """Terminal columns a (visible) character takes: 2 for wide East Asian forms, 0 for a
    combining mark."""
    if char < "\u0300":
        return 1
    import unicodedata

    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


EXCERPT = 100  # columns of a long line shown around the caret


def render_caret(text: str, span: Span, *, gutter: bool = True) -> str:
    """The source line holding ``span.start`` with ``^~~~`` under the span (first line only).
    Control characters show as escapes; a long line is cut around the caret.

    >>> print(render_caret("g = x +* y", Span(6, 7)))
        1 | g = x +* y
          |       ^
    """
    line_no, _ = line_col(text, span.start)
    start = max(0, min(span.start, len(text)))
    line_start = _line_start(text, start)
    line_end = _line_end(text, line_start)
    start = min(start, line_end)
    end = max(start + 1, min(span.end, line_end))
    # The line as cells of display text; the caret goes under the cells of the span.
    cells = [" " if c == "\t" else visible(c) for c in text[line_start:line_end]]
    first, last = start - line_start, end - line_start
    left, right = 0, len(cells)
    widths = [sum(_width(c) for c in cell) for cell in cells]
    if sum(widths) > EXCERPT:  # cut around the caret
        left = max(0, first - EXCERPT // 3)
        right = min(len(cells), left + EXCERPT)
        left = max(0, min(left, right - EXCERPT))
    shown = ("…" if left else "") + "".join(cells[left:right]) + ("…" if right < len(cells) else "")
    pad = (1 if left else 0) + sum(widths[left:first])
    if first < len(widths) and widths[first] == 0 and pad:
        pad -= 1  # a combining mark: point at the letter it sits on
    width = max(1, sum(widths[first : min(last, right)]))
    marker = " " * pad + "^" + "~" * (width - 1)
    if not gutter:
        return f"{shown}\n{marker}"
    number = str(line_no)
    gap = " " * max(4, len(number))
    return f"{number.rjust(len(gap))} | {shown}\n{gap} | {marker}"


class CgraphError(Exception):
    """Base of every error a user can cause. ``exit_code`` is the CLI's exit status;
    ``message``, ``span`` (where in the program, or None), ``hints``; :meth:`render` writes it
    as the CLI does.

    >>> import cgraph_cli as cg
    >>> try:
    ...     cg.grad("y = x +")
    ... except cg.CgraphError as e:
    ...     print(e.exit_code, e.where(), e.message)
    3 <expr>:1:8 expected an expression after '+'
    """

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
        message = visible(self.message, keep="\n")
        head = f"{visible(where)}: error: {message}" if where else f"error: {message}"
        parts = [head]
        if where and self.source is not None and self.span is not None:  # where() says so
            parts.append(render_caret(self.source.text, self.span))
        parts.extend(f"help: {visible(hint)}" for hint in self.hints)
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.render()


class UsageError(CgraphError):
    """The command line itself is wrong: a missing file, an unreadable bindings file; in the
    library, an option out of its choices (exit 2).

    >>> import cgraph_cli as cg
    >>> try:
    ...     cg.diagram("y = x", theme="pink")
    ... except cg.UsageError as e:
    ...     print(e)
    error: a diagram's theme is one of light, dark, print, not 'pink'
    """

    exit_code = 2


class ParseError(CgraphError):
    """The program is not valid cgraph: syntax, unknown function, wrong arity, bad bytes (exit 3).

    >>> import cgraph_cli as cg
    >>> try:
    ...     cg.parse("y = sinn(x)")
    ... except cg.ParseError as e:
    ...     print(e.where(), e.message, e.hints[0])
    <expr>:1:5 unknown function 'sinn' did you mean 'sin'?
    """

    exit_code = 3


class EvalError(CgraphError):
    """The program is valid but cannot be evaluated with these bindings (exit 4): shapes that
    do not fit, and (subclasses) bindings and domain errors.

    >>> import cgraph_cli as cg
    >>> try:
    ...     cg.evaluate("y = W @ x", {"W": [[1, 2]], "x": [1, 2, 3]})
    ... except cg.EvalError as e:
    ...     print(e.message)
    (1, 2) @ (3,): inner dimensions 2 and 3 differ
    """

    exit_code = 4


class BindingError(EvalError):
    """A missing, unknown or non-finite binding (exit 4).

    >>> import cgraph_cli as cg
    >>> try:
    ...     cg.evaluate("y = x * 2")
    ... except cg.BindingError as e:
    ...     print(e.message, e.hints)
    no value for input 'x' ('bind it: x=VALUE  (or declare a default in the program: input x = 1)',)
    """


class DomainError(EvalError):
    """An operation left its domain: ``log(-1)``, ``1/0``, overflow (exit 4).

    >>> import cgraph_cli as cg
    >>> try:
    ...     cg.evaluate("y = log(x)", {"x": -1})
    ... except cg.DomainError as e:
    ...     print(e.render())
    <expr>:1:5: error: log(-1) is undefined: log needs a positive argument
        1 | y = log(x)
          |     ^~~~~~
    """


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
