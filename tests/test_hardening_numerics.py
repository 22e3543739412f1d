"""Hardening of the tensor passes and of what diagrams and explanations show (issue 9): overflow
in reductions and products, empty tensors in every command, results too large to allocate,
too many axes, NumPy warnings, and derivatives with respect to constants."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from cgraph_cli import BindingError, DomainError, jvp, parse
from cgraph_cli.core import arrays
from cgraph_cli.passes.shapes import ShapeError
from cgraph_cli.run.evaluate import forward

ROSENBROCK = str(Path(__file__).resolve().parent.parent / "samples" / "rosenbrock.cg")


def caret_under(result, text: str) -> bool:
    """Whether stderr's caret line underlines exactly ``text`` in the quoted source line."""
    lines = result.stderr.splitlines()
    for source, marks in zip(lines, lines[1:]):
        if "|" in source and "|" in marks and "^" in marks:
            start = marks.index("^")
            width = len(marks.rstrip()) - start
            return source[start : start + width] == text
    return False


# 1. overflow inside sum, mean, @ ---------------------------------------------------------------
@pytest.mark.parametrize(
    "program, bindings, message, under",
    [
        ("y = sum(x)", ["x=[1e308,1e308]"], "sum(x) overflows: the result is too large", "sum(x)"),
        ("y = mean(x)", ["x=[1e308,1e308]"], "mean(x) overflows: the result", "mean(x)"),
        ("y = x @ x", ["x=[1e200,1e200]"], "x @ x overflows: the result", "x @ x"),
        (
            "y = sum(W @ x)",
            ["W=[[1e200,1e200],[1,1]]", "x=[1e200,1e200]"],
            "W @ x overflows at [0]: the result",
            "W @ x",
        ),
    ],
)
def test_overflow_in_a_reduction_or_product_is_exit_4_at_the_node(
    cli, program, bindings, message, under
):
    for command in ("eval", "grad"):
        result = cli(command, program, *bindings)
        assert result.exit_code == 4, result.stderr
        assert message in result.stderr
        assert caret_under(result, under)


def test_a_gradient_that_overflows_in_a_vjp_is_exit_4_at_the_node(cli):
    result = cli("grad", "y = sum((W @ x) * c)", "W=[[1e300]]", "x=[1e-300]", "c=1e300")
    assert result.exit_code == 4
    assert (
        "the gradient through W @ x overflows at [0]: it is too large for a float64"
        in result.stderr
    )
    assert caret_under(result, "W @ x")
    assert "the gradient with respect to x" in result.stderr


def test_a_tangent_that_overflows_is_a_domain_error_at_the_node():
    graph = parse("y = sum(x @ W)")
    values = forward(graph, {"x": [1.0, 1.0], "W": [[1e300], [1e300]]})
    with pytest.raises(DomainError) as info:
        jvp(graph, values, {"x": np.array([1e10, 1e10])})
    assert info.value.message == "the tangent of x @ W overflows: it is too large for a float64"
    scalar = parse("y = x * c")
    with pytest.raises(DomainError, match="the tangent of x \\* c overflows"):
        jvp(scalar, forward(scalar, {"x": 1.0, "c": 1e300}), {"x": 1e10})


def test_a_zero_tangent_meets_an_infinite_slope_without_nan():
    graph = parse("y = sqrt(x)")
    values = forward(graph, {"x": [0.0, 4.0]})
    assert jvp(graph, values, {"x": np.array([0.0, 1.0])})[graph.output].tolist() == [0.0, 0.25]
    with pytest.raises(DomainError, match=r"sqrt\(0\) is undefined or infinite at \[0\]"):
        jvp(graph, values, {"x": np.array([1.0, 1.0])})


def test_tangents_must_fit_their_inputs():
    graph = parse("y = W @ x")
    values = forward(graph, {"W": np.eye(2), "x": [1.0, 2.0]})
    with pytest.raises(
        BindingError,
        match=r"the tangent of 'W' has shape \(2,\); 'W' has "
        r"shape \(2, 2\)",
    ):
        jvp(graph, values, {"W": np.array([1.0, 1.0])})
    with pytest.raises(BindingError, match="no input named 'v'"):
        jvp(graph, values, {"v": np.array([1.0, 1.0])})


# 2. empty tensors --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fmt, expected",
    [
        ([], "y = []    shape (0,)"),
        (["--format", "plain"], "y=[]"),
        (["--all"], "y       (0,)   []"),
        (["--all", "--format", "plain"], "x=[1,2,3]\ny=[]"),
    ],
)
def test_an_empty_slice_prints_as_brackets_with_its_shape(cli, fmt, expected):
    result = cli("eval", "y = x[2:1]", "x=[1,2,3]", *fmt)
    assert result.exit_code == 0, result.stderr
    assert expected in result.stdout


