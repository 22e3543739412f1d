"""The scanner: program text -> tokens, by one compiled master pattern (the grammar's
terminals, from :mod:`cgraph_cli.parse.tables`), all at once.

Each match is one token after any ignored text (spaces, comments, line continuations), which
the pattern matches atomically, as Lark's lexer does. A newline inside parentheses or brackets
continues the statement, as in Python. A character no token starts with stops the scan: the
error is kept and raised only when the parser reaches it, so an earlier syntax error is
reported first, as Lark's lazy lexer would.

>>> tokens, kinds, error = scan(Source("g = (x +\\n y) # c"))
>>> kinds, error
(['NAME', 'EQUAL', 'LPAR', 'NAME', 'PLUS', 'NAME', 'RPAR'], None)
"""

from __future__ import annotations

import re
from itertools import accumulate, chain
from operator import itemgetter

from ..errors import Source
from . import tables
from .messages import UnexpectedInput, bad_character


class Tok(tuple):
    """A token: its terminal's name, its text, and its character offsets (a tuple, cheap to
    make; read by name)."""

    __slots__ = ()
    type = property(itemgetter(0))
    value = property(itemgetter(1))
    start_pos = property(itemgetter(2))
    end_pos = property(itemgetter(3))

    def __repr__(self) -> str:
        return f"Tok({self[0]}, {self[1]!r})"


_FAST = re.compile(tables.FAST_PATTERN)
_STRINGS = tables.STRINGS
_FIRST = {c: "NUMBER" for c in "0123456789."} | {"\n": "_NL", "\r": "_NL"}
_PATTERN = re.compile(tables.PATTERN)
_TRAILER = re.compile(tables.TRAILER)
_KEYWORDS = tables.KEYWORDS.get("NAME", {})
_OPENERS = {"LPAR", "LSQB"}
_CLOSERS = {"RPAR", "RSQB"}


def scan(source: Source) -> tuple[list[Tok], list[str], UnexpectedInput | None]:
    """Every token of ``source``, their kinds (a list of strings, for the parser's fast
    paths), and the error at the first character no token starts with (None if there is
    none)."""
    text = source.text
    if "#" not in text and "\\" not in text:  # only spaces between tokens: the quick way
        quick = _scan_spaced(text)
        if quick is not None:
            return quick
    new = tuple.__new__
    tokens: list[Tok] = []
    kinds: list[str] = []
    add_token, add_kind = tokens.append, kinds.append
    pos = depth = 0
    for m in _PATTERN.finditer(text):
        if m.start() != pos:  # the search skipped text: no token starts there
            break
        kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is a group
        start = m.start(kind)
        pos = m.end()
        if kind == "NAME":
            kind = _KEYWORDS.get(text[start:pos], kind)
        elif kind == "_NL":
            if depth:
                continue
        elif kind in _OPENERS:
            depth += 1
        elif kind in _CLOSERS:
            if depth:
                depth -= 1
        add_token(new(Tok, (kind, text[start:pos], start, pos)))
        add_kind(kind)
    error = None
    if pos < len(text):
        trailer = _TRAILER.match(text, pos)
        assert trailer is not None, "the trailer pattern matches the empty string"
        pos = trailer.end()
        if pos < len(text):
            error = bad_character(text, pos, source)
    return tokens, kinds, error


def _scan_spaced(text: str):
    """:func:`scan` for text with only spaces between its tokens: one ``findall`` (no match
    object per token), each token's kind from its text. None when a character is left over
    (an error to place): the careful scan does that."""
    pairs = _FAST.findall(text)
    # Where each token ends, in C: the running sum of the lengths of spaces and tokens.
    ends = list(accumulate(map(len, chain.from_iterable(pairs))))
    if (ends[-1] if ends else 0) != len(text.rstrip("\t \f")):
        return None  # findall skipped a character: no token starts there
    strings, first = _STRINGS.get, _FIRST.get
    kinds = [strings(value) or first(value[0], "NAME") for _, value in pairs]
    if "LPAR" in kinds or "LSQB" in kinds:  # a newline inside brackets continues the statement
        keep = _inside_brackets(kinds)
    else:
        keep = None
    new = tuple.__new__
    tokens = [
        new(Tok, (kind, value, end - len(value), end))
        for kind, (_, value), end in zip(kinds, pairs, ends[1::2])
    ]
    if keep is not None:
        tokens = [t for t, k in zip(tokens, keep) if k]
        kinds = [t[0] for t in tokens]
    return tokens, kinds, None


def _inside_brackets(kinds: list[str]) -> list[bool]:
    """Which tokens to keep: all but a newline inside brackets."""
    keep = []
    depth = 0
    for kind in kinds:
        if kind in _OPENERS:
            depth += 1
        elif kind in _CLOSERS:
            if depth:
                depth -= 1
        keep.append(not (depth and kind == "_NL"))
    return keep
