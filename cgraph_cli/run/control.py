"""Conditionals and loops: a program's static graph and the graph that runs for given bindings.

The parser reads a program with control flow in one of two ways (see ``parse/reader.py``):

- **static** (:func:`cgraph_cli.parse`): the structure, independent of the data, as
  ``tf.cond``/``lax.scan`` hold it. ``a if c else b`` is a select node ``where(c, a, b)`` over
  both branches; a loop's body is read once, its variable an input-like node, and the values it
  carries from one step to the next are back edges. ``graph.control`` is a :class:`Static`.
- **run** (:func:`run_graph`): the graph that actually runs, as PyTorch records it. The parser
  asks a :class:`Tracer` for the value of each condition and loop bound as it reads them: the
  branch taken is kept (the other is never evaluated), the loop is unrolled to its real length,
  and every name assigned in a body gets its step (``h_1``, ``h_2``). ``graph.control`` is a
  :class:`Run`: the guards the graph depends on and the nodes of each step.

Everything that computes (evaluation, gradients, explanations) works on the graph that runs: a
straight-line graph like any other.

>>> from cgraph_cli import parse
>>> g = parse("y = log(x) if x > 0 else 0")
>>> run = run_graph(g, {"x": -1})
>>> [str(n) for n in run], [str(guard) for guard in run.control.guards]
(['%0 = input x', '%1 = const 0.0 (y)'], ['x > 0 was false'])
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.arrays import np
from ..core.errors import BindingError, CgraphError, EvalError, Span, UsageError
from ..core.ir import Graph, GraphBuilder
from ..core.ir_control import Guard, Run, Static, tensor_condition
from ..core.ops import CONST, INPUT
from ..data.bindings import input_values

#: The most steps the loops of one run may take in all, and the most operations the graph
#: that runs may have: each step is unrolled into the graph, so a loop of 10**12 steps is
#: refused at its header, before it runs, rather than filling the memory.
MAX_LOOP_STEPS = 1_000_000
MAX_RUN_NODES = 2_000_000


class Tracer:
    """The run-mode parser's view of the values: it evaluates, on demand, just what a
    condition or a loop bound needs (never a branch not taken), and records the guards."""

    def __init__(self, static: Graph, bindings: Mapping[str, object]) -> None:
        self.static = static
        self.inputs = input_values(static, bindings)[0]  # bindings over defaults
        self.values: dict[int, object] = {}
        self.guards: list[Guard] = []
        self.conditions: list[int] = []  # each if/else guard's condition node, in order
        self.steps: dict[str, list[int]] = {}
        self.notes: list[str] = []  # what ran, for explain: branches and loops, in order
        self.total_steps = 0  # of every loop so far, an inner loop's once per outer step

    def value(self, graph: Graph, node: int):
        """Node ``node``'s value, computing those of its ancestors not yet known, in order."""
        values = self.values
        if node in values:
            return values[node]
        todo, stack = set(), [node]
        while stack:
            i = stack.pop()
            if i not in values and i not in todo:
                todo.add(i)
                stack.extend(graph.args[i])
        from .evaluate import apply_nodes

        order = sorted(todo)
        for i in order:  # the leaves first: every operation's arguments are then known
            if graph.ops[i] is INPUT:
                values[i] = self._input(graph, i)
            elif graph.ops[i] is CONST:
                values[i] = graph.consts[i]
        apply_nodes(graph, values, [i for i in order if graph.ops[i].arity])
        return values[node]

    def _input(self, graph: Graph, node: int):
        name = graph.labels[node] or ""
        if name in self.inputs:
            return self.inputs[name]
        raise graph.error(
            BindingError,
            f"no value for input '{name}', which the program's control flow needs",
            node,
            hints=[f"bind it: {name}=VALUE  (or declare a default: input {name} = 1)"],
        )

    def condition(
        self, graph: Graph, node: int, span: tuple[int, int], branches: tuple, step: str
    ) -> bool:
        """Whether the condition ``node`` (at ``span``) holds; a guard. ``branches``: the
        spans of the two branches; ``step``: the loop variables now (``t = 2``)."""
        start, end = span
        value = self.value(graph, node)
        text = " ".join(graph.source.text[start:end].split())
        if value.__class__ is not float:
            raise tensor_condition(text, np.shape(value), Span(start, end), graph.source)
        holds = value != 0.0
        detail = ""
        if graph.ops[node].arity:
            from .evaluate import describe

            detail = describe(graph, node, self.values)  # type: ignore[arg-type]
        taken = branches[0] if holds else branches[1]
        branch = " ".join(graph.source.text[taken[0] : taken[1]].split())
        self.guards.append(Guard(text, holds, start, end, "if", step, detail, branch))
        self.conditions.append(node)
        self.notes.append(self.guards[-1].sentence())
        return holds

    def trip_count(
        self, graph: Graph, bound, node: int | None, text: str, header: str, span=(0, 0)
    ) -> int:
        """A loop's number of steps, from its bound: a number, or ``len``/``shape`` of the
        value of node ``node``, or that value itself. ``header``: the loop's header, at
        ``span``, for explanations and for the refusal of more than :data:`MAX_LOOP_STEPS`."""
        n = self._trip_count(graph, bound, node, text)
        self.total_steps += n
        if self.total_steps > MAX_LOOP_STEPS:
            so_far = self.total_steps - n
            was = f" after {so_far:,} steps already run" if so_far else ""
            raise EvalError(
                f"the loop `{header}` would run {n:,} steps{was}: more than the "
                f"{MAX_LOOP_STEPS:,} cgraph runs",
                Span(*span),
                graph.source,
                hints=["every step is unrolled into the graph that runs: use fewer steps"],
            )
        data = f" ({self.guards[-1]})" if not isinstance(bound, int) else ""
        self.notes.append(f"`{header}` ran {n} step{'s' * (n != 1)}{data}")
        return n

    def _trip_count(self, graph: Graph, bound, node: int | None, text: str) -> int:
        if isinstance(bound, int):
            return bound
        fn, tok, axis, bstart, bend = bound
        name = tok[1]
        assert node is not None
        value = self.value(graph, node)
        written = " ".join(text[bstart:bend].split())
        if fn == "value":
            if value.__class__ is not float or not value.is_integer() or value < 0:
                shown = f"a {np.shape(value)} tensor" if value.__class__ is not float else value
                raise EvalError(
                    f"a loop's number of steps is a whole number, but {name} is {shown:g}"
                    if value.__class__ is float
                    else f"a loop's number of steps is a whole number, but {name} is {shown}",
                    Span(bstart, bend),
                    graph.source,
                    hints=[f"bind {name} to 0, 1, 2, ..."],
                )
            self.guards.append(Guard(written, int(value), bstart, bend, "loop", ""))
            return int(value)
        shape = np.shape(value)
        if not -len(shape) <= axis < len(shape):
            what = "a number" if not shape else f"a {shape} tensor"
            raise EvalError(
                f"{written} needs axis {axis} of '{name}', which is {what}",
                Span(bstart, bend),
                graph.source,
                hints=["a loop over a sequence: bind it as an array, xs='[[1, 2], [3, 4]]'"],
            )
        n = int(shape[axis])
        self.guards.append(Guard(written, n, bstart, bend, "loop", ""))
        return n

    def check_size(self, graph: Graph, span: tuple[int, int], header: str) -> None:
        """Refuse a run whose graph has grown past :data:`MAX_RUN_NODES` operations, at the
        loop (its header at ``span``) about to take another step."""
        if len(graph.ops) <= MAX_RUN_NODES:
            return
        raise EvalError(
            f"the loop `{header}` unrolls into more than {MAX_RUN_NODES:,} operations, the "
            "most cgraph runs",
            Span(*span),
            graph.source,
            hints=["every step is unrolled into the graph that runs: use fewer steps"],
        )

    def check_index(self, graph: Graph, node: int, axis: int, tok, step: int) -> None:
        """Refuse the loop variable ``tok`` (at ``step``) as an index past the end of axis
        ``axis`` of node ``node``'s value."""
        shape = np.shape(self.value(graph, node))
        if axis < len(shape) and step < shape[axis]:
            return
        what = graph.display_name(node) if graph.labels[node] else graph.text(node)
        length = f"has {shape[axis]} along axis {axis}" if axis < len(shape) else "is smaller"
        raise EvalError(
            f"index {tok[1]} = {step} is past the end of {what}, which {length}",
            Span(tok[2], tok[3]),
            graph.source,
            hints=["make the loop's number of steps the length it reads: range(len(xs))"],
        )

    def assigned(self, name: str, node: int) -> None:
        self.steps.setdefault(name, []).append(node)


