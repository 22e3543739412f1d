"""``cgraph compile --target js``: the script's values and gradients against cgraph's own
(every op of the table, the samples, random programs), its errors against the CLI's, and
names JavaScript holds dear. Every case of a test runs in one Node process (``DRIVER``)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from op_cases import arguments, cases, example_cases, parameters, value_range
from strategies import BRANCH_INPUTS, INPUTS, branching_programs, points, programs

from cgraph_cli import CgraphError, UsageError, parse
from cgraph_cli.core.errors import Source
from cgraph_cli.core.ir import GraphBuilder, validate
from cgraph_cli.core.ops import INPUT, OPS
from cgraph_cli.run.compile_js import js_module
from cgraph_cli.run.evaluate import forward
from cgraph_cli.run.vjp import vjp

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None, reason="node is not installed: the JS target runs in it"
)
SAMPLES = Path(__file__).parent.parent / "samples"

# Runs each case {module, inputs, grad}: the values and adjoints by node id, or the error.
DRIVER = r"""
const cases = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const plain = (x) =>
  x === null || typeof x === "number" ? x : { shape: x.shape, data: Array.from(x.data) };
const out = cases.map((c) => {
  const p = require(c.module);
  try {
    const ids = (byKey) => p.nodes.map((n) => plain(byKey[n.key]));
    if (!c.grad) return { values: ids(p.forward(c.inputs)) };
    const r = p.grad(c.inputs);
    const gradients = Object.create(null); // (an input may be named __proto__)
    for (const w of Object.keys(r.gradients)) gradients[w] = plain(r.gradients[w]);
    return { value: plain(r.value), values: ids(r.values), adjoints: ids(r.adjoints), gradients };
  } catch (e) {
    if (e.name !== "CgraphError") throw e;
    return { error: e.message, where: e.where, text: e.text };
  }
});
process.stdout.write(JSON.stringify(out));
"""


def run_node(tmp_path: Path, cases: list[dict]) -> list[dict]:
    """Each case's result: ``cases`` hold ``source`` (the script), ``inputs`` and ``grad``."""
    paths: dict[str, str] = {}  # one file a script: a case's points share it
    for case in cases:
        source = case.pop("source")
        if source not in paths:
            path = tmp_path / f"m{len(paths)}.js"
            path.write_text(source, encoding="utf-8")
            paths[source] = str(path)
        case["module"] = paths[source]
    (tmp_path / "driver.js").write_text(DRIVER, encoding="utf-8")
    (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    run = subprocess.run(
        [NODE, str(tmp_path / "driver.js"), str(tmp_path / "cases.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _array(x):
    if isinstance(x, dict):
        return np.asarray(x["data"], dtype=float).reshape(x["shape"])
    return np.asarray(x, dtype=float)


def close(js, py, rtol=1e-12) -> bool:
    """Equal to ``rtol`` relative; sums and products compare to their terms' size (NumPy sums
    pairwise and its matrix products block, in another order than the script's loops)."""
    a, b = _array(js), np.asarray(py, dtype=float)
    if a.shape != np.shape(b) and a.size != 1 and np.size(b) != 1:
        return False
    scale = np.maximum(np.abs(a), np.abs(b))
    return bool(np.all(np.abs(a - b) <= rtol * scale + 1e-300) or np.allclose(a, b, rtol, 1e-13))


def _listed(bindings: dict) -> dict:
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in bindings.items()}


def check_against_cgraph(graph, bindings: dict, result: dict) -> None:
    """The script's result equals cgraph's forward and reverse passes, or its error."""
    try:
        values = forward(graph, bindings)
        adjoints = vjp(graph, values)
    except CgraphError as e:
        assert result.get("error") == e.message, (result, e.render())
        assert result["text"] == e.render()
        return
    assert "error" not in result, result
    for i, (js, py) in enumerate(zip(result["values"], values)):
        assert close(js, py), (graph.display_name(i), js, py)
    assert close(result["value"], values[graph.output])
    for name, node in graph.inputs.items():
        assert close(result["gradients"][name], adjoints[node]), (name, result, adjoints[node])
    # Every node's adjoint where cgraph's reverse pass computes one: nodes an input reaches
    # through arguments with derivatives (the interpreter leaves the others at 0).
    reached = _flows(graph)
    for i, (js, py) in enumerate(zip(result["adjoints"], adjoints)):
        assert not reached[i] or close(js, py), ("adjoint", graph.display_name(i), js, py)


def _interpreted(graph, bindings):
    """The interpreter's value and gradients (the graph that runs for ``bindings``)."""
    from types import SimpleNamespace

    from cgraph_cli.run.program import differentiated

    ran, values, adjoints, out = differentiated(graph, bindings)
    grads = {name: adjoints[node] for name, node in ran.inputs.items()}
    return SimpleNamespace(value=values[out], gradients=grads)


def _flows(graph) -> list[bool]:
    """Whether an input's gradient flows through each node: an input, or an op with a
    derivative in an argument it flows through."""
    flows = [False] * len(graph.ops)
    for i, op in enumerate(graph.ops):
        if op is INPUT:
            flows[i] = True
        elif op.vjp is not None:
            flows[i] = any(flows[a] for k, a in enumerate(graph.args[i]) if k not in op.positions)
        elif op.partials:
            flows[i] = any(p is not None and flows[a] for p, a in zip(op.partials, graph.args[i]))
    return flows


def _pairs(params: tuple) -> set[str]:
    """Each two of ``params`` with their places (the whole setting where it has one)."""
    found = {repr((i, params[i], j, params[j])) for j in range(len(params)) for i in range(j)}
    return found or {repr(params)}


def _settings(op) -> list:
    """(Argument shapes, parameters) of ``op`` besides its example's: settings that give every
    parameter one of ``PARAMETERS``' values (stride 2, padding, dilation, groups, windows,
    count_pads...), chosen until each two parameters have met at each two values they take
    together (all-pairs, greedily), each at the first shapes it fits."""
    full = [p for p in parameters(op) if op.params and len(p) == len(op.params)]
    fitting = [found[0] for p in full if (found := cases(op, [p]))]
    chosen: list = []
    seen: set[str] = set()
    while fitting:
        best = max(fitting, key=lambda case: len(_pairs(case[1]) - seen))
        if not _pairs(best[1]) - seen:
            break
        chosen.append(best)
        seen |= _pairs(best[1])
    return chosen


def _op_graph(op, params):
    """``t = op(a0, a1...)`` with ``params``, then ``out = sum(t * t)``."""
    b = GraphBuilder(Source("", f"<{op.name}>"))
    node = b.add(op, tuple(b.input(f"a{k}", 0, 0) for k in range(op.arity)), 0, 0, params)
    b.name(node, "t")
    b.statement("=", "t", node)
    out = b.add(OPS["sum"], (b.add(OPS["mul"], (node, node), 0, 0),), 0, 0)
    b.name(out, "out")
    b.statement("=", "out", out)
    return validate(b.finish(out, "out"))


def _op_programs():
    """For every op of the table: its example, the sum of its square (a gradient that is not
    all ones), at a few argument shapes and random points; and at other parameters."""
    rng = np.random.default_rng(29)
    found = []
    for op in OPS.values():
        if not op.arity:
            continue
        low, high = value_range(op)
        example_graph = parse(f"t = {op.example}\nout = sum(t * t)")
        tried = [(example_graph, shapes, params) for shapes, params in example_cases(op)[:3]]
        tried += [(_op_graph(op, params), shapes, params) for shapes, params in _settings(op)]
        for graph, shapes, params in tried:
            source = None
            for _ in range(3):
                args = arguments(op, shapes, params, rng, low, high)
                bindings = {n: (float(a) if np.ndim(a) == 0 else np.asarray(a, dtype=float))
                            for n, a in zip(graph.inputs, args)}  # fmt: skip
                source = source or js_module(graph, bindings=bindings)  # the shapes': once
                found.append((op.name, graph, bindings, source))
    return found


def test_every_op_gives_cgraphs_values_and_gradients(tmp_path):
    found = _op_programs()
    assert {name for name, _, _, _ in found} == {op.name for op in OPS.values() if op.arity}
    cases = [{"source": s, "inputs": _listed(b), "grad": True} for _, _, b, s in found]
    for (_, graph, bindings, _), result in zip(found, run_node(tmp_path, cases)):
        check_against_cgraph(graph, bindings, result)


TIES = np.array([[[[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]]])
WEIGHTS = np.arange(1.0, 10.0).reshape(1, 1, 3, 3)
_DRAWN = np.random.default_rng(5)
IMAGE = {"x": _DRAWN.uniform(-2, 2, (1, 4, 5, 5)), "w": _DRAWN.uniform(-2, 2, (4, 2, 2, 2))}


def test_special_values(tmp_path):
    # Ties of max and min, relu and abs at their kinks, 0^0, where on 0, erf far out and near 0.
    programs_ = [
        ("y = max(x, z) + min(x, z)", {"x": 1.5, "z": 1.5}),
        ("y = relu(x) + abs(x) + sign(x)", {"x": 0.0}),
        ("y = x ^ z", {"x": 0.0, "z": 0.0}),
        ("y = where(x, z, 2 * z)", {"x": 0.0, "z": 3.0}),
        ("y = erf(x) * erf(z)", {"x": 2.4999, "z": 1e-9}),
        ("y = erf(x) + erf(z)", {"x": -2.5, "z": 5.9}),
        ("y = sum(amax(x, 0)) + sum(x)", {"x": np.array([[1.0, 2.0], [1.0, 0.5]])}),
        ("y = max(x) * min(x)", {"x": np.array([3.0, 1.0, 3.0, 1.0])}),
        # Ties in a max pool's windows (the first of equals takes the gradient), a window with
        # padding: z tells which element took it.
        ("y = sum(max_pool2d(x, [2, 2], [1, 1], [1, 1, 0, 0]) * z)", {"x": TIES, "z": WEIGHTS}),
        ("y = sum(max_pool2d(x, [3, 3], [1, 1], [1, 1, 1, 1]) * z)", {"x": TIES, "z": WEIGHTS}),
        # The other axis of each image parameter than op_cases' PARAMETERS vary: strides and a
        # left pad in the width, dilations in the height.
        ("t = conv2d(x, w, [1, 2], [0, 1, 1, 0], [2, 1], 2)\ny = sum(t * t)", IMAGE),
        ("t = max_pool2d(x, [2, 3], [1, 2], [0, 1, 1, 2])\ny = sum(t * t)", {"x": IMAGE["x"]}),
        ("t = avg_pool2d(x, [2, 3], [1, 2], [0, 1, 1, 2], 0)\ny = sum(t * t)", {"x": IMAGE["x"]}),
    ]
    cases = [
        {"source": js_module(parse(p), bindings=b), "inputs": _listed(b), "grad": True}
        for p, b in programs_
    ]
    for (p, b), result in zip(programs_, run_node(tmp_path, cases)):
        check_against_cgraph(parse(p), b, result)


def test_erf_is_within_a_few_ulps_of_pythons(tmp_path):
    xs = [float(x) for x in np.concatenate([np.linspace(-7, 7, 401), [1e-300, 2.5, 6.0]])]
    source = js_module(parse("y = erf(x)"))
    cases = [{"source": source, "inputs": {"x": x}, "grad": False} for x in xs]
    for x, result in zip(xs, run_node(tmp_path, cases)):
        assert abs(result["values"][1] - math.erf(x)) <= 2e-15 * abs(math.erf(x)) + 1e-300, x


def _sample_cases():
    found = []
    for path in sorted(SAMPLES.glob("*.cg")):
        graph = parse(path.read_text(encoding="utf-8"), str(path))
        try:
            source = js_module(graph)
        except UsageError:
            continue  # loops
        found.append((path.stem, graph, source))
    return found


def test_every_sample_the_target_takes(tmp_path):
    found = _sample_cases()
    assert {"neuron", "mlp", "seed", "moons", "softmax_cross_entropy"} <= {
        name for name, _, _ in found
    }
    assert "huber" in {name for name, _, _ in found}  # if/else
    cases = [{"source": s, "inputs": {}, "grad": True} for _, _, s in found]
    for (_, graph, _), result in zip(found, run_node(tmp_path, cases)):
        if graph.control:  # the graph that runs is another: its value and gradients
            expected = _interpreted(graph, {})
            assert close(result["value"], expected.value)
            for name, g in expected.gradients.items():
                assert close(result["gradients"][name], g), name
            continue
        check_against_cgraph(graph, {}, result)


@settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(st.lists(st.tuples(programs(max_statements=4, conditions=True), points), min_size=20))
def test_random_programs(tmp_path_factory, drawn):
    found = []
    for program, point in drawn:
        graph = parse(program)
        if not graph.inputs:
            continue
        bindings = {n: point[k] for k, n in enumerate(INPUTS) if n in graph.inputs}
        found.append((graph, bindings))
    cases = [{"source": js_module(g), "inputs": b, "grad": True} for g, b in found]
    for (graph, bindings), result in zip(found, run_node(tmp_path_factory.mktemp("r"), cases)):
        check_against_cgraph(graph, bindings, result)


_branch_point = st.sampled_from([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0])


@settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(st.lists(st.tuples(branching_programs(), st.tuples(*[_branch_point] * 3)), min_size=25))
def test_random_programs_with_if_else(tmp_path_factory, drawn):
    """The branch taken alone runs: the value and gradients of `cgraph grad`, or its error;
    a node of the branch not taken has no value and no adjoint (null)."""
    found = []
    for program, point in drawn:
        graph = parse(program)
        bindings = {n: x for n, x in zip(BRANCH_INPUTS, point) if n in graph.inputs}
        try:
            source = js_module(graph)
        except UsageError:  # (a value of one branch deciding another conditional)
            continue
        found.append((graph, bindings, source))
    assert len(found) >= 20
    cases = [{"source": s, "inputs": b, "grad": True} for _, b, s in found]
    for (graph, bindings, _), result in zip(found, run_node(tmp_path_factory.mktemp("b"), cases)):
        try:
            expected = _interpreted(graph, bindings)
        except CgraphError as e:
            if "error" not in result:  # the reverse pass's: the script computes every partial
                continue  # of the derivative program (as the compiled Python module does)
            assert result["error"] == e.message, (graph.source.text, bindings, result, e.render())
            continue
        assert "error" not in result, (graph.source.text, bindings, result)
        assert close(result["value"], expected.value), (graph.source.text, bindings)
        for name, g in expected.gradients.items():
            assert close(result["gradients"][name], g), (graph.source.text, bindings, name)


ERRORS = [
    ("y = log(x) * 2", {"x": -1.0}),
    ("p = x / z\nq = sqrt(p)", {"x": 1.0, "z": 0.0}),
    ("y = sqrt(x) * 2", {"x": 0.0}),
    ("y = x ^ 3", {"x": 1e200}),
    ("y = exp(x)", {"x": 1000.0}),
    ("y = sum(log(x))", {"x": np.array([1.0, -2.0])}),
    ("y = sum(sqrt(x))", {"x": np.array([1.0, 0.0])}),
    ("y = sum(take(x, i))", {"x": np.array([1.0, 2.0]), "i": np.array([0.0, 1.5])}),
    ("y = sum(exp(x) * 1e308)", {"x": np.array([1.0, 2.0])}),
    ("def f(a):\n    return log(a)\ny = f(x) + 1", {"x": -3.0}),
]


def test_domain_errors_say_what_the_cli_says(tmp_path):
    cases = [
        {"source": js_module(parse(p), bindings=b), "inputs": _listed(b), "grad": True}
        for p, b in ERRORS
    ]
    results = run_node(tmp_path, cases)
    for (p, b), result in zip(ERRORS, results):
        assert "error" in result, p
        check_against_cgraph(parse(p), b, result)


def test_a_missing_input_says_what_the_cli_says(tmp_path):
    graph = parse("input x = 1\ny = x * z + w")
    [result] = run_node(tmp_path, [{"source": js_module(graph), "inputs": {}, "grad": False}])
    with pytest.raises(CgraphError) as e:
        forward(graph, {})
    assert result["text"] == e.value.render()


def test_names_javascript_holds_dear(tmp_path):
    program = (
        "input var = 2, Math = 3, constructor = 0.5\n"
        "__proto__ = var * Math\n"
        "delete = __proto__ + constructor\n"
        "hasOwnProperty = log(delete)"
    )
    graph = parse(program)
    bindings = {"var": 1.5, "Math": -2.0, "constructor": 9.0}
    source = js_module(graph)
    cases = [{"source": source, "inputs": bindings, "grad": True}]
    cases.append({"source": source, "inputs": {}, "grad": False})  # the defaults
    result, defaults = run_node(tmp_path, cases)
    check_against_cgraph(graph, bindings, result)
    assert defaults["values"][graph.names["hasOwnProperty"]] == pytest.approx(math.log(6.5))


def test_an_input_named_proto_keeps_its_default_and_an_unknown_input_is_refused(tmp_path):
    """The script's data is parsed JSON, not a literal (where "__proto__" would set the
    prototype); a binding for no input is an error, as on the command line, not a default
    used in silence."""
    graph = parse("input __proto__ = 5, toString = 2\ny = __proto__ * toString")
    source = js_module(graph)
    cases = [{"source": source, "inputs": {}, "grad": True}]
    cases.append({"source": source, "inputs": {"zzz": 1.0}, "grad": True})
    defaults, unknown = run_node(tmp_path, cases)
    check_against_cgraph(graph, {}, defaults)
    assert unknown["text"] == (
        "error: the program has no input named 'zzz'\n"
        "help: the program's inputs: __proto__, toString"
    )


def test_loops_are_refused():
    with pytest.raises(UsageError, match="does not take programs with loops"):
        js_module(parse("h = 1\nfor t in range(3):\n    h = h * x"))


def test_the_script_runs_in_a_page_too(tmp_path):
    # No CommonJS module: the program is globalThis.cgraphProgram; nothing is evaluated from text.
    source = js_module(parse("input x = 2\ny = x * x"))
    assert "eval(" not in source and "Function(" not in source
    page = tmp_path / "page.js"
    page.write_text(
        "const vm = require('vm'); const ctx = {}; vm.createContext(ctx);\n"
        f"vm.runInContext({json.dumps(source)}, ctx);\n"
        "process.stdout.write(JSON.stringify(ctx.cgraphProgram.grad({}).gradients.x));\n",
        encoding="utf-8",
    )
    run = subprocess.run([NODE, str(page)], capture_output=True, text=True, check=True)
    assert json.loads(run.stdout) == 4.0
