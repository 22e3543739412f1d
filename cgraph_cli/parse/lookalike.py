"""Characters that look like cgraph's ASCII syntax but are not: the hint a syntax error gives.

A program pasted from a PDF, a slide or a word processor carries a Unicode minus (−), a
multiplication sign (×), fullwidth digits (１２), a non-breaking or zero-width space. cgraph
reads none of them as what they look like (``１２`` is not the number 12): each is an error at
its place, and this module names the ASCII character meant.

>>> meant("−"), meant("１"), meant("\\u00a0"), meant("a")
('-', '1', ' ', None)
>>> describe("\\u200b")
"'\\\\u200b' (U+200B ZERO WIDTH SPACE)"
"""

from __future__ import annotations

import unicodedata

from ..core.errors import visible

# Look-alikes that Unicode's compatibility normalization (NFKC) does not map to ASCII.
_MEANT = {
    "\u2212": "-",
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\ufe63": "-",
    "\u00d7": "*",
    "\u00b7": "*",
    "\u22c5": "*",
    "\u2219": "*",
    "\u2217": "*",
    "\u00f7": "/",
    "\u2215": "/",
    "\u2044": "/",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u200b": "",
    "\u200c": "",
    "\u200d": "",
    "\u2060": "",
    "\ufeff": "",
    "\u00ad": "",
    "\u02c6": "^",
    "\u2227": "^",
    "\u066b": ".",
    "\u2024": ".",
}
_FUNCTIONS = {"\u221a": "sqrt(...)", "\u2211": "sum(...)"}


def meant(char: str) -> str | None:
    """The ASCII text ``char`` is probably meant to be, or None if it is not a look-alike."""
    if char in _MEANT:
        return _MEANT[char]
    if char in _FUNCTIONS:
        return _FUNCTIONS[char]
    normal = unicodedata.normalize("NFKC", char)
    return normal if normal != char and normal.isascii() else None


def describe(char: str) -> str:
    """The character as an escape or itself, with its code point and Unicode name."""
    name = unicodedata.name(char, "")
    return f"'{visible(char)}' (U+{ord(char):04X}{' ' + name if name else ''})"


def hint(char: str) -> str | None:
    """A help line for an unexpected ``char``: what it looks like and what to type instead."""
    ascii_text = meant(char)
    if ascii_text is None:
        return None
    if ascii_text == "":
        return f"{describe(char)} is invisible: delete it"
    if ascii_text.isdigit() and "SUPERSCRIPT" in unicodedata.name(char, ""):
        return f"{describe(char)} is not a power: write x^{ascii_text}"
    if ascii_text.isdigit() and "SUBSCRIPT" in unicodedata.name(char, ""):
        return f"{describe(char)} cannot be part of a name: write x{ascii_text} or x_{ascii_text}"
    if ascii_text.strip() == "":
        return f"{describe(char)} looks like a space but is not one: type a plain space"
    if ascii_text in "'\"":
        return f"{describe(char)} is a quotation mark; cgraph programs have no strings"
    return f"{describe(char)} looks like '{ascii_text}' but is not: type '{ascii_text}'"


def check_name(name: str) -> str | None:
    """Why ``name`` may not be a name (None if it may): a letter that only looks like an ASCII
    one, such as a fullwidth ``ｘ``, or a superscript digit (``x²``). Letters of any script are
    allowed; a name's characters must be the ones Unicode's compatibility normalization keeps.

    >>> check_name("α1"), check_name("ｘ") is not None
    (None, True)
    """
    if name.isascii() or unicodedata.normalize("NFKC", name) == name:
        return None
    bad = next(c for c in name if unicodedata.normalize("NFKC", c) != c)
    return hint(bad) or f"{describe(bad)} is not allowed in a name"
