"""How a compiled NumPy module takes a leading batch axis (rows of data), and what its rows
mode watches: the helpers :mod:`cgraph_cli.run.compile` writes into a module, and the facts
about ops and graphs it decides by.

Rows of numbers broadcast through the code of a program whose ops are all elementwise
(:func:`elementwise`); rows of tensors go one at a time (``_per_row``). In rows mode a module
adds to a running sum every argument of an op that can turn a value that is not finite into a
finite one (:func:`absorbs`), and every value no result reads (:func:`unread`), so that a row
is flagged wherever the interpreter would stop.

>>> from cgraph_cli import parse
>>> elementwise(parse("y = tanh(x) * 2"), {}), elementwise(parse("y = sum(x)"), {})
(True, False)
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..core.ir import MASK, Graph
from ..core.ops import CONST

# How a NumPy module takes a leading batch axis: rows of numbers broadcast through the code of
# an elementwise program; rows of tensors go one at a time.
ROWS = [
    "def _rows(*values):",
    '    """The shape of a batch of rows: () for one row (every input a number)."""',
    "    shapes = {v.shape for v in values if v.__class__ is np.ndarray}",
    "    if len(shapes) == 1:  # every column of the rows' length (broadcast_shapes: 20 us)",
    "        return shapes.pop()",
    "    return np.broadcast_shapes(*shapes) if shapes else ()",
    "",
    "",
]
#: How a rows module of numbers keeps a watched value (see :data:`WATCHED`).
SEEN = [
    "def _seen(v):",
    '    """A watched value as the engine checks it: its sum of squares when finite (so is',
    "    every row's value; BLAS's dot takes a third of a sum's time), else a copy of it, for",
    '    the engine to look at each row (as where a value is over 1e154: slower, as right)."""',
    "    if v.__class__ is not np.ndarray:",
    "        return v",
    "    total = np.vdot(v, v)",
    "    return total if total - total == 0.0 else v.copy()",
    "",
    "",
]
PER_ROW = [
    "def _per_row(fn, inputs):",
    '    """fn on each row of the inputs that carry a leading batch axis (one more than',
    '    SHAPES says), the others shared by every row; its results stacked row by row."""',
    "    batched = {k: v for k, v in inputs.items() if np.ndim(v) > len(SHAPES[k])}",
    "    sizes = sorted({len(v) for v in batched.values()})",
    "    if len(sizes) != 1 or sizes[0] == 0:",
    "        raise ValueError(f'inputs with a batch axis of {sizes} rows: one number > 0 needed')",
    "    return _stack([fn(**{**inputs, **{k: v[r] for k, v in batched.items()}}) for r in range(sizes[0])])",
    "",
    "",
    "def _other_shapes(inputs):",
    '    """Refuse an input of another shape than the module was compiled for (its sizes are',
    '    folded into the code: it would compute something else)."""',
    "    for k, v in inputs.items():",
    "        if np.shape(v) != SHAPES[k]:",
    "            raise ValueError(",
    "                f'input {k} has shape {np.shape(v)}, but this module was compiled for '",
    "                f'{SHAPES[k]}: compile it again with bindings of that shape'",
    "            )",
    "",
    "",
    "def _stack(results):",
    '    """Results of the same structure (dicts, tuples, values) as one, row by row."""',
    "    first = results[0]",
    "    if isinstance(first, dict):",
    "        return {k: _stack([r[k] for r in results]) for k in first}",
    "    if isinstance(first, tuple):",
    "        return tuple(_stack(list(column)) for column in zip(*results))",
    "    return np.array(results, dtype=float)",
    "",
    "",
]


#: Ops whose NumPy rule may round otherwise than the float rule the interpreter applies to
#: numbers (NumPy's own exp, log, sin... are not libm's; softplus has another formula).
INEXACT = frozenset(
    {"pow", "sin", "cos", "tan", "exp", "log", "tanh", "sigmoid", "softplus", "xlogy"}
)
#: Ops whose value jumps: an argument one ulp away may change it (a comparison, a truth value).
_JUMPS = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or"})
_JUMPS |= {"logical_not", "sign"}


