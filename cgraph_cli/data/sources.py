"""Where programs and bindings come from: text, files, standard input, JSON, NumPy files.

Every file is read through :func:`read_limited`, which stops one byte past a documented limit
(:data:`TEXT_LIMIT` for programs, JSON and TOML; :data:`ARRAY_LIMIT` for ``.npy``/``.npz``), so
``/dev/zero`` or an endless pipe cannot eat the machine's memory. A file that cannot be used is
a :class:`UsageError` (exit 2) that names it and says why.

>>> parse_binding("x=-3")
('x', '-3')
"""

from __future__ import annotations

import os
import re
import stat
from typing import BinaryIO

from ..core.errors import ParseError, Source, Span, UsageError, line_col, named, visible
from .arrayfiles import (
    ARRAY_LIMIT,
    MAX_AXES,
    IntegerTooLarge,
    MiB,
    Unreadable,
    file_kind,
    json_int,
    size_text,
)
from .outputs import remember

TEXT_LIMIT = 16 * MiB  # the most bytes read from a program, a JSON file or a checks file
_CHUNK = MiB
_NAME = r"(?!\d)\w+\Z"  # a pattern: compiled (and cached) by re on first use
# Text that can only be meant as a path (no program is a bare `name.ext`).
_PATH_LIKE = r"[\w./\\~-]+\.\w+\Z"  # a pattern: compiled (and cached) by re on first use
_DATA_SUFFIXES = {".json": "a JSON file", ".toml": "a checks file"}


