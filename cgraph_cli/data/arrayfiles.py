"""NumPy ``.npy`` and ``.npz`` files read without trusting them, and what a binding may hold.

A file is checked before anything is allocated for it: its header must describe an array of
real numbers (no pickled objects, which could run code; no complex numbers, dates, text), and
exactly as many bytes as the file holds; an archive's members must unpack to no more than
:data:`ARRAY_LIMIT` bytes in all. Problems are :class:`Unreadable`, with the reason in words.

>>> dtype_problem("complex128")
'holds complex numbers (complex128); cgraph computes with real numbers'
>>> list_problem([[1, 2], [3, True]])
'holds true/false values (booleans); cgraph computes with real numbers'
"""

from __future__ import annotations

import io
import math
from itertools import chain
from math import prod

from ..core.arrays import np

MiB = 1 << 20
ARRAY_LIMIT = 256 * MiB  # the most bytes read from a .npy/.npz file, or unpacked from an .npz
MAX_AXES = 64  # NumPy's limit on an array's dimensions; JSON nested deeper is refused
MAX_MEMBERS = 10_000  # arrays in one .npz; its directory is parsed before any check can run
NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first member, or an empty zip

_REAL = "; cgraph computes with real numbers"
_KINDS = {  # NumPy's dtype.kind -> what the user would call such elements
    "b": "true/false values",
    "c": "complex numbers",
    "U": "text",
    "S": "bytes",
    "M": "dates",
    "m": "time spans",
    "V": "records",
    "O": "Python objects",
}
_JSON_KINDS = {
    bool: "true/false values (booleans)",
    str: "text (strings)",
    type(None): "null",
    dict: "JSON objects",
    complex: "complex numbers",
}


class Unreadable(Exception):
    """Why a file cannot be used, in words that follow ``cannot read FILE: ``."""


class IntegerTooLarge(ValueError):
    """A JSON integer past float64's range (the message follows ``the value of 'W' ``)."""


def json_int(digits: str) -> float:
    """JSON's integers, read as floats (``json.loads(text, parse_int=json_int)``): Python
    refuses to make an int of more than 4,300 digits, and cgraph computes in float64 anyway.

    >>> json_int("12"), json_int("-3")
    (12.0, -3.0)
    >>> json_int("9" * 5000)
    Traceback (most recent call last):
    cgraph_cli.data.arrayfiles.IntegerTooLarge: holds an integer of 5,000 digits, too large for a float64
    """
    number = float(digits)
    if number in (math.inf, -math.inf):
        raise IntegerTooLarge(
            f"holds an integer of {len(digits.lstrip('-')):,} digits, too large for a float64"
        )
    return number


def size_text(n: int) -> str:
    """A byte count as people say it.

    >>> size_text(256 * MiB), size_text(8 * 10**12), size_text(100)
    ('256 MiB', '7.3 TiB', '100 bytes')
    """
    if n < 1024:
        return f"{n} bytes"
    size = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        size /= 1024
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if size == int(size) else f"{size:.1f} {unit}"
    raise AssertionError  # pragma: no cover


