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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar

from .arrays import Value, frozen
from .errors import CgraphError, Source, Span
from .ops import CONST, INPUT, OPS, OpSpec
from .startup import PAUSED_FOR_COMMAND
from .walks import show_subscript


class Node(NamedTuple):
    """A read-only view of one node of a :class:`Graph`.

    >>> from cgraph_cli import parse
    >>> n = parse("y = x * 2")[2]
    >>> print(n)
    %2 = mul %0 %1 (y)
    >>> n.op.name, n.args, n.label, n.span
    ('mul', (0, 1), 'y', Span(start=4, end=9))
    """

    id: int
    op: OpSpec
    args: tuple[int, ...]
    label: str | None
    span: Span
    value: Value | None  # constants only: a float or a NumPy array
    params: tuple = ()  # the numbers written in a call after its arguments: sum(x, 0) -> (0,)

    def __str__(self) -> str:
        if self.op is INPUT:
            body = f"input {self.label}"
        elif self.op is CONST:
            tolist = getattr(self.value, "tolist", None)  # an array as nested lists
            value = self.value if tolist is None else tolist()
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


_KINDS = ("=", "input", "bare")
ASSIGNMENT = _KINDS.index("=")  # stmt_kinds of `name = ...` (the reader writes it directly)
REPR_NODES, REPR_WIDTH = 200, 60  # a Graph's repr: the largest it prints, and how much of it


def _cut(text: str, width: int = REPR_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


E = TypeVar("E", bound=CgraphError)


#: The params of a compiled conditional's select (``a if c else b`` as ``where`` whose branch
#: not taken is never computed): :mod:`cgraph_cli.passes.guards`.
IF = ("if",)
#: The params of a contribution to an adjoint that is 0 where the adjoint is (``where(g, c, 0)``
#: with ``c`` the adjoint ``g`` times a local partial): the interpreter passes nothing back
#: through a node whose gradient is 0, whatever its partial there (``sqrt`` at 0). A compiled
#: module's fast lines take ``c`` as it is, its checked copy masks it (:mod:`.compile_emit`).
MASK = ("mask",)


class Graph:
    """A program as a flat graph. Built by :func:`cgraph_cli.parse`; never mutated after.
    Node ``i``'s op is ``ops[i]``, its arguments ``args[i]``; ``inputs`` maps each input's name
    to its node, ``output`` is the last statement's node; ``graph[i]`` is a :class:`Node`.
    ``groups``: what each call of a function (and each step of a loop, as it ran) made, for
    the views and messages (:mod:`cgraph_cli.core.groups`); ``functions``: the program's
    functions, by name. The graph itself stays flat: a call is its body, inlined.

    >>> from cgraph_cli import parse
    >>> g = parse("y = x * 2")
    >>> g, len(g), g.inputs, g.output
    (<Graph y = x * 2: 1 input, 3 nodes>, 3, {'x': 0}, 2)
    """

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
        "memo",
        "control",
        "groups",
        "functions",
    )

    def __init__(self, source: Source) -> None:
        self.ops: list[OpSpec] = []
        self.args: list[tuple[int, ...]] = []
        self.labels: list[str | None] = []
        self.starts = array("l")
        self.ends = array("l")
        self.consts: dict[int, Value] = {}  # const node id -> value (float or NumPy array)
        self.params: dict[int, tuple] = {}  # node id -> its op's params (sum(x, 0): (0,))
        self.inputs: dict[str, int] = {}  # input name -> node id, in order of first use
        self.defaults: dict[str, Value] = {}  # input name -> default declared in the source
        self.names: dict[str, int] = {}  # every name -> node it finally refers to
        # The statements in program order, as columns (see `statements`).
        self.stmt_kinds = bytearray()
        self.stmt_names: list[str] = []
        self.stmt_nodes = array("q")  # node, then the number of nodes so far, per statement
        self.output = -1
        self.output_label = ""
        self.source = source
        # What passes compute once per graph and keep: the float program, the last shapes.
        self.memo: dict[str, Any] = {}
        # A program with conditionals or loops: its static structure, or, on the graph that
        # ran, the guards and steps (cgraph_cli.run.control); None for straight-line code.
        self.control: Any = None
        # What each call of a function made (cgraph_cli.core.groups.Group), parents first.
        self.groups: list = []
        # The functions the program defines: name -> (parameters, the span of its text).
        self.functions: dict[str, tuple[tuple[str, ...], int, int]] = {}

    def __len__(self) -> int:
        return len(self.ops)

    def __repr__(self) -> str:
        """The program on one line (its beginning, when long) and its size.

        >>> from cgraph_cli import parse
        >>> parse("g = (x + y) * z")
        <Graph g = (x + y) * z: 3 inputs, 5 nodes>
        >>> parse("p = x + y  # the sum\\ng = p * z")
        <Graph p = x + y; g = p * z: 3 inputs, 5 nodes>
        """
        n, k = len(self.ops), len(self.inputs)
        size = f"{k:,} input{'s' * (k != 1)}, {n:,} node{'s' * (n != 1)}"
        if not 0 <= self.output < n:
            return f"<Graph (empty): {size}>"
        if n > REPR_NODES:  # printing the whole program only to cut it short: slow
            where = "" if self.source.filename.startswith("<") else f" in {self.source.filename}"
            return f"<Graph of {_cut(self.output_label)}{where}: {size}>"
        if getattr(self.control, "loops", None):  # a loop's static graph: the program's text
            lines = (line.split("#")[0].strip() for line in self.source.text.splitlines())
            return f"<Graph {_cut('; '.join(line for line in lines if line))}: {size}>"
        from ..parse.unparse import to_source  # display only; the IR needs no printer

        return f"<Graph {_cut('; '.join(to_source(self).splitlines()))}: {size}>"

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

    def error(self, cls: type[E], message: str, node: int, **kw) -> E:
        """An error of class ``cls`` placed at node ``node``'s span; a node a function's call
        made says through which call (`` in layer(h, W2, b2) called at model.cg:6:5``)."""
        if self.groups:
            from .groups import called_at

            message += called_at(self, node)
        return cls(message, self.span(node), self.source, **kw)