def decisive(graph: Graph) -> set[int]:
    """The nodes of :data:`INEXACT` ops whose value reaches an op that jumps (or the
    condition of ``where``): a module computes them by the interpreter's float rule, so that
    ``exp(x) > c`` is decided as ``eval`` decides it, not one ulp away.

    >>> from cgraph_cli import parse
    >>> sorted(decisive(parse("y = exp(x) > 2; z = exp(x) * 2")))
    [1]
    """
    need = [False] * len(graph.ops)
    for i, op in enumerate(graph.ops):
        if op.name in _JUMPS:
            for a in graph.args[i]:
                need[a] = True
        elif op.name == "where" and graph.params.get(i) != MASK:  # (a mask: see body)
            need[graph.args[i][0]] = True
    for i in range(len(graph.ops) - 1, -1, -1):
        if need[i]:
            for a in graph.args[i]:
                need[a] = True
    return {i for i, op in enumerate(graph.ops) if need[i] and op.name in INEXACT}


def absorbs(op) -> bool:
    """Whether ``op`` can turn a value that is not finite into a finite one (``1 / inf``,
    ``tanh(inf)``, ``inf > 0``): derived from its array rule over infinities, nan and a few
    numbers, and of every op that is not elementwise but those known to pass one on. The rows mode watches such an
    op's arguments, so that a row is flagged wherever the interpreter would stop.

    >>> from cgraph_cli.core.ops import OPS
    >>> absorbs(OPS["tanh"]), absorbs(OPS["add"]), absorbs(OPS["log"])
    (True, False, False)
    """
    found = _ABSORBS.get(op.name)
    if found is None:
        if op.elementwise:
            found = _finite_from_special(op)
        else:
            found = op.name not in _PROPAGATE
        _ABSORBS[op.name] = found
    return found


_ABSORBS: dict[str, bool] = {}
#: Ops that are not elementwise but give a value that is not finite wherever an argument
#: holds one (a sum, a product of matrices: inf * 0 is nan), so nothing need watch them; the
#: others (an index, a minimum, softmax of -inf) may hide one.
_PROPAGATE = frozenset({"matmul", "mean", "outer", "reshape", "sum", "sum_to", "transpose"})


def _finite_from_special(op) -> bool:
    from itertools import product

    from ..core.interpret import value_function

    values = [math.inf, -math.inf, math.nan, 0.0, 1.0, -1.0, 2.0, 0.5]
    if op.py is not None:  # its float rule, which a program of numbers runs: no NumPy
        fn = value_function(op, "py")
        for args in product(values, repeat=op.arity):
            if not all(map(math.isfinite, args)):
                try:
                    if math.isfinite(fn(*args)):
                        return True
                except (ArithmeticError, ValueError):
                    continue  # an error: no finite value from it
        return False
    from ..core.arrays import np

    fn = value_function(op, "np")
    with np.errstate(all="ignore"):
        for args in product(values, repeat=op.arity):
            if not all(map(math.isfinite, args)):
                if np.all(np.isfinite(fn(*map(np.float64, args)))):
                    return True
    return False


def elementwise(graph: Graph, known: Mapping) -> bool:
    """Every op of ``graph`` elementwise, every constant and input shape a number."""
    return (
        all(op.py is not None for op in graph.ops if op.arity)
        and all(v.__class__ is float for v in graph.consts.values())
        and all(known.get(n, ()) == () for n in graph.inputs)
    )


def uncovered(graph: Graph, results: Mapping[str, int]) -> list[str]:
    """The keys of ``results`` (nodes a function of a rows module gives back) that the engine
    must check for values that are not finite: an operation's or an input's that no op of
    ``graph`` passes on (one that does not :func:`absorb <absorbs>`). A value such an op
    reads shows in the op's value, which is checked in turn (given back, or watched, or
    passed on again), so that checking it too would only read it once more.

    A value of an op that is :attr:`~cgraph_cli.core.ops.OpSpec.finite` and absorbs (``o =
    tanh(n)``) is finite wherever its arguments are, and those are watched: it is not
    checked either.

    >>> from cgraph_cli import parse
    >>> g = parse("n = x * w; o = tanh(n); p = o * 2; q = (x + 1) ^ 2; r = 1 / x")
    >>> uncovered(g, g.named_nodes())
    ['n', 'p', 'q', 'r']
    >>> uncovered(g, {"o": g.names["o"]})
    []
    """
    passed: set[int] = set()
    sure: set[int] = set()  # finite wherever its arguments are, all of them watched
    for i, op in enumerate(graph.ops):
        if op.arity and not absorbs(op):
            passed.update(graph.args[i])
        elif op.arity:  # the base of a positive power: passed on too
            hides = hidden(graph, i)
            passed.update(a for a in graph.args[i] if a not in hides)
            if op.finite and graph.params.get(i) is None:  # (not a conditional's branches)
                sure.add(i)
    return [k for k, i in results.items() if i not in passed and i not in sure]


