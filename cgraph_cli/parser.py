"""Program text -> graph IR: a scanner and an LALR(1) driver over the grammar's tables.

The tables are data in the package (:mod:`cgraph_cli._tables`, generated from the grammar by
:mod:`cgraph_cli.grammar` when the grammar changes); nothing is read from outside the package.
The driver runs shift/reduce steps in a tight loop and calls :class:`~cgraph_cli.reader.Reader`
as it reduces, so the IR is built while parsing, with no parse tree and no recursion.

>>> g = parse("p = x + y; g = p * z")
>>> g.output_label, list(g.inputs)
('g', ['x', 'y', 'z'])
"""

from __future__ import annotations

import re
import threading

from . import _tables
from ._tables import CALL, PASS
from .errors import CgraphError, ParseError, Source, Span, line_col, shorten
from .ir import Graph, gc_paused
from .ops import FUNCTIONS
from .reader import Reader

_TOKEN_WORDS = {
    "$END": "the end of the program",
    "_NL": "the end of the line",
    "_SEMI": "';'",
    "NAME": "name",
    "NUMBER": "number",
    "INPUT": "keyword",
}


class UnexpectedInput(ParseError):
    """Text the grammar does not allow: a character no token starts with, or a token the
    parser cannot take where it stands (as opposed to a valid parse the reader refuses)."""


class Tok:
    """A token: its terminal's name, its text, and its character offsets."""

    __slots__ = ("type", "value", "start_pos", "end_pos")
    line = column = end_line = end_column = None  # Lark's parser copies these onto $END

    def __init__(self, type_: str, value: str, start: int, end: int) -> None:
        self.type, self.value, self.start_pos, self.end_pos = type_, value, start, end

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r})"


class Lexer:
    """Tokens, one regular-expression match each (ignored text included in the match).

    Newlines inside parentheses and brackets continue the statement, as in Python. The lexer also keeps the
    open parentheses and the last tokens, which syntax errors name.
    """

    def __init__(self, pattern: str, trailer: str, keywords: dict[str, dict[str, str]]) -> None:
        self.pattern = re.compile(pattern)
        self.trailer = re.compile(trailer)
        self.keywords = keywords
        self.source = Source("")
        self.open: list[Tok] = []
        self.last: list[Tok] = []

    def begin(self, source: Source) -> None:
        self.source = source
        self.open = []
        self.last = []

    def lex(self, text: str):
        match = self.pattern.match
        keywords = self.keywords
        opened, last = self.open, self.last
        pos, end, depth = 0, len(text), 0
        while pos < end:
            m = match(text, pos)
            if m is None:
                pos = self.trailer.match(text, pos).end()
                if pos < end:
                    raise _bad_character(text, pos, self.source)
                return
            kind = m.lastgroup
            start, pos = m.start(kind), m.end()
            value = text[start:pos]
            if kind in keywords:
                kind = keywords[kind].get(value, kind)
            elif kind == "RPAR" or kind == "RSQB":
                if depth:
                    depth -= 1
                    opened.pop()
            elif kind == "_NL" and depth:
                continue
            tok = Tok(kind, value, start, pos)
            if kind == "LPAR" or kind == "LSQB":
                depth += 1
                opened.append(tok)
            last.append(tok)
            if len(last) > 8:
                del last[:4]
            yield tok


class _Splice(list):
    """Children of a rule that Lark's tree builder inlines into its parent."""


def _splice(children: list) -> _Splice:
    return children if children.__class__ is _Splice else _Splice(children)


def _flatten(children: list) -> _Splice:
    # A left-recursive repetition (stmt*, arg*) arrives as (earlier items, new items...): extend
    # the earlier list in place, or a long program would copy it once per statement.
    if children and children[0].__class__ is _Splice:
        out, rest = children[0], children[1:]
    else:
        out, rest = _Splice(), children
    for c in rest:
        if c.__class__ is _Splice:
            out.extend(c)
        elif not (c.__class__ is Tok and c.type[0] == "_"):
            out.append(c)
    return out