class GraphBuilder:
    """Builds a :class:`Graph` node by node; it knows nothing of parsing (the parser keeps its
    own name scope and calls :meth:`add`).

    With ``simplify`` (a rewrite rule: ``simplify(builder, op, args, params)`` returns a node
    equal to ``op(*args, *params)`` or None), :meth:`apply` hash-conses (an op applied to the
    same arguments and params twice is one node) and asks the rule before it adds a node: the
    derivative passes give :func:`cgraph_cli.passes.smart.rewrite`, so that derived graphs
    read as a textbook would write them. With ``shapes`` (each input's shape, by name), every node's shape is kept as it
    is built, for the rules that need one. ``span`` is the source span new nodes get.

    >>> b = GraphBuilder(simplify=lambda b, op, args, params: None)
    >>> x = b.input("x")
    >>> b.apply(OPS["mul"], (x, x)) == b.apply(OPS["mul"], (x, x))
    True
    """

    __slots__ = ("graph", "simplify", "shapes", "input_shapes", "span", "_memo")

    def __init__(
        self,
        source: Source | None = None,
        *,
        simplify: Callable[..., int | None] | None = None,
        shapes: dict[str, tuple[int, ...]] | None = None,
    ) -> None:
        self.graph = Graph(source or Source(""))
        self.simplify = simplify
        self.input_shapes = shapes
        self.shapes: list[tuple[int, ...]] | None = [] if shapes is not None else None
        self.span = (0, 0)
        self._memo: dict = {}

    def add(
        self, op: OpSpec, args: tuple[int, ...], start: int, end: int, params: tuple = ()
    ) -> int:
        """Append ``op(*args, *params)`` as it is: the parser's way, with its span."""
        g = self.graph
        node = len(g.ops)
        g.ops.append(op)
        g.args.append(args)
        g.labels.append(None)
        g.starts.append(start)
        g.ends.append(end)
        if params:
            g.params[node] = params
        if self.shapes is not None:
            self.shapes.append(self.result_shape(op, args, params) if op.arity else ())
        return node

    def copy(self, graph: Graph, i: int, args: tuple[int, ...] = ()) -> int:
        """Node ``i`` of ``graph`` added here as it is, with ``args`` (this builder's) for its
        arguments: an input by its name, a constant by its value."""
        op, start, end = graph.ops[i], graph.starts[i], graph.ends[i]
        if op is INPUT:
            return self.input(graph.labels[i] or "", start, end)
        if op is CONST:
            return self.const(graph.consts[i], start, end)
        return self.add(op, args, start, end, graph.params.get(i, ()))

    def input(self, name: str, start: int | None = None, end: int | None = None) -> int:
        """The input node called ``name``: made on first use, one per name."""
        node = self.graph.inputs.get(name)
        if node is None:
            node = self.add(INPUT, (), *self._where(start, end))
            self.graph.labels[node] = name
            self.graph.inputs[name] = node
            if self.shapes is not None:
                self.shapes[node] = tuple((self.input_shapes or {}).get(name, ()))
        return node

    def const(self, value, start: int | None = None, end: int | None = None) -> int:
        key = ("const", value_key(value))
        if self.simplify and key in self._memo:
            return self._memo[key]
        node = self.add(CONST, (), *self._where(start, end))
        self.graph.consts[node] = frozen(value)
        if self.shapes is not None:
            self.shapes[node] = tuple(getattr(value, "shape", ()))
        if self.simplify:
            self._memo[key] = node
        return node

    def apply(self, op: OpSpec, args, params: tuple = ()) -> int:
        """The node for ``op(*args, *params)``; when simplifying, an existing or a simpler
        one if there is one."""
        args = tuple(args)
        key = (op.name, args, repr(params))
        if self.simplify:
            found = self._memo.get(key)
            if found is not None:
                return found
            found = self.simplify(self, op, args, params)
            if found is not None:
                self._memo[key] = found
                return found
        node = self.add(op, args, *self.span, params)
        self._memo.setdefault(key, node)
        return node

    def remember(self, node: int) -> None:
        """Let later :meth:`apply` calls find ``node`` (copied in, not built by apply)."""
        g = self.graph
        self._memo.setdefault((g.ops[node].name, g.args[node], repr(g.params.get(node, ()))), node)

    def _where(self, start, end) -> tuple[int, int]:
        return (self.span[0], self.span[1]) if start is None else (start, end)

    # what the simplifier asks ---------------------------------------------------------------
    def const_value(self, node: int) -> float | None:
        """The number a constant node holds; None for anything else (arrays too)."""
        value = self.graph.consts.get(node)
        return value if value.__class__ is float else None

    def shape_of(self, node: int) -> tuple[int, ...]:
        return self.shapes[node] if self.shapes is not None else ()

    def result_shape(self, op: OpSpec, args, params) -> tuple[int, ...]:
        if self.shapes is None:
            return ()
        return op.shape([self.shapes[a] for a in args], params)

    def fold(self, op: OpSpec, args, params) -> int | None:
        """A constant equal to ``op`` applied to constant ``args``, computed by the op's own
        value rule (so it equals the evaluated value bit for bit); None when the rule fails
        or gives a value that is not finite there."""
        import math

        from .interpret import ARRAYS, value_function

        values = [self.graph.consts[a] for a in args]
        scalar = all(v.__class__ is float for v in values) and op.py is not None
        try:
            if scalar:
                value = value_function(op)(*values, *params)
            else:
                from .arrays import np

                with np.errstate(all="ignore"):
                    value = ARRAYS.apply(op, values, params)
        except (ArithmeticError, ValueError, TypeError):
            return None
        if value.__class__ is float:
            return self.const(value) if math.isfinite(value) else None
        from .arrays import np

        value = np.asarray(value, dtype=float)
        return self.const(value) if np.isfinite(value).all() else None

    # names and statements -------------------------------------------------------------------
    def name(self, node: int, name: str) -> None:
        """``name`` refers to ``node`` from now on (and labels it, if it has no label yet)."""
        if self.graph.labels[node] is None:
            self.graph.labels[node] = name
        self.graph.names[name] = node

    def statement(self, kind: str, name: str, node: int) -> None:
        g = self.graph
        g.stmt_kinds.append(_KINDS.index(kind))
        g.stmt_names.append(name)
        g.stmt_nodes.extend((node, len(g.ops)))

    def pop_const(self, node: int):
        """Remove the constant just added as ``node`` (a number that turned out to be an op's
        parameter, as the 0 in sum(x, 0)); its value, or None if ``node`` is not such."""
        g = self.graph
        if node != len(g.ops) - 1 or g.ops[node] is not CONST:
            return None
        for column in (g.ops, g.args, g.labels, g.starts, g.ends):
            column.pop()
        return g.consts.pop(node)

    def finish(self, output: int, output_label: str) -> Graph:
        self.graph.output = output
        self.graph.output_label = output_label
        return self.graph


