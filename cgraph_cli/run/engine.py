"""The compiled engine: a graph's NumPy module (``cgraph compile --target numpy``) executed
in-process once and kept on the graph, for work that runs a graph many times (the rows of a
data file, the batches of training), and :class:`Driver`, which runs it with the interpreter
behind it. Rows of numbers go through the generated code as whole columns; rows of tensors one
at a time (see :mod:`cgraph_cli.run.compile`).

Rows mode raises nothing for a value that is not finite: each call also returns, per row, a
number that is not finite where some value on the way was not, so that the caller can give
those rows to the interpreter, which says what went wrong where. A module compiled for a
batch (not rows mode) raises instead, and the interpreter names the node.

>>> import numpy as np
>>> from cgraph_cli import parse
>>> run = engine(parse("y = log(x) * w"), bindings={"x": 1.0, "w": 2.0})
>>> value, grads, ok = run.grad_rows({"x": np.array([1.0, np.e, -1.0]), "w": 2.0}, 3)
>>> value.tolist()[:2], grads["w"].tolist()[:2], ok.tolist()
([0.0, 2.0], [0.0, 1.0], [True, True, False])
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from typing import Any

from ..core.arrays import np
from ..core.errors import CgraphError, EvalError
from ..core.ir import Graph, resolve_name, wrt_node

_FILENAME = "<cgraph compiled>"


class Engine:
    """``forward(**inputs) -> (named values, flags)`` and ``grad(**inputs) -> (value,
    gradients, flags)``, each input a value for every row (a leading axis) or one value shared
    by all rows; ``shapes``: one row's shape of each input; ``source``: the module's text. A
    module not in rows mode (a batch's) returns no flags: it raises where a value is not
    finite."""

    __slots__ = ("forward", "grad", "shapes", "source", "checked", "writes")

    def __init__(self, source: str) -> None:
        namespace: dict = {"__name__": "cgraph_compiled", "__file__": _FILENAME}
        exec(compile(source, _FILENAME, "exec"), namespace)  # our own generated code
        self.forward = namespace["forward"]
        self.grad = namespace["grad"]
        self.shapes: dict[str, tuple[int, ...]] = namespace["SHAPES"]
        self.source = source
        # Rows mode: per function, the results to check (the others pass a value that is
        # not finite on to one of them, or to a watched value); None: every result.
        self.checked: dict[str, list[str]] | None = namespace.get("CHECKED")
        # Rows of numbers: some result may be computed into an array the caller gives.
        self.writes = "_dest" in namespace

    def evaluate_rows(
        self, inputs: Mapping, n: int, keep: list[str] | None = None, into: Mapping | None = None
    ):
        """Every named value for ``n`` rows (each an array with a leading axis of ``n``; a
        value shared by every row, a read-only view of it), and which rows are sound: every
        value on the way finite (each of ``keep`` checked here, every value when None; the
        module's flags stand for the values the output does not read). Rows that are not
        sound hold anything: the interpreter answers for them. The inputs given are not
        checked. ``into``: an array of ``n`` rows by name that the module may compute that
        value into (and give back), rather than into a new one."""
        try:
            named, flags = self.forward(into, **inputs)
        except _FAILURES:  # no row is known sound: the interpreter answers for each
            return {}, np.zeros(n, dtype=bool)
        kinks = named.pop(" kinks", None)
        kept = named if keep is None else [k for k in keep if k in named]
        if self.checked is not None:
            kept = [k for k in kept if k in self.checked["forward"]]
        ok = _sound(flags, [named[k] for k in kept], n)
        if kinks is not None:
            named[" kinks"] = [np.broadcast_to(np.asarray(k, dtype=float), (n,)) for k in kinks]
        return {k: v if k == " kinks" else _per_row(v, n) for k, v in named.items()}, ok

    def grad_rows(self, inputs: Mapping, n: int, into: Mapping | None = None):
        """The output's value and its gradients for ``n`` rows, and which rows are sound;
        ``into`` as for :meth:`evaluate_rows` (:data:`VALUE` for the value)."""
        try:
            value, grads, flags = self.grad(into, **inputs)
        except _FAILURES:
            return np.full(n, np.nan), {}, np.zeros(n, dtype=bool)
        checked = [value, *grads.values()]
        if self.checked is not None:
            checked = [v for k, v in {"": value, **grads}.items() if k in self.checked["grad"]]
        ok = _sound(flags, checked, n)
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
    or none). ``flags``: the values the module watched (a list: rows of numbers) or a number
    per row that is not finite where one was (rows of tensors). One sum over everything
    first (a read of each value, nothing written; an array's by :func:`_squares`): finite,
    every row is sound; else each row is looked at (the sum may also have overflowed)."""
    values = [*flags] if flags.__class__ is list else [flags]
    seen: set[int] = set()
    with np.errstate(all="ignore"):
        total = 0.0
        for v in [*values, *results]:
            if id(v) not in seen:  # a gradient may be another's array (b's, n's in n = t + b)
                seen.add(id(v))
                total += _squares(v) if v.__class__ is np.ndarray else v
        if total - total == 0.0:
            return np.ones(n, dtype=bool)
        ok = np.ones(n, dtype=bool)
        for r in [*values, *results]:
            r = np.asarray(r)
            if r.ndim == 0 or r.shape[0] != n:
                if not np.isfinite(r).all():
                    ok[:] = False
            elif r.ndim == 1:
                ok &= np.isfinite(r)
            else:
                ok &= np.isfinite(r.reshape(n, -1)).all(axis=1)
    return ok


def _squares(v) -> float:
    """A sum over an array that is finite where its values are (and none is over 1e154):
    BLAS's dot of a float array with itself, a third of a sum's time; a sum otherwise (a
    value every row shares, broadcast: its few numbers, not a copy).

    >>> float(_squares(np.array([3.0, 4.0]))), float(_squares(np.broadcast_to(2.0, (3,))))
    (25.0, 6.0)
    """
    if v.dtype.char == "d" and v.flags.c_contiguous:  # float64
        return np.vdot(v, v)
    return np.add.reduce(v, None)


def engine(
    graph: Graph,
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    bindings: Mapping | None = None,
    gradient: bool = True,
    kinks: bool = False,
    rows: bool = True,
    names: list[str] | None = None,
    strict: bool = False,
) -> Engine:
    """The engine for ``graph`` (``of``, ``wrt`` as for ``grad``), with the shapes that
    ``bindings`` (one row's values; with ``rows`` False, a whole batch's) give its inputs;
    compiled once per graph and shapes. ``gradient`` False: ``forward`` only (the derivative
    program is not built). ``kinks``: :meth:`Engine.evaluate_rows` also gives the kink
    quantities, under ``" kinks"``. ``rows`` False: the module as ``cgraph compile`` writes it,
    which raises ``DomainError`` (an ``ArithmeticError``) where a value is not finite.
    ``names``: the only named values :meth:`Engine.evaluate_rows` gives (default: all).
    ``strict`` (not rows): inputs of other shapes (a batch axis too) refused with a
    ``TypeError``.

    >>> from cgraph_cli import parse
    >>> graph = parse("y = x * x")
    >>> engine(graph) is engine(graph), engine(graph).shapes
    (True, {'x': ()})
    """
    from ..passes.optimize import known_shapes

    shapes = known_shapes(graph, bindings or {})
    given = None if names is None else tuple(names)
    key = repr(
        ("engine", of, tuple(wrt or ()), sorted(shapes.items()), gradient, kinks, rows, given)
        + ((True,) if strict else ())
    )
    found = graph.memo.get(key)
    if found is None:
        from .compile import compile_module

        source = compile_module(
            graph, "numpy", of=of, wrt=wrt, bindings=bindings, rows=rows, gradient=gradient,
            kinks=kinks, names=None if given is None else list(given), strict=strict,
        )  # fmt: skip
        found = graph.memo[key] = Engine(source)
    return found


#: The key of the output's value among a gradient's results, beside each gradient under its
#: input's name: no name is empty, and the output may take an input's name (``x = sin(x)``).
VALUE = ""


class Driver:
    """``graph`` run many times, at the compiled module's speed and with the interpreter's
    answers: the module runs first; where it flags a row (:meth:`rows`) or raises
    (:meth:`batch`), the interpreter runs those bindings again and gives their results, or its
    error, placed at the node that failed. Without ``wrt``, a run gives the values ``names``
    (default: the output's, or that of ``of``); with ``wrt``, the output's value under
    :data:`VALUE` and its gradient with respect to each name of ``wrt``. ``module``: a rows
    module to run (one built from its source elsewhere: the Dask workers), else compiled here.

    >>> import numpy as np
    >>> from cgraph_cli import parse
    >>> drive = Driver(parse("y = sqrt(x) * w"), wrt=["w"])
    >>> x = [4.0, -1.0, 9.0]
    >>> _ = drive.module({"x": 1.0, "w": 3.0})  # compiled for one row's shapes
    >>> def row(r):  # one row's bindings, for the interpreter
    ...     return {"x": x[r], "w": 3.0}
    >>> results, errors, good = drive.rows({"x": np.array(x), "w": 3.0}, 3, row)
    >>> results[VALUE].tolist(), results["w"].tolist(), good.tolist()
    ([6.0, nan, 9.0], [2.0, nan, 3.0], [True, False, True])
    >>> type(errors[1]).__name__, errors[1].where()  # the node that failed, in the program
    ('DomainError', '<expr>:1:5')
    """

    __slots__ = ("graph", "of", "wrt", "names", "out_name", "_modules")

    def __init__(
        self,
        graph: Graph,
        *,
        of: str | None = None,
        wrt: list[str] | None = None,
        names: list[str] | None = None,
        module: Engine | None = None,
    ) -> None:
        self.graph, self.of, self.wrt = graph, of, wrt
        self.out_name = graph.display_name(graph.output if of is None else resolve_name(graph, of))
        self.names = list(names) if names is not None else [self.out_name]
        # Rows mode (True) and batch (False): the module, or None where none compiles.
        self._modules: dict[bool, Engine | None] = {} if module is None else {True: module}

    @property
    def compiled(self) -> Engine | None:
        """The rows module that runs: given, or compiled by :meth:`module` (None: not yet,
        or none compiles)."""
        return self._modules.get(True)

    def module(self, bindings: Mapping) -> Engine | None:
        """The rows module (the one given, else compiled at the first call for the shapes of
        ``bindings``, one row's values, and kept), or None when the program does not compile
        for those shapes: the interpreter then answers for every row, and says why for the
        rows those shapes do not fit. A gradient asked of a tensor output is raised, once
        rather than once a row."""
        if True not in self._modules:
            from ..passes.grad_graph import NotANumber

            try:
                self._modules[True] = self._compile(bindings, rows=True)
            except NotANumber:
                raise
            except CgraphError:
                self._modules[True] = None
        return self._modules[True]

    def _compile(self, bindings: Mapping, *, rows: bool) -> Engine:
        grad = self.wrt is not None
        names = None if grad or not rows else self.names  # rows: what the driver keeps
        return engine(
            self.graph, of=self.of, wrt=self.wrt, bindings=bindings, gradient=grad, rows=rows,
            names=names, strict=not rows,
        )  # fmt: skip

    def interpret(self, bindings: Mapping) -> dict[str, Any]:
        """The interpreter's results for one set of bindings; its error, placed at the node
        that failed, where they fail.

        >>> from cgraph_cli import parse
        >>> Driver(parse("y = x * w"), wrt=["w"]).interpret({"x": 3.0, "w": 2.0})
        {'': 6.0, 'w': 3.0}
        """
        from .program import differentiated, evaluated

        if self.wrt is None:
            ran, values, _ = evaluated(self.graph, bindings, self.of)
            named = ran.named_nodes()
            return {k: values[named[k]] for k in self.names}
        ran, values, adjoints, out = differentiated(self.graph, bindings, self.of)
        return {VALUE: values[out], **{w: adjoints[wrt_node(ran, w)] for w in self.wrt}}

    def rows(
        self,
        inputs: Mapping | None,
        n: int,
        row: Callable[[int], Mapping],
        *,
        doubtful: Any = None,
        skip: Container[int] = (),
        into: Mapping | None = None,
    ) -> tuple[dict[str, Any], dict[int, CgraphError], Any]:
        """``n`` rows' results: the module that :meth:`module` gave run once over ``inputs``
        (whole columns, and the values every row shares; None: no module takes them), then
        each row it flags, and each row of the mask ``doubtful``, run by the interpreter on
        ``row(r)``, except the rows of ``skip`` (the caller says why they fail). Gives the
        results (a column each; a list of rows where rows differ in shape), the interpreter's
        error for each row it refused, and which rows have results (see the class's example).
        ``into``: arrays of ``n`` rows, by result, the module may write those results into."""
        module = self._modules.get(True)
        if module is None or inputs is None:
            results: dict[str, Any] = {}
            good = np.zeros(n, dtype=bool)
        else:
            results, good = self._module_rows(module, inputs, n, into)
            if doubtful is not None:
                good &= ~doubtful
        failures: dict[int, CgraphError] = {}
        flagged = [] if np.count_nonzero(good) == n else np.flatnonzero(~good).tolist()
        if flagged:  # rows to patch: the columns become writable copies
            results = {k: np.array(v, dtype=float) for k, v in results.items()}
        for r in flagged:
            if r in skip:
                continue
            try:
                found = self.interpret(row(r))
            except CgraphError as e:
                failures[r] = e
                continue
            for k, v in found.items():
                _put(results, k, r, v, n)
            good[r] = True
        return results, failures, good

    def _module_rows(self, module: Engine, inputs: Mapping, n: int, into) -> tuple[dict, Any]:
        if self.wrt is None:
            named, ok = module.evaluate_rows(inputs, n, self.names, into)
            return {k: named[k] for k in self.names if k in named}, ok
        value, grads, ok = module.grad_rows(inputs, n, into)
        return {VALUE: value, **{w: grads[w] for w in self.wrt if w in grads}}, ok

    def batch(self, inputs: Mapping) -> dict[str, Any]:
        """The value and gradients (a driver with ``wrt``) for one set of bindings, a batch
        along the program's own axes: the module's, compiled for their shapes at the first
        call; where it raises (a value not finite, a domain left), the interpreter's error,
        which names the node (and the element). A program with if/else or loops compiles to
        no module: the interpreter answers.

        >>> from cgraph_cli import parse
        >>> drive = Driver(parse("y = sum(log(x) * w)"), wrt=["w"])
        >>> drive.batch({"x": [1.0, 1.0], "w": 2.0})
        {'': 0.0, 'w': 0.0}
        >>> try:
        ...     drive.batch({"x": [1.0, -1.0], "w": 2.0})
        ... except EvalError as e:
        ...     print(type(e).__name__, e.where())
        DomainError <expr>:1:9
        >>> drive.batch({"x": [1.0, 1.0, 1.0], "w": 2.0})  # other shapes: the interpreter's
        {'': 0.0, 'w': 0.0}
        """
        assert self.wrt is not None, "a batch gives gradients: the driver needs wrt"
        module = self._modules.get(False)
        if module is None:
            if self.graph.control is not None:
                return self.interpret(inputs)
            module = self._modules[False] = self._compile(inputs, rows=False)
        try:
            value, grads = module.grad(**inputs)
        except ArithmeticError:  # the module's DomainError: the interpreter says where
            raise self._placed(inputs) from None
        except (TypeError, ValueError):  # other shapes than the first call's (a batch axis,
            return self.interpret(inputs)  # too): the interpreter's answer
        return {VALUE: value, **grads}

    def _placed(self, inputs: Mapping) -> EvalError:
        try:
            self.interpret(inputs)
        except EvalError as e:
            return e
        return EvalError(
            "a result is not finite: the sum of the gradients over the batch overflows"
        )


def _put(results: dict, k: str, r: int, v, n: int) -> None:
    """Row ``r`` of result ``k`` set to ``v``: in its column of arrays when ``v`` has its
    rows' shape, else the column becomes a list of rows (rows of different shapes)."""
    column = results.get(k)
    shape = np.shape(v)
    if column is None:
        column = results[k] = np.full((n, *shape), np.nan)
    if isinstance(column, np.ndarray) and column.shape[1:] != shape:
        column = results[k] = list(column)
    column[r] = v


def compiled_grad(graph: Graph, bindings: Mapping | None, of: str | None = None):
    """``(value, gradients)`` of a straight-line tensor program from its compiled module,
    from the second call on the same graph with the same shapes (the first is the
    interpreter's: a program run once is not worth compiling); None where the interpreter
    answers: the first call, a program of numbers (its float loops are as fast), one with
    if/else or loops, one that does not compile, and bindings the module refuses (a value
    not finite: the interpreter says where). A program with loops runs as a scan
    (:mod:`cgraph_cli.run.scan`): at once when its loops are long, else from the second call;
    its value and gradients have ``None`` for the output's name."""
    if graph.control is not None:
        return _scanned(graph, bindings, of, gradient=True)
    # Straight to the module of the last call, which tests the inputs itself.
    lane = graph.memo.get("lanes", _NONE).get((of, True)) if bindings else None
    if lane is not None and bindings:
        try:
            value, grads = lane.grad(**bindings)
        except TypeError:  # inputs of other shapes or names: the long way, below
            pass
        except _FAILURES:
            return None
        else:
            return value, _owned(grads, bindings, inputs=False)
    found = _compiled(graph, bindings, of, gradient=True)
    if found is None:
        return None
    module, given = found
    try:
        value, grads = module.grad(**given)
    except _FAILURES:
        return None
    from ..data.bindings import owned

    _remember(graph, bindings, given, of, True, module)
    return value, owned(grads, given)


def compiled_forward(graph: Graph, bindings: Mapping | None, of: str | None = None):
    """Every named value of a straight-line tensor program from its compiled module (the
    forward pass alone), as :func:`compiled_grad` decides when; None where the interpreter
    answers, and where the output asked for has no name of its own. A program with loops
    runs as a scan, as for :func:`compiled_grad`: its output's value alone, under ``""``."""
    if graph.control is not None:
        found = _scanned(graph, bindings, of, gradient=False)
        return None if found is None else {"": found[0]}
    # Straight to the module of the last call, which tests the inputs itself.
    lane = graph.memo.get("lanes", _NONE).get((of, False)) if bindings else None
    if lane is not None and bindings:
        try:
            return _owned(lane.forward(**bindings), bindings)
        except TypeError:  # inputs of other shapes or names: the long way, below
            pass
        except _FAILURES:
            return None
    found = _compiled(graph, bindings, of, gradient=False)
    if found is None:
        return None
    module, given = found
    try:
        named = module.forward(**given)
    except _FAILURES:
        return None
    out = graph.display_name(graph.output if of is None else resolve_name(graph, of))
    if out not in named:
        return None
    from ..data.bindings import owned

    _remember(graph, bindings, given, of, False, module)
    return owned(named, given)


def _scanned(graph: Graph, bindings: Mapping | None, of: str | None, *, gradient: bool):
    """A program with loops run as a scan, or None where the graph that runs answers: a
    program with conditionals, nested loops..., and the first call of a short loop (its
    unrolled graph is cheaper than compiling the body)."""
    from .scan import AT_ONCE, scan_forward, scan_grad, steps_times_body

    if not hasattr(graph.control, "loops"):  # a graph that ran, one branch, loops unrolled
        return None
    seen: set = graph.memo.setdefault("scanned", set())
    if (of, gradient) not in seen and steps_times_body(graph, bindings) < AT_ONCE:
        seen.add((of, gradient))
        return None
    return (scan_grad if gradient else scan_forward)(graph, bindings, of)


def _compiled(graph: Graph, bindings: Mapping | None, of: str | None, *, gradient: bool):
    """The compiled module for ``graph`` at these bindings' shapes and the bindings it takes,
    from the second call on; None where the interpreter answers (see :func:`compiled_grad`)."""
    from ..data.bindings import check_bindings, input_values
    from .evaluate import compile_program

    if graph.control is not None:
        return None
    if not compile_program(graph).tensor and not any(  # numbers: NumPy is not even imported
        _tensor_like(v) for v in [*(bindings or {}).values(), *graph.defaults.values()]
    ):
        return None
    given, missing = input_values(graph, check_bindings(graph, bindings))
    if missing or not (
        compile_program(graph).tensor or any(v.__class__ is not float for v in given.values())
    ):
        return None
    ndarray = np.ndarray  # shapes by position: the inputs come in the graph's order
    shapes = tuple(v.shape if isinstance(v, ndarray) else () for v in given.values())
    key = (of, gradient, shapes)
    seen: dict = graph.memo.setdefault("compiled", {})  # (of, gradient, shapes) -> what runs
    found = seen.get(key)
    if found is None:  # the first call: counted
        seen[key] = "called"
        return None
    if found == "called":
        try:
            found = engine(graph, of=of, bindings=given, rows=False, gradient=gradient, strict=True)
        except CgraphError:
            found = "interpreted"  # does not compile (a tensor output, say): the interpreter
        seen[key] = found
    if not isinstance(found, Engine):
        return None
    return found, given


def _remember(graph: Graph, bindings: Mapping | None, given: dict, of, gradient: bool, found):
    """Keep the engine that answered a call that bound every input as the lane of the next
    call (tried first: its module refuses inputs of other shapes with a TypeError)."""
    if bindings is not None and len(bindings) == len(given):
        graph.memo.setdefault("lanes", {})[of, gradient] = found


_NONE: dict = {}  # (no lanes yet)


def _owned(results: dict, given: Mapping, *, inputs: bool = True) -> dict:
    """``results`` with each array the module returned as it is where it is its own (made
    by the module: no base, not a binding), copied otherwise (as
    :func:`~cgraph_cli.data.bindings.owned`). ``inputs`` False: no result is a binding
    itself (a gradient module copies those), so none is looked for."""
    ids = {id(v) for v in given.values()} if inputs else ()
    for v in results.values():
        if v.__class__ is not float and (v.__class__ is not np.ndarray or v.base is not None):
            break
        if id(v) in ids:
            break
    else:
        return results
    from ..data.bindings import owned

    return owned(results, given)


def _tensor_like(value) -> bool:
    """Whether a binding may be a tensor (a list, an array, JSON text of one), as
    :func:`~cgraph_cli.data.bindings.check_value` tells them apart, without NumPy."""
    if isinstance(value, str):
        return value.lstrip().startswith("[")
    return isinstance(value, (list, tuple)) or hasattr(value, "__array__")