class Driver:
    """The LALR(1) loop: Lark's algorithm over plain tables, calling ``reader``'s methods."""

    def __init__(self, t, reader: Reader) -> None:
        self.states = t.STATES
        self.start, self.end = t.START, t.END
        self.rules = []
        for mode, name, size, origin, flatten in t.RULES:
            callback = getattr(reader, name) if mode == CALL else None
            self.rules.append((size, mode, callback, origin, flatten))

    def run(self, tokens, source: Source, lexer: Lexer):
        states, rules = self.states, self.rules
        stack = [self.start]
        values: list = []
        push_state, push_value = stack.append, values.append
        for tok in tokens:
            kind = tok.type
            while True:
                act = states[stack[-1]].get(kind)
                if act is None:
                    raise _syntax_error(tok, _expected(states[stack[-1]]), source, lexer)
                if act >= 0:
                    push_state(act)
                    push_value(tok)
                    break
                size, mode, callback, origin, flatten = rules[-1 - act]
                if mode == PASS:
                    del stack[-1]
                else:
                    args = values[-size:] if size else []
                    del values[len(values) - size :], stack[len(stack) - size :]
                    if flatten:
                        args = _flatten(args)
                    push_value(callback(args) if mode == CALL else _splice(args))
                push_state(states[stack[-1]][origin])
        end = len(source.text)
        eof = Tok("$END", "", end, end)
        while True:
            act = states[stack[-1]].get("$END")
            if act is None or act >= 0:
                raise _syntax_error(eof, _expected(states[stack[-1]]), source, lexer)
            size, mode, callback, origin, flatten = rules[-1 - act]
            args = values[-size:] if size else []
            del values[len(values) - size :], stack[len(stack) - size :]
            if flatten:
                args = _flatten(args)
            value = args[0] if mode == PASS else callback(args) if mode == CALL else _splice(args)
            goto = states[stack[-1]][origin]
            if goto == self.end:
                return value
            push_value(value)
            push_state(goto)


def _expected(actions: dict) -> set[str]:
    return {name for name in actions if name.isupper()}


_lock = threading.Lock()
_parser: tuple[Driver, Reader, Lexer] | None = None


def _get_parser() -> tuple[Driver, Reader, Lexer]:
    global _parser
    if _parser is None:
        t = _tables
        reader = Reader()
        _parser = Driver(t, reader), reader, Lexer(t.PATTERN, t.TRAILER, t.KEYWORDS)
    return _parser


def parse(text: str, filename: str = "<expr>") -> Graph:
    """Parse a cgraph program into a :class:`~cgraph_cli.ir.Graph`.

    Raises :class:`~cgraph_cli.errors.ParseError` (with the place) for any invalid program.

    >>> g = parse("y = sin(x) ^ 2")
    >>> [n.op.name for n in g]
    ['input', 'sin', 'const', 'pow']
    """
    source = Source(text, filename)
    with _lock:
        driver, reader, lexer = _get_parser()
        reader.begin(source)
        lexer.begin(source)
        try:
            with gc_paused():
                return driver.run(lexer.lex(text), source, lexer)
        except CgraphError as e:
            raise e.located(source) from None
        finally:
            reader.b = None  # drop the half-built graph


def _describe(tok) -> str:
    if tok.type in ("NAME", "NUMBER"):
        return f"{_TOKEN_WORDS[tok.type]} '{shorten(tok.value)}'"
    return _TOKEN_WORDS.get(tok.type) or f"'{tok.value}'"


