"""A program run once per row of a data file (``--rows``): the static graph defined once and
fed many times, as TensorFlow 1's ``Session.run`` with a ``feed_dict``. Each column named as an
input binds it per row; the other inputs are shared by every row (bindings, defaults).

Rows go through the compiled engine (:mod:`cgraph_cli.engine`) a chunk at a time, as whole
columns. A row the engine flags (a value on the way not finite, a cell it cannot take) is run
again by the interpreter, which gives its values or says why it fails: such a row gets an
``error`` cell and empty values, and does not stop the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .arrays import np
from .datafiles import Column, to_column
from .errors import BindingError, CgraphError, EvalError, UsageError
from .ir import Graph, resolve_name

MODES = ("eval", "grad")
REDUCE = ("sum", "mean")
#: Rows per chunk unless --chunk-rows says otherwise: large enough that NumPy's work dwarfs
#: Python's per chunk, small enough that a 100-value program's columns stay near 100 MB.
CHUNK_ROWS = 65_536


class RowsResult:
    """What a run over rows gives: ``tables`` (each chunk's output columns, when not
    reduced), ``rows``, ``errors`` (rows that failed), ``seconds``, ``ignored`` (columns that
    are not inputs); with ``reduce``, ``value`` and ``gradients``: the sum or mean over the
    rows that did not fail.

    >>> from cgraph_cli import parse
    >>> result = run_rows(parse("y = 2 * x"), [("-", 0, {"x": [1.0, 2.0]})])
    >>> result.tables[0]["y"].tolist(), result.summary().split(" in ")[0]
    ([2.0, 4.0], '2 rows')
    """

    __slots__ = (
        *("tables", "rows", "errors", "seconds", "ignored", "value", "gradients", "output"),
        *("count", "engine"),
    )

    def __init__(self) -> None:
        self.tables: list[dict] = []
        self.rows = self.errors = 0
        self.seconds = 0.0
        self.ignored: list[str] = []
        self.value: float | None = None
        self.gradients: dict[str, object] = {}
        self.output = ""
        self.count = 0  # with reduce: the rows summed
        self.engine: Any = None  # the compiled engine that ran (None: no row)

    def summary(self) -> str:
        """``1,000 rows in 0.21 s (4,761 rows/s), 0 errors``."""
        rate = self.rows / self.seconds if self.seconds > 0 else float("inf")
        errors = f"{self.errors:,} error{'s' if self.errors != 1 else ''}"
        return f"{self.rows:,} rows in {self.seconds:.2f} s ({rate:,.0f} rows/s), {errors}"


def run_rows(
    graph: Graph,
    chunks: Iterable[tuple[str, int, Mapping]],
    *,
    mode: str = "eval",
    bindings: Mapping[str, object] | None = None,
    of: str | None = None,
    wrt: list[str] | None = None,
    show_all: bool = False,
    keep: list[str] | tuple[str, ...] = (),
    reduce: str | None = None,
    strict: bool = False,
    write: Callable[[dict], None] | None = None,
    tick: Callable[[int], None] | None = None,
    note: Callable[[str], None] | None = None,
    engine: Any = None,
) -> RowsResult:
    """Run ``graph`` on every row of ``chunks`` (``(file, first row, columns)`` triples, as
    :func:`cgraph_cli.datafiles.read_chunks` gives them); ``mode`` eval or grad. Each chunk's
    output columns go to ``write`` when given, else into ``result.tables``; with ``reduce``
    (grad only) nothing is written: the result holds the sum or mean. ``engine``: a compiled
    engine to run (one built from its source elsewhere: the Dask workers), else compiled here.

    >>> from cgraph_cli import parse
    >>> chunks = [("data.csv", 0, {"x": [1.0, -1.0, 4.0]})]
    >>> result = run_rows(parse("y = sqrt(x) * w"), chunks, mode="grad", bindings={"w": 3.0})
    >>> [(t["y"].tolist(), t["dy_dw"].tolist(), t["error"]) for t in result.tables][0][1]
    [1.0, nan, 2.0]
    >>> result.errors, result.tables[0]["error"][1][:32]
    (1, 'row 2: sqrt(-1) is undefined: sq')
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    if reduce is not None and (mode != "grad" or reduce not in REDUCE):
        raise UsageError("--reduce is sum or mean, with grad")
    started = time.perf_counter()
    result = RowsResult()
    plan: _Plan | None = None
    for path, start, columns in chunks:
        if plan is None:
            plan = _Plan(graph, path, list(columns), mode, bindings or {}, of, wrt, keep, reduce)
            plan.choose(show_all)
            plan.engine = engine
            plan.check_columns(strict, note)
            result.ignored = plan.ignored
            result.output = plan.out_name
        table, good = plan.chunk(path, start, columns)
        n = len(table["error"])
        result.rows += n
        result.errors += n - int(good.sum())
        if reduce is not None:
            plan.accumulate(table, good)
        elif write is not None:
            write(table)
        else:
            result.tables.append(table)
        if tick is not None:
            tick(n)
    if plan is not None:
        result.engine = plan.engine
    if plan is not None and reduce is not None:
        result.value, result.gradients = plan.reduced(reduce)
        result.count = plan.count
    result.seconds = time.perf_counter() - started
    return result


