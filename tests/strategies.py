"""Hypothesis strategies: random cgraph programs over the whole language."""

from __future__ import annotations

import re

from hypothesis import strategies as st
from op_cases import example, example_cases, value_range

from cgraph_cli import parse
from cgraph_cli.core.arrays import ShapeMismatch, broadcast
from cgraph_cli.core.ops import INFIX as INFIX_STYLE
from cgraph_cli.core.ops import OPS, PREC_AND, PREC_COMPARE, PREC_OR

INPUTS = ("x", "y", "z")
# The scalar functions (tensor ops get their own tests in test_tensors.py).
SCALAR = [op for op in OPS.values() if op.function and op.elementwise and not op.surrogate]
UNARY = sorted(op.name for op in SCALAR if op.arity == 1)
BINARY_FUNCTIONS = sorted(op.name for op in SCALAR if op.arity == 2)
# Functions of three arguments or more that take no condition (where does: it is drawn with the
# conditions below), each argument an expression.
MORE_FUNCTIONS = sorted(
    op.name for op in SCALAR if op.arity > 2 and all(p is not None for p in op.partials or ())
)
# The operators between two values, by their precedence in the op table; ** is ^ spelled again.
_OPERATORS = [op for op in OPS.values() if op.style == INFIX_STYLE and op.py is not None]
COMPARISONS = tuple(op.symbol for op in _OPERATORS if op.precedence == PREC_COMPARE)
LOGICAL = tuple(op.symbol for op in _OPERATORS if op.precedence in (PREC_AND, PREC_OR))
INFIX = (*(op.symbol for op in _OPERATORS if op.symbol not in COMPARISONS + LOGICAL), "**")

numbers = st.sampled_from(["0.5", "1", "2", "3", "1.5", ".25", "2e-1", "1E1"])