def test_an_empty_matrix_in_every_format(cli):
    program, x = "y = x[:, 3:]", "x=[[1,2],[3,4]]"
    assert "y = []    shape (2, 0)" in cli("eval", program, x).stdout
    assert cli("eval", program, x, "--format", "plain").stdout == "y=[[],[]]\n"
    report = json.loads(cli("eval", program, x, "--format", "json").stdout)
    assert report["value"] == [[], []] and report["shapes"]["y"] == [2, 0]


@pytest.mark.parametrize(
    "program, message, under",
    [
        ("y = max(x[2:1])", "max(x[2:1]) of an empty tensor has no value", "max(x[2:1])"),
        ("y = min(x[2:1])", "min(x[2:1]) of an empty tensor has no value", "min(x[2:1])"),
        ("y = mean(x[2:1])", "mean(x[2:1]) of an empty tensor has no value", "mean(x[2:1])"),
        (
            "y = logsumexp(x[2:1])",
            "logsumexp(x[2:1]) of an empty tensor has no value",
            "logsumexp(x[2:1])",
        ),
        (
            "y = x[2:1]; m = mean(reshape(y, [0, 1]), 0)",
            "mean(reshape(y, [0, 1]), 0) has no value: axis 0 of the (0, 1) tensor is empty",
            "mean(reshape(y, [0, 1]), 0)",
        ),
    ],
)
def test_a_reduction_of_nothing_says_so_at_the_node(cli, program, message, under):
    result = cli("eval", program, "x=[1,2,3]")
    assert result.exit_code == 4, result.stderr
    assert f"error: {message}\n" in result.stderr
    assert caret_under(result, under)
    assert "zero-size" not in result.stderr and "Mean of empty" not in result.stderr


def test_ops_on_empty_tensors_that_have_a_value(cli):
    for program, value in [
        ("y = sum(x[2:1])", "y = 0"),
        ("y = mean(reshape(x[2:1], [0, 2]), 1)", "y = []    shape (0,)"),
        ("y = softmax(x[2:1])", "y = []    shape (0,)"),
        ("y = x[2:1] @ x[2:1]", "y = 0"),
        ("y = reshape(x[2:1], [0, 5]) * 2", "y = []    shape (0, 5)"),
    ]:
        result = cli("eval", program, "x=[1,2,3]")
        assert result.exit_code == 0, (program, result.stderr)
        assert result.stdout.startswith(value), program


EMPTY = ("y = sum(x[2:1]) + sum(x)", "x=[1,2,3]")


