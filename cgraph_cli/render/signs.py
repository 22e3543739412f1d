"""The one colour decision of every view: which sign a gradient is tinted by.

A number is tinted by its sign; an entry of a tensor drawn entry by entry by its own sign; a
summary standing for many entries by the sign they all share, and by none (neutral, marked
``±``) where they have both signs: one colour would say something false of some of them.
Rounding noise next to the tensor's largest entry counts as 0
(:func:`cgraph_cli.core.numfmt.noise_floor`). The DOT drawings (:mod:`cgraph_cli.render.dot`)
and the page's data (:mod:`cgraph_cli.app.walkthrough`) both decide here.

>>> import numpy as np
>>> sign(-2.0), sign(np.array([0.5, 2.0])), sign(np.array([0.5, -2.0])), sign(np.array([1, 1e-18]))
(-1, 1, 0, 1)
>>> [mark(x) for x in (np.array([0.5, 2.0]), np.array([-1.0, 0.0]), np.array([1.0, -1.0]))]
['+', '−', '±']
"""

from __future__ import annotations

import math

from ..core.numfmt import denoised, is_tensor, noise_floor

#: What each mark before a summary's shape says, for a legend.
MARKS = {"+": "all > 0", "−": "all < 0", "±": "both signs", "0": "all 0"}


def sign(x) -> int:
    """The sign ``x`` is tinted by: +1, -1, or 0 (untinted: zero, not finite, or a tensor of
    entries of both signs)."""
    if is_tensor(x):
        return _tensor_sign(x)
    x = float(x)
    return 0 if x == 0 or not math.isfinite(x) else (1 if x > 0 else -1)


def entry_sign(x: float, floor: float) -> int:
    """The sign of one entry drawn among others: ``x``'s, 0 where it is rounding noise (at
    most ``floor``, the tensor's :func:`~cgraph_cli.core.numfmt.noise_floor`)."""
    return sign(denoised(x, floor))


def mark(x) -> str:
    """What a summary of the tensor ``x`` says of its entries' signs: ``+`` (all > 0 but
    zeros), ``−`` (all < 0 but zeros), ``±`` (both signs), ``0`` (all 0, rounding noise
    included)."""
    import numpy as np

    flat = np.asarray(x, dtype=float).ravel()
    flat = flat[np.isfinite(flat)]
    floor = noise_floor(flat)
    positive = bool(flat.size) and float(flat.max()) > floor
    negative = bool(flat.size) and float(flat.min()) < -floor
    return "±" if positive and negative else "+" if positive else "−" if negative else "0"


def _tensor_sign(x) -> int:
    return {"+": 1, "−": -1}.get(mark(x), 0)
