"""Loops compiled: a program with ``for`` loops as a Python module whose loops are Python
``for`` loops over step functions, forward and, for gradients, back over the saved steps, as
``lax.scan`` does (``cgraph compile`` of such a program, and :mod:`cgraph_cli.run.scan`, which
runs it in process).

The static graph (:class:`~cgraph_cli.core.ir_control.Static`) holds each loop's body once.
The program is cut into blocks, each loop's body one and each stretch of straight-line code
between loops one. Each block becomes a step function of the values it reads (those of earlier
blocks, the values the loop carries, the row of a sequence it reads as ``xs[t]``, the loop's
variable), written by the compiler's emitter, and, for gradients, its vector-Jacobian product:
the derivative program (:func:`~cgraph_cli.passes.grad_graph.grad_graph`) of the sum of the
block's results times their cotangents, cut where it reads values of the forward pass, which
the step returns to be saved. The module's ``_run`` calls them in order: no graph of the run,
no per-node dispatch, the same code at every step.

What a value that is not finite would hide (``tanh(inf)`` is 1), and what nothing reads, is
handed to ``_w`` and checked once a block; a value not finite, a domain left, an index past
the end raise ``DomainError`` naming the block's lines (cgraph's interpreter names the node).

>>> from cgraph_cli import parse
>>> namespace = {}
>>> exec(loop_module(parse("input a = 0.5\\nh = 1\\nfor t in range(3):\\n    h = h * a + t")), namespace)
>>> namespace["grad"](a=0.5)
(2.625, {'a': 1.75})
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Mapping

from ..core import runtime
from ..core.arrays import ShapeMismatch
from ..core.errors import Span, UsageError, visible
from ..core.ir import Graph, resolve_name
from ..core.ir_control import Static
from ..core.ops import CONST
from ..passes.shapes import ShapeError
from .compile import check_target
from .compile_checks import arg_function
from .compile_emit import _Emitter
from .compile_names import _with_callees
from .compile_text import DOMAIN_ERROR
from .scan_steps import Block, Step, blocks, names

#: How many different shapes a loop's carried values may take before they settle.
MAX_VARIANTS = 4


# --- the module ------------------------------------------------------------------------------
def compile_module(graph: Graph, target: str = "python", **options) -> str:
    """A program as a standalone Python module (``cgraph compile``): ``forward`` and ``grad``
    (the output's value and its gradient with respect to each input), checked as the
    interpreter checks, needing no cgraph to run; ``target`` "python" (numbers, ``math``
    only) or "numpy". Straight-line code becomes straight-line code, one line per node
    (:func:`cgraph_cli.run.compile.compile_module`, which documents ``options``: ``of``,
    ``wrt``, ``bindings``, ``name``...); a program with ``for`` loops, Python ``for`` loops
    over step functions compiled from their bodies (:func:`loop_module`).

    >>> from cgraph_cli import parse
    >>> namespace = {}
    >>> exec(compile_module(parse("h = 1\\nfor t in range(3):\\n    h = h * x")), namespace)
    >>> namespace["grad"](x=2.0)
    (8.0, {'x': 12.0})
    """
    from .compile import compile_module as straight

    if target == "js":  # a script for Node and pages: run/compile_js.py
        from .compile_js import js_module

        return js_module(graph, **options)
    if isinstance(graph.control, Static) and graph.control.loops:
        return loop_module(graph, target, **options)
    return straight(graph, target, **options)


def loop_module(
    graph: Graph,
    target: str = "python",
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    bindings: Mapping | None = None,
    gradient: bool = True,
    name: str = "",
) -> str:
    """The module's source (see the module's text) for the shapes ``bindings`` (else the
    defaults) give the inputs: ``forward(**inputs)`` returns the output's value by its name,
    ``grad(**inputs)`` the value and the gradient with respect to each of ``wrt`` (default:
    every input). A program this does not take is a :class:`UsageError` saying why."""
    from ..passes.guards import marked
    from ..passes.optimize import known_shapes

    graph = marked(graph)  # if/else: each branch computed only where it is taken
    out = graph.output if of is None else resolve_name(graph, of)
    cut = blocks(graph, out)
    check_target(target)
    if cut is None:
        loops = sorted(graph.control.loops, key=lambda lp: (not lp.depth, lp.start))
        place = Span(loops[0].start, loops[0].end) if loops else None  # a nested one first
        raise UsageError(
            "compile does not take this program yet: it takes `for` loops one level deep, "
            "whose body reads each value it carries by one name",
            place,
            graph.source,
            hints=[
                "eval, grad, explain, check, gradcheck, diff, hessian, jvp and jacobian run "
                "it, on the graph that runs for the bindings"
            ],
        )
    for b in cut:  # an output inside a loop: a name the loop carries (else h_1, h_2...)
        if b.loop and b.lo <= out < b.hi:
            carried = {n for src, _, n in b.loop.back if src == out}
            if not carried or (of is not None and of not in carried):
                raise UsageError(
                    f"'{of or graph.display_name(out)}' is a value of each step of a loop, "
                    "not one value",
                    hints=["name a value the loop carries, or one after it"],
                )
    for w in wrt or ():
        if w not in graph.inputs:
            raise UsageError(f"'{w}' is not an input: a compiled loop's gradients are the inputs'")
    shapes = known_shapes(graph, bindings or {})
    tensor = target == "numpy"
    if not tensor and works_on_arrays(graph, shapes):
        raise UsageError(
            "this program works on tensors: compile it with --target numpy",
            hints=["cgraph compile PROGRAM --target numpy -o module.py"],
        )
    steps = _plan(graph, cut, shapes, tensor, gradient)
    module = _Module(graph, cut, steps, out, tensor, gradient, of)
    return module.source(list(wrt or graph.inputs), name)


def works_on_arrays(graph: Graph, shapes: Mapping) -> bool:
    """Whether a program runs on arrays, as the interpreter decides: an input with a shape
    (``shapes``, by name), an array constant, or an op with no rule for numbers."""
    return (
        any(shapes.get(n) for n in graph.inputs)
        or any(v.__class__ is not float for v in graph.consts.values())
        or any(op.arity and op.py is None for op in set(graph.ops))
    )


def _plan(graph: Graph, cut: list[Block], shapes: dict, tensor: bool, gradient: bool) -> list:
    """Each block's step functions: one per shape its carried values take, until they keep
    one (``h = 0``, then ``h = h + xs[t]``: a number, then a vector)."""

    env = {node: tuple(shapes.get(name, ())) for name, node in graph.inputs.items()}
    env.update((node, tuple(getattr(v, "shape", ()))) for node, v in graph.consts.items())
    plans = []
    for block in cut:
        try:
            plans.append(_variants(graph, block, env, tensor, gradient))
        except ShapeMismatch as e:
            first = next(j for j in range(block.lo, block.hi) if graph.ops[j].arity)
            raise graph.error(ShapeError, str(e), first) from None
    return plans


def _variants(graph: Graph, block: Block, env: dict, tensor: bool, gradient: bool) -> list:
    """The block's step functions for the shapes ``env`` gives what it reads (and
    ``env`` updated with its results' shapes)."""
    fixed = [env[a] for a in block.reads]
    rows = []
    for _, a, items in block.rows:
        import numpy as np  # (a sequence is an array: programs of numbers have none)

        try:
            rows.append(np.broadcast_to(0.0, env[a])[_index(items, block.loop.var, 0)].shape)
        except IndexError:
            name = graph.display_name(a)
            raise UsageError(
                f"{name}[{block.loop.var}] needs {name}'s shape: bind it or give it a default",
                hints=[f"cgraph compile PROGRAM {name}='[[1, 2], [3, 4]]' --target numpy"],
            ) from None
    carried = [env[before] for _, before in block.carried]
    variants = []
    while True:
        given = [*fixed, *carried, *rows, *([()] if block.var else [])]
        step = Step(block, graph, dict(zip(names(block), given)), tensor, gradient)
        variants.append(step)
        new = step.shapes[: len(carried)]
        if new == carried or block.loop is None:
            break
        if len(variants) == MAX_VARIANTS:
            raise UsageError("a loop's carried values change shape at every step")
        carried = new
    k = len(block.carried)
    env.update(zip(block.results, variants[-1].shapes[k:]))
    return variants


