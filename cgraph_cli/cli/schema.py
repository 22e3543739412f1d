"""``schema``: the JSON Schema of each command's ``--format json`` output."""

from __future__ import annotations

import click

from . import output
from .options import EXIT_CODES, common_options, output_option


@click.command(
    "schema", short_help="Print the JSON Schema of a command's JSON output.", epilog=EXIT_CODES
)
@click.argument("command", required=False, metavar="[COMMAND]")
@output_option
@common_options
def schema_command(command):
    """Print the JSON Schema (draft 2020-12) of what COMMAND prints with --format json, or
    list the commands that have one.

    Every JSON document starts with "schema_version", its format's version: raised when a
    key is removed or changes meaning; new keys may be added within a version.

    \b
    Examples:
      cgraph schema                           # the commands, with each format's version
      cgraph schema grad                      # the schema of cgraph grad --format json
      cgraph schema grad -o grad.schema.json  # a copy for a validator
    """
    from .. import schemas

    if command is None:
        rows = []
        for name in schemas.names():
            about = schemas.load(name)["description"].split(". ")[0].rstrip(".")
            rows.append(f"{name:<10} schema_version {schemas.VERSIONS[name]}  {about}")
        output.write_text("\n".join(rows))
        return
    output.write_text(schemas.text(command), nl=False)


COMMANDS = [schema_command]
