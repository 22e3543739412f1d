"""``diff``, ``hessian``, ``jvp`` and ``jacobian``: derivatives beyond the gradient."""

from __future__ import annotations

import click

from ..core.numfmt import DIGITS
from . import output
from .options import (
    EXIT_CODES,
    Whole,
    common_options,
    format_option,
    full_option,
    load,
    names,
    of_option,
    output_option,
    precision_option,
    source_options,
    wrt_option,
)

PLAIN_HELP = "Report format: a table, JSON, or NAME=VALUE lines."


def _directions(texts: tuple[str, ...], graph) -> dict:
    """``NAME=VALUE`` directions (numbers or JSON arrays), checked as bindings are."""
    from ..data.bindings import check_value
    from ..data.sources import command_line_bindings

    given = command_line_bindings(texts)
    for name in given:
        if name not in graph.inputs:
            from ..data.bindings import unknown_binding

            raise unknown_binding(graph, [name])
    return {name: check_value(name, value) for name, value in given.items()}


def _optimized(graph, bindings, skip: bool):
    """A derivative program through the optimizer's passes that keep every statement."""
    if skip:
        return graph
    from ..passes.optimize import optimize

    done = optimize(
        graph, ["fold", "cse", "simplify", "stabilize"], bindings=bindings, texts=False
    ).graph
    if "headings" in graph.memo:  # the statements keep their names: their calls' comments too
        done.memo["headings"] = graph.memo["headings"]
    return done


def _emit(fmt: str, report: dict, schema: str, text, plain=None) -> None:
    if fmt == "json":
        from ..app.report import to_json_text

        output.write_text(to_json_text(report, schema=schema))
    elif fmt == "plain" and plain is not None:
        output.write_text(plain())
    else:
        output.write_rich(text())


@click.command(
    "diff", short_help="Print the derivative program: the gradient as code.", epilog=EXIT_CODES
)
@source_options
@of_option
@wrt_option
@click.option(
    "--order",
    type=Whole(1, 4),
    default=1,
    show_default=True,
    metavar="N",
    help="Derivatives up to order N (d2f_dx2, d2f_dxdy...), for inputs that are numbers.",
)
@click.option(
    "--mode",
    type=click.Choice(["reverse", "forward"]),
    default="reverse",
    show_default=True,
    help="Reverse mode (the gradient: d<output>_d<name> for each value) or forward mode "
    "(tangents: d<name>_d<x> with one --wrt input x, else <name>_dot along inputs <x>_dot).",
)
@click.option(
    "--no-optimize",
    is_flag=True,
    help="The transform's program as it is, without cgraph optimize's passes.",
)
@format_option(
    ["text", "json"], "text", "The program as text, or JSON with the names of the derivatives."
)
@output_option
@common_options
def diff_command(args, expr, file_, binds, bindings_file, of, wrt, order, mode, no_optimize, fmt):
    """Print the program with its derivatives, as a cgraph program that runs: the backward
    pass as a graph transform (reverse mode, as Theano, TensorFlow 1 and JAX build it), in
    the program's own ops, simplified as a textbook writes it, then through cgraph
    optimize's passes (folding, shared subexpressions, algebra, stable forms; not dead-code
    elimination, which would keep only one derivative): --no-optimize shows the transform's
    program as it is.

    Each derivative is a statement d<output>_d<input>; pipe it into cgraph to evaluate it.
    Tensor programs are specialised to their inputs' shapes (from the bindings or the
    defaults).

    \b
    Examples:
      cgraph diff 'g = (x + y) * z'
      cgraph diff sample:neuron --wrt w1,w2 | cgraph eval - --all
      cgraph diff sample:mlp --format json
      cgraph diff 'f = x^3' --order 2                   # d2f_dx2 = 6 * x
      cgraph diff 'p = sin(x); y = p * x' --mode forward --wrt x   # dp_dx, dy_dx
    """
    from ..core.errors import UsageError
    from ..parse.unparse import to_source
    from ..passes.derivatives import derivative_program, tangent_program

    graph, bindings = load(args, expr, file_, binds, bindings_file)
    if graph.control is not None:  # if/else or loops: the graph that runs for the bindings
        from ..run.control import ran_graph

        graph = ran_graph(graph, bindings)
        guards = "; ".join(str(g) for g in graph.control.guards) or "the loops' fixed steps"
        output.note(f"note: the derivatives of the graph that runs here ({guards})")
    if mode == "forward":
        if order > 1:
            raise UsageError(
                "forward mode gives first derivatives",
                hints=["higher orders are reverse mode's: drop --mode forward"],
            )
        tangents = tangent_program(graph, bindings, of, names(wrt) or None)
        text = to_source(_optimized(tangents.graph, bindings, no_optimize))
        report = {"program": text, "output": tangents.output, "order": 1, "mode": mode}
        report["tangents"] = tangents.tangents
        unit = [w for w in names(wrt) if w not in tangents.tangents]  # along x: ∂/∂x
        report["derivatives"] = {w: tangents.tangents[tangents.output] for w in unit}
    else:
        program = derivative_program(graph, bindings, of, names(wrt) or None, order)
        text = to_source(_optimized(program.graph, bindings, no_optimize))
        report = {"program": text, "output": program.output, "order": order, "mode": mode}
        if order == 1:
            report["gradients"] = program.gradients
        report["derivatives"] = {",".join(k): v for k, v in program.derivatives.items()}
    if fmt == "json":
        from ..app.report import to_json_text

        output.write_text(to_json_text(report, schema="diff"))
    else:
        output.write_text(text, nl=False)


