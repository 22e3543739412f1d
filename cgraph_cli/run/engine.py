"""The compiled engine: a graph's NumPy module (``cgraph compile --target numpy``, in rows
mode) executed in-process once and kept on the graph, for work that runs a graph many times
(the rows of a data file). Rows of numbers go through the generated code as whole columns;
rows of tensors one at a time (see :mod:`cgraph_cli.run.compile`).

Rows mode raises nothing for a value that is not finite: each call also returns, per row, a
number that is not finite where some value on the way was not, so that the caller can give
those rows to the interpreter, which says what went wrong where.

>>> import numpy as np
>>> from cgraph_cli import parse
>>> run = engine(parse("y = log(x) * w"), bindings={"x": 1.0, "w": 2.0})
>>> value, grads, ok = run.grad_rows({"x": np.array([1.0, np.e, -1.0]), "w": 2.0}, 3)
>>> value.tolist()[:2], grads["w"].tolist()[:2], ok.tolist()
([0.0, 2.0], [0.0, 1.0], [True, True, False])
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.arrays import np
from ..core.ir import Graph

_FILENAME = "<cgraph compiled>"


class Engine:
    """``forward(**inputs) -> (named values, flags)`` and ``grad(**inputs) -> (value,
    gradients, flags)``, each input a value for every row (a leading axis) or one value shared
    by all rows; ``shapes``: one row's shape of each input; ``source``: the module's text."""

    __slots__ = ("forward", "grad", "shapes", "source")

    def __init__(self, source: str) -> None:
        namespace: dict = {"__name__": "cgraph_compiled", "__file__": _FILENAME}
        exec(compile(source, _FILENAME, "exec"), namespace)  # our own generated code
        self.forward = namespace["forward"]
        self.grad = namespace["grad"]
        self.shapes: dict[str, tuple[int, ...]] = namespace["SHAPES"]
        self.source = source

    def evaluate_rows(self, inputs: Mapping, n: int, keep: list[str] | None = None):
        """Every named value for ``n`` rows (each an array with a leading axis of ``n``; a
        value shared by every row, a read-only view of it), and which rows are sound: every
        value on the way finite (each of ``keep`` checked here, every value when None; the
        module's flags stand for the values the output does not read). Rows that are not sound hold anything: the interpreter answers
        for them. The inputs given are not checked."""
        try:
            named, flags = self.forward(**inputs)
        except _FAILURES:  # no row is known sound: the interpreter answers for each
            return {}, np.zeros(n, dtype=bool)
        kinks = named.pop(" kinks", None)
        checked = named.values() if keep is None else [named[k] for k in keep if k in named]
        ok = _sound(flags, checked, n)
        if kinks is not None:
            named[" kinks"] = [np.broadcast_to(np.asarray(k, dtype=float), (n,)) for k in kinks]
        return {k: v if k == " kinks" else _per_row(v, n) for k, v in named.items()}, ok

    def grad_rows(self, inputs: Mapping, n: int):
        """The output's value and its gradients for ``n`` rows, and which rows are sound."""
        try:
            value, grads, flags = self.grad(**inputs)
        except _FAILURES:
            return np.full(n, np.nan), {}, np.zeros(n, dtype=bool)
        ok = _sound(flags, [value, *grads.values()], n)
        return _per_row(value, n), {k: _per_row(v, n) for k, v in grads.items()}, ok


# What generated code can raise on rows it cannot take (shapes, a helper's domain).
_FAILURES = (ValueError, ArithmeticError, TypeError, IndexError)


def _per_row(value, n: int):
    """A result as an array with a leading axis of ``n`` rows (one shared value repeated)."""
    array = np.asarray(value, dtype=float)
    if array.ndim and array.shape[0] == n:
        return array
    return np.broadcast_to(array, (n, *array.shape))


def _sound(flags, results, n: int):
    """Rows whose flag and every result are finite (a result shared by every row: all rows
    or none)."""
    with np.errstate(all="ignore"):
        ok = np.isfinite(np.broadcast_to(np.asarray(flags, dtype=float), (n,))).copy()
        for r in results:
            r = np.asarray(r)
            if r.ndim == 0 or r.shape[0] != n:
                if not np.isfinite(r).all():
                    ok[:] = False
            elif r.ndim == 1:
                ok &= np.isfinite(r)
            else:
                ok &= np.isfinite(r.reshape(n, -1)).all(axis=1)
    return ok


def engine(
    graph: Graph,
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    bindings: Mapping | None = None,
    gradient: bool = True,
    kinks: bool = False,
) -> Engine:
    """The engine for ``graph`` (``of``, ``wrt`` as for ``grad``), with the shapes that
    ``bindings`` (one row's values) give its inputs; compiled once per graph and shapes.
    ``gradient`` False: ``forward`` only (the derivative program is not built). ``kinks``:
    :meth:`Engine.evaluate_rows` also gives the kink quantities, under ``" kinks"``.

    >>> from cgraph_cli import parse
    >>> graph = parse("y = x * x")
    >>> engine(graph) is engine(graph), engine(graph).shapes
    (True, {'x': ()})
    """
    from ..passes.optimize import known_shapes

    shapes = known_shapes(graph, bindings or {})
    key = repr(("engine", of, tuple(wrt or ()), sorted(shapes.items()), gradient, kinks))
    found = graph.memo.get(key)
    if found is None:
        from .compile import compile_module

        source = compile_module(
            graph, "numpy", of=of, wrt=wrt, bindings=bindings, rows=True, gradient=gradient,
            kinks=kinks,
        )  # fmt: skip
        found = graph.memo[key] = Engine(source)
    return found
