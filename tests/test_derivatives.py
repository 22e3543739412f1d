"""Differentiation as a graph transform, proven: derivative programs print, read back and
evaluate to the numbers ``grad`` gives; Hessians equal SymPy's and finite differences of the
gradient; forward and reverse mode are adjoint; Jacobians agree in both modes; derivative
programs read as a textbook writes them."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import (
    BINARY_FUNCTIONS,
    COMPARISONS,
    INFIX,
    INPUTS,
    LOGICAL,
    MORE_FUNCTIONS,
    TENSOR_BINARY,
    TENSOR_LEAVES,
    TENSOR_SHAPES,
    TENSOR_TERNARY,
    TENSOR_UNARY,
    UNARY,
    expressions,
    points,
    programs,
    tensor_expressions,
    tensor_template,
)
from test_properties import _at_kink, _evaluate, _to_sympy

from cgraph_cli import (
    DomainError,
    derivative_program,
    grad,
    jvp,
    parse,
    tangent_program,
    to_source,
    validate,
)
from cgraph_cli.core.autodiff import reverse
from cgraph_cli.core.interpret import ARRAYS
from cgraph_cli.core.ops import OPS
from cgraph_cli.core.walks import depends_on_input
from cgraph_cli.passes.grad_graph import grad_graph
from cgraph_cli.passes.jvp_graph import jvp_graph
from cgraph_cli.run.evaluate import forward
from cgraph_cli.run.higher import hessian, jacobian

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "samples").glob("*.cg"))
PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TENSOR_PROPERTY = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _random(shape, rng):
    return rng.uniform(-2.0, 2.0, shape) if shape else float(rng.uniform(-2.0, 2.0))


def _tensor_point(graph, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {n: _random(TENSOR_SHAPES[n], rng) for n in graph.inputs}


def _round_trip(graph, bindings, shapes=None):
    """The derivative program: validated, printed, read back (a fixed point of printing),
    evaluated at ``bindings``; its gradients by input. None where the program is undefined
    in a derivative statement only (see test_a_zero_gradient_times_an_undefined_term...)."""
    derived = grad_graph(graph, shapes=shapes)
    text = to_source(validate(derived.graph))
    again = validate(parse(text))
    assert to_source(again) == text, text
    try:
        values = forward(again, bindings)
    except DomainError as e:
        line = text.splitlines()[text[: e.span.start].count("\n")]
        assert line.startswith("d"), (text, e.render())  # the forward part is defined
        return None
    return {name: values[again.names[holder]] for name, holder in derived.gradients.items()}


# --- round trips -------------------------------------------------------------------------------
@PROPERTY
@given(programs(conditions=True), points)
def test_derivative_programs_read_back_and_evaluate_to_the_gradient(program, point):
    graph = parse(program)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    try:
        expected = grad(graph, bindings).gradients
    except DomainError:
        assume(False)
    got = _round_trip(graph, bindings)
    assume(got is not None)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), (program, name)


@TENSOR_PROPERTY
@given(
    tensor_expressions(),
    tensor_expressions(names=(*TENSOR_SHAPES, "h")),
    st.sampled_from(["sum", "mean", "logsumexp"]),
    st.integers(0, 10**6),
)
def test_tensor_derivative_programs_read_back_and_evaluate_to_the_gradient(
    first, second, reduce, seed
):
    program = f"h = {first}\ny = {reduce}({second} * h)"
    graph = parse(program)
    bindings = _tensor_point(graph, seed)
    expected = grad(graph, bindings).gradients
    got = _round_trip(graph, bindings, {n: TENSOR_SHAPES[n] for n in graph.inputs})
    assert got is not None, program
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-12, atol=1e-12, err_msg=program)


def test_the_random_programs_hold_every_op_of_the_table():
    """tests/strategies.py draws every op, so that the properties here cover it: the scalar
    functions and operators from the table, tensor ops from its templates (a new op's made
    from its entry, see the next test)."""
    scalar = (
        [f"y = {f}(x)" for f in UNARY]
        + [f"y = {f}(x, y)" for f in BINARY_FUNCTIONS]
        + [f"y = {f}({', '.join(['x'] * OPS[f].arity)})" for f in MORE_FUNCTIONS]
        + [f"y = x {o} y" for o in INFIX + COMPARISONS + LOGICAL]
        + [
            "y = -x",
            "y = not x",
            "y = where(x, y, z)",
        ]  # as expressions(conditions=True) writes them
    )
    tensor = [f"y = {t}" for t in TENSOR_LEAVES] + [
        "y = " + t.format("A", "r", "c", "s") for t in TENSOR_UNARY + TENSOR_BINARY + TENSOR_TERNARY
    ]
    every = {op.name for op in OPS.values() if op.arity and not op.surrogate}
    drawn = {op.name for p in scalar for op in parse(p).ops}
    assert drawn >= {n for n in every if OPS[n].py is not None}, sorted(
        {n for n in every if OPS[n].py is not None} - drawn
    )
    drawn = {op.name for p in tensor for op in parse(p).ops}
    assert drawn >= every, sorted(every - drawn)


@pytest.mark.parametrize("op", [op for op in OPS.values() if op.arity], ids=lambda op: op.name)
def test_the_template_an_entry_gives_is_sound_in_random_programs(op):
    """An op that no template of tests/strategies.py writes (a new one) joins the random tensor
    programs with the template its entry gives: tried here for every op, as for a new one."""
    template = tensor_template(op)
    assert template is not None, f"{op.name}: write a template for it in tests/strategies.py"
    first, second = template.format("A", "r", "c", "s"), template.format("c", "s", "A", "r")
    graph = parse(f"h = {first}\ny = sum({second} * h)")
    assert op in graph.ops, (op.name, template)
    for seed in range(3):
        bindings = _tensor_point(graph, seed)
        expected = grad(graph, bindings).gradients  # no DomainError: the arguments are squashed
        got = _round_trip(graph, bindings, {n: TENSOR_SHAPES[n] for n in graph.inputs})
        assert got is not None, (op.name, template)
        for name, value in expected.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-12, atol=1e-12, err_msg=op.name)


def test_the_output_itself_an_input_has_derivative_1():
    derived = grad_graph(parse("t0 = x"))
    assert to_source(derived.graph) == "t0 = x\ndt0_dx = 1\n"
    assert grad("t0 = x", {"x": 2}).gradients == {"x": 1.0}


def test_the_derivative_of_a_chosen_value_names_that_value():
    derived = grad_graph(parse("p = x + y; g = p * z"), output=2, wrt=["x"])
    assert (derived.output, derived.gradients) == ("p", {"x": "dp_dx"})
    assert to_source(derived.graph).endswith("dp_dx = 1\n")


def test_an_input_assigned_again_is_differentiated_as_the_input():
    graph = parse("input x = 2\nx = x * 3\ny = x ^ 2")
    assert _round_trip(graph, {"x": 1.5}) == grad(graph, {"x": 1.5}).gradients == {"x": 27.0}
    assert hessian(graph, {"x": 1.5})["hessian"] == [[18.0]]  # y = 9·x², not 2·(3x)
    assert _program("input x = 2\nx = x * 3\ny = x ^ 2", 2).endswith("d2y_dx2 = 18\n")


def test_names_assigned_again_give_names_a_program_can_read():
    text = to_source(grad_graph(parse("c = a * 2; c = c * c + a; g = c * c")).graph)
    assert "dg_dc_2 = 2 * c_2" not in text  # the output's reader: written inline
    assert "dg_dc = " in text and "₂" not in text
    assert validate(parse(text))


def test_a_sum_down_to_a_number_is_written_sum():
    text = to_source(grad_graph(parse("y = sum(A + s)"), shapes={"A": (2, 3), "s": ()}).graph)
    assert text.endswith("dy_ds = sum(dy_dA)\n")  # sum_to(dy_dA, []) does not parse


def test_comparisons_of_comparisons_keep_their_parentheses():
    for text in ("t = (x < y) < z\n", "t = x < (y < z)\n", "t = (x == y) != (y >= z)\n"):
        assert to_source(parse(text)) == text


def test_forward_mode_through_a_comparison_on_tensors(cli):
    # A comparison's tangent is zero (no node): it used to be an internal error (exit 70).
    result = cli("jvp", "y = sum((x > 0) + x)", "x=[1, 2]", "--tangent", "x=[1, 1]")
    assert result.exit_code == 0, result.stderr
    assert hessian(parse("y = sum((x > 0) * x ^ 2)"), {"x": [1.0, 2.0]})["hessian"] == [
        [2.0, 0.0],
        [0.0, 2.0],
    ]


def test_a_zero_gradient_times_an_undefined_term_is_undefined_in_the_program():
    """`grad` skips a node no gradient flows back to; a derivative program computes every
    term. Here max picks x, so z ^ x gets no gradient, and xlogy(z ^ x, z) (its slope in x)
    is undefined for z < 0: `grad` says 1, the program says where it is undefined."""
    graph = parse("t0 = z ^ x\nt1 = max(x, t0)")
    assert grad(graph, {"x": 1.0, "z": -1.0}).gradients == {"z": 0.0, "x": 1.0}
    derived = grad_graph(graph)
    with pytest.raises(DomainError, match="xlogy"):
        forward(derived.graph, {"x": 1.0, "z": -1.0})


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_diff_piped_into_eval_gives_what_grad_gives(cli, path):
    name = f"sample:{path.stem}"
    diff = cli("diff", name, "--format", "json")
    assert diff.exit_code == 0, diff.stderr
    report = json.loads(diff.stdout)
    evaluated = cli("eval", "-", "--all", "--format", "json", input=report["program"])
    assert evaluated.exit_code == 0, evaluated.stderr
    values = json.loads(evaluated.stdout)["values"]
    expected = json.loads(cli("grad", name, "--format", "json").stdout)["gradients"]
    assert report["gradients"].keys() == expected.keys()
    for name, holder in report["gradients"].items():
        np.testing.assert_allclose(values[holder], expected[name], rtol=1e-12, atol=1e-15)


# --- Hessians ------------------------------------------------------------------------------------
def test_a_power_whose_exponent_is_0_has_the_right_second_derivatives():
    """pow's slope in its base, y·x^(y-1), is set to 0 only at 0^0: masked wherever y = 0, its
    derivative in y there was lost (∂²(x^y)/∂x∂y = 1/x at y = 0, not 0)."""
    report = hessian(parse("f = x ^ y"), {"x": 2.0, "y": 0.0})
    assert report["hessian"] == [[0.0, 0.5], [0.5, pytest.approx(np.log(2) ** 2)]]
    assert hessian(parse("f = x ^ (x - y)"), {"x": 1.0, "y": 1.0})["hessian"] == [
        [2.0, -1.0],
        [-1.0, 0.0],
    ]
    assert grad("f = x ^ y", {"x": 0.0, "y": 2.0}).gradients["x"] == 0.0
    assert grad("f = x ^ y", {"x": 0.0, "y": 1.0}).gradients["x"] == 1.0


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(max_leaves=5, conditions=True), points)
def test_hessians_match_sympy(expression, point):
    graph = parse(f"out = {expression}")
    assume(graph.inputs)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None)
    values, _ = done
    assume(not _at_kink(graph, values) and all(abs(v) < 1e8 for v in values))
    names = list(graph.inputs)
    symbols = [sympy.Symbol(n, real=True) for n in names]
    at = {s: sympy.Float(bindings[n], 30) for s, n in zip(symbols, names)}
    exact = sympy.hessian(_to_sympy(graph, dict(zip(names, symbols))), symbols).evalf(30, subs=at)
    # A number, finite and not huge: where SymPy's reference of and/or/not (|sign(a)|) meets
    # a = 0, its second derivative is DiracDelta(0), no number, and comparing it raised.
    assume(all(e.is_Number and e.is_real and e.is_finite and abs(e) < 1e8 for e in exact))
    report = hessian(graph, bindings)
    program = derivative_program(graph, bindings, order=2)
    again = parse(to_source(program.graph))
    try:
        program_values = forward(again, bindings)
    except DomainError:
        # A known limit of derivative programs: a partial that is undefined where the gradient
        # it multiplies is 0 (log(b) for xlogy(0, b) at b = 0, as in 0 ^ x with a base that a
        # comparison makes 0) is computed all the same; the interpreter's reverse pass skips it.
        assume(False)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            want = pytest.approx(float(exact[i, j]), rel=1e-9, abs=1e-12)
            assert report["hessian"][i][j] == want, (expression, a, b)
            holder = program.derivatives[(a, b) if i <= j else (b, a)]  # mixed ones once
            assert program_values[again.names[holder]] == want, (expression, a, b)


def _pieces(graph, values) -> tuple:
    """Which smooth piece of the program a point is on: the sign of each kink (relu, abs, max,
    min), each comparison and sign's argument, where's choice, and which elements max(x) and
    min(x) pick. Finite differences mean something only within one piece."""
    signs = []
    with np.errstate(all="ignore"):
        for i, op in enumerate(graph.ops):
            args = [values[a] for a in graph.args[i]]
            if op.kink is not None:
                quantity = op.kink(ARRAYS, *args)
            elif op.name in ("lt", "le", "gt", "ge", "eq", "ne"):
                quantity = np.subtract(*args)
            elif op.name in ("sign", "where"):
                quantity = args[0]
            elif op.name in ("amax", "amin"):
                quantity = np.equal(args[0], values[i])
            else:
                continue
            signs.extend(np.sign(np.ravel(quantity).astype(float)).tolist())
    return tuple(signs)


def _same_piece(graph, point, *shifted) -> bool:
    base = _pieces(graph, forward(graph, point))
    return all(_pieces(graph, forward(graph, p)) == base for p in shifted)


def _difference_of_the_gradient(graph, point, v, h) -> dict | None:
    """(∇f(x + h·v) - ∇f(x - h·v)) / 2h by input; None where a step leaves x's smooth piece."""
    up, down = ({n: point[n] + s * v[n] for n in point} for s in (h, -h))
    if not _same_piece(graph, point, up, down):
        return None
    g_up, g_down = grad(graph, up).gradients, grad(graph, down).gradients
    return {n: (np.asarray(g_up[n]) - np.asarray(g_down[n])) / (2 * h) for n in point}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tensor_expressions(), st.sampled_from(["sum", "mean", "logsumexp"]), st.integers(0, 10**6))
