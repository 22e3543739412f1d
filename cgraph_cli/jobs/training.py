"""``cgraph train``: gradient descent on the inputs a user names (the parameters), on a program
alone or over mini-batches of a data file's rows.

The output is the loss. Each step binds the parameters, the batch's columns (each column input
holds the batch's rows along its first axis, as a PyTorch model takes a batch) and the other
bindings, runs the program's compiled NumPy module once for the whole batch (``cgraph compile
--target numpy``: never a loop over rows in Python), and updates the parameters with an
optimizer of :mod:`cgraph_cli.jobs.optim`. A loss that is a number is used as it is; a loss with
one value per row is averaged (``reduce="sum"``: summed). When the loss or a gradient stops
being finite, training stops, and cgraph's interpreter names the step and the node that failed.

>>> result = train("input x = 3\\nf = (x - 1)^2", wrt=["x"], lr=0.1, steps=50)
>>> round(float(result.params["x"]), 6), result.steps
(1.000029, 50)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..core.arrays import np
from ..core.errors import EvalError, UsageError
from ..core.ir import Graph, GraphBuilder, resolve_name
from ..core.ops import OPS
from ..run.engine import VALUE, Driver

#: Keys of a weights file that hold the training state (--resume), not parameters.
STATE_PREFIX = "__train__/"


class TrainingStopped(EvalError):
    """The loss or a gradient stopped being finite (exit 4): the step, and the interpreter's
    error naming the node."""


class TrainResult:
    """What training did: the parameters learned (``params``), the loss at each step
    (``history``: step, epoch, loss, gradient norm, learning rate, seconds), the steps taken
    in all (``steps``, counting a resumed run's), why it stopped (``stopped``: "steps",
    "epochs" or "tol"), the loss with the final parameters over all the data (``final_loss``)
    and the seconds it took.

    >>> r = train("input x = 0; f = (x - 2)^2", wrt=["x"], lr=0.25, steps=3)
    >>> r, r.params, [h["loss"] for h in r.history]
    (<TrainResult: 3 steps, loss 0.0625 (steps)>, {'x': 1.75}, [4.0, 1.0, 0.25])
    """

    __slots__ = ("params", "history", "steps", "stopped", "final_loss", "seconds", "val_loss")

    def __init__(self, params, history, steps, stopped, final_loss, seconds, val_loss) -> None:
        self.params: dict[str, Any] = params
        self.history: list[dict] = history
        self.steps: int = steps
        self.stopped: str = stopped
        self.final_loss: float = final_loss
        self.seconds: float = seconds
        self.val_loss: list[tuple[int, float]] = val_loss

    @property
    def loss(self) -> float:
        """The loss of the last step (before its update)."""
        return self.history[-1]["loss"] if self.history else self.final_loss

    def __repr__(self) -> str:
        return f"<TrainResult: {self.steps} steps, loss {self.final_loss:.6g} ({self.stopped})>"


# --- the loss and its gradient ------------------------------------------------------------------
class Objective:
    """The loss and its gradients with respect to the parameters, for given inputs: the
    program's NumPy module, compiled once per set of input shapes (a last, smaller batch
    gets its own), run by a :class:`~cgraph_cli.run.engine.Driver`, whose interpreter names
    the node where the module raises."""

    def __init__(self, graph: Graph, of: str | None, wrt: list[str], reduce: str) -> None:
        self.graph, self.of, self.wrt, self.reduce = graph, of, wrt, reduce
        self.drivers: dict[tuple, Driver] = {}

    def __call__(self, inputs: Mapping[str, object], rows: int | None) -> tuple[float, dict]:
        key = (rows,)  # only the batch's size changes the shapes (parameters keep theirs)
        driver = self.drivers.get(key)
        if driver is None:
            driver = self.drivers[key] = self._driver(inputs, rows)
        grads = driver.batch(inputs)
        value = grads.pop(VALUE)
        if np.ndim(value):  # the interpreter's answer (if/else or loops): no reduction here
            raise UsageError(f"the loss {driver.out_name} must be a number")
        return float(value), grads

    def _driver(self, inputs: Mapping[str, object], rows: int | None) -> Driver:
        """The driver of the program, or, for a loss with one value per row, of the program
        with its mean (or sum) as the output."""
        from ..run.program import evaluated

        if self.graph.control is not None:  # if/else or loops: the interpreter, step by step
            return Driver(self.graph, of=self.of, wrt=self.wrt)
        ran, values, out = evaluated(self.graph, inputs, self.of)  # shapes checked, errors placed
        graph, of = self.graph, self.of
        shape = np.shape(values[out])
        if shape:
            if rows is None or shape[0] != rows:
                raise UsageError(
                    f"the loss {ran.display_name(out)} is a {shape} tensor: it must be a number, "
                    "or one number per row of the batch",
                    hints=["reduce it in the program: loss = mean(...)"],
                )
            graph, of = reduced(self.graph, out, self.reduce)
        return Driver(graph, of=of, wrt=self.wrt)


def evaluate_value(graph: Graph, bindings: Mapping, of: str | None):
    from ..run.program import evaluated

    _, values, out = evaluated(graph, bindings, of)
    return values[out]


def reduced(graph: Graph, output: int, how: str) -> tuple[Graph, str]:
    """``graph`` with one more statement: the mean (or sum) of node ``output``; and its name."""
    b = GraphBuilder(graph.source)
    g = b.graph
    new: list[int] = []
    for i in range(len(graph.ops)):
        new.append(b.copy(graph, i, tuple(new[a] for a in graph.args[i])))
        g.labels[new[i]] = graph.labels[i]
    for kind, name, node, _ in graph.statements():
        b.statement(kind, name, new[node])
    g.names = {name: new[node] for name, node in graph.names.items()}
    g.defaults = dict(graph.defaults)
    name = "loss"
    while name in g.names or name in g.inputs:
        name = "_" + name
    node = b.add(OPS[how], (new[output],), graph.starts[output], graph.ends[output])
    b.name(node, name)
    b.statement("=", name, node)
    return b.finish(node, name), name


# --- data ---------------------------------------------------------------------------------------
def load_rows(
    path: str, fmt: str | None, graph: Graph, wrt: list[str], delimiter: str | None = None
) -> tuple[dict, int]:
    """Every row of the data files ``path`` names, as one array per column input (rows along
    the first axis), and the number of rows. Columns that are not inputs are left out; a
    column that is a parameter, a cell that is not a value, rows of different shapes are
    :class:`UsageError`."""
    from ..data.datafiles import data_format, expand, read_chunks, to_column

    paths = expand(path)
    kind = data_format(paths[0], fmt)
    parts: dict[str, list] = {}
    for file, start, chunk in read_chunks(paths, kind, 1 << 20, delimiter=delimiter):
        for name, cells in chunk.items():
            if name not in graph.inputs:
                continue
            if name in wrt:
                raise UsageError(
                    f"'{name}' is a parameter (--wrt) and a column of {file}",
                    hints=["parameters are learned: drop the column, or the name from --wrt"],
                )
            column = to_column(name, cells)
            if column.problems or column.odd:
                r, why = next(iter(column.problems.items()), (next(iter(column.odd), 0), ""))
                why = why or f"its {name} has another shape than the first row's"
                raise UsageError(f"{file}: row {start + r + 1}: {why}")
            parts.setdefault(name, []).append(column.values)
    if not parts:
        raise UsageError(
            f"no column of {path} is an input of the program",
            hints=["the program's inputs: " + ", ".join(graph.inputs)],
        )
    data = {name: np.concatenate(arrays) for name, arrays in parts.items()}
    n = len(next(iter(data.values())))
    if n == 0:
        raise UsageError(f"{path} has no rows")
    return data, n


# --- weights files --------------------------------------------------------------------------------
def save_weights(path: str, params: Mapping, state: Mapping | None = None) -> None:
    """The parameters under their names (``--bindings`` reads them back) and the training
    state under :data:`STATE_PREFIX`, written to a temporary file beside ``path`` then moved
    over it: a file that exists is always whole."""
    arrays = {name: np.asarray(value, dtype=float) for name, value in params.items()}
    for key, value in (state or {}).items():
        arrays[STATE_PREFIX + key] = np.asarray(value)
    import io

    from ..data.outputs import write_file

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_file(path, buffer.getvalue())


def read_weights(path: str) -> tuple[dict, dict]:
    """A weights file's parameters and its training state (empty when it has none)."""
    from ..data.arrayfiles import Unreadable, read_npz
    from ..data.sources import read_limited

    try:
        arrays = read_npz(read_limited(path, 1 << 31, "a weights file"))
    except Unreadable as e:
        raise UsageError(
            f"cannot read {path}: {e}", hints=["--resume takes a file written by train -o"]
        ) from None
    params = {k: v for k, v in arrays.items() if not k.startswith(STATE_PREFIX)}
    state = {k[len(STATE_PREFIX) :]: v for k, v in arrays.items() if k.startswith(STATE_PREFIX)}
    return params, state


