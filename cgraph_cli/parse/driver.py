"""The LALR(1) driver: tokens -> graph, calling the reader's callbacks as it reduces (no parse
tree, no recursion), over the tables Lark computed from the grammar.

A program is statements separated by newlines or ``;`` (a newline inside brackets is dropped
by the scanner), so the driver parses it statement by statement, each from the grammar's
``stmt`` entry point, the separator after it standing for the end. Two things keep the loop
short, both derived from the tables as the program is read:

- a chain of unit reductions (``?sum: product``, which only hand their child up) is followed
  once per (state below, state, lookahead) and remembered, instead of step by step;
- a statement is parsed once per *shape* (its tokens' kinds): the shifts and reductions it
  took are recorded. When the shape comes again, the record is turned into a small Python
  function that makes the same callback calls, in order, on the statement's own tokens (no
  stack, no table: straight-line code generated from the record alone, which holds only
  numbers, never text of the program). A long program repeats a few shapes
  (``v = v * a + b``), so most of its statements run such a function; statements of one
  shape one after another (found in the string of kinds by one pattern) run in one call of
  it, in a loop, with the graph's lists and their appends bound once a parse.

The result is the one Lark's own parser builds for the whole program: tests/test_scanner.py
holds them equal, graphs and error places alike.

>>> from cgraph_cli.core.errors import Source
>>> parse_source(Source("p = x + y; g = p * z")).output_label
'g'
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from itertools import islice
from typing import Any

from ..core.errors import CgraphError, Source
from ..core.ir import Graph, gc_paused
from . import tables
from .lexer import CODES, POSSESSIVE, scan
from .messages import Token, syntax_error
from .plans import BOUND, REFRESH, STATE, bound, inlined, keeps_state, state, whole
from .reader import Reader

CALL, PASS = tables.CALL, tables.PASS
# In the string of token kinds: a run of statements of one shape, one after another (the
# repetition possessive: the engine keeps no place to come back to for each statement).
_RUN = re.compile("([^\n;]+)(?:[\n;]\\1(?![^\n;]))*" + POSSESSIVE)
_FOR = CODES["FOR"]  # a loop's header starts with it
_DEF = CODES["DEF"]  # a function's header starts with it
_SHIFT = -1  # in a recorded plan: shift the next token (else: reduce by that rule)
_MAX_PLANS = 4096  # shapes remembered at most; then forgotten all at once
_MAX_COMPILED = 400  # actions at most in a plan turned into code (longer ones are replayed)
_WINDOW = 4096  # tokens read at a time, beyond those a statement needs


class _Splice(list):
    """Children of a rule that Lark's tree builder inlines into its parent."""


def _splice(children: list) -> _Splice:
    return children if children.__class__ is _Splice else _Splice(children)


def _flatten(children: list) -> _Splice:
    # A left-recursive repetition (arg*) arrives as (earlier items, new items...): extend the
    # earlier list in place, or a long argument list would be copied once per item.
    if children and children[0].__class__ is _Splice:
        out, rest = children[0], children[1:]
    else:
        out, rest = _Splice(), children
    for c in rest:
        if c.__class__ is _Splice:
            out.extend(c)
        elif not (c.__class__ is tuple and c[0].__class__ is str and c[0][0] == "_"):
            # (a separator token, "_NL" or "_SEMI", is dropped as Lark's tree builder does)
            out.append(c)
    return out


class _Window:
    """The tokens being read: a list of them from ``base`` on, moved on as statements need."""

    __slots__ = ("tokens", "n", "list", "base")

    def __init__(self, tokens: Iterator[Token], n: int) -> None:
        self.tokens, self.n = tokens, n  # every token's iterator, and how many there are
        self.list: list[Token] = []
        self.base = 0  # list[k - base] is token k

    def cover(self, i: int, j: int) -> tuple[list[Token], int]:
        """The list, holding tokens ``i - 1`` (the separator before a statement, if any) to
        ``j`` (the one after a statement, if any), and its base."""
        last = j if j < self.n else self.n - 1
        window, base = self.list, self.base
        read = base + len(window)  # the tokens read so far
        if last >= read:  # not read yet: move the window on
            start = i - 1 if i else 0
            if start > read:  # separators only, since the window
                next(islice(self.tokens, start - read, start - read), None)
                window, read = [], start
            more = list(islice(self.tokens, last + 1 - read + _WINDOW))
            self.list = window = window[start - base :] + more
            self.base = base = start
        return window, base


