"""Program text -> graph IR. The only module that imports lark.

Lark's LALR parser calls the :class:`_Reader` callbacks as it reduces, so the IR is built while
parsing, with no parse tree and no recursion. Positions come from the tokens: each expression
callback returns ``(node, start, end)``.

>>> g = parse("p = x + y; g = p * z")
>>> g.output_label, list(g.inputs)
('g', ['x', 'y', 'z'])
"""

from __future__ import annotations

import difflib
import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import CgraphError, ParseError, Source, Span, line_col
from .ir import Builder, Graph, gc_paused
from .ops import FUNCTIONS, OPS

if TYPE_CHECKING:
    from lark import Lark, Token
    from lark.exceptions import UnexpectedInput

_AUGMENTED = {"+=": OPS["add"], "-=": OPS["sub"], "*=": OPS["mul"], "/=": OPS["div"]}
_TOKEN_WORDS = {
    "$END": "the end of the program",
    "_NL": "the end of the line",
    "_SEMI": "';'",
    "NAME": "name",
    "NUMBER": "number",
    "INPUT": "keyword",
}


def grammar_path() -> Path:
    """The grammar file: inside the installed package, or ``grammars/`` in a source checkout."""
    here = Path(__file__).resolve().parent
    packaged = here / "grammars" / "cgraph.lark"
    return packaged if packaged.is_file() else here.parent / "grammars" / "cgraph.lark"


def _binary(op_name: str):
    op = OPS[op_name]

    def build(self, children):
        a, _, b = children
        return self.b.add(op, (a[0], b[0]), a[1], b[2]), a[1], b[2]

    return build


