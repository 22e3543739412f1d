"""Hypothesis strategies: random cgraph programs over the whole language."""

from __future__ import annotations

from hypothesis import strategies as st

from cgraph_cli.ops import OPS

INPUTS = ("x", "y", "z")
# The scalar functions (tensor ops get their own tests in test_tensors.py).
SCALAR = [op for op in OPS.values() if op.function and op.elementwise]
UNARY = sorted(op.name for op in SCALAR if op.arity == 1)
BINARY_FUNCTIONS = sorted(op.name for op in SCALAR if op.arity == 2)
INFIX = ("+", "-", "*", "/", "^", "**")

numbers = st.sampled_from(["0.5", "1", "2", "3", "1.5", ".25", "2e-1", "1E1"])


def expressions(names=INPUTS, max_leaves: int = 8):
    """Program text for one expression, with random spacing and redundant parentheses."""
    leaves = st.one_of(st.sampled_from(list(names)), numbers)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(INFIX), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(st.sampled_from(UNARY), inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(st.sampled_from(BINARY_FUNCTIONS), inner, inner).map(
                lambda t: f"{t[0]}({t[1]}, {t[2]})"
            ),
            inner.map(lambda e: f"-{e}"),
            inner.map(lambda e: f"({e})"),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


@st.composite
def programs(draw, max_statements: int = 3):
    """Several statements; later ones may read earlier names, so values fan out."""
    names = list(INPUTS)
    lines = []
    for k in range(draw(st.integers(1, max_statements))):
        target = draw(st.sampled_from([f"t{k}", f"t{max(0, k - 1)}"]))  # sometimes reassign
        lines.append(f"{target} = {draw(expressions(names, max_leaves=6))}")
        if target not in names:
            names.append(target)
    if draw(st.booleans()):
        lines.insert(0, "input x = 1.5, z = -2")
    sep = draw(st.sampled_from(["\n", "; ", "\n\n# a comment\n"]))
    return sep.join(lines) + draw(st.sampled_from(["", "\n", ";"]))


_coordinate = st.floats(0.05, 3) | st.floats(-3, -0.05)
points = st.tuples(_coordinate, _coordinate, _coordinate)
