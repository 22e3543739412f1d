"""The lines of a JavaScript program's nodes (:mod:`cgraph_cli.run.compile_js`): each operation
node of a graph computed into ``v[id]`` by its op's ``js`` spelling, tensors through the
runtime's helpers, a conditional's branch taken alone, the lines of a node under a guard in an
``if`` of it."""

from __future__ import annotations

import json
import re

from ..core.errors import UsageError
from ..core.ir import IF, Graph
from ..core.ops import CONST, INPUT
from ..passes.guards import ALWAYS, guard_text
from .compile_ifs import Atoms

_CALL = re.compile(r"\b(_\w+)\(")


def _json(value) -> str:
    """``value`` as a JS literal; ``<`` escaped, so that a page's ``<script>`` holds it."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False).replace("<", "\\u003c")


def _number(x: float) -> str:
    return f"({x!r})" if x < 0 or repr(x).startswith("-") else repr(x)


def _items(items, shape) -> list:
    """An index's items resolved for ``shape``: a whole number from 0, or a slice as
    ``[start, step, count]``."""
    out: list = []
    for item, size in zip(items, shape):
        if isinstance(item, slice):
            r = range(*item.indices(size))
            out.append([r.start, r.step, len(r)])
        else:
            out.append(int(item) % size)
    return out


class Writer:
    """The lines computing each operation node of a builder's graph into ``v[id]``."""

    def __init__(self, graph: Graph, shapes: list) -> None:
        self.graph, self.shapes = graph, shapes
        self.helpers: set[str] = set()
        self.constants: list[str] = []  # tensors written in the program, set once

    def atom(self, j: int) -> str:
        if self.graph.ops[j] is CONST:
            value = self.graph.consts[j]
            if isinstance(value, float):
                return _number(value)
            if f"_C{j}" not in "".join(self.constants):
                data = _json([float(x) for x in value.ravel()])
                self.constants.append(
                    f"const _C{j} = _T({_json(list(value.shape))}, Float64Array.from({data}));"
                )
            return f"_C{j}"
        return f"v[{j}]"

    def expression(self, j: int) -> str:
        op, g = self.graph.ops[j], self.graph
        args = [self.atom(a) for a in g.args[j]]
        if op.js is None:
            raise UsageError(
                f"--target js does not take {op.symbol or op.name} yet",
                hints=["compile it with --target numpy or onnx"],
            )
        if g.params.get(j) == IF:  # a conditional: the branch taken alone computed
            return f"({args[0]} !== 0 ? {args[1]} : {args[2]})"
        if op.elementwise:
            if not self.shapes[j]:
                return op.js.format(*args)
            names = "abc"[: op.arity]
            self.helpers.add(f"_map{op.arity}")
            body = op.js.format(*names)
            return f"_map{op.arity}(({', '.join(names)}) => {body}, {', '.join(args)})"
        self.helpers.update(_CALL.findall(op.js))
        return op.js.format(*args, *self.params(j))

    def params(self, j: int) -> list[str]:
        op, g = self.graph.ops[j], self.graph
        given = list(g.params.get(j, ()))
        given += [None] * (len(op.params) - len(given))
        shape = list(self.shapes[j])
        out = []
        for name, value in zip(op.params, given):
            if name == "shape":
                value = shape  # resolved: -1 in a reshape, broadcasting's sizes
            elif name == "indices":
                of = shape if op.name == "place" else self.shapes[g.args[j][0]]
                value = _items(value, of)
            elif isinstance(value, tuple):
                value = list(value)
            out.append(_json(value))
        return out

    def lines(self, nodes, checks: dict[int, str], keep_constants=(), guards=None) -> list[str]:
        """One line per operation node of ``nodes``, then ``checks[node]`` where given; one
        per constant in ``keep_constants`` too (values the results list). ``guards`` (a
        program with if/else): a node's lines in an ``if`` of its guard, where it has one."""
        out: list[str] = []
        current = None  # the test of the open block
        for j in nodes:
            op = self.graph.ops[j]
            lines = []
            if op is CONST and j in keep_constants:
                lines.append(f"  v[{j}] = {self.atom(j)};")
            if op is not INPUT and op is not CONST:
                lines.append(f"  v[{j}] = {self.expression(j)};")
                if j in checks:
                    lines.append(checks[j])
            if not lines:
                continue
            guard = guards[j] if guards is not None and op.arity else ALWAYS
            test = None if guard == ALWAYS or not guard else self.test(guard)
            if test != current and current is not None:
                out.append("  }")
            if test is not None and test != current:
                out.append(f"  if ({test}) {{")
            current = test
            out += ["  " + line for line in lines] if test is not None else lines
        if current is not None:
            out.append("  }")
        return out

    def test(self, guard) -> str:
        """``guard`` as a JavaScript test (a condition holds where it is not 0; NaN holds,
        as in cgraph's interpreter)."""
        return guard_text(
            self.graph, guard, Atoms(self), "{0} !== 0", "{0} === 0",
            and_=" && ", or_=" || ", never="false",
        )  # fmt: skip
