"""Program text -> graph IR: the pipeline of the front end.

``tables`` (generated from ``grammars/cgraph.lark`` by ``build``), ``lexer`` (the scanner),
``driver`` (the LALR loop; ``plans``: what its compiled statement plans do themselves;
``blocks``: the statements of loops and functions, by indentation), ``reader`` (the
callbacks that build the graph and keep the program's name scope), ``messages`` (syntax
errors in the user's words) and ``lookalike`` (characters that look like ASCII syntax but
are not).

>>> g = parse("y = sin(x) ^ 2")
>>> [n.op.name for n in g]
['input', 'sin', 'const', 'pow']
"""

from __future__ import annotations

from ..core.errors import Source
from ..core.ir import Graph
from .messages import UnexpectedInput


def parse(text: str, filename: str = "<expr>") -> Graph:
    """Parse a cgraph program into a :class:`~cgraph_cli.core.ir.Graph`.

    Raises :class:`~cgraph_cli.core.errors.ParseError` (with the place) for any invalid program.
    ``filename`` names the program in error messages.

    >>> g = parse("p = x + y; g = p * z")
    >>> g, g.inputs, g.output
    (<Graph p = x + y; g = p * z: 3 inputs, 5 nodes>, {'x': 0, 'y': 1, 'z': 3}, 4)
    """
    from .driver import parse_source

    return parse_source(Source(text, filename))


def scan(source: Source) -> int:
    """The number of tokens in ``source`` (for benchmarks: the scanner alone)."""
    from collections import deque

    from ..core.ir import gc_paused
    from .lexer import scan as scan_tokens

    with gc_paused():  # as the parser runs it
        tokens, codes, _ = scan_tokens(source)
        deque(tokens, maxlen=0)  # made one by one and let go, as the parser reads them
        return len(codes)


__all__ = ["UnexpectedInput", "parse", "scan"]