def _index(items: tuple, var: str, at):
    return tuple(at if item == var else item for item in items)


class _Module:
    """Writes the module: its step functions and ``_run``, the driver of the blocks."""

    def __init__(self, graph, cut, steps, out: int, tensor: bool, gradient: bool, of) -> None:
        self.graph, self.cut, self.steps, self.out = graph, cut, steps, out
        self.tensor, self.gradient, self.of = tensor, gradient, of
        self.lines: list[str] = []

    def source(self, wrt: list[str], name: str = "") -> str:
        graph = self.graph
        kind = "numpy" if self.tensor else "python"
        head = [
            f'"""A cgraph program compiled by cgraph (target {kind}): its loops are Python `for`',
            "loops over step functions compiled from their bodies; forward gives the output's",
            "value, grad its gradients too (the loops run back over the saved steps). It needs",
            'no cgraph to run."""',
            "",
            f"# The program{(' ' + visible(' '.join(name.split()))) if name else ''}:",
            *("#     " + visible(line) for line in graph.source.text.strip().splitlines()),
            "",
            "import numpy as np" if self.tensor else "import math",
            "",
            f"INPUTS = {tuple(graph.inputs)!r}",
            f"DEFAULTS = {_Emitter(kind, '')._defaults(graph)}",
            "# The most steps the loops of a call may take in all, and steps times operations",
            "# (None: any number); whether a loop may take no steps.",
            "MAX_STEPS = MAX_NODES = None",
            "NO_STEPS = True",
            *DOMAIN_ERROR,
        ]
        helpers: set[str] = set()
        functions = []
        for k, variants in enumerate(self.steps):
            for v, step in enumerate(variants):
                helpers |= step.helpers
                functions.append(step.forward.replace("\x00", f"_b{k}_f{v}", 1))
                if step.backward is not None:
                    functions.append(step.backward.replace("\x00", f"_b{k}_b{v}", 1))
                if step.last is not step.backward:  # the last step's, given more cotangents
                    functions.append(step.last.replace("\x00", f"_b{k}_l{v}", 1))
                if step.masked is not None:  # run again where the first pass back failed
                    functions.append(step.masked[0].replace("\x00", f"_b{k}_m{v}", 1))
                    if step.last is not step.backward:
                        functions.append(step.masked[1].replace("\x00", f"_b{k}_n{v}", 1))
                elif any(other.masked is not None for other in variants):  # the same again
                    functions.append(f"_b{k}_m{v} = _b{k}_b{v}\n_b{k}_n{v} = _b{k}_l{v}\n\n")
        sources = [inspect.getsource(getattr(runtime, h)) + "\n" for h in _with_callees(helpers)]
        called = sorted(set(re.findall(r"\b_math_(\w+)", "".join(functions))) & set(dir(math)))
        if called:  # math.sin read once, not looked up at every step
            sources.insert(0, "".join(f"_math_{f} = math.{f}\n" for f in called) + "\n")
        out_name = self.of or graph.display_name(self.out)
        api = [
            "def forward(**inputs):",
            '    """The output\'s value, by its name."""',
            f"    return {{{out_name!r}: _run(False, inputs)[0]}}",
            "",
            "",
            "def grad(**inputs):",
            f'    """The value of {visible(out_name)} and its gradient with respect to each input."""',
            *(self._grad() if self.gradient else [
                "    raise TypeError('this module was compiled without its gradient')"]),
            "",
            "",
        ]  # fmt: skip
        return "\n".join(
            [*head, *sources, *functions, *api, *self._run(wrt), *_SUPPORT[self.tensor]]
        )

    def _masks(self) -> bool:
        """Whether some step's pass back masks a contribution (see :func:`_backward`)."""
        return any(step.masked is not None for variants in self.steps for step in variants)

    def _grad(self) -> list[str]:
        """``grad``'s body: the run, and where it fails and a step's pass back masks a
        contribution, the run again with the masks applied (as the interpreter, nothing
        passed back through a node whose gradient is 0): its answer or its error."""
        if not self._masks():
            return ["    return _run(True, inputs)"]
        return [
            "    try:",
            "        return _run(True, inputs)",
            "    except DomainError:",
            "        return _run(True, inputs, True)",
        ]

    def _run(self, wrt: list[str]) -> list[str]:
        graph = self.graph
        lines = [
            "def _run(gradient, inputs, masked=False):",
            "    _expect(inputs)",
            "    inputs = {**DEFAULTS, **inputs}",
        ]
        lines += [f"    n{node} = _arg(inputs[{n!r}], {n!r})" for n, node in graph.inputs.items()]
        used = {a for b in self.cut for a in [*b.reads, *(x for _, x in b.carried)]}
        used.update(a for b in self.cut for _, a, _ in b.rows)
        used.update(b.loop.count[1] for b in self.cut if b.loop and b.loop.count[1] is not None)
        for node in sorted(used | {self.out}):
            if graph.ops[node] is CONST:
                lines.append(f"    n{node} = {self._literal(graph.consts[node])}")
        lines += ["    _seen = []", "    _w = _seen.append", "    _spent = [0, 0]"]
        body: list[str] = []
        for k, block in enumerate(self.cut):
            body += self._forward(k, block)
        plain = "float(value) if np.ndim(value) == 0 else value" if self.tensor else "value"
        body += [
            f"value = n{self.out}",
            f"value = {plain}",
            "_w(value)",
            "_finite(_seen, 'in the output')",
            "if not gradient:",
            "    return value, None",
            *self._scalar(),
        ]
        body += [f"a{n} = None" for n in sorted(self._adjoints())]
        body.append(f"a{self.out} = 1.0")
        for k in range(len(self.cut) - 1, -1, -1):
            body += self._back(k, self.cut[k])
        body.append("_finite(_seen, 'on the way back')")
        grads = ", ".join(f"{n!r}: _like(a{graph.inputs[n]}, n{graph.inputs[n]})" for n in wrt)
        body.append(f"grads = {{{grads}}}")
        body += ["_seen.extend(grads.values())", "_finite(_seen, 'in the gradients')"]
        body.append("return value, grads")
        quiet = "with np.errstate(all='ignore'):" if self.tensor else "if True:"
        return [*lines, f"    {quiet}", *("        " + line for line in body), "", ""]

    def _literal(self, value) -> str:
        return repr(value) if value.__class__ is float else f"np.array({value.tolist()!r})"

    def _scalar(self) -> list[str]:
        return [
            "if np.ndim(value) != 0:" if self.tensor else "if False:",
            "    raise TypeError('the output is a tensor: a gradient is of one number')",
            "value = float(value)",
            "if value - value != 0.0:",
            "    raise DomainError('the output is not finite')",
        ]

    def _adjoints(self) -> set[int]:
        nodes = {self.out}
        for b in self.cut:
            nodes.update(b.reads)
            nodes.update(b.results)
            nodes.update(x for _, x in b.carried)
            nodes.update(a for _, a, _ in b.rows)
        return nodes | set(self.graph.inputs.values())

    def _where(self, block: Block) -> str:
        text = self.graph.source.text
        first = text.count("\n", 0, self.graph.starts[block.lo]) + 1 if block.hi > block.lo else 0
        if block.loop is not None:
            header = " ".join(text[block.loop.start : block.loop.end].rstrip(":").split())
            return f"in `{visible(header)}` (line {first})"
        return f"at line {first}"

    def _call(self, k: int, block: Block, kind: str, variants: int) -> str:
        """The step function of block ``k`` of ``kind`` (``f`` forward, ``b`` back, ``l`` the
        last step back) for the step ``_i`` (one per variant); back, where a step masks a
        contribution, the masked one when the run goes again (``masked``)."""
        fast = self._named(k, kind, variants)
        if kind in ("b", "l") and any(step.masked is not None for step in self.steps[k]):
            again = self._named(k, {"b": "m", "l": "n"}[kind], variants)
            return f"({again} if masked else {fast})"
        return fast

    @staticmethod
    def _named(k: int, kind: str, variants: int) -> str:
        if variants == 1:
            return f"_b{k}_{kind}0"
        return (
            f"(_b{k}_{kind}0, "
            + ", ".join(f"_b{k}_{kind}{v}" for v in range(1, variants))
            + f")[min(_i, {variants - 1})]"
        )

    def _row(self, block: Block, a: int, items: tuple) -> str:
        if items == (block.loop.var,):
            return f"n{a}[_i]"
        parts = ["_i" if item == block.loop.var else repr(item) for item in items]
        return f"n{a}[({', '.join(parts)},)]"

    def _forward(self, k: int, block: Block) -> list[str]:
        variants = len(self.steps[k])
        reads = [f"n{a}" for a in block.reads]
        where = self._where(block)
        if block.loop is None:
            lines = [f"_s{k} = _b{k}_f0({', '.join(['_w', *reads])})"]
            lines += [f"n{r} = _s{k}[{i}]" for i, r in enumerate(block.results)]
            return [*_guarded(lines, where), f"_finite(_seen, {where!r})"]
        kc = len(block.carried)
        carried = [f"c{k}_{i}" for i in range(kc)]
        args = [*reads, *carried, *(self._row(block, a, it) for _, a, it in block.rows)]
        args += ["float(_i)"] if block.var else []
        lines = [f"_n{k} = {self._count(block)}"]
        lines += [f"{c} = n{before}" for c, (_, before) in zip(carried, block.carried)]
        lines += [f"_t{k} = []" if self.gradient else "pass"]
        lines += [
            f"for _i in range(_n{k}):",
            f"    _s = {self._call(k, block, 'f', variants)}(_w, {', '.join(args)})",
            *([f"    _t{k}.append(_s)"] if self.gradient else []),
            *([f"    {', '.join(carried)}, = _s[:{kc}]"] if kc else []),
        ]
        position = {src: i for i, (src, _) in enumerate(block.carried)}
        if any(r not in position for r in block.results):
            lines.append(f"if _n{k} == 0:")
            lines.append(f"    raise DomainError('the loop ran no steps ' + {where!r})")
        for i, r in enumerate(block.results):
            lines.append(
                f"n{r} = {carried[position[r]]}" if r in position else f"n{r} = _s[{kc + i}]"
            )
        return [*_guarded(lines, where), f"_finite(_seen, {where!r})"]

    def _count(self, block: Block) -> str:
        bound, node = block.loop.count
        size = block.hi - block.lo  # operations a step adds to the graph that runs
        if isinstance(bound, int):
            return f"_most({bound}, {size}, _spent)"
        axis = None if bound[0] == "value" else bound[2]
        return f"_most(_count(n{node}, {axis!r}), {size}, _spent)"

    def _back(self, k: int, block: Block) -> list[str]:
        if block.loop is None:
            cts = [f"_ct(a{r}, n{r})" for r in block.results]
            lines = [f"_g = {self._call(k, block, 'b', 1)}(_w, {', '.join([*cts, f'_s{k}'])})"]
            return lines + [f"a{a} = _add(a{a}, _g[{i}])" for i, a in enumerate(block.reads)]
        variants = len(self.steps[k])
        kc, r = len(block.carried), len(block.reads)
        srcs = [s for s, _ in block.carried]
        results = set(block.results)
        cts = [f"_c{i}" for i in range(kc)]
        lines = [
            f"{c} = _ct(a{s}, c{k}_{i})" if s in results else f"{c} = _zero(c{k}_{i})"
            for i, (c, s) in enumerate(zip(cts, srcs))
        ]
        carried = set(srcs)
        extra = [res for res in block.results if res not in carried]
        given = [f"_ct(a{res}, n{res})" for res in extra]
        lines += [f"_r{i} = None" for i in range(r)]
        lines += [f"_q{m} = np.zeros(np.shape(n{a}))" for m, (_, a, _) in enumerate(block.rows)]
        step = [f"    _s = _t{k}[_i]"]
        back = self._call(k, block, "b", variants)
        if extra:
            last = self._call(k, block, "l", variants)
            step += [
                f"    if _i == _n{k} - 1:",
                f"        _g = {last}(_w, {', '.join([*cts, *given, '_s'])})",
                "    else:",
                f"        _g = {back}(_w, {', '.join([*cts, '_s'])})",
            ]
        else:
            step.append(f"    _g = {back}(_w, {', '.join([*cts, '_s'])})")
        step += [f"    _r{i} = _add(_r{i}, _g[{i}])" for i in range(r)]
        if kc:
            step.append(f"    {', '.join(cts)}, = _g[{r}:{r + kc}]")
        for m, (_, a, items) in enumerate(block.rows):
            at = self._row(block, a, items).replace(f"n{a}", f"_q{m}", 1)
            step.append(f"    {at} += _g[{r + kc + m}]")
        lines += [f"for _i in range(_n{k} - 1, -1, -1):", *step]
        lines += [f"a{a} = _add(a{a}, _r{i})" for i, a in enumerate(block.reads)]
        lines += [f"a{b} = _add(a{b}, {c})" for c, (_, b) in zip(cts, block.carried)]
        lines += [f"a{a} = _add(a{a}, _q{m})" for m, (_, a, _) in enumerate(block.rows)]
        return _guarded(lines, self._where(block))


