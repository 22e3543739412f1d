"""Where the result columns of a run over rows go when every chunk's table is kept in memory
(:func:`cgraph_cli.jobs.rows.run_rows` without ``write`` or ``reduce``): copied into columns
that hold many chunks each, so that the tables kept are slices of a few large arrays.

Each chunk's results are fresh arrays, and kept ones are never handed back to the allocator:
every chunk would take fresh pages from the kernel, a page fault every 4 KiB (half the time
of a grad of five operations a row). Copied into large arrays (which NumPy asks the kernel to
back with huge pages), the chunk's own arrays go back to the allocator and serve the next
chunk, still in the cache.

>>> import numpy as np
>>> store = Slabs(chunks=4)
>>> tables = [store.place({"y": np.full(2, float(k)), "error": (None, None)}) for k in range(3)]
>>> [t["y"].tolist() for t in tables], tables[1]["y"].base is tables[2]["y"].base
([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]], True)
"""

from __future__ import annotations

from typing import Any

from ..core.arrays import np

#: Chunks a slab holds: 16 of 65,536 rows make 8 MB columns (huge pages from 4 MB).
SLAB_CHUNKS = 16


class Slabs:
    """Result columns of kept tables copied chunk after chunk into slabs of ``chunks`` times
    a chunk's rows. The first chunk is kept as it is (a run of one chunk copies nothing); a
    column is copied only when it is a fresh array of floats, one per row (not a view: a
    value every row shares, an input column; not a list of cells). A chunk's part of the
    slabs may be asked for before it is made (:meth:`reserve`), for the engine to compute
    the columns there: those are not copied."""

    __slots__ = ("chunks", "size", "start", "used", "slabs", "first", "parts")

    def __init__(self, chunks: int = SLAB_CHUNKS) -> None:
        self.chunks = chunks
        self.size = self.start = self.used = 0
        self.slabs: dict[str, Any] = {}
        self.first = True
        self.parts: dict[str, Any] | None = None  # the next table's, once reserved

    def reserve(self, names, n: int) -> dict:
        """The parts of the slabs where the next table's columns ``names``, of ``n`` rows,
        go (none for the first table, which is kept as it is).

        >>> store = Slabs(chunks=4)
        >>> store.place({"y": np.zeros(2)}) and store.reserve(["y"], 2)["y"].shape
        (2,)
        """
        if self.first:
            return {}
        if self.used + n > self.size:  # a new slab for each column
            self.size, self.used, self.slabs = max(n * self.chunks, n), 0, {}
        self.start, self.used = self.used, self.used + n
        self.parts = {k: self._slab(k)[self.start : self.used] for k in names}
        return self.parts

    def _slab(self, k: str):
        slab = self.slabs.get(k)
        if slab is None:  # a column this slab has no room for: from here on
            slab = self.slabs[k] = np.empty(self.size)
        return slab

    def place(self, table: dict) -> dict:
        """``table`` with each of its fresh float columns replaced by a slice of a slab
        holding the same values (the table itself, changed)."""
        if self.first:
            self.first = False
            return table
        parts, self.parts = self.parts, None
        copied = [k for k, v in table.items() if _fresh(v)]  # (a part reserved is a view)
        if not copied:
            return table
        n = len(table[copied[0]])
        if parts is None or self.used - self.start != n:  # no part reserved for this table
            parts, self.parts = self.reserve((), n), None
        for k in copied:
            v = table[k]
            if len(v) != n:
                continue
            part = parts.get(k)
            if part is None:
                part = self._slab(k)[self.start : self.used]
            part[...] = v
            table[k] = part
        return table


def _fresh(v) -> bool:
    """Whether ``v`` is an array of floats, one per row, that owns its memory."""
    return v.__class__ is np.ndarray and v.ndim == 1 and v.base is None and v.dtype == np.float64
