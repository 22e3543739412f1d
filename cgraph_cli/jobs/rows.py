"""A program run once per row of a data file (``--rows``): the static graph defined once and
fed many times, as TensorFlow 1's ``Session.run`` with a ``feed_dict``. Each column named as an
input binds it per row; the other inputs are shared by every row (bindings, defaults).

Rows go through the compiled engine's driver (:class:`cgraph_cli.run.engine.Driver`) a chunk
at a time, as whole columns. A row the engine flags (a value on the way not finite, a cell it
cannot take) is run again by the interpreter, which gives its values or says why it fails: such
a row gets an ``error`` cell and empty values, and does not stop the others.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..core.arrays import np
from ..core.errors import BindingError, UsageError, listed
from ..core.ir import Graph, resolve_name
from ..data.datafiles import Column, to_column
from ..run.engine import VALUE, Driver
from .rowstore import Slabs

MODES = ("eval", "grad")
REDUCE = ("sum", "mean")
#: Rows per chunk unless --chunk-rows says otherwise: large enough that NumPy's work dwarfs
#: Python's per chunk, small enough that a chunk's work arrays stay in the cache (measured
#: 5 December 2026 from 2^14 to 2^19 rows, bench_batch: 2^15 and 2^16 the fastest for the
#: neuron, the 100-operation program alike from 2^14 to 2^17).
CHUNK_ROWS = 65_536


class RowsResult:
    """What a run over rows gives: ``tables`` (each chunk's output columns, when not
    reduced; ``error`` last: each row's error or None, a tuple where no row failed), ``rows``, ``errors`` (rows that failed), ``seconds``, ``ignored`` (columns that
    are not inputs); with ``reduce``, ``value`` and ``gradients``: the sum or mean over the
    rows that did not fail.

    >>> from cgraph_cli import parse
    >>> result = run_rows(parse("y = 2 * x"), [("-", 0, {"x": [1.0, 2.0]})])
    >>> result.tables[0]["y"].tolist(), result.summary().split(" in ")[0]
    ([2.0, 4.0], '2 rows')
    """

    __slots__ = (
        *("tables", "rows", "errors", "seconds", "ignored", "value", "gradients", "output"),
        *("count", "engine", "samples"),
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
        self.samples: list[str] = []  # the first few error messages

    def summary(self) -> str:
        """``1,000 rows in 0.21 s (4,761 rows/s), 0 errors``."""
        rate = self.rows / self.seconds if self.seconds > 0 else float("inf")
        errors = f"{self.errors:,} error{'s' if self.errors != 1 else ''}"
        rows = f"{self.rows:,} row{'s' if self.rows != 1 else ''}"
        return f"{rows} in {self.seconds:.2f} s ({rate:,.0f} rows/s), {errors}"


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
    expected: list[str] | tuple[str, ...] = (),
) -> RowsResult:
    """Run ``graph`` on every row of ``chunks`` (``(file, first row, columns)`` triples, as
    :func:`cgraph_cli.data.datafiles.read_chunks` gives them); ``mode`` eval or grad. Each chunk's
    output columns go to ``write`` when given, else into ``result.tables``; with ``reduce``
    (grad only) nothing is written: the result holds the sum or mean. ``engine``: a compiled
    engine to run (one built from its source elsewhere: the Dask workers), else compiled here.
    ``expected``: columns that hold expected values (``check --rows``), not ignored.

    >>> from cgraph_cli import parse
    >>> chunks = [("data.csv", 0, {"x": [1.0, -1.0, 4.0]})]
    >>> result = run_rows(parse("y = sqrt(x) * w"), chunks, mode="grad", bindings={"w": 3.0})
    >>> [(t["y"].tolist(), t["dy_dw"].tolist(), t["error"]) for t in result.tables][0][1]
    [1.0, nan, 2.0]
    >>> result.errors, result.tables[0]["error"][1][:32]
    (1, 'row 2: sqrt(-1) is undefined: sq')
    """
    from ..core.ir_control import refuse

    refuse(graph, "--rows")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    if reduce is not None and (mode != "grad" or reduce not in REDUCE):
        raise UsageError("--reduce is sum or mean, with grad")
    started = time.perf_counter()
    result = RowsResult()
    plan = _Plan(graph, mode, bindings or {}, of, keep, reduce, show_all, expected, engine)
    store = Slabs()  # the tables kept: their columns copied into large arrays
    path = None
    for path_, start, columns in chunks:
        if path_ != path:
            path = path_
            plan.start_file(path, list(columns), wrt, strict, note)
            result.ignored = plan.ignored
        keeping = reduce is None and write is None
        table, good = plan.chunk(path, start, columns, store.reserve if keeping else None)
        n = len(table["error"])
        result.rows += n
        result.errors += n - int(np.count_nonzero(good))
        if len(result.samples) < SAMPLES and not good.all():
            result.samples += [e for e in table["error"] if e is not None][
                : SAMPLES - len(result.samples)
            ]
        if reduce is not None:
            plan.accumulate(table, good)
        elif write is not None:
            write(table)
        else:
            result.tables.append(store.place(table))
        if tick is not None:
            tick(n)
    result.output = plan.out_name
    result.engine = plan.driver.compiled if plan.driver is not None else plan.given
    if reduce is not None:
        result.value, result.gradients = plan.reduced(reduce)
        result.count = plan.count
    result.seconds = time.perf_counter() - started
    return result


def number_columns(graph: Graph, keep: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The columns of a data file read as numbers while every cell is one (see
    :func:`~cgraph_cli.data.datafiles.read_chunks`): the program's inputs, but those kept,
    which are written as they were read.

    >>> from cgraph_cli import parse
    >>> number_columns(parse("y = x * w"), keep=["w"])
    ['x']
    """
    return [n for n in graph.inputs if n not in keep]


