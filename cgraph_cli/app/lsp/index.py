"""Where each name of a program is defined and read, from the scanner's tokens alone, so that
it also answers for a program that does not parse yet.

A statement that starts ``NAME =`` (or ``NAME += ...``) defines a value; ``input`` defines
inputs; ``def NAME(params)`` a function, whose parameters are local to its indented body (a
read of a parameter there is not a read of a value of the same name); ``for NAME in`` a loop
counter.

>>> ix = index("input x = 1\\np = x + sin(x)\\ndef f(x):\\n    return x")
>>> [(s.name, s.kind) for s in ix.defs]
[('x', 'input'), ('p', 'value'), ('f', 'function')]
>>> [(s.name, s.kind, s.start) for s in ix.references("x")]
[('x', 'input', 6), ('x', 'read', 16), ('x', 'read', 24)]
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple

from ...core.errors import Source
from ...parse.lexer import scan


class Site(NamedTuple):
    """One occurrence of a name: ``kind`` is input, value, function or counter (definitions),
    read or call; ``end_of`` is where its statement (an input's item) ends, for hints."""

    name: str
    kind: str
    start: int
    end: int
    end_of: int


DEFINES = ("input", "value", "function")


class Index:
    """Every name's occurrences in a program, in order."""

    def __init__(self, sites: list[Site], text: str) -> None:
        self.sites, self.text = sites, text
        self.defs = [s for s in sites if s.kind in DEFINES]
        self._starts = [s.start for s in sites]
        # each ``def``'s parameters in order: the sites right after its name, on its line
        self.functions: dict[str, tuple[str, ...]] = {}
        for k, site in enumerate(sites):
            if site.kind == "function" and site.name not in self.functions:
                j = k + 1
                while (
                    j < len(sites) and sites[j].kind == "param" and sites[j].end_of == site.end_of
                ):
                    j += 1
                self.functions[site.name] = tuple(s.name for s in sites[k + 1 : j])

    def at(self, offset: int) -> Site | None:
        """The occurrence under ``offset`` (its end included, where an editor's cursor sits)."""
        k = bisect_right(self._starts, offset) - 1
        if k >= 0 and offset <= self.sites[k].end:
            return self.sites[k]
        return None

    def definition(self, name: str, offset: int) -> Site | None:
        """The definition of ``name`` a read at ``offset`` sees: the last one before it, or
        the first one (a function may be called above its ``def``)."""
        found = [s for s in self.defs if s.name == name]
        before = [s for s in found if s.start <= offset]
        if before:
            return before[-1]
        return found[0] if found else None

    def references(self, name: str) -> list[Site]:
        """Every definition and read of ``name`` (parameters and counters are not its)."""
        return [s for s in self.sites if s.name == name and s.kind not in ("param", "counter")]

    def names_before(self, offset: int) -> list[Site]:
        """The definitions of the statements before the one at ``offset``, each name once.

        >>> [s.name for s in index("a = 1\\nb = a; c = ").names_before(16)]
        ['a', 'b']
        """
        ended = [s for s in self.defs if s.end_of <= offset]
        seen = {s.name: s for s in ended if re.search("[\n\r;]", self.text[s.end_of : offset])}
        return list(seen.values())


def statements(text: str):
    """Each statement's tokens (NAME, text, start, end) and its indentation."""
    tokens, codes, _error = scan(Source(text))
    current: list = []
    indent = 0
    for token in tokens:
        if token[0] in ("_NL", "_SEMI"):
            if current:
                yield current, indent
            current = []
            if token[0] == "_NL":
                indent = len(token[1]) - len(token[1].rstrip(" \t"))
            continue
        current.append(token)
    if current:
        yield current, indent


def index(text: str) -> Index:
    """The :class:`Index` of a program's text (up to a character no token starts with)."""
    sites: list[Site] = []
    params: set[str] = set()
    for tokens, indent in statements(text):
        if indent == 0:
            params = set()
        end = tokens[-1][3]
        head = tokens[0][0]
        defined: dict[int, str] = {}
        ends: dict[int, int] = {}
        if head == "INPUT":
            defined, ends = _input_items(tokens)
        elif head == "DEF" and len(tokens) > 1:
            defined = {1: "function"}
            params = {t[1] for t in tokens[2:] if t[0] == "NAME"}
            defined |= {k: "param" for k in range(2, len(tokens)) if tokens[k][0] == "NAME"}
        elif head == "FOR" and len(tokens) > 1:
            defined = {1: "counter"}
            params = params | {tokens[1][1]}
        elif head == "NAME" and len(tokens) > 1 and tokens[1][0] in ("EQUAL", "AUGOP"):
            defined = {0: "param" if tokens[0][1] in params else "value"}
        for k, (kind, name, start, stop) in enumerate(tokens):
            if kind != "NAME":
                continue
            role = defined.get(k)
            if role is None:
                called = k + 1 < len(tokens) and tokens[k + 1][0] == "LPAR"
                role = "call" if called else "param" if name in params else "read"
            sites.append(Site(name, role, start, stop, ends.get(k, end)))
    return Index(sites, text)


def _input_items(tokens: list) -> tuple[dict[int, str], dict[int, int]]:
    """``input a = 1, b = [1, 2]``: each item's name (by token) and where its item ends."""
    found: dict[int, str] = {}
    ends: dict[int, int] = {}
    depth, first = 0, 1
    for k in range(1, len(tokens) + 1):
        kind = tokens[k][0] if k < len(tokens) else "COMMA"
        depth += kind in ("LPAR", "LSQB") or -(kind in ("RPAR", "RSQB"))
        if kind == "COMMA" and depth == 0 or k == len(tokens):
            if tokens[first][0] == "NAME":
                found[first] = "input"
                ends[first] = tokens[k - 1][3]
            first = k + 1
    return found, ends
