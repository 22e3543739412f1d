"""``import``: an ONNX model as a cgraph program and its weights."""

from __future__ import annotations

from typing import Any

import click

from . import output
from .options import EXIT_CODES, common_options
from .paramtypes import FilePath


@click.command(
    "import",
    short_help="Read an ONNX model (or a PyTorch module, a JAX function) into a program.",
    epilog=EXIT_CODES,
)
@click.argument("model", metavar="MODEL.onnx|MODULE:FUNCTION", type=FilePath("source"))
@click.option(
    "--from",
    "framework",
    type=click.Choice(["torch", "jax"]),
    help="Read MODULE:FUNCTION instead of a file: torch, a factory of a torch.nn.Module (or "
    "the module itself), exported to ONNX in memory; jax, a function traced by "
    "jax.make_jaxpr. Runs the Python module named (imported from the current folder): the "
    "one place cgraph runs your code. Needs --example (the arguments).",
)
@click.option(
    "-o",
    "--output",
    "target",
    metavar="FILE.cg",
    type=FilePath("output"),
    help="Write the program to FILE.cg and its weights beside it, FILE.npz (default: the "
    "program on standard output, the weights not written).",
)
@click.option(
    "--weights",
    metavar="FILE.npz",
    type=FilePath("output"),
    help="Write the weights to this file instead of the one beside -o.",
)
@click.option(
    "--example",
    metavar="FILE.npz",
    type=FilePath("source"),
    help="Arrays for the model's inputs whose shapes it leaves open (a batch axis): the "
    "program is imported for their shapes. With --from: the function's arguments, by its "
    "parameters' names (else in the file's order).",
)
@common_options
def import_command(model, target, weights, example, framework):
    """Read an ONNX model (exported by PyTorch, Keras, scikit-learn...) into a cgraph program:
    one statement per ONNX node in cgraph's ops, the model's inputs and weights as inputs, the
    weights in an .npz file beside it (never inlined). Nothing in the file is run. The
    model's local functions (PyTorch's export_modules_as_functions) become the program's
    defs, each call a call of one (inlined, with a comment saying why, where a def cannot
    stand for the function: several outputs, attributes that differ between calls).

    With --from torch MODULE:FACTORY or --from jax MODULE:FUNCTION, the program comes from
    Python: the module is imported from the current folder and the factory or function run
    (this runs your code): a PyTorch module exported to ONNX in memory, or a JAX function
    traced on --example's arrays, its arguments the program's inputs, the arrays it closes
    over its weights.

    Every command also takes MODEL.onnx where it takes a program, with the weights bound:
    cgraph grad model.onnx --bindings batch.npz. A model that leaves a shape open (a batch
    axis) where the program needs it (a reshape) is imported for the shapes of --example's
    arrays (or, read by another command, of the bindings).

    \b
    Examples:
      cgraph import sample:mlp.onnx -o mlp.cg       # and mlp.npz, the weights
      cgraph eval sample:mlp.onnx x='[[1, 2, 3]]'   # any command reads the model itself
      cgraph render sample:mlp.onnx x='[[1, 2, 3]]' --collapse -o mlp.png
    """
    from pathlib import Path

    from ..core.errors import UsageError, visible
    from ..data.outputs import write_file
    from ..data.sources import load_bindings, read_limited, sample_data
    from ..imports.onnx import MODEL_LIMIT, import_onnx, imported_graph

    if framework is not None:
        if example is None:
            raise UsageError(
                f"--from {framework} needs --example FILE.npz: the arrays to call it with",
                hints=[f"cgraph import --from {framework} {visible(model)} --example batch.npz"],
            )
        from ..imports.frameworks import from_jax, from_torch

        arrays = load_bindings(example)
        name = visible(model)
        imported = (from_torch if framework == "torch" else from_jax)(model, arrays)
    else:
        if not str(model).lower().endswith(".onnx"):
            hints = ["cgraph import model.onnx"]
            if ":" in model and not model.startswith("sample:"):
                hints.append(f"a Python module's function: cgraph import --from jax {model} ...")
            raise UsageError(f"{model} is not an .onnx file", hints=hints)
        path = sample_data(model[len("sample:") :]) if model.startswith("sample:") else model
        data = read_limited(path, MODEL_LIMIT, "an ONNX model")
        given = load_bindings(example) if example else None
        name = visible(Path(model).name)
        imported = import_onnx(data, name, given)
    imported_graph(imported, name)  # the program reads back: checked before writing
    if weights is None and target is not None and imported.weights:
        weights = str(Path(target).with_suffix(".npz"))
        if Path(weights).exists():
            raise UsageError(
                f"{weights} exists: refusing to overwrite it with the weights",
                hints=["name the weights' file with --weights FILE.npz"],
            )
    text = imported.text
    if weights is not None and imported.weights:
        import io

        import numpy as np

        buffer = io.BytesIO()
        savez: Any = np.savez  # its keyword arguments are the arrays, by name
        savez(buffer, **imported.weights)
        write_file(weights, buffer.getvalue())
    if target is not None:
        write_file(target, text.encode("utf-8"))
        output.note(
            f"wrote {target}"
            + (f" and its weights, {weights}" if weights and imported.weights else "")
        )
    else:
        output.write_text(text, nl=False)
        if imported.weights and weights is None:
            output.note("note: the weights are not written: -o FILE.cg writes them beside it")


COMMANDS = [import_command]
