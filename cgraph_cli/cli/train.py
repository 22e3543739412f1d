"""``train``: gradient descent on a program's parameters, with a live loss, a log, a loss curve
and saved weights."""

from __future__ import annotations

import click

from . import output
from .options import (
    EXIT_CODES,
    SEED,
    FilePath,
    FiniteFloat,
    Floats,
    Whole,
    common_options,
    format_option,
    load,
    names,
    of_option,
    source_options,
    wrt_option,
)
from .rows import OPTIONS as ROWS_OPTIONS

LR = FiniteFloat(0, min_open=True, why="0 or less would stand still or climb the loss")
AT_LEAST_0 = FiniteFloat(0, why="a negative value turns the update against the gradient")
EPS = FiniteFloat(0, why="a negative one can make the update divide by 0")
FRACTION = FiniteFloat(0, 1, why="outside it the momentum turns against the gradient")
BETAS = Floats(2, FiniteFloat(0, 1, max_open=True, why="as torch.optim.Adam takes them"), "B1,B2")
GAMMA = FiniteFloat(0, 1, min_open=True, why="the learning rate's decay factor")
CLIP = FiniteFloat(0, min_open=True, why="0 stops training, below 0 it climbs the loss")


@click.command(
    "train", short_help="Learn the inputs named by --wrt by gradient descent.", epilog=EXIT_CODES
)
@source_options
@wrt_option
@of_option
@click.option(
    "--rows",
    "rows_file",
    metavar="FILE",
    type=FilePath("rows"),
    help="Train on the rows of a data file (CSV, TSV, JSON Lines, Parquet, .npz; sample:NAME), in mini-batches.",
)
@ROWS_OPTIONS["rows_format"]
@ROWS_OPTIONS["delimiter"]
@click.option(
    "--val-rows",
    metavar="FILE",
    type=FilePath("rows"),
    help="Rows to report the validation loss on (each epoch, and on the plot).",
)
@click.option(
    "--optimizer",
    type=click.Choice(["sgd", "adam", "adamw"]),
    default="sgd",
    show_default=True,
    help="The update rule, as torch.optim has it.",
)
@click.option("--lr", type=LR, default=0.01, show_default=True, help="The learning rate.")
@click.option("--momentum", type=AT_LEAST_0, help="sgd: momentum (0).")
@click.option("--dampening", type=FRACTION, help="sgd: dampening of the momentum (0).")
@click.option("--nesterov", is_flag=True, help="sgd: Nesterov momentum.")
@click.option(
    "--betas",
    type=BETAS,
    help="adam, adamw: the moments' decay rates (0.9,0.999), each 0 <= B < 1.",
)
@click.option("--eps", type=EPS, help="adam, adamw: added to the denominator (1e-8).")
@click.option(
    "--weight-decay",
    type=AT_LEAST_0,
    help="L2 penalty (sgd, adam: 0) or decoupled decay (adamw: 0.01).",
)
@click.option("--amsgrad", is_flag=True, help="adam, adamw: the AMSGrad variant.")
@click.option(
    "--schedule",
    type=click.Choice(["constant", "step", "cosine"]),
    default="constant",
    show_default=True,
    help="The learning rate over the steps: constant; step (times --gamma every --step-size steps); cosine (down to 0 at the last step).",
)
@click.option(
    "--step-size",
    type=Whole(1),
    default=100,
    show_default=True,
    help="--schedule step: steps between decays.",
)
@click.option(
    "--gamma",
    type=GAMMA,
    default=0.1,
    show_default=True,
    help="--schedule step: the factor of each decay.",
)
@click.option(
    "--clip-norm",
    type=CLIP,
    metavar="MAX",
    help="Scale the gradients down to this total norm when above it.",
)
@click.option(
    "--steps",
    type=Whole(1),
    help="Steps to take (default: 100; with --rows, the steps of --epochs).",
)
@click.option("--epochs", type=Whole(1), help="With --rows: passes over the rows (default 1).")
@click.option("--batch-size", type=Whole(1), help="With --rows: rows per step (default: all).")
@click.option("--shuffle", is_flag=True, help="With --rows: a new order of the rows each epoch.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="The seed of --shuffle.")
@click.option(
    "--reduce",
    type=click.Choice(["mean", "sum"]),
    default="mean",
    show_default=True,
    help="A loss with one value per row: its mean or sum over the batch.",
)
@click.option(
    "--tol", type=FiniteFloat(0), help="Stop when the loss changes by less than this in a step."
)
@click.option(
    "-o",
    "--output",
    "weights",
    metavar="FILE.npz",
    type=FilePath("output"),
    help="Write the learned parameters (and the optimizer's state, for --resume) to this .npz file; --bindings reads it back.",
)
@click.option(
    "--save-every",
    type=Whole(1),
    metavar="N",
    help="Also write -o every N steps (Ctrl-C keeps the last).",
)
@click.option(
    "--resume",
    metavar="FILE.npz",
    type=FilePath("input"),
    help="Start from a weights file written by -o: its parameters and optimizer state.",
)
@click.option(
    "--log",
    "log_file",
    metavar="FILE",
    type=FilePath("output", allow_dash=True),
    help="Write each step (step, epoch, loss, grad_norm, lr, seconds) as CSV, or JSON Lines for .jsonl.",
)
@click.option(
    "--plot",
    metavar="FILE",
    type=FilePath("output"),
    help="Draw the loss curve to a PNG, SVG or PDF file (needs the plot extra: matplotlib).",
)
@click.option(
    "--page",
    metavar="FILE.html",
    type=FilePath("output"),
    help="Film the training on the graph: one offline HTML file with the loss curve, a step "
    "slider and play button, and the graph's values and gradients at each step (200 kept).",
)
@click.option(
    "--config",
    metavar="FILE.toml",
    type=FilePath("input"),
    help="Read options from the [train] table of a TOML file (the command line wins).",
)
@format_option(["text", "json"], "text", "A summary, or JSON.")
@common_options
@click.pass_context
def train_command(ctx, **options):
    """Learn the parameters (--wrt) by gradient descent on the program's output, the loss.

    On a program alone, each step is one gradient step. With --rows, each step takes a
    mini-batch: every column that is an input holds the batch's rows along its first axis
    (write the program for a batch, as a PyTorch model takes one), and a loss with one value
    per row is averaged. The optimizers follow torch.optim's update rules and defaults. When
    the loss stops being finite, training stops at that step, naming the node that failed.

    \b
    Examples:
      cgraph train sample:rosenbrock --wrt x,y --optimizer adam --lr 0.02 --steps 3000
      cgraph train sample:linear --rows sample:linear.csv --wrt w,b --lr 0.1 --epochs 100
      cgraph train sample:xor --rows sample:xor.csv --wrt W1,b1,W2,b2 --optimizer adam --lr 0.05 --epochs 300 -o xor.npz
      cgraph train sample:moons --rows sample:two_moons.csv --wrt W1,b1,W2,b2 --optimizer adam --lr 0.02 --epochs 20 --batch-size 32 --shuffle --log moons.csv
      cgraph train sample:moons --rows sample:two_moons.csv --wrt W1,b1,W2,b2 --optimizer adam --lr 0.02 --epochs 200 --page moons.html

    Then `cgraph eval sample:xor --bindings xor.npz --of P` uses what was learned, and
    `--resume xor.npz` goes on from there. Unlike other commands, -o names the weights file
    (the report goes to standard output).
    """
    from ..jobs.training import train
    from .trainconfig import with_config

    options = with_config(ctx, options)
    rows_file, wrt, of = options["rows_file"], options["wrt"], options["of"]
    graph, bindings = load(
        options["args"],
        options["expr"],
        options["file_"],
        options["binds"],
        options["bindings_file"],
        rows_file,
    )
    fmt, precision = options.pop("fmt"), 4
    log_file, plot, weights = options.pop("log_file"), options.pop("plot"), options.pop("weights")
    page = options.pop("page")
    from ..data.outputs import check_writable

    if plot:  # refused before any work
        from ..render.plot import check_plot

        check_plot(plot)
        check_writable(plot)
    film = None
    if page:
        from ..app.film import Film

        _check_page(page)
        check_writable(page)
        film = Film(names(wrt))
    log = _Log(log_file) if log_file else None
    total = options["steps"]
    with output.progress(total or None, "training", noted=True) as advance:

        def on_step(record: dict) -> None:
            if log is not None:
                log.write(record)
            advance(1, f"loss {record['loss']:.4g}", total=record["of"])

        try:
            result = train(
                graph,
                bindings,
                wrt=names(wrt),
                of=of,
                rows=rows_file,
                rows_format=options["rows_format"],
                delimiter=options["delimiter"],
                val_rows=options["val_rows"],
                optimizer=options["optimizer"],
                lr=options["lr"],
                momentum=options["momentum"],
                dampening=options["dampening"],
                nesterov=options["nesterov"],
                betas=options["betas"],
                eps=options["eps"],
                weight_decay=options["weight_decay"],
                amsgrad=options["amsgrad"],
                schedule=options["schedule"],
                step_size=options["step_size"],
                gamma=options["gamma"],
                clip_norm=options["clip_norm"],
                steps=options["steps"],
                epochs=options["epochs"],
                batch_size=options["batch_size"],
                shuffle=options["shuffle"],
                seed=options["seed"],
                reduce=options["reduce"],
                tol=options["tol"],
                save=weights,
                save_every=options["save_every"],
                resume=options["resume"],
                on_step=on_step,
                watch=film,
            )
        finally:
            if log is not None:
                log.close()
    name = graph.source.filename
    what = name.rsplit("/", 1)[-1].removesuffix(".cg") if not name.startswith("<") else ""
    title = (
        f"Training loss{': ' + what if what else ''} ({options['optimizer']}, lr {options['lr']:g})"
    )
    if plot:
        from ..data.outputs import write_file
        from ..render.plot import loss_curve

        write_file(plot, loss_curve(result, plot, title))
    if page:
        _film(page, film, graph, bindings, result, options, title)
    report = _report(result, weights, log_file, plot)
    if fmt == "json":
        from ..app.report import to_json_text

        output.write_text(to_json_text(report, schema="train"))
        return
    first = result.history[0]["loss"] if result.history else result.final_loss
    how = {"steps": "", "epochs": "", "tol": ", stopped by --tol"}[result.stopped]
    lines = [
        f"trained {', '.join(result.params)} for {len(result.history)} steps in "
        f"{result.seconds:.2f} s{how}",
        f"loss {first:.{precision}g} -> {result.final_loss:.{precision}g}",
    ]
    if result.val_loss:
        lines.append(f"validation loss {result.val_loss[-1][1]:.{precision}g}")
    output.write_text("\n".join(lines))
    for path, what in (
        (weights, "weights"),
        (log_file, "log"),
        (plot, "loss curve"),
        (page, "the training on the graph: open it in a browser"),
    ):
        if path and path != "-":
            output.note(f"wrote {path} ({what})")


def _check_page(page: str) -> None:
    """--page writes HTML: a page named as another type (``p.png``) is refused before any step,
    as --gif and --mp4 refuse a file not named for what they write."""
    from pathlib import PurePath

    from ..core.errors import UsageError

    if PurePath(page).suffix.lower() not in (".html", ".htm") or PurePath(page).stem == "":
        shown = repr(page) if page in ("", "-") else page
        raise UsageError(
            f"--page writes an HTML page, not {shown}",
            hints=["name it NAME.html: --page training.html"],
        )


def _film(page, film, graph, bindings, result, options, title) -> None:
    """--page: the steps kept, drawn on the graph."""
    from ..app.film import film_page
    from ..data.outputs import write_file

    what = ", ".join(film.wrt)
    text = film_page(
        graph, bindings, film, result, of=options["of"], rows_file=options["rows_file"],
        rows_format=options["rows_format"], delimiter=options["delimiter"],
        reduce=options["reduce"],
        title=f"{title.replace('Training loss', 'Training ' + what)}",
    )  # fmt: skip
    write_file(page, text.encode())


def _report(result, weights, log_file, plot) -> dict:
    from ..core.arrays import np

    return {
        "loss": result.final_loss,
        "first_loss": result.history[0]["loss"] if result.history else result.final_loss,
        "last_step_loss": result.loss,
        "val_loss": result.val_loss[-1][1] if result.val_loss else None,
        "steps": result.steps,
        "steps_this_run": len(result.history),
        "stopped": result.stopped,
        "seconds": result.seconds,
        "parameters": {name: list(np.shape(v)) for name, v in result.params.items()},
        "weights": weights,
        "log": log_file,
        "plot": plot,
    }


class _Log:
    """--log FILE: a row per step, CSV (or JSON Lines for .jsonl), flushed as it goes."""

    FIELDS = ("step", "epoch", "loss", "grad_norm", "lr", "seconds")

    def __init__(self, path: str) -> None:
        import sys

        from ..data.outputs import Output

        self.path, self.jsonl = path, path.endswith((".jsonl", ".ndjson"))
        self.out = None if path == "-" else Output(path)  # the old log stays until the end
        self.file = sys.stdout.buffer if self.out is None else self.out.file
        if not self.jsonl:
            self._line(",".join(self.FIELDS))

    def _line(self, text: str) -> None:
        try:
            self.file.write(text.encode() + b"\n")
            self.file.flush()  # a step at a time, for whoever follows it
        except OSError as e:  # a full disk
            if self.out is None:
                raise  # standard output's: said as such
            from ..core.errors import cannot_write

            self.out.discard()  # (its buffer would fail again when collected, said at exit)
            self.out = None
            raise cannot_write(self.path, e) from None

    def write(self, record: dict) -> None:
        if self.jsonl:
            import json

            self._line(json.dumps({k: record[k] for k in self.FIELDS}))
        else:
            self._line(",".join("" if record[k] is None else repr(record[k]) for k in self.FIELDS))

    def close(self) -> None:
        """The log takes its place, also when the training stopped early: its steps say how."""
        if self.out is not None:
            self.out.done()


COMMANDS = [train_command]