@click.command("hessian", short_help="Print the matrix of second derivatives.", epilog=EXIT_CODES)
@source_options
@of_option
@wrt_option
@click.option(
    "--vector",
    "vector",
    multiple=True,
    metavar="NAME=VALUE",
    help="Only the Hessian-vector product along this direction (repeatable, one "
    "per input; the others 0): one pass, for large inputs.",
)
@format_option(["text", "json", "plain"], "text", PLAIN_HELP)
@precision_option("default: 4 in text, every digit in plain")
@full_option
@output_option
@common_options
def hessian_command(args, expr, file_, binds, bindings_file, of, wrt, vector, fmt, precision, full):
    """Print the Hessian: ∂²output/∂a∂b for every pair of inputs (for tensor inputs, every
    pair of elements). Forward mode over the derivative program, one pass per input element
    (forward-over-reverse, as JAX's hessian), or one pass for a Hessian-vector product.

    \b
    Examples:
      cgraph hessian 'f = x^2 * y + sin(y)' x=1 y=2
      cgraph hessian sample:rosenbrock --format json
      cgraph hessian sample:mlp --wrt b2 --vector b2='[1, 0]'
      cgraph hessian 'f = x^2 * y' x=1 y=2 --format plain   # x=[4,2] y=[2,0] f=2
    """
    from ..run.higher import hessian

    graph, bindings = load(args, expr, file_, binds, bindings_file)
    directions = _directions(vector, graph) if vector else None
    if directions is not None:
        for w in names(wrt) or list(graph.inputs):
            directions.setdefault(w, 0.0 if not getattr(bindings.get(w), "shape", ()) else None)
        directions = {k: v for k, v in directions.items() if v is not None}
    report = hessian(graph, bindings, of, names(wrt) or None, directions)
    if fmt == "json" and report.get("hessian"):  # a matrix: rows on one line, as tensors are
        from ..core.arrays import np

        report["hessian"] = np.array(report["hessian"])

    def text():
        from ..render.matrices import hessian_table

        return hessian_table(report, precision, full)

    def plain():
        from ..render.text import hessian_plain

        return hessian_plain(report, precision)

    _emit(fmt, report, "hessian", text, plain)


@click.command(
    "jvp", short_help="Print forward-mode derivatives along a direction.", epilog=EXIT_CODES
)
@source_options
@click.option(
    "-t",
    "--tangent",
    "tangents",
    multiple=True,
    metavar="NAME=VALUE",
    help="The direction: a tangent for an input (repeatable; the others are 0).",
)
@format_option(["text", "json", "plain"], "text", PLAIN_HELP)
@precision_option("default: 4 in text, every digit in plain")
@full_option
@output_option
@common_options
def jvp_command(args, expr, file_, binds, bindings_file, tangents, fmt, precision, full):
    """Forward mode: push a direction through the program, node by node: each named value
    with its tangent, and the output's, the directional derivative (a Jacobian-vector
    product, as JAX's jvp).

    \b
    Examples:
      cgraph jvp sample:neuron --tangent x1=1            # ∂o/∂x1, by forward mode
      cgraph jvp 'y = W @ x' W='[[1,2],[3,4]]' x='[1,1]' -t x='[1,0]'
      cgraph jvp sample:neuron -t x1=1 --format plain    # jvp=-1.4999999999999993 o=0.70...
    """
    from ..run.higher import tangents_report

    graph, bindings = load(args, expr, file_, binds, bindings_file)
    report = tangents_report(graph, bindings, _directions(tangents, graph))

    def text():
        from ..render.matrices import tangents_table

        return tangents_table(report, precision or DIGITS, full)

    def plain():
        from ..render.text import jvp_plain

        return jvp_plain(report, precision)

    _emit(fmt, report, "jvp", text, plain)


@click.command("jacobian", short_help="Print the Jacobian of a tensor output.", epilog=EXIT_CODES)
@source_options
@of_option
@wrt_option
@click.option(
    "--mode",
    type=click.Choice(["auto", "reverse", "forward"]),
    default="auto",
    show_default=True,
    help="By rows (reverse mode) or columns (forward mode); auto: whichever needs fewer passes.",
)
@format_option(["text", "json"], "text")
@precision_option("default: 4")
@full_option
@output_option
@common_options
def jacobian_command(args, expr, file_, binds, bindings_file, of, wrt, mode, fmt, precision, full):
    """Print the Jacobian of the output, any shape, with respect to each input: an array of
    shape output.shape + input.shape. Reverse mode takes one pass per output element, forward
    mode one per input element; the report says which ran and how many passes.

    \b
    Examples:
      cgraph jacobian 'y = softmax(z)' z='[1, 2, 3]'
      cgraph jacobian sample:mlp --of Y --wrt b2
    """
    from ..run.higher import jacobian

    graph, bindings = load(args, expr, file_, binds, bindings_file)
    report = jacobian(graph, bindings, of, names(wrt) or None, mode)

    def text():
        from ..render.matrices import jacobian_table

        return jacobian_table(report, precision, full)

    _emit(fmt, report, "jacobian", text)


COMMANDS = [diff_command, hessian_command, jvp_command, jacobian_command]
