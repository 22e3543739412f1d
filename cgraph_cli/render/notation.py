"""The one notation of every explanation (text, Markdown, LaTeX, the page, worksheets).

- A bar over a name is the gradient of the output with respect to that value, over every path
  (its adjoint, as textbooks on reverse mode write it): ``x̄`` is the total ∂g/∂x.
- ``∂t1/∂x`` is one op's local partial: how node t1 changes with its operand x, the other
  operands held. Where an op reads one node twice (``x * x``), the operand is named by its
  position: ``∂t1/∂(operand 1)``.

So a chain-rule step reads ``x̄ += t̄1 · ∂t1/∂x``, and no line says a quantity in terms of
itself. Drawings (DOT, PNG, SVG, TikZ, Mermaid) and worksheets label a node's gradient the
same way, ``x̄`` (:func:`total`), and their legends say what the bar means; only outputs that
list the inputs' gradients alone (``cgraph grad``) write ``∂g/∂x``, which for an input is the
same number.

>>> adjoint("x"), local("t1", "x"), local("t1", "x", position=2)
('x̄', '∂t1/∂x', '∂t1/∂(operand 2)')
"""

from __future__ import annotations

_BAR = "\u0305"  # a combining overline: one unbroken line over a name of several characters

#: Said once where an explanation first writes a bar.
KEY = "a bar: the gradient over every path; ∂t/∂x: one op's local partial"
KEY_TEX = r"a bar: the gradient over every path; $\partial t/\partial x$: one op's local partial"


def adjoint(name: str) -> str:
    """The gradient of the output with respect to ``name``: the name with a line over it (a
    name that is not an identifier, such as a bare output's text, in brackets first).

    >>> adjoint("t1"), adjoint("x * x")
    ('t̅1̅', '(x * x)̅')
    """
    if len(name) == 1:
        return name + "\u0304"  # a macron: the textbook's x̄
    if is_name(name):
        return "".join(c + _BAR for c in name)
    return f"({name}){_BAR}"


def total(name: str) -> str:
    """The label of a node's gradient in a drawing: :func:`adjoint` of its name, or of
    ``out`` for a node with no name to put a bar over.

    >>> total("b1"), total("x * x")
    ('b̅1̅', 'o̅u̅t̅')
    """
    return adjoint(name if is_name(name) else "out")


def is_name(name: str) -> bool:
    """Whether ``name`` is a name a bar can go over: an identifier, or one with the subscript
    that tells a reassigned name's values apart (``c₂``), not an expression's text.

    >>> is_name("c₂"), is_name("x * x")
    (True, False)
    """
    return name.rstrip("₀₁₂₃₄₅₆₇₈₉").isidentifier()


def adjoint_tex(name: str) -> str:
    """:func:`adjoint` in LaTeX: ``\\overline{t_{1}}``."""
    from .formulas import tex_name

    return rf"\overline{{{tex_name(name)}}}"


def local(node: str, operand: str, position: int | None = None) -> str:
    """One op's local partial: ``∂t1/∂x``; with ``position`` (an op reading one node twice),
    the operand by its place: ``∂t1/∂(operand 2)``."""
    return f"∂{node}/∂(operand {position})" if position else f"∂{node}/∂{operand}"


def local_tex(node: str, operand: str, position: int | None = None) -> str:
    """:func:`local` in LaTeX."""
    from .formulas import tex_name

    den = rf"(\text{{operand }}{position})" if position else tex_name(operand)
    return rf"\frac{{\partial {tex_name(node)}}}{{\partial {den}}}"


def positions(args: list[int]) -> list[int | None]:
    """Per operand: its position (from 1) where the op reads that node more than once, else
    None.

    >>> positions([3, 3]), positions([1, 2])
    ([1, 2], [None, None])
    """
    return [k + 1 if args.count(a) > 1 else None for k, a in enumerate(args)]
