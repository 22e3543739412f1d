"""The scanner: program text -> tokens, by one compiled master pattern (the grammar's
terminals, from :mod:`cgraph_cli.parse.tables`), all at once.

Most programs take the quick way: one ``split`` by a pattern of the tokens alone, comments and
line continuations taken as tokens and dropped. A program with a character no token starts
with takes the careful way, whose every match is one token after any ignored text (spaces,
comments, line continuations), matched atomically as Lark's lexer does; it places the error.
Both give the same tokens (tests/test_scanner.py). A newline inside parentheses or brackets
continues the statement, as in Python. A character no token starts with stops the scan: the
error is kept and raised only when the parser reaches it, so an earlier syntax error is
reported first, as Lark's lazy lexer would.

Besides the tokens, the scanner gives their kinds as a string of one character each
(:data:`CODES`; a newline ``\\n`` and ``;`` stand for themselves), so that the driver finds
statements and their shapes with string operations instead of a loop over the tokens.

>>> tokens, codes, error = scan(Source("g = (x +\\n y) # c"))
>>> tokens = list(tokens)
>>> [kind for kind, text, start, end in tokens], error
(['NAME', 'EQUAL', 'LPAR', 'NAME', 'PLUS', 'NAME', 'RPAR'], None)
>>> len(codes) == len(tokens) and "\\n" not in codes
True
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from itertools import accumulate, compress, islice
from operator import itemgetter

from ..core.errors import Source
from . import tables
from .messages import Token, UnexpectedInput, bad_character

#: What makes a repetition possessive (the engine keeps no place to come back to): ``+``
#: after it, from Python 3.11; before, none (the greedy repetition, which matches the same
#: where nothing follows it, as in the patterns that use this).
POSSESSIVE = "+" if sys.version_info >= (3, 11) else ""


def possessive(pattern: str) -> str:
    """``pattern`` (parse/build.py's quick pattern, its trailing repetitions written ``*+``)
    as this Python's ``re`` takes it.

    >>> possessive("(?<=#)[^#]*+") in ("(?<=#)[^#]*+", "(?<=#)[^#]*")
    True
    """
    return pattern.replace("*+", "*" + POSSESSIVE)


_FAST_PATTERN = possessive(tables.FAST_PATTERN)  # the scanner's quick pattern

# (Patterns, compiled on first use, re caches them: most programs have no comment.)
_IGNORED = f"(?:{tables.FAST_IGNORED})"
_NAME_START = r"[^\W\d]"  # what the pattern's names start with
_STRINGS = tables.STRINGS
_FIRST = {c: "NUMBER" for c in "0123456789."} | {"\n": "_NL", "\r": "_NL"}
_KEYWORDS = tables.KEYWORDS.get("NAME", {})
_OPENERS = {"LPAR", "LSQB"}
_CLOSERS = {"RPAR", "RSQB"}

#: One character per terminal, for the string of kinds: the separators stand for themselves.
#: The scanner's terminals are the fixed strings and the three it tells by their first
#: character (tests/test_scanner.py holds this equal to the named groups of the pattern), and
#: the quick scan's ignored text.
CODES = {"_NL": "\n", "_SEMI": ";"}
for _name in sorted({"NUMBER", "NAME", *_STRINGS.values()}):
    CODES.setdefault(_name, chr(ord("A") + len(CODES)))
#: What the quick scan takes as a token and then drops: a comment or a line continuation.
_SKIP = CODES["_IGNORED"] = "#"
# Brackets, newlines and ignored text in the string of kinds (a pattern: re compiles it on
# first use).
_BRACKETS = (
    "[" + re.escape("".join(CODES[k] for k in ("LPAR", "LSQB", "RPAR", "RSQB")) + _SKIP) + "\n]"
)
_OPENING = {CODES["LPAR"], CODES["LSQB"]}
_code = CODES.__getitem__


_KIND = {code: kind for kind, code in CODES.items()}  # a kind's character -> its name


class _Codes(dict):
    """A token's text -> its kind's character (:data:`CODES`), worked out once per distinct
    text."""

    __slots__ = ()

    def __missing__(self, value: str) -> str:
        kind = _STRINGS.get(value) or _FIRST.get(value[0])
        if kind == "NUMBER" and value == ".":  # the pattern's last resort, not a number
            raise _Unscannable
        if kind is None:
            if re.match(_NAME_START, value) is not None:  # (no comment starts so)
                kind = "NAME"
            elif re.fullmatch(_IGNORED, value):  # a comment, a line continuation: dropped
                kind = "_IGNORED"
            else:  # the pattern's last resort: no token starts so (℘ is an identifier to
                raise _Unscannable  # Python, not \w to re)
        code = self[value] = CODES[kind]
        return code


class _Unscannable(Exception):
    """A character the quick scan cannot place (the careful scan reports it)."""


def scan(source: Source) -> tuple[Iterator[Token], str, UnexpectedInput | None]:
    """The tokens of ``source`` in order, their kinds as a string of :data:`CODES`, and the
    error at the first character no token starts with (None if there is none).

    The tokens come as an iterator: the quick scan makes each token's tuple only as it is
    read, so that the parser, which reads a statement at a time, never holds all the tokens of
    a long program (less memory, and the same memory reused: 20% faster on 160,000 tokens
    than a list of them). Their kinds are all in the string."""
    text = source.text
    quick = _scan_quick(text)
    if quick is not None:
        return quick
    tokens: list[Token] = []
    add_token = tokens.append
    pos = depth = 0
    # The careful pattern, compiled on first use (re caches it): most programs never need it.
    for m in re.finditer(tables.PATTERN, text):
        kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is a group
        if kind == "_BAD" or m.start() != pos:  # no token starts there, or the text ends
            break
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
        add_token((kind, text[start:pos], start, pos))
    error = None
    if pos < len(text):
        trailer = re.compile(tables.TRAILER).match(text, pos)
        assert trailer is not None, "the trailer pattern matches the empty string"
        pos = trailer.end()
        if pos < len(text):
            error = bad_character(text, pos, source)
    return iter(tokens), "".join(map(_code, map(itemgetter(0), tokens))), error


def _scan_quick(text: str):
    """:func:`scan` with no loop in Python: one ``split`` (spaces and tokens alternate in one
    list of strings: no match object, no tuple per match), each token's kind from its text
    (once per distinct text),
    its place from the running sum of the lengths; comments and line continuations come as
    tokens too, and are dropped. None when a character no token starts with is left over (an
    error to place): the careful scan does that."""
    # The pattern compiled on first use (re caches it), for ASCII text with ASCII classes:
    # the same tokens there (a name's \w and its first character are ASCII letters, digits
    # and _ either way), found faster.
    parts = re.split(_FAST_PATTERN, text, flags=re.ASCII if text.isascii() else 0)
    try:
        codes = "".join(map(_Codes().__getitem__, islice(parts, 1, None, 2)))
    except _Unscannable:
        return None
    # Where each space and token ends (the parts make up the text, in order): read two at a
    # time, a token's start and end. Each token's kind and text are read as it is made, from
    # the string of kinds and the parts (no list of either: less memory to touch).
    bounds = accumulate(map(len, parts))
    kinds = map(_KIND.__getitem__, codes)
    tokens: Iterator[Token] = zip(kinds, islice(parts, 1, None, 2), bounds, bounds)
    if CODES["LPAR"] in codes or CODES["LSQB"] in codes or _SKIP in codes:
        tokens, codes = _drop_skipped(tokens, codes)
    return tokens, codes, None


def _drop_skipped(tokens: Iterator[Token], codes: str) -> tuple[Iterator[Token], str]:
    """Drop the comments and line continuations, and the newlines inside brackets (the
    statement goes on, as in Python), looking only at those and at brackets."""
    drop = []
    depth = 0
    for m in re.finditer(_BRACKETS, codes):
        c = m.group()
        if c == _SKIP:
            drop.append(m.start())
        elif c == "\n":
            if depth:
                drop.append(m.start())
        elif c in _OPENING:
            depth += 1
        elif depth:
            depth -= 1
    if not drop:
        return tokens, codes
    keep = bytearray(b"\x01") * len(codes)
    for k in drop:
        keep[k] = 0
    return compress(tokens, keep), "".join(compress(codes, keep))
