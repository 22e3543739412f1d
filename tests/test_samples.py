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