def test_hessian_vector_products_match_differences_of_the_gradient(expr, reduce, seed):
    graph = parse(f"y = {reduce}({expr} * A)")  # A: never a program linear in everything
    point = _tensor_point(graph, seed)
    v = _tensor_point(graph, seed + 1)
    coarse, fine = (_difference_of_the_gradient(graph, point, v, h) for h in (2e-5, 1e-5))
    assume(coarse is not None and fine is not None)
    # Where the curvature changes too fast for a step of 1e-5, the differences disagree.
    assume(all(np.allclose(coarse[n], fine[n], rtol=1e-6, atol=1e-7) for n in fine))
    hvp = hessian(graph, point, vector=v)["hvp"]
    for n in graph.inputs:
        np.testing.assert_allclose(hvp[n], fine[n], rtol=1e-5, atol=1e-6, err_msg=expr)


def test_the_tensor_hessian_is_symmetric_and_holds_the_hessian_vector_products():
    graph = parse("y = logsumexp(tanh(transpose(A) @ A)[0] * r) + sum(c * A) * s ^ 2")
    point = _tensor_point(graph, 7)
    report = hessian(graph, point)
    full = np.array(report["hessian"])
    assert full.shape == (6 + 3 + 2 + 1,) * 2
    assert report["labels"][:2] == ["A[0, 0]", "A[0, 1]"] and report["labels"][-1] == "s"
    np.testing.assert_allclose(full, full.T, rtol=1e-10, atol=1e-12)
    v = _tensor_point(graph, 8)
    hvp = hessian(graph, point, vector=v)["hvp"]
    flat = np.concatenate([np.ravel(v[n]) for n in graph.inputs])
    stacked = np.concatenate([np.ravel(hvp[n]) for n in graph.inputs])
    np.testing.assert_allclose(full @ flat, stacked, rtol=1e-10, atol=1e-12)


