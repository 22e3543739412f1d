"""``help``: a command's help, as ``COMMAND --help`` prints it, or its manual page."""

from __future__ import annotations

import click

from . import output
from .options import EXIT_CODES, common_options, output_option


def _complete_command(ctx, param, incomplete):
    """COMMAND completes to the names of cgraph's commands."""
    from click.shell_completion import CompletionItem

    root = ctx.find_root()
    group = root.command
    return [
        CompletionItem(name, help=group.get_command(root, name).get_short_help_str())
        for name in group.list_commands(root)
        if name.startswith(incomplete)
    ]


@click.command("help", short_help="Show a command's help, or its manual page.", epilog=EXIT_CODES)
@click.argument("command", required=False, metavar="[COMMAND]", shell_complete=_complete_command)
@click.option(
    "--man",
    is_flag=True,
    help="Print the manual page instead, in troff: cgraph help grad --man | man -l -",
)
@output_option
@common_options
@click.pass_context
def help_command(ctx, command, man):
    """Show the help of COMMAND, as `cgraph COMMAND --help` does (of cgraph itself without
    COMMAND), or with --man its manual page, cgraph-COMMAND(1). The pages are also in
    docs/man of the source distribution.

    \b
    Examples:
      cgraph help grad
      cgraph help grad --man | man -l -
      cgraph help --man -o cgraph.1
    """
    root = ctx.find_root()
    group = root.command
    if command is not None and group.get_command(root, command) is None:
        _unknown(command, group.list_commands(root))
    if man:
        from .manpages import man_page

        output.write_text(man_page(command), nl=False)
        return
    if command is None:
        output.write_text(group.get_help(root))
        return
    cmd = group.get_command(root, command)
    # A context that parses nothing: parsing would run the callbacks of COMMAND's -o and
    # --color, and reset this command's own.
    output.write_text(cmd.get_help(click.Context(cmd, info_name=command, parent=root)))


def _unknown(command: str, names: list[str]):
    import difflib

    from ..core.errors import UsageError

    close = difflib.get_close_matches(command, names, n=1)
    hints = [f"did you mean '{close[0]}'?"] if close else []
    hints.append("commands: " + ", ".join(names))
    raise UsageError(f"no command named '{command}'", hints=hints)


COMMANDS = [help_command]