def unread_inputs(graph: Graph, names) -> list[str]:
    """The inputs among ``names`` that no operation of ``graph`` reads (or that it lacks).
    Every other input reaches a value the rows mode checks (an op that passes a value that
    is not finite on makes one, an op that may hide it has its arguments watched), so that
    only these need a look of their own for a row's input that is not finite.

    >>> from cgraph_cli import parse
    >>> unread_inputs(parse("input w = 1; y = x * 2"), ["x", "w", "z"])
    ['w', 'z']
    """
    read = {a for args in graph.args for a in args}
    return [n for n in names if graph.inputs.get(n) not in read]


def unread(graph: Graph, returned: list[int]) -> set[int]:
    """The operation nodes from which no node of ``returned`` can be reached."""
    live = [False] * len(graph.ops)
    for i in returned:
        live[i] = True
    for i in range(len(graph.ops) - 1, -1, -1):
        if live[i]:
            for a in graph.args[i]:
                live[a] = True
    return {i for i, op in enumerate(graph.ops) if op.arity and not live[i]}


#: The variable a rows module keeps what it watches in: with rows of numbers, a list of the
#: values' sums (each made as soon as the value is, which may be a work array: ``_seen``;
#: the engine checks them after the call, see ``engine._sound``); with rows of tensors, a
#: running sum per row (non-finite where some value was).
WATCHED = {True: "_watch", False: "_acc"}


def watch_line(var: str, vector: bool) -> str:
    """The line that watches variable ``var``: its sum kept for the engine's check (rows of
    numbers: one read of it, nothing written), or added to the row's running sum (rows of
    tensors)."""
    if vector:
        return f"    _watch.append(_seen({var}))"
    return f"    _acc = _acc + np.sum({var})"


def hidden(graph: Graph, i: int) -> list[int]:
    """The arguments of node ``i`` (an op that :func:`absorbs`) whose value it could hide:
    each once, no constant, and not the base of a positive power (``inf ^ 2`` is inf, ``nan
    ^ 0.5`` nan: the power passes it on).

    >>> from cgraph_cli import parse
    >>> g = parse("y = tanh(x) + (x * 2) ^ 2")
    >>> [hidden(g, i) for i, op in enumerate(g.ops) if op.name in ("tanh", "pow")]
    [[0], []]
    """
    args = graph.args[i]
    exponent = graph.consts.get(args[-1]) if graph.ops[i].name == "pow" else None
    positive = exponent.__class__ is float and exponent > 0.0
    return [
        a
        for a in dict.fromkeys(args)
        if graph.ops[a] is not CONST and not (positive and a == args[0])
    ]