def read_limited(path: str, limit: int, what: str = "a file") -> bytes:
    """The bytes of the file at ``path``, reading at most ``limit`` + 1 of them: a larger file
    (or a device, or a pipe that does not end) is a :class:`UsageError`, as are a directory and
    a file that cannot be opened. ``what`` names the expected kind of file in messages.

    >>> read_limited(os.devnull, 100)
    b''
    >>> read_limited(__file__, 100, "a program file")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: ...sources.py is larger than 100 bytes (the limit for a program file)
    """
    if path == "-":
        return read_stream(standard_input(), limit, "standard input", what)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, after fstat
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory, not {what}") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {(e.strerror or str(e)).lower()}") from None
    with f:
        try:
            info = os.fstat(f.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise UsageError(f"{path} is a directory, not {what}")
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise _too_large(path, limit, what)
            remember(f.fileno())
            return read_stream(f, limit, path, what)
        except OSError as e:
            raise UsageError(f"cannot read {path}: {(e.strerror or str(e)).lower()}") from None


def read_stream(stream: BinaryIO, limit: int, name: str, what: str) -> bytes:
    """At most ``limit`` bytes from ``stream``, in chunks (nothing is allocated up front)."""
    chunks, total = [], 0
    while total <= limit:
        chunk = stream.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise _too_large(name, limit, what)
    return b"".join(chunks)


def _too_large(name: str, limit: int, what: str) -> UsageError:
    return UsageError(f"{name} is larger than {size_text(limit)} (the limit for {what})")


def decode(data: bytes, filename: str) -> str:
    """UTF-8 bytes to program text; bad bytes are a :class:`ParseError` at their line and
    column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        good = data[: e.start].decode("utf-8")
        text = good + data[e.start :].decode("utf-8", errors="replace")
        raise ParseError(
            f"the program is not UTF-8 text: byte 0x{data[e.start]:02x} cannot be decoded",
            Span(len(good), len(good) + 1),
            Source(text, filename),
        ) from None
    return text.removeprefix("\ufeff")


def decode_data(data: bytes, path: str) -> str:
    """UTF-8 bytes of a data file (JSON, TOML) to text; bad bytes are a :class:`UsageError`
    that names the file, the byte and its place.

    >>> decode_data("x = 'caf\\xe9'".encode("latin-1"), "c.toml")
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: c.toml is not UTF-8 text: byte 0xe9 at line 1, column 9
    help: save the file as UTF-8
    """
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        good = data[: e.start].decode("utf-8")
        line, col = line_col(good, len(good))
        raise UsageError(
            f"{path} is not UTF-8 text: byte 0x{data[e.start]:02x} at line {line}, column {col}",
            hints=["save the file as UTF-8"],
        ) from None


def read_file(path: str, what: str | None = None) -> Source:
    """A program file (the default), or a data file when ``what`` says so or the name ends in
    ``.json`` or ``.toml``: then bytes that are not UTF-8 are a usage error, not a program's."""
    what = what or _DATA_SUFFIXES.get(os.path.splitext(path)[1].lower(), "a program file")
    data = read_limited(path, TEXT_LIMIT, what)
    shown = visible(path)  # a name that is not UTF-8 shown (and written into outputs) as \xff
    if what == "a program file":
        return Source(decode(data, path), shown)
    return Source(decode_data(data, path), shown)


def read_program(
    source: str | None,
    *,
    expr: str | None = None,
    file: str | None = None,
    stdin: BinaryIO | None = None,
) -> Source:
    """The program named by the CLI's SOURCE argument or its ``-e``/``-f`` options.

    SOURCE is read as a file when such a file exists (a pipe such as bash's ``<(...)`` too),
    from standard input when it is ``-``, from the samples installed with cgraph when it is
    ``sample:NAME``, and as program text otherwise.
    """
    if expr is not None:
        return Source(expr, "<expr>")
    if file is not None:
        return read_stdin(stdin) if file == "-" else read_file(file, "a program file")
    if source is None:
        raise UsageError("no program given", hints=["cgraph eval 'g = (x + y) * z' x=1 y=3 z=-3"])
    if source == "-":
        return read_stdin(stdin)
    if source.startswith("sample:"):
        return read_file(str(sample_path(source[len("sample:") :])), "a program file")
    if os.path.isdir(source):  # a bare name too: a program of one name is rarer than a slip
        hints = [f"to run '{source}' as program text, pass it with -e"]
        raise UsageError(f"{source} is a directory, not a program file", hints=hints)
    if os.path.exists(source):
        return read_file(source, "a program file")
    if re.match(_PATH_LIKE, source):
        raise UsageError(
            f"no such file: {source}", hints=["to run it as program text, pass it with -e"]
        )
    return Source(source, "<expr>")


def standard_input() -> BinaryIO:
    """Standard input's bytes; a usage error when there is none (``cgraph eval - <&-``)."""
    import sys

    if sys.stdin is None or not hasattr(sys.stdin, "buffer"):
        raise UsageError("standard input is closed", hints=["give a file, or pipe into cgraph"])
    return sys.stdin.buffer


def read_stdin(stdin: BinaryIO | None) -> Source:
    if stdin is None:
        stdin = standard_input()
    data = read_stream(stdin, TEXT_LIMIT, "standard input", "a program")
    return Source(decode(data, "<stdin>"), "<stdin>")


# --- bindings -----------------------------------------------------------------------------------
def _split_binding(text: str) -> tuple[str, str]:
    name, eq, value = text.partition("=")
    name = name.strip()
    if not eq or not re.match(_NAME, name):
        raise UsageError(
            f"a binding is NAME=VALUE, got {_short(text)}",
            hints=["for example: x=1.5 or --bind x=1.5"],
        )
    return name, value.strip()


def parse_binding(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` -> ``(NAME, VALUE)``; the value is checked when the program runs.
    ``NAME=@FILE`` reads the value from a NumPy ``.npy`` file (or a JSON file)."""
    name, value = _split_binding(text)
    if value.startswith("@"):
        return name, load_value(value[1:], name)
    return name, value


def command_line_bindings(texts) -> dict[str, object]:
    """The ``NAME=VALUE`` bindings of a command line; a name bound twice is a usage error
    (found before any ``@FILE`` is read).

    >>> command_line_bindings(["x=1", "y=2"])
    {'x': '1', 'y': '2'}
    >>> command_line_bindings(["x=1", "x=2"])
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: 'x' is bound twice on the command line: x=1 and x=2
    help: give each input one value (a value on the command line may override a --bindings file)
    """
    seen: dict[str, str] = {}
    for text in texts:
        name, _ = _split_binding(text)
        if name in seen:
            raise UsageError(
                f"'{name}' is bound twice on the command line: {_short(seen[name], False)} and "
                f"{_short(text, False)}",
                hints=[
                    "give each input one value (a value on the command line may override a "
                    "--bindings file)"
                ],
            )
        seen[name] = text
    return dict(parse_binding(text) for text in texts)


def _short(text: str, quoted: bool = True) -> str:
    shown = text if len(text) <= 60 else text[:40] + f"... ({len(text):,} characters)"
    return repr(shown) if quoted else shown


def load_value(path: str, name: str = "NAME") -> object:
    """One value from a file: a NumPy ``.npy`` array, else JSON (a number or nested lists).
    What the file is comes from its first bytes, not its name."""
    if not path:
        raise UsageError(
            f"{name}=@ needs a file name after @", hints=[f"for example: {name}=@w.npy"]
        )
    numpy_name = path.endswith((".npy", ".npz"))
    data = read_limited(
        path,
        ARRAY_LIMIT if numpy_name else TEXT_LIMIT,
        "a NumPy file" if numpy_name else "a JSON file",
    )
    kind = file_kind(data)
    if kind == "npz":
        raise UsageError(
            f"cannot read {path}: it is an .npz archive of named arrays, not one array",
            hints=[f"bind its arrays by name with --bindings {path}"],
        )
    if kind == "npy" or path.endswith(".npy"):
        return _checked(path, name, _npy(data, path))
    if path.endswith(".npz"):
        raise _not_npz(data, path)
    value = _json(data, path)
    _check_json_value(value, path, "it")
    return _checked(path, name, value)


def load_bindings(path: str) -> dict[str, object]:
    """Bindings from a file: a NumPy ``.npz`` archive of named arrays, or a JSON object of
    name -> number or nested lists of numbers. What the file is comes from its first bytes."""
    numpy_name = path.endswith((".npy", ".npz"))
    data = read_limited(
        path,
        ARRAY_LIMIT if numpy_name else TEXT_LIMIT,
        "an .npz file" if numpy_name else "a bindings file",
    )
    kind = file_kind(data)
    if kind == "npy":
        raise UsageError(
            f"cannot read {path}: it is a single NumPy array (.npy), not an .npz archive of "
            "named arrays",
            hints=[f"bind it to one input: NAME=@{path}"],
        )
    if kind == "npz":
        from .arrayfiles import read_npz

        try:
            arrays = read_npz(data)
        except Unreadable as e:
            raise UsageError(f"cannot read {path}: {e}") from None
        return {
            name: _checked(path, name, array)
            for name, array in arrays.items()
            if not name.startswith("__train__/")  # cgraph train's optimizer state (--resume)
        }
    if path.endswith((".npz", ".npy")):
        raise _not_npz(data, path)
    bindings = _json(data, path, object_pairs_hook=_no_repeated_names(path))
    if not isinstance(bindings, dict):
        raise UsageError(f'{path} must hold a JSON object of name -> number, like {{"x": 1}}')
    for name, value in bindings.items():
        _check_json_value(value, path, f"the value of '{named(name)}'")
    return {name: _checked(path, name, value) for name, value in bindings.items()}


def _checked(path: str, name: str, value):
    """A file's value as a finite float or float64 array; what is wrong with it is wrong with
    the file (exit 2), where the same value typed on the command line is exit 4."""
    from ..core.errors import BindingError
    from .bindings import check_value

    try:
        return check_value(name, value)
    except BindingError as e:
        raise UsageError(f"cannot read {path}: {e.message}", hints=e.hints) from None


def _npy(data: bytes, path: str):
    from .arrayfiles import read_npy

    try:
        return read_npy(data)
    except Unreadable as e:
        raise UsageError(f"cannot read {path}: {e}") from None


def _not_npz(data: bytes, path: str) -> UsageError:
    why = "it is empty" if not data else "it is not an .npz archive (numpy.savez writes a zip)"
    return UsageError(f"cannot read {path}: {why}")


def _json(data: bytes, path: str, **hooks):
    """A JSON file's value; integers are read as floats (see :func:`arrayfiles.json_int`)."""
    text = decode_data(data, path)
    if not text.strip():
        raise UsageError(f"cannot read {path}: it is empty")
    import json  # here: a program of numbers given no JSON never needs it

    try:
        return json.loads(text, parse_int=json_int, **hooks)
    except IntegerTooLarge as e:
        raise UsageError(f"cannot read {path}: it {e}") from None
    except json.JSONDecodeError as e:
        raise UsageError(
            f"{path} is not valid JSON: {e.msg}", Span(e.pos, e.pos + 1), Source(text, path)
        ) from None
    except RecursionError:
        raise UsageError(
            f"cannot read {path}: it is nested more than {MAX_AXES} levels deep; "
            f"arrays have at most {MAX_AXES} axes"
        ) from None


def _no_repeated_names(path: str):
    def pairs_to_dict(pairs):
        out = dict(pairs)
        if len(out) < len(pairs):  # JSON itself lets the last of two equal names win silently
            seen: set[str] = set()
            for name, _ in pairs:
                if name in seen:
                    raise UsageError(f"cannot read {path}: it binds '{named(name)}' twice")
                seen.add(name)
        return out

    return pairs_to_dict


def _check_json_value(value, path: str, subject: str) -> None:
    """A JSON value read from a file must be a number or a list (whose elements
    :func:`_checked` checks)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, list)):
        if isinstance(value, str):
            shown = f"the text {_short(value)}"
        elif isinstance(value, dict):
            shown = "a JSON object"
        else:
            shown = {True: "true", False: "false", None: "null"}[value]
        raise UsageError(
            f"cannot read {path}: {subject} is not a number or an array: it is {shown}"
        )


def samples_folder():
    """The sample programs: inside the installed package, or ``samples/`` of a checkout."""
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent
    packaged = package / "samples"
    return packaged if packaged.is_dir() else package.parent / "samples"


def sample_names() -> list[str]:
    """The names ``sample:NAME`` accepts, sorted.

    >>> "seed" in sample_names()
    True
    """
    return sorted(p.stem for p in samples_folder().glob("*.cg"))


def sample_data(name: str) -> str:
    """The file of sample data ``name`` (``xor.csv``, ``mlp.onnx``), or a usage error listing
    them."""
    folder = samples_folder() / "data"
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix != ".py")
    if name not in names:
        raise UsageError(
            f"no sample data file named '{name}'", hints=["sample data: " + ", ".join(names)]
        )
    return str(folder / name)


def sample_path(name: str):
    """The file of sample ``name`` (``seed`` or ``seed.cg``), or a usage error listing them."""
    import difflib

    name = name.removesuffix(".cg")
    names = sample_names()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hints = [f"did you mean 'sample:{close[0]}'?"] if close else []
        hints.append("samples: " + ", ".join(names) + "  (cgraph samples lists them)")
        raise UsageError(f"no sample named '{name}'", hints=hints)
    return samples_folder() / f"{name}.cg"
