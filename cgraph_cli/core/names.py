"""Readable names for every node, shared by diagrams, the terminal view and explanations.

Inputs keep their names and constants show their value. A node a statement named keeps that
name; a name assigned again gets a subscript (c, c₂, c₃), so each node's name is its own. Unnamed
intermediate results are t1, t2, ... (skipping any name the program uses).

>>> from cgraph_cli import parse
>>> node_names(parse("c = a * 2; c = c + 1; g = (c - a) * c"))
['a', '2', 'c', '1', 'c₂', 't1', 'g']
"""

from __future__ import annotations

from .ir import Graph
from .numfmt import format_number, is_tensor, nested, shape_text
from .ops import CONST, INPUT

_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def const_name(value) -> str:
    """A constant as it reads: ``2``, ``[1, -1]``; a large array by its shape."""
    if not is_tensor(value):
        return format_number(value)
    return nested(value) if value.size <= 6 else f"[{shape_text(value)} array]"


def node_names(graph: Graph) -> list[str]:
    taken = set(graph.inputs) | set(graph.names) | set(filter(None, graph.labels))
    seen: dict[str, int] = {}
    counter = 0
    names = []
    for i, op in enumerate(graph.ops):
        label = graph.labels[i]
        if op is CONST and label is None:
            names.append(const_name(graph.consts[i]))
        elif label is not None:
            count = seen.get(label, 0) + 1
            seen[label] = count
            names.append(label if count == 1 or op is INPUT else label + str(count).translate(_SUB))
        elif i == graph.output:
            names.append(graph.output_label)
        else:
            counter += 1
            while f"t{counter}" in taken:
                counter += 1
            names.append(f"t{counter}")
    return names


def program_names(graph: Graph) -> list[str]:
    """:func:`node_names` as a program can write them, for text a reader may paste back: a
    reassigned name's subscript becomes ``_N`` (``c₂``: ``c_2``; ``c_2_`` if the program has a
    ``c_2`` of its own).

    >>> from cgraph_cli import parse
    >>> program_names(parse("c = a * 2; c = c + 1; c_2 = 3; g = (c - a) * c_2"))
    ['a', '2', 'c', '1', 'c_2_', 'c_2', 't1', 'g']
    """
    names = node_names(graph)
    taken = set(graph.inputs) | set(graph.names) | set(filter(None, graph.labels)) | set(names)
    for i, label in enumerate(graph.labels):
        if label is None or names[i] == label:
            continue
        plain = f"{label}_{names[i][len(label) :].translate(_PLAIN)}"
        while plain in taken:
            plain += "_"
        taken.add(plain)
        names[i] = plain
    return names


_PLAIN = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