def _guarded(lines: list[str], where: str) -> list[str]:
    """``lines`` raising DomainError, naming ``where``, for what they cannot compute."""
    return [
        "try:",
        *("    " + line for line in lines),
        "except (ArithmeticError, ValueError, IndexError) as e:",
        f"    raise DomainError(str(e) + ' ' + {where!r}) from None",
    ]


_COMMON = """
def _expect(given):
    unknown = [n for n in given if n not in INPUTS]
    missing = [n for n in INPUTS if n not in given and n not in DEFAULTS]
    if missing or unknown:
        raise TypeError(f'missing inputs {missing}, unknown inputs {unknown}')


def _add(cur, g):
    \"\"\"cur + g, in place on an array of ours (the first one copied).\"\"\"
    if cur is None:
        return g.copy() if hasattr(g, 'copy') else g
    if hasattr(cur, 'shape') and hasattr(g, 'shape') and cur.shape == g.shape and cur.shape:
        cur += g
        return cur
    return cur + g


def _ct(a, like):
    return _zero(like) if a is None else a


def _most(n, size, spent):
    \"\"\"n steps of a loop of size operations, counted against MAX_STEPS and MAX_NODES.\"\"\"
    spent[0] += n
    spent[1] += n * size
    if MAX_STEPS is not None and (spent[0] > MAX_STEPS or spent[1] > MAX_NODES):
        raise DomainError(f'the loops take {spent[0]} steps: more than this module runs')
    if n == 0 and not NO_STEPS:
        raise DomainError('a loop of no steps')
    return n
"""

