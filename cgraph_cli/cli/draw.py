"""``render``, ``dot`` and ``show``: the graph as an image, as Graphviz DOT, as a tree."""

from __future__ import annotations

from pathlib import Path

import click

from . import output
from .options import (
    EXIT_CODES,
    FilePath,
    Whole,
    common_options,
    no_grads_option,
    no_values_option,
    of_option,
    output_option,
    precision_option,
    source_options,
    view_option,
)
from .paramtypes import RANGE

IMAGE_TYPES = ["png", "svg", "pdf", "html", "tex", "mmd", "dot", "gv"]
BIG_DIAGRAM = 100  # nodes; drawing one takes a second or more (400 nodes: about 6 s as PNG)


def diagram_options(command):
    """What a diagram shows and how it looks, shared by render and dot."""
    from ..render.dot import THEMES

    for option in reversed(
        [
            click.option(
                "--theme",
                type=click.Choice(list(THEMES)),
                default="light",
                show_default=True,
                help="Colours for slides (light, dark) or paper (print).",
            ),
            click.option(
                "--rankdir",
                type=click.Choice(["LR", "TB", "RL", "BT"]),
                default="LR",
                show_default=True,
                help="Layout direction: left to right, top to bottom...",
            ),
            precision_option("default: 4"),
            no_values_option,
            no_grads_option,
            click.option(
                "--backward",
                is_flag=True,
                help="Draw the backward pass: local derivatives on the edges.",
            ),
            click.option(
                "--derivative",
                is_flag=True,
                help="Also draw the derivative program (cgraph diff's) as a graph, each "
                "derivative beside the value it differentiates against.",
            ),
            click.option(
                "--optimized",
                is_flag=True,
                help="Draw the program as cgraph optimize leaves it.",
            ),
            click.option(
                "--compare",
                is_flag=True,
                help="Draw the program before and after cgraph optimize, side by side.",
            ),
            view_option,
            of_option,
            click.option("--focus", metavar="NAME", help="Draw only what leads to NAME."),
            click.option(
                "--force",
                is_flag=True,
                help="Draw graphs larger than 500 nodes (slow, and hard to read).",
            ),
        ]
    ):
        command = option(command)
    return command


def _diagram(
    args,
    expr,
    file_,
    binds,
    bindings_file,
    theme,
    rankdir,
    precision,
    no_values,
    no_grads,
    backward,
    derivative,
    optimized,
    compare,
    view,
    of,
    focus,
    force,
    folds=(False, (), 0),
):
    from ..app.diagrams import diagram
    from .options import load

    graph, bindings = load(args, expr, file_, binds, bindings_file)
    result = diagram(
        graph,
        bindings,
        of=of,
        focus=focus,
        derivative=derivative,
        optimized=optimized,
        compare=compare,
        view=view,
        backward=backward,
        values=not no_values,
        grads=not no_grads,
        theme=theme,
        rankdir=rankdir,
        precision=precision or 4,
        force=force,
        collapse=folds[0],
        expand=folds[1],
        depth=folds[2],
    )
    if result.note:
        output.note(f"note: {result.note}")
    return result, graph


class RenderCommand(click.Command):
    """`render --help` says which renderer this machine would use."""

    def format_epilog(self, ctx, formatter) -> None:
        from ..render.image import describe_renderers

        formatter.write_paragraph()
        formatter.write_text("Renderer: " + describe_renderers())
        super().format_epilog(ctx, formatter)


RENDER_EXIT = EXIT_CODES.replace(
    "missing or unreadable file,", "missing or unreadable file, a type no renderer can write,"
)