class _Plan:
    """How one file's columns bind the program, worked out from its first chunk."""

    def __init__(self, graph, path, columns, mode, bindings, of, wrt, keep, reduce) -> None:
        from .bindings import check_bindings

        self.graph, self.mode, self.path = graph, mode, path
        out = graph.output if of is None else resolve_name(graph, of)
        self.out_name = graph.display_name(out)
        self.per_row = [c for c in columns if c in graph.inputs]
        self.keep = list(keep)
        self.ignored = [c for c in columns if c not in graph.inputs and c not in self.keep]
        self.columns = columns
        for name in self.keep:
            if name not in columns:
                raise UsageError(f"--keep {name}: {path} has no column {name}")
        if not self.per_row:
            raise UsageError(
                f"no column of {path} is an input of the program",
                hints=[
                    f"columns: {', '.join(columns) or 'none'}; inputs: {', '.join(graph.inputs)}"
                ],
            )
        twice = [c for c in self.per_row if c in bindings]
        if twice:
            raise UsageError(
                f"'{twice[0]}' is a column of {path} and bound as well",
                hints=["a column binds its input per row: drop the binding, or the column"],
            )
        shared = check_bindings(graph, bindings)
        for name in graph.inputs:
            if name not in self.per_row and name not in shared:
                if name not in graph.defaults:
                    raise BindingError(
                        f"input '{name}' has no value: no column of {path} and no binding",
                        hints=[f"bind it: {name}=VALUE, or add a column {name}"],
                    )
                shared[name] = graph.defaults[name]
        self.shared = shared
        self.of = of
        self.wrt = self._wrt(wrt, reduce)
        self.base = self.out_name if self.out_name.isidentifier() else "out"
        self.named = self._named()
        self.show_all = False
        self.results: list[str] = []
        self.engine: Any = None
        self.row_shapes: dict[str, tuple[int, ...]] = {}
        self.totals: dict[str, Any] = {}
        self.count = 0

    def _wrt(self, wrt, reduce) -> list[str]:
        if self.mode != "grad":
            return []
        if wrt:
            for name in wrt:
                resolve_name(self.graph, name)
        names = list(wrt or self.graph.inputs)
        if reduce is not None:
            per_row = [n for n in names if n in self.per_row]
            if wrt and per_row:
                raise UsageError(
                    f"--reduce sums gradients of shared inputs; '{per_row[0]}' is a column "
                    f"of {self.path}, whose gradient is one per row",
                    hints=["drop it from --wrt, or leave out --reduce for a gradient per row"],
                )
            names = [n for n in names if n not in self.per_row]
            if not names:
                raise UsageError(
                    "--reduce: every input is a column; nothing is shared by the rows",
                    hints=["bind the weights (--bindings weights.npz) or drop their columns"],
                )
        return names

    def _named(self) -> list[str]:
        graph = self.graph
        if self.of is not None:
            from .passes.optimize import optimize

            graph = optimize(graph, ["dce"], of=self.of).graph
        return list(graph.named_nodes())

    def choose(self, show_all: bool) -> None:
        """The results written: every named value (``show_all``) or the output's; for grad,
        the output and a gradient per ``wrt`` name. A kept column may not take one's name."""
        self.show_all = show_all
        if self.mode == "grad":
            self.results = [self.out_name, *self.wrt]
        else:
            self.results = self.named if show_all else [self.out_name]
        taken = {self.column_name(k) for k in self.results}
        clash = [k for k in self.keep if k in taken and k not in self.per_row]
        if clash:
            raise UsageError(
                f"--keep {clash[0]}: a result is written in a column of that name too",
                hints=[f"rename the column of {self.path}, or do not keep it"],
            )
        self.keep = [k for k in self.keep if k not in taken]  # an input shown: written once

    def check_columns(self, strict: bool, note) -> None:
        if self.ignored and strict:
            raise UsageError(
                f"{self.path} has columns that are not inputs: {', '.join(self.ignored)}",
                hints=["--keep them, or leave out --strict to ignore them"],
            )
        if self.ignored and note is not None:
            note(
                f"note: ignored columns of {self.path} that are not inputs: {', '.join(self.ignored)}"
            )

    def _engine(self, columns: dict[str, Column]):
        if not self.row_shapes:  # what the engine is compiled for: the first chunk's shapes
            given = self.engine.shapes if self.engine is not None else {}
            self.row_shapes = {
                c: tuple(given[c]) if c in given else col.values.shape[1:]
                for c, col in columns.items()
            }
        if self.engine is None:
            from .engine import engine

            one_row = {c: np.zeros(s) if s else 0.0 for c, s in self.row_shapes.items()}
            self.engine = engine(
                self.graph,
                of=self.of,
                wrt=self.wrt if self.mode == "grad" else None,
                bindings={**self.shared, **one_row},
            )
        return self.engine

    def chunk(self, path: str, start: int, raw: Mapping) -> tuple[dict, Any]:
        """The chunk's output columns (``error`` last) and which rows succeeded."""
        columns = {c: to_column(c, raw[c]) for c in self.per_row}
        n = len(next(iter(columns.values())).values)
        run = self._engine(columns)
        problems: dict[int, str] = {}
        odd = np.zeros(n, dtype=bool)
        for c, col in columns.items():
            for r, why in col.problems.items():
                problems.setdefault(r, why)
            odd[list(col.odd)] = True
            if col.values.shape[1:] != self.row_shapes[c]:  # not the shapes compiled for
                odd[:] = True
        odd[list(problems)] = True
        inputs = {**self.shared, **{c: col.values for c, col in columns.items()}}
        for col in columns.values():  # a cell that is not finite: the interpreter refuses it
            values = col.values if col.values.ndim == 1 else col.values.reshape(n, -1)
            with np.errstate(all="ignore"):
                finite = np.isfinite(values) if values.ndim == 1 else np.isfinite(values).all(1)
            odd |= ~finite
        if self.mode == "eval":
            named, ok = run.evaluate_rows(inputs, n, [self.out_name, *self.results])
            results = {k: named[k] for k in self.results if k in named}
        else:
            value, grads, ok = run.grad_rows(inputs, n)
            results = {self.out_name: value, **{w: grads[w] for w in self.wrt if w in grads}}
        ok &= ~odd
        errors: list[str | None] = [None] * n
        flagged = np.flatnonzero(~ok).tolist()
        good = ok
        if flagged:  # rows to patch: the columns become writable copies
            results = {k: np.array(v, dtype=float) for k, v in results.items()}
        for r in flagged:
            where = f"row {start + r + 1}"
            if r in problems:
                errors[r] = f"{where}: {problems[r]} ({path})"
                continue
            row = {**self.shared, **{c: col.cell(r) for c, col in columns.items()}}
            try:
                found = self._interpret(row)
            except CgraphError as e:
                place = e.where()
                errors[r] = f"{where}: {e.message} ({path}{', ' + place if place else ''})"
                continue
            for k, v in found.items():
                if k not in results or np.shape(results[k])[1:] != np.shape(v):
                    results[k] = _widen(results.get(k), n, np.shape(v))
                results[k][r] = v
            good[r] = True
        return self._table(raw, results, errors, good, n), good

    def _interpret(self, row: Mapping) -> dict[str, object]:
        from . import api

        if self.mode == "eval":
            named = api.evaluate(self.graph, row, of=self.of).named
            return {k: named[k] for k in self.results}
        g = api.grad(self.graph, row, of=self.of)
        return {self.out_name: g.value, **{w: g.wrt(w) for w in self.wrt}}

    def _table(self, raw, results, errors, good, n) -> dict:
        table: dict = {c: raw[c] for c in self.keep}
        failed = not good.all()
        for k in self.results:
            column = self.column_name(k)
            values = results.get(k)
            if values is None:
                values = np.full(n, np.nan)
            if values.ndim == 1:
                if failed:
                    values[~good] = np.nan  # a copy already (rows were patched)
                table[column] = values
            else:  # a tensor per row: a list cell
                table[column] = [v.tolist() if ok else None for v, ok in zip(values, good)]
        table["error"] = errors
        return table

    def column_name(self, k: str) -> str:
        """A result's column: a value's name, or ``do_dw1`` for ∂o/∂w1 (as diff names it)."""
        if self.mode == "grad" and k != self.out_name:
            from .derivatives import derivative_name

            return derivative_name(self.base, (k,))
        return k

    def accumulate(self, table: dict, good) -> None:
        """Add the chunk's rows that succeeded to the sums --reduce takes."""
        self.count += int(good.sum())
        for k in [self.out_name, *self.wrt]:
            values = table[self.column_name(k)]
            rows = np.asarray(
                [v for v, ok in zip(values, good) if ok]
                if isinstance(values, list)
                else values[good]
            )
            total = rows.sum(axis=0) if len(rows) else 0.0
            self.totals[k] = self.totals.get(k, 0.0) + total

    def reduced(self, how: str) -> tuple[float | None, dict[str, object]]:
        if not self.count:
            return None, {}
        scale = 1.0 / self.count if how == "mean" else 1.0
        sums = {k: _plain(v * scale) for k, v in self.totals.items()}
        return sums.pop(self.out_name), sums


