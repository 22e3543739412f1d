"""Every engine gives the interpreter's answer: compiled modules (Python, NumPy), rows, train
and gradcheck compute with the values and names the program has, whatever its names are."""

from __future__ import annotations

import math
import re

import pytest

from cgraph_cli import parse
from cgraph_cli.run.compile import compile_module

# Names that Python, the module or each other could confuse: keywords, soft keywords,
# builtins, the module's own globals and helpers, a name and its spelling with "_", names
# Python reads differently (NFKC) or not at all.
COLLIDING = [
    ("lambda", "lambda_"),
    ("math", "math_"),
    ("np", "np_"),
    ("relu", "sigmoid", "np_softmax"),
    ("x", "x_"),
    ("match", "case", "type"),
    ("float", "sum", "abs"),
    ("forward", "grad", "DomainError"),
    ("inputs", "out", "value"),
    ("x\u0bf0", "x"),
]


def _module(text: str, target: str) -> dict:
    namespace: dict = {}
    exec(compile_module(parse(text), target), namespace)
    return namespace


@pytest.mark.parametrize("names", COLLIDING)
@pytest.mark.parametrize("target", ["python", "numpy"])
def test_colliding_names_stay_apart_in_compiled_modules(names, target):
    terms = " + ".join(f"{k + 1} * {n}" for k, n in enumerate(names))
    text = f"y = {terms}\ny"
    values = {n: float(10**k) for k, n in enumerate(names)}
    expected = sum((k + 1) * v for k, v in enumerate(values.values()))
    module = _module(text, target)
    assert module["forward"](**values)["y"] == expected
    value, grads = module["grad"](**values)
    assert value == expected
    assert {n: float(g) for n, g in grads.items()} == {n: k + 1.0 for k, n in enumerate(names)}


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_module_run_by_exec_raises_its_domain_error(target):
    module = _module("a = x + 1\ny = log(a)\n", target)
    with pytest.raises(module["DomainError"], match=r"line 2: log\(a\)|not finite"):
        module["forward"](x=-2)


@pytest.mark.parametrize("target", ["python", "numpy"])
@pytest.mark.parametrize(
    ("text", "x", "node"),
    [
        ("y = where(x > 0, sqrt(x), 0)", -1.0, "sqrt(x)"),  # where evaluates both sides
        ("y = pow(1, x * x)", 1e200, "x * x"),  # an overflow 1 ^ inf would hide
        ("y = 1 / (x * x)", 1e200, "x * x"),  # 1 / inf = 0
        ("y = tanh(exp(x)) + (x * x > 0)", 1e200, "exp(x)"),
    ],
)
def test_a_module_stops_where_the_interpreter_does(target, text, x, node):
    module = _module(text, target)
    for fn in ("forward", "grad"):
        with pytest.raises(module["DomainError"], match=f"line 1: {re.escape(node)}"):
            module[fn](x=x)


def test_rows_round_sigmoid_as_eval_does(tmp_path, cli):
    program = tmp_path / "s.cg"
    program.write_text("y = sigmoid(x) >= 1\n")
    data = tmp_path / "s.csv"
    data.write_text("x\n36\n37\n38\n-745\n")
    expected = [cli("eval", str(program), f"x={x}").stdout.split()[-1] for x in (36, 37, 38, -745)]
    result = cli("eval", str(program), "--rows", str(data))
    assert result.exit_code == 0, result.stderr
    assert (
        [line.split(",")[0] for line in result.stdout.split()[1:]]
        == expected
        == ["0", "1", "1", "0"]
    )


@pytest.mark.parametrize("target", ["python", "numpy"])
def test_a_module_checks_every_statement_and_input_as_the_interpreter_does(target):
    # t0's first value is never read again, and grad's result does not hold x: both checked.
    module = _module("t0 = xlogy(0.5, z)\nt0 = 2 * z\ny = t0 + 0 * x\n", target)
    for fn in ("forward", "grad"):
        with pytest.raises(module["DomainError"], match=r"line 1: xlogy\(0\.5, z\)"):
            module[fn](x=1.0, z=-1.0)
    with pytest.raises(module["DomainError"], match="not finite"):
        module["grad"](x=math.inf, z=1.0)
