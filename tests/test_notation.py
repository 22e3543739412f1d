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


# --- LaTeX, drawings and worksheets --------------------------------------------------------


def circular_tex(line: str) -> list[str]:
    """:func:`circular` of the ``$LaTeX$`` formulas in a Markdown line: a formula whose left
    side (a bar, or a partial) appears again on its right."""
    found = []
    for formula in re.findall(r"\$([^$]+)\$", line):
        left, _, right = (part.strip() for part in formula.partition(" = "))
        if left.startswith((r"\overline", r"\frac{\partial")) and left in right:
            found.append(left)
    return found


def test_the_tex_check_finds_a_circular_formula():
    bar = r"\overline{t_{1}}"
    assert circular_tex(rf"- ${bar} = {bar} \, 2 = 2$") == [bar]
    assert (
        circular_tex(rf"- $\overline{{x}} = {bar} \, \frac{{\partial t_{{1}}}}{{\partial x}}$")
        == []
    )


def _drawn(program: str, bindings=None) -> list[str]:
    """The text a backward drawing and a worksheet (its answer key, in Markdown, LaTeX and
    HTML) put in front of a student, checking the drawing's notation on the way: every edge a
    local partial of its own op, ∂<node>/∂<operand> (by place for an op reading one node twice),
    or a reverse rule over the node's bar; every node's gradient a bar, never a ∂."""
    from cgraph_cli.app.explain import edge_labels
    from cgraph_cli.app.worksheet import sheet
    from cgraph_cli.core.names import node_names
    from cgraph_cli.render import handout

    r = cg.grad(program, bindings)
    names = node_names(r.graph)
    labels = edge_labels(r.graph, r.values, r.output)
    for (i, k), text in labels.items():
        place = positions(list(r.graph.args[i]))[k]
        operand = names[r.graph.args[i][k]]
        if text.startswith("∂"):
            assert text.startswith(local(names[i], operand, place) + " = "), text
        else:
            assert adjoint(names[i]) in text and "∂" not in text, text
    dot = cg.diagram(program, bindings, backward=True).dot
    keys = re.findall(r'POINT-SIZE="10">([^<]*(?:<O>[^<]*</O>)?)</FONT></TD><TD ALIGN="RIGHT"', dot)
    bars = [k for k in keys if k != "value"]
    assert bars and all(k.startswith("<O>") or k[1:] == "\u0304" for k in bars), keys
    legend = dot[dot.rindex("label=<<TABLE") :]
    assert "∂" not in legend  # the legend says what a bar is without a ∂ of another meaning
    s = sheet(program, bindings)
    pages = [handout.markdown(s, key=True), handout.latex(s, key=True), handout.html(s, key=True)]
    return list(labels.values()) + [ln for page in pages for ln in page.splitlines()]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_no_latex_formula_of_a_sample_is_circular(path):
    md = cg.explain(path.read_text()).markdown(math="latex").splitlines()
    bad = [(line, circular_tex(line)) for line in md if circular_tex(line)]
    assert not bad, bad[:5]


@pytest.mark.parametrize(
    "program", ["g = x * x", "t = x + w\ng = t * t", "y = x * x + sin(x) + x", "g = x / x + x ^ x"]
)
def test_drawings_and_worksheets_name_each_operand_and_write_totals_with_a_bar(program):
    lines = _drawn(program, {"x": 1.5, "w": -0.5} if "w" in program else {"x": 1.5})
    assert not [ln for ln in lines if circular(ln)]
    twice = [ln for ln in lines if "(operand 1)" in ln]
    assert twice and all("(operand 2)" in ln for ln in twice if ln.startswith("|")), twice
    assert any("gradient x̄" in ln or r"gradient $\bar{x}$" in ln for ln in lines)


@settings(
    max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    expressions(names=("x", "y"), max_leaves=4),
    st.sampled_from(["t * t", "t + t", "t * x", "t / t"]),
)
def test_no_line_of_a_random_program_read_twice_is_circular_anywhere(expression, repeated):
    program = f"t = x + y\ng = {repeated} + ({expression})"
    bindings = {"x": 0.7, "y": -1.3}
    try:
        lines = _lines(program, bindings) + _drawn(program, bindings)
        md = cg.explain(program, bindings).markdown(math="latex").splitlines()
    except CgraphError:
        assume(False)
    bad = [(ln, circular(ln)) for ln in lines if circular(ln)]
    bad += [(ln, circular_tex(ln)) for ln in md if circular_tex(ln)]
    assert not bad, (program, bad[:3])


@pytest.mark.parametrize("name", ["layers", "functions", "rnn"])
def test_calls_explained_as_one_step_write_no_circular_line(name):
    text = next(p for p in SAMPLES if p.stem == name).read_text()
    explanation = cg.explain(text, depth=1)
    lines = str(explanation).splitlines() + explanation.markdown().splitlines()
    md = explanation.markdown(math="latex").splitlines()
    assert not [(ln, circular(ln)) for ln in lines if circular(ln)]
    assert not [(ln, circular_tex(ln)) for ln in md if circular_tex(ln)]
