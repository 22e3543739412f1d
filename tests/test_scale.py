"""Depth costs no recursion: long chains and deep nesting parse, evaluate, differentiate, print."""

from __future__ import annotations

import sys

import pytest

from cgraph_cli import evaluate, grad, parse, to_source, validate


@pytest.fixture
def low_recursion_limit():
    # Anything recursive on depth would fail far below the sizes used here.
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    yield
    sys.setrecursionlimit(old)


def test_hundred_thousand_statement_chain(low_recursion_limit):
    n = 100_000
    program = "v = x\n" + "\n".join(["v = v * 0.99999 + 0.001"] * n)
    graph = validate(parse(program))
    assert len(graph) == 1 + 4 * n
    result = grad(graph, {"x": 1.0})
    assert result.gradients["x"] == pytest.approx(0.99999**n, rel=1e-9)
    expected = 1.0
    for _ in range(n):
        expected = expected * 0.99999 + 0.001
    assert result.value == pytest.approx(expected, rel=1e-12)


def test_five_thousand_nested_parentheses(low_recursion_limit):
    depth = 5_000
    assert evaluate("g = " + "(" * depth + "x" + ")" * depth, {"x": 2}).value == 2.0
    nested = "g = " + "(x + " * depth + "x" + ")" * depth
    graph = validate(parse(nested))
    assert grad(graph, {"x": 2}).gradients == {"x": depth + 1.0}
    # printing a right-nested expression of that depth is iterative too
    assert to_source(graph).count("(") == depth - 1
    assert [str(n) for n in parse(to_source(graph))] == [str(n) for n in graph]


def test_deep_unary_nesting(low_recursion_limit):
    depth = 5_000
    program = "g = " + "sin(" * depth + "x" + ")" * depth
    result = grad(program, {"x": 0.1})
    assert 0 < result.gradients["x"] < 1
    assert evaluate("g = " + "-" * depth + "x", {"x": 1}).value == 1.0
