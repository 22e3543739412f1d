"""The op table's rules as formulas people read: explanations, diagram edge labels, LaTeX.

:class:`Formula` and :class:`Latex` are interpretations of the op vocabulary (see
:mod:`cgraph_cli.core.interpret`): a derivative rule run under one of them writes itself down, e.g.
tanh's partial ``e.sub(1.0, e.pow(out, 2.0))`` prints as ``1 - o²``. Arguments are names
(strings) or numbers (floats); what is made of numbers only is folded, and the identities a
reader expects (``1·x``, ``x + 0``, a sum over no broadcast axis) are left out.

>>> from cgraph_cli.core.ops import OPS
>>> [rule(Formula(), "x", "y", "o").text for rule in OPS["div"].partials]
['1/y', '-o/y']
>>> OPS["pow"].partials[0](Formula(), "x", 2.0, "o").text
'2·x'
>>> OPS["sigmoid"].partials[0](Latex(), "n", "o").text
'o \\\\cdot \\\\left(1 - o\\\\right)'
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from ..core.interpret import Interpretation, value_function
from ..core.numfmt import format_number
from ..core.ops import (
    CALL,
    INFIX,
    POSTFIX,
    PREC_ATOM,
    PREC_COMPARE,
    PREC_PRODUCT,
    PREC_SELECT,
    PREC_UNARY,
    PREFIX,
)
from .texchars import greek_command

_SUPERSCRIPTS = dict(zip("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))


class Expr(NamedTuple):
    """A formula: its text, how tightly it binds, and its shape when known."""

    text: str
    prec: int
    shape: tuple[int, ...] | None = ()


class _Printer(Interpretation):
    """What Formula and Latex share: folding numbers, the identities, shapes."""

    def __init__(self, shapes: dict[str, tuple[int, ...]] | None = None) -> None:
        self.shapes = shapes or {}

    def number(self, x: float) -> Expr:
        text = format_number(x)
        return Expr(text, PREC_UNARY if text.startswith("-") else PREC_ATOM)

    def lift(self, x) -> Expr | float:
        if isinstance(x, Expr) or x.__class__ is float:
            return x
        if isinstance(x, (int, float)):
            return float(x)
        return Expr(self.name(x), PREC_ATOM, self.shapes.get(x, ()))

    def name(self, name: str) -> str:
        return name

    def shape(self, x) -> tuple[int, ...]:
        x = self.lift(x)
        return () if x.__class__ is float else (x.shape or ())

    def apply(self, op, args, params):
        args = [self.lift(a) for a in args]
        if all(a.__class__ is float for a in args) and op.py is not None:
            try:
                value = value_function(op)(*args, *params)
                if math.isfinite(value):
                    return value
            except (ArithmeticError, ValueError, TypeError):
                pass
        simpler = self.simplify(op, args, params)
        if simpler is not None:
            return simpler
        exprs = [a if isinstance(a, Expr) else self.number(a) for a in args]
        shape = None
        if all(e.shape is not None for e in exprs):
            try:
                shape = op.shape([e.shape for e in exprs], params)
            except Exception:  # a shape the rule refuses: unknown, for display only
                shape = None
        text, prec = self.spell(op, exprs, params)
        return Expr(text, prec, shape)

    def simplify(self, op, args, params):
        name = op.name
        if name in ("add", "sub") and args[1] == 0.0:
            return args[0]
        if name == "add" and args[0] == 0.0:
            return args[1]
        if name == "sub" and args[0] == 0.0:
            return self.neg(args[1])
        if name == "mul":
            for k in (0, 1):
                if args[k] == 1.0:
                    return args[1 - k]
                if args[k] == -1.0:
                    return self.neg(args[1 - k])
        if name == "div" and args[1] == 1.0:
            return args[0]
        if name == "pow" and args[1] == 1.0:
            return args[0]
        if name == "where" and args[0].__class__ is float:
            return args[1] if args[0] else args[2]
        if name == "where" and args[1] == args[2]:  # the same either way: pow's mask at 0^0
            return args[1]
        if name in ("sum_to", "broadcast_to", "reshape") and self.shape(args[0]) == tuple(
            params[0]
        ):
            return args[0]
        if name == "reshape" and self.shape(args[0]) == () and isinstance(args[0], Expr):
            return args[0]._replace(shape=tuple(params[0]))  # a number, reshaped: still it
        return None

    def spell(self, op, args: list[Expr], params) -> tuple[str, int]:
        raise NotImplementedError

    def write(self, x) -> str:
        """The text of a rule's result (a number or a formula)."""
        x = self.lift(x)
        return self.number(x).text if x.__class__ is float else x.text


