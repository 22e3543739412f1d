"""The optimizer at the edges of the float range: gathering constants, powers of powers and
the derivative programs keep the value wherever the original evaluates, underflow,
subnormals and overflow included (issue 25)."""

from __future__ import annotations

import pytest

from cgraph_cli import parse
from cgraph_cli.passes.optimize import optimize
from cgraph_cli.run.evaluate import forward


def _value(graph, **bindings):
    return forward(graph, bindings)[graph.output]


@pytest.mark.parametrize(
    "program, x",
    [
        ("y = 1e-200 * (1e-200 * x)", 1e300),  # the product 1e-400 underflows to 0
        ("y = 1e200 * (1e-200 * x)", 1e-300),  # 1e-200 * x underflows in the original
        ("y = 3 * (1e-320 * x)", 1e10),  # a subnormal product has lost digits
        ("y = 0.5 * (3 * x)", 1e307),  # 3 * x at 1e308 overflows in the original
        ("y = x * 1e-200 * 1e-200", 1e300),
    ],
)
def test_constants_are_gathered_only_where_that_keeps_the_value(program, x):
    graph = parse(program)
    optimized = optimize(graph).graph
    assert _value(optimized, x=x) == pytest.approx(_value(graph, x=x), rel=1e-15)


def test_the_underflowing_product_is_not_gathered(cli):
    result = cli("optimize", "y = 1e-200 * (1e-200 * x)")
    assert result.exit_code == 0
    assert result.stdout.startswith("y = 1e-200 * (1e-200 * x)\n")
    assert cli("eval", "y = 1e-200 * (1e-200 * x)", "x=1e300").stdout == "y = 1e-100\n"


def test_an_overflow_the_original_reports_is_not_hidden(cli):
    # 3 * 1e308 overflows: exit 4; gathered as 1.5 * x it would print 1.5e308.
    original = cli("eval", "y = 0.5 * (3 * x)", "x=1e308")
    assert original.exit_code == 4
    optimized = cli("optimize", "y = 0.5 * (3 * x)").stdout.splitlines()[0]
    assert cli("eval", optimized, "x=1e308").exit_code == 4


def test_small_factors_are_still_gathered(cli):
    assert cli("optimize", "y = 2 * (3 * x)").stdout.startswith("y = 6 * x\n")
    assert cli("optimize", "y = x * 2 * 3").stdout.startswith("y = 6 * x\n")


def test_derivative_programs_gather_the_same_way(cli):
    # d/dx of 1e200 * (1e-200 * x * x) at x = 1e-150: the original's gradient is 0.
    program = "y = 1e200 * (1e-200 * (x * x))"
    grad = cli("grad", program, "x=1e-150", "--format", "json")
    assert grad.exit_code == 0, grad.stderr
    diff = cli("diff", program)
    assert diff.exit_code == 0
    assert "1e284" not in diff.stdout and "1e+284" not in diff.stdout


@pytest.mark.parametrize(
    "program, x",
    [("y = (x ^ -1) ^ -1", 1e-310), ("y = (x ^ -2) ^ -3", 1e-160), ("y = (x ^ 2) ^ -1", 1e-160)],
)
def test_powers_of_powers_with_a_negative_power_stay_apart(cli, program, x):
    assert cli("eval", program, f"x={x}").exit_code == 4  # the inner power overflows
    optimized = cli("optimize", program).stdout.splitlines()[0]
    assert cli("eval", optimized, f"x={x}").exit_code == 4, optimized
    assert cli("optimize", "y = (x ^ 2) ^ 3").stdout.startswith("y = x ^ 6\n")


def test_pow_at_0_0_has_the_gradient_the_readme_promises(cli):
    """README: x ^ y at x = y = 0 gives ∂/∂x = 0 (and ∂/∂y = 0, as at every x = 0), as
    torch.pow: the interpreter, the derivative program and a compiled module agree."""
    grad = cli("grad", "z = x ^ y", "x=0", "y=0", "--format", "json")
    assert grad.exit_code == 0, grad.stderr
    diff = cli("diff", "z = x ^ y")
    assert diff.exit_code == 0
    values = cli("eval", diff.stdout, "x=0", "y=0", "--all", "--format", "plain")
    assert values.exit_code == 0, values.stderr
    assert "dz_dx=0\n" in values.stdout and "dz_dy=0\n" in values.stdout
    assert cli("grad", "z = x ^ y", "x=2", "y=3", "--format", "plain").exit_code == 0
    namespace: dict = {}
    exec(cli("compile", "z = x ^ y").stdout, namespace)
    assert namespace["grad"](x=0.0, y=0.0) == (1.0, {"x": 0.0, "y": 0.0})
    assert namespace["grad"](x=2.0, y=3.0)[1]["x"] == 12.0