def run_graph(graph: Graph, bindings: Mapping[str, object] | None = None) -> Graph:
    """The graph that runs for ``bindings``: ``graph`` itself for straight-line code; for a
    program with control flow, the branches taken and the loops unrolled (see the module's
    docstring), with ``control`` a :class:`Run`.

    >>> from cgraph_cli import parse
    >>> g = parse("input xs = [1, 2, 3]\\nh = 0\\nfor t in range(len(xs)):\\n    h = h + xs[t]")
    >>> run = run_graph(g)
    >>> run.output_label, run.control.steps["h"], [str(x) for x in run.control.guards]
    ('h_3', [None, 3, 5, 7], ['len(xs) == 3'])
    """
    if not isinstance(graph.control, Static):
        return graph
    from ..data.bindings import check_bindings

    checked = check_bindings(graph, bindings)
    from ..parse.driver import parse_source

    tracer = Tracer(graph, checked)
    ran = parse_source(graph.source, tracer)
    initial = _name_steps(ran, tracer.steps)
    out = _prune(ran, graph)
    carried = [
        name for loop in graph.control.loops for _, _, name in loop.back if name in tracer.steps
    ]
    remap = out.memo.pop("remap")
    steps = {
        # Step 0 is the value before the loop: None if there is none, or a constant.
        name: [remap[initial[name]] if _varies(ran, initial, name) else None]
        + [remap[n] for n in nodes]
        for name, nodes in tracer.steps.items()
    }
    out.control = Run(tracer.guards, steps, list(dict.fromkeys(carried)), graph, tracer.notes)
    return out