def test_gradients_through_an_empty_slice(cli):
    result = cli("grad", *EMPTY, "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["gradients"]["x"] == [1.0, 1.0, 1.0]
    nothing = cli("grad", "y = x[2:1]", "x=[1,2,3]")
    assert nothing.exit_code == 4
    assert "y is a (0,) tensor; gradients need a single number" in nothing.stderr
    assert "y[0]" not in nothing.stderr  # no element to pick


def test_show_draws_an_empty_tensor(cli):
    result = cli("show", *EMPTY)
    assert result.exit_code == 0, result.stderr
    assert "t1 = x[2:1] = [] (0,)" in result.stdout
    assert "∂y/∂t1 = [] (0,)" in result.stdout


@pytest.mark.parametrize(
    "command", [["dot"], ["dot", "--backward"], ["render", "--format", "dot", "-o", "-"]]
)
def test_diagrams_of_an_empty_tensor(cli, command):
    result = cli(*command, *EMPTY)
    assert result.exit_code == 0, result.stderr
    assert "<TR></TR>" not in result.stdout  # an empty row is not valid in Graphviz's HTML
    assert " [] (0,) " in result.stdout and 'label="(0,)' in result.stdout


def test_explanations_of_an_empty_tensor(cli):
    for fmt in ("text", "markdown"):
        result = cli("explain", *EMPTY, "--format", fmt)
        assert result.exit_code == 0, result.stderr
        assert "(3,) -> (0,) = [] (0,)" in result.stdout
        assert "t̅1̅ = broadcast_to(t̅2̅, (0,)) = [] (0,)" in result.stdout
    steps = json.loads(cli("explain", *EMPTY, "--format", "json").stdout)
    assert steps["forward"][0]["shape"] == [0] and steps["forward"][0]["value"] == []


# 3. results too large to allocate, 4. more than 64 axes ----------------------------------------
def test_a_result_of_ten_billion_elements_is_refused_before_allocating(cli, tmp_path):
    big = tmp_path / "big.npy"
    np.save(big, np.arange(100_000.0))
    result = cli("eval", "y = reshape(x, [-1, 1]) + x", f"x=@{big}")
    assert result.exit_code == 4
    assert (
        "the result of + would be a (100000, 100000) tensor of 80 GB; the limit is "
        f"{arrays.MAX_ELEMENTS:,} elements"
    ) in result.stderr
    assert caret_under(result, "reshape(x, [-1, 1]) + x")
    assert "its arguments are (100000, 1) and (100000,)" in result.stderr


def test_the_limit_is_per_value(cli, monkeypatch):
    monkeypatch.setattr(arrays, "MAX_ELEMENTS", 100)
    program = "y = sum(reshape(x, [-1, 1]) * x)"
    ten = "x=[" + ",".join(["1"] * 10) + "]"
    assert cli("eval", program, ten).stdout == "y = 100\n"
    eleven = "x=[" + ",".join(["1"] * 11) + "]"
    result = cli("grad", program, eleven)
    assert result.exit_code == 4
    assert (
        "the result of * would be a (11, 11) tensor of 968 bytes; the limit is 100 "
        "elements (800 bytes) per value"
    ) in result.stderr


def test_more_than_64_axes_is_a_shape_error(cli):
    ones = lambda n: "[" + ", ".join(["1"] * n) + "]"  # noqa: E731
    assert cli("eval", f"y = sum(reshape(x, {ones(64)}))", "x=[2]").stdout == "y = 2\n"
    result = cli("eval", f"y = sum(reshape(x, {ones(65)}))", "x=[2]")
    assert result.exit_code == 4
    assert "the result of reshape would have 65 axes; a tensor has at most 64" in result.stderr
    with pytest.raises(ShapeError):
        forward(parse(f"y = reshape(x, {ones(65)})"), {"x": [2.0]})


def test_a_size_numpy_cannot_index_is_a_shape_error(cli):
    fine = cli("eval", "y = reshape(x[2:1], [100000000000, 0])", "x=[1,2,3]")
    assert fine.stdout == "y = []    shape (100000000000, 0)\n"  # no elements: nothing to hold
    result = cli("eval", "y = reshape(x[2:1], [" + "1" + "0" * 30 + ", 0])", "x=[1,2,3]")
    assert result.exit_code == 4
    assert "is not a shape: a size is at most 9223372036854775807" in result.stderr


# 5. NumPy warnings never reach the user --------------------------------------------------------
NASTY = [
    ["eval", "y = sum(x)", "x=[1e308,1e308]"],
    ["eval", "y = x @ x", "x=[1e200,1e200]"],
    ["eval", "y = mean(x[2:1])", "x=[1,2,3]"],
    ["eval", "y = x * 1", "x=[" + ",".join(["1e308"] * 20) + "]"],  # a summary's mean
    ["show", "y = x * 1", "x=[" + ",".join(["1e308"] * 20) + "]"],
    ["dot", "y = sum(x * 1e-300)", "x=[" + ",".join(["1e308"] * 20) + "]", "--backward"],
    ["grad", "y = sum(sqrt(x) * z)", "x=[0,1]", "z=[0,1]"],
    ["explain", "y = sum(sqrt(x) * z)", "x=[0,1]", "z=[0,1]"],
    ["explain", "y = sum(log(x) * z)", "x=[1e-320,1]", "z=[0,1]", "--format", "json"],
    ["explain", "y = 0 * x ^ -1", "x=1e-300"],
    ["dot", "y = 0 * x ^ -1", "x=1e-300", "--backward"],
    ["gradcheck", "y = sum(max(x, y))", "x=[1e308,1]", "y=[-1e308,2]"],
    ["gradcheck", "y = sum(1 / x)", "--points", "3", "--range", "-1e-300,1e-300"],
    ["gradcheck", "input x = [1, 2]; y = sum(log(x))", "--points", "3", "--range", "-1,1"],
    ["gradcheck", "input x = [1, 2]; y = sum(x)", "--points", "2", "--range", "-1e308,1e308"],
    ["check", "y = x * 1", "x=[1e308,1]", "--expect", "y=[-1e308,1]"],
    ["grad", "y = sum(softmax(x) * c)", "x=[1e308,-1e308]", "c=[1e308,-1e308]"],
]


def test_no_numpy_warning_reaches_stderr(cli):
    failed = []
    for args in NASTY:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning would end the command with exit 70
            result = cli(*args)
        if (
            result.exit_code not in (0, 1, 2, 4)
            or "Warning" in result.stderr
            or "site-packages" in result.stderr
        ):
            failed.append((args, result.exit_code, result.stderr))
    assert not failed


def test_overflowing_differences_are_differences_not_shapes(cli):
    result = cli("check", "y = x * 1", "x=1e308", "--expect", "y=-1e308")
    assert result.exit_code == 1
    assert "(expected -1e308, difference inf)" in result.stdout


def test_a_range_too_wide_to_draw_from_is_a_usage_error(cli):
    result = cli("gradcheck", "y = x * 2", "--points", "2", "--range", "-1e308,1e308")
    assert result.exit_code == 2
    assert "HI - LO must be a finite number" in result.stderr


def test_an_undefined_tensor_point_is_skipped_element_by_element(cli):
    result = cli("gradcheck", "input x = [1, 2]; y = sum(log(x))", "x=[-1,2]")
    assert result.exit_code == 4  # the user's own point: the usual error
    sampled = cli(
        "gradcheck",
        "input x = [1, 2]; y = sum(log(x))",
        "--points",
        "2",
        "--range",
        "-1,1",
        "--seed",
        "1",
    )
    assert sampled.exit_code == 0, sampled.stderr
    assert re.search(r"x\[0\]\s+-?\d.*skip \(undefined\)", sampled.stdout)


# 6. no derivatives with respect to constants ---------------------------------------------------


def test_explain_has_no_partials_with_respect_to_constants(cli):
    text = cli("explain", ROSENBROCK).stdout
    assert "∂t5/∂2" not in text and "nan" not in text
    assert "Through ^: ∂t5/∂t4 = 2·t4 = -0.88\n" in text
    assert ("x̄ = t̅1̅ · ∂t1/∂x + t̅3̅ · ∂t3/∂x = 4.4 · (-1) + 88 · (-2.4) = -215.6") in text
    latex = cli("explain", ROSENBROCK, "--format", "markdown", "--math", "latex").stdout
    assert r"\partial 2}" not in latex and "nan" not in latex
    steps = json.loads(cli("explain", ROSENBROCK, "--format", "json").stdout)
    wrt = [p["wrt"] for s in steps["backward"]["through"] for p in s["partials"]]
    assert "2" not in wrt and "t4" in wrt
    assert steps["gradients"] == pytest.approx({"a": 4.4, "k": 0.1936, "x": -215.6, "y": -88.0})


def test_a_node_of_constants_only_has_no_through_step(cli):
    steps = json.loads(cli("explain", "y = x * (2 * 3)", "x=1", "--format", "json").stdout)
    assert [s["node"] for s in steps["backward"]["through"]] == ["y"]
    assert steps["gradients"] == {"x": 6.0}
    tensors = json.loads(
        cli("explain", "y = sum(x * ([1, 2] * 2))", "x=[1,1]", "--format", "json").stdout
    )
    through = tensors["backward"]["through"]
    assert [s["node"] for s in through] == ["y", "t2"]
    assert [p["wrt"] for p in through[1]["partials"]] == ["x", "t1"]  # t1 = [1, 2] * 2


@pytest.mark.parametrize(
    "program, bindings",
    [
        (ROSENBROCK, []),
        ("y = sum(x ^ 2) + sum(x * [1, 2])", ["x=[-1,3]"]),
    ],
)
def test_backward_diagrams_label_no_edge_from_a_constant(cli, program, bindings):
    source = cli("dot", program, *bindings, "--backward").stdout
    graph = parse(Path(program).read_text() if program.endswith(".cg") else program)
    constants = {f"n{i}" for i, op in enumerate(graph.ops) if op.name == "const"}
    statements = source.split("\n\t")  # a label's own line breaks are not followed by a tab
    edges = [
        m.groups()
        for m in map(re.compile(r"(n\d+) -> (n\d+)(.*)", re.S).fullmatch, statements)
        if m
    ]
    assert {tail for tail, _, _ in edges} & constants
    for tail, _, attrs in edges:
        if tail in constants:  # a data-flow edge (with the shape it carries): no derivative
            assert "dir=back" not in attrs and "∂" not in attrs, attrs
        else:
            # a local partial (∂t1/∂x) or a reverse rule over a gradient (x̄, t̅1̅ @ xᵀ)
            assert "dir=back" in attrs and any(c in attrs for c in "∂\u0304\u0305"), attrs
    assert "nan" not in source and "log(" not in source  # ∂(t ^ 2)/∂2 = t^2·log(t)


def test_no_warning_on_the_real_stderr():
    """As a user runs it: Python's own warning printer, not the test runner's capture."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "cgraph_cli", "eval", "y = sum(x)", "x=[1e308,1e308]"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 4, done.stderr
    assert "Warning" not in done.stderr and "site-packages" not in done.stderr
    assert done.stderr.startswith("<expr>:1:5: error: sum(x) overflows")