class Driver:
    """Lark's LALR algorithm over plain tables, calling ``reader``'s methods."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.states = tables.STATES
        self.rules: list[tuple[Any, ...]] = []  # (size, mode, callback or None, origin, flatten)
        for mode, name, size, origin, flatten in tables.RULES:
            callback = getattr(reader, str(name)) if mode == CALL else None
            self.rules.append((size, mode, callback, origin, flatten))
        self.units: dict[tuple[int, int, str], int] = {}  # unit-reduction chains, followed
        self.plans: dict[str, Any] = {}  # statement shape -> its actions, or their code
        self._blocks: Any = None  # a program with blocks: its tokens and statements
        self.bound: tuple = ()  # what the plans' code binds (plans.BOUND), for this parse

    def run(self, tokens: Iterator[Token], codes: str, error, source: Source) -> Graph:
        """The program's graph, from its tokens in order (as the scanner gives them);
        ``codes``: their kinds, a character each; ``error``: the scanner's, raised where the
        parser reaches the character that stopped it.

        Statements are read in order from a window of the tokens, refilled a few thousand at a
        time (with the separator before the statement kept, for error messages): the tokens of
        the statements read are let go. A run of statements of one shape, one after another
        (found in the string of kinds), goes to its plan's code in one call, as many
        statements at a time as the window holds."""
        if _FOR in codes or _DEF in codes:
            with gc_paused():
                return self._run_blocks(list(tokens), codes, error, source)
        window = _Window(tokens, len(codes))
        plans = self.plans
        names = self.bound = bound(self.reader)
        got, base, n = window.list, 0, len(codes)  # got[k - base] is token k
        with gc_paused():
            for m in _RUN.finditer(codes):
                i, j = m.span()
                key = m.group(1)
                if j - i != len(key) or (j == n and error is not None):  # a run, or the end
                    self._run(window, i, j, key, error, source)
                    got, base = window.list, window.base
                    continue
                if j >= base + len(got):  # a statement alone (what _run does, inlined)
                    got, base = window.cover(i, j)
                plan = plans.get(key)
                if plan is None or plan.__class__ is tuple:
                    self._one(got, i - base, j - base, key, source)
                else:
                    plan(got, i - base, 1, names)
            if error is not None:  # every statement ended before the bad character
                raise error
            return self.reader.start([])

    def _run(self, window: _Window, i: int, j: int, key: str, error, source: Source) -> None:
        """Statements of shape ``key`` from token ``i`` to ``j``, one after another, as many
        at a time as the window holds; the last one cut by ``error`` if it ends the text."""
        size = len(key)
        stride = size + 1  # a statement and its separator
        cut = j == window.n and error is not None
        if cut:  # the bad character ends the last statement: that one is read alone
            j -= stride
        while i < j:
            plan = self.plans.get(key)
            if plan is None or plan.__class__ is tuple:  # a shape seen at most once
                got, base = window.cover(i, i + size)
                self._one(got, i - base, i + size - base, key, source)
                i += stride
                continue
            count = min((j - i + 1) // stride, _WINDOW // stride or 1)
            got, base = window.cover(i, i + count * stride - 1)
            plan(got, i - base, count, self.bound)
            i += count * stride
        if cut:
            got, base = window.cover(i, window.n)
            self._statement(got, i - base, window.n - base, source, None, error)

    def _one(self, tokens, i: int, j: int, key: str, source: Source) -> None:
        """Run statement ``i`` to ``j`` (of shape ``key``), by its plan once it has one."""
        plan = self.plans.get(key)
        if plan is None:
            self._statement(tokens, i, j, source, key, None)
        elif plan.__class__ is tuple:  # seen once: seen twice now, so compile it
            plan = self.plans[key] = self._compile(plan)
            plan(tokens, i, 1, self.bound)
        else:
            plan(tokens, i, 1, self.bound)

    def _run_blocks(self, tokens, codes: str, error, source: Source) -> Graph:
        """A program with loops or functions: its statements, nested by indentation
        (:func:`blocks`), run in order (:meth:`_run_range`)."""
        from .blocks import blocks  # (here: most programs have no blocks)

        stmts, ends, errors = blocks(tokens, codes, source)
        self.bound = bound(self.reader)
        self._blocks = (tokens, codes, error, source, stmts, ends, errors)
        self.reader.run_body = self._run_range
        try:
            self._run_range(0, len(stmts))
        finally:
            self._blocks = None
            self.reader.run_body = None
        if error is not None:
            raise error
        return self.reader.start([])

    def _run_range(self, k: int, stop: int) -> None:
        """Run statements ``k`` to ``stop``: a loop's body as many times as the reader says
        (its steps, or once for the static graph); a function's body not at all where it is
        defined (the reader runs it, through this method, where it is called). An explicit
        stack of loops, no recursion on their nesting."""
        tokens, codes, error, source, stmts, ends, errors = self._blocks
        reader = self.reader
        n = len(tokens)
        everything = stop == len(stmts)
        loops: list[list[int]] = []  # [header's index, steps, step now]
        while True:
            if loops and k == ends[loops[-1][0]]:  # the end of a body: the next step, or out
                loop = loops[-1]
                loop[2] += 1
                if loop[2] < loop[1]:
                    reader.begin_step(loop[2])
                    k = loop[0] + 1
                    continue
                loops.pop()
                reader.end_loop()
                continue
            if k in errors and (k < stop or everything):
                raise errors[k]
            if k == stop:
                break
            i, j = stmts[k]
            if j == n and error is not None:
                self._statement(tokens, i, j, source, None, error)
            else:
                self._one(tokens, i, j, codes[i:j], source)
            if ends[k] > k and codes[i] == _DEF:  # a function's header: its body, kept
                last = stmts[ends[k] - 1][1] - 1 if ends[k] > k + 1 else j - 1
                reader.define_body(k + 1, ends[k], tokens[last][3])
                k = ends[k]
                continue
            if ends[k] > k:  # a loop's header
                steps = reader.enter_loop()
                if steps == 0:
                    reader.end_loop()
                    k = ends[k]
                    continue
                loops.append([k, steps, 0])
                reader.begin_step(0)
            k += 1

    def _statement(self, tokens, i, j, source, key, cut) -> None:
        """Parse tokens ``i`` to ``j`` as one statement, recording its actions as the plan
        of its shape (``key``); ``cut``: the scanner's error, raised in place of the end."""
        states, rules, units = self.states, self.rules, self.units
        stack = [tables.STMT_START]
        values: list = []
        push_state, push_value = stack.append, values.append
        actions: list[int] = []
        record = actions.append
        k = i
        while True:
            if k < j:
                tok = tokens[k]
                kind = tok[0]
            elif cut is not None:
                raise cut
            else:  # the separator after the statement (or the program's end) ends it
                tok = tokens[j] if j < len(tokens) else _eof(source)
                kind = "$END"
            top = stack[-1]
            act = states[top].get(kind)
            if act is None:
                raise self._error(tok, states[top], tokens, k, source)
            if act >= 0:
                push_state(act)
                push_value(tok)
                record(_SHIFT)
                k += 1
                continue
            size, mode, callback, origin, flatten = rules[-1 - act]
            if mode == PASS:  # a unit reduction: follow the whole chain at once
                below = stack[-2]
                found = units.get((below, top, kind))
                if found is None:
                    found = units[(below, top, kind)] = self._unit_chain(below, top, kind)
                stack[-1] = found
                continue
            args = values[-size:] if size else []
            del values[len(values) - size :], stack[len(stack) - size :]
            if flatten:
                args = _flatten(args)
            push_value(callback(args) if mode == CALL else _splice(args))
            record(-1 - act)
            goto = states[stack[-1]][origin]
            if goto == tables.STMT_END:  # the statement is reduced: done
                break
            push_state(goto)
        if key is not None:
            if len(self.plans) >= _MAX_PLANS:
                self.plans.clear()
            self.plans[key] = tuple(actions)

    def _compile(self, actions: tuple[int, ...]):
        """A function ``(tokens, i, count, bound)`` doing what :meth:`_replay` does with
        ``actions``, for ``count`` statements of the shape one after another from token ``i``,
        as straight-line code in a loop: the value stack is followed here, once, instead of at
        each run. ``bound``: the parse's :func:`~cgraph_cli.parse.plans.bound`. The code holds
        only names made here and numbers from the record."""
        stride = actions.count(_SHIFT) + 1  # a statement's tokens and its separator
        if len(actions) > _MAX_COMPILED:
            return lambda tokens, i, count, _: self._replay_all(actions, tokens, i, count)
        names: dict[str, Any] = {"_flatten": _flatten, "_splice": _splice, "R": self.reader}
        names["state"] = state
        lines = [
            "def plan(tokens, i, count, bound):",
            f"    {BOUND}, = bound",
            f"    {STATE}",
            "    while True:",  # (no range to make: most plans run for one statement)
            *("        " + line for line in self._code(actions, names)),
            "        count -= 1",
            "        if not count: return",
            f"        i += {stride}",
        ]
        exec(compile("\n".join(lines), "<cgraph statement plan>", "exec"), names)  # noqa: S102
        return names["plan"]

    def _code(self, actions: tuple[int, ...], names: dict[str, Any]) -> list[str]:
        """The lines of a plan's code (:meth:`_compile`), from reading the statement's tokens
        to the last reduction; the callbacks it calls put in ``names``."""
        body: list[str] = []
        stack: list[str] = []  # a variable, or "@k": an expression's n{k}, s{k} and e{k}
        shifted = 0
        for a in actions:
            if a == _SHIFT:
                stack.append(f"t{shifted}")
                shifted += 1
                continue
            size, mode, callback, _, flatten = self.rules[a]
            children = stack[len(stack) - size :]
            args = "[" + ", ".join(map(whole, children)) + "]"
            del stack[len(stack) - size :]
            if flatten:
                args = f"_flatten({args})"
            if mode == CALL:
                names[f"c{a}"] = callback
                call = f"c{a}({args})"
                inline = inlined(callback, a, children, len(body), names)
                if inline is not None:
                    stack.append(inline[0])
                    body += inline[1]
                    continue
            else:
                call = f"_splice({args})"
            stack.append(f"r{len(body)}")
            refresh = mode == CALL and not keeps_state(callback)
            body.append(f"r{len(body)} = {call}" + f"; {REFRESH}" * refresh)
        tokens = ", ".join(f"t{k}" for k in range(shifted))
        return [f"{tokens}, = tokens[i : i + {shifted}]"] * (shifted > 0) + body

    def _replay_all(self, actions, tokens, i: int, count: int) -> None:
        stride = actions.count(_SHIFT) + 1
        for k in range(i, i + count * stride, stride):
            self._replay(actions, tokens, k)

    def _replay(self, actions, tokens, i) -> None:
        """Do what a statement of the same shape did: shift each token, and call each
        reduction's callback on the values."""
        rules = self.rules
        values: list = []
        push_value = values.append
        k = i
        for a in actions:
            if a == _SHIFT:
                push_value(tokens[k])
                k += 1
                continue
            size, mode, callback, origin, flatten = rules[a]
            args = values[-size:] if size else []
            del values[len(values) - size :]
            if flatten:
                args = _flatten(args)
            push_value(callback(args) if mode == CALL else _splice(args))

    def _unit_chain(self, below: int, top: int, kind: str) -> int:
        """The state a chain of unit reductions ends in, from ``top`` above ``below``."""
        states, rules = self.states, self.rules
        while True:
            act = states[top].get(kind)
            if act is None or act >= 0 or rules[-1 - act][1] != PASS:
                return top
            top = states[below][rules[-1 - act][3]]

    @staticmethod
    def _error(tok, actions: dict, tokens: list, k: int, source: Source):
        seen = tokens[:k]
        opened: list = []
        for t in seen:
            if t[0] in ("LPAR", "LSQB"):
                opened.append(t)
            elif t[0] in ("RPAR", "RSQB") and opened:
                opened.pop()
        expected = {name for name in actions if name.isupper()}
        if "$END" in actions:  # the statement may end here: by a newline or ';' too
            expected |= {"$END", "_NL", "_SEMI"}
        return syntax_error(tok, expected, source, seen, opened)


def _eof(source: Source) -> Token:
    end = len(source.text)
    return ("$END", "", end, end)


_lock = threading.Lock()
_parser: tuple[Driver, Reader] | None = None


def parse_source(source: Source, tracer=None) -> Graph:
    """The graph of ``source``'s program, or a :class:`~cgraph_cli.core.errors.ParseError` with
    its place: the static graph, or with a ``tracer`` the graph that runs (see
    :mod:`cgraph_cli.run.control`)."""
    global _parser
    with _lock:
        if _parser is None:
            reader = Reader()
            _parser = Driver(reader), reader
        driver, reader = _parser
        reader.begin(source, tracer)
        try:
            with gc_paused():  # the collector would rescan every token list as it grows
                tokens, codes, error = scan(source)
            return driver.run(tokens, codes, error, source)
        except CgraphError as e:
            raise e.located(source) from None
        finally:
            del reader.b  # drop the half-built graph
            driver.bound = ()