@click.command(
    "render",
    short_help="Draw the graph: PNG, SVG, PDF, DOT, HTML, TikZ, Mermaid.",
    cls=RenderCommand,
    epilog=RENDER_EXIT,
)
@source_options
@diagram_options
@click.option(
    "-o",
    "--output",
    "target",
    metavar="FILE",
    type=FilePath("output", allow_dash=True),
    help="Where to write ('-': standard output). Default: SOURCE's name with the "
    "type's extension (seed.png for seed.cg), or graph.png for program text.",
)
@click.option(
    "-T",
    "--type",
    "kind",
    type=click.Choice(IMAGE_TYPES),
    help="Image type (default: from -o's extension, else png).",
)
@click.option("--format", "kind_old", type=click.Choice(IMAGE_TYPES), hidden=True)
@click.option(
    "--dpi",
    type=Whole(30, 1200),
    default=150,
    show_default=True,
    help="Resolution of PNG output.",
)
@click.option(
    "--fit",
    metavar="16:9|4:3|16:10|WxH",
    help="A PNG of exactly this size (16:9: 1920x1080), the drawing as large as fits: laid "
    "out left to right, top to bottom or wrapped into rows, whichever fits it larger.",
)
@click.option(
    "--renderer",
    type=click.Choice(["auto", "dot", "graphviz-pure"]),
    default="auto",
    show_default=True,
    help="Graphviz's dot, or the bundled graphviz-pure.",
)
@click.option(
    "--collapse",
    is_flag=True,
    help="Draw each call of a function (and a loop's steps, as they ran) as one box, with "
    "the value and gradient of what it returns; a chain of like calls once, × N.",
)
@click.option(
    "--expand",
    metavar="NAME",
    multiple=True,
    help="Draw this call open (layer#2), or every call of a function (layer), or a loop's "
    "steps (for#1); implies --collapse for the rest. Repeatable.",
)
@click.option(
    "--depth",
    type=Whole(1, 1000),
    default=None,
    metavar="N",
    help="Levels drawn, the program's own the first: 1 folds every call (as --collapse), 2 "
    "opens the top-level calls and folds the calls inside them...",
)
@click.option(
    "--live",
    is_flag=True,
    help="With -o P.html: every input a slider and a number field (a small tensor, a grid of "
    "fields); moving one recomputes every value and gradient in the browser.",
)
@click.option(
    "--range",
    "ranges",
    metavar="NAME=LO,HI",
    multiple=True,
    type=RANGE,
    help="--live: the ends of NAME's slider (default: ±2 × |its value|). Repeatable.",
)
@common_options
def render_command(
    args,
    expr,
    file_,
    binds,
    bindings_file,
    theme,
    rankdir,
    precision,
    no_values,
    no_grads,
    backward,
    derivative,
    optimized,
    compare,
    view,
    of,
    focus,
    force,
    target,
    kind,
    kind_old,
    dpi,
    fit,
    renderer,
    collapse,
    expand,
    depth,
    live,
    ranges,
):
    """Draw the graph, annotated with values and gradients: PNG, SVG, PDF, DOT, an interactive
    HTML page, TikZ or Mermaid.

    \b
    Examples:
      cgraph render 'g = (x + y) * z' x=1 y=3 z=-3 -o seed.png
      cgraph render sample:neuron -o neuron.svg --theme dark --rankdir TB
      cgraph render sample:seed --backward -o backward.png     # the chain rule, edge by edge
      cgraph render sample:neuron -o neuron.html               # a page that steps both passes
      cgraph render sample:neuron -o neuron.html --live        # drag an input: all recomputed
      cgraph render sample:huber -o huber.html --live --range e=-3,3
      cgraph render sample:neuron --fit 16:9 -o neuron.png     # 1920x1080, for a slide
      cgraph render sample:seed -o seed.tex                    # TikZ, for a Beamer slide
      cgraph render sample:seed -o seed.mmd                    # Mermaid, for Markdown slides
      cgraph render sample:mlp --derivative -o mlp.png         # the backward pass as a graph
      cgraph render sample:rewrites --compare -o before-after.png  # what optimize does
      cgraph render sample:seed --no-values -T svg -o -        # SVG on standard output
      cgraph render sample:huber --view static -o huber.png    # both branches, framed
      cgraph render sample:rnn --view run xs='[[1, 0], [0, 1]]' -o rnn.png  # unrolled

    Each node shows its value and ∂output/∂node; the gradient cell is tinted blue when
    positive, red when negative, more strongly the larger it is (legend under the diagram).
    In tensor programs each edge is labelled with the shape it carries, and small tensors
    are drawn inside their nodes, element by element.

    With --derivative, the derivative program (as cgraph diff prints it) is drawn in a band
    under the graph, flowing right to left as the backward pass does: each statement
    d<output>_d<name> in the column of the value it differentiates against, joined to it by
    a dashed line; the forward values it reads appear in the band as dashed copies.
    """
    from ..render.image import output_format

    kind = output_format(target, kind or kind_old)
    if fit is not None and kind != "png":
        from ..core.errors import UsageError

        raise UsageError(f"--fit makes a PNG of that size, not {kind.upper()}")
    if (live or ranges) and kind != "html":
        from ..core.errors import UsageError

        said = "--live" if live else "--range (a slider of the live page)"
        raise UsageError(f"{said} makes the page (-o P.html), not {kind.upper()}")
    if ranges and not live:
        from ..core.errors import UsageError

        raise UsageError("--range sets a slider of the live page: add --live")
    twice = sorted({n for n, _ in ranges if [m for m, _ in ranges].count(n) > 1})
    if twice:
        from ..core.errors import UsageError

        raise UsageError(f"--range gives {twice[0]} two ranges: give one")
    if kind == "html":
        _page(
            args, expr, file_, binds, bindings_file, theme, rankdir, precision, of, force,
            renderer, target, dict(ranges) if live else None,
            ignored={"--no-values": no_values, "--no-grads": no_grads, "--backward": backward,
                     "--derivative": derivative, "--optimized": optimized, "--compare": compare,
                     "--focus": focus, "--view static": view == "static", "--dpi": dpi != 150},
        )  # fmt: skip
        return
    if kind in ("tex", "mmd"):
        _slides(
            args, expr, file_, binds, bindings_file, kind, theme, rankdir, precision, of,
            force, renderer, target, not no_values, not no_grads, view,
            ignored={"--backward": backward, "--derivative": derivative, "--optimized": optimized,
                     "--compare": compare, "--focus": focus, "--dpi": dpi != 150},
        )  # fmt: skip
        return
    diagram, graph = _diagram(
        args,
        expr,
        file_,
        binds,
        bindings_file,
        theme,
        rankdir,
        precision,
        no_values,
        no_grads,
        backward,
        derivative,
        optimized,
        compare,
        view,
        of,
        focus,
        force,
        folds=(collapse, expand, depth or 0),
    )
    from ..render.fit import LEGIBLE_PX, fit_size

    text_px = None
    if fit is not None:
        data, text_px, folded = diagram.fitted_folding(fit_size(fit), renderer=renderer)
        if folded:
            output.note(
                f"note: {diagram.folds} drawn folded, one box each, so that the text reads at "
                f"{fit}" + (" (--expand NAME opens one)" if diagram.folds != "statements" else "")
            )
    elif kind in ("dot", "gv") or diagram.nodes < BIG_DIAGRAM:
        data = diagram.render(kind, renderer=renderer, dpi=dpi)
    else:  # seconds to minutes of layout: say that something is happening
        with output.progress(None, f"drawing {diagram.nodes} nodes"):
            data = diagram.render(kind, renderer=renderer, dpi=dpi)
    target = target or _default_output(graph.source.filename, kind)
    output.write_bytes(data, target)
    if target != "-":
        output.note(f"wrote {target} ({diagram.nodes} node{'' if diagram.nodes == 1 else 's'})")
    if kind == "png" and fit is None:
        from ..render.image import PNG_MAX_PIXELS, png_size

        if max(png_size(data)) >= 0.98 * PNG_MAX_PIXELS:  # (Graphviz keeps its margin inside)
            output.note(
                f"note: the drawing was scaled down to {PNG_MAX_PIXELS:,} pixels a side, its "
                "text small: SVG keeps every size (-o FILE.svg), --fit 16:9 folds it onto a "
                "slide"
            )
    if text_px is not None and text_px < LEGIBLE_PX:
        less = [
            option
            for option, usable in (
                ("--focus NAME", focus is None and not (derivative or optimized or compare)),
                ("--no-values", not no_values),
            )
            if usable
        ]
        output.note(
            f"note: at {fit} the nodes' text is {text_px:.0f} px high, small for a projector"
            + (f"; {' or '.join(less)} draws less" if less else "")
        )


