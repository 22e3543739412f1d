"""The edits the server offers on a program's text: renaming a name everywhere, formatting
through :func:`~cgraph_cli.parse.unparse.to_source`, and finding the call around the cursor
for signature help. Nothing here knows LSP; what cannot be done raises :class:`Refused`
with the reason a user reads.

>>> a = Analysis("input x = 1\\np = x + 1\\nq = p * p")
>>> [(s.start, s.end) for s in renamed(a, 13, "total")]
[(12, 13), (26, 27), (30, 31)]
>>> call_at("y = max(x, sin(", 15), call_at("y = max(x, [1, 2", 16)
(('sin', 11, 0), ('max', 4, 1))
"""

from __future__ import annotations

import re
from collections import Counter

from ...core.errors import CgraphError, Source
from ...core.ops import FUNCTIONS
from ...parse import parse
from ...parse.lexer import scan
from ...parse.unparse import to_source
from .analysis import Analysis
from .features import KEYWORDS
from .index import Site, statements

RENAMED = ("input", "value", "read", "function", "call")
_COMMENT = re.compile(r"#[^\r\n]*")


class Refused(Exception):
    """An edit the server will not make, and why (the text a user sees)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def rename_target(analysis: Analysis, offset: int) -> Site:
    """The name under ``offset`` that a rename would change, or :class:`Refused` saying why
    that name cannot be renamed (an op's function, a parameter, nothing there)."""
    site = analysis.index.at(offset)
    if site is None:
        raise Refused("no name here to rename")
    if site.kind == "call" and site.name not in analysis.index.functions:
        raise Refused(f"'{site.name}' is a function of cgraph's op table: it cannot be renamed")
    if site.kind not in RENAMED:
        what = "a function's parameter" if site.kind == "param" else "a loop's counter"
        raise Refused(f"'{site.name}' is {what}: only a program's names and functions are renamed")
    return site


def check_name(analysis: Analysis, old: str, new: str) -> None:
    """:class:`Refused` unless ``new`` can stand for ``old``: one name as the language spells
    names, not a keyword, not a function of the op table, not a name the program uses.

    >>> check_name(Analysis("a = 1\\nb = 2"), "a", "b")
    Traceback (most recent call last):
    ...
    cgraph_cli.app.lsp.edits.Refused: 'b' is already a name of this program: renaming 'a' to it would merge the two
    """
    tokens, _codes, error = scan(Source(new))
    kinds = [(kind, start, end) for kind, _text, start, end in tokens]
    if new in KEYWORDS:
        raise Refused(f"'{new}' is a keyword of the language, not a name")
    if error is not None or kinds != [("NAME", 0, len(new))]:
        raise Refused(f"'{new}' is not a name: letters, digits and _, not starting with a digit")
    if new in FUNCTIONS:
        raise Refused(f"'{new}' is a function of cgraph's op table: a name cannot shadow it")
    if new != old and any(site.name == new for site in analysis.index.sites):
        raise Refused(
            f"'{new}' is already a name of this program: renaming '{old}' to it would merge the two"
        )


def renamed(analysis: Analysis, offset: int, new: str) -> list[Site]:
    """The occurrences a rename of the name at ``offset`` to ``new`` replaces: each of its
    definitions and reads (not a function's parameter of the same name), or :class:`Refused`."""
    site = rename_target(analysis, offset)
    check_name(analysis, site.name, new)
    if new == site.name:
        return []
    return analysis.index.references(site.name)


def call_at(text: str, offset: int) -> tuple[str, int, int] | None:
    """The innermost call whose parentheses hold ``offset``: its function's name, where that
    name starts, and which argument the cursor is in (commas inside brackets or inner calls
    do not count); None outside every call."""
    open_: list[list] = []  # per open bracket: [name or None, name's start, commas]
    before: tuple = ("", "", 0, 0)
    for token in scan(Source(text))[0]:
        kind, _text, start, end = token
        if end > offset:
            break
        if kind in ("LPAR", "LSQB"):
            called = kind == "LPAR" and before[0] == "NAME" and before[3] == start
            open_.append([before[1] if called else None, before[2], 0])
        elif kind in ("RPAR", "RSQB") and open_:
            open_.pop()
        elif kind == "COMMA" and open_:
            open_[-1][2] += 1
        before = token
    for frame in reversed(open_):
        if frame[0] is not None:
            return frame[0], frame[1], frame[2]
    return None


def comments(text: str) -> list[str]:
    """The comments of a program, each from its ``#`` to the end of its line.

    >>> comments("x = 1  # one\\n# two\\ny = x")
    ['# one', '# two']
    """
    found = []
    pos = 0
    for _kind, _text, start, end in scan(Source(text))[0]:
        found += _COMMENT.findall(text, pos, start)
        pos = end
    return found + _COMMENT.findall(text, pos)


def formatted(analysis: Analysis) -> str:
    """The program with each statement written as :func:`to_source` writes it, and its
    comments, blank lines, ``def`` and ``for`` blocks as they are; :class:`Refused` when it
    does not parse. A statement written over several lines or around a comment is kept as it
    is.

    >>> print(formatted(Analysis("# squares\\ninput x=1, w = [ 1,2.50]\\ny = (x)*x   # x²\\nx+=y*(2)")))
    # squares
    input x = 1, w = [1, 2.5]
    y = x * x   # x²
    x += y * 2
    """
    graph, text = analysis.graph, analysis.text
    if graph is None:
        raise Refused("not formatted: the program does not parse")
    # a statement that calls a def is written with the defs above it, as it is parsed
    defs = "".join(text[start:end] + "\n" for _params, start, end in graph.functions.values())
    out, pos = [], 0
    for tokens, indent in statements(text):
        start, end = tokens[0][2], tokens[-1][3]
        new = _statement(tokens, text[start:end], defs) if indent == 0 else None
        if new is not None:
            out += [text[pos:start], new]
            pos = end
    result = "".join([*out, text[pos:]])
    _check(analysis, result)
    return result


def _statement(tokens: list, source: str, defs: str) -> str | None:
    """One top-level statement's text as to_source writes it (None: kept as it is)."""
    head = tokens[0][0]
    if "#" in source or "\n" in source or "\r" in source or head in ("DEF", "FOR", "RETURN"):
        return None
    if head == "INPUT":
        items = _items(tokens, source, defs)
        return None if items is None else f"input {', '.join(items)}"
    if head == "NAME" and len(tokens) > 2 and tokens[1][0] in ("EQUAL", "AUGOP"):
        value = _expression(source[tokens[2][2] - tokens[0][2] :], defs)
        return None if value is None else f"{tokens[0][1]} {tokens[1][1]} {value}"
    return _expression(source, defs)


def _items(tokens: list, source: str, defs: str) -> list[str] | None:
    """``input`` items as written: ``name`` or ``name = value``, each value formatted."""
    base, items, depth, first = tokens[0][2], [], 0, 1
    for k in range(1, len(tokens) + 1):
        kind = tokens[k][0] if k < len(tokens) else "COMMA"
        depth += (kind == "LSQB") - (kind == "RSQB")
        if kind != "COMMA" or depth:
            continue
        part = source[tokens[first][2] - base : tokens[k - 1][3] - base]
        name, equal, value = part.partition("=")
        shown = _expression(value, defs) if equal else ""
        if shown is None:
            return None
        items.append(f"{name.strip()} = {shown}" if equal else name.strip())
        first = k + 1
    return items


_SLOT = "__formatted__"


def _expression(source: str, defs: str = "") -> str | None:
    """An expression as to_source writes it (after the program's ``defs``, which it may call);
    None when that is not one line of the same meaning (it does not parse alone)."""
    if _SLOT in source:
        return None
    try:
        graph = parse(f"{defs}{_SLOT} = {source}")
    except CgraphError:
        return None
    if getattr(graph.control, "loops", None):  # (if/else: to_source writes it as written)
        return None
    above, _, written = to_source(graph).rstrip("\n").rpartition("\n")
    if [ln for ln in above.split("\n") if ln] != [ln for ln in defs.split("\n") if ln]:
        return None  # the defs, written as they are, and the one line
    if not written.startswith(f"{_SLOT} = "):
        return None
    return written[len(_SLOT) + 3 :]


def _check(analysis: Analysis, result: str) -> None:
    """:class:`Refused` if the formatted text lost a comment or is another graph (to_source
    promises neither happens: this says so rather than write it)."""
    lost = Counter(comments(analysis.text)) - Counter(comments(result))
    try:
        again = parse(result)
    except CgraphError as error:
        raise Refused(
            f"not formatted: the formatted program does not parse ({error.message})"
        ) from None
    graph = analysis.graph
    assert graph is not None
    if lost or (again.ops, again.args, again.params) != (graph.ops, graph.args, graph.params):
        raise Refused("not formatted: the formatted program would not be the same (a bug)")
