"""The bindings file of a program the editor has open, which the server's values use instead
of the ``input`` defaults: the one a first-line comment names (``# bindings: other.json``,
relative to the program's folder), else ``NAME.bindings.json`` or ``NAME.bindings.npz``
beside ``NAME.cg``. Nothing else is read; it is read as ``--bindings FILE`` reads it.

>>> named("# bindings: runs/one.json\\ny = x")
('runs/one.json', Span(start=12, end=25))
>>> named("y = x  # bindings: one.json") is None
True
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from ...core.errors import CgraphError, Span, UsageError

_NAMED = re.compile(r"#[ \t]*bindings:[ \t]*(\S(?:[^\r\n]*\S)?)")
KINDS = (".json", ".npz")


class BindingsFile(NamedTuple):
    """Where a program's bindings come from, and where a problem with them is shown: the
    first-line comment that names the file, else the program's start."""

    path: Path
    span: Span


def named(text: str) -> tuple[str, Span] | None:
    """The file a first-line ``# bindings: FILE`` comment names, and where its name is."""
    found = _NAMED.match(text)
    return (found[1], Span(found.start(1), found.end(1))) if found else None


def bindings_file(text: str, program: str | None) -> BindingsFile | None:
    """The bindings file of ``text`` saved at ``program`` (a path; None for a document never
    saved): named in the first line (whether it exists or not: reading it says what is wrong),
    else one beside the program that exists, else None."""
    comment = named(text)
    if program is None:
        return None
    where = Path(program)
    if comment is not None:
        return BindingsFile(where.parent / comment[0], comment[1])
    for kind in KINDS:
        beside = where.with_name(f"{where.stem}.bindings{kind}")
        if beside.is_file():
            return BindingsFile(beside, Span(0, 0))
    return None


def load(found: BindingsFile) -> dict[str, object]:
    """The bindings in the file, as ``--bindings`` reads them; a :class:`CgraphError` (with
    the comment's place) when it cannot be read or is not a .json or .npz file."""
    from ...data.sources import load_bindings

    name = found.path.name
    if not name.endswith(KINDS):
        raise UsageError(
            f"cannot use {name} as bindings: a bindings file is .json or .npz",
            span=found.span,
        )
    if not found.path.is_file():
        raise UsageError(f"cannot read {found.path}: no such file", span=found.span)
    try:
        return load_bindings(str(found.path))
    except CgraphError as error:
        error.span = error.span or found.span
        raise
