"""A loop program's blocks and their step functions, for :mod:`cgraph_cli.run.scan_code`.

The static graph (:class:`~cgraph_cli.core.ir_control.Static`) holds each loop's body once.
:func:`blocks` cuts the program into blocks, each loop's body one and each stretch of
straight-line code between loops one, and finds what each reads: values of earlier blocks
(and the inputs), the values a loop carries from step to step, the rows ``xs[t]`` of a
sequence, the loop's variable. :class:`Step` writes a block, for given shapes of what it
reads, as the source of a step function (the compiler's emitter, one line per node) and, for
gradients, of its vector-Jacobian product: the derivative program
(:func:`~cgraph_cli.passes.grad_graph.grad_graph`) of the sum of the block's results times
their cotangents, cut where it reads values of the forward pass, which the step returns to be
saved.
"""

from __future__ import annotations

import re

from ..core.ir import IF, MASK, Graph, GraphBuilder
from ..core.ir_control import Static
from ..core.ops import CONST, INPUT, OPS
from .compile_emit import _Emitter
from .compile_names import input_variables


class Block:
    """Nodes ``lo`` to ``hi`` of the static graph: a loop's body (``loop``) or straight-line
    code run once. ``reads``: the nodes of earlier blocks it reads (and the program's inputs);
    ``carried``: a loop's back edges ``(its last node of a name, the node before the loop)``;
    ``rows``: its ``xs[t]`` nodes ``(node, sequence node, index items)``; ``var``: whether the
    body reads the loop's variable as a number; ``results``: its nodes that later blocks read
    (and the output), after a loop those of its last step."""

    __slots__ = ("lo", "hi", "loop", "reads", "carried", "rows", "var", "results")

    def __init__(self, lo: int, hi: int, loop) -> None:
        self.lo, self.hi, self.loop = lo, hi, loop
        self.reads: list[int] = []
        self.carried: list[tuple[int, int]] = []
        self.rows: list[tuple[int, int, tuple]] = []
        self.var = False
        self.results: list[int] = []


def blocks(graph: Graph, out: int) -> list[Block] | None:
    """The program cut into blocks (see the module's text), or None where it is not a scan's:
    straight-line code, nested loops, a body that reads a value the static graph
    cannot tell from the one it carries, a body whose ``xs[t]`` indexes its own values."""
    control = graph.control
    if not isinstance(control, Static) or not control.loops:
        return None
    key = f"scan {out}"
    if key in graph.memo:
        return graph.memo[key]
    found = graph.memo[key] = _cut(graph, out, control)
    return found


def _cut(graph: Graph, out: int, control: Static) -> list[Block] | None:
    loops = sorted(control.loops, key=lambda lp: lp.lo)
    if any(lp.depth or lp.aliased or lp.count is None for lp in loops):
        return None
    n = len(graph.ops)
    cut: list[Block] = []
    pos = 0
    for loop in loops:
        if loop.lo > pos:
            cut.append(Block(pos, loop.lo, None))
        cut.append(Block(loop.lo, loop.hi, loop))
        pos = loop.hi
    if pos < n:
        cut.append(Block(pos, n, None))
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
        if block.loop is not None and not _loop_reads(graph, block, out):
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


def _loop_reads(graph: Graph, block: Block, out: int) -> bool:
    """A loop's carried values, its ``xs[t]`` rows and whether it reads its variable; False
    where the body indexes with the variable a value it computes or carries (``h[t]``), and
    where a value carried as another's value at the start of the step (``a = b``) is read
    after the loop (the static graph has one node for both there)."""
    loop = block.loop
    lo = loop.lo
    if graph.ops[lo] is not CONST or graph.labels[lo] != loop.var:
        return False
    block.carried = [(src, before) for src, before, _ in loop.back]
    befores = {before for _, before in block.carried}
    for j in range(lo + 1, block.hi):
        if lo in graph.args[j]:
            block.var = True
        if graph.ops[j].name == "index" and loop.var in graph.params[j][0]:
            (a,) = graph.args[j]
            if (a >= lo and graph.ops[a] is not INPUT) or a in befores:
                return False
            block.rows.append((j, a, graph.params[j][0]))
    early = {src for src, _ in block.carried if src < lo}
    if early and (
        out in early
        or any(a in early for j in range(block.hi, len(graph.ops)) for a in graph.args[j])
    ):
        return False
    return True


