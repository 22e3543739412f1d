"""Parser callbacks that build the graph IR as the LALR parser reduces.

One method per grammar alias; each receives the list of its rule's children (tokens, and what
inner callbacks returned). Expressions return ``(node, start, end)`` so that spans reach the
nodes without a parse tree. This module does not import lark.
"""

from __future__ import annotations

import difflib

from .errors import ParseError, Source, Span
from .ir import Builder, Graph
from .ops import CONST, FUNCTIONS, OPS

_AUGMENTED = {"+=": OPS["add"], "-=": OPS["sub"], "*=": OPS["mul"], "/=": OPS["div"]}


def _binary(op_name: str):
    op = OPS[op_name]

    def build(self, children):
        a, _, b = children
        return self.b.add(op, (a[0], b[0]), a[1], b[2]), a[1], b[2]

    return build


class Reader:
    """Parser callbacks, one per grammar alias, each given the list of its rule's children
    (tokens, and the results of inner callbacks). :meth:`begin` resets the state per parse."""

    def begin(self, source: Source) -> None:
        self.b = Builder(source)
        self.text = source.text
        self.output = -1
        self.output_label = ""
        self.bare_span: Span | None = None  # a bare expression seen; legal only as the last statement
        self.declared: set[str] = set()  # names given by `input` statements

    def _error(self, message: str, start: int, end: int, **kw) -> ParseError:
        return ParseError(message, Span(start, end), self.b.graph.source, **kw)

    def _statement(self) -> None:
        if self.bare_span is not None:
            raise self._error(
                "this value is computed and then lost: only the last statement may be a bare "
                "expression",
                *self.bare_span,
                hints=["name it (NAME = ...) to keep it, or delete it"],
            )

    # expressions -----------------------------------------------------------------------------
    def number(self, children):
        tok = children[0]
        value = float(tok.value)
        if value == float("inf"):
            raise self._error(
                f"the number {tok.value} is too large for a float64", tok.start_pos, tok.end_pos
            )
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
        # A minus sign written on a literal is part of the number: -3 is one constant node, not
        # neg(3). Not so for -(3) or -c where c names a constant.
        if graph.ops[node] is CONST and graph.starts[node] == e[1] and graph.ends[node] == e[2]:
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
        self.b.statement("=", name.value, e[0])
        self.output, self.output_label = e[0], name.value

    def augassign(self, children):
        name, op, e = children
        self._statement()
        left = self.b.read(name.value, name.start_pos, name.end_pos)
        node = self.b.add(_AUGMENTED[op.value], (left, e[0]), name.start_pos, e[2])
        self.b.assign(name.value, node)
        self.b.statement("=", name.value, node)
        self.output, self.output_label = node, name.value

    def bare(self, children):
        e = children[0]
        self._statement()
        self.output = e[0]
        # The expression's text, on one line: without comments or line continuations.
        text = self.text[e[1] : e[2]].replace("\\\n", " ")
        self.output_label = " ".join(line.split("#")[0] for line in text.splitlines()).strip()
        self.output_label = " ".join(self.output_label.split())
        self.bare_span = Span(e[1], e[2])
        self.b.statement("bare", self.output_label, e[0])

    def signed_number(self, toks):
        value = float(toks[-1].value)
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
            if name.value in self.declared:
                raise self._error(f"input '{name.value}' is declared twice", *where)
            if name.value in self.b.scope and name.value not in graph.inputs:
                raise self._error(
                    f"'{name.value}' is already computed by the program, so it cannot be an input",
                    *where, hints=["declare inputs before the statements that assign them"],
                )
            if default is not None and default in (float("inf"), float("-inf")):
                raise self._error(f"the default of '{name.value}' is too large", *where)
            node = self.b.read(name.value, *where)
            if default is not None:
                graph.defaults[name.value] = default
            self.b.statement("input", name.value, node)
            self.declared.add(name.value)

    def start(self, _statements) -> Graph:
        if self.output < 0:
            what = "has no statements" if not self.b.graph.ops else "computes nothing"
            raise self._error(
                f"the program {what}", 0, 0,
                hints=["write an expression, for example: g = (x + y) * z"],
            )
        return self.b.finish(self.output, self.output_label)
