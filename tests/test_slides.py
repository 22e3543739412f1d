"""TikZ (`render -o P.tex`) and Mermaid (`render -o P.mmd`): golden files for the samples (TikZ
with its coordinates masked, since they come from the installed Graphviz's layout), escaping,
and, where pdflatex is installed, a Beamer slide that compiles. Update the golden files with
`make golden`."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cgraph_cli import parse
from cgraph_cli.app.diagrams import slides
from cgraph_cli.render.slides import tex

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden_slides"
CASES = {
    "seed.mmd": ("seed.cg", {}, {}),
    "seed.tex": ("seed.cg", {}, {}),
    "neuron_dark.tex": ("neuron.cg", {}, {"theme": "dark"}),
    "neuron_tb.mmd": ("neuron.cg", {}, {"rankdir": "TB"}),
    "huber_run.mmd": ("huber.cg", {"e": 3}, {}),
    "softmax_cross_entropy.mmd": ("softmax_cross_entropy.cg", {}, {}),
    "structure.tex": ("seed.cg", {}, {"values": False}),
}


def text_of(name: str) -> str:
    sample, bindings, options = CASES[name]
    graph = parse((ROOT / "samples" / sample).read_text(), sample)
    return slides(graph, bindings, kind=name.rsplit(".", 1)[1], **options)[0]


def masked(text: str) -> str:
    """TikZ without its coordinates and sizes (Graphviz's layout), the rest as written."""
    text = re.sub(r"\((-?[\d.]+),(-?[\d.]+)\)", "(x,y)", text)
    return re.sub(r"=-?[\d.]+pt", "=#pt", text)


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_slides(name, update_golden):
    text = text_of(name)
    if name.endswith(".tex"):
        text = masked(text)
    path = GOLDEN / name
    if update_golden:
        path.write_text(text)
    assert text == path.read_text()


def test_the_seed_in_mermaid_has_its_worked_example_numbers():
    text = text_of("seed.mmd")
    for line in ["= 4", "= -12", "x\u0304 = -3", "y\u0304 = -3", "z\u0304 = 4"]:
        assert line in text
    assert text.startswith("flowchart LR\n") and text.count(" --> ") == 4


def test_tex_escapes_what_latex_would_read_as_commands():
    assert tex("a_b & 50% #1 $x$ {y} ^ ~ \\") == (
        r"a\_b \& 50\% \#1 \$x\$ \{y\} \textasciicircum{} \textasciitilde{} \textbackslash{}"
    )
    assert tex("c₂ − x·y") == r"c\textsubscript{2} \ensuremath{-} x\ensuremath{\cdot}y"


def test_render_writes_tikz_and_mermaid_by_extension(cli, tmp_path):
    for ext, start in (("tex", "% cgraph render"), ("mmd", "flowchart LR")):
        target = tmp_path / f"seed.{ext}"
        r = cli("render", "sample:seed", "-o", str(target))
        assert r.exit_code == 0, r.stderr
        assert target.read_text().startswith(start) and "wrote" in r.stderr
    r = cli("render", "sample:seed", "-T", "mmd", "-o", "-")
    assert r.exit_code == 0 and r.stdout.startswith("flowchart LR")
    r = cli("render", "sample:seed", "-o", str(tmp_path / "x.tex"), "--derivative")
    assert r.exit_code == 2 and "--derivative does not apply to TikZ output" in r.stderr


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex (texlive)")
def test_the_tikz_compiles_on_a_beamer_slide(tmp_path):
    for name in ("seed.tex", "neuron_dark.tex", "structure.tex"):
        (tmp_path / name).write_text(text_of(name))
    frames = "".join(
        f"\\begin{{frame}}\\centering\\input{{{n}}}\\end{{frame}}\n"
        for n in ("seed.tex", "neuron_dark.tex", "structure.tex")
    )
    (tmp_path / "deck.tex").write_text(
        "\\documentclass{beamer}\n\\usepackage{tikz}\n\\begin{document}\n"
        + frames
        + "\\end{document}\n"
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "deck.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "deck.pdf").read_bytes()[:5] == b"%PDF-"
