"""Property tests over random programs: gradients against central finite differences and against
SymPy's exact derivatives; forward mode against reverse mode; print -> parse identity; our
parser loop against Lark's."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import INPUTS, expressions, points, programs

from cgraph_cli import (
    CgraphError,
    DomainError,
    ParseError,
    jvp,
    parse,
    to_source,
    validate,
    vjp,
)
from cgraph_cli.forward import forward
from cgraph_cli.gradcheck import gradcheck

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _at_kink(graph, values) -> bool:
    """True where a relu/abs/min/max argument sits exactly on its kink (SymPy's derivative
    there is not PyTorch's convention)."""
    return any(
        op.kink(*(values[a] for a in graph.args[i])) == 0.0
        for i, op in enumerate(graph.ops) if op.kink is not None
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
    "relu": lambda a: sympy.Max(a, 0),
    "abs": sympy.Abs,
    "min": sympy.Min,
    "max": sympy.Max,
}


def test_sympy_table_covers_every_op():
    from cgraph_cli.ops import OPS

    assert set(_SYMPY) == {name for name, op in OPS.items() if op.forward is not None}


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
def test_gradients_match_sympy(expression, point):
    graph = parse(f"out = {expression}")
    assume(graph.inputs)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None)
    values, adjoints = done
    assume(not _at_kink(graph, values) and all(abs(v) < 1e8 for v in values))
    symbols = {name: sympy.Symbol(name, real=True) for name in graph.inputs}
    expr = _to_sympy(graph, symbols)
    at = {symbols[name]: sympy.Float(value, 30) for name, value in bindings.items()}
    for name, node in graph.inputs.items():
        exact = sympy.diff(expr, symbols[name]).evalf(30, subs=at)
        assume(exact.is_real and exact.is_finite)
        assert adjoints[node] == pytest.approx(float(exact), rel=1e-9, abs=1e-12), (expression, name)


@PROPERTY
@given(programs(), points)
def test_forward_mode_matches_reverse_mode(program, point):
    graph = parse(program)
    bindings = {name: point[k] for k, name in enumerate(INPUTS) if name in graph.inputs}
    done = _evaluate(graph, bindings)
    assume(done is not None)
    values, adjoints = done
    for name, node in graph.inputs.items():
        tangent = jvp(graph, values, {name: 1.0})[graph.output]
        assert tangent == pytest.approx(adjoints[node], rel=1e-9, abs=1e-12)


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


@PROPERTY
@given(programs())
def test_our_parser_loop_agrees_with_larks(program):
    assert _ir(parse(program)) == _ir(parse(program, engine="lark"))



_MUTATIONS = st.sampled_from(["+", "(", ")", ",", "*", "= ", "\n", "max(", "2 3", "^^", "input ",
                              "[", "]", "[1, 2]", "@", ":", "[0]", "sum("])


@PROPERTY
@given(programs(), _MUTATIONS, st.integers(0, 200))
def test_broken_programs_fail_the_same_way_in_both_loops(program, junk, at):
    at = min(at, len(program))
    broken = program[:at] + junk + program[at:]
    outcomes = []
    for engine in ("fast", "lark"):
        try:
            outcomes.append(_ir(parse(broken, engine=engine)))
        except ParseError as e:
            assert e.span is not None and e.source is not None
            outcomes.append(e.render())
        except CgraphError as e:  # pragma: no cover - parse raises only ParseError
            pytest.fail(f"{type(e).__name__}: {e}")
    assert outcomes[0] == outcomes[1]


TENSOR_PROGRAMS = [
    (Path(__file__).resolve().parent.parent / "samples" / f"{name}.cg").read_text()
    for name in ("mlp", "logistic_regression", "softmax_cross_entropy")
] + ["y = sum((a + b)[0, 1:], -1) + reshape(x, [2, -1])[::2] @ -[1, 2]\n"]


@pytest.mark.parametrize("program", TENSOR_PROGRAMS)
def test_both_parser_loops_read_tensor_programs_alike(program):
    assert _ir(parse(program)) == _ir(parse(program, engine="lark"))


@PROPERTY
@given(st.sampled_from(TENSOR_PROGRAMS), _MUTATIONS, st.integers(0, 400))
def test_broken_tensor_programs_fail_the_same_way_in_both_loops(program, junk, at):
    test_broken_programs_fail_the_same_way_in_both_loops.hypothesis.inner_test(program, junk, at)