class _Reader:
    """Parser callbacks, one per grammar alias, each given the list of its rule's children
    (tokens, and the results of inner callbacks). :meth:`begin` resets the state per parse."""

    def begin(self, source: Source) -> None:
        self.b = Builder(source)
        self.text = source.text
        self.output = -1
        self.output_label = ""
        self.bare: Span | None = None  # a bare expression seen; legal only as the last statement

    def _error(self, message: str, start: int, end: int, **kw) -> ParseError:
        return ParseError(message, Span(start, end), self.b.graph.source, **kw)

    def _statement(self) -> None:
        if self.bare is not None:
            raise self._error(
                "this value is computed and then lost: only the last statement may be a bare "
                "expression",
                *self.bare,
                hints=["name it (NAME = ...) to keep it, or delete it"],
            )

    # expressions -----------------------------------------------------------------------------
    def number(self, children):
        tok = children[0]
        value = float(tok)
        if value == float("inf"):
            raise self._error(f"the number {tok} is too large for a float64", tok.start_pos, tok.end_pos)
        return self.b.const(value, tok.start_pos, tok.end_pos), tok.start_pos, tok.end_pos

    def name(self, children):
        tok = children[0]
        return self.b.read(tok.value, tok.start_pos, tok.end_pos), tok.start_pos, tok.end_pos

    add = _binary("add")
    sub = _binary("sub")
    mul = _binary("mul")
    div = _binary("div")
    pow = _binary("pow")

    def neg(self, children):
        minus, e = children
        graph = self.b.graph
        node = e[0]
        # A minus sign on a literal is part of the number: -3 is one constant node, not neg(3).
        # (Every literal is a node of its own, so nothing else sees the sign change.)
        if graph.ops[node] is OPS["const"]:
            graph.consts[node] = -graph.consts[node]
            graph.starts[node] = minus.start_pos
            return node, minus.start_pos, e[2]
        return self.b.add(OPS["neg"], (node,), minus.start_pos, e[2]), minus.start_pos, e[2]

    def pos(self, children):
        plus, e = children
        return e[0], plus.start_pos, e[2]

    def group(self, children):
        lpar, e, rpar = children
        return e[0], lpar.start_pos, rpar.end_pos

    def call(self, children):
        name, rest = children[0], children[1:]
        args = [r[0] for r in rest if type(r) is tuple]
        start, end = name.start_pos, rest[-1].end_pos
        op = FUNCTIONS.get(name.value)
        if op is None:
            close = difflib.get_close_matches(name.value, list(FUNCTIONS), n=1)
            hints = [f"did you mean '{close[0]}'?"] if close else []
            hints.append("functions: " + ", ".join(sorted(FUNCTIONS)))
            raise self._error(f"unknown function '{name.value}'", start, name.end_pos, hints=hints)
        if len(args) != op.arity:
            plural = "" if op.arity == 1 else "s"
            raise self._error(
                f"{op.name} takes {op.arity} argument{plural}, got {len(args)}", start, end,
                hints=[f"write it as {op.example}"],
            )
        return self.b.add(op, tuple(args), start, end), start, end

    # statements ------------------------------------------------------------------------------
    def assign(self, children):
        name, _, e = children
        self._statement()
        self.b.assign(name.value, e[0])
        self.output, self.output_label = e[0], name.value

    def augassign(self, children):
        name, op, e = children
        self._statement()
        left = self.b.read(name.value, name.start_pos, name.end_pos)
        node = self.b.add(_AUGMENTED[op.value], (left, e[0]), name.start_pos, e[2])
        self.b.assign(name.value, node)
        self.output, self.output_label = node, name.value

    def bare(self, children):
        e = children[0]
        self._statement()
        self.output = e[0]
        self.output_label = " ".join(self.text[e[1] : e[2]].split())
        self.bare = Span(e[1], e[2])

    def signed_number(self, toks):
        value = float(toks[-1])
        return -value if len(toks) == 2 else value

    def input_item(self, children):
        return children[0], (children[2] if len(children) > 1 else None)

    def declare(self, children):
        items = children[1:]
        self._statement()
        graph = self.b.graph
        for item in items:
            if type(item) is not tuple:
                continue  # a comma
            name, default = item
            where = (name.start_pos, name.end_pos)
            if name.value in graph.defaults or (name.value in graph.inputs and default is None):
                raise self._error(f"input '{name.value}' is declared twice", *where)
            if name.value in self.b.scope and name.value not in graph.inputs:
                raise self._error(
                    f"'{name.value}' is already computed by the program, so it cannot be an input",
                    *where, hints=["declare inputs before the statements that assign them"],
                )
            self.b.read(name.value, *where)
            if default is not None:
                if default in (float("inf"), float("-inf")):
                    raise self._error(f"the default of '{name.value}' is too large", *where)
                graph.defaults[name.value] = default

    def start(self, _statements) -> Graph:
        if self.output < 0:
            what = "has no statements" if not self.b.graph.ops else "computes nothing"
            raise self._error(
                f"the program {what}", 0, 0,
                hints=["write an expression, for example: g = (x + y) * z"],
            )
        return self.b.finish(self.output, self.output_label)


class _Tokens:
    """Post-lexer: newlines inside parentheses continue the line, as in Python. It also keeps
    the open parentheses and the last tokens, which the error messages name."""

    always_accept = ("_NL",)

    def begin(self) -> None:
        self.open: list[Token] = []
        self.last: list[Token] = []

    def process(self, stream):
        depth = 0
        opened = self.open
        last = self.last
        for tok in stream:
            kind = tok.type
            if kind == "LPAR":
                depth += 1
                opened.append(tok)
            elif kind == "RPAR":
                if depth:
                    depth -= 1
                    opened.pop()
            elif kind == "_NL" and depth:
                continue
            last.append(tok)
            if len(last) > 8:
                del last[:4]
            yield tok


_lock = threading.Lock()
_parser: tuple[Lark, _Reader, _Tokens] | None = None


