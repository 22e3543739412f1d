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
    value and gradient at its end (from the program's input defaults, or a bindings file:
    NAME.bindings.json or .npz beside NAME.cg, or the one a first-line comment names: #
    bindings: FILE), values, signatures and local derivatives on hover, completion, signature
    help, go to definition, references, rename, the outline, formatting and quick fixes. Needs
    the lsp extra: pip install 'cgraph-cli[lsp]'. Editor set-up (a VS Code extension is in
    editors/vscode): docs/lsp.md.

    \b
    Examples:
      cgraph lsp --help                   # this text; an editor runs: cgraph lsp
    """
    from ..app.lsp import serve

    serve()


COMMANDS = [lsp_command]