@TENSOR_PROPERTY
@given(tensor_expressions(), st.integers(0, 10**6))
def test_forward_and_reverse_mode_are_adjoint(expr, seed):
    """⟨v, J u⟩ from one forward-mode pass equals ⟨Jᵀ v, u⟩ from one reverse pass, for an
    output of any shape."""
    graph = parse(f"y = {expr}")
    point = _tensor_point(graph, seed)
    u = _tensor_point(graph, seed + 1)
    values = forward(graph, point)
    v = _random(np.shape(values[graph.output]), np.random.default_rng(seed + 2))
    ju = jvp(graph, values, u)[graph.output]
    adj = reverse(graph, values, ARRAYS, graph.output, v, depends_on_input(graph))
    left = float(np.sum(np.multiply(v, ju)))
    right = sum(
        float(np.sum(np.broadcast_to(adj[graph.inputs[n]], np.shape(u[n])) * u[n]))
        for n in graph.inputs
        if adj[graph.inputs[n]] is not None
    )
    assert left == pytest.approx(right, rel=1e-10, abs=1e-10), expr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tensor_expressions(), st.integers(0, 10**6))
def test_jacobians_agree_in_both_modes_and_with_finite_differences(expr, seed):
    graph = parse(f"y = {expr}")
    point = _tensor_point(graph, seed)
    by_rows = jacobian(graph, point, mode="reverse")
    by_columns = jacobian(graph, point, mode="forward")
    rows = int(np.prod(by_rows["shapes"]["output"]))
    columns = sum(int(np.prod(TENSOR_SHAPES[n])) for n in graph.inputs)
    assert (by_rows["passes"], by_columns["passes"]) == (rows, columns)
    auto = jacobian(graph, point)
    assert auto["mode"] == ("reverse" if rows <= columns else "forward")
    assert auto["passes"] == min(rows, columns)
    for n in graph.inputs:
        for other in (by_columns, auto):
            np.testing.assert_allclose(
                other["jacobian"][n], by_rows["jacobian"][n], rtol=1e-10, atol=1e-12
            )
        block = np.reshape(by_rows["jacobian"][n], (rows, -1))
        for k in range(block.shape[1]):
            coarse, fine = (_column_difference(graph, point, n, k, h) for h in (2e-6, 1e-6))
            if coarse is None or fine is None or not np.allclose(coarse, fine, 1e-6, 1e-7):
                continue  # a kink in between, or curvature too fast for the step
            np.testing.assert_allclose(block[:, k], fine, rtol=1e-5, atol=1e-6, err_msg=expr)