def _widen(values, n: int, shape: tuple) -> object:
    """A column of ``n`` rows of ``shape`` (nan), keeping what ``values`` held if it fits."""
    fresh = np.full((n, *shape), np.nan)
    if values is not None and values.shape == fresh.shape:
        fresh[...] = values
    return fresh


def _plain(v):
    return float(v) if np.ndim(v) == 0 else np.asarray(v)


def check_rows(
    graph: Graph,
    chunks: Iterable[tuple[str, int, Mapping]],
    *,
    expect: Mapping[str, str],
    bindings: Mapping[str, object] | None = None,
    of: str | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
    strict: bool = False,
    note: Callable[[str], None] | None = None,
):
    """Every row a test case (``cgraph check --rows``): each named value of ``expect``
    against the row's cell in the column it names, as :func:`cgraph_cli.check` compares them.
    A row that cannot be evaluated, or whose expected cell is empty, is that case's error.

    >>> from cgraph_cli import parse
    >>> chunks = [("cases.csv", 0, {"x": [1.0, 2.0], "y": [2.0, 5.0]})]
    >>> check_rows(parse("y = 2 * x"), chunks, expect={"y": "y"})
    <CheckReport: 1 passed, 1 failed; FAIL y = 4 (expected 5)>
    """
    from .checks import CaseRun, CheckReport, Result, close

    columns = list(dict.fromkeys(expect.values()))
    program_names = graph.named_nodes()
    for name in expect:
        if name not in program_names:
            resolve_name(graph, name)  # the usual error, with a did-you-mean
    expected: list[dict] = []  # each chunk's expected cells, in the order run_rows takes them

    def feed():
        for path, start, chunk in chunks:
            missing = [c for c in columns if c not in chunk]
            if missing:
                raise UsageError(f"{path} has no column {missing[0]} to expect values from")
            expected.append({c: to_column(c, chunk[c]) for c in columns})
            yield path, start, {k: v for k, v in chunk.items() if k not in columns}

    result = run_rows(
        graph, feed(), bindings=bindings, of=of, show_all=True, strict=strict, note=note
    )
    runs = []
    row = 0
    for table, cells in zip(result.tables, expected):
        for r, error in enumerate(table["error"]):
            row += 1
            case = f"row {row}"
            if error is not None:
                runs.append(CaseRun(case, [], EvalError(error.split(": ", 1)[1])))
                continue
            results = []
            for name, column in expect.items():
                if r in cells[column].problems:
                    runs.append(CaseRun(case, [], EvalError(cells[column].problems[r])))
                    break
                wanted = cells[column].cell(r)
                got = table[name][r]
                got = np.asarray(got, dtype=float) if isinstance(got, list) else float(got)
                ok = close(got, wanted, rtol, atol)
                results.append(Result(case, "value", name, result.output, wanted, got, ok))
            else:
                runs.append(CaseRun(case, results))
    return CheckReport(runs)