def _wrap(e: Expr, prec: int, strict: bool = False) -> str:
    return f"({e.text})" if e.prec < prec or (strict and e.prec == prec) else e.text


def _shape_text(shape) -> str:
    return str(tuple(shape))


class Formula(_Printer):
    """Plain formulas, as a textbook writes them: ``1 - o²``, ``g @ Wᵀ``, ``[x > 0]``."""

    def spell(self, op, args: list[Expr], params) -> tuple[str, int]:
        name = op.name
        if name == "mul":
            a, b = args
            return f"{_wrap(a, PREC_PRODUCT)}·{_wrap(b, PREC_PRODUCT, strict=True)}", PREC_PRODUCT
        if name == "div":
            a, b = args
            return f"{_wrap(a, PREC_PRODUCT)}/{_wrap(b, PREC_PRODUCT, strict=True)}", PREC_PRODUCT
        if name == "pow":
            base, exponent = args
            small = exponent.text.lstrip("-").isdigit() and len(exponent.text) <= 2
            if small and base.prec >= PREC_ATOM:
                return base.text + "".join(_SUPERSCRIPTS[c] for c in exponent.text), PREC_ATOM
            return f"{_wrap(base, PREC_ATOM)}^{_wrap(exponent, PREC_ATOM)}", op.precedence
        if name == "where":
            c, a, b = args
            if (a.text, b.text) == ("1", "0"):
                return f"[{c.text}]", PREC_ATOM
            return (
                f"{_wrap(a, PREC_COMPARE)} if {_wrap(c, PREC_COMPARE)} else {_wrap(b, PREC_SELECT)}"
            ), PREC_SELECT
        if name == "xlogy":
            a, b = args
            return f"{_wrap(a, PREC_PRODUCT)}·log({b.text})", PREC_PRODUCT
        if name == "transpose" and not (params and params[0] is not None):
            return f"{_wrap(args[0], PREC_ATOM)}ᵀ", PREC_ATOM
        if name == "outer":  # a column times a row, as a textbook writes it
            a, b = args
            return f"{_wrap(a, PREC_PRODUCT)} @ {_wrap(b, PREC_ATOM)}ᵀ", PREC_PRODUCT
        if name == "index":
            from ..core.walks import show_subscript

            items = ", ".join(show_subscript(k) for k in params[0])
            return f"{_wrap(args[0], PREC_ATOM)}[{items}]", PREC_ATOM
        if op.style == INFIX:
            a, b = args
            p = op.precedence
            symbol = op.symbol if op.precedence == PREC_COMPARE else op.symbol
            return f"{_wrap(a, p)} {symbol} {_wrap(b, p, strict=True)}", p
        if op.style == PREFIX and op.precedence != PREC_UNARY:  # not x
            return f"{op.symbol}{_wrap(args[0], op.precedence)}", op.precedence
        if op.style == PREFIX:  # -o/y reads as -(o/y), and equals it
            return f"-{_wrap(args[0], PREC_PRODUCT)}", PREC_UNARY
        shown = [a.text for a in args] + [_param(p) for p in params if p is not None]
        return f"{op.symbol}({', '.join(shown)})", PREC_ATOM


