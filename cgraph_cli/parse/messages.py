"""Syntax errors in the user's words: what the parser met, where, and what it wanted; the
characters no token starts with, with a hint for look-alikes.

>>> from cgraph_cli.parse import parse
>>> try:
...     parse("g = (x + ")
... except UnexpectedInput as e:
...     print(e.message)
expected an expression after '+'
"""

from __future__ import annotations

from ..core.errors import ParseError, Source, Span, line_col, shorten
from ..core.ops import FUNCTIONS

#: A token is a plain tuple ``(kind, text, start, end)``: the terminal's name, its text and its
#: character offsets (a tuple, the cheapest object to make, once per token of a program).
Token = tuple[str, str, int, int]
KIND, TEXT, START, END = 0, 1, 2, 3

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


def describe_token(tok) -> str:
    if tok[KIND] in ("NAME", "NUMBER"):
        return f"{_TOKEN_WORDS[tok[KIND]]} '{shorten(tok[TEXT])}'"
    return _TOKEN_WORDS.get(tok[KIND]) or f"'{tok[TEXT]}'"


def bad_character(text: str, pos: int, source: Source) -> UnexpectedInput:
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


def syntax_error(
    tok, expected: set[str], source: Source, seen: list, opened: list
) -> UnexpectedInput:
    """The parser met ``tok`` where it ``expected`` other terminals: say it in the user's words,
    with the caret in place. ``seen`` are the tokens before it, ``opened`` the brackets still
    open there."""
    text = source.text
    at_end = tok[KIND] == "$END"
    # At the end of the program the caret goes just after its last token (as Lark places it).
    pos = (seen[-1][END] if seen else 0) if at_end else tok[START]
    span = Span(pos, pos if at_end else tok[END])
    prev = seen[-1] if seen else None
    ends_statement = at_end or tok[KIND] in ("_NL", "_SEMI")
    wants_expression = "NUMBER" in expected

    if prev is not None and prev[KIND] == "INPUT":
        return UnexpectedInput(
            "'input' declares inputs and cannot be a name",
            span,
            source,
            hints=["write: input x = 1, y = 2  (or pick another name)"],
        )
    if prev is not None and prev[KIND] == "DEF" and tok[KIND] != "NAME":
        return UnexpectedInput(
            "'def' begins a function's definition and cannot be a name",
            span,
            source,
            hints=["write: def f(x, w):  with its body indented below"],
        )
    if tok[KIND] in ("DEF", "RETURN") and (wants_expression or "NAME" in expected):
        word = tok[TEXT]
        return UnexpectedInput(
            f"'{word}' is a keyword (it "
            + ("begins a function's definition" if word == "def" else "ends a function's body")
            + ") and cannot be a name",
            span,
            source,
            hints=["pick another name"],
        )
    closer = {"LPAR": "RPAR", "LSQB": "RSQB"}.get(opened[-1][KIND]) if opened else None
    if ends_statement and closer in expected and not wants_expression:
        opener = opened[-1]
        line, col = line_col(text, opener[START])
        close = ")" if closer == "RPAR" else "]"
        return UnexpectedInput(
            f"expected '{close}' to close the '{opener[TEXT]}' at {line}:{col}", span, source
        )
    if wants_expression and "NAME" not in expected:
        # Inside an array literal or an index: only numbers may be written there.
        return UnexpectedInput(
            f"expected a number, found {describe_token(tok)}",
            span,
            source,
            hints=[
                "array literals and indices hold numbers written in the program: "
                "[1, 2], x[0], x[:, 1]"
            ],
        )
    if wants_expression:
        if prev is None or prev[KIND] in ("_NL", "_SEMI"):
            return UnexpectedInput(
                f"expected a statement, found {describe_token(tok)}", span, source
            )
        found = "" if ends_statement else f", found {describe_token(tok)}"
        return UnexpectedInput(f"expected an expression after '{prev[TEXT]}'{found}", span, source)
    if tok[KIND] == "EQUAL":
        return UnexpectedInput(
            "only a name can be assigned to",
            span,
            source,
            hints=["a statement is NAME = expression, for example: p = x + y"],
        )
    if tok[KIND] in ("RPAR", "RSQB"):
        return UnexpectedInput(f"unmatched '{tok[TEXT]}'", span, source)
    if tok[KIND] == "COMMA":
        return UnexpectedInput(
            "',' separates a function's arguments; here it has nothing to separate",
            span,
            source,
        )
    if tok[KIND] in ("NAME", "NUMBER", "LPAR", "INPUT"):
        after = f" after {describe_token(prev)}" if prev is not None else ""
        hints = ["separate statements with a newline or ';'"]
        if prev is not None and prev[TEXT] in FUNCTIONS:
            hints = [f"to call {prev[TEXT]}, put its argument in parentheses: {prev[TEXT]}(...)"]
        elif prev is not None and prev[KIND] in ("NAME", "NUMBER", "RPAR", "RSQB"):
            # 2x, 2 x, x y, (a)(b): a product as written on paper
            left = "(...)" if prev[KIND] in ("RPAR", "RSQB") else _brief(prev[TEXT])
            right = "(...)" if tok[KIND] == "LPAR" else _brief(tok[TEXT])
            product = f"{left}*{right}(...)" if tok[TEXT] in FUNCTIONS else f"{left}*{right}"
            multiply = f"to multiply, write the operator: {product}"
            hints = [multiply] if prev[KIND] == "NUMBER" else [multiply, *hints]
        return UnexpectedInput(
            f"unexpected {describe_token(tok)}{after}: expected an operator or the end of the statement",
            span,
            source,
            hints=hints,
        )
    return UnexpectedInput(f"unexpected {describe_token(tok)}", span, source)


def _brief(text: str) -> str:
    """A name or number as a hint writes it: a long one cut short.

    >>> _brief("x"), _brief("1" * 40)
    ('x', '11111111111111…')
    """
    return text if len(text) <= 16 else text[:14] + "…"