def value_key(value):
    """A hashable key equal for equal constants (floats by their exact text, arrays by shape
    and bytes)."""
    if value.__class__ is float:
        return repr(value)
    return (value.shape, value.tobytes())


def relayout(
    graph: Graph, statements: list[tuple[str, str, int]], output: int, output_label: str
) -> Graph:
    """A new graph holding what ``statements`` (kind, name, node of ``graph``) need, its
    nodes laid out statement by statement: each statement's own nodes (those no earlier one
    made) depth first, arguments left to right, so that ``to_source`` writes each statement's
    expression in place. Nodes no statement needs are dropped (dead code). Without recursion:
    an explicit stack."""
    b = GraphBuilder(graph.source)
    g = b.graph
    new: dict[int, int] = {}
    for kind, name, node in statements:
        stack = [(node, False)]
        while stack:
            i, ready = stack.pop()
            if i in new:
                continue
            if not ready:
                stack.append((i, True))
                stack.extend((a, False) for a in reversed(graph.args[i]) if a not in new)
                continue
            assert graph.ops[i] is not INPUT or graph.labels[i] is not None, "an input has a name"
            new[i] = b.copy(graph, i, tuple(new[a] for a in graph.args[i]))
        if kind == "input":
            if name in graph.defaults:
                g.defaults[name] = graph.defaults[name]
        else:
            b.name(new[node], name)
        b.statement(kind, name, new[node])
    g.memo["copied_from"] = {j: i for i, j in new.items()}  # (each node's origin, for groups)
    return b.finish(new[output], output_label)


