"""cgraph: computational graphs from expression programs, with values and gradients.

The library behind the ``cgraph`` command::

    >>> import cgraph_cli as cg
    >>> r = cg.grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    >>> r.value, r.gradients
    (-12.0, {'x': -3.0, 'y': -3.0, 'z': 4.0})

Lower-level pieces: :func:`parse` (text -> :class:`Graph`), :func:`forward`
(values per node), :func:`vjp` (reverse mode, adjoints per node), :func:`jvp` (forward mode),
:func:`to_source` (graph -> program text). Importing this package is cheap: each name is
imported from its module on first use (see ``_LAZY``), so ``cgraph eval`` does not pay for the
reverse pass or the diagrams, and Lark loads on the first parse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (hatch's dynamic version)

# The parser is a package and a function both called parse: importing the package would make
# `cgraph_cli.parse` the package. Bound here first, it stays the function (every command
# parses, so nothing is lost at start-up).
from .parse import parse  # noqa: E402

# Public name -> the module that defines it: the one table of lazy imports (as sqlglot's
# optimizer/__init__.py). A name is imported on first use, then kept in this module.
_LAZY = {
    "Evaluation": "api",
    "Gradients": "api",
    "evaluate": "api",
    "grad": "api",
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
}

if TYPE_CHECKING:  # what static tools see; the same names as _LAZY
    from .api import Evaluation, Gradients, evaluate, grad
    from .errors import (
        BindingError,
        CgraphError,
        DomainError,
        EvalError,
        ParseError,
        Span,
        UsageError,
    )
    from .ir import Graph, Node, validate
    from .passes.evaluate import forward
    from .passes.jvp import jvp
    from .passes.vjp import vjp
    from .render.source import to_source


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
    "DomainError",
    "EvalError",
    "Evaluation",
    "Graph",
    "Gradients",
    "Node",
    "ParseError",
    "Span",
    "UsageError",
    "evaluate",
    "forward",
    "grad",
    "jvp",
    "parse",
    "to_source",
    "validate",
    "vjp",
    "__version__",
]
