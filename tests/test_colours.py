"""Honest colours: a gradient's entries each tinted by their own sign; a summary of entries of
both signs untinted, with ± in its text; rounding noise shown as 0."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cgraph_cli.app.diagrams import diagram
from cgraph_cli.core.numfmt import format_value, nested, shown_mean

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CELL = re.compile(r'<TD ALIGN="RIGHT"( BGCOLOR="(#[0-9a-f]{6})")?>([^<]*)</TD>')


def _hue(colour: str) -> int:
    """+1 for a blue tint (the light theme's > 0), -1 for a red one (< 0)."""
    r, b = int(colour[1:3], 16), int(colour[5:7], 16)
    return 1 if b > r else -1


@pytest.mark.parametrize(
    "sample", ["mlp", "layers", "softmax_cross_entropy", "logistic_regression", "linear"]
)
def test_each_entry_of_a_gradient_is_tinted_by_its_own_sign(sample):
    dot = diagram((SAMPLES / f"{sample}.cg").read_text()).dot
    tinted = 0
    for row in re.findall(r"∂\w+/∂\w+</FONT></TD><TD ALIGN=\"RIGHT\"[^>]*>(.*?)</TD></TR>", dot):
        for _, colour, text in CELL.findall(row):
            value = float(text.strip())
            if value == 0:
                assert not colour, (sample, text)
            elif colour:
                assert _hue(colour) == np.sign(value), (sample, text, colour)
                tinted += 1
    assert tinted > 0


def test_a_summary_of_both_signs_is_untinted_and_says_so():
    dot = diagram((SAMPLES / "softmax_cross_entropy.cg").read_text(), backward=True)
    summary = dot.summarised().dot
    mixed = re.findall(r'<TD ALIGN="RIGHT"( BGCOLOR="[^"]*")?> ±\(', summary)
    assert mixed and not any(mixed)
    assert "± (untinted): a summary of entries of both signs" in summary
    assert "mean 7.5" not in summary and "e-18" not in summary  # rounding noise shows as 0


def test_rounding_noise_shows_as_zero_where_numbers_are_displayed():
    g = np.array([0.6875, -0.8182, 0.1307]) - np.float64(0.6875 - 0.8182 + 0.1307) / 3
    noisy = np.array([1.0, -0.5, 7.5e-18])
    assert nested(noisy, 4) == "[1, -0.5, 0]"
    assert nested(noisy) == "[1.0, -0.5, 7.5e-18]".replace("1.0", "1")  # scripts get it all
    assert shown_mean(np.array([1.0, -1.0, 7.5e-18])) == 0.0
    assert "e-18" not in format_value(np.concatenate([noisy] * 7), 4)
    assert abs(shown_mean(g)) < 1e-12
