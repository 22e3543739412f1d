"""``lsp``: the language server an editor starts."""

from __future__ import annotations

import click

from .options import EXIT_CODES, common_options


@click.command(
    "lsp", short_help="A language server for editors, on stdin/stdout.", epilog=EXIT_CODES
)
@common_options
def lsp_command():
    """A language server (LSP) for cgraph programs, for an editor to start: it talks on stdin
    and stdout. As you type, it shows the errors the commands would print, each statement's
    value and gradient (from the program's input defaults) at its end, values and signatures
    on hover, completion, go to definition, references, the outline and quick fixes. Needs the
    lsp extra: pip install 'cgraph-cli[lsp]'. Editor set-up: docs/lsp.md.

    \b
    Examples:
      cgraph lsp --help                   # this text; an editor runs: cgraph lsp
    """
    from ..app.lsp import serve

    serve()


COMMANDS = [lsp_command]
