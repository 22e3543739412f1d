"""The graph IR: nodes in topological order, stored as flat columns.

Node ``i`` has op ``graph.ops[i]``, arguments ``graph.args[i]`` (ids smaller than ``i``), a label
``graph.labels[i]`` when a statement named it, and a source span. Inputs and constants are nodes
too; the builder makes one input node per variable name, so ``x * x`` reads one node twice and
its gradients add up. Columns instead of node objects keep a graph under ~130 bytes per node;
``graph[i]`` gives a :class:`Node` view for readers.

>>> from cgraph_cli import parse
>>> g = parse("g = (x + y) * z")
>>> [str(n) for n in g]
['%0 = input x', '%1 = input y', '%2 = add %0 %1', '%3 = input z', '%4 = mul %2 %3 (g)']
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from .errors import CgraphError, Source, Span
from .ops import CONST, INPUT, OPS, OpSpec


class Node(NamedTuple):
    """A read-only view of one node of a :class:`Graph`."""

    id: int
    op: OpSpec
    args: tuple[int, ...]
    label: str | None
    span: Span
    value: object  # constants only: a float or a NumPy array
    params: tuple = ()  # the numbers written in a call after its arguments: sum(x, 0) -> (0,)

    def __str__(self) -> str:
        if self.op is INPUT:
            body = f"input {self.label}"
        elif self.op is CONST:
            value = self.value.tolist() if hasattr(self.value, "tolist") else self.value
            body = f"const {value!r}"
        else:
            body = " ".join([self.op.name] + [f"%{a}" for a in self.args])
            body += "".join(f" {k}={_show_param(v)}" for k, v in zip(self.op.params, self.params))
        named = f" ({self.label})" if self.label and self.op is not INPUT else ""
        return f"%{self.id} = {body}{named}"


def _show_param(value) -> str:
    if isinstance(value, tuple) and any(isinstance(v, slice) for v in value):
        return "[" + ", ".join(show_subscript(v) for v in value) + "]"
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def show_subscript(item) -> str:
    """An index as written: ``1``, ``:``, ``1:3``, ``::2``."""
    if not isinstance(item, slice):
        return str(item)
    parts = ["" if p is None else str(p) for p in (item.start, item.stop, item.step)]
    return ":".join(parts[:2] if item.step is None else parts)


_KINDS = ("=", "input", "bare")


class Graph:
    """A program as a flat graph. Built by :func:`cgraph_cli.parse`; never mutated after."""

    __slots__ = (
        "ops",
        "args",
        "labels",
        "starts",
        "ends",
        "consts",
        "params",
        "inputs",
        "defaults",
        "names",
        "stmt_kinds",
        "stmt_names",
        "stmt_nodes",
        "output",
        "output_label",
        "source",
        "_program",
    )

    def __init__(self, source: Source) -> None:
        self.ops: list[OpSpec] = []
        self.args: list[tuple[int, ...]] = []
        self.labels: list[str | None] = []
        self.starts = array("l")
        self.ends = array("l")
        self.consts: dict[int, object] = {}  # const node id -> value (float or NumPy array)
        self.params: dict[int, tuple] = {}  # node id -> its op's params (sum(x, 0): (0,))
        self.inputs: dict[str, int] = {}  # input name -> node id, in order of first use
        self.defaults: dict[str, object] = {}  # input name -> default declared in the source
        self.names: dict[str, int] = {}  # every name -> node it finally refers to
        # The statements in program order, as columns (see `statements`).
        self.stmt_kinds = bytearray()
        self.stmt_names: list[str] = []
        self.stmt_nodes = array("q")  # node, then the number of nodes so far, per statement
        self.output = -1
        self.output_label = ""
        self.source = source
        self._program = None  # compiled form, cached by cgraph_cli.forward

    def __len__(self) -> int:
        return len(self.ops)

    def __getitem__(self, i: int) -> Node:
        if i < 0:
            i += len(self.ops)
        return Node(
            i,
            self.ops[i],
            self.args[i],
            self.labels[i],
            Span(self.starts[i], self.ends[i]),
            self.consts.get(i),
            self.params.get(i, ()),
        )

    def __iter__(self) -> Iterator[Node]:
        return (self[i] for i in range(len(self.ops)))

    def statements(self) -> Iterator[tuple[str, str, int, int]]:
        """``(kind, name, node, nodes so far)`` per statement, in program order. ``kind`` is
        ``"="``, ``"input"`` or ``"bare"`` (whose name is the expression's text). A statement
        that only aliases a node (``b = a``) keeps its place here, though it adds no node."""
        nodes = self.stmt_nodes
        for k, (kind, name) in enumerate(zip(self.stmt_kinds, self.stmt_names)):
            yield _KINDS[kind], name, nodes[2 * k], nodes[2 * k + 1]

    def span(self, i: int) -> Span:
        return Span(self.starts[i], self.ends[i])

    def display_name(self, i: int) -> str:
        """The label a user knows node ``i`` by: its statement name or its source text."""
        if i == self.output:
            return self.output_label
        return self.labels[i] or self.text(i)

    def text(self, i: int) -> str:
        """The source text of node ``i``, whitespace collapsed."""
        return " ".join(self.source.text[self.starts[i] : self.ends[i]].split())

    def named_nodes(self) -> dict[str, int]:
        """Inputs, then every statement name with the node it finally refers to."""
        out = dict(self.inputs)
        out.update(self.names)
        if self.output_label not in out:
            out[self.output_label] = self.output
        return out

    def error(self, cls: type[CgraphError], message: str, node: int, **kw) -> CgraphError:
        """An error of class ``cls`` placed at node ``node``'s span."""
        return cls(message, self.span(node), self.source, **kw)


class Builder:
    """Appends nodes to a :class:`Graph`; the parser calls it statement by statement."""

    __slots__ = ("graph", "scope", "_append_op", "_append_args", "_append_label")

    def __init__(self, source: Source) -> None:
        self.graph = Graph(source)
        self.scope: dict[str, int] = {}  # name -> node it refers to now
        g = self.graph
        self._append_op, self._append_args, self._append_label = (
            g.ops.append,
            g.args.append,
            g.labels.append,
        )

    def add(self, op: OpSpec, args: tuple[int, ...], start: int, end: int) -> int:
        node = len(self.graph.ops)
        self._append_op(op)
        self._append_args(args)
        self._append_label(None)
        self.graph.starts.append(start)
        self.graph.ends.append(end)
        return node

    def const(self, value: float, start: int, end: int) -> int:
        node = self.add(CONST, (), start, end)
        self.graph.consts[node] = value
        return node

    def pop_const(self, node: int):
        """Remove the constant just added as ``node`` (a number that turned out to be an op's
        parameter, as the 0 in sum(x, 0)); its value, or None if ``node`` is not such."""
        g = self.graph
        if node != len(g.ops) - 1 or g.ops[node] is not CONST:
            return None
        for column in (g.ops, g.args, g.labels, g.starts, g.ends):
            column.pop()
        return g.consts.pop(node)

    def read(self, name: str, start: int, end: int) -> int:
        """The node ``name`` refers to now; a name never assigned before becomes an input."""
        node = self.scope.get(name)
        if node is None:
            node = self.add(INPUT, (), start, end)
            self.graph.labels[node] = name
            self.graph.inputs[name] = node
            self.scope[name] = node
        return node

    def assign(self, name: str, node: int) -> None:
        if self.graph.labels[node] is None:
            self.graph.labels[node] = name
        self.scope[name] = node
        self.graph.names[name] = node

    def statement(self, kind: str, name: str, node: int) -> None:
        g = self.graph
        g.stmt_kinds.append(_KINDS.index(kind))
        g.stmt_names.append(name)
        g.stmt_nodes.extend((node, len(g.ops)))

    def finish(self, output: int, output_label: str) -> Graph:
        self.graph.output = output
        self.graph.output_label = output_label
        return self.graph


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while building: it rescans every new container otherwise."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def validate(graph: Graph) -> Graph:
    """Check the IR's invariants; raise ``AssertionError`` naming the node that breaks one.

    Order (every argument id is smaller than its node's), arity, one node per input name,
    constants exactly on const nodes, and an output in range. Returns the graph.

    >>> from cgraph_cli import parse
    >>> validate(parse("y = x * x")).output
    1
    """
    n = len(graph.ops)
    columns = (graph.args, graph.labels, graph.starts, graph.ends)
    assert all(len(c) == n for c in columns), "IR columns differ in length"
    for i in range(n):
        op, args = graph.ops[i], graph.args[i]
        assert OPS.get(op.name) is op, f"node %{i}: unknown op {op!r}"
        assert len(args) == op.arity, f"node %{i}: {op.name} takes {op.arity} args, has {len(args)}"
        assert all(0 <= a < i for a in args), f"node %{i}: argument out of topological order"
        assert (op is CONST) == (i in graph.consts), f"node %{i}: constant value mismatch"
        assert graph.starts[i] <= graph.ends[i], f"node %{i}: reversed span"
        given = len(graph.params.get(i, ()))
        assert op.required <= given <= len(op.params), f"node %{i}: {op.name} has {given} params"
        if op is INPUT:
            assert graph.inputs.get(graph.labels[i]) == i, f"node %{i}: input defined twice"
    assert len(graph.inputs) == sum(op is INPUT for op in graph.ops), "input table mismatch"
    assert all(0 <= v < n for v in graph.names.values()), "a name refers to no node"
    assert 0 <= graph.output < n, "output out of range"
    return graph
