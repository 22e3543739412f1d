"""The compiled module's names: each input's and node's variable (a valid identifier that
shadows nothing the module reads), and the helpers of :mod:`cgraph_cli.core.runtime` it copies
in, with those they call."""

from __future__ import annotations

import builtins
import inspect
import keyword
import math
import re

from ..core import runtime
from ..core.walks import fresh

_RESERVED = {
    *dir(builtins),
    *("math", "np", "DomainError", "INPUTS", "DEFAULTS", "forward", "grad", "out", "value"),
    *("grads", "inputs", "_finite", "_domain", "_arg", "_like", "_plain", "_expect", "_WHERE"),
    "_WHERE_TEXT",
    *(
        "SHAPES",
        "rows",
        "_acc",
        "_watch",
        "_rows",
        "_per_row",
        "_other_shapes",
        "_stack",
        "_kinks",
        "_total",
        "_joined",
        "_FLOAT",
        "_ARRAY",
    ),
    *("sys", "_exact", "_check", "_again", "_rerun", "_CHECKED", "_CHECKED_SOURCE"),
    *("_CHECKED_WHERE", "_exc"),
    *("_out", "_pool", "_POOLS", "_buffers", "_seen", "CHECKED", "_into", "_dest"),
    *(f"_math_{n}" for n in dir(math)),  # math.sin read once per call into _math_sin
}


def _with_callees(names: set[str]) -> list[str]:
    """``names`` and the helpers their source calls (np_max_pool2d calls np_windows), in the
    order of their names."""
    found, todo = set(names), list(names)
    while todo:
        source = inspect.getsource(getattr(runtime, todo.pop()))
        for callee in re.findall(r"\b(\w+)\(", source):
            if callee in _HELPERS and callee not in found:
                found.add(callee)
                todo.append(callee)
    return sorted(found)


def _helper_names() -> list[str]:
    return [n for n, f in vars(runtime).items() if inspect.isfunction(f)]


_HELPERS = set(_helper_names())


def _plain(name: str) -> bool:
    """Whether ``name`` can be a variable of the module as it is: an identifier Python keeps
    as written (NFKC would make ``ﬁ`` and ``fi`` one variable), not a keyword, and not a
    name the module's code reads (a builtin, ``np``, a helper such as ``relu``)."""
    import unicodedata

    return (
        name.isidentifier()
        and unicodedata.normalize("NFKC", name) == name
        and not keyword.iskeyword(name)
        and name not in _RESERVED
        and name not in _HELPERS
    )


def _identifier(name: str, taken: set[str]) -> str:
    """``name`` if it can be a variable as it is (:func:`_plain`), else a spelling of it in
    ASCII letters, digits and ``_`` (``lambda_``, ``v_x_bf0``): a valid identifier always;
    two names apart come from :func:`input_variables` and :func:`fresh`.

    >>> _identifier("lambda", set()), _identifier("relu", set()), _identifier("x\u0bf0", set())
    ('lambda_', 'relu_', 'v_x_bf0')
    """
    if _plain(name):
        return name
    if name.isidentifier() and name.isascii():
        return name + "_"
    return "v_" + "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else f"_{ord(c):x}" for c in name
    )


def input_variables(inputs) -> dict[str, str]:
    """Each input's variable in the module, no two alike: names that can be variables keep
    their spelling, the others get one of :func:`_identifier`'s, numbered past any taken.

    >>> input_variables(["lambda", "lambda_", "x"])
    {'lambda': 'lambda__1', 'lambda_': 'lambda_', 'x': 'x'}
    """
    taken = set(_RESERVED) | _HELPERS
    variables = {n: n for n in inputs if _plain(n)}
    taken |= set(variables.values())
    counts: dict[str, int] = {}
    for n in inputs:
        if n not in variables:
            variables[n] = fresh(_identifier(n, taken), taken, counts=counts)
    return {n: variables[n] for n in inputs}


def _fresh(name: str, taken: set[str], counts: dict[str, int]) -> str:
    """A variable for a node called ``name``: the name itself the first time, then
    ``name_1``, ``name_2``... (a reassigned name gets a new variable: single assignment)."""
    return fresh(_identifier(name, taken), taken, counts=counts)
