"""One notation in every explanation: x̄ the gradient over every path, ∂t/∂x one op's local
partial, so that no printed line says a quantity in terms of itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import expressions

import cgraph_cli as cg
from cgraph_cli.app.walkthrough import steps as page_steps
from cgraph_cli.core.errors import CgraphError
from cgraph_cli.render.notation import adjoint, local, positions

SAMPLES = sorted(Path(__file__).resolve().parent.parent.glob("samples/*.cg"))

# A quantity on the left of `=` or `+=`: a local partial ∂a/∂b, or an adjoint (a name under a
# bar: letters each followed by a combining macron or overline, or a bracketed text).
_MARKS = "\u0304\u0305"
_SYMBOL = rf"∂[^\s/]+/∂(?:\(operand \d+\)|[^\s,=·(]+)|(?:[^\s{_MARKS}][{_MARKS}])+|\([^)]*\)\u0305"
_ASSIGN = re.compile(rf"(?:^|, |: |; )({_SYMBOL}) \+?= ")


def circular(line: str) -> list[str]:
    """The quantities this line writes in terms of themselves (``∂g/∂z += ḡ · ∂g/∂z``)."""
    found = []
    matches = list(_ASSIGN.finditer(line))
    for k, m in enumerate(matches):
        right = line[m.end() : matches[k + 1].start() if k + 1 < len(matches) else len(line)]
        symbol = m.group(1)
        # the same quantity, not a longer one that starts with it (x̄ in x̄1, ∂t/∂x in ∂t/∂x2)
        if re.search(rf"(?<![\w{_MARKS}])" + re.escape(symbol) + rf"(?![\w{_MARKS}])", right):
            found.append(symbol)
    return found


def test_the_check_finds_a_circular_line():
    assert circular("∂g/∂z += ∂g/∂g · ∂g/∂z = 1 · 4 = 4") == ["∂g/∂z"]
    assert circular("Through *: ∂t1/∂x = x = 3, ∂t1/∂x = x = 3") == []  # repeated, not circular
    assert circular(f"{adjoint('x')} += {adjoint('t1')} · ∂t1/∂x = 3") == []
    assert circular(f"{adjoint('t1')} = {adjoint('t1')} · 2") == [adjoint("t1")]
    assert circular(f"{adjoint('w2')} += {adjoint('x2w2')} · ∂x2w2/∂w2") == []


def test_the_two_operands_of_one_op_on_one_node_are_named_by_place():
    assert positions([4, 4]) == [1, 2]
    assert local("t1", "x", 2) == "∂t1/∂(operand 2)"


def _lines(program: str, bindings=None) -> list[str]:
    """Every line a person reads about the passes: explain's text (with calls as one step
    too), its Markdown, and the page's captions and node panels."""
    explanation = cg.explain(program, bindings)
    lines = str(explanation).splitlines() + explanation.markdown().splitlines()
    lines += str(cg.explain(program, bindings, depth=1)).splitlines()
    data = page_steps(cg.parse(program) if isinstance(program, str) else program, bindings)
    lines += [e["caption"] for e in data["events"]]
    for node in data["nodes"]:
        lines += node["locals"] + node["chain"]
    return lines


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_no_line_of_a_sample_is_circular(path):
    lines = _lines(path.read_text())
    assert lines
    bad = [(line, circular(line)) for line in lines if circular(line)]
    assert not bad, bad[:5]


def test_fan_out_reads_as_the_chain_rule():
    lines = _lines("t = x + y\ng = t * t + x", {"x": 1.0, "y": 2.0})
    x, t = adjoint("x"), adjoint("t")
    assert any(f"{t} = {adjoint('g')} · ∂g/∂t1" in ln or "∂t1/∂(operand 1)" in ln for ln in lines)
    assert not [ln for ln in lines if circular(ln)]
    assert any(ln.startswith(f"{x} += ") or f" {x} = " in ln for ln in lines)


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(expressions(names=("x", "y"), max_leaves=5), st.sampled_from(["x * x", "x + x", "y * x"]))
def test_no_line_of_a_random_program_with_fan_out_is_circular(expression, repeated):
    program = f"t = {repeated}\nu = t * ({expression}) + t\nout = u * x + t"
    try:
        lines = _lines(program, {"x": 0.7, "y": -1.3})
    except CgraphError:
        assume(False)
    bad = [(line, circular(line)) for line in lines if circular(line)]
    assert not bad, (program, bad[:3])
