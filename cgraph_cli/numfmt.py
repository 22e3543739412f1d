"""How numbers look to a user: the shortest text that reads back to the same float.

>>> format_number(-12.0), format_number(0.1), format_number(1e-20), format_number(2.5, 2)
('-12', '0.1', '1e-20', '2.5')
"""

from __future__ import annotations

import math


def format_number(x: float, precision: int | None = None) -> str:
    """``-12`` not ``-12.0``; ``0.1`` not ``0.1000000000000000055``. With ``precision``, at most
    that many significant digits (for diagrams and tables that must stay narrow)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0.0:
        return "0"  # -0.0 too: a sign on zero only confuses a reader
    if precision is not None:
        text = f"{x:.{precision}g}"
        if "e" in text:
            mantissa, exp = text.split("e")
            return f"{mantissa}e{int(exp)}"
        return text
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    text = repr(x)
    if "e" in text:
        mantissa, exp = text.split("e")
        return f"{mantissa}e{int(exp)}"
    return text
