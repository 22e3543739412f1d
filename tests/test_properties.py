"""Property tests over random programs: gradients against central finite differences and against
SymPy's exact derivatives; forward mode against reverse mode; print -> parse identity; our
parser against Lark's (tests/test_scanner.py)."""

from __future__ import annotations

import math

import pytest
import sympy
from hypothesis import HealthCheck, assume, example, given, settings
from strategies import INPUTS, expressions, points, programs

from cgraph_cli import (
    DomainError,
    jvp,
    parse,
    to_source,
    validate,
    vjp,
)
from cgraph_cli.app.gradcheck import gradcheck
from cgraph_cli.core.interpret import ARRAYS
from cgraph_cli.core.ops import OPS
from cgraph_cli.run.evaluate import forward

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _at_kink(graph, values) -> bool:
    """True where a relu/abs/min/max argument sits exactly on its kink (SymPy's derivative
    there is not PyTorch's convention)."""
    return any(
        op.kink(ARRAYS, *(values[a] for a in graph.args[i])) == 0.0
        for i, op in enumerate(graph.ops)
        if op.kink is not None
    )


def _evaluate(graph, bindings):
    try:
        values = forward(graph, bindings)
        return values, vjp(graph, values)
    except DomainError:
        return None


@PROPERTY
@given(programs(), points)
def test_gradients_match_central_differences(program, point):
    # The same check as `cgraph gradcheck`: kinks and undefined points are skipped, not failed.
    graph = validate(parse(program))
    assume(graph.inputs)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None)
    # Finite differences in float64 mean little for huge values or steep curvature.
    assume(all(abs(v) < 1e6 for v in done[0]))
    checks = gradcheck(graph, bindings, rtol=1e-4, atol=1e-5)
    compared = [c for c in checks if c.status in ("ok", "mismatch") and abs(c.numeric) < 1e4]
    assume(compared)
    for c in compared:
        assert c.status == "ok", (program, c)


_SYMPY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "neg": lambda a: -a,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "exp": sympy.exp,
    "log": sympy.log,
    "sqrt": sympy.sqrt,
    "tanh": sympy.tanh,
    "sigmoid": lambda a: 1 / (1 + sympy.exp(-a)),
    "softplus": lambda a: sympy.log(1 + sympy.exp(a)),
    "erf": sympy.erf,
    "relu": lambda a: sympy.Max(a, 0),
    "abs": sympy.Abs,
    "min": sympy.Min,
    "max": sympy.Max,
    "sign": sympy.sign,
    "xlogy": lambda a, b: a * sympy.log(b),
    "where": lambda c, a, b: sympy.Piecewise((a, sympy.Ne(c, 0)), (b, True)),
    "lt": lambda a, b: sympy.Piecewise((1, a < b), (0, True)),
    "le": lambda a, b: sympy.Piecewise((1, a <= b), (0, True)),
    "gt": lambda a, b: sympy.Piecewise((1, a > b), (0, True)),
    "ge": lambda a, b: sympy.Piecewise((1, a >= b), (0, True)),
    "eq": lambda a, b: sympy.Piecewise((1, sympy.Eq(a, b)), (0, True)),
    "ne": lambda a, b: sympy.Piecewise((1, sympy.Ne(a, b)), (0, True)),
    # 1 or 0 from the sign alone: no relation for SymPy to solve (an old SymPy cannot decide
    # Eq(log(x), 0) where log(x) may be complex).
    "logical_and": lambda a, b: sympy.Abs(sympy.sign(a)) * sympy.Abs(sympy.sign(b)),
    "logical_or": lambda a, b: 1 - (1 - sympy.Abs(sympy.sign(a))) * (1 - sympy.Abs(sympy.sign(b))),
    "logical_not": lambda a: 1 - sympy.Abs(sympy.sign(a)),
}


#: The ops random expressions are drawn from (tests/strategies.py): every op with a float rule.
#: Each needs its SymPy translation above, written by hand: the oracle that proves its rules.
SCALAR = [op for op in OPS.values() if op.arity and op.py is not None and not op.surrogate]