# --- the loop -----------------------------------------------------------------------------------
def train(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    wrt: list[str],
    of: str | None = None,
    rows: str | None = None,
    rows_format: str | None = None,
    delimiter: str | None = None,
    val_rows: str | None = None,
    optimizer: str = "sgd",
    lr: float = 0.01,
    momentum: float | None = None,
    dampening: float | None = None,
    nesterov: bool = False,
    betas: tuple[float, float] | None = None,
    eps: float | None = None,
    weight_decay: float | None = None,
    amsgrad: bool = False,
    schedule: str = "constant",
    step_size: int = 100,
    gamma: float = 0.1,
    clip_norm: float | None = None,
    steps: int | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
    reduce: str = "mean",
    tol: float | None = None,
    save: str | None = None,
    save_every: int | None = None,
    resume: str | None = None,
    on_step: Callable[[dict], object] | None = None,
    watch: Callable[[int, dict], object] | None = None,
) -> TrainResult:
    """Gradient descent on ``wrt`` (see the module's docstring). Without ``rows``: ``steps``
    steps (default 100). With ``rows`` (a data file, as ``--rows`` takes it): ``epochs``
    passes (default 1) in mini-batches of ``batch_size`` rows (default: all), in a new order
    each epoch with ``shuffle`` (from ``seed``), or ``steps`` steps; ``rows_format`` and
    ``delimiter`` as ``--rows-format`` and ``--delimiter`` take them. ``tol``: stop when the loss
    changes by less. ``save``: the weights file, written at the end and every ``save_every``
    steps; ``resume``: a weights file to start from (its parameters and optimizer state):
    ``steps``/``epochs`` more. ``on_step`` is called with each step's record; ``watch``
    with each step's number and inputs (the batch and the parameters before its update, which
    the update then changes in place: copy what is kept).

    >>> r = train("input w = 0, b = 0; loss = mean((w * x + b - y)^2)", wrt=["w", "b"],
    ...           rows="sample:linear.csv", lr=0.1, epochs=200)
    >>> round(r.params["w"], 2), round(r.params["b"], 2)
    (3.02, -1.05)
    """
    from ..parse import parse
    from ..run.control import run_graph
    from .optim import learning_rate
    from .optim import optimizer as make_optimizer

    graph = program if isinstance(program, Graph) else run_graph(parse(program))
    if not wrt:
        raise UsageError("name the parameters to learn: --wrt W1,b1")
    for name in wrt:
        if name not in graph.inputs:
            resolve_name(graph, name)
            raise UsageError(f"'{name}' is computed by the program: only inputs are learned")
    if of is not None:
        resolve_name(graph, of)
    from .optim import check_settings

    check_settings(lr=lr, gamma=gamma, clip_norm=clip_norm, tol=tol)
    if not (isinstance(seed, int) and seed >= 0):  # NumPy's generators take none below 0
        raise UsageError(f"--seed must be a whole number from 0, got {seed!r}")
    if reduce not in ("mean", "sum"):
        raise UsageError(f"--reduce is mean or sum, not {reduce!r}")
    for what, value in (("steps", steps), ("epochs", epochs), ("batch size", batch_size)):
        if value is not None and value < 1:
            raise UsageError(f"the {what} must be at least 1, got {value}")
    from ..data.bindings import check_bindings

    fixed = {**graph.defaults, **check_bindings(graph, bindings)}  # the module takes every input
    data: dict[str, Any] = {}
    n = 0
    if rows is not None:
        if graph.control is not None:
            raise UsageError("--rows does not take programs with if/else or loops yet")
        data, n = load_rows(rows, rows_format, graph, wrt, delimiter)
    else:
        _refuse_without_rows(
            epochs=epochs, batch_size=batch_size, shuffle=shuffle,
            delimiter=delimiter if val_rows is None else None,
        )  # fmt: skip
    if save_every is not None and save is None:
        raise UsageError("--save-every writes the weights file: name it with -o FILE.npz")
    params: dict[str, Any] = {}
    for name in wrt:
        given: Any = fixed.pop(name, graph.defaults.get(name))
        if given is None:
            raise UsageError(
                f"the parameter '{name}' has no initial value",
                hints=[f"give it one: {name}=VALUE, --bindings FILE, or input {name} = ..."],
            )
        params[name] = np.array(given, dtype=float)
    state: dict = {}
    if resume is not None:
        saved, state = read_weights(resume)
        missing = [w for w in wrt if w not in saved]
        if missing:
            raise UsageError(f"{resume} has no parameter {', '.join(missing)}")
        params = {w: np.array(saved[w], dtype=float) for w in wrt}
        for w, value in params.items():
            if not np.isfinite(value).all():
                raise UsageError(f"{resume}: the parameter {w} holds a value that is not finite")
    if save is not None:  # what cannot be written (or was read) fails now, not after training
        from ..data.outputs import check_writable

        check_writable(save)
    opt = make_optimizer(
        optimizer,
        params,
        lr,
        momentum=momentum,
        dampening=dampening,
        nesterov=nesterov or None,
        betas=betas,
        eps=eps,
        weight_decay=weight_decay,
        amsgrad=amsgrad or None,
    )
    if state:
        opt.load_state(state, str(resume))
    done = opt.steps
    batch = min(batch_size or n, n) if rows is not None else 0
    per_epoch = math.ceil(n / batch) if rows is not None else 1
    if steps is None:
        steps = (epochs or 1) * per_epoch if rows is not None else 100
    total = done + steps
    if total > 2**53:  # a count a weights file keeps exactly (and more than a run can take)
        raise UsageError(f"{total} steps in all is more than 2**53: give fewer --steps or --epochs")
    objective = Objective(graph, of, wrt, reduce)
    vdata = (
        load_rows(val_rows, rows_format, graph, wrt, delimiter)[0] if val_rows is not None else None
    )
    val: list[tuple[int, float]] = []
    history: list[dict] = []
    started = time.perf_counter()
    stopped = "epochs" if rows is not None and epochs is not None else "steps"
    order = None
    for step in range(done, total):
        epoch, k = divmod(step, per_epoch)
        inputs = {**fixed, **params}
        size = None
        if rows is not None:
            if k == 0 or order is None:
                order = (
                    np.random.default_rng([seed, epoch]).permutation(n) if shuffle else np.arange(n)
                )
            pick = order[k * batch : (k + 1) * batch]
            inputs.update({name: column[pick] for name, column in data.items()})
            size = len(pick)
        opt.lr = learning_rate(lr, step, total, schedule, step_size, gamma)
        if watch is not None:
            watch(step + 1, inputs)
        try:
            loss, grads = objective(inputs, size)
        except EvalError as e:
            raise TrainingStopped(
                f"training stopped at step {step + 1}: {e.message}",
                e.span,
                e.source,
                hints=e.hints,
            ) from None
        norm = opt.step(grads, clip_norm)  # the update (none when not finite)
        if not math.isfinite(loss) or not math.isfinite(norm):
            what = (
                f"the loss is {loss}"
                if not math.isfinite(loss)
                else f"the gradient's norm is {norm}"
            )
            raise TrainingStopped(f"training stopped at step {step + 1}: {what}")
        if not np.isfinite(opt.flat).all():  # the step itself overflowed: the settings' doing
            _overflowed(step, opt)
        record = {
            "step": step + 1,
            "epoch": epoch + 1 if rows is not None else None,
            "loss": loss,
            "grad_norm": norm,
            "lr": opt.lr,
            "seconds": time.perf_counter() - started,
            "of": total - done,  # the steps this run takes (for a progress bar)
        }
        history.append(record)
        if on_step is not None:
            on_step(record)
        if vdata is not None and (k == per_epoch - 1 or step == total - 1):  # an epoch's end
            val.append((step + 1, _final_loss(graph, of, {**fixed, **params}, vdata, reduce)))
        if save is not None and save_every and (step + 1) % save_every == 0:
            save_weights(save, params, opt.state_arrays())
        if tol is not None and len(history) > 1 and abs(history[-2]["loss"] - loss) < tol:
            stopped = "tol"
            break
    final = _final_loss(graph, of, {**fixed, **params}, data, reduce)
    if save is not None:
        save_weights(save, params, opt.state_arrays())
    seconds = time.perf_counter() - started
    out = {w: (float(p) if p.ndim == 0 else p.copy()) for w, p in params.items()}
    return TrainResult(out, history, opt.steps, stopped, final, seconds, val)


def _refuse_without_rows(**given) -> None:
    """The settings of mini-batches given without --rows: a usage error, not ignored."""
    if given.pop("epochs") is not None:
        raise UsageError("--epochs counts passes over --rows; without data, use --steps")
    for name, value in given.items():
        if value:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} is for training on the rows of a data file: give --rows FILE")


def _overflowed(step: int, opt) -> None:
    """Training stops: the update of ``step`` took a parameter past the largest float."""
    name = next(k for k, p in opt.params.items() if not np.isfinite(p).all())
    raise TrainingStopped(
        f"training stopped at step {step + 1}: its update took the parameter {name} past the "
        f"largest number (learning rate {opt.lr:g})",
        hints=["a smaller --lr, or --clip-norm MAX to bound the steps"],
    )


def _final_loss(graph: Graph, of: str | None, inputs: dict, data: dict, reduce: str) -> float:
    """The loss with these parameters over all the data (or the program alone)."""
    value = evaluate_value(graph, {**inputs, **data}, of)
    if np.shape(value):
        value = float(np.mean(value) if reduce == "mean" else np.sum(value))
    return float(value)
