"""The derivative program in explanations (`explain --program`) and in pictures
(`render --derivative`, `dot --derivative`): its statements and values, the JSON and its
schema, markdown and LaTeX, the DOT (every statement a node, linked to its forward node, the
forward part as the plain diagram draws it), a golden DOT file, and real PNG files.

Update the golden DOT file after an intended change, then look at the diff and the picture:
    python -m pytest tests/test_derivative_views.py --update-golden
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from cgraph_cli import parse, schemas
from cgraph_cli.app.diagrams import derivative_diagram_of, diagram_of
from cgraph_cli.render import image
from cgraph_cli.render.dot import DiagramOptions
from cgraph_cli.render.layout import MAX_NODES

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden_dot"
SEED = str(ROOT / "samples" / "seed.cg")
MLP = str(ROOT / "samples" / "mlp.cg")

SEED_PROGRAM = """\
Derivative program
  dg_dp = z = -3
  dg_dz = p = 4
  dg_dx = dg_dp = -3
  dg_dy = dg_dx = -3
"""


def sample(name: str):
    return parse((ROOT / "samples" / name).read_text(), name)


# --- explain --program -------------------------------------------------------------------------
def test_explain_program_prints_each_derivative_with_its_value(cli):
    plain = cli("explain", SEED).stdout
    result = cli("explain", SEED, "--program")
    assert result.exit_code == 0, result.stderr
    # the steps as before, then the program: the worked example (p = 4, g = -12)
    assert result.stdout == plain + SEED_PROGRAM
    assert "Derivative program" not in plain


def test_explain_program_json_validates_and_matches_diff(cli):
    result = cli("explain", SEED, "--program", "--format", "json")
    assert result.exit_code == 0, result.stderr
    steps = json.loads(result.stdout)
    Draft202012Validator(schemas.load("explain")).validate(steps)
    program = steps["program"]
    assert [(s["name"], s["wrt"], s["formula"], s["value"]) for s in program["statements"]] == [
        ("dg_dp", "p", "z", -3.0),
        ("dg_dz", "z", "p", 4.0),
        ("dg_dx", "x", "dg_dp", -3.0),
        ("dg_dy", "y", "dg_dx", -3.0),
    ]
    assert program["text"] == cli("diff", SEED).stdout
    assert program["gradients"] == {"x": "dg_dx", "y": "dg_dy", "z": "dg_dz"}
    held = {s["name"]: s["value"] for s in program["statements"]}
    assert {w: held[n] for w, n in program["gradients"].items()} == steps["gradients"]
    plain = json.loads(cli("explain", SEED, "--format", "json").stdout)
    assert "program" not in plain


def test_explain_program_markdown_is_a_code_block_with_values(cli):
    md = cli("explain", SEED, "--program", "--format", "markdown").stdout
    section = md.split("## Derivative program\n\n", 1)[1]
    assert section == (
        "```\n"
        "dg_dp = z      # -3\n"
        "dg_dz = p      # 4\n"
        "dg_dx = dg_dp  # -3\n"
        "dg_dy = dg_dx  # -3\n"
        "```\n"
    )


def test_explain_program_latex_writes_each_statement_in_latex(cli):
    tex = cli("explain", SEED, "--program", "--format", "markdown", "--math", "latex").stdout
    section = tex.split("## Derivative program\n\n", 1)[1]
    assert section.splitlines() == [
        r"- $\mathit{dg\_dp} = z = -3$",
        r"- $\mathit{dg\_dz} = p = 4$",
        r"- $\mathit{dg\_dx} = \mathit{dg\_dp} = -3$",
        r"- $\mathit{dg\_dy} = \mathit{dg\_dx} = -3$",
    ]
    neuron = cli("explain", "sample:neuron", "--program", "--format", "markdown", "--math", "latex")
    assert r"- $\mathit{do\_dn} = 1 - o^{2} = 0.5$" in neuron.stdout
    assert r"- $\mathit{do\_dw1} = \mathit{do\_dn} \cdot x_{1} = 1$" in neuron.stdout


def test_explain_program_of_a_tensor_program(cli):
    result = cli("explain", MLP, "--program", "--format", "json")
    assert result.exit_code == 0, result.stderr
    steps = json.loads(result.stdout)
    Draft202012Validator(schemas.load("explain")).validate(steps)
    by_name = {s["name"]: s for s in steps["program"]["statements"]}
    w1 = by_name["dloss_dW1"]
    lines = cli("diff", MLP).stdout.splitlines()
    diff = dict(line.split(" = ", 1) for line in lines if not line.startswith("#"))
    assert (w1["wrt"], w1["formula"]) == ("W1", diff["dloss_dW1"])  # transpose(X) @ dloss_dt2
    assert r"X^\top" in w1["formula_tex"]
    assert np.allclose(w1["value"], steps["gradients"]["W1"], rtol=1e-12, atol=0)
    text = cli("explain", MLP, "--program").stdout
    assert "  dloss_db2 = sum_to(dloss_dt4, [2]) = [-0.276, -0.5473]\n" in text


def test_explain_program_shows_nan_where_the_program_computes_zero_times_infinity(cli):
    # The reverse pass skips the zero gradient of w; the program computes w / (2 * sqrt(x)).
    result = cli("explain", "y = sqrt(x) * w", "x=0", "w=0", "--program")
    assert result.exit_code == 0, result.stderr
    assert "Gradients: x̄ = 0, w̄ = 0\n" in result.stdout
    assert re.search(r"\n  dy_dw = t1 = 0\n  dy_dx = w .* = nan\n$", result.stdout)
    steps = json.loads(
        cli("explain", "y = sqrt(x) * w", "x=0", "w=0", "--program", "--format", "json").stdout
    )
    Draft202012Validator(schemas.load("explain")).validate(steps)
    assert steps["program"]["statements"][1]["value"] is None


def test_explain_program_of_another_output_and_of_no_inputs(cli):
    result = cli("explain", "p = x + y; g = p * z", "x=1", "y=3", "z=-3", "--of", "p", "--program")
    assert result.stdout.endswith("Derivative program\n  dp_dx = 1\n  dp_dy = 1\n  dp_dz = 0\n")
    constant = cli("explain", "g = 2 * 3", "--program")
    assert constant.exit_code == 0
    assert constant.stdout.endswith("Derivative program\n  none: the program has no inputs\n")


# --- the diagram -------------------------------------------------------------------------------
def derivative_dot(graph, bindings=None, **options) -> str:
    return derivative_diagram_of(graph, bindings or {}, DiagramOptions(**options)).source


def without_band(source: str) -> str:
    """The DOT with the band (the cluster), the links and their rank constraints taken out."""
    out, inside = [], False
    for line in source.splitlines(keepends=True):
        if line.startswith("\tsubgraph cluster_backward {"):
            inside = True
        elif inside:
            inside = line != "\t}\n"
        elif not re.match(r"\t(n\d+ -> [ds]\d+ |\{rank=same; )", line):
            out.append(line)
    return "".join(out)


def nodes_of(source: str) -> dict[str, str]:
    return dict(re.findall(r"^\t+([a-z]\d+) \[(.*)\]$", source, re.M))


@pytest.mark.parametrize("options", [{}, {"theme": "dark", "rankdir": "TB"}, {"values": False}])
def test_derivative_dot_keeps_the_forward_diagram_as_it_was(options):
    graph = sample("seed.cg")
    plain = diagram_of(graph, {}, DiagramOptions(**options)).source
    source = derivative_dot(graph, **options)
    assert "subgraph cluster_backward {" in source
    assert without_band(source) == plain


def test_derivative_dot_has_every_statement_linked_to_its_forward_node():
    source = derivative_dot(sample("seed.cg"))
    nodes = nodes_of(source)
    # the forward nodes: x y z p g as n0..n4 (seed.cg declares its inputs first)
    holders = {}
    for name in ("dg_dp", "dg_dz", "dg_dx", "dg_dy"):
        [holder] = [k for k, attrs in nodes.items() if f"<B>{name}</B>" in attrs]
        holders[name] = holder
    links = dict(
        (b, a) for a, b in re.findall(r"^\t(n\d+) -> ([ds]\d+) \[.*style=dashed", source, re.M)
    )
    assert {name: links[h] for name, h in holders.items()} == {
        "dg_dp": "n3",
        "dg_dz": "n2",
        "dg_dx": "n0",
        "dg_dy": "n1",
    }
    for holder in holders.values():
        assert f"{{rank=same; {links[holder]}; {holder}}}" in source
    # dg_dp = z: z's value read in the band; dg_dx = dg_dp: the program's data flow
    assert re.search(rf"\t\t{holders['dg_dp']} -> r2 \[.*dir=back", source)
    assert re.search(rf"\t\t{holders['dg_dx']} -> {holders['dg_dp']} \[", source)
    assert 'value</FONT></TD><TD ALIGN="RIGHT" BGCOLOR' in nodes[holders["dg_dz"]]
    assert " 4 " in nodes[holders["dg_dz"]] and " -3 " in nodes[holders["dg_dy"]]


def test_derivative_dot_of_a_tensor_program_draws_ops_and_values():
    graph = sample("mlp.cg")
    source = derivative_dot(graph)
    nodes = nodes_of(source)
    names = ["dloss_dt4", "dloss_dY", "dloss_dT", "dloss_db2", "dloss_dH", "dloss_dW2"]
    names += ["dloss_dt2", "dloss_db1", "dloss_dX", "dloss_dW1"]
    holder = {}
    for name in names:
        [holder[name]] = [k for k, attrs in nodes.items() if f"<B>{name}</B>" in attrs]
    link = dict((b, a) for a, b in re.findall(r"^\t(n\d+) -> ([ds]\d+) \[", source, re.M))
    assert {name: link[holder[name]] for name in ("dloss_dW1", "dloss_dX", "dloss_db2")} == {
        "dloss_dW1": "n2",  # W1
        "dloss_dX": "n0",  # X
        "dloss_db2": "n5",  # b2
    }
    w2 = nodes[holder["dloss_dW2"]]
    assert "@</FONT>" in w2 and "-0.2592" in w2 and "-0.655" in w2  # a (5, 2) grid
    transposes = [a for a in nodes.values() if ">transpose</FONT>" in a]
    assert len(transposes) == 4 and all("shape" in a for a in transposes)


def test_a_reassigned_name_links_to_its_newest_value(cli):
    # the input x and the doubled value later called x each get their derivative
    source = derivative_dot(parse("x = x * 2; g = x * x"), {"x": 1})
    links = re.findall(r"^\t(n\d+) -> ([ds]\d+) \[.*dashed", source, re.M)
    nodes = nodes_of(source)
    named = {re.search(r"<B>(\w+)</B>", nodes[d]).group(1): n for n, d in links}
    assert named == {"dg_dx": "n0", "dg_dx_2": "n2"}  # the input x; the doubled x
    steps = json.loads(
        cli(
            "explain", "x = x * 2; g = x * x", "x=1", "--program", "-o", "-", "--format", "json"
        ).stdout
    )
    assert [(s["wrt"], s["value"]) for s in steps["program"]["statements"]] == [
        ("x₂", 4.0),
        ("x", 8.0),
    ]


def test_derivative_nodes_say_which_backward_step_made_them():
    source = derivative_dot(sample("softmax_cross_entropy.cg"))
    made = re.findall(r'tooltip="made by the backward step through ([^"]*)"', source)
    assert "p = softmax(z)" in made and "t1 = W @ x" in made  # transpose(W), for dloss_dx
    assert made.count("p = softmax(z)") >= 3


def test_derivative_dot_themes_and_layout():
    graph = sample("neuron.cg")
    dark = derivative_dot(graph, theme="dark", rankdir="TB")
    assert "rankdir=TB" in dark and 'bgcolor="#0d1117"' in dark
    assert 'color="#e6edf3"' in dark  # the dark theme's backward colour on statement nodes
    printed = derivative_dot(graph, theme="print")
    assert "#e6edf3" not in printed and 'color="#000000"' in printed


def test_derivative_dot_without_bindings_draws_the_structure(cli):
    result = cli("dot", "loss = (w * x + b - y) ^ 2", "--derivative")
    assert result.exit_code == 0
    assert "drawing the structure only" in result.stderr
    assert "<B>dloss_dw</B>" in result.stdout and "value" not in result.stdout
    assert re.search(r"\t\t(d\d+) -> r7 \[", result.stdout)  # 2 * t3 reads the program's 2


def test_derivative_dot_is_the_same_run_to_run():
    graph = sample("softmax_cross_entropy.cg")
    assert derivative_dot(graph) == derivative_dot(sample("softmax_cross_entropy.cg"))


def test_golden_dot_of_seed_derivative(update_golden):
    source = derivative_dot(sample("seed.cg"))
    path = GOLDEN / "seed_derivative.dot"
    if update_golden:
        path.write_text(source)
    assert source == path.read_text()


# --- the commands ------------------------------------------------------------------------------
def test_dot_derivative_command(cli):
    result = cli("dot", SEED, "--derivative")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == derivative_dot(sample("seed.cg"))


def test_derivative_refuses_focus(cli):
    result = cli("render", SEED, "--derivative", "--focus", "p", "-T", "dot", "-o", "-")
    assert result.exit_code == 2
    assert "--derivative draws the whole derivative program" in result.stderr
    assert "help: narrow the program with --of NAME" in result.stderr


def test_derivative_of_a_tensor_output_is_an_evaluation_error(cli):
    result = cli("dot", "y = W @ x", "W=[[1,2],[3,4]]", "x=[1,1]", "--derivative")
    assert result.exit_code == 4
    assert "a derivative program needs a single number" in result.stderr
    assert "Traceback" not in result.stderr


def test_derivative_diagram_counts_the_band_against_the_size_limit(cli, tmp_path):
    chain = ["t1 = tanh(x)"] + [f"t{k} = tanh(t{k - 1})" for k in range(2, 121)]
    path = tmp_path / "chain.cg"
    path.write_text("\n".join(chain) + "\n")
    assert cli("dot", str(path), "x=0.5").exit_code == 0  # 121 nodes alone
    result = cli("dot", str(path), "x=0.5", "--derivative")
    assert result.exit_code == 2
    assert f"more than {MAX_NODES} are slow" in result.stderr
    assert "derivative program would have" in result.stderr
    assert cli("dot", str(path), "x=0.5", "--derivative", "--force").exit_code == 0


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


RENDERERS = [
    pytest.param(
        name, marks=pytest.mark.skipif(image.locate(name) is None, reason=f"{name} not installed")
    )
    for name in ("dot", "graphviz-pure")
]


@pytest.mark.parametrize("renderer", RENDERERS)
def test_render_derivative_writes_a_real_png(renderer, cli, tmp_path):
    plain, both = tmp_path / "plain.png", tmp_path / "seed.png"
    common = ["--renderer", renderer, "--dpi", "100"]
    assert cli("render", SEED, "-o", str(plain), *common).exit_code == 0
    result = cli("render", SEED, "--derivative", "-o", str(both), *common)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"wrote {both} (11 nodes)\n"  # 5 forward, 4 statements, 2 copies
    width, height = png_size(both.read_bytes())
    plain_width, plain_height = png_size(plain.read_bytes())
    assert 300 < width < 2000 and plain_height + 100 < height < 1500  # the band under it
    assert both.stat().st_size > 10_000


def test_the_backward_view_of_a_tensor_program_draws(cli, tmp_path):
    # An edge carrying a shape and a local derivative has a two-line label: written with
    # DOT's \n, not a raw line break (which broke titled() frames: "syntax error in line 5").
    target = tmp_path / "rnn.svg"
    r = cli("render", "sample:rnn", "--backward", "-o", str(target))
    assert r.exit_code == 0, r.stderr
    svg = target.read_text()
    assert "place(t\u03052\u0305, (4, 2), (0,))" in svg and "(4, 2)" in svg
