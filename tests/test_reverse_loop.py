"""The scalar reverse loop (run/vjp.py's float loop, its steps made per op and per which
arguments need a gradient) against the array reverse pass that tensors take, node by node:
constant arguments (no adjoint, nothing computed for them), inputs and nodes not asked for,
unary ops at the edges of their domains, and random programs; the same error at the same
node where a gradient is undefined."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from strategies import INPUTS, points, programs

from cgraph_cli import DomainError, grad, jvp, parse
from cgraph_cli.core.walks import depends_on_input
from cgraph_cli.run.evaluate import forward
from cgraph_cli.run.vjp import vjp, vjp_arrays

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _both(graph, values, of=None):
    """The float loop's adjoints and the array pass's (as floats), or each one's error."""
    out = []
    for run in (lambda: vjp(graph, values, of), lambda: _arrays(graph, values, of)):
        try:
            out.append(run())
        except DomainError as e:
            out.append((str(e), e.span, e.hints))
    return out


def _arrays(graph, values, of):
    return [float(a) for a in vjp_arrays(graph, [np.float64(v) for v in values], of)]


CASES = [
    # constant arguments, on either side of each kind of op
    ("y = x * 3 + 2 - x / 4 + 2 ^ x - (1 - x) + -x + sin(2) * x", {"x": 0.7}),
    ("y = 3 * x - x * 0.5 + 4 / x + x ^ 3 + (2 - 5) * x", {"x": -1.5}),
    ("y = max(x, 2) + min(1, x) + xlogy(x, 3) + xlogy(2, x) + pow(x, 3) + pow(3, x)", {"x": 0.25}),
    ("y = softplus(x) + sigmoid(x) * 2 + erf(x) + stop_gradient(x) * x", {"x": -0.5}),
    # two inputs, one of them reaching the output through a constant-free path only
    ("p = x * y; q = p + 1; r = q * 2 - y", {"x": 1.0, "y": 2.0}),
    ("y = x ^ 2 + 2 ^ z + 3 / z - z + x * x", {"x": -1.5, "z": 2.0}),
    # comparisons pass no gradient; where takes the wide loop (its steps read as the others)
    ("y = (x > 0) * x + where(x > 1, x * x, 3) + abs(x - 1)", {"x": 0.5}),
    ("y = where(x > 0, 2 * x, 1 - x) + (3 + x) * (2 / x) - 2 ^ x", {"x": 0.5}),
    # unary ops at the edges of their domains, the gradient zero or not
    ("y = 0 * sqrt(x) + x", {"x": 0.0}),
    ("y = sqrt(x) * 0 + log(1 + x)", {"x": 0.0}),
    ("y = relu(x) + abs(x) + tanh(x) + exp(x)", {"x": 0.0}),
    ("y = sqrt(x + 0)", {"x": 0.0}),
    ("y = 2 * tan(x) + sqrt(x)", {"x": 0.0}),
    ("y = 2 * xlogy(x, x)", {"x": 0.0}),
    ("y = x ^ 0.5 + 1", {"x": 0.0}),
    ("y = x ^ 2", {"x": -3.0}),  # pow's partial in its exponent, a log, is never computed
    ("y = (-2) ^ x", {"x": 2.0}),
    # a gradient that overflows though every partial is finite
    ("y = (x * 1e200 + x) * 1e200 + 0 * sqrt(x - 1e-300)", {"x": 1e-300}),
]


@pytest.mark.parametrize(("program", "bindings"), CASES)
def test_the_float_loop_gives_the_array_passes_adjoints_at_every_node(program, bindings):
    graph = parse(program)
    try:
        values = forward(graph, bindings)
    except DomainError:
        pytest.skip("the forward pass fails")
    for of in (None, *range(len(graph.ops))):
        floats, arrays = _both(graph, values, of)
        assert floats == arrays, (program, of)


@pytest.mark.parametrize(("program", "bindings"), CASES)
def test_forward_mode_reads_the_same_steps_and_agrees(program, bindings):
    graph = parse(program)
    try:
        values = forward(graph, bindings)
        adjoints = vjp(graph, values)
    except DomainError:
        return
    for name, node in graph.inputs.items():
        tangent = jvp(graph, values, {name: 1.0})[graph.output]
        assert tangent == pytest.approx(adjoints[node], rel=1e-12), (program, name)


def test_constants_and_what_no_input_reaches_get_no_adjoint():
    graph = parse("c = 2 * 3\ny = x * c + c - x * 0.5")
    adjoints = vjp(graph, forward(graph, {"x": 1.0}))
    assert adjoints[graph.inputs["x"]] == 5.5
    assert [a for a, d in zip(adjoints, depends_on_input(graph)) if not d] == [
        0.0
    ] * 4  # 2, 3, 2 * 3, 0.5


def test_an_undefined_slope_is_reported_at_its_node_as_before():
    with pytest.raises(DomainError) as info:
        grad("y = sqrt(x) + 1", {"x": 0.0})
    assert info.value.message == "the derivative of sqrt(0) is undefined or infinite"
    assert str(info.value).startswith("<expr>:1:5: error:")
    with pytest.raises(DomainError) as info:
        grad("y = 3 * x ^ 0.5", {"x": 0.0})
    assert info.value.message == "the derivative of 0 ^ 0.5 is undefined or infinite"
    # met by a zero gradient, it contributes nothing (as in the array pass)
    assert grad("y = 0 * sqrt(x) + x", {"x": 0.0}).gradients == {"x": 1.0}


@pytest.mark.parametrize(
    ("program", "where"),
    [("y = x * 1e200 * 1e200", "x * 1e200"), ("y = 1e200 * (1e200 * x)", "1e200 * x")],
)
def test_an_overflowing_gradient_is_reported_as_before(program, where):
    with pytest.raises(DomainError) as info:
        grad(program, {"x": 1e-300})
    assert (
        info.value.message
        == f"the gradient through {where} overflows: it is too large for a float64"
    )
    assert info.value.hints == ("the gradient with respect to x exceeds about 1.8e308",)


def test_a_chain_of_a_million_nodes_needs_no_recursion():
    graph = parse("v = x\n" + "v = v * 1 + 0.5\n" * 250_000 + "v = sin(v) * y")
    assert len(graph.ops) > 1_000_000
    result = grad(graph, {"x": 0.5, "y": 2.0})
    assert result.gradients["y"] == pytest.approx(math.sin(0.5 + 125_000))
    assert result.gradients["x"] == pytest.approx(2 * math.cos(0.5 + 125_000))


@PROPERTY
@given(programs(), points)
def test_random_programs_give_the_array_passes_adjoints_and_errors(program, point):
    graph = parse(program)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    try:
        values = forward(graph, bindings)
    except DomainError:
        assume(False)
    floats, arrays = _both(graph, values)
    if isinstance(floats, tuple) or isinstance(arrays, tuple):
        assert floats == arrays, program
        return
    # both passes add the same terms, each node passing its arguments their parts in turn
    assert floats == pytest.approx(arrays, rel=1e-12, abs=1e-300, nan_ok=True), program