def expressions(names=INPUTS, max_leaves: int = 8, conditions: bool = False, constants=None):
    """Program text for one expression, with random spacing and redundant parentheses; with
    ``conditions``, comparisons and ``where`` too; ``constants``: the numbers to draw from."""
    leaves = st.one_of(st.sampled_from(list(names)), numbers if constants is None else constants)

    def extend(inner):
        more = []
        if conditions:
            more = [
                st.tuples(inner, st.sampled_from(COMPARISONS), inner).map(
                    lambda t: f"({t[0]} {t[1]} {t[2]})"
                ),
                st.tuples(inner, inner, inner).map(lambda t: f"where({t[0]}, {t[1]}, {t[2]})"),
                st.tuples(inner, st.sampled_from(LOGICAL), inner).map(
                    lambda t: f"({t[0]} {t[1]} {t[2]})"
                ),
                inner.map(lambda e: f"(not {e})"),
            ]
        return st.one_of(
            *more,
            st.tuples(inner, st.sampled_from(INFIX), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(st.sampled_from(UNARY), inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(st.sampled_from(BINARY_FUNCTIONS), inner, inner).map(
                lambda t: f"{t[0]}({t[1]}, {t[2]})"
            ),
            *(
                st.tuples(*[inner] * OPS[name].arity).map(
                    lambda t, name=name: f"{name}({', '.join(t)})"
                )
                for name in MORE_FUNCTIONS
            ),
            inner.map(lambda e: f"-{e}"),
            inner.map(lambda e: f"({e})"),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


@st.composite
def programs(draw, max_statements: int = 3, conditions: bool = False):
    """Several statements; later ones may read earlier names, so values fan out."""
    names = list(INPUTS)
    lines = []
    for k in range(draw(st.integers(1, max_statements))):
        target = draw(st.sampled_from([f"t{k}", f"t{max(0, k - 1)}"]))  # sometimes reassign
        lines.append(f"{target} = {draw(expressions(names, max_leaves=6, conditions=conditions))}")
        if target not in names:
            names.append(target)
    if draw(st.booleans()):
        lines.insert(0, "input x = 1.5, z = -2")
    sep = draw(st.sampled_from(["\n", "; ", "\n\n# a comment\n"]))
    return sep.join(lines) + draw(st.sampled_from(["", "\n", ";"]))


_coordinate = st.floats(0.05, 3) | st.floats(-3, -0.05)
points = st.tuples(_coordinate, _coordinate, _coordinate)


# --- tensor programs -------------------------------------------------------------------------
#: The inputs of random tensor programs and their shapes: every expression drawn below has a
#: shape that broadcasts to (2, 3), so any two of them combine.
TENSOR_SHAPES = {"A": (2, 3), "r": (3,), "c": (2, 1), "s": ()}
_FULL = "broadcast_to({0}, [2, 3])"
TENSOR_LEAVES = [
    "0.5",
    "[1, -2, 0.5]",
    "(A @ transpose(A))[:, 1:]",
    "softmax(A, 1)",
    "reshape(r, [1, 3])",
    "A[1]",
    "mean(A, 0)",
]
# Templates over one, two and four smaller expressions. Only inputs in [-2, 2] are assumed:
# divisors, logs and roots are kept positive, exponents small.
TENSOR_UNARY = [
    "sin({0})",
    "cos({0})",
    "tanh({0})",
    "sigmoid({0})",
    "exp(-abs({0}))",
    "relu({0})",
    "abs({0})",
    "-{0}",
    "sign({0}) * {0}",
    "sqrt(1 + {0} * {0})",
    "log(1 + {0} ^ 2)",
    "{0} ^ 3",
    "tan(tanh({0}))",
    "transpose(transpose({0}))",
    "softmax(" + _FULL + ", 1)",
    "softmax(" + _FULL + ", 0)",
    "log_softmax(" + _FULL + ", 1)",
    "log_softmax({0})",
    "softplus({0})",
    "logsumexp(" + _FULL + ", 0)",
    "sum({0})",
    "mean({0})",
    "max({0})",
    "min({0})",
    "logsumexp({0})",
    "sum(" + _FULL + ", 0)",
    "reshape(mean(" + _FULL + ", 1), [2, 1])",
    "reshape(" + _FULL + " @ [0.5, -1, 2], [2, 1])",
    "transpose(" + _FULL + ") @ [1, -0.5]",
    "(" + _FULL + ")[1]",
    "(" + _FULL + ")[:, 1:2]",
    "reshape(reshape(" + _FULL + ", [3, 2]), [2, 3])",
    "outer((" + _FULL + ")[:, 0], r)",
    "place((" + _FULL + ")[0, 1:], [3], 1:3)",
    "sum_to(" + _FULL + ", [3])",
    "sum_to(" + _FULL + ", [2, 1])",
]
TENSOR_BINARY = [
    "{0} + {1}",
    "{0} - {1}",
    "{0} * {1}",
    "{0} / (1 + {1} ^ 2)",
    "max({0}, {1})",
    "min({0}, {1})",
    "(1 + {0} ^ 2) ^ sin({1})",
    "xlogy({0}, 1 + {1} ^ 2)",
    "({0} < {1}) + 0.5",
    "({0} >= {1}) * 2",
    "({0} == {1}) - 1",
    "{0} * ({1} > 0 and {0} < 1)",
    "{1} * (not {0} > 0 or {1} > 1)",
    "(" + _FULL.format("{0}") + " @ transpose(" + _FULL.format("{1}") + "))[:, :1]",
]
TENSOR_TERNARY = [
    "where({0} > {1}, {2}, -1)",
    "where({0} <= {1}, {2}, {3})",
    "where({0} != {1}, 1, {3})",
]


# How a derived template brings an expression of shape (2, 3) to a shape a tensor op takes.
_REACH = {
    (2, 3): "{0}",
    (3, 2): "transpose({0})",
    (3,): "({0})[0]",
    (2,): "({0})[:, 0]",
    (6,): "reshape({0}, [6])",
    (): "sum({0})",
    # images and a convolution's weights: the six numbers spread by outer products, so that no
    # two elements are equal (a pool's maximum is then unique)
    (1, 2, 3, 3): "reshape(outer(reshape({0}, [6]), [1, 0.5, -0.3]), [1, 2, 3, 3])",
    (3, 2, 2, 2): "reshape(outer(reshape({0}, [6]), [1, 0.5, -0.3, 0.2]), [3, 2, 2, 2])",
    (1, 3, 2, 2): "reshape(outer(reshape({0}, [6]), [1, -0.4]), [1, 3, 2, 2])",
    (1, 2, 2, 2): "reshape(outer(({0})[0, :2], [1, 0.5, -0.3, 0.2]), [1, 2, 2, 2])",
    (2, 1, 2, 2): "reshape(outer(({0})[1, :2], [1, -0.5, 0.3, 0.7]), [2, 1, 2, 2])",
}


def tensor_template(op) -> str | None:
    """A template for ``op`` made from its table entry, for an op no template above writes:
    its example with each argument a drawn expression squashed into the range
    tests/op_cases.py finds for the op (by tanh, so no value leaves it) and, for a tensor op,
    brought to a shape the op takes; summed where its value does not broadcast to (2, 3).
    None where no shape fits.

    >>> tensor_template(OPS["log"])
    '(log((0.7 + 0.5 * tanh({0}))))'
    >>> tensor_template(OPS["place"])
    'sum(place(((broadcast_to(2 * tanh({0}), [2, 3]))[:, 0]), [4], 1:3))'
    """
    names, params = example(op)
    low, high = value_range(op)
    middle, half = (low + high) / 2, (high - low) / 2
    squashed = [
        f"{half:g} * tanh({{{k}}})" if middle == 0 else f"{middle:g} + {half:g} * tanh({{{k}}})"
        for k in range(op.arity)
    ]
    args, out = squashed, (2, 3)
    if not op.elementwise:
        fits = [shapes for shapes, _ in example_cases(op) if all(s in _REACH for s in shapes)]
        if not fits:
            return None
        args = [_REACH[s].format(_FULL.format(a)) for s, a in zip(fits[0], squashed)]
        out = op.shape(list(fits[0]), params)
    spelled = re.sub(
        r"\b(" + "|".join(names) + r")\b", lambda m: f"({args[names.index(m[1])]})", op.example
    )
    return f"({spelled})" if _broadcasts(out) else f"sum({spelled})"


def _broadcasts(shape) -> bool:
    """A value of ``shape`` combines with one of (2, 3) into (2, 3)."""
    try:
        return broadcast(shape, (2, 3)) == (2, 3)
    except ShapeMismatch:
        return False


# Every op the templates above write; an op of the table that none writes (a new one) joins the
# random programs with the template its entry gives, so that the properties cover it.
_WRITTEN = {
    op.name
    for t in TENSOR_LEAVES + TENSOR_UNARY + TENSOR_BINARY + TENSOR_TERNARY
    for op in parse("y = " + t.format("A", "r", "c", "s")).ops
}
for _op in OPS.values():  # (not stop_gradient: finite differences see through it)
    if _op.surrogate:
        continue
    if _op.arity and _op.name not in _WRITTEN and (_template := tensor_template(_op)):
        assert _op.arity <= 4, f"{_op.name}: the templates take four expressions at most"
        (TENSOR_UNARY, TENSOR_BINARY, TENSOR_TERNARY)[min(_op.arity, 3) - 1].append(_template)


def tensor_expressions(max_leaves: int = 6, names=tuple(TENSOR_SHAPES)):
    """Random expressions over the inputs ``names`` (shaped as ``TENSOR_SHAPES`` says) with
    every op of the table: elementwise functions and operators under broadcasting,
    comparisons and where, @ and outer, reductions, softmax, reshapes, transposes, indexing,
    place, broadcast_to and sum_to."""
    leaves = st.sampled_from([*names, *TENSOR_LEAVES])

    def fill(template: str, *parts: str) -> str:
        return "(" + template.format(*(f"({p})" for p in parts)) + ")"

    def grow(e):
        return st.one_of(
            st.tuples(st.sampled_from(TENSOR_UNARY), e).map(lambda t: fill(*t)),
            st.tuples(st.sampled_from(TENSOR_BINARY), e, e).map(lambda t: fill(*t)),
            st.tuples(st.sampled_from(TENSOR_TERNARY), e, e, e, e).map(lambda t: fill(*t)),
        )

    return st.recursive(leaves, grow, max_leaves=max_leaves)


# --- programs with if/else -----------------------------------------------------------------
#: Ops that fail outside their domain, so that a branch not taken must not be computed.
PARTIAL = ["log", "sqrt"]
BRANCH_INPUTS = ["x", "y", "z"]


def _branching_expressions():
    leaves = st.one_of(st.sampled_from(BRANCH_INPUTS), numbers)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/"]), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(st.sampled_from(["sin", "exp", "tanh", "relu", *PARTIAL]), inner).map(
                lambda t: f"{t[0]}({t[1]})"
            ),
            st.tuples(inner, inner, st.sampled_from(["<", ">", "<=", "!="]), inner, inner).map(
                lambda t: f"({t[0]} if {t[1]} {t[2]} {t[3]} else {t[4]})"
            ),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        )

    return st.recursive(leaves, extend, max_leaves=8)


_BRANCHING = _branching_expressions()


@st.composite
def branching_programs(draw):
    """Programs with `a if c else b` (nested, sharing values between branches), whose
    branches hold ops that fail outside their domain (log, sqrt, 1/x)."""
    lines, names = [], list(BRANCH_INPUTS)
    for k in range(draw(st.integers(1, 3))):
        expression = draw(_BRANCHING)
        for n in names[3:]:  # later statements read earlier ones sometimes
            if draw(st.booleans()):
                expression = expression.replace("y", n, 1)
        lines.append(f"t{k} = {expression}")
        names.append(f"t{k}")
    text = "\n".join(lines)
    if " if " not in text:  # no conditional drawn: add one
        text += f"\nout = t{len(lines) - 1} if x > 0 else log(y)"
    return text
