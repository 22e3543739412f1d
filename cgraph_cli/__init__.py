"""cgraph: computational graphs from expression programs, with values and gradients.

The library behind the ``cgraph`` command::

    >>> import cgraph_cli as cg
    >>> r = cg.grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    >>> r.value, r.gradients
    (-12.0, {'x': -3.0, 'y': -3.0, 'z': 4.0})
    >>> r
    <Gradients g = -12; ∂g/∂x = -3, ∂g/∂y = -3, ∂g/∂z = 4>

Each command has its call, taking a program (text or a :class:`Graph`) and bindings:
:func:`evaluate`, :func:`grad`, :func:`diagram`, :func:`page`, :func:`check`, :func:`gradcheck`,
:func:`explain`, :func:`derivative_program`, :func:`hessian`, :func:`jacobian`. Their results
print readably, and show themselves in Jupyter. Lower-level pieces: :func:`parse` (text ->
:class:`Graph`), :func:`forward` (values per node), :func:`vjp` (reverse mode, adjoints per
node), :func:`jvp` (forward mode), :func:`to_source` (graph -> program text). Values are
floats, or NumPy arrays for tensors (:data:`Value`). Every error is a :class:`CgraphError`.

Importing this package is cheap: each name is imported from its module on first use (see
``_LAZY``), so ``cgraph eval`` does not pay for the reverse pass or the diagrams, and Lark
loads on the first parse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING  # noqa: E402

# First, before anything else is imported: the cgraph command pauses the cyclic collector
# for its start-up (see core/startup.py).
from .core import startup as _startup  # noqa: F401, I001  (for its effect)

# The parser is a package and a function both called parse: importing the package would make
# `cgraph_cli.parse` the package. Bound here first, it stays the function (every command
# parses, so nothing is lost at start-up).
from .parse import parse  # noqa: E402

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (hatch's dynamic version)

# Public name -> the module that defines it: the one table of lazy imports (as sqlglot's
# optimizer/__init__.py). A name is imported on first use, then kept in this module.
_LAZY = {
    "Evaluation": "app.results",
    "Explanation": "app.results",
    "Gradients": "app.results",
    "derivative_program": "app.api",
    "evaluate": "app.api",
    "explain": "app.api",
    "grad": "app.api",
    "gradcheck": "app.api",
    "hessian": "app.api",
    "jacobian": "app.api",
    "tangent_program": "app.api",
    "CheckReport": "app.checks_report",
    "check": "app.checks",
    "Diagram": "app.diagrams",
    "diagram": "app.diagrams",
    "page": "app.diagrams",
    "slides": "app.diagrams",
    "GradcheckReport": "app.gradcheck",
    "Value": "core.arrays",
    "vjp": "run.vjp",
    "BindingError": "core.errors",
    "CgraphError": "core.errors",
    "DomainError": "core.errors",
    "EvalError": "core.errors",
    "ParseError": "core.errors",
    "Span": "core.errors",
    "UsageError": "core.errors",
    "jvp": "run.jvp",
    "forward": "run.evaluate",
    "Graph": "core.ir",
    "Node": "core.ir",
    "validate": "core.ir",
    "to_source": "parse.unparse",
    "load_onnx": "imports.onnx",
    "optimize": "passes.optimize",
    "Optimized": "passes.optimize",
    "compile_module": "run.scan_code",
    "run_rows": "jobs.rows",
    "run_graph": "run.control",
    "train": "jobs.training",
    "TrainResult": "jobs.training",
    "RowsResult": "jobs.rows",
    "read_chunks": "data.datafiles",
    "RowWriter": "data.datawriter",
    "engine": "run.engine",
}

if TYPE_CHECKING:  # what static tools see; the same names as _LAZY
    from .app.api import (
        derivative_program,
        evaluate,
        explain,
        grad,
        gradcheck,
        hessian,
        jacobian,
        tangent_program,
    )
    from .app.checks import check
    from .app.checks_report import CheckReport
    from .app.diagrams import Diagram, diagram, page, slides
    from .app.gradcheck import GradcheckReport
    from .app.results import Evaluation, Explanation, Gradients
    from .core.arrays import Value
    from .core.errors import (
        BindingError,
        CgraphError,
        DomainError,
        EvalError,
        ParseError,
        Span,
        UsageError,
    )
    from .core.ir import Graph, Node, validate
    from .data.datafiles import read_chunks
    from .data.datawriter import RowWriter
    from .imports.onnx import load_onnx
    from .jobs.rows import RowsResult, run_rows
    from .jobs.training import TrainResult, train
    from .parse.unparse import to_source
    from .passes.optimize import Optimized, optimize
    from .run.control import run_graph
    from .run.engine import engine
    from .run.evaluate import forward
    from .run.jvp import jvp
    from .run.scan_code import compile_module
    from .run.vjp import vjp


def __getattr__(name: str):
    """``cgraph_cli.parse`` and ``from cgraph_cli import parse``: imported on first use.

    >>> import cgraph_cli
    >>> sorted(cgraph_cli.parse("y = a * b").inputs)
    ['a', 'b']
    """
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BindingError",
    "CgraphError",
    "CheckReport",
    "Diagram",
    "DomainError",
    "EvalError",
    "Evaluation",
    "Explanation",
    "GradcheckReport",
    "Gradients",
    "Graph",
    "Node",
    "Optimized",
    "ParseError",
    "RowWriter",
    "RowsResult",
    "Span",
    "UsageError",
    "Value",
    "check",
    "compile_module",
    "derivative_program",
    "diagram",
    "engine",
    "evaluate",
    "explain",
    "forward",
    "grad",
    "gradcheck",
    "hessian",
    "jacobian",
    "jvp",
    "load_onnx",
    "optimize",
    "page",
    "parse",
    "read_chunks",
    "run_graph",
    "train",
    "TrainResult",
    "run_rows",
    "slides",
    "tangent_program",
    "to_source",
    "validate",
    "vjp",
    "__version__",
]
