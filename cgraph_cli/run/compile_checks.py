"""The compiled module's checks: the checked copy of ``forward`` and ``grad`` that stops at the
first value that is not finite and names its node, the lines that find a result that is not
finite, the guard that turns an error into a ``DomainError`` naming the program's line, and the
helpers those call (copied into the module as text)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .compile_emit import Shape, _Emitter


def checked_function(
    em: _Emitter, fn: str, again: list[str], body: list[str], returned: str = ""
) -> list[str]:
    """``fn`` again, from a dict of its inputs, stopping at the first value that is not
    finite, naming its node: what ``_finite`` runs when a result is not finite, to say
    where, as the interpreter does (``grad: a result is not finite`` said only that).
    ``returned``: what it gives back when it runs to the end (``grad``'s value and
    gradients: where the checked copy, as the interpreter, passes nothing back through an
    adjoint of 0, it answers where the fast one met a partial that is not finite).
    ``body`` checked already where the emitter wrote its checked lines (``em.checking``:
    see :meth:`~.compile_emit._Emitter.body`), else a check follows each assignment."""
    lines = []
    for line in body:
        lines.append(line)
        if em.checking is True:
            continue
        head, sep, where = line.partition("  # line ")
        var, _, rest = head[4:].partition(" ")
        if sep and rest[:2] in ("= ", "+=") and var.isidentifier():
            lines.append(f"    _check({var}){sep}{where}")  # a call: no branch
    return [
        f"def _{fn}_checked(inputs):",
        *again,
        *em.bindings(body),
        *_guarded(lines, em.target == "numpy", [f"    return {returned}"] if returned else []),
        "",
        "",
    ]


def finite_lines(
    em: _Emitter, fn: str, given: str, results: Mapping[str, tuple[str, Shape]]
) -> list[str]:
    """The lines that raise DomainError for a result that is not finite: ``_finite(given,
    fn)``, which finds it. With every result's shape known, NumPy code first sums them
    as written here, without ``_finite``'s loop, and calls it only if the sum is not
    finite (one of them is not, or the sum overflowed). ``results``: by name, how
    ``given`` holds each value and its shape (None: unknown)."""
    deferred = em.deferred_by.get(fn, [])  # watched values, summed here (see _Emitter.defer)
    more = "".join(f", ' {v}': {v}" for v, _ in deferred)
    call = f"_finite({{**{given}{more}}}, {fn})" if deferred else f"_finite({given}, {fn})"
    if fn == "grad":  # the checked copy's answer, where it runs to the end
        call = f"return {call} or (value, grads)"
    if em.target != "numpy" or any(shape is None for _, shape in results.values()):
        return [f"    {call}"]
    assert em.known is not None
    if any(em.known.get(n) is None for n in em.variables):
        return [f"    {call}"]
    # An input that is not finite is found as the interpreter finds any value: an op
    # that may hide it is watched, any other passes it on to a result or a statement
    # the code checks. Those that no op reads join the sum; _finite then names them.
    there = {expr for expr, _ in results.values()}  # (forward's values hold the inputs)
    summed = {
        **results,
        **{
            f" {n}": (v, em.known[n])
            for n, v in em.variables.items()
            if n in em.unread and v not in there
        },
        **{f" {v}": (v, shape) for v, shape in deferred},
    }
    # An array's sum of squares (BLAS's dot: a quarter faster than np.add.reduce) is not
    # finite where one of its values is not, or where one is over 1e154 (then _finite looks
    # at each value: slower, as right).
    numbers, small, large = [], [], []
    for key, (expr, shape) in summed.items():
        v = expr if expr.isidentifier() else f"{'out' if fn == 'forward' else 'grads'}[{key!r}]"
        if not shape:
            numbers.append(v)
        elif math.prod(shape) > _JOINED:  # summed alone: joining would copy much
            large.append(f"np.vdot({v}, {v})")
        else:
            small.append(f"{v}.ravel()" if len(shape) > 1 else v)
    if len(small) > 1:
        large.append(f"np.vdot(_joined := np.concatenate(({', '.join(small)})), _joined)")
    elif small:
        large.append(f"np.vdot({small[0]}, {small[0]})")
    if not numbers and not large:  # nothing returned
        return []
    return [
        f"    _total = {' + '.join(numbers + large)}",
        "    if _total - _total != 0.0:  # a result is not finite, or their sum overflowed",
        f"        {call}",
    ]


def _checked_source(checked: list[str], grad_body) -> list[str]:
    """The checked functions as a string the module compiles only when a result is not
    finite (compiled with the module, they doubled its compile time); none in rows mode."""
    if not checked:
        return []
    names = ["'forward': _forward_checked"]
    names += [] if grad_body is None else ["'grad': _grad_checked"]
    text = [*checked, f"_CHECKED.update({{{', '.join(names)}}})", ""]
    return [
        "_CHECKED: dict = {}",
        "_CHECKED_WHERE: dict = {}",
        f"_CHECKED_SOURCE = {chr(10).join(text)!r}",
    ]


def _guarded(body: list[str], numpy: bool, after: list[str], again: str = "") -> list[str]:
    """``body`` in a try that turns an error into a DomainError naming the program's line,
    then the lines ``after`` it; with NumPy, all inside ``errstate``: a non-finite result is
    found at the end instead (by sums that may overflow: no warning). ``again``: the function
    whose checked copy runs first on an error (its watched values were not stopped at: one
    that is not finite, made before the error, is the one to name); for ``grad``, what that
    copy gives back when it runs to the end is the answer (see :func:`checked_function`)."""
    pad = "    " if numpy else ""
    body = body or ["    pass"]  # a program with no operation
    if again == "grad":
        handled = [f"    {pad}    return _rerun(grad, _exc)"]
    else:
        handled = [f"    {pad}    _again({again})"] if again else []
        handled.append(f"    {pad}    raise _domain(_exc) from None")
    lines = [
        f"    {pad}try:",
        *(f"    {pad}{line}" for line in body),
        f"    {pad}except (ValueError, ArithmeticError) as _exc:",  # (an input may be named e)
        *handled,
        *(f"{pad}{line}" for line in after),
    ]
    return ["    with np.errstate(all='ignore'):", *lines] if numpy else lines


# Elementwise, the interpreter's float rule: a value that decides a comparison rounds as in eval.
_EXACT = [
    "def _exact(rule, *args):",
    '    """rule (cgraph\'s on floats) on each element of args."""',
    "    return np.asarray(np.frompyfunc(rule, len(args), 1)(*args), dtype=float)[()]",
    "",
    "",
]
_EXACT_ROWS = [
    "def _exact(rule, *args):",
    '    """rule (cgraph\'s on floats) on each element of args; nan where it raises (the row',
    '    is flagged, and cgraph\'s interpreter says why)."""',
    "",
    "    def safe(*a):",
    "        try:",
    "            return rule(*a)",
    "        except (ValueError, ArithmeticError):",
    "            return math.nan",
    "",
    "    return np.asarray(np.frompyfunc(safe, len(args), 1)(*args), dtype=float)[()]",
    "",
    "",
]