class Step:
    """A block compiled for its inputs' shapes (``known``, by the step graph's input names),
    as the source of functions. ``forward(_w, *inputs)`` returns the block's results (a
    loop's carried values first) and then what its backward passes read. With ``gradient``,
    ``backward(_w, *cotangents, saved)`` gives the gradient of each input but the loop's
    variable, in order, from the cotangents of the carried values (a loop's step) or of every
    result (straight-line code); ``last`` (a loop whose later code reads values of its body it
    does not carry), from those of the carried values and then of those others, for the
    loop's last step (else ``last`` is ``backward``). ``_w``: where values to check are
    handed (NumPy), for one check at the end. ``shapes``: the shape of each result;
    ``helpers``: the runtime functions the code calls."""

    __slots__ = ("forward", "backward", "last", "masked", "extra", "shapes", "helpers")

    def __init__(self, block: Block, graph: Graph, known: dict, tensor: bool, gradient: bool):
        step, outs, sizes = _step_graph(block, graph, known)
        k = len(block.carried)
        # The results that are not carried values, by position (the others' cotangents are
        # added to the carried values' at the last step).
        carried = set(outs[:k])
        self.extra = [i for i in range(k, len(outs)) if outs[i] not in carried]
        if block.loop is None:
            variants = [list(range(len(outs)))]
        else:
            variants = [list(range(k))] + ([list(range(k)) + self.extra] if self.extra else [])
        self.shapes = [sizes[o] for o in outs]
        self.backward = self.last = None
        self.masked: tuple[str, str] | None = None
        self.helpers: set[str] = set()
        saved: list[int] = []
        if gradient:
            plans = [_derive(block, graph, step, outs, v, sizes, known, tensor) for v in variants]
            saved = sorted({i for plan in plans for i in plan[1]})
            made = [
                _backward(plan, saved, len(outs), sizes, tensor, self.helpers) for plan in plans
            ]
            self.backward, self.last = made[0][0], made[-1][0]
            if made[0][1] is not None:  # (NumPy: see _backward)
                self.masked = (made[0][1], made[-1][1] if len(made) > 1 else made[0][1])
        lines, names, helpers, _ = _emit(
            step, known, tensor, [*outs, *saved], watch=outs, optional=set(saved)
        )
        self.helpers |= helpers
        returned = "".join(f"{names[o]}, " for o in [*outs, *saved])
        params = ["_w", *input_variables(step.inputs).values()]
        self.forward = _function(params, lines, f"({returned})")


def _derive(block, graph, step, outs, positions, sizes, known, tensor: bool = False):
    """The derivative program of the sum of the results at ``positions`` times their
    cotangents (``ct0``...): ``(its graph, the step's nodes it reads, {its node: the step's
    node}, its gradients' nodes, how many cotangents)``. Of numbers (not ``tensor``), each
    contribution whose partial may not be finite is computed only where its adjoint is not
    0, as the interpreter passes nothing back through a node whose gradient is 0 (``IF``:
    see :class:`~cgraph_cli.passes.recorder.Recorder`)."""
    from ..passes.grad_graph import grad_graph

    wrt = [n for n in step.inputs if n != "t"]
    shapes = [(outs[p], sizes[outs[p]]) for p in positions]
    if not wrt:  # a block of constants: nothing to pass back
        return None, set(), {}, [], [s for _, s in shapes], []
    full, _, _ = _step_graph(block, graph, known, shapes)
    given = {**known, **{f"ct{k}": s for k, (_, s) in enumerate(shapes)}}
    mask = MASK if tensor else IF
    derived = grad_graph(full, full.output, wrt, given, intermediates=False, mask=mask)
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


