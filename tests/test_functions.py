"""Functions in the language (`def`): a call is its body inlined, so every command gives the
numbers of the program with each call written out by hand; the groups the calls leave; the
errors inside bodies, with both places; what is refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cgraph_cli as cg
from cgraph_cli.core.groups import called_at, group_of, path
from cgraph_cli.run.compile import compile_module

LAYERS = """\
def layer(x, W, b):
    return tanh(W @ x + b)

def mse(y, t):
    return mean((y - t)^2)

input x = [1, 2], t = [0.5]
input W1 = [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]], b1 = [0, 0.1, -0.1]
input W2 = [[0.2, -0.3, 0.4]], b2 = [0.05]
h = layer(x, W1, b1)
y = layer(h, W2, b2)
loss = mse(y, t)
"""

BY_HAND = """\
input x = [1, 2], t = [0.5]
input W1 = [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]], b1 = [0, 0.1, -0.1]
input W2 = [[0.2, -0.3, 0.4]], b2 = [0.05]
h = tanh(W1 @ x + b1)
y = tanh(W2 @ h + b2)
loss = mean((y - t)^2)
"""


def _same_ops(a: cg.Graph, b: cg.Graph) -> bool:
    return [(n.op.name, n.args) for n in a] == [(n.op.name, n.args) for n in b]


def test_a_call_is_its_body_inlined():
    g, hand = cg.parse(LAYERS), cg.parse(BY_HAND)
    assert _same_ops(g, hand)
    assert cg.evaluate(g).value == cg.evaluate(hand).value
    ours, theirs = cg.grad(g).gradients, cg.grad(hand).gradients
    assert all((ours[k] == theirs[k]).all() for k in theirs)


def test_each_call_leaves_a_group():
    g = cg.parse(LAYERS)
    assert [(grp.key, grp.label, grp.parent) for grp in g.groups] == [
        ("layer#1", "layer(x, W1, b1)", -1),
        ("layer#2", "layer(h, W2, b2)", -1),
        ("mse#1", "mse(y, t)", -1),
    ]
    layer2 = g.groups[1]
    assert g.labels[layer2.output] == "y"
    assert [g.display_name(a) for a in layer2.args] == ["h", "W2", "b2"]
    inside = [i for i, k in enumerate(group_of(g)) if k == 1]
    assert [g.ops[i].name for i in inside] == ["matmul", "add", "tanh"]


def test_nested_calls_nest_their_groups():
    g = cg.parse(
        "def f(u):\n    return u + 1\ndef h(u):\n    v = f(u)\n    return f(v) * 2\ny = h(x)"
    )
    assert [path(g, k) for k in range(len(g.groups))] == ["h#1/", "h#1/f#1/", "h#1/f#2/"]
    assert g.groups[1].parent == 0


def test_to_source_writes_the_functions_back():
    g = cg.parse(LAYERS)
    text = cg.to_source(g)
    assert text.startswith("def layer(x, W, b):\n    return tanh(W @ x + b)\n")
    assert "h = layer(x, W1, b1)\n" in text and "loss = mse(y, t)\n" in text
    again = cg.parse(text)
    assert _same_ops(g, again) and cg.to_source(again) == text


def test_an_error_in_a_body_says_through_which_call():
    with pytest.raises(cg.EvalError) as e:
        cg.evaluate(LAYERS, {"W2": [[0.2, -0.3]]})
    assert e.value.message == (
        "(1, 2) @ (3,): inner dimensions 2 and 3 differ in layer(h, W2, b2) called at <expr>:11:5"
    )
    assert e.value.where() == "<expr>:2:17"  # in the body


def test_the_cli_shows_both_places(cli, tmp_path):
    program = tmp_path / "model.cg"
    program.write_text(LAYERS)
    result = cli("eval", str(program), "W2=[[0.2,-0.3]]")
    assert result.exit_code == 4
    assert result.stderr.startswith(f"{program}:2:17: error: (1, 2) @ (3,)")
    assert f"in layer(h, W2, b2) called at {program}:11:5" in result.stderr
    assert "2 |     return tanh(W @ x + b)" in result.stderr


@pytest.mark.parametrize(
    "program, words, where",
    [
        ("def f(u):\n    return f(u)\ny = f(x)", "f calls itself (f -> f)", "2:12"),
        (
            "def f(u):\n    return g(u)\ndef g(u):\n    return f(u)\ny = f(x)",
            "unknown function 'g'",  # a function calls only those defined above it
            "2:12",
        ),
        ("def f(u):\n    return u * W\ny = f(x)", "'W' is not a parameter of f", "2:16"),
        ("W = 2\ndef f(u):\n    return u * W\ny = f(x)", "'W' is not a parameter of f", "3:16"),
        ("def f(u):\n    v = u\ny = f(x)", "function 'f' has no `return`", "1:1"),
        ("def f(u):\n    return u\n    v = u\ny = f(x)", "nothing may follow `return`", "2:5"),
        ("def f(u):\n    u + 1\n    return u\ny = f(x)", "computed and then lost", "2:5"),
        ("y = x\nreturn y", "`return` is written only in a function's body", "2:1"),
        ("def sin(u):\n    return u\ny = sin(x)", "'sin' is a built-in function", "1:5"),
        ("def f(u, u):\n    return u\ny = f(x, x)", "parameter 'u' is named twice", "1:10"),
        ("def f(u):\n    return u\ny = f(x, x)", "f takes 1 argument, got 2", "3:5"),
        ("def f(u):\n    return u\ndef f(u):\n    return u\ny = f(x)", "defined twice", "3:5"),
        ("def f(u):\ny = f(x)", "expected an indented block after the function's header", "1:1"),
        (
            "for t in range(2):\n    def f(u):\n        return u\ny = 1",
            "a function is defined at the program's top level",
            "2:5",
        ),
        (
            "def f(u):\n    input z\n    return u\ny = f(x)",
            "inputs are declared at the program's top level",
            "2:5",
        ),
        (
            "def f(u):\n    for t in range(2):\n        return u\ny = f(x)",
            "outside the function's loops",
            "3:9",
        ),
        ("def f(u):\n    return u +\ny = f(x)", "expected an expression", "2:15"),
        (
            "def f(u):\n    return u\ny = f + 1",
            "'f' is a function of the program, not a value",
            "3:5",
        ),
        ("def f(u):\n    return u\nf = 2", "'f' names a function of the program", "3:1"),
        ("def = 3", "'def' begins a function's definition and cannot be a name", "1:5"),
        ("y = return + 1", "'return' is a keyword (it ends a function's body)", "1:5"),
        # an uncalled function is checked too
        ("def f(u):\n    return u * W\ny = x", "'W' is not a parameter of f", "2:16"),
    ],
)
def test_what_a_function_may_not_do(program, words, where):
    with pytest.raises(cg.ParseError) as e:
        cg.parse(program)
    assert words in e.value.message, e.value.message
    assert e.value.where() == f"<expr>:{where}"


def test_recursion_exits_3_at_the_cli(cli):
    result = cli("eval", "-e", "def f(u):\n    return f(u) + 1\ny = f(x)", "x=1")
    assert result.exit_code == 3
    assert "a graph is finite, so a function cannot be recursive" in result.stderr


def test_loops_in_a_function_and_functions_in_a_loop():
    with_fn = """\