def arg_function(numpy: bool, finite: bool = True) -> list[str]:
    """A module's ``_arg(x, name)``, the lines of its text: an input as a float (or, with
    ``numpy``, an array of floats, a number as a float), refused (as the interpreter refuses
    inf and nan) unless not ``finite`` (rows mode, where cgraph flags such rows itself); the
    input named, and for a tensor the first element that is not finite, not the whole array.
    Straight-line modules and loop modules write the same one.

    >>> print(arg_function(False)[-2].strip())
    raise DomainError(f'input {name!r} is not finite ({x})')
    """
    if not numpy:
        return [
            "def _arg(x, name):",
            "    x = float(x)",
            "    if x - x != 0.0:",
            "        raise DomainError(f'input {name!r} is not finite ({x})')",
            "    return x",
        ]
    check = [
        "    if not np.isfinite(x).all():",
        "        at = tuple(np.argwhere(~np.isfinite(x))[0]) if x.ndim else ()",
        "        where = f\" at [{', '.join(map(str, at))}]\" if at else ''",
        "        raise DomainError(f'input {name!r} is not finite{where} ({x[at]})')",
    ]
    return [
        "def _arg(x, name):",
        "    x = np.asarray(x, dtype=float)",
        *(check if finite else []),
        "    return float(x) if x.ndim == 0 else x",
    ]


_JOINED = 1024  # results up to this size are joined into one array for one sum
