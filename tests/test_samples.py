"""Every sample runs as is, with no bindings typed, and the documented ones give the documented
numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cgraph_cli import grad, parse, validate

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "samples").glob("*.cg"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_sample_runs_with_no_bindings(path, cli):
    graph = validate(parse(path.read_text(), str(path)))
    assert set(graph.defaults) == set(graph.inputs), "every input has a default"
    result = cli("grad", str(path), "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert set(json.loads(result.stdout)["gradients"]) == set(graph.inputs)


def test_there_are_samples():
    assert {"seed", "neuron", "micrograd_sanity", "micrograd_more_ops"} <= {p.stem for p in SAMPLES}


def sample(name: str):
    return grad((SAMPLES[0].parent / f"{name}.cg").read_text())


def test_micrograd_sanity_check_matches_pytorch():
    result = sample("micrograd_sanity")
    assert result.value == -20.0
    assert result.gradients == {"x": 46.0}


def test_micrograd_more_ops_matches_pytorch():
    result = sample("micrograd_more_ops")
    assert result.value == pytest.approx(24.70408163265306, rel=1e-12)
    assert result.gradients["a"] == pytest.approx(138.83381924198252, rel=1e-12)
    assert result.gradients["b"] == pytest.approx(645.5772594752186, rel=1e-12)


def test_neuron_matches_micrograd():
    result = sample("neuron")
    assert result.value == pytest.approx(0.7071, abs=1e-4)
    assert result.gradients["x1"] == pytest.approx(-1.5)
    assert result.gradients["w1"] == pytest.approx(1.0)
    assert result.gradients["w2"] == 0.0
    assert result.gradients["b"] == pytest.approx(0.5)


def _shown_program(path: Path, show: str) -> tuple[str, dict[str, str]]:
    """What `cgraph show` prints of a program, pasted back as a student would: each
    `NAME = FORMULA = VALUE` line (a call's too, after the sample's own `def`s; not the lines
    drawn inside a call's body), each named constant, in an order where names come before
    their use. Returns the program and each statement's value as shown."""
    import graphlib
    import re

    statements, shown, body = {}, {}, None
    for line in show.splitlines():
        text = line.lstrip("│├└─ ")
        indent = len(line) - len(text)
        if body is not None and indent > body:
            continue  # inside a call's body: its parameters' names, not the program's
        body = indent if re.fullmatch(r"in \w+:", text) else None
        text = text.removesuffix("  call")
        if text.endswith("  constant") and " = " in text:
            name, value = text.removesuffix("  constant").split(" = ", 1)
            statements[name] = value
        elif " = " in text and not text.endswith("  input"):
            name, rest = text.split(" = ", 1)
            statements[name], shown[name] = rest.rsplit(" = ", 1)
    words = {n: set(re.findall(r"[^\W\d]\w*", f)) & set(statements) for n, f in statements.items()}
    order = graphlib.TopologicalSorter({n: w - {n} for n, w in words.items()}).static_order()
    source = path.read_text()
    defs = "".join(re.findall(r"^def .*\n(?:[ \t]+.*\n|\n)*", source, flags=re.M))
    return defs + "\n".join(f"{n} = {statements[n]}" for n in order) + "\n", shown


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_what_show_prints_parses_back_and_gives_the_same_values(path, cli):
    import numpy as np

    from cgraph_cli import evaluate

    result = cli("show", str(path), "--no-grads", "--precision", "17", "--depth", "1000")
    assert result.exit_code == 0, result.stderr
    program, shown = _shown_program(path, result.stdout)
    assert shown, result.stdout
    pasted = parse(program)  # no c₂: a reassigned name prints as c_2
    validate(pasted)
    defaults = parse(path.read_text()).defaults  # the run's inputs: a branch may leave one out
    values = evaluate(pasted, {k: v for k, v in defaults.items() if k in pasted.inputs})
    compared = 0
    for name, text in shown.items():
        try:
            expected = np.array(json.loads(text), dtype=float)
        except ValueError:
            continue  # a large tensor, summarised
        assert np.allclose(values.named[name], expected, rtol=1e-15, atol=0), name
        compared += 1
    assert compared >= len(shown) // 2