_SUPPORT = {
    True: [
        _COMMON,
        "\n" + "\n".join(arg_function(True)),
        '''

def _zero(like):
    return np.zeros(np.shape(like)) if np.ndim(like) else 0.0


def _like(g, x):
    """The gradient g with the shape of its input x."""
    if g is None:
        return _zero(x)
    if np.shape(g) != np.shape(x):
        g = np.broadcast_to(g, np.shape(x)).copy()
    return float(g) if np.ndim(g) == 0 else g


def _count(value, axis):
    """A loop's number of steps: a whole number, or the length of an axis of value."""
    if axis is None:
        if np.ndim(value) or float(value) != int(value) or value < 0:
            raise DomainError(f"a loop's number of steps is a whole number, got {value}")
        return int(value)
    return np.shape(value)[axis]


def _finite(seen, where):
    """Raise DomainError if a value handed to _w is not finite."""
    if seen:
        try:
            ok = np.isfinite(np.array(seen, dtype=float)).all()
        except ValueError:
            ok = np.isfinite(np.concatenate([np.ravel(v) for v in seen])).all()
        if not ok:
            raise DomainError(f'a value is not finite {where}')
        seen.clear()
''',
    ],
    False: [
        _COMMON,
        "\n" + "\n".join(arg_function(False)),
        '''

def _zero(like):
    return 0.0


def _like(g, x):
    return 0.0 if g is None else float(g)


def _count(value, axis):
    """A loop's number of steps: a whole number (a number has no axis to measure)."""
    if axis is not None:
        raise DomainError(f'a number has no axis {axis} to measure')
    if value != int(value) or value < 0:
        raise DomainError(f"a loop's number of steps is a whole number, got {value}")
    return int(value)


def _finite(seen, where):
    """Raise DomainError if a value handed to _w is not finite."""
    for v in seen:
        if v - v != 0.0:
            raise DomainError(f'a value is not finite {where}')
    seen.clear()
''',
    ],
}