def _bad_character(text: str, pos: int, source: Source) -> UnexpectedInput:
    """The error for a character no token starts with, with a hint for look-alikes (a Unicode
    minus, fullwidth digits, a non-breaking space) and stray backslashes."""
    from .lookalike import describe, hint

    char = text[pos]
    span = Span(pos, pos + 1)
    if char == "\\":
        return UnexpectedInput(
            "a '\\' continues a statement on the next line, so it must end its line",
            span,
            source,
            hints=["delete it, or move what follows it to the next line"],
        )
    if char.isascii() and char.isprintable():
        return UnexpectedInput(
            f"unexpected character '{char}'",
            span,
            source,
            hints=["names are letters, digits and '_'; numbers look like 3, 2.5, .5, 1e-3"],
        )
    import unicodedata

    if unicodedata.combining(char):
        return UnexpectedInput(
            f"unexpected character {describe(char)}",
            span,
            source,
            hints=["a combining accent: write the accented letter as one character (é, not e + ◌́)"],
        )
    help_line = hint(char) or (
        "a control character cannot appear in a program"
        if not char.isprintable()
        else "names are letters, digits and '_'; numbers are written with the digits 0-9"
    )
    return UnexpectedInput(
        f"unexpected character {describe(char)}", span, source, hints=[help_line]
    )


def _syntax_error(tok, expected: set[str], source: Source, tokens: Lexer) -> UnexpectedInput:
    """The parser met ``tok`` where it ``expected`` other terminals: say it in the user's words,
    with the caret in place."""
    text = source.text
    at_end = tok.type == "$END"
    # At the end of the program the caret goes just after its last token (as Lark places it).
    pos = (tokens.last[-1].end_pos if tokens.last else 0) if at_end else tok.start_pos
    span = Span(pos, pos if at_end else tok.end_pos)
    # Tokens before the bad one (the lexer has already recorded it).
    seen = [t for t in tokens.last if at_end or t.start_pos < tok.start_pos]
    prev = seen[-1] if seen else None
    ends_statement = at_end or tok.type in ("_NL", "_SEMI")
    wants_expression = "NUMBER" in expected

    if prev is not None and prev.type == "INPUT":
        return UnexpectedInput(
            "'input' declares inputs and cannot be a name",
            span,
            source,
            hints=["write: input x = 1, y = 2  (or pick another name)"],
        )
    closer = {"LPAR": "RPAR", "LSQB": "RSQB"}.get(tokens.open[-1].type) if tokens.open else None
    if ends_statement and closer in expected and not wants_expression:
        opener = tokens.open[-1]
        line, col = line_col(text, opener.start_pos)
        close = ")" if closer == "RPAR" else "]"
        return UnexpectedInput(
            f"expected '{close}' to close the '{opener.value}' at {line}:{col}", span, source
        )
    if wants_expression and "NAME" not in expected:
        # Inside an array literal or an index: only numbers may be written there.
        return UnexpectedInput(
            f"expected a number, found {_describe(tok)}",
            span,
            source,
            hints=[
                "array literals and indices hold numbers written in the program: "
                "[1, 2], x[0], x[:, 1]"
            ],
        )
    if wants_expression:
        if prev is None or prev.type in ("_NL", "_SEMI"):
            return UnexpectedInput(f"expected a statement, found {_describe(tok)}", span, source)
        found = "" if ends_statement else f", found {_describe(tok)}"
        return UnexpectedInput(f"expected an expression after '{prev.value}'{found}", span, source)
    if tok.type == "EQUAL":
        return UnexpectedInput(
            "only a name can be assigned to",
            span,
            source,
            hints=["a statement is NAME = expression, for example: p = x + y"],
        )
    if tok.type in ("RPAR", "RSQB"):
        return UnexpectedInput(f"unmatched '{tok.value}'", span, source)
    if tok.type == "COMMA":
        return UnexpectedInput(
            "',' separates a function's arguments; here it has nothing to separate",
            span,
            source,
        )
    if tok.type in ("NAME", "NUMBER", "LPAR", "INPUT"):
        after = f" after {_describe(prev)}" if prev is not None else ""
        hint = "separate statements with a newline or ';'"
        if prev is not None and prev.value in FUNCTIONS:
            hint = f"to call {prev.value}, put its argument in parentheses: {prev.value}(...)"
        return UnexpectedInput(
            f"unexpected {_describe(tok)}{after}: expected an operator or the end of the statement",
            span,
            source,
            hints=[hint],
        )
    return UnexpectedInput(f"unexpected {_describe(tok)}", span, source)
