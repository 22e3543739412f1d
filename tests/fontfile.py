"""The characters a TrueType font compiled into a program can draw: its ``cmap`` (code point
-> glyph), keeping only glyphs with an outline (``glyf`` data), read straight from the bytes.

graphviz-pure draws PNG text with fonts compiled into its binary (Tinos, Arimo, Cousine); the
diagram tests ask which characters the one standing in for Arial draws.
"""

from __future__ import annotations

import re
import struct

_DIRECTORY = re.compile(rb"\x00\x01\x00\x00\x00[\x05-\x30]")  # sfnt version 1.0, 5-48 tables


def fonts(data: bytes) -> dict[str, dict[str, tuple[int, int]]]:
    """Every TrueType font in ``data`` by its full name (``Arimo Regular``): its tables as
    ``tag -> (offset in data, length)``."""
    out = {}
    for m in _DIRECTORY.finditer(data):
        start = m.start()
        (count,) = struct.unpack_from(">H", data, start + 4)
        if start + 12 + 16 * count > len(data):
            continue
        entries = [struct.unpack_from(">4sIII", data, start + 12 + 16 * k) for k in range(count)]
        if not all(re.fullmatch(rb"[A-Za-z0-9/ ]{4}", tag) for tag, *_ in entries):
            continue
        tables = {tag.decode(): (start + offset, length) for tag, _, offset, length in entries}
        if {"name", "cmap", "glyf", "loca", "head"} <= set(tables):
            out[_full_name(data, tables["name"][0])] = tables
    return out


def _full_name(data: bytes, at: int) -> str:
    _, count, strings = struct.unpack_from(">HHH", data, at)
    for k in range(count):
        platform, _, _, name_id, length, offset = struct.unpack_from(">6H", data, at + 6 + 12 * k)
        if platform == 3 and name_id == 4:  # Windows, UTF-16: the full name
            return data[at + strings + offset : at + strings + offset + length].decode("utf-16-be")
    return ""


def drawable(data: bytes, tables: dict[str, tuple[int, int]]) -> set[str]:
    """The characters whose glyph in this font has an outline (the space too)."""
    glyphs = _cmap(data, tables["cmap"][0])
    has_outline = _outlined(data, tables)
    return {chr(cp) for cp, g in glyphs.items() if has_outline(g) or chr(cp).isspace()}


def _cmap(data: bytes, at: int) -> dict[int, int]:
    _, count = struct.unpack_from(">HH", data, at)
    subtables = {}
    for k in range(count):
        platform, encoding, offset = struct.unpack_from(">HHI", data, at + 4 + 8 * k)
        (fmt,) = struct.unpack_from(">H", data, at + offset)
        subtables[fmt] = at + offset
    if 12 in subtables:  # all of Unicode, in groups of consecutive code points
        s = subtables[12]
        (groups,) = struct.unpack_from(">I", data, s + 12)
        out = {}
        for k in range(groups):
            first, last, glyph = struct.unpack_from(">III", data, s + 16 + 12 * k)
            out.update((cp, glyph + cp - first) for cp in range(first, last + 1))
        return out
    return _cmap4(data, subtables[4])


def _cmap4(data: bytes, s: int) -> dict[int, int]:
    (twice,) = struct.unpack_from(">H", data, s + 6)
    n = twice // 2
    ends = struct.unpack_from(f">{n}H", data, s + 14)
    starts = struct.unpack_from(f">{n}H", data, s + 16 + twice)
    deltas = struct.unpack_from(f">{n}h", data, s + 16 + 2 * twice)
    range_at = s + 16 + 3 * twice
    ranges = struct.unpack_from(f">{n}H", data, range_at)
    out = {}
    for k in range(n):
        for cp in range(starts[k], min(ends[k], 0xFFFE) + 1):
            if ranges[k] == 0:
                glyph = (cp + deltas[k]) & 0xFFFF
            else:
                (glyph,) = struct.unpack_from(
                    ">H", data, range_at + 2 * k + ranges[k] + 2 * (cp - starts[k])
                )
                glyph = (glyph + deltas[k]) & 0xFFFF if glyph else 0
            if glyph:
                out[cp] = glyph
    return out


def _outlined(data: bytes, tables):
    head, _ = tables["head"]
    (long_offsets,) = struct.unpack_from(">h", data, head + 50)
    loca, _ = tables["loca"]
    size, code = (4, ">I") if long_offsets else (2, ">H")
    scale = 1 if long_offsets else 2

    def has_outline(glyph: int) -> bool:
        (a,) = struct.unpack_from(code, data, loca + size * glyph)
        (b,) = struct.unpack_from(code, data, loca + size * (glyph + 1))
        return (b - a) * scale > 0

    return has_outline
