"""Every op of the table, every rule, under every interpretation: the float value rule and the
array one agree; each local partial (compiled for floats, on arrays, as a derivative program
built by the graph builder) matches a central finite difference; the formula and LaTeX
printers write each rule; forward mode agrees with reverse mode; each example parses to its op;
the conventions at kinks hold. Parametrized over the table itself: a new op is tested the
moment it is added."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from op_cases import arguments, cases, example
from test_docs import documented_functions

from cgraph_cli import DomainError, grad, jvp, parse, to_source, validate
from cgraph_cli.core.interpret import ARRAYS, constant_partials, partials_function, value_function
from cgraph_cli.core.ops import FUNCTIONS, OPS
from cgraph_cli.passes.grad_graph import grad_graph
from cgraph_cli.render.formulas import Formula, Latex
from cgraph_cli.run.evaluate import forward

SCALAR = [op for op in OPS.values() if op.arity and op.py is not None]
DIFFERENTIABLE = [op for op in SCALAR if op.differentiable]
TENSOR = [op for op in OPS.values() if op.vjp is not None]
# Points off every kink and tie; those outside an op's domain are skipped for that op.
POINTS = [
    (0.7, 1.3, 0.5),
    (1.9, 0.6, -1.0),
    (2.3, 2.9, 1.5),
    (-1.1, 0.4, 0.0),
    (-0.6, -1.7, 2.0),
    (0.35, -2.2, -0.5),
]


def _value(op, args):
    return value_function(op)(*args)


def _defined(op, args) -> bool:
    try:
        return math.isfinite(_value(op, args))
    except (ArithmeticError, ValueError):
        return False


def _points(op):
    pts = [p[: op.arity] for p in POINTS if _defined(op, p[: op.arity])]
    if op.name == "pow":  # a negative base only with a whole exponent
        pts += [(-1.5, 2.0), (-0.8, 3.0)]
    assert len(pts) >= 3, f"{op.name}: too few points in its domain"
    return pts


def _numeric(op, args, k):
    h = 1e-6 * max(1.0, abs(args[k]))
    up, down = list(args), list(args)
    up[k] += h
    down[k] -= h
    return (_value(op, up) - _value(op, down)) / (2 * h)


@pytest.mark.parametrize("op", SCALAR, ids=lambda op: op.name)
def test_float_and_array_value_rules_agree(op):
    for args in _points(op):
        on_arrays = ARRAYS.apply(op, [np.array([a, a]) for a in args], ())
        # NumPy's tanh and the overflow-free sigmoid may differ from math's in the last bit
        assert np.asarray(on_arrays).tolist() == pytest.approx(
            [_value(op, args)] * 2, rel=1e-15, abs=1e-300
        ), op.name


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
def test_partials_match_central_differences_under_every_interpretation(op):
    assert len(op.partials) == op.arity, f"{op.name}: one rule per argument"
    for args in _points(op):
        out = _value(op, args)
        # pow's ∂/∂y at a negative base is undefined: not asked for there
        needs = tuple(not (op.name == "pow" and k == 1 and args[0] < 0) for k in range(op.arity))
        compiled = partials_function(op, needs)(*args, out)
        on_arrays = [
            None if rule is None else float(rule(ARRAYS, *map(np.float64, args), np.float64(out)))
            for rule in op.partials
        ]
        for k, rule in enumerate(op.partials):
            if rule is None or (op.name == "pow" and k == 1 and args[0] < 0):
                continue
            numeric = _numeric(op, args, k)
            assert compiled[k] == pytest.approx(numeric, rel=1e-6, abs=1e-7), (op.name, args, k)
            assert on_arrays[k] == pytest.approx(compiled[k], rel=1e-12, abs=1e-15), op.name


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
def test_derivative_programs_of_each_op_evaluate_to_the_gradients(op):
    """The graph interpretation: each rule builds a derivative program that reads back and
    evaluates to what the numeric reverse pass gives."""
    graph = parse(op.example)
    derived = grad_graph(graph)
    text = to_source(validate(derived.graph))
    again = validate(parse(text))
    for args in _points(op):
        if op.name == "pow" and args[0] < 0:
            continue
        bindings = dict(zip(graph.inputs, args))
        expected = grad(graph, bindings).gradients
        values = forward(again, bindings)
        for name, holder in derived.gradients.items():
            got = values[again.names[holder]]
            assert got == pytest.approx(expected[name], rel=1e-12, abs=1e-15), (op.name, text)


@pytest.mark.parametrize("op", [op for op in OPS.values() if op.arity], ids=lambda op: op.name)
def test_every_rule_prints_as_a_formula_and_as_latex(op):
    names = ["x", "y", "z"][: op.arity]
    params = example(op)[1]  # reshape(x, [2, 3]): ((2, 3),)
    from cgraph_cli.core.autodiff import rule_pullback

    for printer in (Formula(), Latex()):
        pulled = rule_pullback(
            printer, op, names, "o", params, "g", [True] * op.arity, summed=False
        )
        assert len(pulled) == op.arity, f"{op.name}: one gradient per argument"
        for c in pulled:
            if c is not None:
                assert printer.write(c).strip(), op.name


def test_formulas_read_as_a_textbook_writes_them():
    f = Formula()
    assert [f.write(r(f, "x", "y", "o")) for r in OPS["div"].partials] == ["1/y", "-o/y"]
    assert f.write(OPS["pow"].partials[0](f, "x", 2.0, "o")) == "2·x"
    assert f.write(OPS["tanh"].partials[0](f, "x", "o")) == "1 - o²"
    assert f.write(OPS["relu"].partials[0](f, "x", "o")) == "[x > 0]"
    assert f.write(OPS["sigmoid"].partials[0](f, "x", "o")) == "o·(1 - o)"


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
def test_forward_mode_agrees_with_reverse_mode(op):
    graph = parse(op.example)
    for args in _points(op):
        if op.name == "pow" and args[0] < 0:
            continue  # ∂/∂y is undefined there: see test_pow_of_a_negative_base
        bindings = dict(zip(graph.inputs, args))
        result = grad(graph, bindings)
        for name in graph.inputs:
            tangent = jvp(graph, result.values, {name: 1.0})[graph.output]
            assert tangent == pytest.approx(result.gradients[name], rel=1e-12), (op.name, name)


@pytest.mark.parametrize("op", [op for op in OPS.values() if op.example], ids=lambda op: op.name)
def test_example_parses_to_the_op(op):
    graph = validate(parse(op.example))
    assert graph.ops[graph.output] is op
    assert to_source(parse(to_source(graph))) == to_source(graph)


def test_function_table_is_the_set_the_language_promises():
    """The promise is docs/language.md's list of functions (a human writes a new function's
    line)."""
    promised = documented_functions()
    assert sorted(FUNCTIONS) == sorted(promised), set(FUNCTIONS) ^ promised
    assert sorted(FUNCTIONS["max"]) == [1, 2]  # max(x): largest element; max(x, y): elementwise


@pytest.mark.parametrize("op", [op for op in OPS.values() if op.positive], ids=lambda op: op.name)
def test_an_op_marked_positive_is_above_zero_wherever_it_is_defined(op):
    """simplify turns x / x into 1 for such an op: a wrong mark would change values. (SymPy
    proves the mark, and that no other op earns it, in tests/test_properties.py.)"""
    assert op.py is not None, f"{op.name}: positive is checked on the float rule; add a check"
    grid = [k / 4 for k in range(-120, 121)]  # -30 to 30: nothing underflows to 0 yet
    points = [p for p in itertools.product(grid, repeat=op.arity) if _defined(op, p)]
    assert len(points) >= len(grid), f"{op.name}: too few points in its domain"
    low = min(points, key=lambda p: _value(op, p))
    assert _value(op, low) > 0.0, (op.name, low)
    on_arrays = ARRAYS.apply(op, [np.array([p[k] for p in points]) for k in range(op.arity)], ())
    assert np.all(np.asarray(on_arrays) > 0.0), op.name


#: Finite numbers at the ends and the odd places of the float line: the largest, the
#: smallest, where exp and a square overflow, the poles of 1/x, log and atanh.
EXTREMES = [
    *(s * v for s in (1.0, -1.0) for v in (1.7976931348623157e308, 1e154, 710.0, 1.0, 0.5)),
    *(s * v for s in (1.0, -1.0) for v in (2.2250738585072014e-308, 5e-324)),
    0.0,
    -0.0,
]


@pytest.mark.parametrize("op", [op for op in OPS.values() if op.finite], ids=lambda op: op.name)
def test_an_op_marked_finite_is_finite_at_every_finite_argument(op):
    """The rows mode does not check a value of such an op where it watches its arguments:
    a wrong mark would let a row through with a value the interpreter refuses."""
    assert op.py is not None and op.elementwise, f"{op.name}: finite is a mark of float rules"
    points = list(itertools.product(EXTREMES, repeat=op.arity))
    for p in points:
        assert _defined(op, p), (op.name, p, "not finite, or undefined")
    with np.errstate(all="ignore"):
        on_arrays = ARRAYS.apply(
            op, [np.array([p[k] for p in points]) for k in range(op.arity)], ()
        )
    assert np.all(np.isfinite(on_arrays)), op.name


def test_ops_that_overflow_or_are_undefined_somewhere_are_not_marked_finite():
    for name in ("add", "mul", "div", "pow", "exp", "log", "sqrt", "tan", "xlogy"):
        assert not OPS[name].finite, name
        op = OPS[name]
        fails = [p for p in itertools.product(EXTREMES, repeat=op.arity) if not _defined(op, p)]
        assert fails or name == "tan", name  # (tan: no float is a pole; left unmarked)


def test_the_fast_loops_hints_are_derived_from_the_rules():
    assert constant_partials(OPS["add"]) == (1.0, 1.0)
    assert constant_partials(OPS["neg"]) == (-1.0,)
    assert constant_partials(OPS["mul"]) is None


@pytest.mark.parametrize(
    "program, expected",
    [
        ("relu(x)", {"x": 0.0}),  # relu'(0) = 0, as PyTorch
        ("abs(x)", {"x": 0.0}),  # abs'(0) = 0, as PyTorch
        ("max(x, y)", {"x": 0.5, "y": 0.5}),  # a tie splits the gradient, as torch.maximum
        ("min(x, y)", {"x": 0.5, "y": 0.5}),
    ],
)
def test_conventions_at_kinks(program, expected):
    assert grad(program, {name: 0.0 for name in expected}).gradients == expected


@pytest.mark.parametrize(
    "program, bindings, gradients",
    [
        ("max(x, y)", {"x": 2, "y": 1}, {"x": 1.0, "y": 0.0}),
        ("min(x, y)", {"x": 2, "y": 1}, {"x": 0.0, "y": 1.0}),
        ("relu(x)", {"x": -2}, {"x": 0.0}),
        ("abs(x)", {"x": -2}, {"x": -1.0}),
        ("x ^ y", {"x": 0, "y": 2}, {"x": 0.0, "y": 0.0}),  # d/dy at a zero base: 0, as PyTorch
        ("x ^ 0", {"x": 0}, {"x": 0.0}),
        ("where(x > y, x, y)", {"x": 2, "y": 1}, {"x": 1.0, "y": 0.0}),
        ("(x > y) * x", {"x": 2, "y": 1}, {"x": 1.0, "y": 0.0}),  # a comparison: no gradient
        ("sign(x) * 3", {"x": -2}, {"x": 0.0}),
    ],
)
def test_one_sided_rules(program, bindings, gradients):
    assert grad(program, bindings).gradients == gradients


def test_conventions_hold_on_tensors_too():
    result = grad("y = sum(relu(x) + abs(x) + max(x, 0))", {"x": [0.0, 0.0, 2.0]})
    assert result.gradients["x"].tolist() == [0.5, 0.5, 3.0]


def test_sigmoid_is_stable_far_from_zero():
    values = forward(parse("a = sigmoid(x)"), {"x": -1000})
    assert values[-1] == 0.0
    assert grad("sigmoid(x)", {"x": 1000}).gradients["x"] == 0.0


def test_pow_of_a_negative_base():
    assert grad("x ^ 2", {"x": -1.5}).gradients == {"x": -3.0}
    assert grad("x ^ 3", {"x": -2}).gradients == {"x": 12.0}
    with pytest.raises(DomainError) as err:
        grad("g = x ^ y", {"x": -1.5, "y": 2})
    assert "derivative of (-1.5) ^ 2" in err.value.message
    assert err.value.where() == "<expr>:1:5"


@pytest.mark.parametrize("op", TENSOR, ids=lambda op: op.name)
def test_tensor_rules_pair_vjp_with_jvp(op):
    """⟨v, J u⟩ computed by the jvp rule equals ⟨Jᵀ v, u⟩ computed by the vjp rule, at every
    argument shape and parameter of tests/op_cases.py that the op's shape rule accepts."""
    rng = np.random.default_rng(0)
    found = cases(op)
    assert found, f"{op.name}: no argument shapes of tests/op_cases.py SHAPES fit its shape rule"
    for shapes, params in found:
        xs = arguments(op, shapes, params, rng, -2.0, 2.0)
        out = ARRAYS.apply(op, xs, params)
        assert np.shape(out) == op.shape(list(shapes), params), (op.name, shapes, params)
        us = [rng.normal(size=np.shape(x)) for x in xs]
        v = rng.normal(size=np.shape(out))
        forward_ = op.jvp(ARRAYS, us, xs, out, params)
        backward_ = op.vjp(ARRAYS, v, xs, out, params)
        assert len(backward_) == op.arity, f"{op.name}: one gradient per argument"
        lhs = float(np.sum(v * forward_))
        rhs = sum(float(np.sum(c * u)) for c, u in zip(backward_, us) if c is not None)
        assert lhs == pytest.approx(rhs, rel=1e-10), (op.name, shapes, params)


