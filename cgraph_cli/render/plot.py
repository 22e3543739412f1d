"""The loss curve of ``cgraph train --plot``, drawn with matplotlib (the ``plot`` extra): the
loss at each step, its running mean when the steps are many, the validation loss at the end of
each epoch, a logarithmic scale when the loss spans decades; 16:9 for slides.
"""

from __future__ import annotations

from ..core.errors import UsageError

FORMATS = ("png", "svg", "pdf")


def check_plot(path: str) -> str:
    """The image type of ``path``, refused before any work when it has none cgraph draws or
    matplotlib is missing."""
    kind = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if kind not in FORMATS:
        raise UsageError(
            f"cannot tell the image type of {path!r}", hints=["use .png, .svg or .pdf"]
        )
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError(
            "--plot needs matplotlib",
            hints=["install the plot extra: pip install 'cgraph-cli[plot]' (or matplotlib)"],
        )
    return kind


def loss_curve(result, path: str, title: str = "") -> bytes:
    """``result``'s loss (a :class:`cgraph_cli.jobs.training.TrainResult`) drawn as the image
    file ``path`` names by its extension: its bytes."""
    kind = check_plot(path)
    import numpy as np
    from matplotlib.figure import Figure

    steps = np.array([r["step"] for r in result.history], dtype=float)
    loss = np.array([r["loss"] for r in result.history], dtype=float)
    fig = Figure(figsize=(8, 4.5), dpi=150, layout="constrained")
    ax = fig.add_subplot()
    # Mini-batches make the curve noisy: then a running mean shows the trend through it.
    many = len(loss) > 60 and float(np.mean(np.diff(loss) > 0)) > 0.1
    ax.plot(steps, loss, color="#4c78a8", alpha=0.35 if many else 1.0, linewidth=1.2 if many else 2.2,
            label="loss at each step" if many else "training loss")  # fmt: skip
    if many:
        width = max(len(loss) // 40, 2)
        smooth = np.convolve(loss, np.ones(width) / width, mode="valid")
        centre = width // 2
        ax.plot(steps[centre : centre + len(smooth)], smooth, color="#1f4e79", linewidth=2.2,
                label=f"running mean of {width} steps")  # fmt: skip
    if result.val_loss:
        vs, vl = zip(*result.val_loss)
        ax.plot(vs, vl, "o-", color="#e45756", linewidth=1.8, markersize=4,
                label="validation loss")  # fmt: skip
    positive = loss[np.isfinite(loss) & (loss > 0)]
    if positive.size and positive.max() / positive.min() > 100:
        ax.set_yscale("log")
    ax.set_xlabel("step", fontsize=12)
    ax.set_ylabel("loss", fontsize=12)
    ax.set_title(title or "Training loss", fontsize=14, loc="left")
    ax.grid(True, which="major", color="#dddddd", linewidth=0.8)
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(labelsize=11)
    ax.legend(frameon=False, fontsize=11)
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format=kind)
    return buffer.getvalue()
