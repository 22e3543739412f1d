"""Non-ASCII characters as LaTeX that pdfLaTeX sets with no package beyond its defaults (UTF-8
input, OT1 fonts): Greek letters as math (``α`` is ``\\ensuremath{\\alpha}``), Latin letters
with accents as accent commands (``é`` is ``\\'{e}``), and any other character as its code
point (``日`` is ``\\texttt{U+65E5}``), so two names stay two names. Every result is one of
these fixed forms: a name never reaches TeX as TeX.

>>> tex_char("α"), tex_char("Ω"), tex_char("é"), tex_char("ß"), tex_char("日")
('\\\\ensuremath{\\\\alpha}', '\\\\ensuremath{\\\\Omega}', "\\\\'{e}", '\\\\ss{}', '\\\\texttt{U+65E5}')
"""

from __future__ import annotations

import unicodedata

# Greek letters LaTeX has a command for, by their Unicode name's last word; the capitals
# that look like Latin ones are those letters (Α is A).
_LOWER = (
    "alpha beta gamma delta zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon "
    "phi chi psi omega"
).split()
_UPPER = "Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split()
_LATIN_CAPITALS = dict(
    ALPHA="A", BETA="B", EPSILON="E", ZETA="Z", ETA="H", IOTA="I", KAPPA="K", MU="M", NU="N",
    OMICRON="O", RHO="P", TAU="T", CHI="X",
)  # fmt: skip
_VARIANTS = {
    "ε": r"\varepsilon",  # LaTeX's \epsilon is the lunate ϵ
    "ϵ": r"\epsilon",
    "φ": r"\varphi",  # and its \phi is the stroked ϕ
    "ϕ": r"\phi",
    "ϑ": r"\vartheta",
    "ς": r"\varsigma",
    "ϖ": r"\varpi",
    "ϱ": r"\varrho",
    "ο": "o",
    "µ": r"\mu",  # the micro sign, as it is typed on many keyboards
}
# Accents pdfLaTeX's default (OT1) fonts have, by their combining character.
_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0327": "c",
}
_LETTERS = {
    "ß": r"\ss{}",
    "æ": r"\ae{}",
    "Æ": r"\AE{}",
    "œ": r"\oe{}",
    "Œ": r"\OE{}",
    "ø": r"\o{}",
    "Ø": r"\O{}",
    "ł": r"\l{}",
    "Ł": r"\L{}",
    "ı": r"\i{}",
}


def tex_char(c: str) -> str:
    """One non-ASCII character as LaTeX text (see the module's text)."""
    greek = _greek(c)
    if greek is not None:
        return greek if greek.isascii() and greek.isalpha() else rf"\ensuremath{{{greek}}}"
    if c in _LETTERS:
        return _LETTERS[c]
    accented = _accented(c)
    if accented is not None:
        return accented
    return rf"\texttt{{U+{ord(c):04X}}}"


def greek_command(c: str) -> str | None:
    """A Greek letter as LaTeX math writes it (``\\alpha``; ``A`` for a capital alpha), else
    None.

    >>> greek_command("λ"), greek_command("x")
    ('\\\\lambda', None)
    """
    return _greek(c)


def _greek(c: str) -> str | None:
    if c in _VARIANTS:
        return _VARIANTS[c]
    name = unicodedata.name(c, "").replace("LAMDA", "LAMBDA")  # Unicode spells it so
    small, capital = "GREEK SMALL LETTER ", "GREEK CAPITAL LETTER "
    if name.startswith(small) and name[len(small) :].lower() in _LOWER:
        return "\\" + name[len(small) :].lower()
    if name.startswith(capital):
        word = name[len(capital) :]
        if word.title() in _UPPER:
            return "\\" + word.title()
        return _LATIN_CAPITALS.get(word)
    return None


def _accented(c: str) -> str | None:
    """``é`` as ``\\'{e}``; None unless ``c`` is an ASCII letter with accents LaTeX has."""
    parts = unicodedata.normalize("NFD", c)
    base, marks = parts[0], parts[1:]
    if not (base.isascii() and base.isalpha()) or not marks:
        return None
    if any(m not in _ACCENTS for m in marks):
        return None
    text = {"i": r"\i", "j": r"\j"}.get(base, base)  # the dotless i under an accent
    for mark in marks:
        text = f"\\{_ACCENTS[mark]}{{{text}}}"
    return text