def _page(args, expr, file_, binds, bindings_file, theme, rankdir, precision, of, force,
          renderer, target, live, ignored) -> None:  # fmt: skip
    """``render -o P.html``: the interactive page, which steps through both passes (``live``:
    the live page, with these slider ranges)."""
    from ..app.diagrams import page
    from .options import load

    if live is not None:
        from functools import partial

        from ..app.live import live_page

        page = partial(live_page, ranges=live)

    _refuse(
        ignored,
        "the interactive page, which shows every value and gradient, step by step, on the "
        "graph that runs",
    )
    graph, bindings = load(args, expr, file_, binds, bindings_file)
    text = page(
        graph, bindings, of=of, theme=theme, rankdir=rankdir, precision=precision or 4,
        renderer=renderer, force=force,
    )  # fmt: skip
    target = target or _default_output(graph.source.filename, "html")
    output.write_bytes(text.encode(), target)
    if target != "-":
        output.note(f"wrote {target}: open it in a browser; → and ← step through the passes")


def _slides(args, expr, file_, binds, bindings_file, kind, theme, rankdir, precision, of, force,
            renderer, target, values, grads, view, ignored) -> None:  # fmt: skip
    """``render -o P.tex`` (TikZ) and ``-o P.mmd`` (Mermaid): the diagram as text for slides."""
    from ..app.diagrams import slides
    from .options import load

    _refuse(
        ignored,
        f"{'TikZ' if kind == 'tex' else 'Mermaid'} output, which draws the graph with its "
        "values and gradients",
    )
    graph, bindings = load(args, expr, file_, binds, bindings_file)
    text, nodes, note = slides(
        graph, bindings, kind=kind, of=of, theme=theme, rankdir=rankdir,
        precision=precision or 4, values=values, grads=grads, renderer=renderer, force=force,
        view=view,
    )  # fmt: skip
    if note:
        output.note(f"note: {note}")
    target = target or _default_output(graph.source.filename, kind)
    output.write_bytes(text.encode(), target)
    if target != "-":
        output.note(f"wrote {target} ({nodes} node{'' if nodes == 1 else 's'})")