def _backward(plan, order: list[int], results: int, sizes, tensor: bool, helpers: set):
    """The vector-Jacobian product of ``plan`` (:func:`_derive`) as a function of the
    cotangents and the forward pass's saved tuple: ``results`` results, then the step's nodes
    ``order``; and, where its derivative program masks a contribution (NumPy), the same
    function with each mask applied (0 where the adjoint is 0: what a module runs again where
    the first pass back met a value that is not finite), else None."""
    d, _, forward, grads, shapes, wrt_shapes = plan
    if d is None:
        params = ["_w", *(f"ct{k}" for k in range(len(shapes))), "saved"]
        return _function(params, [], "()"), None
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
    lines, names, used, masked = _emit(back, known, tensor, returned)
    helpers |= used
    variables = input_variables(back.inputs)
    unpack = ", ".join(
        [f"_o{k}" for k in range(results)]
        + [variables[f"r{j}"] if f"r{j}" in variables else f"_r{j}" for j in order]
    )
    cts = [variables[f"ct{k}"] for k in range(count)]
    head = [f"    {unpack}, = saved"] * bool(unpack)
    result = "".join(
        # a constant (0: no path to the input) given the input's shape
        f"np.full({shape!r}, {names[g]}), "
        if tensor and shape and back.ops[g] is CONST
        else f"{names[g]}, "
        for g, shape in zip(returned, wrt_shapes)
    )
    params = ["_w", *cts, "saved"]
    again = None if masked == lines else _function(params, head + masked, f"({result})")
    return _function(params, head + lines, f"({result})"), again


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


def _step_graph(block: Block, graph: Graph, known: dict, cotangents: list | None = None):
    """The block as a straight-line graph of its inputs (see :class:`Block`; ``known``:
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


def _emit(graph: Graph, known: dict, tensor: bool, returned: list[int], watch=(), optional=()):
    """The lines computing every operation of ``graph`` (the interpreter runs every
    statement), each node's variable, and the helpers they call. A value that could hide one
    not finite (``tanh(inf)`` is 1), that no ``returned`` node reads, or in ``watch`` (the
    step's results, which the next step reads as inputs), is handed to ``_w`` (NumPy: checked
    once a block) or stops the step (numbers). ``optional``: returned values of a branch,
    computed only where it is taken (else None: what the backward pass reads of it there).
    Last, the lines with each masked contribution 0 where its adjoint is (``where`` marked
    :data:`~cgraph_cli.core.ir.MASK`, NumPy), nothing they alone read watched."""
    em = _Emitter("numpy" if tensor else "python", graph.source.text, known if tensor else None)
    em.variables = input_variables(graph.inputs)
    em.optional = set(optional)
    em.checking = "masks"
    lines, names = em.body(graph, keep=set(returned), returned=returned)
    masked = em.checked_lines
    for o in dict.fromkeys(watch):
        if graph.ops[o].arity:  # an operation's: inputs were checked where they were made
            lines.append(em.stop(names[o], ""))
            masked.append(em.stop(names[o], ""))
    if tensor:
        head, tail = em.stop("\x00", "").split("\x00")
        pattern = re.compile("^" + re.escape(head) + r"(\w+)" + re.escape(tail))
        lines = [pattern.sub(r"    _w(\1)", line) for line in lines]
        masked = [pattern.sub(r"    _w(\1)", line) for line in masked]
    return lines, names, em.helpers, masked


def _function(params: list[str], lines: list[str], returned: str) -> str:
    """The source of a function (its name ``\\x00``, filled in by the module) of ``params`` running
    ``lines`` and returning ``returned``."""
    return "\n".join(
        ["def \x00(" + ", ".join(params) + "):", *lines, f"    return {returned}", "", ""]
    )


def names(block: Block) -> list[str]:
    """The step graph's input names, in order (see :func:`_step_graph`)."""
    names = [f"e{a}" for a in block.reads] + [f"c{k}" for k in range(len(block.carried))]
    names += [f"s{m}" for m in range(len(block.rows))]
    return names + (["t"] if block.var else [])