# --- work arrays reused from chunk to chunk ----------------------------------------------------
#: NumPy's ufuncs a template may name (``np.tanh({0})``): each can write into a given array.
_UFUNCS = frozenset(
    {"sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "abs", "sign", "power", "minimum"}
    | {"maximum"}
)
_INFIX = {"+": "add", "-": "subtract", "*": "multiply", "/": "true_divide"}
_SLOT = r"\{\d\}"
_LITERAL = r"-?\d+\.\d*(?:e[-+]?\d+)?"
#: Templates whose result is always a new array, never a view of an argument.
_FRESH = ("np.where(", "np.asarray(", "rt.np_", "_exact(", "(")


def ufunc_form(template: str) -> tuple[str, list[str]] | None:
    """``template`` as one NumPy ufunc and its arguments (slots ``{k}`` or number literals),
    which can then write into a work array; None for any other template.

    >>> ufunc_form("{0} * {1}"), ufunc_form("np.maximum({0}, 0.0)"), ufunc_form("-{0}")
    (('multiply', ['{0}', '{1}']), ('maximum', ['{0}', '0.0']), ('negative', ['{0}']))
    >>> ufunc_form("np.where({0}, {1}, {2})") is None, ufunc_form("{0}") is None
    (True, True)
    """
    import re

    found = re.fullmatch(rf"({_SLOT}|{_LITERAL}) ([-+*/]) ({_SLOT}|{_LITERAL})", template)
    if found:
        return _INFIX[found[2]], [found[1], found[3]]
    if re.fullmatch(rf"-{_SLOT}", template):
        return "negative", [template[1:]]
    found = re.fullmatch(r"np\.(\w+)\((.*)\)", template)
    if found and found[1] in _UFUNCS:
        args = found[2].split(", ")
        if all(re.fullmatch(f"{_SLOT}|{_LITERAL}", a) for a in args):
            return found[1], args
    return None


def work_arrays(graph: Graph, templates: dict[int, str], private: set[int]) -> set[int]:
    """The nodes whose values a rows module computes into work arrays kept from call to call
    (``out=``): a ufunc's (:func:`ufunc_form`), ``private`` (neither returned, nor watched,
    nor read by gradcheck's kinks), and read only by ops whose results are new arrays (never
    a view of it, as ``stop_gradient``'s ``{0}`` is), so that no value outlives its array."""
    fresh = {
        i
        for i, t in templates.items()
        if ufunc_form(t) is not None or (t.startswith(_FRESH) and t != "({0})")
    }
    readers_fresh = [True] * len(graph.ops)
    for i, args in enumerate(graph.args):
        if args and i not in fresh:
            for a in args:
                readers_fresh[a] = False
    return {
        i
        for i, t in templates.items()
        if i in private and readers_fresh[i] and ufunc_form(t) is not None
    }


def private_nodes(graph: Graph, escapes: set[int]) -> tuple[list[int], set[int]]:
    """For rows of numbers: each node's last reader, where only ``escapes`` (the nodes a
    function gives back) and the inputs live to the end, and the nodes no one else sees
    (not given back; a watched one is looked at as soon as it is made, by ``_seen``)."""
    from ..core.walks import last_readers

    end = len(graph.ops)
    last = last_readers(graph)
    for node in (*escapes, *graph.inputs.values()):
        last[node] = end
    return last, {i for i in range(end) if i not in escapes}


def into_work_array(
    graph: Graph, i: int, template: str, var: str, names: list[str], result: str | None = None
) -> str:
    """Node ``i`` (its ``template`` a :func:`ufunc_form`) as its ufunc writing into the work
    array of variable ``var`` when a value per row: ``np.add(a, b, out=_out('t', a, b))``
    (``names``: each node's variable, or a constant's literal); with ``result`` (the key a
    function gives the node's value back under), into the array the caller gave for it, if
    any: ``np.tanh(n, out=_dest(_into, rows, 'o', n))`` (see :data:`DEST`)."""
    form = ufunc_form(template)
    assert form is not None
    ufunc, parts = form
    slots = {p: graph.args[i][int(p[1:-1])] for p in parts if p.startswith("{")}
    args = [names[slots[p]] if p in slots else p for p in parts]
    rows = [names[a] for a in dict.fromkeys(slots.values()) if graph.ops[a] is not CONST]
    if result is not None:
        return f"np.{ufunc}({', '.join(args)}, out=_dest(_into, rows, {', '.join([repr(result), *rows])}))"
    return f"np.{ufunc}({', '.join(args)}, out=_out({', '.join([repr(var), *rows])}))"


#: The helper through which a rows module of numbers writes a result into an array its
#: caller gives (``forward(into, **inputs)``: cgraph's rows mode hands it the part of the
#: large column the chunk's rows are kept in), so that it is not made, then copied there.
DEST = [
    "def _dest(into, rows, key, *args):",
    '    """The array the caller gave for the result key, when the value is one per row (an',
    '    argument has the rows\' shape) and the array that shape; else None (a new array)."""',
    "    b = into.get(key) if into else None",
    "    if b is not None and b.shape == rows:",
    "        for a in args:",
    "            if a.__class__ is np.ndarray and a.shape == rows:",
    "                return b",
    "    return None",
    "",
    "",
]


#: The helper a rows module with work arrays takes them from: a pool per concurrent call.
WORK = [
    "_POOLS: list = []  # work arrays by variable, one dict per call running at once",
    "",
    "",
    "def _buffers(rows):",
    '    """(out, pool): out(key, *args) is the work array of variable key for a value per row',
    "    (an argument with the rows' shape), else None (a value every row shares: a number);",
    '    the pool goes back to _POOLS when the call is done, for the next chunk."""',
    "    pool = _POOLS.pop() if _POOLS else {}",
    "",
    "    def out(key, *args):",
    "        for a in args:",
    "            if a.__class__ is np.ndarray and a.shape == rows:",
    "                b = pool.get(key)",
    "                if b is not None and b.shape == rows:",
    "                    return b",
    "                if b is not None and b.ndim == len(rows) == 1 and len(b) > rows[0]:",
    "                    return b[: rows[0]]  # a shorter chunk (the last): the first rows",
    "                b = pool[key] = np.empty(rows)",
    "                return b",
    "        return None",
    "",
    "    return out, pool",
    "",
    "",
]