def _column_difference(graph, point, name: str, k: int, h: float):
    """The central difference of the output along element k of input ``name``, flat."""
    x = np.asarray(point[name], dtype=float)
    step = np.zeros(x.size)
    step[k] = h
    up, down = ({**point, name: x + s * step.reshape(x.shape)} for s in (1, -1))
    if not x.shape:
        up[name], down[name] = float(up[name]), float(down[name])
    if not _same_piece(graph, point, up, down):
        return None
    difference = forward(graph, up)[graph.output] - forward(graph, down)[graph.output]
    return np.ravel(difference) / (2 * h)


# --- as a textbook writes them ---------------------------------------------------------------
def _program(text: str, order: int = 1, **bindings) -> str:
    return to_source(derivative_program(parse(text), bindings or None, order=order).graph)


def test_the_worked_example():
    assert _program("p = x + y\ng = p * z") == (
        "p = x + y\ng = p * z\ndg_dp = z\ndg_dz = p\ndg_dx = dg_dp\ndg_dy = dg_dx\n"
    )


@pytest.mark.parametrize(
    "program, order, lines",
    [
        ("f = x^3", 2, ["df_dx = 3 * x ^ 2", "d2f_dx2 = 6 * x"]),
        ("f = x^3", 3, ["d2f_dx2 = 6 * x", "d3f_dx3 = 6"]),
        ("f = sin(x)", 4, ["df_dx = cos(x)", "d2f_dx2 = -f", "d3f_dx3 = -df_dx", "d4f_dx4 = f"]),
        (
            "f = x^2 * y + sin(y)",
            2,
            ["t5 = 2 * x", "df_dx = y * t5", "d2f_dxdy = t5", "d2f_dx2 = 2 * y", "d2f_dy2 = -t3"],
        ),
        ("o = tanh(w * x + b)", 1, ["do_dt2 = 1 - o ^ 2", "do_dw = do_dt2 * x"]),
        ("o = x1 * w1 * w1", 2, ["d2o_dw1dw1 = 2 * x1"]),  # not d2o_dw12
        (
            "loss = (sigmoid(w * x + b) - t) ^ 2",
            1,
            [
                "dloss_dt4 = 2 * t4",
                "dloss_dt = -dloss_dt4",
                "dloss_dt2 = dloss_dt4 * (t3 * (1 - t3))",
            ],
        ),
        ("y = relu(x) * x", 1, ["dy_dx = t1 + where(x > 0, x, 0)"]),
        # a name for the number 1 stays a name: x - 1, not x - dout_dm
        (
            "m = y ^ x\nout = m + y",
            1,
            [
                "dout_dm = 1",
                "dout_dy = 1 + x * where(y == 0, where(x == 0, 1, y), y) ^ (x - 1)",
            ],
        ),
    ],
)
def test_derivative_programs_read_as_a_textbook_writes_them(program, order, lines):
    text = _program(program, order)
    for line in lines:
        assert line in text.splitlines(), text


def test_tensor_derivative_programs_read_as_a_textbook_writes_them():
    sample = {p.stem: p.read_text() for p in SAMPLES}
    logistic = _program(sample["logistic_regression"]).splitlines()
    assert "dloss_dy = 0.25 * t7 - 0.25 * t3" in logistic  # not -(-0.25 * t7) + -0.25 * t3
    # g * (1 / p), not g / p: 1 / p overflows at a subnormal p where g / p may not, and the
    # interpreter (every engine) multiplies by the local derivative: the same error everywhere
    assert "dloss_dp = 0.25 * t5 * (1 / t6) - 0.25 * y * (1 / p)" in logistic
    assert "dloss_db = sum(dloss_dt2)" in logistic
    assert "dloss_dw = transpose(X) @ dloss_dt2" in logistic
    softmax = _program(sample["softmax_cross_entropy"]).splitlines()
    assert "dloss_dz = p * (dloss_dp + sum(y * (1 / p) * p))" in softmax  # no reshape(..., [1])


