"""JSON Schemas (draft 2020-12) of the JSON documents cgraph's commands print: one file per
command, ``NAME.schema.json`` in this folder, shipped in the package (``cgraph schema NAME``
prints one).

Every document starts with ``"schema_version"``: its format's version, raised when a key is
removed or changes meaning (new keys may come within a version). A command that prints JSON
passes its name to :func:`cgraph_cli.app.report.to_json_text`; adding one means a schema file here
and its version in :data:`VERSIONS` (the tests hold every command with ``--format json`` to
both).

>>> names()
['check', 'diff', 'eval', 'explain', 'grad', 'gradcheck', 'hessian', 'jacobian', 'jvp', 'optimize', 'reduce', 'train', 'worksheet']
>>> load("grad")["$id"]
'https://cgraph.dev/schemas/grad.schema.json'
"""

from __future__ import annotations

import json

# Each format's version: what its schema's "schema_version" const says.
VERSIONS = {
    "eval": 1,
    "grad": 1,
    "check": 1,
    "gradcheck": 1,
    "explain": 2,
    "diff": 1,
    "hessian": 1,
    "jvp": 1,
    "jacobian": 1,
    "optimize": 1,
    "reduce": 1,
    "train": 1,
    "worksheet": 1,
}

SUFFIX = ".schema.json"


def names() -> list[str]:
    """The commands that have a schema, in alphabetical order."""
    return sorted(VERSIONS)


def text(name: str) -> str:
    """The schema of command ``name``'s JSON output as text (``grad`` or ``grad.schema.json``),
    or a usage error that lists the names."""
    from importlib.resources import files

    return files(__name__).joinpath(_known(name) + SUFFIX).read_text(encoding="utf-8")


def load(name: str) -> dict:
    """The schema of command ``name``'s JSON output, as a dict."""
    return json.loads(text(name))


def _known(name: str) -> str:
    import difflib

    from ..core.errors import UsageError, visible

    name = name.removesuffix(SUFFIX)
    if name in VERSIONS:
        return name
    close = difflib.get_close_matches(name, names(), n=1)
    hints = [f"did you mean '{close[0]}'?"] if close else []
    hints.append("the commands that print JSON: " + ", ".join(names()))
    raise UsageError(f"no schema named '{visible(name)}'", hints=hints)
