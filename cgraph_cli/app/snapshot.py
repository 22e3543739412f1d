"""The copy of a call's bindings that a compiled result keeps: its per-node values are worked
out by the interpreter only when first asked for, from the bindings as they were at the call
(the caller may change its arrays in between).

A large array is copied into the buffer of an earlier call's copy that nothing holds any more
(its result, and every array it handed out, gone: their reference counts say so), when there
is one of its shape: a fresh buffer of a megabyte or more comes from the kernel as new pages,
and their faults cost more than the copy (an MLP of width 1,024 through ``cg.grad``: 15.8 ms
a call with fresh copies, 11.2 ms with reused ones; NumPy by hand 10.7 ms).

>>> import numpy as np
>>> pool = []
>>> first = snapshot({"W": np.ones((512, 512)), "s": 2.0}, pool)
>>> buffer = id(first["W"])
>>> del first  # the result gone: its copy is spare
>>> again = snapshot({"W": np.zeros((512, 512)), "s": 3.0}, pool)
>>> id(again["W"]) == buffer, float(again["W"].sum()), again["s"]
(True, 0.0, 3.0)
>>> held = again["W"]  # an array of it held (a result's values): it is not spare
>>> del again
>>> snapshot({"W": np.ones((512, 512))}, pool)["W"] is held
False
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from ..core.arrays import np

#: An array of this many bytes or more is copied into a spare buffer when there is one.
REUSED = 1 << 18
#: Copies a graph keeps for reuse (a result held while the next call runs: two take turns).
POOLED = 2


def snapshot(bindings: Mapping[str, object] | None, pool: list | None = None) -> dict:
    """``bindings`` with each array (or list) copied; ``pool``: the earlier copies of the
    graph's calls, whose large buffers are taken again where nothing else holds them (the
    new copy joins it)."""
    kept: dict[str, object] = {}
    if not bindings:
        return kept
    ndarray: Any = None
    spare = None if not pool else _spare(pool)
    large = False
    v: Any
    for name, v in bindings.items():
        if v.__class__ is float:  # (NumPy not imported for numbers)
            kept[name] = v
            continue
        if ndarray is None:
            ndarray = np.ndarray
        if v.__class__ is not ndarray:
            kept[name] = _copied(v)
            continue
        if v.nbytes >= REUSED:
            large = True
            old = None if spare is None else spare.get(name)
            if old is not None and _same_layout(old, v):
                old[...] = v
                kept[name] = old
                continue
        kept[name] = v.copy("K")  # (its memory's order: the same sums, to the bit)
    if pool is not None and large:
        pool.append(kept)
        del pool[:-POOLED]
    return kept


def _spare(pool: list) -> dict | None:
    """A copy in ``pool`` that nothing but the pool holds, nor any of its arrays (taken out
    of the pool), or None."""
    for k in range(len(pool)):  # (not enumerate: its tuple would hold one more reference)
        copy = pool[k]  # references: the pool's, this variable's (and getrefcount's own)
        if sys.getrefcount(copy) > _HELD_ONCE:
            continue
        # an array: the copy's, the loop's; more: a result's values, a view of it, a caller's
        if all(v.__class__ is float or sys.getrefcount(v) <= _HELD_ONCE for v in copy.values()):
            del pool[k]
            return copy
    return None


def _held_once() -> int:
    """What sys.getrefcount says of an object one container holds, read through a loop's
    variable as :func:`_spare` reads them (the count is the interpreter's to make)."""
    held = [object()]
    for k in range(1):
        item = held[k]
        return sys.getrefcount(item)
    raise AssertionError


_HELD_ONCE = _held_once()


def _same_layout(old, new) -> bool:
    return (
        old.shape == new.shape
        and old.strides == new.strides
        and old.dtype == new.dtype
        and old.flags.writeable
    )


def _copied(value: object) -> object:
    """A binding that is not a float or a plain array, as it is now."""
    import copy

    if isinstance(value, np.ndarray):
        return value.copy("K")
    return np.array(value) if hasattr(value, "__array__") else copy.deepcopy(value)
