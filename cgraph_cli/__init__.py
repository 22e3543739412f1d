"""cgraph: computational graphs from expression programs, with values and gradients.

The library behind the ``cgraph`` command::

    >>> import cgraph_cli as cg
    >>> r = cg.grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    >>> r.value, r.gradients
    (-12.0, {'x': -3.0, 'y': -3.0, 'z': 4.0})

Lower-level pieces: :func:`parse` (text -> :class:`Graph`), ``cgraph_cli.forward.forward``
(values per node), :func:`vjp` (reverse mode, adjoints per node), :func:`jvp` (forward mode),
:func:`to_source` (graph -> program text). Importing this package is cheap: Lark loads on the
first parse.
"""

from __future__ import annotations

from .api import Evaluation, Gradients, evaluate, grad
from .backward import vjp
from .errors import BindingError, CgraphError, DomainError, EvalError, ParseError, Span, UsageError
from .forward import jvp
from .ir import Graph, Node, validate
from .parser import parse
from .render.source import to_source

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (hatch's dynamic version)

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
    "grad",
    "jvp",
    "parse",
    "to_source",
    "validate",
    "vjp",
    "__version__",
]