def test_sympy_table_covers_every_op():
    missing = [op.name for op in SCALAR if op.name not in _SYMPY]
    assert not missing, f"no SymPy translation in tests/test_properties.py _SYMPY for {missing}"
    stray = sorted(set(_SYMPY) - {op.name for op in SCALAR})
    assert not stray, f"_SYMPY translates {stray}, which the op table has no float rule for"
    for op in SCALAR:
        expr = _SYMPY[op.name](*sympy.symbols("x y z", real=True)[: op.arity])
        assert isinstance(expr, sympy.Basic), (op.name, "a translation takes its arguments")


@pytest.mark.parametrize("op", SCALAR, ids=lambda op: op.name)
def test_the_positive_mark_is_what_sympy_proves(op):
    """`positive` on an entry (simplify's x / x = 1) is set by hand: SymPy proves each mark,
    and an op it proves positive must carry the mark."""
    assert op.name in _SYMPY, f"{op.name}: no SymPy translation (see the test above)"
    expr = _SYMPY[op.name](*sympy.symbols("x y z", real=True)[: op.arity])
    proved = expr.is_positive is True
    assert op.positive == proved, (
        f"{op.name}: marked positive={op.positive} in the op table, but SymPy "
        + ("proves its value is above 0" if proved else "cannot prove its value is above 0")
    )


def _to_sympy(graph, symbols):
    exprs = []
    for i, op in enumerate(graph.ops):
        if op.name == "input":
            exprs.append(symbols[graph.labels[i]])
        elif op.name == "const":
            exprs.append(sympy.Float(graph.consts[i], 30))
        else:
            exprs.append(_SYMPY[op.name](*(exprs[a] for a in graph.args[i])))
    return exprs[graph.output]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(max_leaves=5), points)
@example("(((x - y) ^ x))", (1.0, 1.0, 1.0))
def test_gradients_match_sympy(expression, point):
    graph = parse(f"out = {expression}")
    assume(graph.inputs)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None)
    values, adjoints = done
    assume(not _at_kink(graph, values) and all(abs(v) < 1e8 for v in values))
    # a power of a base that is exactly 0: PyTorch's convention (d/dy = 0 there, as cgraph),
    # SymPy's 0 * log(0) evaluated in floats (a seed found (x - y) ^ x at x = y: 1 and 1e-33)
    assume(not any(op.name == "pow" and values[graph.args[i][0]] == 0.0
                   for i, op in enumerate(graph.ops)))  # fmt: skip
    symbols = {name: sympy.Symbol(name, real=True) for name in graph.inputs}
    expr = _to_sympy(graph, symbols)
    at = {symbols[name]: sympy.Float(value, 30) for name, value in bindings.items()}
    for name, node in graph.inputs.items():
        exact = sympy.diff(expr, symbols[name]).evalf(30, subs=at)
        assume(exact.is_real and exact.is_finite)
        assert adjoints[node] == pytest.approx(float(exact), rel=1e-9, abs=1e-12), (
            expression,
            name,
        )


@PROPERTY
@given(programs(), points)
@example("t0 = (xlogy(x, z))\nt1 = --(0.5 / t0)\nt2 = (x * t1)", (1.75, 1.0, 0.99999))
def test_forward_mode_matches_reverse_mode(program, point):
    graph = parse(program)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None)
    values, adjoints = done
    # Both modes sum the same partials in another order: a derivative that cancels to 0
    # carries the rounding of its largest terms (x * 0.5 / (x log z) at z = 0.99999: terms of
    # 3e4, a sum of 0 or -3.6e-12, as CI's seed found)
    largest = max([1.0, *(abs(v) for v in values if isinstance(v, float) and math.isfinite(v))])
    for name, node in graph.inputs.items():
        tangent = jvp(graph, values, {name: 1.0})[graph.output]
        assert tangent == pytest.approx(adjoints[node], rel=1e-9, abs=1e-12 * largest)


def _ir(graph):
    defaults = {k: getattr(v, "tolist", lambda v=v: v)() for k, v in graph.defaults.items()}
    return [str(node) for node in graph], graph.output, defaults


@PROPERTY
@given(programs())
def test_print_then_parse_is_the_identity(program):
    graph = validate(parse(program))
    text = to_source(graph)
    assert _ir(parse(text)) == _ir(graph), text
    assert to_source(parse(text)) == text
