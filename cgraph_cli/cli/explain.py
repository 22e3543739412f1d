"""``explain``: both passes spelled out, step by step."""

from __future__ import annotations

import click

from . import output
from .options import (
    EXIT_CODES,
    Whole,
    also_written,
    check_gif,
    common_options,
    format_option,
    frames_fit,
    frames_options,
    load,
    of_option,
    output_option,
    precision_option,
    source_options,
)


@click.command("explain", short_help="Spell out both passes step by step.", epilog=EXIT_CODES)
@source_options
@of_option
@format_option(["text", "markdown", "json"], "text", "How to write the steps.")
@click.option(
    "--math",
    type=click.Choice(["plain", "latex"]),
    default="plain",
    show_default=True,
    help="Formulas in markdown: plain text or $LaTeX$.",
)
@precision_option("default: 4")
@frames_options("Also draw one diagram per backward step in DIR.")
@click.option(
    "--force",
    is_flag=True,
    help="Draw frames of graphs larger than 500 nodes (one diagram per node: slow).",
)
@click.option(
    "--program",
    is_flag=True,
    help="Also print the derivative program (as cgraph diff does), each statement with its value.",
)
@click.option(
    "--depth",
    type=Whole(1, 1000),
    default=None,
    metavar="N",
    help="Levels explained step by step, the program's own the first: 1 explains each call "
    "of a function as one step (its gradient the call's vector-Jacobian product).",
)
@click.option(
    "--expand",
    metavar="NAME",
    multiple=True,
    help="Explain this call inside (layer#2, or every call of layer); implies --depth 1 for "
    "the rest. Repeatable.",
)
@output_option
@common_options
def explain_command(
    args,
    expr,
    file_,
    binds,
    bindings_file,
    of,
    fmt,
    math,
    precision,
    frames,
    frames_format,
    fit,
    theme,
    gif,
    mp4,
    force,
    program,
    depth,
    expand,
):
    """Spell out the forward and backward passes, step by step, like a worked example.

    \b
    Examples:
      cgraph explain 'g = (x + y) * z' x=1 y=3 z=-3
      cgraph explain sample:neuron --format markdown --math latex -o neuron.md
      cgraph explain sample:seed --frames frames/     # one PNG per backward step
      cgraph explain sample:seed --frames frames/ --gif seed.gif   # and an animation
      cgraph explain sample:seed --frames frames/ --mp4 seed.mp4   # or a video
      cgraph explain sample:mlp --frames frames/ --fit 16:9    # 1920x1080 slides
      cgraph explain sample:mlp --program             # and the backward pass as code
    """
    from ..app.api import explain

    graph, bindings = load(args, expr, file_, binds, bindings_file)
    check_gif(frames, frames_format, gif, mp4)
    size = frames_fit(frames, frames_format, fit)
    if frames:  # refuse before any work: too large, or nowhere to write
        from ..app.frames import frames_folder

        frames = frames_folder(graph, of, frames, force)
    explanation = explain(graph, bindings, of=of, derivative=program, depth=depth, expand=expand)
    result = explanation.result
    digits = precision or 4
    if fmt == "json":
        from ..app.report import to_json_text

        output.write_text(to_json_text(explanation.steps, schema="explain"))
    elif fmt == "markdown":
        output.write_text(explanation.markdown(math, digits), nl=False)
    else:
        output.write_text(explanation.text(digits))
    if frames:
        from ..app.explain import frame_order
        from ..app.frames import write_frames

        ran = result.graph  # the graph that ran, for a program with if/else or loops
        with output.progress(len(frame_order(ran, result.output)), "frames") as advance:
            written = write_frames(
                ran, result, frames, frames_format, digits, advance, theme=theme, gif=gif,
                mp4=mp4, fit=size,
            )  # fmt: skip
        output.note(f"wrote {len(written)} frames to {frames}" + also_written(gif, mp4))


COMMANDS = [explain_command]