def _refuse(options: dict[str, bool], what: str) -> None:
    """A usage error naming the image options given that do not apply to ``what``."""
    from ..core.errors import UsageError

    given = [name for name, on in options.items() if on]
    if given:
        raise UsageError(
            f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to {what}",
            hints=["leave it out, or write an image: -o FILE.png or .svg"],
        )


def _default_output(filename: str, kind: str) -> str:
    """seed.png for samples/seed.cg, in the current folder; graph.png for text."""
    if filename.startswith("<"):  # <expr>, <stdin>
        return f"graph.{kind}"
    return f"{Path(filename).stem}.{kind}"


@click.command("dot", short_help="Print the diagram as Graphviz DOT.", epilog=EXIT_CODES)
@source_options
@diagram_options
@output_option
@common_options
def dot_command(
    args,
    expr,
    file_,
    binds,
    bindings_file,
    theme,
    rankdir,
    precision,
    no_values,
    no_grads,
    backward,
    derivative,
    optimized,
    compare,
    view,
    of,
    focus,
    force,
):
    """Print the diagram as Graphviz DOT, for your own `dot` command line.

    \b
    Examples:
      cgraph dot sample:seed | dot -Tpdf > seed.pdf
      cgraph dot sample:neuron --backward --theme print -o neuron.gv
      cgraph dot sample:seed --derivative | dot -Tsvg > seed.svg
    """
    diagram, _ = _diagram(
        args,
        expr,
        file_,
        binds,
        bindings_file,
        theme,
        rankdir,
        precision,
        no_values,
        no_grads,
        backward,
        derivative,
        optimized,
        compare,
        view,
        of,
        focus,
        force,
    )
    output.write_text(diagram.dot, nl=False)


@click.command("show", short_help="Draw the graph as a tree in the terminal.", epilog=EXIT_CODES)
@source_options
@view_option
@of_option
@precision_option("default: 4")
@no_values_option
@no_grads_option
@click.option(
    "--depth",
    type=Whole(1, 1000),
    default=40,
    show_default=True,
    metavar="N",
    help="Levels drawn below the top; deeper parts end in a line "
    "naming where to continue with --of.",
)
@output_option
@common_options
def show_command(
    args, expr, file_, binds, bindings_file, view, of, precision, no_values, no_grads, depth
):
    """Draw the graph in the terminal: a tree from the output down, with values and gradients.

    A value used in several places is drawn once and referred to afterwards as ↑ name.
    A tree deeper than --depth levels stops there, with a line saying how many levels are left
    and which name to continue from with --of.

    \b
    Examples:
      cgraph show 'g = (x + y) * z' x=1 y=3 z=-3
      cgraph show sample:micrograd_sanity --no-grads
      cgraph show sample:mlp --of H --depth 3
    """
    from ..app.diagrams import evaluate_for_drawing, viewed
    from ..render.tree import graph_tree, tree_width
    from .options import load

    graph, bindings = load(args, expr, file_, binds, bindings_file)
    graph, note = viewed(graph, bindings, view)
    out, values, adjoints, value_note = evaluate_for_drawing(graph, bindings, of, not no_values)
    note = note or value_note
    if note:
        output.note(f"note: {note}")
    tree = graph_tree(graph, values, None if no_grads else adjoints, out, precision or 4, depth)
    output.write_rich(tree, min_width=tree_width(tree))


COMMANDS = [render_command, dot_command, show_command]
