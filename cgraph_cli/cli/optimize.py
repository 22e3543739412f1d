"""``optimize`` and ``compile``: the rewrites a graph compiler makes, and the graph as a
Python module."""

from __future__ import annotations

import sys

import click

from . import output
from .options import (
    EXIT_CODES,
    also_written,
    check_gif,
    common_options,
    format_option,
    frames_fit,
    frames_options,
    load,
    names,
    of_option,
    output_option,
    source_options,
    wrt_option,
)

MAX_REWRITE_FRAMES = 60  # rewrites drawn one frame each at most (else one frame per pass)


@click.command(
    "optimize", short_help="Print the program after the optimizer's rewrites.", epilog=EXIT_CODES
)
@source_options
@of_option
@click.option(
    "--passes",
    metavar="LIST",
    help="The passes to run, comma-separated, from dce,fold,cse,simplify,stabilize "
    "(default: all; dce first, the others together as one pass over the program).",
)
@click.option("--report", is_flag=True, help="Also list each rewrite: where, before and after.")
@frames_options(
    "Draw the program before the passes and after each rewrite (each pass, past 60 "
    "rewrites), one image each in DIR: a slide sequence."
)
@format_option(
    ["text", "json"], "text", "The program (with a summary comment), or JSON with the rewrites."
)
@output_option
@common_options
def optimize_command(
    args, expr, file_, binds, bindings_file, of, passes, report, frames, frames_format, fit,
    theme, gif, mp4, fmt,
):  # fmt: skip
    """Optimize the program as a graph compiler does, and print the result: dead code
    dropped, constants folded, common subexpressions shared, algebra simplified, and
    numerically unstable forms (log(sum(exp(x))), log(1 + exp(x))...) made stable.

    The result is a cgraph program with the same inputs, so the same bindings run it.
    Bindings, if given, or the inputs' defaults tell the rules the inputs' shapes; for an
    input with neither, a rule applies only where it holds for any shape.

    \b
    Examples:
      cgraph optimize 'y = sin(x)*2*3 + sin(x)*0 + log(sum(exp(v)))'
      cgraph optimize sample:mlp --report
      cgraph optimize 'y = x*1 + 0' --passes simplify --format json
      cgraph optimize sample:neuron | cgraph eval - --all
      cgraph optimize sample:rewrites --frames slides/      # one diagram per rewrite
      cgraph optimize sample:rewrites --frames slides/ --fit 16:9   # as 1920x1080 slides
    """
    from ..passes.optimize import optimize, parse_passes

    graph, bindings = load(args, expr, file_, binds, bindings_file)
    check_gif(frames, frames_format, gif, mp4)
    size = frames_fit(frames, frames_format, fit)
    chosen = parse_passes(passes)
    steps: list = []
    if frames:
        from ..app.frames import frames_folder

        folder = frames_folder(graph, of, frames)
        steps.append(("original", graph, []))
    record = (lambda name, g, rewrites: steps.append((name, g, rewrites))) if frames else None
    result = optimize(graph, chosen, of=of, bindings=bindings, on_pass=record)
    if frames:
        done = [(r.pass_name, r) for _, _, rewrites in steps[1:] for r in rewrites]
        if len(done) <= MAX_REWRITE_FRAMES:  # one frame per rewrite, as it is made
            steps = [("original", graph, [])] + [
                (name, optimize(graph, chosen, of=of, bindings=bindings, budget=k).graph, [r])
                for k, (name, r) in enumerate(done, start=1)
            ]
        else:
            output.note(f"{len(done)} rewrites: one frame per pass instead of one per rewrite")
        written = _write_frames(steps, bindings, folder, frames_format, theme, gif, mp4, size)
        output.note(f"wrote {written} frames to {folder}" + also_written(gif, mp4))
    if fmt == "json":
        from ..app.report import optimize_report, to_json_text

        output.write_text(to_json_text(optimize_report(result), schema="optimize"))
        return
    text = result.source + f"# {result.summary()}\n"
    if report:
        text += _rewrites_text(result)
    output.write_text(text, nl=False)


def _write_frames(steps, bindings, folder, kind: str, theme: str, gif, mp4, size=None) -> int:
    """One diagram per step: ``00-original.png``, ``01-dce.png``..., each titled with the
    pass and its rewrites, on one canvas (``size``: exactly that many pixels, each drawing
    as large as fits)."""
    from ..app.diagrams import diagram_of, diagram_options
    from ..app.frames import save_frames
    from ..render.dot import THEMES

    options = diagram_options(theme=theme)
    frames = []
    with output.progress(len(steps), "frames") as advance:
        for k, (name, graph, rewrites) in enumerate(steps):
            d = diagram_of(graph, bindings, options, force=True)
            count = len(graph.ops)
            if name == "original":
                title = f"the program: {count} nodes"
            else:
                shown = "; ".join(f"{r.before} → {r.after}" for r in rewrites[:3])
                more = f" (and {len(rewrites) - 3} more)" if len(rewrites) > 3 else ""
                title = f"after {name}: {count} nodes. {shown}{more}"
            drawn = d.titled(title)
            data = drawn.render(kind) if size is None else drawn.fitted(size)[0]
            frames.append((f"{k:02d}-{name}.{kind}", data))
            advance()
    save_frames(frames, folder, "optimize", THEMES[theme].background, gif, mp4, size=size)
    return len(steps)


