"""Honest colours: a gradient's entries each tinted by their own sign; a summary of entries of
both signs untinted, with ± in its text (one sign: + or −, and that sign's tint); rounding noise
shown as 0. Checked on the DOT of every sample, drawn in full, summarised, backward, folded."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cgraph_cli.app.diagrams import diagram
from cgraph_cli.core.numfmt import format_value, nested, shown_mean, summary
from cgraph_cli.render.signs import entry_sign, mark, sign

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "samples").glob("*.cg"))
# A node's gradient row: its key (the name under a bar) and the cell after it, to the end of
# the node's table (a grid or a summary is a table of its own inside that cell).
GRADIENT = re.compile(
    r'(?:<O>[^<]*</O>|\w\u0304)</FONT></TD><TD ALIGN="RIGHT"(?: BGCOLOR="(#[0-9a-f]{6})")?>(.*?)'
    r"</TD></TR></TABLE>>"
)
CELL = re.compile(r'<TD ALIGN="RIGHT"(?: BGCOLOR="(#[0-9a-f]{6})")?>([^<]*)</TD>')
SUMMARY = re.compile(r"^ ([+−±0]) \(.*\)  mean \S+  \[(\S+), (\S+)\] $")


def _hue(colour: str | None) -> int:
    """+1 for a blue tint (the light theme's > 0), -1 for a red one (< 0), 0 for none."""
    if colour is None or colour == "":
        return 0
    r, b = int(colour[1:3], 16), int(colour[5:7], 16)
    return 1 if b > r else -1


def _number(text: str) -> float:
    return float(text.strip().replace("−", "-"))


def drawn_gradients(dot: str) -> list[tuple[str, int, int]]:
    """Each gradient entry, number or summary the DOT draws: (its text, the sign its text
    says, the sign its tint says)."""
    found = []
    for outer, cell in GRADIENT.findall(dot):
        if not cell.startswith("<TABLE"):
            if cell.strip() not in ("?", ""):
                found.append((cell, int(np.sign(_number(cell))), _hue(outer)))
            continue
        for colour, text in CELL.findall(cell):
            m = SUMMARY.match(text)
            if m is None:  # an entry of a grid
                found.append((text, int(np.sign(_number(text))), _hue(colour)))
                continue
            low, high = _number(m.group(2)), _number(m.group(3))
            said = {"+": 1, "−": -1, "±": 0, "0": 0}[m.group(1)]
            truth = 0 if low < 0 < high else int(np.sign(high if high > 0 else low))
            assert said == truth, text  # the mark says the range's signs
            found.append((text, said, _hue(colour)))
    return found


def _views(path: Path):
    text = path.read_text()
    full = diagram(text)
    yield "full", full.dot
    if full.summarised is not None:
        yield "summarised", full.summarised().dot
    yield "backward", diagram(text, backward=True).dot
    yield "folded", diagram(text, collapse=True).dot


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_every_drawn_gradient_is_tinted_by_its_own_sign(path):
    drawn = 0
    for view, dot in _views(path):
        for text, said, tint in drawn_gradients(dot):
            assert tint == said, (view, text, said, tint)  # 0 and ± untinted
            drawn += 1
    if "input" in path.read_text() or "=" in path.read_text():
        assert drawn > 0, path.stem


def test_a_summary_of_both_signs_is_untinted_and_says_so():
    text = next(p for p in SAMPLES if p.stem == "softmax_cross_entropy").read_text()
    dot = diagram(text, backward=True)
    assert dot.summarised is not None
    summary_dot = dot.summarised().dot
    marks = [(t, tint) for t, said, tint in drawn_gradients(summary_dot) if t.startswith(" ±")]
    assert marks and not any(tint for _, tint in marks)
    assert "a summary: + all &gt; 0, − all &lt; 0, ± both signs (untinted)" in summary_dot
    assert "mean 7.5" not in summary_dot and "e-18" not in summary_dot  # noise shows as 0


def test_a_summary_of_one_sign_says_which_and_is_tinted_so():
    dot = diagram("loss = sum(exp(W @ x))", {"W": np.ones((4, 3)), "x": [1.0, 2.0, 3.0]})
    assert dot.summarised is not None
    drawn = drawn_gradients(dot.summarised().dot)
    assert any(t.startswith(" + (4, 3)") and tint == 1 for t, _, tint in drawn), drawn


def test_the_one_sign_rule():
    noisy = np.array([1.0, 0.5, -7.5e-18])  # noise beside entries of order 1: not a sign
    assert sign(noisy) == 1 and mark(noisy) == "+"
    assert sign(np.array([1.0, -0.5])) == 0 and mark(np.array([1.0, -0.5])) == "±"
    assert sign(np.array([-1.0, 0.0])) == -1 and mark(np.zeros(3)) == "0"
    assert sign(-2.0) == -1 and sign(0.0) == 0 and sign(float("nan")) == 0
    assert entry_sign(-7.5e-18, 64 * 2.2e-16) == 0 and entry_sign(-1e-3, 1e-14) == -1


def test_rounding_noise_shows_as_zero_where_numbers_are_displayed():
    g = np.array([0.6875, -0.8182, 0.1307]) - np.float64(0.6875 - 0.8182 + 0.1307) / 3
    noisy = np.array([1.0, -0.5, 7.5e-18])
    assert nested(noisy, 4) == "[1, -0.5, 0]"
    assert nested(noisy) == "[1.0, -0.5, 7.5e-18]".replace("1.0", "1")  # scripts get it all
    assert shown_mean(np.array([1.0, -1.0, 7.5e-18])) == 0.0
    assert "e-18" not in format_value(np.concatenate([noisy] * 7), 4)
    assert abs(shown_mean(g)) < 1e-12
    # a summary's range too: its smallest entry is noise beside the largest
    assert "min 0 " in summary(np.concatenate([[7.5e-18], np.ones(20)]))
    # a tensor of nothing but tiny numbers is not noise: its own scale
    assert nested(np.array([1e-20, -3e-20]), 4) == "[1e-20, -3e-20]"


def test_rounding_noise_prints_as_zero_in_every_view(cli):
    # 0.1 + 0.2 - 0.3 is 5.55e-17 in floating point: noise beside the entries 1 and 2
    program = "input a = [0.1, 1, 2]\ny = a + [0.2, 0, 0] - [0.3, 0, 0]\nloss = sum(y * y)"
    from cgraph_cli.app.walkthrough import steps
    from cgraph_cli.parse import parse

    shown = [
        cli("eval", program, "--of", "y").stdout,
        cli("grad", program).stdout,
        cli("show", program).stdout,
        cli("explain", program).stdout,
        cli("explain", program, "--format", "markdown", "--math", "latex").stdout,
        cli("dot", program).stdout,
        str(steps(parse(program))),
    ]
    for text in shown:
        assert "e-17" not in text and "e-16" not in text, text
    assert "y = [0, 1, 2]" in shown[0]
    assert "5.551115123125783e-17" in cli("eval", program, "--of", "y", "--format", "json").stdout