def _varies(ran: Graph, initial: dict[str, int], name: str) -> bool:
    return name in initial and ran.ops[initial[name]] is not CONST


def _name_steps(ran: Graph, steps: dict[str, list[int]]) -> dict[str, int]:
    """After the run: a name assigned in a loop refers to its last step's value; the value it
    had before the loop becomes ``name_0`` (an input keeps its name). Returns, per such name,
    the node of its value before the loop (step 0)."""
    initial: dict[str, int] = {}
    for name, nodes in steps.items():
        last = nodes[-1]
        before = ran.names.get(name, ran.inputs.get(name))
        if before is None or before > last:
            continue
        initial[name] = before
        if name in ran.inputs:
            continue
        zero = f"{name}_0"
        for k, stmt in enumerate(ran.stmt_names):
            if stmt == name and ran.stmt_nodes[2 * k] == before:
                ran.stmt_names[k] = zero
        if ran.labels[before] == name:
            ran.labels[before] = zero
        ran.names = {(zero if k == name else k): v for k, v in ran.names.items()}
        ran.names[name] = last
    return initial


def _prune(ran: Graph, static: Graph) -> Graph:
    """``ran`` without the nodes nothing needs (a branch not taken, a condition): every input
    of the static graph stays, so the same bindings apply."""
    n = len(ran.ops)
    needed = [False] * n
    for node in ran.inputs.values():
        needed[node] = True
    statements = list(ran.statements())
    for _, _, node, _ in statements:
        needed[node] = True
    needed[ran.output] = True
    for i in range(n - 1, -1, -1):
        if needed[i]:
            for a in ran.args[i]:
                needed[a] = True
    b = GraphBuilder(ran.source)
    g = b.graph
    remap: dict[int, int] = {}
    done = 0

    def copy_until(end: int) -> None:
        for i in range(done, end):
            if needed[i]:
                remap[i] = b.copy(ran, i, tuple(remap[a] for a in ran.args[i]))
                if ran.labels[i] is not None:
                    g.labels[remap[i]] = ran.labels[i]

    for kind, name, node, so_far in statements:
        copy_until(so_far)
        done = max(done, so_far)
        b.statement(kind, name, remap[node])
    copy_until(n)
    g.names = {name: remap[node] for name, node in ran.names.items()}
    g.defaults = dict(ran.defaults)
    g.memo["remap"] = remap
    g.functions = dict(ran.functions)
    if ran.groups:
        kept = [0] * (n + 1)  # kept[i]: how many needed nodes come before node i
        for i in range(n):
            kept[i + 1] = kept[i] + needed[i]
        g.groups = [
            grp._replace(
                args=tuple(remap.get(a, -1) for a in grp.args),
                output=remap.get(grp.output, -1),
                lo=kept[grp.lo],
                hi=kept[grp.hi],
            )
            for grp in ran.groups
        ]
    return b.finish(remap[ran.output], ran.output_label)