def _rewrites_text(result) -> str:
    """Each rewrite as a comment line: pass, place in the original, before -> after."""
    from ..core.errors import line_col

    source = result.original.source.text
    lines = []
    for p in result.passes:
        for r in p.rewrites:
            line, col = line_col(source, r.start)
            lines.append(f"# {p.name:<9} {line}:{col:<4} {r.before}  ->  {r.after}")
    return "\n".join(lines) + ("\n" if lines else "")


COMMANDS = [optimize_command]


@click.command(
    "compile", short_help="Write the program as a standalone Python module.", epilog=EXIT_CODES
)
@source_options
@of_option
@wrt_option
@click.option(
    "--target",
    type=click.Choice(["python", "numpy", "js", "onnx"]),
    default=None,
    help="Plain Python over math (programs of numbers), NumPy (tensors), JavaScript (a "
    "script for Node and web pages, numbers and tensors), or an ONNX model (float64, opset "
    "18; the onnx extra). Default: onnx for -o FILE.onnx, js for -o FILE.js, else python.",
)
@click.option(
    "--grad",
    "with_grad",
    is_flag=True,
    help="--target onnx: the gradients too, one more output per input (or per --wrt), "
    "named as `cgraph diff` names them (dloss_dW1).",
)
@click.option(
    "--jvp",
    "with_jvp",
    is_flag=True,
    help="--target onnx: the output's directional derivative too (forward mode, as cgraph "
    "jvp), along a direction that is more inputs of the model: a tangent x_dot per input "
    "(or per --wrt), named as cgraph diff --mode forward names them (loss_dot).",
)
@click.option(
    "--hvp",
    "with_hvp",
    is_flag=True,
    help="--target onnx: the gradients and the Hessian-vector product too (forward mode over "
    "the derivative program, as cgraph hessian --vector), along a direction given as inputs "
    "x_dot: dloss_dW1 and dloss_dW1_dot per input (or per --wrt).",
)
@click.option(
    "--dtype",
    type=click.Choice(["float64", "float32"]),
    default="float64",
    show_default=True,
    help="--target onnx: the model's numbers (float32: what every runtime has kernels for).",
)
@output_option
@common_options
def compile_command(
    args, expr, file_, binds, bindings_file, of, wrt, target, with_grad, with_jvp, with_hvp, dtype
):
    """Write the program as a Python module that runs without cgraph: forward(**inputs)
    returns every named value, grad(**inputs) returns the output's value and its gradients
    (for numbers, the reverse pass written from the interpreter's own float rules: the same
    floats; for tensors, the derivative program, optimized), one line per node with a
    comment pointing back to the program's line. INPUTS and DEFAULTS list the inputs and
    their defaults.

    Tensor programs are compiled for their inputs' shapes (from the bindings or the
    defaults), with --target numpy. `a if c else b` becomes an `if`: the branch not taken is
    never computed, forward or backward; `for` loops (one level deep) become Python `for`
    loops over their bodies' step functions.

    --target js writes a script with no library for Node and web pages: it sets
    module.exports (Node's require) or else globalThis.cgraphProgram, an object with
    forward(inputs) (every node's value, by name) and grad(inputs) (the value, the
    gradients, and every node's value and adjoint); a value that is not finite throws the
    error cgraph prints. It takes every op (the image ops too) and if/else, not loops.

    \b
    Examples:
      cgraph compile sample:neuron -o neuron.py
      python -c 'import neuron; print(neuron.grad(**neuron.DEFAULTS))'
      cgraph compile sample:mlp --target numpy -o mlp_grad.py
      cgraph compile sample:neuron -o neuron.js
      cgraph compile sample:huber -o huber.py
      cgraph compile 'f = x^2 * y' --wrt x
      cgraph compile sample:mlp --target onnx --grad -o mlp_grad.onnx
      cgraph compile sample:neuron --target onnx --jvp -o neuron_jvp.onnx
      cgraph compile sample:mlp --target onnx --hvp --wrt W2 -o mlp_hvp.onnx
    """
    from ..core.errors import UsageError
    from ..run.scan_code import compile_module

    modes = [m for m, on in (("grad", with_grad), ("jvp", with_jvp), ("hvp", with_hvp)) if on]
    if len(modes) > 1:
        raise UsageError(
            f"--{modes[0]} and --{modes[1]} cannot be given together: a model is one of them",
            hints=["--hvp's model holds the gradient too"] if modes == ["grad", "hvp"] else [],
        )
    if target is None:  # what the file's name says it is
        written = str(output.settings.output or "")
        lower = written.lower()
        target = "onnx" if lower.endswith(".onnx") else "js" if lower.endswith(".js") else "python"
    graph, bindings = load(args, expr, file_, binds, bindings_file)
    if (modes or dtype != "float64") and target != "onnx":
        raise UsageError(
            "--grad and --dtype are for --target onnx (--jvp and --hvp too): a Python module "
            "always has grad(), in float64"
        )
    if target == "onnx":
        from ..run.onnx_export import export_onnx

        if output.settings.output in (None, "-") and output._isatty(sys.stdout):
            raise UsageError("an ONNX model is binary: write it to a file", hints=["-o model.onnx"])
        data = export_onnx(
            graph, bindings, of=of, wrt=names(wrt) or None, grad=with_grad, dtype=dtype,
            jvp=with_jvp, hvp=with_hvp,
        )  # fmt: skip
        output.write_bytes(data)
        return
    label = graph.source.filename if graph.source.filename not in ("<expr>", "<stdin>") else ""
    text = compile_module(
        graph, target, of=of, wrt=names(wrt) or None, bindings=bindings, name=label
    )
    output.write_text(text, nl=False)


COMMANDS.append(compile_command)