def test_the_mlp_derivative_program_uses_matmuls_transposes_and_sums_over_broadcast_axes():
    text = _program((SAMPLES[0].parent / "mlp.cg").read_text())
    derivatives = text.split("loss = mean(t4 ^ 2)\n")[1].splitlines()
    # each call's derivative code under a comment naming it, backwards
    assert [line for line in derivatives if line.startswith("#")] == [
        "# ∂ mse(Y, T)",
        "# ∂ dense(H, W2, b2)",
        "# the program",
        "# ∂ dense(X, W1, b1)",
    ]
    assert [line for line in derivatives if not line.startswith("#")] == [
        "dloss_dt4 = 0.25 * t4",
        "dloss_dY = dloss_dt4",
        "dloss_dT = -dloss_dt4",
        "dloss_db2 = sum_to(dloss_dt4, [2])",
        "dloss_dH = dloss_dt4 @ transpose(W2)",
        "dloss_dW2 = transpose(H) @ dloss_dt4",
        "dloss_dt2 = where(t2 > 0, dloss_dH, 0)",
        "dloss_db1 = sum_to(dloss_dt2, [5])",
        "dloss_dX = dloss_dt2 @ transpose(W1)",
        "dloss_dW1 = transpose(X) @ dloss_dt2",
    ]


# What a textbook never writes: a product with 1 or 0, a sum with 0, a power 1, a division by
# 1, a double negative, adding a negative.
_UNSIMPLIFIED = re.compile(
    r"(?<![\w.])(?:[*/] 1|1 \*|[+-] 0|0 [*+]|\* 0|\^ 1)(?![\w.])|-\(-|--|[+-] -|\* -"
)


def _scalar(graph) -> bool:
    return not any(getattr(v, "shape", ()) for v in graph.defaults.values())


@pytest.mark.parametrize(
    "path, order",
    [(p, 1) for p in SAMPLES] + [(p, 2) for p in SAMPLES if _scalar(parse(p.read_text()))],
    ids=str,
)
def test_no_sample_derivative_program_multiplies_by_1_or_adds_0(path, order):
    graph = parse(path.read_text())
    program = derivative_program(graph, order=order)
    forward_names = set(graph.names) | set(graph.inputs)
    for line in to_source(program.graph).splitlines():
        name, _, expression = line.partition(" = ")
        if name in forward_names or name.startswith("input "):
            continue  # the program as its author wrote it
        assert not _UNSIMPLIFIED.search(expression), line


# --- check --expect-hessian ----------------------------------------------------------------------
def _valid(name: str, text: str) -> dict:
    from jsonschema import Draft202012Validator

    from cgraph_cli import schemas

    document = json.loads(text)
    Draft202012Validator(schemas.load(name)).validate(document)
    return document


def test_check_asserts_second_derivatives(cli):
    result = cli(
        "check",
        "sample:rosenbrock",
        "--expect-hessian",
        "x,y=480",
        "--expect-hessian",
        "x, x = 1330",
        "--expect-grad",
        "k=0.1936",
        "--rtol",
        "1e-12",
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout == (
        "ok    ∂f/∂k = 0.19359999999999997 (expected 0.1936)\n"
        "ok    ∂²f/∂x∂y = 480 (expected 480)\n"
        "ok    ∂²f/∂x² = 1330 (expected 1330)\n"
        "3 passed, 0 failed\n"
    )
    failed = cli("check", "sample:rosenbrock", "--expect-hessian", "a,k=1")
    assert failed.exit_code == 1
    assert "FAIL  ∂²f/∂a∂k = 0 (expected 1, difference 1)" in failed.stdout


def test_check_second_derivatives_of_tensor_elements_json_and_junit(cli, tmp_path):
    junit = tmp_path / "report.xml"
    args = ["check", "y = sum(W @ x) ^ 2", "W=[[1,2],[3,4]]", "x=[1,-1]"]
    result = cli(
        *args,
        "--expect-hessian",
        "W[0,1],x[1]=-16",  # 2·(W01 + W11)·x1 + 2·sum(W @ x)
        "--expect-hessian",
        "x[-2],x[0]=30",
        "--format",
        "json",
        "--junit",
        str(junit),
    )
    assert result.exit_code == 1
    report = _valid("check", result.stdout)
    assert [(c["kind"], c["name"], c["actual"], c["ok"]) for c in report["checks"]] == [
        ("hessian", "W[0, 1],x[1]", -16.0, True),
        ("hessian", "x[0],x[0]", 32.0, False),
    ]
    xml = junit.read_text()
    assert 'name="∂²y/∂W[0, 1]∂x[1] = -16"' in xml
    assert 'message="∂²y/∂x[0]² = 32 (expected 30, difference 2)"' in xml


@pytest.mark.parametrize(
    "expectation, code, message",
    [
        ("x=1", 2, "a second derivative is named NAME,NAME, got 'x'"),
        ("x,y", 2, "a second derivative's expectation is NAME,NAME=NUMBER"),
        ("x,y=nan", 2, "a second derivative's expectation is NAME,NAME=NUMBER"),
        ("p,x=1", 2, "'p' is not an input: second derivatives are with respect to inputs"),
        ("x,q=1", 2, "the program has no name 'q'"),
        ("x[0],y=1", 2, "'x' is a number: write x, not x[...]"),
        ("v,y=1", 2, "'v' is a (2,) tensor: name one element, as v[0]"),
        ("v[2],y=1", 2, "index 2 is out of range for axis 0 of 'v' (size 2)"),
        ("v[0],y=1 --of w", 4, "w is a (2,) tensor; second derivatives need a single number"),
    ],
)
def test_check_second_derivative_mistakes(cli, expectation, code, message):
    program = "p = x * y; w = v * p; g = sum(w)"
    expectation, *more = expectation.split()
    result = cli("check", program, "x=1", "y=2", "v=[1,2]", "--expect-hessian", expectation, *more)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_check_second_derivatives_usage(cli):
    nothing = cli("check", "g = x * y", "x=1", "y=2")
    assert nothing.exit_code == 2 and "--expect-hessian NAME,NAME=VALUE" in nothing.stderr
    both = cli("check", "--spec", "sample:checks.toml", "--expect-hessian", "x,y=1")
    assert both.exit_code == 2 and "give no program or expectations too" in both.stderr


def test_spec_cases_expect_second_derivatives(cli, tmp_path):
    spec = tmp_path / "checks.toml"
    spec.write_text(
        "[[case]]\n"
        'name = "rosenbrock"\n'
        'file = "f.cg"\n'
        'expect_hessian = { "x,y" = 480, "a, x" = -2 }\n'
        "\n[[case]]\n"
        'name = "not an input"\n'
        'program = "p = x * y; g = p ^ 2"\n'
        "bindings = { x = 1, y = 2 }\n"
        'expect_hessian = { "p,x" = 1 }\n'
    )
    (tmp_path / "f.cg").write_text((SAMPLES[0].parent / "rosenbrock.cg").read_text())
    result = cli("check", "--spec", str(spec))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "rosenbrock:",
        "  ok    ∂²f/∂x∂y = 480 (expected 480)",
        "  ok    ∂²f/∂a∂x = -2 (expected -2)",
        "not an input:",
        "  ERROR  'p' is not an input: second derivatives are with respect to inputs",
        "         help: the program's inputs: x, y",
        "2 passed, 0 failed, 1 case could not run",
    ]