_LISTED = 30  # names listed in an unknown name's message at most


def wrt_node(graph: Graph, name: str) -> int:
    """The node a derivative is taken with respect to: an input by its name, even where a
    statement reuses the name (``x = sin(x)``), else the named value.

    >>> from cgraph_cli import parse
    >>> g = parse("x = sin(x)")
    >>> wrt_node(g, "x"), resolve_name(g, "x")
    (0, 1)
    """
    node = graph.inputs.get(name)
    return resolve_name(graph, name) if node is None else node


def resolve_name(graph: Graph, name: str) -> int:
    """The node a name finally refers to (an input or a statement name). A name the program
    does not have is an :class:`~cgraph_cli.core.errors.UnknownNameError` (a usage error: it was
    given on the command line, as --of, --wrt or --focus) with a did-you-mean and the names.

    >>> from cgraph_cli import parse
    >>> resolve_name(parse("p = x + y; g = p * z"), "p")
    2
    """
    node = graph.named_nodes().get(name)
    if node is None:
        import difflib

        from .errors import UnknownNameError

        known = list(graph.named_nodes())
        close = difflib.get_close_matches(name, known, n=1)
        hints = [f"did you mean '{close[0]}'?"] if close else []
        shown = ", ".join(known[:_LISTED])
        if len(known) > _LISTED:
            shown += f", … ({len(known) - _LISTED:,} more)"
        hints.append("names in the program: " + shown)
        raise UnknownNameError(f"the program has no name '{name}'", hints=hints)
    return node


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while building: it rescans every new container otherwise.
    In the cgraph command, what the build made is then frozen (gc.freeze): it lives until the
    command ends, and the collection that resuming would start walks it all (10 ms for a
    40,000-node graph). Reference counting still frees it; a library user's process is left
    as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if PAUSED_FOR_COMMAND:
                gc.freeze()
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
        assert op.required <= given <= len(op.params) or (
            op.name == "where" and graph.params[i] in (IF, MASK)
        ), f"node %{i}: {op.name} has {given} params"
        if op is INPUT:
            name = graph.labels[i]
            assert name is not None, f"node %{i}: an input without a name"
            assert graph.inputs.get(name) == i, f"node %{i}: input defined twice"
    assert len(graph.inputs) == sum(op is INPUT for op in graph.ops), "input table mismatch"
    assert all(0 <= v < n for v in graph.names.values()), "a name refers to no node"
    assert 0 <= graph.output < n, "output out of range"
    return graph