@pytest.mark.parametrize("op", [o for o in OPS.values() if o.arity], ids=lambda op: op.name)
def test_every_ops_latex_template_takes_its_arguments(op):
    """A template is filled by str.format: TeX's own braces must be doubled
    (log_softmax's \\operatorname{softmax} made explain fail)."""
    if op.name == "index":  # spelled by the printer itself, with its subscript
        return
    text = op.latex.format(*[f"x_{k}" for k in range(op.arity)])
    assert all(f"x_{k}" in text for k in range(op.arity)), text


@pytest.mark.parametrize("scipy", [True, False], ids=["scipy", "math"])
def test_the_array_erf_is_math_erfs_to_a_few_units_in_the_last_place(scipy, monkeypatch):
    """erf on arrays is SciPy's where installed (in C: a GELU's million elements), else
    math.erf element by element: either way within 3 units in the last place of math.erf,
    tiny and huge arguments included."""
    import math
    import sys

    from cgraph_cli.core.runtime import np_erf

    if scipy:
        pytest.importorskip("scipy.special")
    else:
        monkeypatch.setitem(sys.modules, "scipy.special", None)  # import fails: the fallback
    x = np.concatenate([np.linspace(-7, 7, 20001), np.geomspace(1e-300, 1, 400)])
    x = np.concatenate([x, -x, [0.0, 1e308, -np.inf, np.inf]])
    want = np.array([math.erf(v) for v in x])
    got = np_erf(x)
    assert np.all(np.abs(got - want) <= 3 * np.spacing(np.abs(want)))
    if not scipy:
        assert np.array_equal(got, want)
