"""Models and functions straight from the frameworks: ``cgraph import --from torch
MODULE:FACTORY`` and ``--from jax MODULE:FUNCTION``.

This is the one place cgraph runs the user's Python: the module they name on the command line
is imported (with the current directory first on ``sys.path``, as ``python -m`` has it), and
the factory or function they name in it is called. A PyTorch module is exported with
``torch.onnx.export`` into memory and read by the ONNX importer (the program is the one
``cgraph import`` makes of the exported file); a JAX function is traced by ``jax.make_jaxpr``
and translated by :mod:`cgraph_cli.imports.jaxpr`. What goes wrong in the user's code (a module
that does not import, a name it does not have, an exception) is a usage error (exit 2) with its
message, never a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.errors import UsageError
from .program import Imported

FRAMEWORKS = ("torch", "jax")

_SPEC = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def load_object(spec: str, framework: str) -> Any:
    """The object ``MODULE:NAME`` names (NAME may be dotted: ``models:Net.build``), the module
    imported with the current directory first on ``sys.path``."""
    import importlib
    import os
    import sys

    if not _SPEC.fullmatch(spec):
        raise UsageError(
            f"--from {framework} takes MODULE:{'FACTORY' if framework == 'torch' else 'FUNCTION'}"
            f", not {spec!r}",
            hints=[f"cgraph import --from {framework} mymodel:"
                   f"{'make_model' if framework == 'torch' else 'loss'} --example batch.npz"],
        )  # fmt: skip
    module_name, _, attribute = spec.partition(":")
    here = os.getcwd()
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise UsageError(
                f"no module named {module_name} (looked in {here} and on Python's path)",
                hints=["run cgraph in the folder that holds the module's file"],
            ) from None
        raise UsageError(f"importing {module_name} failed: {e}") from None
    except Exception as e:  # noqa: BLE001 - the user's module raised while it was imported
        raise UsageError(f"importing {module_name} raised {_said(e)}") from None
    finally:
        if added and here in sys.path:
            sys.path.remove(here)
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise UsageError(f"{module_name} has no {attribute} (in {spec})")
        value = getattr(value, part)
    return value


def _said(e: BaseException) -> str:
    """An exception as a message says it: ``ValueError: bad shape``."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


def from_jax(spec: str, example: Mapping[str, Any]) -> Imported:
    """The program of the JAX function ``MODULE:FUNCTION`` traced on ``example``'s arrays."""
    from .jaxpr import require_jax, trace_function

    require_jax()  # asked for before the user's module runs

    function = load_object(spec, "jax")
    if not callable(function):
        raise UsageError(f"{spec} is not a function: it is a {type(function).__name__}")
    return trace_function(function, example, spec)


def from_torch(spec: str, example: Mapping[str, Any]) -> Imported:
    """The program of the PyTorch module ``MODULE:FACTORY`` makes (or that ``MODULE:NAME``
    is), exported in float64 with ``example``'s arrays as the forward's arguments (by the
    parameters' names where every key is one, else in the file's order)."""
    try:
        import torch
    except ImportError:
        raise UsageError(
            "--from torch needs the torch package (and onnx)",
            hints=["pip install 'cgraph-cli[torch]' (or: pip install torch onnx)"],
        ) from None
    import inspect
    import io
    import warnings

    from .onnx import import_onnx

    made = load_object(spec, "torch")
    if not isinstance(made, torch.nn.Module):
        if not callable(made):
            raise UsageError(f"{spec} is neither a torch.nn.Module nor a function making one")
        try:
            made = made()
        except Exception as e:  # noqa: BLE001 - the user's factory raised
            raise UsageError(f"{spec}() raised {_said(e)}") from None
        if not isinstance(made, torch.nn.Module):
            raise UsageError(f"{spec}() made {_a(type(made).__name__)}, not a torch.nn.Module")
    module = made.double().eval()
    try:
        params = [p.name for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    except (TypeError, ValueError):
        params = []
    arrays = {k: np.asarray(v) for k, v in example.items()}
    if arrays and set(arrays) <= set(params):  # by name, in the forward's order
        names = [p for p in params if p in arrays]
        if names != params[: len(names)]:
            raise UsageError(
                f"--example names {', '.join(names)}, not the first parameters of "
                f"{type(module).__name__}.forward ({', '.join(params)})"
            )
    else:  # in the file's order, named as in the file (so that it binds the program)
        names = list(arrays)
    ordered = [arrays[n] for n in names]
    tensors = tuple(
        torch.from_numpy(np.array(a, dtype=np.float64 if a.dtype.kind == "f" else a.dtype))
        for a in ordered
    )
    try:
        with torch.no_grad():
            result = module(*tensors)
    except Exception as e:  # noqa: BLE001 - the user's forward raised
        raise UsageError(f"{spec}'s forward raised {_said(e)}") from None
    buffer = io.BytesIO()
    options: dict[str, Any] = {"input_names": names, "opset_version": 17}
    if isinstance(result, torch.Tensor):
        options["output_names"] = ["out"]
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        options["dynamo"] = False  # TorchScript's exporter: no onnxscript needed, and quick
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's notice of its successor
            export: Any = torch.onnx.export  # it writes to a file object too
            export(module, tensors, buffer, **options)
    except Exception as e:  # noqa: BLE001 - the module's forward raised, or the exporter
        raise UsageError(f"exporting {spec} with torch.onnx.export raised {_said(e)}") from None
    return import_onnx(buffer.getvalue(), spec, dict(zip(names, ordered)))


def _a(noun: str) -> str:
    """``a list``, ``an int``."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun
