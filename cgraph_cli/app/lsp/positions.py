"""Character offsets (cgraph's spans) and LSP positions (line, UTF-16 code unit) both ways.

LSP counts a line's characters in UTF-16 code units by default, so ``𝑥`` (outside the Basic
Multilingual Plane) is two of them, and ends lines at ``\\n``, ``\\r\\n`` or a lone ``\\r``, as
:func:`cgraph_cli.core.errors.line_col` does.

>>> lines = Lines("a = 1\\n𝑥 = a")
>>> lines.position(8), lines.offset(1, 2)
((1, 3), 7)
"""

from __future__ import annotations

import re
from bisect import bisect_right

_BREAK = re.compile(r"\r\n|\r|\n")


def units(text: str) -> int:
    """UTF-16 code units of ``text`` (what LSP counts a line's characters in).

    >>> units("x𝑥")
    3
    """
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


class Lines:
    """The line starts of one text, for converting offsets to positions and back."""

    __slots__ = ("text", "starts")

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in _BREAK.finditer(text))]

    def position(self, offset: int) -> tuple[int, int]:
        """0-based line and UTF-16 character of a character offset.

        >>> Lines("x\\r\\ny = x").position(7)
        (1, 4)
        """
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.starts, offset) - 1
        return line, units(self.text[self.starts[line] : offset])

    def offset(self, line: int, character: int) -> int:
        """The character offset of a 0-based line and UTF-16 character (clamped to the line).

        >>> Lines("ab\\ncd").offset(1, 9), Lines("ab").offset(5, 0)
        (5, 2)
        """
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        units = 0
        for k in range(start, end):
            if units >= character or self.text[k] in "\r\n":
                return k
            units += 2 if ord(self.text[k]) > 0xFFFF else 1
        return end