def check_headers(
    graph: Graph,
    headers: list[tuple[str, list[str]]],
    *,
    mode: str = "eval",
    bindings: Mapping[str, object] | None = None,
    of: str | None = None,
    wrt: list[str] | None = None,
    keep: list[str] | tuple[str, ...] = (),
    reduce: str | None = None,
    show_all: bool = False,
    strict: bool = False,
    expected: list[str] | tuple[str, ...] = (),
) -> None:
    """The checks :func:`run_rows` makes of each file's columns, made of every file's before
    any row runs (``headers``: each file with its column names), so that a file that does not
    fit stops the run before any output.

    >>> from cgraph_cli import parse
    >>> check_headers(parse("y = x * w"), [("a.csv", ["x"]), ("b.csv", ["w"])], bindings={"w": 1})
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: b.csv has no column x, which a.csv binds per row
    help: every file of --rows has the same input columns
    """
    plan = _Plan(graph, mode, bindings or {}, of, keep, reduce, show_all, expected, None)
    for path, columns in headers:
        plan.start_file(path, columns, wrt, strict, None)


def check_files(
    graph: Graph, paths: list[str], fmt: str, delimiter: str | None = None, **options: Any
) -> None:
    """:func:`check_headers` of the files ``paths`` names (their column names read from
    each), when there are several: one file is checked by its first chunk."""
    if len(paths) > 1:
        from ..data.datafiles import column_names

        headers = [(p, column_names(p, fmt, delimiter)) for p in paths]
        check_headers(graph, headers, **options)


#: Error messages a result keeps as examples (--reduce shows them).
SAMPLES = 5


