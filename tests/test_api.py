"""The Python API: what `import cgraph_cli` gives a user, how its results print and show
themselves in Jupyter, that the CLI commands run the same functions, and its reference."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cgraph_cli as cg
from cgraph_cli.render import image

ROOT = Path(__file__).resolve().parent.parent
SEED = "g = (x + y) * z"
AT = {"x": 1, "y": 3, "z": -3}


def _can_draw_svg() -> bool:
    return any(image.locate(name) for name in ("dot", "graphviz-pure"))


needs_renderer = pytest.mark.skipif(not _can_draw_svg(), reason="no renderer installed")


# --- the public names ----------------------------------------------------------------------------
def test_the_package_exports_each_command_as_a_call():
    for name in ["diagram", "check", "gradcheck", "explain", "derivative_program", "hessian"]:
        assert callable(getattr(cg, name)), name
    assert {"Diagram", "CheckReport", "GradcheckReport", "Explanation", "Value"} <= set(cg.__all__)


def test_every_public_name_has_a_docstring_with_an_example():
    missing = [
        name
        for name in cg.__all__
        if name not in ("__version__", "Value")
        and ">>>" not in (inspect.getdoc(getattr(cg, name)) or "")
    ]
    assert missing == []


def test_functions_named_as_modules_stay_functions_after_the_modules_load():
    code = (
        "import cgraph_cli as cg\n"
        "r = cg.gradcheck('y = x * x', {'x': 2})\n"  # loads the module cgraph_cli.app.gradcheck
        "import cgraph_cli.app.explain, cgraph_cli.app.gradcheck\n"
        "print(cg.gradcheck('y = x * x', {'x': 2}).ok, type(cg.explain('y = x', {'x': 1})).__name__)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "True Explanation\n"), proc.stderr


def test_the_package_is_marked_typed():
    assert (ROOT / "cgraph_cli" / "py.typed").is_file()


# --- reprs ---------------------------------------------------------------------------------------
def test_a_graph_prints_its_program_and_size():
    assert repr(cg.parse(SEED)) == "<Graph g = (x + y) * z: 3 inputs, 5 nodes>"
    assert repr(cg.parse("p = x + y  # sum\ng = p * z")) == (
        "<Graph p = x + y; g = p * z: 3 inputs, 5 nodes>"
    )
    assert repr(cg.parse("input a = 1\ny = a")) == "<Graph input a = 1; y = a: 1 input, 1 node>"


def test_a_long_program_prints_its_beginning_and_a_large_one_its_output():
    long = cg.parse("y = " + " + ".join(f"x{i}" for i in range(30)))
    text = repr(long)
    assert text.startswith("<Graph y = x0 + x1 + x2") and "…: 30 inputs, 59 nodes>" in text
    assert len(text) < 100
    large = cg.parse("total = " + " + ".join(f"x{i}" for i in range(300)))
    assert repr(large) == "<Graph of total: 300 inputs, 599 nodes>"


def test_results_print_the_output_value_and_gradients():
    assert repr(cg.evaluate(SEED, AT)) == "<Evaluation g = -12>"
    assert repr(cg.grad(SEED, AT)) == "<Gradients g = -12; ∂g/∂x = -3, ∂g/∂y = -3, ∂g/∂z = 4>"
    assert repr(cg.grad("y = sin(x)", {"x": 1})) == "<Gradients y = 0.841471; ∂y/∂x = 0.540302>"


def test_results_print_tensors_briefly():
    small = cg.grad("L = sum(W @ x)", {"W": [[1, 2], [3, 4]], "x": [1, 1]})
    assert repr(small) == "<Gradients L = 10; ∂L/∂W = [[1, 1], [1, 1]], ∂L/∂x = [4, 6]>"
    big = cg.evaluate("h = W @ x", {"W": np.ones((20, 30)), "x": np.ones(30)})
    assert repr(big) == "<Evaluation h = (20,) tensor>"


def test_many_gradients_are_cut_short():
    program = "y = " + " + ".join(f"x{i}" for i in range(10))
    text = repr(cg.grad(program, {f"x{i}": i for i in range(10)}))
    assert text.endswith("∂y/∂x5 = 1, … (4 more)>")


# --- diagrams ------------------------------------------------------------------------------------
def test_a_diagram_is_the_dot_the_cli_prints(cli):
    d = cg.diagram(SEED, AT, theme="dark", rankdir="TB", backward=True)
    out = cli("dot", SEED, "x=1", "y=3", "z=-3", "--theme", "dark", "--rankdir", "TB", "--backward")
    assert out.exit_code == 0
    assert d.dot == out.stdout
    assert d.nodes == 5 and d.note is None
    assert repr(d) == f"<Diagram: 5 nodes, DOT of {d.dot.count(chr(10))} lines>"


def test_a_diagram_without_bindings_says_why_it_has_no_values():
    d = cg.diagram(SEED)
    assert d.note == "values need bindings: x=VALUE y=VALUE z=VALUE; drawing the structure only"
    assert repr(d).endswith(
        "; values need bindings: x=VALUE y=VALUE z=VALUE; drawing the structure only>"
    )


def test_a_derivative_diagram_and_its_refusal_of_focus():
    assert cg.diagram("g = x * y", {"x": 2, "y": 3}, derivative=True).nodes == 7
    with pytest.raises(cg.UsageError, match="--focus cannot narrow it"):
        cg.diagram(SEED, derivative=True, focus="x")


def test_diagram_options_are_checked():
    with pytest.raises(cg.UsageError, match="theme is one of light, dark, print, not 'pink'"):
        cg.diagram(SEED, theme="pink")
    with pytest.raises(cg.UsageError, match="rankdir is one of LR, TB, RL, BT"):
        cg.grad(SEED, AT).diagram(rankdir="up")
    with pytest.raises(cg.UsageError, match="a diagram has no option 'colour'") as e:
        cg.grad(SEED, AT).diagram(colour="red")
    assert e.value.exit_code == 2


@needs_renderer
def test_a_diagram_renders_and_saves_by_extension(tmp_path):
    d = cg.diagram(SEED, AT)
    assert d.png(dpi=50).startswith(b"\x89PNG")
    assert b"<svg" in d.svg()
    assert d.save(tmp_path / "seed.svg").read_bytes() == d.svg()
    assert (tmp_path / "seed.svg").read_bytes().count(b"<svg") == 1
    assert d.save(tmp_path / "seed.gv").read_text() == d.dot
    assert d.save(tmp_path / "seed").read_bytes().startswith(b"\x89PNG")
    with pytest.raises(cg.UsageError, match="cannot tell the format of '.*seed.jpg'"):
        d.save(tmp_path / "seed.jpg")
    assert not (tmp_path / "seed.jpg").exists()


def test_saving_where_nothing_can_be_written_is_a_usage_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(cg.UsageError) as e:
        cg.diagram(SEED).save(tmp_path / "file" / "seed.dot")
    assert "seed.dot" in e.value.message


@needs_renderer
@pytest.mark.parametrize("make", [cg.evaluate, cg.grad, lambda p, b: cg.diagram(p, b)])
def test_results_and_diagrams_show_themselves_as_svg(make):
    svg = make(SEED, AT)._repr_svg_()
    assert isinstance(svg, str) and "<svg" in svg and "</svg>" in svg


def test_without_graphviz_jupyter_draws_with_graphviz_pure(monkeypatch):
    if image.locate("graphviz-pure") is None:
        pytest.skip("graphviz-pure has no wheel for this platform")
    real = image.locate
    monkeypatch.setattr(image, "locate", lambda name: None if name == "dot" else real(name))
    svg = cg.grad(SEED, AT)._repr_svg_()
    assert svg is not None and "<svg" in svg


def test_with_no_renderer_jupyter_falls_back_to_the_repr(monkeypatch):
    monkeypatch.setattr(image, "locate", lambda name: None)
    assert cg.grad(SEED, AT)._repr_svg_() is None
    with pytest.raises(cg.UsageError, match="no installed renderer can write SVG"):
        cg.diagram(SEED).svg()


def test_a_result_too_large_to_draw_shows_only_its_repr():
    program = "y = " + " + ".join(f"x{i}" for i in range(300))
    r = cg.grad(program, {f"x{i}": 1 for i in range(300)})
    assert r._repr_svg_() is None
    with pytest.raises(cg.UsageError, match="would have 599 nodes"):
        r.diagram()
    assert r.diagram(force=True).nodes == 599


# --- checks --------------------------------------------------------------------------------------
def test_check_reports_as_the_cli_does(cli):
    r = cg.check(SEED, AT, expect={"g": -12}, expect_grad={"x": -3, "z": 5})
    assert not r.ok
    assert [x.ok for x in r.results] == [True, True, False]
    assert repr(r) == "<CheckReport: 2 passed, 1 failed; FAIL ∂g/∂z = 4 (expected 5)>"
    out = cli(
        "check",
        SEED,
        "x=1",
        "y=3",
        "z=-3",
        "--expect",
        "g=-12",
        "--expect-grad",
        "x=-3",
        "--expect-grad",
        "z=5",
        "--format",
        "json",
    )
    assert out.exit_code == 1
    report = json.loads(out.stdout)
    report.pop("schema_version")
    assert report == json.loads(json.dumps(r.to_dict()))
    assert b'failures="1"' in r.junit()


def test_check_takes_second_derivatives_and_tensors():
    r = cg.check("f = x^2 * y", {"x": 1, "y": 2}, expect_hessian={("x", "y"): 2, "x,x": 4})
    assert r.ok and [x.label for x in r.results] == ["∂²f/∂x∂y", "∂²f/∂x²"]
    t = cg.check("h = 2 * v", {"v": [1, 2]}, expect={"h": [2, 4]})
    assert t.ok


def test_check_shows_a_table_in_jupyter():
    html = cg.check(SEED, AT, expect={"g": -11})._repr_html_()
    assert html.startswith("<table>") and "<caption>0 passed, 1 failed</caption>" in html
    assert "<td>FAIL</td><td>g</td><td>-12</td><td>-11</td>" in html


def test_check_needs_something_to_check():
    with pytest.raises(cg.UsageError, match="nothing to check"):
        cg.check(SEED, AT)
    with pytest.raises(cg.UsageError, match="a spec file holds its own programs"):
        cg.check(SEED, spec="checks.toml")


def test_check_runs_a_spec_file_case_by_case(tmp_path):
    spec = tmp_path / "checks.toml"
    spec.write_text(
        '[[case]]\nname = "good"\nprogram = "y = 2 * x"\nbindings = { x = 3 }\n'
        "expect = { y = 6 }\n\n"
        '[[case]]\nname = "bad"\nprogram = "y = log(x)"\nbindings = { x = -1 }\n'
        "expect = { y = 0 }\n"
    )
    r = cg.check(spec=spec)
    assert [run.case for run in r.runs] == ["good", "bad"]
    assert not r.ok and isinstance(r.runs[1].error, cg.DomainError)
    assert repr(r).startswith("<CheckReport: 1 passed, 0 failed, 1 could not run; ERROR bad: ")


def test_gradcheck_reports_as_the_cli_does(cli):
    r = cg.gradcheck("y = exp(10 * x)", {"x": 1}, eps=1e-2)
    assert (r.passed, r.failed, r.skipped, r.ok) == (0, 1, 0, False)
    assert repr(r) == "<GradcheckReport of y: 0 passed, 1 failed, 0 skipped at 1 point>"
    out = cli("gradcheck", "y = exp(10 * x)", "x=1", "--eps", "1e-2", "--format", "json")
    assert out.exit_code == 1
    report = json.loads(out.stdout)
    report.pop("schema_version")
    assert report == json.loads(json.dumps(r.to_dict()))


def test_gradcheck_at_random_points_and_second_derivatives():
    r = cg.gradcheck("y = x^3 * z", points=5, seed=3, low=-1, high=1)
    assert r.points == 5 and r.ok and r.passed == 10
    assert {k for k, _ in r.checks} == {1, 2, 3, 4, 5}
    second = cg.gradcheck("y = x^3 * z", {"x": 2, "z": 1}, order=2)
    assert [c.label for _, c in second.checks] == ["∂²/∂x²", "∂²/∂x∂z", "∂²/∂z²"]


def test_gradcheck_at_the_users_point_raises_the_usual_error():
    with pytest.raises(cg.DomainError, match="log"):
        cg.gradcheck("y = log(x)", {"x": -1})
    assert cg.gradcheck("y = log(x)", points=4, low=-2, high=-1).skipped == 4


def test_gradcheck_shows_a_table_in_jupyter():
    html = cg.gradcheck("y = relu(x)", {"x": 0})._repr_html_()
    assert "<caption>gradcheck of y: 0 passed, 0 failed, 1 skipped at 1 point</caption>" in html
    assert "<td>kink</td>" in html


# --- explanations --------------------------------------------------------------------------------
def test_an_explanation_prints_what_the_cli_prints(cli):
    e = cg.explain(SEED, AT)
    out = cli("explain", SEED, "x=1", "y=3", "z=-3")
    assert str(e) + "\n" == out.stdout
    markdown = cli("explain", SEED, "x=1", "y=3", "z=-3", "--format", "markdown", "--math", "latex")
    assert e.markdown("latex") == markdown.stdout
    assert e._repr_markdown_() == markdown.stdout
    assert (
        repr(e)
        == "<Explanation of g = -12: 2 forward steps; x\u0304 = -3, y\u0304 = -3, z\u0304 = 4>"
    )


def test_an_explanation_with_its_derivative_program(cli):
    e = cg.explain("p = x + y; g = p * z", AT, derivative=True)
    out = cli(
        "explain", "p = x + y; g = p * z", "x=1", "y=3", "z=-3", "--program", "--format", "json"
    )
    steps = json.loads(out.stdout)
    steps.pop("schema_version")
    assert [s["name"] for s in e.steps["program"]["statements"]][:2] == ["dg_dp", "dg_dz"]
    assert steps == json.loads(json.dumps(e.steps))


# --- derivatives ---------------------------------------------------------------------------------
def test_derivatives_take_program_text():
    p = cg.derivative_program("f = x^2 * y", order=2, wrt=["x"])
    assert p.derivatives == {("x",): "df_dx", ("x", "x"): "d2f_dx2"}
    assert cg.evaluate(p.graph, {"x": 3, "y": 2}, of="d2f_dx2").value == 4.0
    assert cg.hessian("f = x^2 * y", {"x": 1, "y": 2}, wrt=["y"])["hessian"] == [[0.0]]
    j = cg.jacobian("y = 2 * x", {"x": [1, 2, 3]}, mode="forward")
    assert j["mode"] == "forward" and np.array_equal(j["jacobian"]["x"], 2 * np.eye(3))


# --- the reference -------------------------------------------------------------------------------
def _listed() -> list[str]:
    """The names docs/api.md has mkdocstrings write, in order."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    return [m.removesuffix(".parse") for m in re.findall(r"^::: cgraph_cli\.([\w.]+)$", text, re.M)]


def test_the_reference_lists_every_public_name_once():
    listed = _listed()
    assert sorted(listed) == sorted(n for n in cg.__all__ if n != "__version__")
    assert len(set(listed)) == len(listed)