def _param(value) -> str:
    if isinstance(value, tuple) and any(isinstance(v, slice) for v in value):
        from ..core.walks import show_subscript

        return "[" + ", ".join(show_subscript(v) for v in value) + "]"
    return _shape_text(value) if isinstance(value, tuple) else str(value)


_GREEK = {
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "theta",
    "lambda",
    "mu",
    "sigma",
    "tau",
    "phi",
    "omega",
    "eta",
    "rho",
    "pi",
    "kappa",
    "nu",
    "xi",
    "psi",
    "chi",
    "zeta",
}


class Latex(_Printer):
    """LaTeX, for markdown with ``$...$`` math: ``\\frac{1}{y}``, ``x^{2}``."""

    def name(self, name: str) -> str:
        return tex_name(name)

    def number(self, x: float) -> Expr:
        text = format_number(x)
        if "e" in text:
            mantissa, exponent = text.split("e")
            text = rf"{mantissa} \cdot 10^{{{int(exponent)}}}"
        return Expr(text, PREC_UNARY if text.startswith("-") else PREC_ATOM)

    def spell(self, op, args: list[Expr], params) -> tuple[str, int]:
        template = op.latex
        texts = []
        for k, a in enumerate(args):
            if f"{{{{{{{k}}}}}}}" in template or op.style == CALL:  # inside braces or \left(
                texts.append(a.text)
            elif op.name == "pow" and k == 0:
                texts.append(a.text if a.prec >= PREC_ATOM else rf"\left({a.text}\right)")
            elif op.style == INFIX:
                strict = k == 1
                tight = a.prec < op.precedence or (strict and a.prec == op.precedence)
                texts.append(rf"\left({a.text}\right)" if tight else a.text)
            elif op.style in (PREFIX, POSTFIX):
                texts.append(a.text if a.prec >= PREC_UNARY else rf"\left({a.text}\right)")
            else:
                texts.append(a.text)
        if op.name == "where":
            cond, yes, no = texts
            return (
                rf"\begin{{cases}} {yes} & {cond} \\ {no} & \text{{otherwise}} \end{{cases}}",
                PREC_ATOM,
            )
        if op.name == "transpose" and not (params and params[0] is not None):
            return f"{texts[0]}^\\top", PREC_ATOM
        if op.name == "index":
            from ..core.walks import show_subscript

            items = ", ".join(show_subscript(k) for k in params[0])
            return f"{texts[0]}_{{[{items}]}}", PREC_ATOM
        shown = [_param(p) for p in params if p is not None]
        if shown and op.style == CALL:  # sum(x, 0): the axis after the arguments
            texts[-1] += ", " + ", ".join(shown)
        text = template.format(*texts)
        prec = op.precedence if op.style in (INFIX, PREFIX) else PREC_ATOM
        if op.name in ("div", "exp"):
            prec = PREC_ATOM
        return text, prec


def tex_name(name: str) -> str:
    """A name in LaTeX: ``x``, ``w_{1}``, ``\\alpha``, ``\\mathit{loss}``; numbers as they are.

    >>> tex_name("w1"), tex_name("x_in"), tex_name("loss"), tex_name("α"), tex_name("φ2")
    ('w_{1}', '\\\\mathit{x\\\\_in}', '\\\\mathit{loss}', '\\\\alpha', '\\\\varphi_{2}')
    """
    try:
        float(name)
        return name
    except ValueError:
        pass
    if name in _GREEK:
        return "\\" + name
    match = re.fullmatch(r"(\w)(\d*)", name)
    if match and not match.group(1).isascii():  # a Greek letter as LaTeX writes it: \alpha
        letter = greek_command(match.group(1))
        if letter is not None:
            return letter + (f"_{{{match.group(2)}}}" if match.group(2) else "")
    match = re.fullmatch(r"([A-Za-z])(\d+)", name)
    if match:
        return f"{match.group(1)}_{{{match.group(2)}}}"
    if len(name) == 1:
        return name
    escaped = name.replace("_", r"\_")
    return rf"\mathit{{{escaped}}}"