def step(h, x, W):
    return tanh(W * h + x)
def twice(h):
    for k in range(2):
        h = h * 0.5 + 1
    return h
h = 0.1
for t in range(len(xs)):
    h = step(h, xs[t], W)
y = twice(h)
"""
    by_hand = """\
h = 0.1
for t in range(len(xs)):
    h = tanh(W * h + xs[t])
for k in range(2):
    h = h * 0.5 + 1
y = h
"""
    bindings = {"xs": [0.5, -1.0, 2.0], "W": 0.7}
    ours, theirs = cg.grad(with_fn, bindings), cg.grad(by_hand, bindings)
    assert ours.value == theirs.value
    assert ours.gradients["W"] == theirs.gradients["W"]
    assert ours.gradients["xs"].tolist() == theirs.gradients["xs"].tolist()


def test_stop_gradient_passes_the_value_and_no_gradient():
    r = cg.grad("y = stop_gradient(x) * x", {"x": 3.0})
    assert r.value == 9.0 and r.gradients == {"x": 3.0}
    target = cg.grad("loss = (w - stop_gradient(2 * w))^2", {"w": 1.0})
    assert target.gradients == {"w": -2.0}  # 2(w - 2w) through the first w only
    for target_, text, v in [
        ("python", "loss = (w - stop_gradient(2 * w))^2 + stop_gradient(v) * v", 2.0),
        ("numpy", "loss = (w - stop_gradient(2 * w))^2 + sum(stop_gradient(v) * v)", [1.0, -2.0]),
    ]:
        module: dict = {}
        source = compile_module(cg.parse(text), target_, bindings={"w": 1.0, "v": v})
        exec(compile(source, "<m>", "exec"), module)  # noqa: S102
        value, grads = module["grad"](w=1.0, v=v)
        assert float(grads["w"]) == -2.0
        assert np.array(grads["v"]).tolist() == v  # through the second v only
        assert value == 1.0 + np.sum(np.square(v))
    assert cg.hessian("y = stop_gradient(x) * x^2", {"x": 3.0})["hessian"] == [[6.0]]


# Random programs with random functions, against the same program written out by hand ------
OPS1 = ["sin({})", "tanh({})", "sigmoid({})", "-{}", "({} * 0.5)"]
OPS2 = ["({} + {})", "({} - {})", "({} * {})"]


@st.composite
def _expr(draw, names: list[str], depth: int = 3):
    """An expression over ``names``, as a format string and the names it reads, in order."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return "{}", [draw(st.sampled_from(names))]
    if draw(st.booleans()):
        text, used = draw(_expr(names, depth - 1))
        return draw(st.sampled_from(OPS1)).format(text), used
    a, ua = draw(_expr(names, depth - 1))
    b, ub = draw(_expr(names, depth - 1))
    return draw(st.sampled_from(OPS2)).format(a, b), ua + ub


