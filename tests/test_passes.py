"""Forward and reverse passes: the worked example, fan-out, bindings, and evaluation errors."""

from __future__ import annotations

import math

import pytest

from cgraph_cli import BindingError, DomainError, evaluate, grad, jvp, parse, validate, vjp
from cgraph_cli.run.evaluate import forward


def test_worked_example():
    graph = validate(parse("p = x + y\ng = p * z"))
    result = grad(graph, {"x": 1, "y": 3, "z": -3})
    assert result.named == {"x": 1.0, "y": 3.0, "z": -3.0, "p": 4.0, "g": -12.0}
    assert result.value == -12.0
    assert result.gradients == {"x": -3.0, "y": -3.0, "z": 4.0}
    assert result.wrt("p") == -3.0  # the adjoint of an intermediate: ∂g/∂p = z


def test_fan_out_sums_over_paths():
    assert grad("y = x * x", {"x": 3}).gradients == {"x": 6.0}
    assert grad("y = x * x + sin(x) + x", {"x": 3}).gradients["x"] == pytest.approx(
        2 * 3 + math.cos(3) + 1
    )


def test_gradient_of_a_chosen_output():
    result = grad("p = x + y\ng = p * z", {"x": 1, "y": 3, "z": -3}, of="p")
    assert (result.value, result.gradients) == (4.0, {"x": 1.0, "y": 1.0, "z": 0.0})


def test_gradient_of_an_input_is_one_hot():
    assert grad("y = x * 2", {"x": 1}, of="x").gradients == {"x": 1.0}


def test_graph_is_reusable_with_new_bindings():
    graph = parse("g = x * y")
    assert grad(graph, {"x": 2, "y": 5}).gradients == {"x": 5.0, "y": 2.0}
    assert grad(graph, {"x": 7, "y": 1}).gradients == {"x": 1.0, "y": 7.0}


def test_jvp_matches_vjp_on_a_program():
    graph = parse("h = tanh(w1 * x1 + w2 * x2 + b) ^ 2 / (1 + exp(-b))")
    bindings = {"w1": 0.3, "x1": -1.2, "w2": 0.8, "x2": 0.5, "b": 0.1}
    values = forward(graph, bindings)
    adjoints = vjp(graph, values)
    for name, node in graph.inputs.items():
        assert jvp(graph, values, {name: 1.0})[graph.output] == pytest.approx(adjoints[node])


def test_bindings_beat_defaults():
    graph = parse("input x = 1, y = 2\ng = x * y")
    assert evaluate(graph).value == 2.0
    assert evaluate(graph, {"x": 10}).value == 20.0


def test_missing_bindings_are_all_listed():
    with pytest.raises(BindingError) as info:
        evaluate("g = (x + y) * z", {"y": 1})
    err = info.value
    assert err.exit_code == 4
    assert err.message == "no values for inputs 'x', 'z'"
    assert err.where() == "<expr>:1:6"
    assert "x=VALUE z=VALUE" in err.hints[0]


def test_unknown_binding_suggests_the_nearest_input():
    with pytest.raises(BindingError) as info:
        evaluate("g = alpha * x", {"alpah": 1, "x": 2})
    assert info.value.message == "the program has no input named 'alpah'"
    assert "did you mean 'alpha'?" in info.value.hints


def test_binding_a_computed_name_is_refused():
    with pytest.raises(BindingError, match="'p' is computed by the program"):
        evaluate("p = x + 1\ng = p * 2", {"x": 1, "p": 3})


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "abc", "", None, float("nan")])
def test_binding_must_be_a_finite_number(bad):
    with pytest.raises(BindingError, match="'x'"):
        evaluate("g = x + 1", {"x": bad})


@pytest.mark.parametrize(
    "program, bindings, message, where",
    [
        ("g = log(x)", {"x": -1}, "log(-1) is undefined: log needs a positive argument", "1:5"),
        ("g = log(x)", {"x": 0}, "log(0) is undefined", "1:5"),
        ("g = sqrt(x)", {"x": -4}, "sqrt(-4) is undefined: sqrt needs a non-negative", "1:5"),
        ("g = 1 / x", {"x": 0}, "1 / 0 is undefined: the divisor must not be 0", "1:5"),
        ("g = x / x", {"x": 0}, "0 / 0 is undefined", "1:5"),
        ("p = 1\ng = x ^ (1/3)", {"x": -8}, "(-8) ^ 0.3333333333333333 is undefined", "2:5"),
        ("g = x ^ -1", {"x": 0}, "0 ^ (-1) is undefined", "1:5"),
        ("g = exp(x)", {"x": 1000}, "exp(1000) overflows", "1:5"),
        ("g = x * 10", {"x": 1e308}, "1e308 * 10 overflows", "1:5"),
        ("g = x ^ 2", {"x": 1e200}, "1e200 ^ 2 overflows", "1:5"),
    ],
)
def test_domain_errors_name_the_node_and_the_values(program, bindings, message, where):
    with pytest.raises(DomainError) as info:
        evaluate(program, bindings)
    err = info.value
    assert message in err.message
    assert err.where() == f"<expr>:{where}"
    assert err.exit_code == 4


def test_infinite_slope_is_an_error_in_the_reverse_pass_only():
    assert evaluate("g = sqrt(x)", {"x": 0}).value == 0.0
    with pytest.raises(DomainError, match="derivative of sqrt\\(0\\)"):
        grad("g = sqrt(x)", {"x": 0})


def test_nodes_that_do_not_reach_the_output_are_not_differentiated():
    # sqrt(0) has an infinite slope, but nothing flows back through it to g
    result = grad("a = sqrt(x)\ng = y * 2", {"x": 0, "y": 1})
    assert result.gradients == {"x": 0.0, "y": 2.0}


def test_no_recursion_limit_on_the_worked_example_style_chain():
    n = 3000
    program = "\n".join(["v = x"] + ["v = v * 1.0001 + 0.5"] * n)
    result = grad(program, {"x": 1})
    assert result.gradients["x"] == pytest.approx(1.0001**n)
