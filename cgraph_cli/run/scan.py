"""Loops run as scans: a program with ``for`` loops, forward and backward, without unrolling it.

The static graph (:class:`~cgraph_cli.core.ir_control.Static`) holds each loop's body once.
Here the program is cut into blocks, each loop's body one and each stretch of straight-line
code between loops one; each block is compiled into a step function of the values it reads
(those of earlier blocks, the values the loop carries, the rows of a sequence it reads as
``xs[t]``, the loop's variable) and, for gradients, its vector-Jacobian product: the block's
derivative program (:func:`~cgraph_cli.passes.grad_graph.grad_graph` of the sum of its results
times their cotangents), cut where it reads the forward values, which the forward pass saves
step by step. A loop then runs in Python carrying its values, forward and back over the saved
steps, as ``lax.scan`` does: no graph of the run, no per-node dispatch.

Everything that is not the plain case gives None, and the caller runs the graph that runs
(:func:`cgraph_cli.run.control.run_graph`), which answers with today's messages: conditionals,
nested loops, a loop of no steps, a value not finite on the way (the watched values: what a
step could hide, as ``tanh`` hides an infinity, and what nothing reads), an error raised, an
index past the end.

>>> from cgraph_cli import parse
>>> g = parse("input a = 0.5\\nh = 1\\nfor t in range(3):\\n    h = h * a + t")
>>> value, grads = scan_grad(g, {})
>>> value, grads["a"]
(2.625, 1.75)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from ..core import runtime
from ..core.arrays import np
from ..core.errors import CgraphError
from ..core.ir import Graph, GraphBuilder, resolve_name
from ..core.ir_control import Static
from ..core.ops import CONST, INPUT, OPS
from .compile import _Emitter, input_variables

#: A loop's steps times its body's operations at or above which the first call runs as a
#: scan (a smaller loop's first call unrolls it: cheaper than compiling).
AT_ONCE = 2_000


class _Block:
    """Nodes ``lo`` to ``hi`` of the static graph: a loop's body (``loop``) or straight-line
    code run once. ``reads``: the nodes of earlier blocks it reads (and the program's inputs);
    ``carried``: a loop's back edges ``(its last node of a name, the node before the loop)``;
    ``rows``: its ``xs[t]`` nodes ``(node, sequence node, index items)``; ``var``: whether the
    body reads the loop's variable as a number; ``results``: its nodes that later blocks read
    (and the output), after a loop those of its last step."""

    __slots__ = ("lo", "hi", "loop", "reads", "carried", "rows", "var", "results", "compiled")

    def __init__(self, lo: int, hi: int, loop) -> None:
        self.lo, self.hi, self.loop = lo, hi, loop
        self.reads: list[int] = []
        self.carried: list[tuple[int, int]] = []
        self.rows: list[tuple[int, int, tuple]] = []
        self.var = False
        self.results: list[int] = []
        self.compiled: dict = {}  # (shapes, results' shapes or None) -> _Step


def blocks(graph: Graph, out: int) -> list[_Block] | None:
    """The program cut into blocks (see the module's text), or None where it is not a scan's:
    straight-line code, conditionals, nested loops, a body that reads a value the static graph
    cannot tell from the one it carries, a body whose ``xs[t]`` indexes its own values."""
    control = graph.control
    if not isinstance(control, Static) or control.conds or not control.loops:
        return None
    key = f"scan {out}"
    if key in graph.memo:
        return graph.memo[key]
    found = graph.memo[key] = _cut(graph, out, control)
    return found


def _cut(graph: Graph, out: int, control: Static) -> list[_Block] | None:
    loops = sorted(control.loops, key=lambda lp: lp.lo)
    if any(lp.depth or lp.aliased or lp.count is None for lp in loops):
        return None
    n = len(graph.ops)
    cut: list[_Block] = []
    pos = 0
    for loop in loops:
        if loop.lo > pos:
            cut.append(_Block(pos, loop.lo, None))
        cut.append(_Block(loop.lo, loop.hi, loop))
        pos = loop.hi
    if pos < n:
        cut.append(_Block(pos, n, None))
    # Straight-line code of inputs and constants only computes nothing; a loop whose body
    # computes nothing is left to the graph that runs (its bound is all there is to check).
    if any(b.loop and not any(graph.ops[j].arity for j in range(b.lo, b.hi)) for b in cut):
        return None
    cut = [b for b in cut if b.loop or any(graph.ops[j].arity for j in range(b.lo, b.hi))]
    owner = [-1] * n
    for k, block in enumerate(cut):
        owner[block.lo : block.hi] = [k] * (block.hi - block.lo)
    if owner[out] < 0 and graph.ops[out] is not CONST and graph.ops[out] is not INPUT:
        return None
    results: list[dict[int, None]] = [{} for _ in cut]
    ops, args = graph.ops, graph.args
    for k, block in enumerate(cut):
        if block.loop is not None and not _loop_reads(graph, block):
            return None
        reads: dict[int, None] = {}
        rows = {j for j, _, _ in block.rows}  # xs[t]: a step's row, xs itself not an input
        for j in range(block.lo, block.hi):
            for a in args[j]:
                if (owner[a] != k or ops[a] is INPUT) and ops[a] is not CONST:
                    if j not in rows:
                        reads[a] = None
                    if owner[a] >= 0:
                        results[owner[a]][a] = None
        reads.update((src, None) for src, _ in block.carried if ops[src] is INPUT)  # h = x
        carried = {before for _, before in block.carried}
        block.reads = [a for a in reads if a not in carried]
        for _, before in block.carried:  # its value before the loop, read or not
            if owner[before] >= 0 and ops[before] is not INPUT:
                results[owner[before]][before] = None
        bound = block.loop.count[1] if block.loop else None
        if bound is not None and owner[bound] >= 0:  # the number of steps reads it
            results[owner[bound]][bound] = None
    if owner[out] >= 0 and graph.ops[out] is not INPUT:
        results[owner[out]][out] = None
    for k, block in enumerate(cut):
        block.results = [r for r in results[k] if ops[r] is not INPUT]
    return cut


def _loop_reads(graph: Graph, block: _Block) -> bool:
    """A loop's carried values, its ``xs[t]`` rows and whether it reads its variable; False
    where the body indexes its own values with the variable."""
    loop = block.loop
    lo = loop.lo
    if graph.ops[lo] is not CONST or graph.labels[lo] != loop.var:
        return False
    block.carried = [(src, before) for src, before, _ in loop.back]
    for j in range(lo + 1, block.hi):
        if lo in graph.args[j]:
            block.var = True
        if graph.ops[j].name == "index" and loop.var in graph.params[j][0]:
            (a,) = graph.args[j]
            if a >= lo and graph.ops[a] is not INPUT:
                return False
            block.rows.append((j, a, graph.params[j][0]))
    return True


class _Step:
    """A block compiled for its inputs' shapes (``known``, by the step graph's input names).
    ``forward(_w, *inputs)`` returns the block's results (a loop's carried values first) and
    then what its backward passes read. With ``gradient``, ``backward(_w, *cotangents,
    saved)`` gives the gradient of each input but the loop's variable, in order, from the
    cotangents of the carried values (a loop's step) or of every result (straight-line code);
    ``last`` (a loop whose later code reads values of its body it does not carry), from those
    of the carried values and then of those others, for the loop's last step. ``_w``: where
    values to check are handed (NumPy), for one check at the end."""

    __slots__ = ("forward", "backward", "last", "extra")

    def __init__(self, block: _Block, graph: Graph, known: dict, tensor: bool, gradient: bool):
        step, outs, sizes = _step_graph(block, graph, known)
        k = len(block.carried)
        # The results that are not carried values, by position (the others' cotangents are
        # added to the carried values' at the last step).
        self.extra = [i for i in range(k, len(outs)) if outs[i] not in outs[:k]]
        if block.loop is None:
            variants = [list(range(len(outs)))]
        else:
            variants = [list(range(k))] + ([list(range(k)) + self.extra] if self.extra else [])
        self.backward = self.last = None
        saved: list[int] = []
        if gradient:
            plans = [_derive(block, graph, step, outs, v, sizes, known) for v in variants]
            saved = sorted({i for plan in plans for i in plan[1]})
            made = [_backward(plan, saved, len(outs), sizes, tensor) for plan in plans]
            self.backward, self.last = made[0], made[-1]
        lines, names, helpers = _emit(step, known, tensor, [*outs, *saved])
        returned = "".join(f"{names[o]}, " for o in [*outs, *saved])
        params = ["_w", *input_variables(step.inputs).values()]
        self.forward = _function(params, lines, f"({returned})", helpers)


class _NotAScan(Exception):
    """Something the scan does not take: the graph that runs answers."""


def _derive(block, graph, step, outs, positions, sizes, known):
    """The derivative program of the sum of the results at ``positions`` times their
    cotangents (``ct0``...): ``(its graph, the step's nodes it reads, {its node: the step's
    node}, its gradients' nodes, how many cotangents)``."""
    from ..passes.grad_graph import grad_graph

    wrt = [n for n in step.inputs if n != "t"]
    shapes = [(outs[p], sizes[outs[p]]) for p in positions]
    if not wrt:  # a block of constants: nothing to pass back
        return None, set(), {}, [], [s for _, s in shapes], []
    full, _, _ = _step_graph(block, graph, known, shapes)
    given = {**known, **{f"ct{k}": s for k, (_, s) in enumerate(shapes)}}
    derived = grad_graph(full, full.output, wrt, given, intermediates=False)
    d = derived.graph
    forward = _same_nodes(step, d)
    grads = [d.names[derived.gradients[w]] for w in wrt]
    needed, saved, stack = set(), set(), list(grads)
    while stack:
        i = stack.pop()
        if i in needed or i in saved:
            continue
        if i in forward and d.ops[i] is not CONST:
            saved.add(i)
            continue
        needed.add(i)
        stack.extend(d.args[i])
    d.memo["scan needed"] = needed
    wrt_shapes = [known[w] for w in wrt]
    return d, {forward[i] for i in saved}, forward, grads, [s for _, s in shapes], wrt_shapes


def _backward(plan, order: list[int], results: int, sizes, tensor: bool):
    """The vector-Jacobian product of ``plan`` (:func:`_derive`) as a function of the
    cotangents and the forward pass's saved tuple: ``results`` results, then the step's nodes
    ``order``."""
    d, _, forward, grads, shapes, wrt_shapes = plan
    if d is None:
        return _nothing
    count = len(shapes)
    b = GraphBuilder(d.source)
    mapped = {}
    for k in range(count):  # each a parameter, though no gradient reads it
        node = b.input(f"ct{k}")
        if f"ct{k}" in d.inputs:
            mapped[d.inputs[f"ct{k}"]] = node
    kept = set(order)
    for i, j in forward.items():
        if j in kept and d.ops[i] is not CONST:
            mapped[i] = b.input(f"r{j}")
    for i in sorted(d.memo["scan needed"]):
        if i not in mapped:
            mapped[i] = b.copy(d, i, tuple(mapped[a] for a in d.args[i]))
    back = b.finish(mapped[grads[0]], "")
    known = {f"ct{k}": s for k, s in enumerate(shapes)}
    known.update((f"r{j}", sizes[j]) for j in order)
    returned = [mapped[g] for g in grads]
    lines, names, helpers = _emit(back, known, tensor, returned)
    variables = input_variables(back.inputs)
    unpack = ", ".join(
        [f"_o{k}" for k in range(results)]
        + [variables[f"r{j}"] if f"r{j}" in variables else f"_r{j}" for j in order]
    )
    cts = [variables[f"ct{k}"] for k in range(count)]
    body = [f"    {unpack}, = saved"] * bool(unpack) + lines
    result = "".join(
        # a constant (0: no path to the input) given the input's shape
        f"np.full({shape!r}, {names[g]}), "
        if tensor and shape and back.ops[g] is CONST
        else f"{names[g]}, "
        for g, shape in zip(returned, wrt_shapes)
    )
    return _function(["_w", *cts, "saved"], body, f"({result})", helpers)


def _nothing(*_args) -> tuple:
    return ()


def _same_nodes(step: Graph, derived: Graph) -> dict[int, int]:
    """The nodes of ``derived`` that compute a node of ``step`` (its forward part), each to
    that node: found by their op, parameters and arguments, inputs by name."""
    from ..core.ir import value_key

    index: dict = {("const", value_key(v)): j for j, v in step.consts.items()}
    for i, op in enumerate(step.ops):
        if op is not INPUT and op is not CONST:
            index[(op, step.args[i], repr(step.params.get(i, ())))] = i
    found: dict[int, int] = {}
    for i, op in enumerate(derived.ops):
        if op is INPUT:
            node = step.inputs.get(derived.labels[i] or "")
        elif op is CONST:
            node = index.get(("const", value_key(derived.consts[i])))
        else:
            args = tuple(found.get(a, -1) for a in derived.args[i])
            node = None if -1 in args else index.get((op, args, repr(derived.params.get(i, ()))))
        if node is not None:
            found[i] = node
    return found


def _step_graph(block: _Block, graph: Graph, known: dict, cotangents: list | None = None):
    """The block as a straight-line graph of its inputs (see :class:`_Block`; ``known``:
    their shapes), its results' nodes there (carried values first) and every node's shape.
    With ``cotangents`` (``(result's node, its shape)`` pairs), also an input ``ct<k>`` for
    each and the output: the sum of each result times its cotangent, whose gradient is the
    block's vector-Jacobian product."""
    if cotangents is not None:
        known = {**known, **{f"ct{k}": s for k, (_, s) in enumerate(cotangents)}}
    b = GraphBuilder(graph.source, shapes=known)
    mapped: dict[int, int] = {}
    for a in block.reads:
        mapped[a] = b.input(f"e{a}")
    for k, (_, before) in enumerate(block.carried):
        mapped[before] = b.input(f"c{k}")
    for m, (j, _, _) in enumerate(block.rows):
        mapped[j] = b.input(f"s{m}")
    if block.var:
        mapped[block.lo] = b.input("t")
    ops, args = graph.ops, graph.args
    start = block.lo + (block.loop is not None)
    for j in range(start, block.hi):
        if j in mapped or ops[j] is INPUT:
            continue
        if ops[j] is CONST:
            mapped[j] = b.copy(graph, j)
            continue
        for a in args[j]:
            if a not in mapped:  # a constant of an earlier block
                mapped[a] = b.copy(graph, a)
        mapped[j] = b.copy(graph, j, tuple(mapped[a] for a in args[j]))
    outs = [mapped[src] for src, _ in block.carried] + [mapped[r] for r in block.results]
    total = None
    for k, (o, shape) in enumerate(cotangents or ()):
        term = b.add(OPS["mul"], (o, b.input(f"ct{k}")), 0, 0)
        if shape:
            term = b.add(OPS["sum"], (term,), 0, 0)
        total = term if total is None else b.add(OPS["add"], (total, term), 0, 0)
    if cotangents is not None and total is None:
        total = b.const(0.0)
    last = len(b.graph.ops) - 1 if total is None else total
    assert b.shapes is not None
    return b.finish(last, ""), outs, b.shapes


def _emit(graph: Graph, known: dict, tensor: bool, returned: list[int]):
    """The lines computing every operation of ``graph`` (the interpreter runs every
    statement), each node's variable, and the helpers they call. A value that could hide one
    not finite (``tanh(inf)`` is 1), or that no ``returned`` node reads, is handed to ``_w``
    (NumPy: checked once at the end) or stops the step (numbers)."""
    em = _Emitter("numpy" if tensor else "python", graph.source.text, known if tensor else None)
    em.variables = input_variables(graph.inputs)
    lines, names = em.body(graph, keep=set(returned), returned=returned)
    if tensor:
        head, tail = em.stop("\x00", "").split("\x00")
        pattern = re.compile("^" + re.escape(head) + r"(\w+)" + re.escape(tail))
        lines = [pattern.sub(r"    _w(\1)", line) for line in lines]
    return lines, names, em.helpers


def _function(params: list[str], lines: list[str], returned: str, helpers):
    """A function of ``params`` running ``lines`` (our own generated code) and returning
    ``returned``."""
    source = "\n".join([f"def step({', '.join(params)}):", *lines, f"    return {returned}"])
    namespace: dict = {"np": np, "math": math}
    namespace.update((h, getattr(runtime, h)) for h in helpers)
    exec(compile(source, "<cgraph scan>", "exec"), namespace)
    return namespace["step"]


def scan_grad(graph: Graph, bindings: Mapping | None, of: str | None = None):
    """``(value, gradients)`` of a program with loops run as a scan (see the module's
    text); None where the graph that runs must answer."""
    return _scan(graph, bindings, of, gradient=True)


def scan_forward(graph: Graph, bindings: Mapping | None, of: str | None = None):
    """``(value,)`` of a program with loops run as a scan, the forward pass alone; None
    where the graph that runs must answer."""
    return _scan(graph, bindings, of, gradient=False)


def steps_times_body(graph: Graph, bindings: Mapping | None) -> int:
    """About how many operations the loops of ``graph`` unroll into for ``bindings`` (the
    steps of a loop whose bound is an input's length times its body), 0 where unknown."""
    total = 0
    for loop in getattr(graph.control, "loops", ()):
        bound, node = loop.count or (None, None)
        if isinstance(bound, int):
            total += bound * (loop.hi - loop.lo)
        elif node is not None and graph.ops[node] is INPUT and bound and bound[0] != "value":
            name = graph.labels[node] or ""
            value = (bindings or {}).get(name, graph.defaults.get(name))
            shape = np.shape(value) if isinstance(value, (list, np.ndarray)) else ()
            if len(shape) > bound[2] >= -len(shape):
                total += shape[bound[2]] * (loop.hi - loop.lo)
    return total


# What a step raises on values it cannot take: the graph that runs says what and where.
_FAILURES = (_NotAScan, ArithmeticError, ValueError, TypeError, IndexError, CgraphError)


def _scan(graph: Graph, bindings: Mapping | None, of: str | None, gradient: bool):
    out = graph.output if of is None else resolve_name(graph, of)
    cut = blocks(graph, out)
    if cut is None or any(  # a name of one step only: h_1, h_2... in the graph that runs
        b.loop and b.lo <= out < b.hi and out not in {src for src, _ in b.carried} for b in cut
    ):
        return None
    from ..data.bindings import check_bindings, input_values

    try:
        inputs, missing = input_values(graph, check_bindings(graph, bindings))
        if missing:
            return None
        tensor = _tensor(graph, inputs)
        env: dict[int, object] = dict(graph.consts)
        env.update((node, inputs[name]) for name, node in graph.inputs.items())
        with np.errstate(all="ignore"):
            return _Pass(graph, cut, env, tensor, gradient).run(out, inputs)
    except _FAILURES:
        return None


def _tensor(graph: Graph, inputs: Mapping) -> bool:
    """Whether the program runs on arrays (as the interpreter decides: an array somewhere,
    or an op with no rule for numbers)."""
    return (
        any(v.__class__ is not float for v in inputs.values())
        or any(v.__class__ is not float for v in graph.consts.values())
        or any(op.arity and op.py is None for op in set(graph.ops))
    )


class _Pass:
    """One run of the blocks: forward, each step's saved values kept (with ``gradient``),
    then back."""

    __slots__ = ("graph", "cut", "env", "tensor", "gradient", "watched", "tapes")

    def __init__(self, graph, cut, env, tensor: bool, gradient: bool) -> None:
        self.graph, self.cut, self.env = graph, cut, env
        self.tensor, self.gradient = tensor, gradient
        self.watched: list = []
        self.tapes: list[list] = []

    def run(self, out: int, inputs: Mapping):
        for block in self.cut:
            self.tapes.append(self._loop(block) if block.loop else self._once(block))
        value = self.env[out]
        if self.watched and not _finite_all(self.watched):
            return None
        if value.__class__ is not float:
            if not self.gradient and hasattr(value, "shape") and np.isfinite(value).all():
                return (np.array(value) if value.shape else float(value),)
            if getattr(value, "shape", None) != () or not math.isfinite(value):
                return None
            value = float(value)
        if not math.isfinite(value):
            return None
        if not self.gradient:
            return (value,)
        adjoints = self._back(out)
        grads = {}
        for name, node in self.graph.inputs.items():
            grads[name] = _own(adjoints.get(node), inputs[name])
            if not np.isfinite(grads[name]).all():
                return None
        return value, grads

    def _step(self, block: _Block, values: list):
        key = tuple(np.shape(v) for v in values)
        step = block.compiled.get((key, self.gradient))
        if step is None:
            step = _Step(
                block, self.graph, dict(zip(_names(block), key)), self.tensor, self.gradient
            )
            block.compiled[(key, self.gradient)] = step
        return step

    def _once(self, block: _Block) -> list:
        values = [self.env[a] for a in block.reads]
        step = self._step(block, values)
        saved = step.forward(self.watched.append, *values)
        self.env.update(zip(block.results, saved))
        return [(step, saved)]

    def _loop(self, block: _Block) -> list:
        n = self._trips(block)
        if n == 0:
            raise _NotAScan("a loop of no steps")  # its names then keep their values before
        env, w = self.env, self.watched.append
        reads = [env[a] for a in block.reads]
        carried = [env[before] for _, before in block.carried]
        rows = [_rows(env[a], items, block.loop.var, n) for _, a, items in block.rows]
        k, var = len(carried), block.var
        tape: list = []
        t, step = 0, None
        while t < n:  # until the carried values keep their shapes: one step function after
            extra = [row(t) for row in rows] + ([float(t)] if var else [])
            step = self._step(block, [*reads, *carried, *extra])
            saved = step.forward(w, *reads, *carried, *extra)
            tape.append((step, saved))
            t += 1
            new = saved[:k]
            same = all(np.shape(a) == np.shape(b) for a, b in zip(new, carried))
            carried = list(new)
            if same:
                break
        assert step is not None
        forward = step.forward
        for s in range(t, n):
            extra = [row(s) for row in rows] + ([float(s)] if var else [])
            saved = forward(w, *reads, *carried, *extra)
            tape.append((step, saved))
            carried = saved[:k]
        last = tape[-1][1]
        env.update(zip(block.results, last[k : k + len(block.results)]))
        return tape

    def _trips(self, block: _Block) -> int:
        from .control import Tracer

        loop = block.loop
        tracer = Tracer.__new__(Tracer)
        tracer.static, tracer.inputs, tracer.values = self.graph, {}, self.env
        tracer.guards, tracer.notes, tracer.steps, tracer.total_steps = [], [], {}, 0
        text = self.graph.source.text
        header = " ".join(text[loop.start : loop.end].rstrip(":").split())
        bound, node = loop.count
        return tracer.trip_count(self.graph, bound, node, text, header, (loop.start, loop.end))

    def _back(self, out: int) -> dict:
        adj: dict[int, object] = {out: 1.0}
        w = self.watched.append
        for block, tape in zip(reversed(self.cut), reversed(self.tapes)):
            if block.loop is None:
                step, saved = tape[0]
                cts = [adj.pop(r, None) for r in block.results]
                cts = [_zero(saved[i]) if c is None else c for i, c in enumerate(cts)]
                grads = step.backward(w, *cts, saved)
                for a, g in zip(block.reads, grads):
                    _add(adj, a, g)
            else:
                self._back_loop(block, tape, adj)
        if self.watched and not _finite_all(self.watched):
            raise _NotAScan("a value on the way back is not finite")
        return adj

    def _back_loop(self, block: _Block, tape: list, adj: dict) -> None:
        k, r = len(block.carried), len(block.reads)
        step, last = tape[-1]
        srcs = [src for src, _ in block.carried]
        # The last step: the carried values' cotangents are those of the code after the loop
        # (what it reads of them); the other results' are given to its own variant.
        cts = [_zero(last[i]) for i in range(k)]
        for i, src in enumerate(srcs):
            if src in adj and src in block.results:
                cts[i] = adj.pop(src)
        others = [block.results[i - k] for i in step.extra]
        given = [adj.pop(res, None) for res in others]
        given = [_zero(last[i]) if c is None else c for i, c in zip(step.extra, given)]
        acc: dict[int, object] = {}
        rows = [(a, _rows(None, items, block.loop.var, len(tape))) for _, a, items in block.rows]
        row_grads: list = [None] * len(rows)
        w = self.watched.append
        n = len(tape)
        for t in range(n - 1, -1, -1):
            step, saved = tape[t]
            if t == n - 1:
                grads = step.last(w, *cts, *given, saved)
            else:
                grads = step.backward(w, *cts, saved)
            for i in range(r):
                _add(acc, i, grads[i])
            cts = list(grads[r : r + k])
            for m, (a, at) in enumerate(rows):
                if row_grads[m] is None:
                    row_grads[m] = np.zeros(np.shape(self.env[a]))
                row_grads[m][at(t)] += grads[r + k + m]
        for i, a in enumerate(block.reads):
            if i in acc:
                _add(adj, a, acc[i])
        for (_, before), g in zip(block.carried, cts):
            _add(adj, before, g)
        for (a, _), g in zip(rows, row_grads):
            _add(adj, a, g)


def _names(block: _Block) -> list[str]:
    """The step graph's input names, in order (see :func:`_step_graph`)."""
    names = [f"e{a}" for a in block.reads] + [f"c{k}" for k in range(len(block.carried))]
    names += [f"s{m}" for m in range(len(block.rows))]
    return names + (["t"] if block.var else [])


def _rows(sequence, items: tuple, var: str, n: int):
    """``t -> sequence[items with t for var]`` (the index alone without a sequence), checked
    at the first and the last step: an index past the end is the graph that runs' to say."""
    if items == (var,):
        if sequence is None:
            return lambda t: t
        if len(sequence) < n or sequence.ndim < 1:
            raise _NotAScan("past the end")
        return sequence.__getitem__

    def at(t: int) -> tuple:
        return tuple(t if item == var else item for item in items)

    if sequence is None:
        return at
    sequence[at(0)], sequence[at(n - 1)]  # noqa: B018 - raises IndexError past the end
    return lambda t: sequence[at(t)]


def _zero(like):
    return 0.0 if like.__class__ is float or not np.shape(like) else np.zeros(np.shape(like))


def _add(into: dict, key, g) -> None:
    """``into[key] += g``, in place on an array of ours (the first one is copied)."""
    cur = into.get(key)
    if cur is None:
        into[key] = g.copy() if g.__class__ is np.ndarray else g
    elif cur.__class__ is np.ndarray and g.__class__ is np.ndarray and cur.shape == g.shape:
        cur += g
    else:
        into[key] = cur + g


def _own(g, value):
    """The gradient of an input of ``value``'s shape (zeros where nothing reached it), a
    float for a number."""
    shape = np.shape(value)
    if g is None:
        return 0.0 if not shape else np.zeros(shape)
    if np.shape(g) != shape:
        g = np.broadcast_to(g, shape).copy()
    return float(g) if not shape else g


def _finite_all(values: list) -> bool:
    """Whether every value handed to ``_w`` is finite: one array of them all when they have
    one shape (a loop's steps), else one of their elements."""
    try:
        return bool(np.isfinite(np.array(values, dtype=float)).all())
    except ValueError:  # shapes that differ
        return bool(np.isfinite(np.concatenate([np.asarray(v).ravel() for v in values])).all())