def _cache_file(grammar: str) -> str | bool:
    """A per-user cache path for Lark's tables, keyed by the grammar (never a shared /tmp file:
    Lark's cache is a pickle)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "cgraph")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    import lark

    key = hashlib.sha256(f"{lark.__version__}\n{grammar}".encode()).hexdigest()[:16]
    return os.path.join(folder, f"grammar-{key}.lark-cache")


def _get_parser() -> tuple[Lark, _Reader, _Tokens]:
    global _parser
    if _parser is None:
        from lark import Lark

        grammar = grammar_path().read_text(encoding="utf-8")
        reader, tokens = _Reader(), _Tokens()
        lark_parser = Lark(
            grammar, parser="lalr", lexer="contextual", transformer=reader, postlex=tokens,
            cache=_cache_file(grammar), maybe_placeholders=False,
        )
        _parser = lark_parser, reader, tokens
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
        lark_parser, reader, tokens = _get_parser()
        reader.begin(source)
        tokens.begin()
        try:
            with gc_paused():
                return lark_parser.parse(text)
        except CgraphError as e:
            raise e.located(source)
        except Exception as e:
            from lark.exceptions import UnexpectedInput, VisitError

            if isinstance(e, VisitError) and isinstance(e.orig_exc, CgraphError):
                raise e.orig_exc.located(source) from None
            if isinstance(e, UnexpectedInput):
                raise _syntax_error(e, source, tokens) from None
            raise
        finally:
            reader.b = None  # drop the half-built graph


def _describe(tok: Token) -> str:
    if tok.type in ("NAME", "NUMBER"):
        return f"{_TOKEN_WORDS[tok.type]} '{tok.value}'"
    return _TOKEN_WORDS.get(tok.type) or f"'{tok.value}'"


def _syntax_error(e: UnexpectedInput, source: Source, tokens: _Tokens) -> ParseError:
    """Turn Lark's exception into a message in the user's words, with the caret in place."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken

    text = source.text
    if isinstance(e, UnexpectedCharacters):
        pos = e.pos_in_stream
        char = text[pos]
        hint = ["names are letters, digits and '_'; numbers look like 3, 2.5, .5, 1e-3"]
        return ParseError(f"unexpected character {char!r}", Span(pos, pos + 1), source, hints=hint)
    if not isinstance(e, UnexpectedToken):
        return ParseError(str(e).splitlines()[0], Span(len(text), len(text)), source)
    tok, expected = e.token, set(e.expected)
    at_end = tok.type == "$END"
    # Lark puts $END on the last real token; the caret belongs after the text.
    pos = len(text.rstrip()) if at_end else tok.start_pos
    span = Span(pos, pos if at_end else tok.end_pos)
    # The contextual lexer raises before the post-lexer sees the bad token, the parser after.
    seen = [t for t in tokens.last if at_end or t.start_pos < tok.start_pos]
    prev = seen[-1] if seen else None
    ends_statement = at_end or tok.type in ("_NL", "_SEMI")
    wants_expression = "NUMBER" in expected

    if prev is not None and prev.type == "INPUT":
        return ParseError(
            "'input' declares inputs and cannot be a name", span, source,
            hints=["write: input x = 1, y = 2  (or pick another name)"],
        )
    if ends_statement and tokens.open and "RPAR" in expected and not wants_expression:
        line, col = line_col(text, tokens.open[-1].start_pos)
        return ParseError(f"expected ')' to close the '(' at {line}:{col}", span, source)
    if wants_expression:
        if prev is None or prev.type in ("_NL", "_SEMI"):
            return ParseError(f"expected a statement, found {_describe(tok)}", span, source)
        found = "" if ends_statement else f", found {_describe(tok)}"
        return ParseError(f"expected an expression after '{prev.value}'{found}", span, source)
    if tok.type == "EQUAL":
        return ParseError(
            "only a name can be assigned to", span, source,
            hints=["a statement is NAME = expression, for example: p = x + y"],
        )
    if tok.type == "RPAR":
        return ParseError("unmatched ')'", span, source)
    if tok.type == "COMMA":
        return ParseError(
            "',' separates a function's arguments; here it has nothing to separate", span, source,
        )
    if tok.type in ("NAME", "NUMBER", "LPAR", "INPUT"):
        after = f" after {_describe(prev)}" if prev is not None else ""
        hint = "separate statements with a newline or ';'"
        if prev is not None and prev.value in FUNCTIONS:
            hint = f"to call {prev.value}, put its argument in parentheses: {prev.value}(...)"
        return ParseError(
            f"unexpected {_describe(tok)}{after}: expected an operator or the end of the statement",
            span, source, hints=[hint],
        )
    return ParseError(f"unexpected {_describe(tok)}", span, source)