@st.composite
def programs(draw):
    """``(with functions, written out by hand)``: one or two functions of 1-3 parameters, a
    local name each, called 2-4 times (a later function may call the earlier one)."""
    defs, bodies = [], {}
    for name in ("f", "g")[: draw(st.integers(1, 2))]:
        params = ["a", "b", "c"][: draw(st.integers(1, 3))]
        local, lu = draw(_expr(params))
        ret, ru = draw(_expr([*params, "u"]))
        inner = None
        if name == "g" and draw(st.booleans()):
            inner = [draw(st.sampled_from(params)) for _ in bodies["f"][0]]
        bodies[name] = (params, (local, lu), (ret, ru), inner)
        call = f"    u = f({', '.join(inner)}) + " if inner else "    u = "
        defs.append(
            f"def {name}({', '.join(params)}):\n{call}{local.format(*lu)}\n"
            f"    return {ret.format(*ru)}"
        )
    lines, hand, names = [], [], ["x", "y"]
    for k in range(draw(st.integers(2, 4))):
        fn = draw(st.sampled_from(sorted(bodies)))
        params = bodies[fn][0]
        args = [draw(st.sampled_from(names)) for _ in params]
        out = f"s{k}"
        lines.append(f"{out} = {fn}({', '.join(args)})")
        hand += _inline(bodies, fn, args, out, f"{fn}{k}")
        names.append(out)
    last = f"out = {names[-1]} * {names[-2]} + x"
    return "\n".join([*defs, *lines, last]), "\n".join([*hand, last])


def _inline(bodies, fn: str, args: list[str], out: str, tag: str) -> list[str]:
    params, (local, lu), (ret, ru), inner = bodies[fn]
    given = dict(zip(params, args))
    lines = []
    first = ""
    if inner:
        lines += _inline(bodies, "f", [given[p] for p in inner], f"{tag}_f", f"{tag}f")
        first = f"{tag}_f + "
    lines.append(f"{tag}_u = {first}{local.format(*(given[n] for n in lu))}")
    given["u"] = f"{tag}_u"
    lines.append(f"{out} = {ret.format(*(given[n] for n in ru))}")
    return lines


