"""What the importers share: the record of an imported program (:class:`Imported`), the
refusal of what cgraph cannot import (:class:`NotSupported`), and the pieces of a program's
text: readable unique names (:class:`Namer`), constants (:func:`literal`), indexing
(:func:`index_text`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import ParseError


@dataclass
class Imported:
    """An imported model: the program's text, its weights by their names in the program, its
    data inputs and outputs, each statement's module (``layers.0/attn``, or ""), and the
    program's name of each of the model's names (``fc1.weight`` -> ``fc1_weight``)."""

    text: str
    weights: dict[str, np.ndarray]
    inputs: list[str]
    outputs: list[str]
    modules: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # the model's name -> the program's


class NotSupported(ParseError):
    """An operator (or a use of one) cgraph cannot import: exit 3."""


#: Names a program cannot give a value: the language's words and its functions.
def reserved() -> frozenset[str]:
    from ..core.ops import OPS
    from ..parse import tables

    return frozenset(
        {*tables.KEYWORDS.get("NAME", {}), *OPS, "len", "shape", "max", "min", "e", "pi"}
    )


class Namer:
    """Readable, unique cgraph names for ONNX's: ``/layers.0/fc/Gemm_output_0`` ->
    ``layers_0_fc_gemm``."""

    def __init__(self) -> None:
        self.taken: set[str] = set(reserved())
        self.names: dict[str, str] = {}

    def __call__(self, onnx_name: str, hint: str = "t") -> str:
        if onnx_name in self.names:
            return self.names[onnx_name]
        text = re.sub(r"_?output_\d+$", "", onnx_name)
        text = re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_")  # ASCII: no look-alikes
        if not text:
            text = hint
        parts = text.split("_")
        if len(parts) > 1:  # the operator's name in lower case: Gemm_1 -> gemm_1
            k = len(parts) - 2 if parts[-1].isdigit() and len(parts) > 2 else len(parts) - 1
            parts[k] = parts[k].lower()
            text = "_".join(parts)
        if text[0].isdigit():
            text = f"v{text}"
        name = self.fresh(text)
        self.names[onnx_name] = name
        return name

    def fresh(self, text: str) -> str:
        """A name no other value has: ``text``, else ``text_2``, ``text_3``..."""
        name, k = text, 2
        while name in self.taken:
            name = f"{text}_{k}"
            k += 1
        self.taken.add(name)
        return name


def literal(value: Any) -> str:
    """A constant in the program's text: a number, or a nested list."""
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == 0:
        text = repr(float(value))
        text = text[:-2] if text.endswith(".0") else text
        return f"({text})" if text.startswith("-") else text
    return (
        repr(np.vectorize(lambda x: float(x))(value).tolist())
        .replace(".0,", ",")
        .replace(".0]", "]")
    )


#: Constants written into the program's text at most this many elements large; larger ones
#: are kept with the weights.
INLINE = 16


def index_text(x: str, parts: list) -> str:
    """``x[...]`` for basic indexing: per axis an int, or (start, stop, step) with None for
    an end left open; trailing whole axes left out."""
    while parts and parts[-1] == (None, None, 1):
        parts = parts[:-1]
    if not parts:
        return x
    return f"{x}[{', '.join(part(p) for p in parts)}]"


def part(p) -> str:
    if isinstance(p, int):
        return str(p)
    start, stop, step = p
    text = f"{'' if start is None else start}:{'' if stop is None else stop}"
    return text + (f":{step}" if step != 1 else "")