__all__ = ["Tracer", "run_graph"]


def ran_graph(graph: Graph, bindings: Mapping | None) -> Graph:
    """The graph that runs for ``bindings`` (a program with if/else or loops is differentiated
    as it runs: one branch, the loops unrolled); straight-line code as it is."""
    if graph.control is None or not hasattr(graph.control, "loops"):
        return graph
    try:
        return run_graph(graph, bindings)
    except BindingError as e:
        raise UsageError(
            "this program has if/else or a loop: its derivatives are those of the graph that "
            "runs for given bindings (a derivative program with its own branches and loops "
            "is not built yet)",
            hints=[*e.hints, "give every input a value, e.g. cgraph diff samples/huber.cg e=3"],
        ) from None


def branches(graph: Graph, bindings: Mapping | None) -> list[bool | None] | None:
    """Which way each ``a if c else b`` of ``graph`` (a static graph with no loop) goes for
    ``bindings``, in the program's order: True (the branch before ``if``), False, or None
    where the conditional is in a branch not taken (its condition is never computed); None
    where a value on the way cannot be computed. The compiled program's choices
    (:mod:`cgraph_cli.passes.guards`, ``cgraph compile``), made here by the interpreter's
    rules, one node at a time.

    >>> from cgraph_cli import parse
    >>> g = parse("y = (sqrt(x) if x > 1 else 0) if x > 0 else log(-x)")
    >>> branches(g, {"x": 2}), branches(g, {"x": -2})
    ([True, True], [None, False])
    """
    from ..passes.guards import ALWAYS, is_select, marked, needs, order
    from .evaluate import apply_nodes, initial_values

    static = marked(graph)
    try:  # inputs and constants; the others filled in below, where their guard holds
        first = initial_values(static, bindings)
    except CgraphError:
        return None
    values = {i: first[i] for i, op in enumerate(static.ops) if not op.arity}
    guards = needs(static, [static.output, *static.names.values()])

    def holds(guard) -> bool:
        return any(all((values.get(c, 0.0) != 0.0) == side for c, side in path) for path in guard)

    for i in order(static, guards):
        if not static.ops[i].arity or (guards[i] != ALWAYS and not holds(guards[i])):
            continue
        if is_select(static, i):
            c, a, b = static.args[i]
            values[i] = values[a] if values[c] != 0.0 else values[b]
            continue
        try:
            apply_nodes(static, values, [i])
        except EvalError:
            return None
    selects = sorted(i for i in range(len(static.ops)) if is_select(static, i))
    conds = [static.args[s][0] for s in selects]
    return [bool(values[c] != 0.0) if c in values else None for c in conds]
