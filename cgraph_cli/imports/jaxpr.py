"""JAX functions as cgraph programs: ``cgraph import --from jax MODULE:FUNCTION``.

The function is traced by ``jax.make_jaxpr`` on example arrays (in float64), and its jaxpr,
the list of primitive operations JAX records, becomes the text of an ordinary cgraph program:
the function's arguments are the program's inputs (named as its parameters), the arrays it
closes over (the jaxpr's constants) are weights, kept beside the text as the ONNX importer
keeps a model's (a small one, or a number, is written into the text), and its results the
program's outputs, the first one (the loss) its last statement.

Calls JAX records as calls (``jit``, ``custom_jvp_call``, ``custom_vjp_call``: how
``jax.nn.relu``, ``gelu``, ``softmax``, ``logsumexp`` appear) are inlined, their derivatives
then cgraph's of the computation inside (``relu``, recognized, keeps its own); ``lax.scan``
is unrolled, its length being known; what only depends on constants (``iota``, a shape's
arithmetic, ``is_finite``, which holds for every value cgraph computes: it refuses a result
that overflows) is folded while importing. A value used once is written into the expression
that uses it, so that the program reads as a person writes it. A primitive cgraph has no op
for is refused by name (exit 3), with the list of those it imports.

>>> import jax, jax.numpy as jnp  # doctest: +SKIP
>>> closed = jax.make_jaxpr(lambda x, W: jnp.sum(jnp.tanh(x @ W) ** 2))(  # doctest: +SKIP
...     jnp.ones((2, 3)), jnp.ones((3, 4)))
>>> print(import_jaxpr(closed, "loss", ["x", "W"], ["loss"]).text, end="")  # doctest: +SKIP
# Imported from loss (a JAX function, traced): 4 primitives
input x, W
loss = sum(tanh(x @ W) ^ 2)
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..core.errors import UsageError
from .program import INLINE, Imported, Namer, NotSupported, index_text, literal

#: The most statements an import writes (a scan is unrolled: its length times its body's).
STATEMENT_LIMIT = 100_000
#: The longest expression written into another one (a value used once); longer ones keep a
#: statement of their own.
INLINE_CHARS = 72


def import_jaxpr(
    closed,
    filename: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    const_names: Sequence[str | None] = (),
) -> Imported:
    """The program of a ``ClosedJaxpr``: ``inputs``, ``outputs``: the names its arguments and
    results take (made unique and valid in cgraph: ``sum`` becomes ``sum_2``); ``const_names``:
    names for its constants (a weight's, where known: the global the function reads)."""
    return _Translator(filename).read(closed, list(inputs), list(outputs), list(const_names))


_WORD = re.compile(r"[A-Za-z_]\w*")


class _Translator:
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.name = Namer()
        self.lines: list[tuple[str, str]] = []  # (name, expression), in order
        self.weights: dict[str, np.ndarray] = {}
        self.weight_of: dict[int, str] = {}  # id of a constant array -> its weight's name
        self.kept: list[np.ndarray] = []  # the arrays weight_of's ids belong to
        self.counts: dict[str, int] = {}
        self.primitives = 0
        self.slices: dict[str, tuple[str, list]] = {}  # a slice's name -> (of what, its parts)

    # -- the program -----------------------------------------------------------------------
    def read(self, closed, inputs: list[str], outputs: list[str], const_names) -> Imported:
        jaxpr = closed.jaxpr
        if len(inputs) != len(jaxpr.invars):
            raise UsageError(f"{self.filename}: {len(jaxpr.invars)} arguments, {len(inputs)} names")
        names = [self.name(n, "x") for n in inputs]
        env: dict[Any, Any] = dict(zip(jaxpr.invars, names))
        for k, (var, value) in enumerate(zip(jaxpr.constvars, closed.consts)):
            value = np.asarray(value)
            given = const_names[k] if k < len(const_names) else None
            if given and value.size > 1 and value.dtype.kind == "f":  # a global: a weight
                self._weight(value, given)
            env[var] = value
        self._eqns(jaxpr.eqns, env)
        results = [self._read(env, v) for v in jaxpr.outvars]
        out_names = [self.name.fresh(_valid(n)) for n in outputs]
        for name, value in zip(out_names, results):
            self.lines.append((name, self.text(value)))
        body = _tidy(self.lines, {*names, *self.weights}, out_names)
        if out_names and (not body or not body[-1].startswith(f"{out_names[0]} = ")):
            first = [k for k, line in enumerate(body) if line.startswith(f"{out_names[0]} = ")]
            later = body[first[0] + 1 :] if first else []
            if first and not any(out_names[0] in _WORD.findall(line) for line in later):
                body.append(body.pop(first[0]))  # the program's output is its last statement
            else:
                body.append(out_names[0])
        count = self.primitives
        head = [f"# Imported from {self.filename} (a JAX function, traced): {count} primitive"
                f"{'s' * (count != 1)}"
                + (f", weights {', '.join(self.weights)}" if self.weights else "")]  # fmt: skip
        if self.weights:
            head.append("# Bind the weights with --bindings FILE.npz (written by cgraph import -o)")
        decls = [f"input {', '.join(names)}"] if names else []
        if self.weights:
            decls.append("input " + ", ".join(self.weights))
        return Imported(
            text="\n".join([*head, *decls, *body]) + "\n",
            weights=self.weights,
            inputs=names,
            outputs=out_names,
            names=dict(zip(inputs, names)),
        )

    def _weight(self, value: np.ndarray, hint: str) -> str:
        if id(value) in self.weight_of:
            return self.weight_of[id(value)]
        name = self.name.fresh(_valid(hint))
        self.weights[name] = np.asarray(value, dtype=np.float64)
        self.weight_of[id(value)] = name
        self.kept.append(value)
        return name

    def text(self, value) -> str:
        """A value in an expression: its name or expression, or a constant as a number, a
        literal or (a large one) a weight."""
        if isinstance(value, str):
            return value
        value = np.asarray(value)
        if id(value) in self.weight_of:
            return self.weight_of[id(value)]
        if value.dtype.kind not in "fiub":
            raise NotSupported(f"{self.filename}: cannot import a constant of type {value.dtype}")
        if not np.all(np.isfinite(value)):
            raise NotSupported(
                f"{self.filename}: cannot import a constant that is not finite "
                f"({literal_repr(value)}): cgraph's numbers are finite"
            )
        if value.size <= INLINE:
            return literal(value)
        return self._weight(value, "c")

    def emit(self, expr: str, hint: str) -> str:
        k = self.counts[hint] = self.counts.get(hint, 0) + 1
        name = self.name.fresh(f"{hint}{k}")
        self.lines.append((name, expr))
        if len(self.lines) > STATEMENT_LIMIT:
            raise NotSupported(
                f"{self.filename}: the program would hold over {STATEMENT_LIMIT:,} statements "
                "(a scan unrolled over a long sequence)"
            )
        return name

    # -- equations -------------------------------------------------------------------------
    def _read(self, env, atom):
        if hasattr(atom, "val"):  # a literal
            return np.asarray(atom.val)
        return env[atom]

    def _eqns(self, eqns, env) -> None:
        for eqn in eqns:
            args = [self._read(env, v) for v in eqn.invars]
            results = self._eqn(eqn, args)
            if not isinstance(results, list):
                results = [results]
            for var, value in zip(eqn.outvars, results):
                env[var] = value

    def _eqn(self, eqn, args: list) -> Any:
        prim = eqn.primitive.name
        self.primitives += 1
        inner = _INLINED.get(prim)
        if inner is not None:
            return self._call(eqn, args, inner)
        if prim == "scan":
            return self._scan(eqn, args)
        if all(not isinstance(a, str) for a in args) and prim in FOLD:
            try:
                value = FOLD[prim](eqn, *args)
            except (ValueError, TypeError, IndexError, FloatingPointError):
                value = None
            if value is not None:
                return value
        rule = RULES.get(prim)
        if rule is None:
            raise self.unsupported(prim)
        out = rule(self, eqn, *args)
        if isinstance(out, list):
            return [o if not isinstance(o, str) or _WORD.fullmatch(o) else self.emit(o, _hint(prim))
                    for o in out]  # fmt: skip
        if isinstance(out, str) and not _WORD.fullmatch(out):
            return self.emit(out, _hint(prim))
        return out

    def unsupported(self, prim: str, what: str | None = None) -> NotSupported:
        supported = ", ".join(sorted({*RULES, *FOLD, *_INLINED, "scan"}))
        return NotSupported(
            f"{self.filename}: cannot import {what or f'the primitive {prim}'}",
            hints=[f"cgraph imports the JAX primitives {supported}"],
        )

    def _call(self, eqn, args, key: str):
        closed = eqn.params[key]
        jaxpr = getattr(closed, "jaxpr", closed)
        consts = getattr(closed, "consts", [])
        if eqn.primitive.name.startswith("custom_jvp") and _is_relu(jaxpr):
            return self.emit(f"relu({self.text(args[-1])})", "relu")
        env: dict[Any, Any] = {}
        for var, value in zip(jaxpr.constvars, consts):
            env[var] = np.asarray(value)
        for var, value in zip(jaxpr.invars, args[len(args) - len(jaxpr.invars) :]):
            env[var] = value
        self.primitives -= 1  # the call itself: its primitives count
        self._eqns(jaxpr.eqns, env)
        return [self._read(env, v) for v in jaxpr.outvars]

    def _scan(self, eqn, args):
        p = eqn.params
        closed, length = p["jaxpr"], int(p["length"])
        n_consts, n_carry = int(p["num_consts"]), int(p["num_carry"])
        consts, carry, xs = (
            args[:n_consts],
            args[n_consts : n_consts + n_carry],
            args[n_consts + n_carry :],
        )
        jaxpr = closed.jaxpr
        steps = range(length - 1, -1, -1) if p.get("reverse") else range(length)
        ys: list[list] = []
        for t in steps:
            env: dict[Any, Any] = dict(zip(jaxpr.constvars, map(np.asarray, closed.consts)))
            sliced = [x[t] if not isinstance(x, str) else f"{x}[{t}]" for x in xs]
            for var, value in zip(jaxpr.invars, [*consts, *carry, *sliced]):
                env[var] = value
            self._eqns(jaxpr.eqns, env)
            out = [self._read(env, v) for v in jaxpr.outvars]
            carry, ys_t = out[:n_carry], out[n_carry:]
            ys.append(ys_t)
            self.primitives -= 1
        self.primitives += 1
        if p.get("reverse"):
            ys.reverse()
        stacked: list[Any] = []
        for k, var in enumerate(eqn.outvars[n_carry:]):
            shape = list(var.aval.shape)
            column = [step[k] for step in ys]
            if all(not isinstance(v, str) for v in column):
                stacked.append(
                    np.stack([np.asarray(v) for v in column]) if column else np.zeros(shape)
                )
                continue
            terms = [f"place({self.text(v)}, {shape}, {t})" for t, v in enumerate(column)]
            stacked.append(self.emit(" + ".join(terms), "stack"))
        return [*carry, *stacked]


def literal_repr(value: np.ndarray) -> str:
    return np.array2string(np.asarray(value), threshold=6)


def _valid(text: str) -> str:
    text = re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_") or "out"
    return f"v{text}" if text[0].isdigit() else text


_HINTS = {"dot_general": "dot", "broadcast_in_dim": "b", "reduce_sum": "s", "select_n": "w",
          "integer_pow": "pow", "reduce_max": "m", "reduce_min": "m", "logistic": "sigmoid",
          "concatenate": "cat"}  # fmt: skip


def _hint(prim: str) -> str:
    return _HINTS.get(prim, re.sub(r"\W", "_", prim))


def _is_relu(jaxpr) -> bool:
    """Whether a custom_jvp_call's computation is ``max(x, 0)`` (jax.nn.relu, whose
    derivative at 0 is 0, as cgraph's relu)."""
    while len(jaxpr.eqns) == 1 and jaxpr.eqns[0].primitive.name in ("jit", "pjit"):
        jaxpr = jaxpr.eqns[0].params["jaxpr"].jaxpr
    if len(jaxpr.eqns) != 1 or len(jaxpr.invars) != 1:
        return False
    eqn = jaxpr.eqns[0]
    if eqn.primitive.name != "max" or eqn.outvars != jaxpr.outvars:
        return False
    literals = [v for v in eqn.invars if hasattr(v, "val")]
    return (
        len(literals) == 1
        and bool(np.all(np.asarray(literals[0].val) == 0))
        and jaxpr.invars[0] in eqn.invars
    )


# -- reading what remains: values used once written where they are used ---------------------
def _tidy(lines: list[tuple[str, str]], kept: set[str], outputs: list[str]) -> list[str]:
    """The statements the outputs need, a value used once (and short) written into the
    expression that uses it; each statement ``name = expression``."""
    live = set(outputs)
    needed = []
    for name, expr in reversed(lines):
        if name in live:
            needed.append((name, expr))
            live.update(_WORD.findall(expr))
    needed.reverse()
    uses: dict[str, int] = {}
    indexed: set[str] = set()
    for _, expr in needed:
        for m in _WORD.finditer(expr):
            uses[m.group()] = uses.get(m.group(), 0) + 1
            if expr[m.end() : m.end() + 1] == "[":
                indexed.add(m.group())
    pending: dict[str, str] = {}
    out = []
    for name, expr in needed:
        expr = _WORD.sub(lambda m: _substitute(m, pending), expr)
        inline = (
            uses.get(name, 0) == 1
            and name not in kept
            and name not in outputs
            and name not in indexed
            and len(expr) <= INLINE_CHARS
        )
        if inline:
            pending[name] = _unwrap(expr)
        else:
            out.append(f"{name} = {_unwrap(expr)}")
    return out


def _substitute(m: re.Match, pending: dict[str, str]) -> str:
    """A name used once replaced by its expression, in parentheses where the operators on
    either side bind tighter (all of cgraph's infix operators but ``^`` group left)."""
    expr = pending.pop(m.group(), None)
    if expr is None:
        return m.group()
    inner = _prec(expr)
    left, right = _operator_before(m.string[: m.start()]), _operator_after(m.string[m.end() :])
    fits_left = left is None or inner > _PREC[left]
    fits_right = right is None or inner > _PREC[right] or (inner == _PREC[right] and right != "^")
    mixed = inner == 2 and ("@" in (left, right) or (" @ " in expr and {left, right} & _PRODUCT))
    return expr if fits_left and fits_right and not mixed else f"({expr})"


_PRODUCT = {"*", "/", "@"}  # a product and a matrix product side by side: parenthesized


#: How tightly each operator binds (the grammar's order); "neg" is unary minus.
_PREC = {"or": -3, "and": -2, "not": -1, "==": 0, "!=": 0, "<": 0, "<=": 0, ">": 0, ">=": 0,
         "+": 1, "-": 1, "*": 2, "/": 2, "@": 2, "neg": 3, "^": 4}  # fmt: skip
_INFIX = re.compile(r" (or|and|==|!=|<=|>=|<|>|\+|-|\*|/|@|\^) ")


def _prec(expr: str) -> int:
    """The precedence of the loosest operator outside parentheses in ``expr`` (5: none)."""
    depth, loosest = 0, 5
    for k, char in enumerate(expr):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif depth == 0 and char == " ":
            m = _INFIX.match(expr, k)
            if m:
                loosest = min(loosest, _PREC[m.group(1)])
    if expr.startswith("not "):
        loosest = min(loosest, _PREC["not"])
    elif expr.startswith("-"):
        loosest = min(loosest, _PREC["neg"])
    return loosest


def _operator_before(text: str) -> str | None:
    m = re.search(r"(?:^|[ (\[,])(or|and|not|==|!=|<=|>=|<|>|\+|-|\*|/|@|\^) ?$", text)
    if m is None:
        return None
    op = m.group(1)
    if op == "-" and not text.endswith(" "):  # -x: unary minus, written against its operand
        return "neg"
    return op


def _operator_after(text: str) -> str | None:
    m = _INFIX.match(text)
    return m.group(1) if m else None


def _closing(expr: str, at: int) -> int:
    depth = 0
    for k in range(at, len(expr)):
        if expr[k] in "([":
            depth += 1
        elif expr[k] in ")]":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _unwrap(expr: str) -> str:
    while expr.startswith("(") and _closing(expr, 0) == len(expr) - 1:
        expr = expr[1:-1]
    return expr


# -- the primitives --------------------------------------------------------------------------
def _shape(var) -> tuple[int, ...]:
    return tuple(int(n) for n in var.aval.shape)


def _binary(symbol: str) -> Callable:
    return lambda r, eqn, a, b: f"({r.text(a)} {symbol} {r.text(b)})"


def _function(name: str) -> Callable:
    return lambda r, eqn, a: f"{name}({r.text(a)})"


def _extreme_pair(fn: str) -> Callable:
    """max(a, b) and min(a, b), elementwise; max(-inf, x) (JAX's start of a maximum) is x."""
    bound = -np.inf if fn == "max" else np.inf

    def rule(r, eqn, a, b):
        for this, other in ((a, b), (b, a)):
            if not isinstance(this, str) and np.all(np.asarray(this) == bound):
                if not isinstance(other, str) or _shape(eqn.outvars[0]) == _shape_of(eqn, other):
                    return other
                return f"broadcast_to({r.text(other)}, {list(_shape(eqn.outvars[0]))})"
        return f"{fn}({r.text(a)}, {r.text(b)})"

    return rule


def _shape_of(eqn, value) -> tuple[int, ...]:
    for var in eqn.invars:
        if not hasattr(var, "val"):
            return _shape(var)
    return ()


def _reduce_sum(r, eqn, a):
    shape = _shape(eqn.invars[0])
    axes = sorted({int(k) % len(shape) for k in eqn.params["axes"]}, reverse=True)
    if not axes:
        return a
    if len(axes) == len(shape):
        return f"sum({r.text(a)})"
    expr = r.text(a)
    for axis in axes:
        expr = f"sum({expr}, {axis})"
    return expr


def _reduce_extreme(fn: str) -> Callable:
    """reduce_max, reduce_min: of every axis cgraph's max(x) (min(x)); along some, amax(x,
    axis) (amin) for each, the last first."""

    def rule(r, eqn, a):
        shape = _shape(eqn.invars[0])
        axes = sorted({int(k) % len(shape) for k in eqn.params["axes"]}, reverse=True)
        if not axes:
            return a
        if len(axes) == len(shape):
            return f"{fn}({r.text(a)})"
        expr = r.text(a)
        for axis in axes:
            expr = f"a{fn}({expr}, {axis})"
        return expr

    return rule


def _dot_general(r, eqn, a, b):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lc, rc, lb, rb = (tuple(int(k) for k in x) for x in (lc, rc, lb, rb))
    ls, rs = _shape(eqn.invars[0]), _shape(eqn.invars[1])
    x, y = r.text(a), r.text(b)
    lfree = [k for k in range(len(ls)) if k not in lc and k not in lb]
    rfree = [k for k in range(len(rs)) if k not in rc and k not in rb]
    if not lb and len(lc) <= 1 and len(rc) <= 1 and len(lfree) <= 1 and len(rfree) <= 1:
        if not lc:  # no contraction: an outer product (or a scalar's)
            if len(ls) == 1 and len(rs) == 1:
                return f"outer({x}, {y})"
            return f"({x} * {y})" if not ls or not rs else _general(r, eqn, x, y)
        # at most a matrix each: NumPy's @ on vectors and matrices, transposed as needed
        left = x if len(ls) == 1 or lc[0] == 1 else f"transpose({x})"
        right = y if len(rs) == 1 or rc[0] == 0 else f"transpose({y})"
        return f"({left} @ {right})"
    return _general(r, eqn, x, y)


def _general(r, eqn, x: str, y: str) -> str:
    """Any dot_general: each operand's axes put in order (batch, free, contracted for the
    left; batch, contracted, free for the right), flattened to a stack of matrices, multiplied
    with @, and reshaped to the result's shape."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    ls, rs = _shape(eqn.invars[0]), _shape(eqn.invars[1])
    lfree = [k for k in range(len(ls)) if k not in lc and k not in lb]
    rfree = [k for k in range(len(rs)) if k not in rc and k not in rb]
    batch = [ls[k] for k in lb]

    def arranged(expr: str, shape, order: list[int], rows: list[int], cols: list[int]) -> str:
        if order != list(range(len(shape))):
            expr = f"transpose({expr}, {order})"
        target = [
            *batch,
            int(np.prod([shape[k] for k in rows])),
            int(np.prod([shape[k] for k in cols])),
        ]
        if [shape[k] for k in order] != target:
            expr = f"reshape({expr}, {target})"
        return expr

    left = arranged(x, ls, [*lb, *lfree, *lc], lfree, list(lc))
    right = arranged(y, rs, [*rb, *rc, *rfree], list(rc), rfree)
    out = list(_shape(eqn.outvars[0]))
    expr = f"({left} @ {right})"
    if [*batch, int(np.prod([ls[k] for k in lfree])), int(np.prod([rs[k] for k in rfree]))] != out:
        expr = f"reshape({expr}, {out})" if out else f"sum({expr})"  # one element: a number
    return expr


def _broadcast_in_dim(r, eqn, a):
    shape = [int(n) for n in eqn.params["shape"]]
    source = _shape(eqn.invars[0])
    dims = [int(k) for k in eqn.params["broadcast_dimensions"]]
    expr = r.text(a)
    if not source:
        return expr if not shape else f"broadcast_to({expr}, {shape})"
    middle = [1] * len(shape)
    for k, d in enumerate(dims):
        middle[d] = source[k]
    if middle != list(source):
        expr = f"reshape({expr}, {middle})"
    if middle != shape:
        expr = f"broadcast_to({expr}, {shape})"
    return expr


def _to_shape(r, eqn, a):
    shape = list(_shape(eqn.outvars[0]))
    if shape == list(_shape(eqn.invars[0])):
        return a
    if eqn.primitive.name == "squeeze" and isinstance(a, str) and a in r.slices:
        base, parts = r.slices[a]  # x[0:1] squeezed: x[0]
        dims = {int(d) % len(parts) for d in eqn.params["dimensions"]}
        if all(isinstance(parts[d], tuple) and parts[d][0] is not None for d in dims):
            return index_text(base, [parts[k][0] if k in dims else parts[k]
                                     for k in range(len(parts))])  # fmt: skip
    if not shape:  # one element, as a number
        return f"sum({r.text(a)})"
    return f"reshape({r.text(a)}, {shape})"


def _transpose(r, eqn, a):
    perm = [int(k) for k in eqn.params["permutation"]]
    if perm == sorted(perm):
        return a
    if perm == sorted(perm, reverse=True):
        return f"transpose({r.text(a)})"
    return f"transpose({r.text(a)}, {perm})"


def _slice_parts(shape, starts, limits, strides) -> list:
    parts: list = []
    for k, n in enumerate(shape):
        start, stop = int(starts[k]), int(limits[k])
        step = int(strides[k]) if strides is not None else 1
        parts.append((None, None, 1) if (start, stop, step) == (0, n, 1) else (start, stop, step))
    return parts


def _slice(r, eqn, a):
    p = eqn.params
    parts = _slice_parts(
        _shape(eqn.invars[0]), p["start_indices"], p["limit_indices"], p["strides"]
    )
    expr = r.text(a)
    if not _WORD.fullmatch(expr):
        expr = r.emit(expr, "v")
    name = r.emit(index_text(expr, parts), "v")
    r.slices[name] = (expr, parts)
    return name


def _dynamic_slice(r, eqn, a, *starts):
    if any(isinstance(s, str) for s in starts):
        raise r.unsupported("dynamic_slice", "dynamic_slice at a computed position")
    shape = _shape(eqn.invars[0])
    sizes = [int(n) for n in eqn.params["slice_sizes"]]
    at = [min(max(int(s), 0), n - size) for s, n, size in zip(starts, shape, sizes)]
    expr = r.text(a)
    if not _WORD.fullmatch(expr):
        expr = r.emit(expr, "v")
    return index_text(expr, _slice_parts(shape, at, [s + n for s, n in zip(at, sizes)], None))


def _concatenate(r, eqn, *parts):
    axis = int(eqn.params["dimension"])
    total = list(_shape(eqn.outvars[0]))
    terms, at = [], 0
    for var, x in zip(eqn.invars, parts):
        size = _shape(var)[axis]
        where = [":"] * axis + [f"{at}:{at + size}"]
        terms.append(f"place({r.text(x)}, {total}, {', '.join(where)})")
        at += size
    return "(" + " + ".join(terms) + ")"


def _split(r, eqn, a):
    axis = int(eqn.params["axis"])
    expr = r.text(a)
    if not _WORD.fullmatch(expr):
        expr = r.emit(expr, "v")
    out, at = [], 0
    for size in eqn.params["sizes"]:
        out.append(index_text(expr, [(None, None, 1)] * axis + [(at, at + int(size), 1)]))
        at += int(size)
    return out


def _select_n(r, eqn, which, *cases):
    if not isinstance(which, str):
        choice = np.asarray(which).astype(np.int64)
        if choice.size == 1 or np.all(choice == choice.ravel()[0]):
            return cases[int(choice.ravel()[0])]
    w = r.text(which)
    if len(cases) == 2:
        return f"where({w}, {r.text(cases[1])}, {r.text(cases[0])})"
    expr = r.text(cases[-1])
    for k in range(len(cases) - 2, -1, -1):
        expr = f"where({w} == {k}, {r.text(cases[k])}, {expr})"
    return expr


def _convert(r, eqn, a):
    kind = np.dtype(eqn.params["new_dtype"]).kind
    if kind in "fc" or eqn.invars[0].aval.dtype.kind == "b" or kind == "b":
        return a
    if eqn.invars[0].aval.dtype.kind in "iu":
        return a
    raise r.unsupported("convert_element_type", "convert_element_type of a computed value to "
                        f"{np.dtype(eqn.params['new_dtype'])} (rounding)")  # fmt: skip


def _clamp(r, eqn, low, x, high):
    return f"min(max({r.text(x)}, {r.text(low)}), {r.text(high)})"


def _pow(r, eqn, a, b):
    return f"({r.text(a)} ^ {r.text(b)})"


def _integer_pow(r, eqn, a):
    return f"({r.text(a)} ^ {literal(eqn.params['y'])})"


RULES: dict[str, Callable] = {
    "add": _binary("+"),
    "add_any": _binary("+"),
    "sub": _binary("-"),
    "mul": _binary("*"),
    "div": _binary("/"),
    "pow": _pow,
    "integer_pow": _integer_pow,
    "square": lambda r, eqn, a: f"({r.text(a)} ^ 2)",
    "neg": lambda r, eqn, a: f"(-{r.text(a)})",
    "exp": _function("exp"),
    "exp2": lambda r, eqn, a: f"(2 ^ {r.text(a)})",
    "expm1": lambda r, eqn, a: f"(exp({r.text(a)}) - 1)",
    "log": _function("log"),
    "log1p": lambda r, eqn, a: f"log(1 + {r.text(a)})",
    "sqrt": _function("sqrt"),
    "rsqrt": lambda r, eqn, a: f"(1 / sqrt({r.text(a)}))",
    "tanh": _function("tanh"),
    "logistic": _function("sigmoid"),
    "sin": _function("sin"),
    "cos": _function("cos"),
    "tan": _function("tan"),
    "erf": _function("erf"),
    "erfc": lambda r, eqn, a: f"(1 - erf({r.text(a)}))",
    "abs": _function("abs"),
    "sign": _function("sign"),
    "stop_gradient": _function("stop_gradient"),
    "max": _extreme_pair("max"),
    "min": _extreme_pair("min"),
    "clamp": _clamp,
    "gt": _binary(">"),
    "lt": _binary("<"),
    "ge": _binary(">="),
    "le": _binary("<="),
    "eq": _binary("=="),
    "ne": _binary("!="),
    "and": _binary("and"),
    "or": _binary("or"),
    "not": lambda r, eqn, a: f"(not {r.text(a)})",
    "select_n": _select_n,
    "dot_general": _dot_general,
    "reduce_sum": _reduce_sum,
    "reduce_max": _reduce_extreme("max"),
    "reduce_min": _reduce_extreme("min"),
    "broadcast_in_dim": _broadcast_in_dim,
    "reshape": _to_shape,
    "squeeze": _to_shape,
    "expand_dims": _to_shape,
    "transpose": _transpose,
    "slice": _slice,
    "dynamic_slice": _dynamic_slice,
    "concatenate": _concatenate,
    "split": _split,
    "convert_element_type": _convert,
    # every value cgraph computes is finite: a result that overflows is an error (exit 4)
    "is_finite": lambda r, eqn, a: np.ones(_shape(eqn.outvars[0]), dtype=bool),
    "copy": lambda r, eqn, a: a,
    "copy_p": lambda r, eqn, a: a,
    "pvary": lambda r, eqn, a: a,
    "optimization_barrier": lambda r, eqn, *a: list(a),
}

#: Calls whose computation is inlined: the primitive and the parameter holding it.
_INLINED = {
    "jit": "jaxpr",
    "pjit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "remat": "jaxpr",
    "checkpoint": "jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
}


# -- what only depends on constants, computed while importing ---------------------------------
def _fold_iota(eqn):
    p = eqn.params
    shape, axis = [int(n) for n in p["shape"]], int(p["dimension"])
    line = np.arange(shape[axis]).reshape([-1 if k == axis else 1 for k in range(len(shape))])
    return np.broadcast_to(line, shape).astype(np.dtype(p["dtype"]))


def _fold_convert(eqn, a):
    return np.asarray(a).astype(np.dtype(eqn.params["new_dtype"]))


def _fold_broadcast(eqn, a):
    shape = [int(n) for n in eqn.params["shape"]]
    if int(np.prod(shape)) > INLINE:  # a large constant stays an expression: broadcast_to
        return None
    middle = [1] * len(shape)
    for k, d in enumerate(eqn.params["broadcast_dimensions"]):
        middle[int(d)] = np.shape(a)[k]
    return np.broadcast_to(np.reshape(a, middle), shape)


def _folded(fn: Callable) -> Callable:
    return lambda eqn, *a: fn(*(np.asarray(x) for x in a))


FOLD: dict[str, Callable] = {
    "iota": _fold_iota,
    "convert_element_type": _fold_convert,
    "broadcast_in_dim": _fold_broadcast,
    "reshape": lambda eqn, a: np.reshape(a, [int(n) for n in eqn.params["new_sizes"]]),
    "squeeze": lambda eqn, a: np.reshape(a, _shape(eqn.outvars[0])),
    "neg": _folded(np.negative),
    "add": _folded(np.add),
    "sub": _folded(np.subtract),
    "mul": _folded(np.multiply),
    "max": _folded(np.maximum),
    "min": _folded(np.minimum),
    "eq": _folded(np.equal),
    "ne": _folded(np.not_equal),
    "lt": _folded(np.less),
    "gt": _folded(np.greater),
    "le": _folded(np.less_equal),
    "ge": _folded(np.greater_equal),
    "and": _folded(np.logical_and),
    "or": _folded(np.logical_or),
    "not": _folded(np.logical_not),
}


# -- tracing a function ----------------------------------------------------------------------
def require_jax():
    """The jax package, or a usage error saying how to install it."""
    try:
        import jax
    except ImportError:
        raise UsageError(
            "--from jax needs the jax package",
            hints=["pip install 'cgraph-cli[jax]' (or: pip install jax)"],
        ) from None
    return jax


def trace_function(
    function: Callable, example: Mapping[str, Any], label: str, said: str = "--example"
) -> Imported:
    """The program of the JAX function ``function`` (shown as ``label``), traced on the arrays
    of ``example``: by the function's parameter names where every key is one, else in the
    order of the file (the program's inputs named as the file's arrays). The tracing runs the function (on tracers): what it raises is a usage
    error (exit 2) with its message."""
    jax = require_jax()
    names, values, call = _arguments(function, example, label, said)
    enable: Any = getattr(jax, "enable_x64", None)
    if enable is None:  # older JAX: the experimental context
        enable = importlib.import_module("jax.experimental").enable_x64
    try:
        with enable(True):
            closed, shape = jax.make_jaxpr(call, return_shape=True)(*values)
    except UsageError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's function raised, or JAX refused it
        message = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise UsageError(
            f"{label} raised {type(e).__name__} while traced" + (f": {message}" if message else "")
        ) from None
    outputs = _output_names(jax, shape, getattr(function, "__name__", "out"))
    consts = _const_names(function, closed.consts)
    return import_jaxpr(closed, label, names, outputs, consts)


def _arguments(function, example: Mapping[str, Any], label: str, said: str):
    import inspect

    arrays = {}
    for key, value in example.items():
        value = np.asarray(value)
        arrays[key] = value.astype(np.float64) if value.dtype.kind == "f" else value
    try:
        params = [p for p in inspect.signature(function).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]  # fmt: skip
    except (TypeError, ValueError):
        params = []
    by_name = {p.name for p in params}
    if arrays and set(arrays) <= by_name:  # by name, in the parameters' order
        ordered = [p.name for p in params if p.name in arrays]
        positional = all(p.kind != p.POSITIONAL_ONLY for p in params)
        if not positional:
            raise UsageError(f"{label} takes positional-only parameters: name {said}'s arrays "
                             "in their order instead")  # fmt: skip

        def call(*xs):
            return function(**dict(zip(ordered, xs)))

        return ordered, [arrays[n] for n in ordered], call
    return list(arrays), list(arrays.values()), function  # in order, named as in the file


def _output_names(jax, shape, stem: str) -> list[str]:
    leaves = jax.tree_util.tree_flatten_with_path(shape)[0]
    if len(leaves) == 1 and not leaves[0][0]:
        return [stem]
    names = []
    for path, _ in leaves:
        parts = [str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path]
        if not parts or parts[0].isdigit():
            parts.insert(0, stem)
        names.append("_".join(parts))
    return names


def _const_names(function, consts) -> list[str | None]:
    """The names of the globals (or closed-over variables) the function reads whose values
    are its jaxpr's constants: a weight is called as in the code."""
    code = getattr(function, "__code__", None)
    if code is None or not consts:
        return []
    candidates: dict[str, Any] = {}
    scope = getattr(function, "__globals__", {})
    for name in code.co_names:
        if name in scope:
            candidates[name] = scope[name]
    for name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or ()):
        try:
            candidates[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    arrays = {n: np.asarray(v) for n, v in candidates.items()
              if hasattr(v, "shape") and hasattr(v, "dtype")}  # fmt: skip
    found: list[str | None] = []
    for value in consts:
        value = np.asarray(value)
        match = [
            n for n, v in arrays.items() if v.shape == value.shape and np.array_equal(v, value)
        ]
        found.append(match[0] if len(match) == 1 else None)
    return found