def dtype_problem(dtype, in_file: bool = False) -> str | None:
    """What is wrong with elements of this dtype for cgraph, or ``None`` for real numbers
    (integers and floats of any precision, which become float64). In a file, Python objects
    are pickles, which are never loaded."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iuf" and not dtype.fields:
        return None
    if dtype.hasobject and in_file:
        return (
            f"holds pickled Python objects ({dtype}), which cgraph never loads: unpickling "
            "can run code"
        )
    return f"holds {_KINDS.get(dtype.kind, 'values')} ({dtype}){_REAL}"


def list_problem(value: list | tuple) -> str | None:
    """What is wrong with nested lists (JSON, or from Python) as an array, or ``None``: an
    element that is not a number, or nesting deeper than :data:`MAX_AXES`. Level by level, at
    C speed (``set(map(type, chain(...)))``): a file of a million numbers costs little."""
    level, depth = [value], 1
    while level:
        if depth > MAX_AXES:
            return (
                f"is nested more than {MAX_AXES} levels deep; arrays have at most {MAX_AXES} axes"
            )
        kinds = set(map(type, chain.from_iterable(level)))
        nested = False
        for kind in kinds:
            if kind is list or kind is tuple:
                nested = True
            elif kind is not float and kind is not int:
                problem = _element_problem(kind)
                if problem:
                    return problem
        if not nested:
            return None
        items = chain.from_iterable(level)
        level = (
            list(items)
            if len(kinds) == 1
            else [v for v in items if type(v) is list or type(v) is tuple]
        )
        depth += 1
    return None


def _element_problem(kind: type) -> str | None:
    if kind in _JSON_KINDS:
        return f"holds {_JSON_KINDS[kind]}{_REAL}"
    if issubclass(kind, np.generic):  # NumPy scalars inside a Python list
        return dtype_problem(np.dtype(kind))
    if issubclass(kind, (int, float)) and not issubclass(kind, bool):
        return None
    return f"holds {kind.__name__} objects{_REAL}"


def file_kind(data: bytes) -> str | None:
    """``"npy"``, ``"npz"`` or ``None``, from the file's first bytes (not its name).

    >>> file_kind(b"\\x93NUMPY\\x01\\x00"), file_kind(b"PK\\x03\\x04..."), file_kind(b"[1, 2]")
    ('npy', 'npz', None)
    """
    if data.startswith(NPY_MAGIC):
        return "npy"
    if data.startswith(ZIP_MAGICS):
        return "npz"
    return None


def read_npy(data: bytes, subject: str = "it"):
    """The array a ``.npy`` file's bytes hold. The header is checked against the data that
    follows it before the array is made (a view of ``data``, no copy). ``subject`` begins the
    reasons of :class:`Unreadable`."""
    from numpy.lib import format as npy_format

    if not data:
        raise Unreadable(f"{subject} is empty")
    if not data.startswith(NPY_MAGIC):
        raise Unreadable(f"{subject} is not a NumPy .npy file (those start with \\x93NUMPY)")
    fp = io.BytesIO(data)
    try:
        version = npy_format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = npy_format.read_array_header_2_0(fp)
        else:
            raise Unreadable(
                f"{subject} uses .npy format version {version[0]}.{version[1]}, which "
                "cgraph does not read (numpy.save writes 1.0)"
            )
    except Unreadable:
        raise
    except Exception:  # NumPy's header parser raises several kinds (tokenize, ast, ValueError)
        raise Unreadable(f"{subject} has a damaged NumPy header") from None
    problem = dtype_problem(dtype, in_file=True)
    if problem:
        raise Unreadable(f"{subject} {problem}")
    if len(shape) > MAX_AXES:
        raise Unreadable(f"{subject} has {len(shape)} axes; arrays have at most {MAX_AXES}")
    if any(n < 0 for n in shape):
        raise Unreadable(f"{subject} has a damaged NumPy header: a negative size in {shape}")
    count = prod(shape)
    need, have = count * dtype.itemsize, len(data) - fp.tell()
    what = f"a {shape} array of {dtype}"
    if need > have:
        raise Unreadable(
            f"{subject} is truncated: its header promises {size_text(need)} of data "
            f"({what}), but the file holds {size_text(have)}"
        )
    if need < have:
        raise Unreadable(
            f"{subject} has {size_text(have - need)} after the data its header "
            f"describes ({what}); it is damaged, or not one array"
        )
    array = np.frombuffer(data, dtype=dtype, count=count, offset=fp.tell())
    return array.reshape(shape, order="F" if fortran else "C")


def read_npz(data: bytes) -> dict[str, object]:
    """The named arrays of an ``.npz`` archive's bytes (``numpy.savez`` writes ``W.npy`` for
    the array ``W``). Sizes are checked from the zip's directory before anything is unpacked."""
    import zipfile
    import zlib

    if not data:
        raise Unreadable("it is empty")
    _check_directory(data)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            total = sum(info.file_size for info in infos)
            if total > ARRAY_LIMIT:
                raise Unreadable(
                    f"its arrays would unpack to {size_text(total)}, more than the "
                    f"{size_text(ARRAY_LIMIT)} cgraph reads"
                )
            arrays: dict[str, object] = {}
            for info in infos:
                name = info.filename.removesuffix(".npy")
                if name == info.filename:
                    raise Unreadable(f"its member '{info.filename}' is not a NumPy array (.npy)")
                if name in arrays:
                    raise Unreadable(f"it holds two arrays named '{name}'")
                with archive.open(info) as member:
                    raw = member.read(info.file_size + 1)
                arrays[name] = read_npy(raw, f"its array '{name}'")
            return arrays
    except zipfile.BadZipFile as e:
        detail = "a member is damaged" if "CRC" in str(e) else "truncated or damaged"
        raise Unreadable(f"it is not a readable .npz (zip) archive: {detail}") from None
    except (zlib.error, EOFError, OSError, ValueError):
        raise Unreadable("it is not a readable .npz (zip) archive: a member is damaged") from None
    except (RuntimeError, NotImplementedError) as e:  # encrypted, or an unknown compression
        raise Unreadable(f"it is an archive cgraph cannot unpack: {e}") from None


def _check_directory(data: bytes) -> None:
    """Refuse archives whose directory lists more than :data:`MAX_MEMBERS` members:
    ``zipfile`` would spend seconds and gigabytes parsing millions of entries first."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - (1 << 16) - 22))
    if end < 0 or len(data) < end + 22:
        return  # zipfile will say the archive is damaged
    entries = int.from_bytes(data[end + 10 : end + 12], "little")
    directory = int.from_bytes(data[end + 12 : end + 16], "little")
    record = end - 20 - 56  # where zipfile looks for a ZIP64 record, which it then believes
    if (
        record >= 0
        and data.startswith(b"PK\x06\x07", end - 20)
        and data.startswith(b"PK\x06\x06", record)
    ):
        entries = int.from_bytes(data[record + 32 : record + 40], "little")
        directory = int.from_bytes(data[record + 40 : record + 48], "little")
    if entries > MAX_MEMBERS or directory > MAX_MEMBERS * 1024:
        raise Unreadable(
            f"it lists more than {MAX_MEMBERS:,} members; cgraph reads archives "
            "of up to that many arrays"
        )