class _Plan:
    """How the files' columns bind the program: worked out from the first file, checked
    against each later one."""

    def __init__(self, graph, mode, bindings, of, keep, reduce, show_all, expected, engine):
        from ..data.bindings import check_bindings

        self.graph, self.mode, self.of, self.reduce = graph, mode, of, reduce
        out = graph.output if of is None else resolve_name(graph, of)
        self.out_name = graph.display_name(out)
        self.base = self.out_name if self.out_name.isidentifier() else "out"
        self.named = list(graph.named_nodes())
        self.bindings = check_bindings(graph, bindings)
        self.keep, self.show_all, self.expected = list(keep), show_all, list(expected)
        self.given: Any = engine
        self.driver: Driver | None = None  # once the first file has bound the columns
        self.path = ""
        self.per_row: list[str] = []
        self.ignored: list[str] = []
        self.shared: dict[str, object] = {}
        self.wrt: list[str] = []
        self.results: list[str] = []
        self.row_shapes: dict[str, tuple[int, ...]] = {}
        self.totals: dict[str, Any] = {}
        self.count = 0
        self.no_errors: tuple[None, ...] = ()  # the error column of a chunk where none failed
        self.columns: dict[str, str] = {}  # each result's column name, once worked out

    def start_file(self, path: str, columns: list[str], wrt, strict: bool, note) -> None:
        """Bind the columns of a file: the first decides which inputs are per row; every
        later one must have the same."""
        graph = self.graph
        per_row = [c for c in columns if c in graph.inputs]
        first = not self.path
        if not first and set(per_row) != set(self.per_row):
            missing = [c for c in self.per_row if c not in per_row]
            what = (
                f"has no column {missing[0]}, which {self.path} binds per row"
                if missing
                else f"has a column {[c for c in per_row if c not in self.per_row][0]}, "
                f"an input {self.path} does not bind per row"
            )
            raise UsageError(
                f"{path} {what}", hints=["every file of --rows has the same input columns"]
            )
        self.path = path
        known = set(graph.inputs) | set(self.keep) | set(self.expected)
        self.ignored = [c for c in columns if c not in known]
        for name in self.keep + self.expected:
            if name not in columns:
                raise UsageError(f"{path} has no column {name}")
        if strict and self.ignored:
            raise UsageError(
                f"{path} has columns that are not inputs: {listed(self.ignored)}",
                hints=["--keep them, or leave out --strict to ignore them"],
            )
        if self.ignored and note is not None:
            note(f"note: ignored columns of {path} that are not inputs: {listed(self.ignored)}")
        if first:
            self.per_row = per_row
            self._bind(path)
            self.wrt = self._wrt(wrt)
            self._choose()
            grad = self.mode == "grad"
            self.driver = Driver(
                graph,
                of=self.of,
                wrt=self.wrt if grad else None,
                names=None if grad else self.results,
                module=self.given,
            )

    def _bind(self, path: str) -> None:
        if not self.per_row:
            hints = [f"inputs: {', '.join(self.graph.inputs)}"]
            split = [c for c in ";|\t," if len(self.ignored) == 1 and c in self.ignored[0]]
            if split:  # one column named "x;w": the file's cells are split by another mark
                mark = "tab" if split[0] == "\t" else split[0]
                hints.append(f"its one column holds '{mark}': if that splits the columns, "
                             f"say --delimiter '{mark}'")  # fmt: skip
            raise UsageError(f"no column of {path} is an input of the program", hints=hints)
        twice = [c for c in self.per_row if c in self.bindings]
        if twice:
            raise UsageError(
                f"'{twice[0]}' is a column of {path} and bound as well",
                hints=["a column binds its input per row: drop the binding, or the column"],
            )
        shared = dict(self.bindings)
        for name in self.graph.inputs:
            if name not in self.per_row and name not in shared:
                if name not in self.graph.defaults:
                    raise BindingError(
                        f"input '{name}' has no value: no column of {path} and no binding",
                        hints=[f"bind it: {name}=VALUE, or add a column {name}"],
                    )
                shared[name] = self.graph.defaults[name]
        self.shared = shared

    def _wrt(self, wrt) -> list[str]:
        if self.mode != "grad":
            return []
        for name in wrt or ():
            resolve_name(self.graph, name)
        names = list(wrt or self.graph.inputs)
        if self.reduce is not None:
            per_row = [n for n in names if n not in self.graph.inputs or n in self.per_row]
            if wrt and per_row:
                raise UsageError(
                    f"--reduce sums gradients of the inputs every row shares; '{per_row[0]}' "
                    "has a value per row, and so a gradient per row",
                    hints=["drop it from --wrt, or leave out --reduce for a gradient per row"],
                )
            names = [n for n in names if n not in self.per_row]
            if not names:
                raise UsageError(
                    "--reduce: every input is a column; nothing is shared by the rows",
                    hints=["bind the weights (--bindings weights.npz) or drop their columns"],
                )
        return names

    def _choose(self) -> None:
        """The results written: every named value (``show_all``) or the output's; for grad,
        the output and a gradient per ``wrt`` name. No column may take another's name."""
        if self.mode == "grad":
            self.results = [VALUE, *self.wrt]
        else:
            self.results = self.named if self.show_all else [self.out_name]
        taken = {self.column_name(k) for k in self.results}
        if "error" in taken or "error" in self.keep:
            raise UsageError(
                "'error' names the column that says why a row failed",
                hints=["rename the value or the column called error"],
            )
        # A kept input column is the result's column only if the result is that input.
        clash = [
            k for k in self.keep if k in taken and (k not in self.per_row or k == self.out_name)
        ]
        if clash:
            raise UsageError(
                f"--keep {clash[0]}: a result is written in a column of that name too",
                hints=[f"rename the column of {self.path}, or do not keep it"],
            )
        self.keep = [k for k in self.keep if k not in taken]  # an input shown: written once

    @property
    def value_key(self) -> str:
        """The output's key among the results: :data:`VALUE` for grad (an input may have
        the output's name, ``x = sin(x)``), the name for eval."""
        return VALUE if self.mode == "grad" else self.out_name

    def column_name(self, k: str) -> str:
        """A result's column: a value's name (the output's for :data:`VALUE`), or ``do_dw1``
        for ∂o/∂w1 (as diff names it)."""
        found = self.columns.get(k)
        if found is None:
            found = self.columns[k] = self._column_name(k)
        return found

    def _column_name(self, k: str) -> str:
        if k == VALUE:
            return self.out_name
        if self.mode == "grad":
            from ..passes.derivatives import derivative_name

            return derivative_name(self.base, (k,))
        return k

    def _module(self, driver: Driver, columns: dict[str, Column]):
        """The compiled module, for the first chunk's shapes (or the given module's); None
        when those shapes do not fit the program (each row then goes to the interpreter,
        which says so for the rows they do not fit)."""
        if not self.row_shapes:
            given = self.given.shapes if self.given else {}
            self.row_shapes = {
                c: tuple(given[c]) if c in given else col.values.shape[1:]
                for c, col in columns.items()
            }
            one_row = {c: np.zeros(s) if s else 0.0 for c, s in self.row_shapes.items()}
            return driver.module({**self.shared, **one_row})
        return driver.compiled

    def chunk(self, path: str, start: int, raw: Mapping, reserve=None) -> tuple[dict, Any]:
        """The chunk's output columns (``error`` last) and which rows succeeded; ``reserve``
        (see :meth:`.Slabs.reserve`): where the columns kept go, for the engine to compute
        them there."""
        assert self.driver is not None, "start_file binds the columns first"
        columns = {c: to_column(c, raw[c]) for c in self.per_row}
        n = len(next(iter(columns.values())).values)
        fits = self._module(self.driver, columns) is not None
        problems: dict[int, str] = {}
        doubtful: set[int] = set()  # rows the interpreter takes: an empty cell, an odd shape
        for c, col in columns.items():
            for r, why in col.problems.items():
                problems.setdefault(r, why)
            doubtful.update(col.odd)
            fits = fits and col.values.shape[1:] == self.row_shapes[c]
        doubtful.update(problems)
        odd = None
        if doubtful:
            odd = np.zeros(n, dtype=bool)
            odd[list(doubtful)] = True
        inputs = None  # shapes the engine was not compiled for: the interpreter takes every row
        if fits:  # (a cell that is not finite: the module flags its row, see unread_inputs)
            inputs = {**self.shared, **{c: col.values for c, col in columns.items()}}

        def row(r: int) -> dict:
            return {**self.shared, **{c: col.cell(r) for c, col in columns.items()}}

        into = None
        module = self.driver.compiled
        if reserve is not None and inputs is not None and module is not None and module.writes:
            columns_of = {k: self.column_name(k) for k in self.results}
            parts = reserve(list(columns_of.values()), n)
            into = {k: parts[c] for k, c in columns_of.items() if c in parts}
        results, failures, good = self.driver.rows(
            inputs, n, row, doubtful=odd, skip=problems, into=into
        )
        if not problems and not failures:  # no row failed: one tuple of None per length
            if len(self.no_errors) != n:
                self.no_errors = (None,) * n
            return self._table(self._kept(raw, columns), results, self.no_errors, good, n), good
        errors: list[str | None] = [None] * n
        for r, why in problems.items():
            errors[r] = f"row {start + r + 1}: {why} ({path})"
        for r, e in failures.items():
            place = e.where()
            errors[r] = f"row {start + r + 1}: {e.message} ({path}{', ' + place if place else ''})"
        return self._table(self._kept(raw, columns), results, errors, good, n), good

    def _kept(self, raw: Mapping, columns: dict) -> Mapping:
        """The kept columns: an input's as the numbers the program read where every cell is
        one (JSON writes numbers, not a CSV file's text), any other as read."""
        numbers = {
            c: columns[c].values
            for c in self.keep
            if c in columns and not columns[c].problems and not columns[c].odd
            and columns[c].values.ndim == 1
        }  # fmt: skip
        return {**raw, **numbers} if numbers else raw

    def _table(self, raw, results, errors, good, n) -> dict:
        table: dict = {c: raw[c] for c in self.keep}
        failed = not good.all()
        for k in self.results:
            values = results.get(k)
            if values is None:
                values = np.full(n, np.nan)
            if isinstance(values, list):  # rows of different shapes
                cells = [_cell(v) if ok else None for v, ok in zip(values, good)]
                if any(isinstance(c, list) for c in cells) and any(
                    isinstance(c, float) for c in cells
                ):  # numbers and lists in one column: each as its JSON text
                    cells = [None if c is None else json.dumps(c) for c in cells]
                table[self.column_name(k)] = cells
            elif values.ndim == 1:
                if failed:
                    values[~good] = np.nan  # a copy already (rows were patched)
                table[self.column_name(k)] = values
            else:  # a tensor per row: a list cell
                table[self.column_name(k)] = [
                    v.tolist() if ok else None for v, ok in zip(values, good)
                ]
        table["error"] = errors
        return table

    def accumulate(self, table: dict, good) -> None:
        """Add the chunk's rows that succeeded to the sums --reduce takes."""
        self.count += int(good.sum())
        for k in [self.value_key, *self.wrt]:
            values = table[self.column_name(k)]
            if isinstance(values, list):
                rows = np.asarray([v for v, ok in zip(values, good) if ok], dtype=float)
            else:
                rows = values[good]
            total = rows.sum(axis=0) if len(rows) else 0.0
            self.totals[k] = self.totals.get(k, 0.0) + total

    def reduced(self, how: str) -> tuple[float | None, dict[str, object]]:
        if not self.count:
            return None, {}
        scale = 1.0 / self.count if how == "mean" else 1.0
        sums = {k: _plain(v * scale) for k, v in self.totals.items()}
        return sums.pop(self.value_key), sums


def _cell(v):
    """A row's value as a cell: a float, or nested lists."""
    return float(v) if np.ndim(v) == 0 else np.asarray(v).tolist()


def _plain(v):
    return float(v) if np.ndim(v) == 0 else np.asarray(v)
