"""TikZ figures and LaTeX worksheets write a user's non-ASCII names as LaTeX pdfLaTeX sets:
Greek letters as math, accented letters as accents, anything else as its code point; never
``?``, never raw TeX (issue 25)."""

from __future__ import annotations

import pytest

from cgraph_cli.render.slides import tex
from cgraph_cli.render.texchars import tex_char

PROGRAM = "β = α * 2; γ = β + é"


@pytest.mark.parametrize(
    "char, latex",
    [
        ("α", r"\ensuremath{\alpha}"),
        ("ε", r"\ensuremath{\varepsilon}"),
        ("φ", r"\ensuremath{\varphi}"),
        ("Δ", r"\ensuremath{\Delta}"),
        ("Α", "A"),  # the capital alpha is an A
        ("é", r"\'{e}"),
        ("ï", r"\"{\i}"),
        ("ñ", r"\~{n}"),
        ("ç", r"\c{c}"),
        ("ß", r"\ss{}"),
        ("日", r"\texttt{U+65E5}"),
        ("ǫ", r"\texttt{U+01EB}"),  # an accent OT1 fonts lack
    ],
)
def test_each_character_has_a_latex_spelling(char, latex):
    assert tex_char(char) == latex


def test_two_names_stay_two_names():
    assert tex("日本") != tex("本日")
    assert "?" not in tex("日本 αβ é")


def test_tikz_figure_writes_greek_names_as_latex(cli, tmp_path):
    out = tmp_path / "g.tex"
    result = cli("render", PROGRAM, "α=1", "é=2", "--format", "tex", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    assert "?" not in text
    assert r"\ensuremath{\alpha}" in text and r"\ensuremath{\gamma}" in text
    assert r"\'{e}" in text
    assert not any(ord(c) > 127 for c in text)  # pdfLaTeX reads it whatever inputenc says


def test_latex_worksheet_writes_names_as_latex(cli, tmp_path):
    sheet, key = tmp_path / "w.tex", tmp_path / "k.tex"
    result = cli(
        "worksheet", PROGRAM, "α=1", "é=2", "--format", "latex", "-o", str(sheet),
        "--answers", str(key),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    for path in (sheet, key):
        text = path.read_text()
        assert "?" not in text  # no name became a question mark
        assert r"\ensuremath{\beta}" in text and r"\'{e}" in text


def test_every_greek_letter_is_written_as_latex():
    for code in range(ord("α"), ord("ω") + 1):
        assert not tex_char(chr(code)).startswith(r"\texttt"), chr(code)
    assert tex_char("λ") == r"\ensuremath{\lambda}"  # Unicode names it LAMDA


def test_markdown_math_writes_greek_names_as_commands(cli):
    result = cli(
        "explain", "β = λ * 2 + α1", "λ=1", "α1=2", "--format", "markdown", "--math", "latex"
    )
    assert result.exit_code == 0, result.stderr
    assert r"$t_{1} = \lambda \cdot 2" in result.stdout
    assert r"\frac{\partial \beta}{\partial \alpha_{1}}" in result.stdout
