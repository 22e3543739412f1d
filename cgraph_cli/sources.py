"""Where programs and bindings come from: text, files, standard input, JSON.

>>> parse_binding("x=-3")
('x', '-3')
"""

from __future__ import annotations

import json
import os
import re
from typing import BinaryIO

from .errors import BindingError, ParseError, Source, Span, UsageError

_NAME = re.compile(r"(?!\d)\w+\Z")
# Text that can only be meant as a path (no program is a bare `name.ext`).
_PATH_LIKE = re.compile(r"[\w./\\~-]+\.\w+\Z")


def decode(data: bytes, filename: str) -> str:
    """UTF-8 bytes to text; bad bytes are a :class:`ParseError` at their line and column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        good = data[: e.start].decode("utf-8")
        text = good + data[e.start :].decode("utf-8", errors="replace")
        raise ParseError(
            f"the program is not UTF-8 text: byte 0x{data[e.start]:02x} cannot be decoded",
            Span(len(good), len(good) + 1), Source(text, filename),
        ) from None
    return text.removeprefix("\ufeff")


def read_file(path: str) -> Source:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory, not a program file") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    return Source(decode(data, path), path)


def read_program(
    source: str | None, *, expr: str | None = None, file: str | None = None,
    stdin: BinaryIO | None = None,
) -> Source:
    """The program named by the CLI's SOURCE argument or its ``-e``/``-f`` options.

    SOURCE is read as a file when such a file exists, from standard input when it is ``-``,
    and as program text otherwise.
    """
    if expr is not None:
        return Source(expr, "<expr>")
    if file is not None:
        return read_stdin(stdin) if file == "-" else read_file(file)
    if source is None:
        raise UsageError("no program given", hints=["cgraph eval 'g = (x + y) * z' x=1 y=3 z=-3"])
    if source == "-":
        return read_stdin(stdin)
    if os.path.isfile(source):
        return read_file(source)
    if _PATH_LIKE.match(source):
        raise UsageError(
            f"no such file: {source}", hints=["to run it as program text, pass it with -e"]
        )
    return Source(source, "<expr>")


def read_stdin(stdin: BinaryIO | None) -> Source:
    if stdin is None:
        import sys

        stdin = sys.stdin.buffer
    return Source(decode(stdin.read(), "<stdin>"), "<stdin>")


def parse_binding(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` -> ``(NAME, VALUE)``; the value is checked when the program runs.
    ``NAME=@FILE`` reads the value from a NumPy ``.npy`` file (or a JSON file)."""
    name, eq, value = text.partition("=")
    name = name.strip()
    if not eq or not _NAME.match(name):
        raise UsageError(
            f"a binding is NAME=VALUE, got {text!r}", hints=["for example: x=1.5 or --bind x=1.5"]
        )
    value = value.strip()
    if value.startswith("@"):
        return name, load_value(value[1:])
    return name, value


def _numpy_load(path: str):
    from .arrays import np

    try:
        return np.load(path, allow_pickle=False)  # never unpickle: a file must not run code
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {path} as a NumPy file: {e}") from None


def load_value(path: str):
    """One value from a file: a ``.npy`` array, else JSON (a number or nested lists)."""
    return _numpy_load(path) if path.endswith(".npy") else _read_json(path)


def _read_json(path: str):
    src = read_file(path)
    try:
        return json.loads(src.text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path} is not valid JSON: {e.msg}", Span(e.pos, e.pos + 1), src) from None


def load_bindings(path: str) -> dict[str, object]:
    """Bindings from a file: a NumPy ``.npz`` archive of named arrays, or a JSON object of
    name -> number or nested lists of numbers."""
    if path.endswith(".npz"):
        with _numpy_load(path) as archive:
            return {name: archive[name] for name in archive.files}
    data = _read_json(path)
    if not isinstance(data, dict):
        raise UsageError(f"{path} must hold a JSON object of name -> number, like {{\"x\": 1}}")
    for name, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, list)):
            raise BindingError(
                f"in {path}: the value of '{name}' is not a number or an array: {value!r}"
            )
    return data