_NOT_A_TABLE = "'expect_hessian' in case 1 must be a table of \"NAME,NAME\" = number"


@pytest.mark.parametrize(
    "line, message",
    [
        ('expect_hessian = { "x" = 1 }', "'expect_hessian' in case 1: a second derivative is"),
        (
            'expect_hessian = { "x,y" = [1] }',
            "'expect_hessian' in case 1 must be a table of \"NAME,NAME\" = number",
        ),
        (
            "expect_hessian = 3",
            "'expect_hessian' in case 1 must be a table of \"NAME,NAME\" = number",
        ),
    ],
)
def test_spec_second_derivative_mistakes_exit_2_at_their_line(cli, tmp_path, line, message):
    spec = tmp_path / "checks.toml"
    spec.write_text(f'[[case]]\nprogram = "y = x * z"\n{line}\n')
    result = cli("check", "--spec", str(spec))
    assert result.exit_code == 2
    assert f"checks.toml:3:1: error: {message}" in result.stderr


# --- gradcheck --order 2 ---------------------------------------------------------------------
def test_gradcheck_second_derivatives_table(cli):
    result = cli("gradcheck", "sample:rosenbrock", "--order", "2")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["point", "derivative", "∂²f", "numeric", "error", "status"]
    rows = [line.split()[:3] for line in lines[2:-1]]
    assert [row[1:] for row in rows[:4]] == [
        ["∂²/∂a²", "2"],
        ["∂²/∂a∂k", "0"],
        ["∂²/∂a∂x", "-2"],
        ["∂²/∂a∂y", "0"],
    ]
    assert ["1", "∂²/∂x∂y", "480"] in rows and len(rows) == 10  # each pair once
    assert lines[-1] == "10 passed, 0 failed, 0 skipped"


def test_gradcheck_second_derivatives_json_and_tensors(cli):
    result = cli("gradcheck", "y = sum(W @ x) ^ 2", "W=[[1,2],[3,4]]", "x=[1,-1]", "--order", "2")
    assert result.exit_code == 0, result.stderr
    assert "∂²/∂W[0, 1]∂x[1]" in result.stdout and "21 passed" in result.stdout  # 6·7/2
    report = _valid(
        "gradcheck",
        cli("gradcheck", "sample:seed", "--order", "2", "--format", "json").stdout,
    )
    assert report["order"] == 2
    entries = {c["input"]: c["analytic"] for c in report["checks"]}
    assert entries == {
        "∂²/∂x²": 0.0,
        "∂²/∂x∂y": 0.0,
        "∂²/∂x∂z": 1.0,
        "∂²/∂y²": 0.0,
        "∂²/∂y∂z": 1.0,
        "∂²/∂z²": 0.0,
    }
    assert (
        _valid("gradcheck", cli("gradcheck", "sample:seed", "--format", "json").stdout)["order"]
        == 1
    )


def test_gradcheck_second_derivatives_mismatch_kink_and_undefined(cli):
    coarse = cli("gradcheck", "y = exp(10 * x)", "x=1", "--order", "2", "--eps", "1e-2")
    assert coarse.exit_code == 1 and "MISMATCH" in coarse.stdout
    kink = cli("gradcheck", "y = relu(x) * x + z", "x=0", "z=1", "--order", "2")
    assert kink.exit_code == 0 and "0 passed, 0 failed, 3 skipped" in kink.stdout
    points = cli("gradcheck", "y = sqrt(x)", "--order", "2", "--points", "6", "--format", "json")
    statuses = {c["status"] for c in _valid("gradcheck", points.stdout)["checks"]}
    assert points.exit_code == 0 and statuses == {"ok", "undefined"}
    # at the point given, a program whose second derivative is undefined is an error
    here = cli("gradcheck", "y = x ^ 1.5", "x=0", "--order", "2")
    assert here.exit_code == 4 and "undefined or infinite" in here.stderr


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), points)
def test_second_derivatives_match_differences_of_the_gradient(program, point):
    graph = parse(program)
    assume(graph.inputs)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None and all(abs(v) < 1e4 for v in done[0] + done[1]))
    from cgraph_cli.app.gradcheck import gradcheck

    checks = gradcheck(graph, bindings, order=2, rtol=1e-4, atol=1e-5)
    compared = [c for c in checks if c.status in ("ok", "mismatch") and abs(c.numeric) < 1e4]
    for c in compared:
        assert c.status == "ok", (program, c)