@settings(max_examples=60, deadline=None, derandomize=True)
@given(programs(), st.floats(-2, 2), st.floats(-2, 2))
def test_random_functions_give_the_numbers_of_the_program_written_out(pair, x, y):
    with_fn, by_hand = pair
    g, hand = cg.parse(with_fn), cg.parse(by_hand)
    values = {"x": x, "y": y}

    def bound(graph):  # an argument the body never reads is an input of the call only
        return {k: v for k, v in values.items() if k in graph.inputs}

    assert cg.evaluate(g, bound(g)).value == cg.evaluate(hand, bound(hand)).value
    ours, theirs = cg.grad(g, bound(g)), cg.grad(hand, bound(hand))
    want = {k: theirs.gradients.get(k, 0.0) for k in g.inputs}
    assert ours.gradients == pytest.approx(want, rel=1e-12, abs=1e-300)
    if set(g.inputs) == set(hand.inputs):
        np.testing.assert_allclose(
            np.array(cg.hessian(g, bound(g), wrt=sorted(g.inputs))["hessian"]),
            np.array(cg.hessian(hand, bound(hand), wrt=sorted(g.inputs))["hessian"]),
            rtol=1e-12,
            atol=1e-12,
        )
    for target in ("python", "numpy"):
        module: dict = {}
        exec(compile(compile_module(g, target), "<compiled>", "exec"), module)  # noqa: S102
        value, grads = module["grad"](**bound(g))
        assert value == pytest.approx(theirs.value, rel=1e-12, abs=1e-300)
        assert {k: float(v) for k, v in grads.items()} == pytest.approx(want, rel=1e-12, abs=1e-12)
    again = cg.parse(cg.to_source(g))  # the round trip
    assert cg.evaluate(again, bound(again)).value == theirs.value


def test_called_at_is_empty_at_the_top_level():
    g = cg.parse(LAYERS)
    assert called_at(g, g.inputs["x"]) == ""
    assert called_at(g, g.output).startswith(" in mse(y, t) called at <expr>:12:8")


def test_the_derivative_program_keeps_the_calls_as_groups():
    from cgraph_cli.passes.grad_graph import grad_graph

    g = cg.parse(LAYERS)
    d = grad_graph(g).graph
    of = group_of(d)
    labels = {d.groups[k].label for k in of if k >= 0}
    assert {"layer(h, W2, b2)", "∂ layer(h, W2, b2)", "∂ mse(y, t)"} <= labels
    dw2 = d.names["dloss_dW2"]
    assert d.groups[of[dw2]].label == "∂ layer(h, W2, b2)"
    assert d.groups[of[dw2]].kind == "grad"


def test_diff_groups_each_calls_derivative_code_under_a_comment(cli, tmp_path):
    program = tmp_path / "model.cg"
    program.write_text(LAYERS)
    result = cli("diff", str(program))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    for heading, first in [
        ("# ∂ mse(y, t)", "dloss_dt5 = 2 * t5"),
        ("# ∂ layer(h, W2, b2)", "dloss_dt4 = dloss_dt5 * (1 - y ^ 2)"),
        ("# ∂ layer(x, W1, b1)", "dloss_dt2 = dloss_dh * (1 - h ^ 2)"),
    ]:
        assert lines[lines.index(heading) + 1] == first
    # and it still reads back as the program it prints
    again = cg.evaluate(result.stdout, {})
    assert again.named["dloss_dW1"].shape == (3, 2)


def test_a_parameter_is_not_a_number_written_in_the_program():
    with pytest.raises(cg.ParseError) as e:
        cg.parse("def r(x, n):\n    return reshape(x, n)\ny = sum(r(x, 2))")
    assert "the shape of reshape must be written as whole numbers in the program" in str(e.value)


def test_an_error_met_reading_a_call_says_which_call():
    program = "def f(xs):\n    return sum(xs) + g(xs)\ny = f(x)"
    with pytest.raises(cg.ParseError) as e:  # g is unknown: found at the definition already
        cg.parse(program)
    assert e.value.where() == "<expr>:2:22"
