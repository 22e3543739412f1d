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

import gc as _gc
import sys


def _run_as_command() -> bool:
    """Whether this process is the ``cgraph`` command (its script, or ``python -m
    cgraph_cli``) rather than a program importing the library."""
    argv0 = (getattr(sys, "argv", None) or [""])[0]
    if argv0 == "-m":  # python -m NAME, while NAME is found: which NAME?
        given = getattr(sys, "orig_argv", [])
        module = given[given.index("-m") + 1 : given.index("-m") + 2] if "-m" in given else []
        return module == ["cgraph_cli"] or "-mcgraph_cli" in given
    name = argv0.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name in ("cgraph", "cgraph.exe", "cgraph-script.py")


# The command's imports (this package, the parser, click, the commands) make many objects
# and no garbage: the cyclic collector would only rescan them, about 3 ms of every command's
# start. It stays paused until cgraph_cli.cli has imported everything, which then freezes
# those objects (gc.freeze: never scanned again) and resumes it. A program importing the
# library is left as it was.
PAUSED_FOR_COMMAND = _gc.isenabled() and _run_as_command()
if PAUSED_FOR_COMMAND:
    _gc.disable()

import types  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

# The parser is a package and a function both called parse: importing the package would make
# `cgraph_cli.parse` the package. Bound here first, it stays the function (every command
# parses, so nothing is lost at start-up).
from .parse import parse  # noqa: E402

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (hatch's dynamic version)

# Public name -> the module that defines it: the one table of lazy imports (as sqlglot's
# optimizer/__init__.py). A name is imported on first use, then kept in this module.
_LAZY = {
    "Evaluation": "api",
    "Explanation": "api",
    "Gradients": "api",
    "derivative_program": "api",
    "evaluate": "api",
    "explain": "api",
    "grad": "api",
    "gradcheck": "api",
    "hessian": "api",
    "jacobian": "api",
    "tangent_program": "api",
    "CheckReport": "checks",
    "check": "checks",
    "Diagram": "draw",
    "diagram": "draw",
    "page": "draw",
    "slides": "draw",
    "GradcheckReport": "gradcheck",
    "Value": "arrays",
    "vjp": "passes.vjp",
    "BindingError": "errors",
    "CgraphError": "errors",
    "DomainError": "errors",
    "EvalError": "errors",
    "ParseError": "errors",
    "Span": "errors",
    "UsageError": "errors",
    "jvp": "passes.jvp",
    "forward": "passes.evaluate",
    "Graph": "ir",
    "Node": "ir",
    "validate": "ir",
    "to_source": "render.source",
    "optimize": "passes.optimize",
    "Optimized": "passes.optimize",
    "compile_module": "passes.compile",
    "run_rows": "rows",
    "run_graph": "control",
    "train": "training",
    "TrainResult": "training",
    "RowsResult": "rows",
    "read_chunks": "datafiles",
    "RowWriter": "datawriter",
    "engine": "engine",
}

if TYPE_CHECKING:  # what static tools see; the same names as _LAZY
    from .api import (
        Evaluation,
        Explanation,
        Gradients,
        derivative_program,
        evaluate,
        explain,
        grad,
        gradcheck,
        hessian,
        jacobian,
        tangent_program,
    )
    from .arrays import Value
    from .checks import CheckReport, check
    from .control import run_graph
    from .datafiles import read_chunks
    from .datawriter import RowWriter
    from .draw import Diagram, diagram, page, slides
    from .engine import engine
    from .errors import (
        BindingError,
        CgraphError,
        DomainError,
        EvalError,
        ParseError,
        Span,
        UsageError,
    )
    from .gradcheck import GradcheckReport
    from .ir import Graph, Node, validate
    from .passes.compile import compile_module
    from .passes.evaluate import forward
    from .passes.jvp import jvp
    from .passes.optimize import Optimized, optimize
    from .passes.vjp import vjp
    from .render.source import to_source
    from .rows import RowsResult, run_rows
    from .training import TrainResult, train


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


#: Public functions named as a module of this package is.
_SHADOWED = frozenset({"explain", "gradcheck", "engine"})


class _Package(types.ModuleType):
    """This package, keeping its functions named as modules: importing the module
    ``cgraph_cli.explain`` (or ``gradcheck``) would otherwise set the package's attribute of
    that name to the module, in place of the function :func:`explain` (as the Python
    reference's "Customizing module attribute access" does it).

    >>> import cgraph_cli, cgraph_cli.explain
    >>> callable(cgraph_cli.explain), callable(cgraph_cli.gradcheck)
    (True, True)
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return  # `from .explain import ...` still works: it reads sys.modules
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
