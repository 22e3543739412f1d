"""Program text -> graph IR. The only module that imports lark.

Lark's LALR parser calls :class:`~cgraph_cli.reader.Reader` as it reduces, so the IR is built
while parsing, with no parse tree and no recursion. The tokens come from :class:`_Lexer`, a
scanner compiled from the grammar's own terminals: one regular-expression match per token,
whitespace and comments included, where Lark's general lexer takes several.

>>> g = parse("p = x + y; g = p * z")
>>> g.output_label, list(g.inputs)
('g', ['x', 'y', 'z'])
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import CgraphError, ParseError, Source, Span, line_col
from .ir import Graph, gc_paused
from .ops import FUNCTIONS
from .reader import Reader

if TYPE_CHECKING:
    from lark import Lark

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


class Tok:
    """A token: what the parser and the callbacks read of it. Lighter than ``lark.Token``;
    positions are character offsets (lines and columns are computed only for messages)."""

    __slots__ = ("type", "value", "start_pos", "end_pos")
    line = column = end_line = end_column = None  # Lark copies these onto its $END token

    def __init__(self, type_: str, value: str, start: int, end: int) -> None:
        self.type, self.value, self.start_pos, self.end_pos = type_, value, start, end

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r})"


class _Lexer:
    """Tokens for Lark's parser (its custom-lexer interface). Built from the grammar's terminals:
    ignored terminals become a prefix every match skips; a string terminal that a regex terminal
    also matches (the keyword ``input`` and NAME) becomes a keyword of that regex terminal.

    Newlines inside parentheses continue the statement, as in Python. The lexer also keeps the
    open parentheses and the last tokens, which syntax errors name.
    """

    def __init__(self, lexer_conf) -> None:
        terminals = [t for t in lexer_conf.terminals if t.name not in lexer_conf.ignore]
        ignored = [t for t in lexer_conf.terminals if t.name in lexer_conf.ignore]
        strings = [t for t in terminals if t.pattern.type == "str"]
        regexes = [t for t in terminals if t.pattern.type == "re"]
        self.keywords: dict[str, dict[str, str]] = {}
        for r in regexes:
            for s in strings:
                if re.fullmatch(r.pattern.to_regexp(), s.pattern.value):
                    self.keywords.setdefault(r.name, {})[s.pattern.value] = s.name
        keyword_names = {name for kw in self.keywords.values() for name in kw.values()}
        # Lark's own order: longest possible match first, so "**" wins over "*".
        ordered = sorted(
            (t for t in terminals if t.name not in keyword_names),
            key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name),
        )
        skip = "|".join(t.pattern.to_regexp() for t in ignored)
        body = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in ordered)
        self.pattern = re.compile(f"(?:{skip})*(?:{body})")
        self.trailer = re.compile(f"(?:{skip})*")
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
                    raise ParseError(
                        f"unexpected character {text[pos]!r}", Span(pos, pos + 1), self.source,
                        hints=["names are letters, digits and '_'; numbers look like 3, 2.5, .5, 1e-3"],
                    )
                return
            kind = m.lastgroup
            start, pos = m.start(kind), m.end()
            value = text[start:pos]
            if kind in keywords:
                kind = keywords[kind].get(value, kind)
            elif kind == "LPAR":
                depth += 1
            elif kind == "RPAR":
                if depth:
                    depth -= 1
                    opened.pop()
            elif kind == "_NL" and depth:
                continue
            tok = Tok(kind, value, start, pos)
            if kind == "LPAR":
                opened.append(tok)
            last.append(tok)
            if len(last) > 8:
                del last[:4]
            yield tok


_lock = threading.Lock()
_parser: tuple[Lark, _Driver, Reader, _Lexer] | None = None


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


def _get_parser() -> tuple[Lark, _Driver, Reader, _Lexer]:
    global _parser
    if _parser is None:
        from lark import Lark
        from lark.lexer import Lexer

        grammar = grammar_path().read_text(encoding="utf-8")
        lexers: list[_Lexer] = []

        class _LarkLexer(_Lexer, Lexer):  # Lark takes a Lexer subclass and makes the instance
            def __init__(self, lexer_conf) -> None:
                _Lexer.__init__(self, lexer_conf)
                lexers.append(self)

        # Lark's cache pickles the class by name, so it must be reachable as a module global.
        _LarkLexer.__qualname__ = "_LarkLexer"
        globals()["_LarkLexer"] = _LarkLexer
        reader = Reader()
        lark_parser = Lark(
            grammar, parser="lalr", lexer=_LarkLexer, transformer=reader,
            cache=_cache_file(grammar), maybe_placeholders=False,
        )
        _parser = lark_parser, _Driver(lark_parser), reader, lexers[-1]
    return _parser


class _Driver:
    """Lark's LALR(1) tables run by a tight loop of our own.

    The same shift/reduce steps and the same callbacks as Lark's parser loop, without its
    per-step bookkeeping: about twice as fast, which matters for 10^5-statement programs.
    ``parse(..., engine="lark")`` runs Lark's own loop, and the tests check the two agree.
    """

    def __init__(self, lark_parser: Lark) -> None:
        from lark.parsers.lalr_analysis import Shift

        inner = lark_parser.parser.parser.parser  # frontend -> LALR_Parser -> _Parser
        table, callbacks = inner.parse_table, inner.callbacks
        # Per state: token or rule name -> next state (an int, shift/goto) or a reduction
        # (size, callback, rule name) (a tuple). A `?rule` with one child hands that child up
        # unchanged (sum -> product -> unary ...): its callback is None and the loop skips it.
        def reduction(rule):
            passes_through = rule.options.expand1 and len(rule.expansion) == 1 and not rule.alias
            return len(rule.expansion), None if passes_through else callbacks[rule], rule.origin.name

        self.states = {
            state: {
                name: arg if action is Shift else reduction(arg)
                for name, (action, arg) in actions.items()
            }
            for state, actions in table.states.items()
        }
        self.start = table.start_states["start"]
        self.end = table.end_states["start"]

    def run(self, tokens, source: Source, lexer: _Lexer):
        states = self.states
        stack = [self.start]
        values: list = []
        push_state, push_value = stack.append, values.append
        tok = None
        for tok in tokens:
            kind = tok.type
            while True:
                act = states[stack[-1]].get(kind)
                if act.__class__ is int:
                    push_state(act)
                    push_value(tok)
                    break
                if act is None:
                    raise _syntax_error(tok, _expected(states[stack[-1]]), source, lexer)
                size, callback, origin = act
                if callback is None:
                    del stack[-1]
                    push_state(states[stack[-1]][origin])
                    continue
                if size:
                    args = values[-size:]
                    del values[-size:], stack[-size:]
                else:
                    args = []
                push_value(callback(args))
                push_state(states[stack[-1]][origin])
        end = len(source.text)
        eof = Tok("$END", "", end, end)
        while True:
            act = states[stack[-1]].get("$END")
            if act is None:
                raise _syntax_error(eof, _expected(states[stack[-1]]), source, lexer)
            size, callback, origin = act
            args = values[-size:] if size else []
            del values[len(values) - size :], stack[len(stack) - size :]
            value = args[0] if callback is None else callback(args)
            goto = states[stack[-1]][origin]
            if goto == self.end:
                return value
            push_value(value)
            push_state(goto)


def _expected(actions: dict) -> set[str]:
    return {name for name in actions if name.isupper()}


def parse(text: str, filename: str = "<expr>", *, engine: str = "fast") -> Graph:
    """Parse a cgraph program into a :class:`~cgraph_cli.ir.Graph`.

    Raises :class:`~cgraph_cli.errors.ParseError` (with the place) for any invalid program.
    ``engine="lark"`` runs Lark's own parser loop instead of ours (same result, slower).

    >>> g = parse("y = sin(x) ^ 2")
    >>> [n.op.name for n in g]
    ['input', 'sin', 'const', 'pow']
    """
    source = Source(text, filename)
    with _lock:
        lark_parser, driver, reader, lexer = _get_parser()
        reader.begin(source)
        lexer.begin(source)
        try:
            with gc_paused():
                if engine == "lark":
                    return lark_parser.parse(text)
                return driver.run(lexer.lex(text), source, lexer)
        except CgraphError as e:
            raise e.located(source) from None
        except Exception as e:
            from lark.exceptions import UnexpectedToken, VisitError

            if isinstance(e, VisitError) and isinstance(e.orig_exc, CgraphError):
                raise e.orig_exc.located(source) from None
            if isinstance(e, UnexpectedToken):
                raise _syntax_error(e.token, set(e.expected), source, lexer) from None
            raise
        finally:
            reader.b = None  # drop the half-built graph


def _describe(tok) -> str:
    if tok.type in ("NAME", "NUMBER"):
        return f"{_TOKEN_WORDS[tok.type]} '{tok.value}'"
    return _TOKEN_WORDS.get(tok.type) or f"'{tok.value}'"


def _syntax_error(tok, expected: set[str], source: Source, tokens: _Lexer) -> ParseError:
    """The parser met ``tok`` where it ``expected`` other terminals: say it in the user's words,
    with the caret in place."""
    text = source.text
    at_end = tok.type == "$END"
    # Lark puts $END on the last real token; the caret belongs after the text.
    pos = len(text.rstrip()) if at_end else tok.start_pos
    span = Span(pos, pos if at_end else tok.end_pos)
    # Tokens before the bad one (the lexer has already recorded it).
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
