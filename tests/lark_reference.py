"""Lark's own lexer and parser over cgraph's grammar: the reference that cgraph's scanner and
LALR driver (cgraph_cli/parse/) are held to.

Lark's basic lexer tokenizes; a post-lexer drops a newline inside ( ) or [ ], where a statement
continues (as in Python; the one rule of the language that is not in the grammar file);
Lark's LALR parser calls cgraph's Reader as it reduces, so both build the same graph.
``outcome`` reduces a parse to what must agree: the graph, or where (and why) it failed.
"""

from __future__ import annotations

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError

from cgraph_cli.core.errors import ParseError, Source
from cgraph_cli.parse import UnexpectedInput, parse, tables
from cgraph_cli.parse.build import lark_parser
from cgraph_cli.parse.reader import Reader


class BracketNewlines:
    """Lark post-lexer: newlines inside brackets continue the statement."""

    always_accept = ()

    def process(self, stream):
        depth = 0
        for tok in stream:
            if tok.type in ("LPAR", "LSQB"):
                depth += 1
            elif tok.type in ("RPAR", "RSQB") and depth:
                depth -= 1
            elif tok.type == "_NL" and depth:
                continue
            yield tok


class LarkReader(Reader):
    """cgraph's Reader, handed Lark's tokens as the scanner's: (kind, text, start, end)."""


def _taking_lark_tokens(method):
    def callback(self, children):
        return method(self, [_tok(c) if isinstance(c, Token) else c for c in children])

    return callback


def _tok(t: Token) -> tuple[str, str, int, int]:
    return (t.type, t.value, t.start_pos, t.end_pos)


for _mode, _name, *_ in tables.RULES:
    if _mode == tables.CALL:
        setattr(LarkReader, str(_name), _taking_lark_tokens(getattr(Reader, str(_name))))


class LoopMet(Exception):
    """Lark's parser reached a loop's header (or a function's): the reference stops there.
    Lark reads the grammar only; the bodies of loops and functions are the driver's
    (indentation), which the reference does not model, so programs with loops or functions
    are compared up to their first header only."""


def _loop(self, children):
    raise LoopMet


LarkReader.loop = _loop  # type: ignore[method-assign]
LarkReader.define = _loop  # type: ignore[method-assign]

_reader = LarkReader()
_lark = lark_parser(lexer="basic", postlex=BracketNewlines(), transformer=_reader)


def ir(graph) -> tuple:
    """A graph as comparable data: its nodes as text, its output, its defaults."""
    defaults = {k: getattr(v, "tolist", lambda v=v: v)() for k, v in graph.defaults.items()}
    return [str(node) for node in graph], graph.output, graph.output_label, defaults


def lark_outcome(text: str) -> tuple:
    """``("graph", ir)`` or ``("error", offset, message)`` from Lark's lexer and parser; the
    message only for errors the Reader raises (both loops call the same Reader)."""
    _reader.begin(Source(text))
    try:
        return "graph", ir(_lark.parse(text))
    except LoopMet:
        return ("loop",)
    except VisitError as e:
        if isinstance(e.orig_exc, LoopMet):
            return ("loop",)
        if not isinstance(e.orig_exc, ParseError):
            raise
        return "error", e.orig_exc.span.start, e.orig_exc.message
    except ParseError as e:  # from a Reader callback
        return "error", e.span.start, e.message
    except UnexpectedCharacters as e:
        return "error", e.pos_in_stream, None
    except UnexpectedToken as e:
        # At the end of the text Lark's $END token borrows the place of the last token.
        pos = e.token.end_pos if e.token.type == "$END" else e.token.start_pos
        return "error", pos, None
    finally:
        _reader.b = None


def our_outcome(text: str) -> tuple:
    """The same, from cgraph's scanner and driver; a syntax error keeps only its place."""
    try:
        return "graph", ir(parse(text))
    except ParseError as e:
        return "error", e.span.start, None if isinstance(e, UnexpectedInput) else e.message