def test_hessian_columns_are_the_hessians_columns():
    from cgraph_cli.run.higher import hessian_columns

    graph = parse("y = logsumexp(tanh(transpose(A) @ A)[0] * r) + sum(c * A) * s ^ 2")
    point = _tensor_point(graph, 3)
    full = np.array(hessian(graph, point)["hessian"])
    labels = hessian(graph, point)["labels"]
    for name, element in [("A", (1, 2)), ("s", ()), ("c", (0, 0))]:
        (column,) = hessian_columns(graph, point, [(name, element)])
        label = f"{name}[{', '.join(map(str, element))}]" if element else name
        flat = np.concatenate([np.ravel(column[n]) for n in graph.inputs])
        np.testing.assert_allclose(flat, full[:, labels.index(label)], rtol=1e-12, atol=1e-14)


def test_every_command_means_the_input_by_an_input_name_assigned_again(cli):
    # input x; x = x * 3; y = x^2 -> y = 9 x², ∂y/∂x = 18 x = 18 at x = 1 (not 2·3 = 6)
    program = "input x; x = x * 3; y = x^2"
    grad = json.loads(cli("grad", program, "x=1", "--format", "json").stdout)
    assert grad["gradients"] == {"x": 18.0}
    assert cli("check", program, "x=1", "--expect-grad", "x=18").exit_code == 0
    assert cli("check", program, "x=1", "--expect-hessian", "x,x=18").exit_code == 0
    text = cli("diff", program).stdout
    assert cli("eval", "-", "x=1", "--of", "dy_dx", input=text).stdout.strip().endswith("18")


# --- forward mode as a program -----------------------------------------------------------------
def _tangent_round_trip(program, bindings, direction):
    """The tangent program: validated, printed, read back (a fixed point), evaluated at
    ``bindings`` and the tangent inputs ``direction``: its output's tangent. None where a
    tangent statement only is undefined."""
    text = to_source(validate(program.graph))
    again = validate(parse(text))
    assert to_source(again) == text, text
    try:
        values = forward(again, {**bindings, **direction})
    except DomainError as e:
        line = text.splitlines()[text[: e.span.start].count("\n")]
        assert line.split(" = ")[0].endswith(("_dot", "_dx", "_dy", "_dz")), (text, e.render())
        return None
    return values[again.names[program.tangents[program.output]]]


@PROPERTY
@given(programs(conditions=True), points, points)
def test_tangent_programs_read_back_and_evaluate_to_the_jvp(program, point, direction):
    graph = parse(program)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    tangents = {name: direction[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    try:
        expected = jvp(graph, forward(graph, bindings), tangents)[graph.output]
    except DomainError:
        assume(False)
    tp = jvp_graph(graph)
    assert tp.tangents.keys() >= set(graph.inputs)
    got = _tangent_round_trip(tp, bindings, {tp.tangents[n]: t for n, t in tangents.items()})
    assume(got is not None)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), program


@PROPERTY
@given(programs(conditions=True), points)
def test_forward_mode_along_one_input_gives_the_gradient(program, point):
    graph = parse(program)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    try:
        expected = grad(graph, bindings).gradients
    except DomainError:
        assume(False)
    for name, value in expected.items():
        tp = tangent_program(graph, wrt=[name])
        assert tp.tangents[tp.output] == f"d{tp.output}_d{name}"
        got = _tangent_round_trip(tp, bindings, {})
        if got is not None:
            assert got == pytest.approx(value, rel=1e-12, abs=1e-12), (program, name)


@TENSOR_PROPERTY
@given(
    tensor_expressions(),
    tensor_expressions(names=(*TENSOR_SHAPES, "h")),
    st.integers(0, 10**6),
)
def test_tensor_tangent_programs_evaluate_to_the_jvp(first, second, seed):
    graph = parse(f"h = {first}\ny = {second} * h")
    bindings = _tensor_point(graph, seed)
    direction = _tensor_point(graph, seed + 1)
    expected = jvp(graph, forward(graph, bindings), direction)[graph.output]
    tp = jvp_graph(graph, shapes={n: TENSOR_SHAPES[n] for n in graph.inputs})
    got = _tangent_round_trip(tp, bindings, {tp.tangents[n]: t for n, t in direction.items()})
    assert got is not None
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=str(graph.inputs))


def test_tangent_programs_read_as_a_textbook_writes_them():
    text = to_source(tangent_program(parse("p = x + y; g = p * z"), wrt=["x"]).graph)
    assert text.endswith("dp_dx = 1\ndg_dx = z\n")
    text = to_source(jvp_graph(parse("g = sin(x) * y")).graph)
    assert text == (
        "input x_dot\ninput y_dot\nt1 = sin(x)\ng = t1 * y\n"
        "g_dot = y * (cos(x) * x_dot) + t1 * y_dot\n"
    )
    mlp = (Path(__file__).resolve().parent.parent / "samples" / "mlp.cg").read_text()
    text = to_source(jvp_graph(parse(mlp), ["W1"]).graph)
    assert "W1_dot" in text and "X @ W1_dot" in text and "* 1" not in text and "+ 0" not in text


