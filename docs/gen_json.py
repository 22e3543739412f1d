"""Write the generated parts of docs/json.md from the JSON Schemas cgraph ships
(``cgraph_cli/schemas/*.schema.json``): the table of formats with their versions, and each
format's keys with their types and descriptions. The prose and the examples around them are
written by hand; the generated parts sit between ``<!-- begin generated: PART -->`` and
``<!-- end generated: PART -->`` lines. ``make docs`` runs this; a test fails when docs/json.md is
out of date::

    python docs/gen_json.py            # rewrite the generated parts of docs/json.md
    python docs/gen_json.py --check    # exit 1 when they are out of date
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from cgraph_cli import schemas

TARGET = Path(__file__).resolve().parent / "json.md"


def first_sentence(text: str) -> str:
    """The text up to its first full stop followed by a space (or all of it).

    >>> first_sentence("The forward pass. Every value.")
    'The forward pass'
    """
    return re.split(r"\.(?:\s|$)", text, maxsplit=1)[0]


def cell(text: str) -> str:
    """Text for a Markdown table cell: one line, `|` escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def kind(prop: dict) -> str:
    """What a schema property holds, in a few words.

    >>> kind({"type": "array", "items": {"$ref": "#/$defs/tensor"}})
    'array of tensor'
    >>> kind({"const": 1}), kind({"enum": ["a", "b"]}), kind({"type": ["number", "null"]})
    ('1', '"a" or "b"', 'number or null')
    """
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "const" in prop:
        return str(prop["const"])
    if "enum" in prop:
        return " or ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in prop["enum"])
    for key in ("oneOf", "anyOf"):
        if key in prop:
            return " or ".join(kind(p) for p in prop[key])
    types = prop.get("type", "any")
    if isinstance(types, list):
        return " or ".join(types)
    if types == "array" and "items" in prop:
        return f"array of {kind(prop['items'])}"
    if types == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"object of {kind(prop['additionalProperties'])}"
    return types


def table() -> str:
    rows = ["| command | schema_version | holds |", "|---|---|---|"]
    for name in schemas.names():
        schema = schemas.load(name)
        rows.append(
            f"| `{name}` | {schemas.VERSIONS[name]} | {cell(first_sentence(schema['description']))} |"
        )
    return "\n".join(rows)


def keys() -> str:
    parts: list[str] = []
    for name in schemas.names():
        schema = schemas.load(name)
        required = set(schema.get("required", ()))
        parts += [
            f"### `{name}`",
            "",
            f"`{schema['title']}`, schema_version {schemas.VERSIONS[name]}: {schema['description']}",
            "",
            "| key | holds | description |",
            "|---|---|---|",
        ]
        for key, prop in schema["properties"].items():
            mark = "" if key in required else " (optional)"
            parts.append(
                f"| `{key}`{mark} | {cell(kind(prop))} | {cell(prop.get('description', ''))} |"
            )
        parts.append("")
    return "\n".join(parts).rstrip()


PARTS = {"table": table, "keys": keys}


def render(text: str) -> str:
    """``text`` with each generated part rewritten."""
    for part, make in PARTS.items():
        begin, end = f"<!-- begin generated: {part} -->", f"<!-- end generated: {part} -->"
        head, found, rest = text.partition(begin + "\n")
        assert found, f"{TARGET.name}: no '{begin}' line"
        _, found, tail = rest.partition(end)
        assert found, f"{TARGET.name}: no '{end}' line"
        text = f"{head}{begin}\n{make()}\n{end}{tail}"
    return text


def main(argv: list[str]) -> int:
    current = TARGET.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in argv:
        if current != wanted:
            print(f"{TARGET} is out of date: run python docs/gen_json.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
