"""The LALR(1) driver: tokens -> graph, calling the reader's callbacks as it reduces (no parse
tree, no recursion), over the tables Lark computed from the grammar.

Two things keep the loop short, both derived from the tables as the program is read:

- a chain of unit reductions (``?sum: product``, which only hand their child up) is followed
  once per (state below, state, lookahead) and remembered, instead of step by step;
- a statement is parsed once per *shape* (the parser state it starts in and its tokens'
  kinds): the shifts and reductions it took are recorded, and the next statement of the same
  shape replays them, calling the same callbacks on its own tokens, with no table look-up. A
  long program repeats a few shapes (``v = v * a + b``), so most statements are replayed.

The result is the one Lark's own parser builds: tests/test_scanner.py holds them equal.

>>> from cgraph_cli.errors import Source
>>> parse_source(Source("p = x + y; g = p * z")).output_label
'g'
"""

from __future__ import annotations

import threading

from ..errors import CgraphError, Source
from ..ir import Graph, gc_paused
from . import tables
from .lexer import Tok, scan
from .messages import syntax_error
from .reader import Reader

CALL, PASS = tables.CALL, tables.PASS
_SEPARATORS = {"_NL", "_SEMI"}
_SHIFT = -1  # in a recorded plan: shift the next token
_MAX_PLANS = 4096  # shapes remembered at most; then forgotten all at once


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
        elif not (c.__class__ is Tok and c[0][0] == "_"):
            out.append(c)
    return out


class Driver:
    """Lark's LALR algorithm over plain tables, calling ``reader``'s methods."""

    def __init__(self, reader: Reader) -> None:
        self.states = tables.STATES
        self.rules = []
        for mode, name, size, origin, flatten in tables.RULES:
            callback = getattr(reader, name) if mode == CALL else None
            self.rules.append((size, mode, callback, origin, flatten))
        self.units: dict[tuple[int, int, str], int] = {}  # unit-reduction chains, followed
        self.plans: dict[tuple, tuple] = {}  # statement shape -> (actions, states pushed)

    def run(self, tokens: list[Tok], kinds: list[str], error, source: Source):
        states = self.states
        stack = [tables.START]
        values: list = []
        n = len(tokens)
        plans = self.plans
        i = 0
        with gc_paused():
            while i < n:
                if kinds[i] not in _SEPARATORS:
                    j = i + 1
                    while j < n and kinds[j] not in _SEPARATORS:
                        j += 1
                    # What the first token's lookahead reduces (the statements before it)
                    # depends on them: done first, so the plan starts at its shift.
                    self._steps(tokens, i, i + 1, stack, values, source, None, reduce_only=True)
                    key = (stack[-1], *kinds[i:j])
                    plan = plans.get(key)
                    if plan is not None:
                        self._replay(plan, tokens, i, stack, values)
                    else:
                        self._steps(tokens, i, j, stack, values, source, key)
                    i = j
                    continue
                self._steps(tokens, i, i + 1, stack, values, source, None)
                i += 1
            if error is not None:  # the parser took every token before the bad character
                raise error
            return self._finish(tokens, stack, values, source)

    def _steps(self, tokens, i, j, stack, values, source, key, reduce_only=False) -> None:
        """Shift tokens ``i`` to ``j`` with the reductions they trigger; with a ``key``,
        record them as the plan of that statement shape. ``reduce_only``: only the
        reductions token ``i`` triggers, not its shift."""
        states, rules, units = self.states, self.rules, self.units
        push_state, push_value = stack.append, values.append
        base = len(stack)
        actions = [] if key is not None else None
        for k in range(i, j):
            tok = tokens[k]
            kind = tok[0]
            while True:
                top = stack[-1]
                act = states[top].get(kind)
                if act is None:
                    raise self._error(tok, states[top], tokens, k, source)
                if act >= 0:
                    if reduce_only:
                        return
                    push_state(act)
                    push_value(tok)
                    if actions is not None:
                        actions.append(_SHIFT)
                    break
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
                push_state(states[stack[-1]][origin])
                if actions is not None:
                    if len(stack) <= base:  # reduced into what came before: not a shape
                        actions = None
                    else:
                        actions.append(-1 - act)  # the rule's number
        if actions is not None:
            if len(self.plans) >= _MAX_PLANS:
                self.plans.clear()
            self.plans[key] = (tuple(actions), tuple(stack[base - 1 :]))

    def _replay(self, plan, tokens, i, stack, values) -> None:
        """Do what a statement of the same shape did: shift each token, call each reduction's
        callback on the values, and end in the same states."""
        actions, pushed = plan
        rules = self.rules
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
        # The plan started in stack[-1] (part of its key) and ends in these states.
        stack.extend(pushed[1:])

    def _unit_chain(self, below: int, top: int, kind: str) -> int:
        """The state a chain of unit reductions ends in, from ``top`` above ``below``."""
        states, rules = self.states, self.rules
        while True:
            act = states[top].get(kind)
            if act is None or act >= 0 or rules[-1 - act][1] != PASS:
                return top
            top = states[below][rules[-1 - act][3]]

    def _finish(self, tokens, stack, values, source):
        """The reductions at the end of the program, to the start symbol's value."""
        states, rules = self.states, self.rules
        end = len(source.text)
        eof = tuple.__new__(Tok, ("$END", "", end, end))
        while True:
            actions = states[stack[-1]]
            act = actions.get("$END")
            if act is None or act >= 0:
                raise self._error(eof, actions, tokens, len(tokens), source)
            size, mode, callback, origin, flatten = rules[-1 - act]
            args = values[-size:] if size else []
            del values[len(values) - size :], stack[len(stack) - size :]
            if flatten:
                args = _flatten(args)
            value = args[0] if mode == PASS else callback(args) if mode == CALL else _splice(args)
            goto = states[stack[-1]][origin]
            if goto == tables.END:
                return value
            values.append(value)
            stack.append(goto)

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
        return syntax_error(tok, expected, source, seen, opened)


_lock = threading.Lock()
_parser: tuple[Driver, Reader] | None = None


def parse_source(source: Source) -> Graph:
    """The graph of ``source``'s program, or a :class:`~cgraph_cli.errors.ParseError` with
    its place."""
    global _parser
    with _lock:
        if _parser is None:
            reader = Reader()
            _parser = Driver(reader), reader
        driver, reader = _parser
        reader.begin(source)
        try:
            tokens, kinds, error = scan(source)
            return driver.run(tokens, kinds, error, source)
        except CgraphError as e:
            raise e.located(source) from None
        finally:
            reader.b = None  # drop the half-built graph