def test_forward_mode_on_the_command_line(cli):
    result = cli("diff", "p = sin(x); y = p * x", "--mode", "forward", "--wrt", "x")
    assert result.stdout == "p = sin(x)\ny = p * x\ndp_dx = cos(x)\ndy_dx = x * dp_dx + p\n"
    evaluated = cli("eval", "-", "x=2", "--of", "dy_dx", "--format", "plain", input=result.stdout)
    assert float(evaluated.stdout.split("=")[1]) == pytest.approx(2 * math.cos(2) + math.sin(2))
    report = json.loads(
        cli(
            "diff",
            "y = sum(W @ x)",
            "W=[[1, 2], [3, 4]]",
            "x=[1, 1]",
            "--mode",
            "forward",
            "--format",
            "json",
        ).stdout
    )
    assert report["mode"] == "forward" and report["derivatives"] == {}
    assert report["tangents"] == {"W": "W_dot", "x": "x_dot", "y": "y_dot"}
    assert report["program"].endswith("y_dot = sum(W_dot @ x + W @ x_dot)\n")


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--order", "2"], "forward mode gives first derivatives"),
        (["--wrt", "p"], "'p' is not an input: forward mode pushes tangents from inputs"),
        (["--wrt", "q"], "the program has no name 'q'"),
    ],
)
def test_forward_mode_mistakes_are_usage_errors(cli, extra, message):
    result = cli("diff", "p = sin(x); y = p * x", "--mode", "forward", *extra)
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_second_derivatives_of_a_tensor_output_say_so(cli):
    result = cli("hessian", "y = x * 2", "x=[1, 2]")
    assert result.exit_code == 4
    assert "y is a (2,) tensor; second derivatives need a single number" in result.stderr
    assert "cgraph jacobian" in result.stderr


@pytest.mark.parametrize(
    "program",
    [
        "y = sum((transpose(A, [1, 0, 2]) @ B) ^ 2)",  # the swap of a swap: (0, 2, 1) after it
        "y = sum(transpose(transpose(A, [1, 0, 2]), [0, 2, 1]) * C)",
        "y = sum(transpose(transpose(A), [2, 0, 1]) * D)",
        "y = sum(transpose(transpose(A, [2, 1, 0])) * A)",  # the same axes again: A itself
    ],
)
def test_a_transpose_of_a_transpose_is_one_of_the_composed_axes(program):
    """The derivative program's builder folds transpose(transpose(x, p), q) into one transpose
    of p's axes in q's order (it returned x itself: a transformer's attention, whose batched
    products swap the last two axes of a transposed tensor, failed to compile)."""
    rng = np.random.default_rng(0)
    bindings = {
        "A": rng.normal(size=(3, 2, 4)),
        "B": rng.normal(size=(2, 4, 5)),
        "C": rng.normal(size=(2, 4, 3)),
        "D": rng.normal(size=(3, 4, 2)),
    }
    graph = parse(program)
    bindings = {k: v for k, v in bindings.items() if k in graph.inputs}
    expected = grad(graph, bindings).gradients
    got = _round_trip(graph, bindings, {n: np.shape(v) for n, v in bindings.items()})
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-12, atol=1e-12)


def _plain(text: str) -> dict:
    """``name=value`` lines as a script reads them: split at the first ``=``, values as JSON."""
    return {k: json.loads(v) for k, v in (line.split("=", 1) for line in text.splitlines())}


@pytest.mark.parametrize(
    "args",
    [
        ["sample:neuron", "-t", "x1=1"],
        ["y = W @ x", "W=[[1,2],[3,4]]", "x=[1,1]", "-t", "x=[1,0]"],
    ],
)
def test_jvp_plain_gives_the_directional_derivative_and_the_value_to_every_digit(cli, args):
    report = json.loads(cli("jvp", *args, "--format", "json").stdout)
    plain = cli("jvp", *args, "--format", "plain")
    assert plain.exit_code == 0 and plain.stderr == ""
    assert _plain(plain.stdout) == {"jvp": report["jvp"], report["output"]: report["value"]}
    assert list(_plain(plain.stdout)) == ["jvp", report["output"]]  # the value last, as grad's


@pytest.mark.parametrize(
    "args",
    [
        ["f = x^2 * y + sin(y)", "x=1", "y=2"],
        ["f = sum(W @ x) * c", "W=[[1,2],[3,4]]", "x=[1,2]", "c=2", "--wrt", "x,c"],
        ["sample:mlp", "--wrt", "b2", "--vector", "b2=[1, 0]"],
    ],
)
def test_hessian_plain_gives_a_row_per_line_and_the_value(cli, args):
    report = json.loads(cli("hessian", *args, "--format", "json").stdout)
    lines = _plain(cli("hessian", *args, "--format", "plain").stdout)
    value = lines.pop(report["output"])
    assert value == report["value"]
    if "hvp" in report:
        assert lines == report["hvp"]
    else:  # the columns in the order of the lines
        assert list(lines) == report["labels"] and list(lines.values()) == report["hessian"]


def test_plain_rounds_to_precision_when_asked(cli):
    lines = _plain(
        cli("jvp", "sample:neuron", "-t", "x1=1", "--format", "plain", "--precision", "3").stdout
    )
    assert lines == {"jvp": -1.5, "o": 0.707}
    hessian = cli(
        "hessian", "f = x^2 * y + sin(y)", "x=1", "y=2", "--format", "plain", "--precision", "2"
    )
    assert hessian.stdout == "x=[4,2]\ny=[2,-0.91]\nf=2.9\n"
