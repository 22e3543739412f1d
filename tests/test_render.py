"""Diagrams: golden DOT files, real PNG/SVG/PDF files from both renderers, escaping, the size
limit, and the `render`, `dot` and `show` commands.

Update the golden DOT files after an intended change, then look at the diff (and the pictures):
    python -m pytest tests/test_render.py --update-golden
"""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from op_cases import cases, example

from cgraph_cli import grad, parse
from cgraph_cli.app.diagrams import diagram_of
from cgraph_cli.render import image
from cgraph_cli.render.dot import DiagramOptions
from cgraph_cli.render.layout import MAX_NODES

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden_dot"
SEED = str(ROOT / "samples" / "seed.cg")
NEURON = str(ROOT / "samples" / "neuron.cg")

CASES = {
    "seed": ("seed.cg", {}),
    "seed_backward": ("seed.cg", {"backward": True}),
    "seed_structure": ("seed.cg", {"values": False}),
    "neuron": ("neuron.cg", {}),
    "neuron_dark_tb": ("neuron.cg", {"theme": "dark", "rankdir": "TB"}),
    "neuron_print_backward": ("neuron.cg", {"theme": "print", "backward": True}),
    "fanout_backward": ("fanout.cg", {"backward": True}),
    "micrograd_sanity_no_grads": ("micrograd_sanity.cg", {"grads": False}),
    "softmax_cross_entropy": ("softmax_cross_entropy.cg", {}),
    "mlp_backward": ("mlp.cg", {"backward": True}),
}


def dot_of(sample: str, **options) -> str:
    graph = parse((ROOT / "samples" / sample).read_text(), sample)
    return diagram_of(graph, {}, DiagramOptions(**options)).source


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_dot(name, update_golden):
    sample, options = CASES[name]
    source = dot_of(sample, **options)
    path = GOLDEN / f"{name}.dot"
    if update_golden:
        path.write_text(source)
    assert source == path.read_text()


def test_dot_is_byte_identical_run_to_run():
    assert dot_of("neuron.cg", backward=True) == dot_of("neuron.cg", backward=True)


def test_diagram_content():
    source = dot_of("seed.cg")
    # five nodes, four edges in data-flow order, the output marked
    assert len(re.findall(r"^\tn\d+ \[", source, re.M)) == 5
    assert re.findall(r"^\t(n\d+ -> n\d+)", source, re.M) == [
        "n0 -> n3",
        "n1 -> n3",
        "n3 -> n4",
        "n2 -> n4",
    ]
    assert "penwidth=2.4" in source.split("\tn4 [")[1].split("\n")[0]
    for text in ("<B>x</B>", "<B>p</B>", "<B>g</B>", "×", "-12", "x\u0304", "z\u0304"):
        assert text in source
    backward = dot_of("seed.cg", backward=True)
    assert 'label="∂g/∂p = z = -3"' in backward and 'label="∂p/∂x = 1"' in backward
    assert "dir=back" in backward


def test_structure_only_has_no_values():
    source = dot_of("seed.cg", values=False)
    assert "value" not in source and "∂" not in source


def test_labels_are_escaped():
    graph = parse("g = x * 2")
    graph.output_label = '<b>"&amp;'  # as hostile as a label could ever be
    graph.labels[graph.output] = '<b>"&amp;'
    source = diagram_of(graph, {"x": 1}).source
    assert "&lt;b&gt;&quot;&amp;amp;" in source
    assert '<b>"' not in source


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
def test_png_is_a_real_picture(renderer, cli, tmp_path):
    out = tmp_path / "seed.png"
    result = cli("render", SEED, "-o", str(out), "--renderer", renderer, "--dpi", "100")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"wrote {out} (5 nodes)\n"
    width, height = png_size(out.read_bytes())
    assert 300 < width < 1500 and 200 < height < 1000


@pytest.mark.parametrize("renderer", RENDERERS)
def test_svg_holds_the_values_and_gradients(renderer, cli, tmp_path):
    out = tmp_path / "neuron.svg"
    assert cli("render", NEURON, "-o", str(out), "--renderer", renderer).exit_code == 0
    root = ET.parse(out).getroot()
    texts = {t.text.strip() for t in root.iter("{http://www.w3.org/2000/svg}text") if t.text}
    assert {"0.7071", "-1.5", "0.5", "x1", "tanh", "x1w1"} <= texts
    assert 'text-decoration="overline"' in out.read_text()  # x̄: the gradient over every path


@pytest.mark.skipif(image.locate("dot") is None, reason="Graphviz dot not installed")
def test_pdf_with_dot(cli, tmp_path):
    out = tmp_path / "seed.pdf"
    assert cli("render", SEED, "-o", str(out)).exit_code == 0
    assert out.read_bytes().startswith(b"%PDF")


@pytest.fixture
def no_dot(monkeypatch):
    """A machine without Graphviz: only graphviz-pure is found."""
    real = image.locate
    monkeypatch.setattr(image, "locate", lambda name: None if name == "dot" else real(name))


@pytest.mark.skipif(image.locate("graphviz-pure") is None, reason="graphviz-pure not installed")
def test_auto_falls_back_to_graphviz_pure(no_dot, cli, tmp_path):
    out = tmp_path / "seed.png"
    assert cli("render", SEED, "-o", str(out)).exit_code == 0
    png_size(out.read_bytes())
    help_text = cli("render", "--help").stdout
    assert "auto uses graphviz-pure" in help_text


def test_pdf_without_dot_says_what_to_install(no_dot, cli, tmp_path):
    result = cli("render", SEED, "-o", str(tmp_path / "seed.pdf"))
    assert result.exit_code == 2
    assert "cannot write PDF" in result.stderr or "can write PDF" in result.stderr
    assert "apt-get install graphviz" in result.stderr
    assert ".dot files work everywhere" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_renderer_at_all(monkeypatch, cli, tmp_path):
    monkeypatch.setattr(image, "locate", lambda name: None)
    result = cli("render", SEED, "-o", str(tmp_path / "seed.png"))
    assert result.exit_code == 2 and "no installed renderer can write PNG" in result.stderr
    assert "pip install graphviz-pure" in result.stderr
    dot_file = tmp_path / "seed.dot"
    assert cli("render", SEED, "-o", str(dot_file)).exit_code == 0
    assert dot_file.read_text().startswith("digraph cgraph {")
    assert "No renderer found" in cli("render", "--help").stdout


def test_image_to_stdout(cli):
    result = cli("render", SEED, "-o", "-", "--format", "svg")
    assert result.exit_code == 0
    assert result.stdout_bytes.startswith(b"<?xml") and b"</svg>" in result.stdout_bytes


def test_unknown_extension_is_a_usage_error(cli, tmp_path):
    result = cli("render", SEED, "-o", str(tmp_path / "seed.jpg"))
    assert result.exit_code == 2 and "cannot tell the format" in result.stderr


def test_without_bindings_the_structure_is_drawn_with_a_note(cli):
    result = cli("dot", "g = (x + y) * z")
    assert result.exit_code == 0
    assert (
        result.stderr
        == "note: values need bindings: x=VALUE y=VALUE z=VALUE; drawing the structure only\n"
    )
    assert "value" not in result.stdout
    quiet = cli("dot", "g = (x + y) * z", "--no-values")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_evaluation_errors_still_fail(cli):
    result = cli("dot", "g = log(x)", "x=-1")
    assert result.exit_code == 4 and "log(-1) is undefined" in result.stderr


def big_program(statements: int) -> str:
    return "v = x\n" + "\n".join(["v = v * 1.01 + 1"] * statements) + "\nout = v"


def test_big_graphs_are_refused_with_a_way_out(cli):
    program = big_program(MAX_NODES)  # about 4 nodes a statement
    result = cli("dot", program, "x=1")
    assert result.exit_code == 2
    assert f"more than {MAX_NODES}" in result.stderr and "--focus NAME" in result.stderr
    assert "--force" in result.stderr
    forced = cli("dot", program, "x=1", "--force")
    assert forced.exit_code == 0 and forced.stdout.count("->") == 4 * MAX_NODES


def test_focus_draws_what_leads_to_a_name(cli):
    result = cli("dot", SEED, "--focus", "p")
    assert result.exit_code == 0
    assert re.findall(r"^\t(n\d+) \[", result.stdout, re.M) == ["n0", "n1", "n3"]
    assert "did you mean 'p'?" in cli("dot", SEED, "--focus", "pp").stderr


def test_dot_command_prints_dot(cli):
    result = cli("dot", SEED, "--theme", "print")
    assert result.exit_code == 0 and result.stdout.startswith("digraph cgraph {")
    assert result.stdout == dot_of("seed.cg", theme="print")


def test_show_draws_a_tree_with_shared_nodes_once(cli):
    result = cli("show", str(ROOT / "samples" / "fanout.cg"))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "y = t3 + x = 12.14    ∂y/∂y = 1"
    assert sum("x = 3  input" in line for line in lines) == 1  # drawn once in full
    assert sum("↑ x" in line for line in lines) == 3  # then referred to (x is read 4 times)
    assert any("t2 = sin(x) = 0.1411" in line for line in lines)
    first_full = next(k for k, line in enumerate(lines) if "x = 3  input" in line)
    assert all(k > first_full for k, line in enumerate(lines) if "↑ x" in line)  # reading order


def test_show_structure_only(cli):
    result = cli("show", "g = (x + y) * z")
    assert result.stdout.splitlines() == [
        "g = t1 * z",
        "├── t1 = x + y",
        "│   ├── x  input",
        "│   └── y  input",
        "└── z  input",
    ]


@pytest.mark.parametrize("command", ["render", "dot", "show"])
def test_commands_have_help_with_examples(cli, command):
    result = cli(command, "--help")
    assert result.exit_code == 0 and "Examples:" in result.stdout


def test_default_output_is_named_after_the_source(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("render", SEED, "--format", "dot").stderr == "wrote seed.dot (5 nodes)\n"
    assert (tmp_path / "seed.dot").is_file()
    assert (
        cli("render", "g = x + 1", "x=1", "--format", "svg").stderr == "wrote graph.svg (3 nodes)\n"
    )
    assert cli("render", "g = x", "x=1", "--format", "svg").stderr == "wrote graph.svg (1 node)\n"


def test_big_diagrams_draw_widely_read_leaves_beside_each_reader(cli):
    # v = v * a + b: a and b are read by every statement; one node each would send edges
    # across hundreds of ranks, which takes Graphviz minutes to lay out
    source = cli("dot", big_program(100), "x=1", "--force").stdout
    tails = re.findall(r"^\t(\S+) -> ", source, re.M)
    assert max(tails.count(t) for t in set(tails)) <= 4
    assert source.count("dashed") >= 100
    small = cli("dot", big_program(3), "x=1").stdout
    assert 'dashed"' not in small.replace("rounded,filled,dashed", "")


def test_big_diagrams_ask_graphviz_for_a_quicker_layout(cli):
    assert "mclimit=0.1" in cli("dot", big_program(60), "x=1", "--force").stdout
    assert "mclimit" not in cli("dot", SEED).stdout


def _label_sources() -> list[str]:
    """DOT sources that between them use every kind of label: each sample forward and
    backward (light and print legends), reassigned names (c₂ ... c₁₁), an empty tensor, a
    large tensor's summary, and a backward frame's "?"."""
    import math

    from cgraph_cli.render.dot import diagram

    sources = []
    for sample in sorted((ROOT / "samples").glob("*.cg")):
        for options in ({}, {"backward": True}, {"backward": True, "theme": "print"}):
            sources.append(dot_of(sample.name, **options))
    programs = [
        ("c = a * 2; " + "; ".join(["c = c + 1"] * 11) + "; g = (c - a) ^ c", {"a": 1}),
        ("y = sum(x[2:1]) + sum(x * [1, 2, 3])", {"x": [1, 2, 3]}),
        ("y = sum(softmax(W @ x, 0))", {"W": [[1.0] * 20] * 20, "x": [0.5] * 20}),
    ]
    for program, bindings in programs:
        graph = parse(program)
        sources.append(diagram_of(graph, bindings, DiagramOptions(backward=True)).source)
    r = grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    frame = [math.nan] * len(r.adjoints)
    sources.append(diagram(r.graph, r.values, frame, DiagramOptions(backward=True)).source)
    return sources


def _rule_formulas() -> list[str]:
    """Every op's derivative rules as diagrams print them (edge labels): local partials of the
    elementwise ops, reverse rules of the others, over a gradient named like the diagrams'."""
    from cgraph_cli.core.autodiff import rule_pullback
    from cgraph_cli.core.ops import OPS
    from cgraph_cli.render.formulas import Formula

    texts = []
    for op in OPS.values():
        if not op.arity:
            continue
        args = ["x", "y", "z"][: op.arity]
        # At the example's parameters, with no shapes known and with some; then at every
        # argument shape and parameter of tests/op_cases.py that the op takes.
        params = example(op)[1]
        runs = [(Formula(), params), (Formula({"x": (2, 3), "y": (3,), "g": (2, 3)}), params)]
        for shapes, params in cases(op):
            out = op.shape(list(shapes), params)
            runs.append((Formula({**dict(zip(args, shapes)), "o": out, "∂loss/∂o": out}), params))
        for formula, params in runs:
            pulled = rule_pullback(
                formula, op, args, "o", params, "∂loss/∂o", [True] * op.arity, summed=False
            )
            texts += [formula.write(c) for c in pulled if c is not None]
    return texts


@pytest.mark.skipif(image.locate("graphviz-pure") is None, reason="graphviz-pure not installed")
def test_every_character_in_labels_is_drawn_by_graphviz_pure():
    """graphviz-pure draws PNG text with fonts compiled into its binary; Arimo stands in for
    Arial (our FONT). A character it has no outline for comes out as an empty box."""
    import fontfile

    from cgraph_cli.core.names import _SUB
    from cgraph_cli.core.ops import OPS
    from cgraph_cli.render.dot import FONT

    data = Path(image.locate("graphviz-pure").path).read_bytes()
    drawn = fontfile.drawable(data, fontfile.fonts(data)["Arimo Regular"])
    assert FONT == "Arial" and "x" in drawn and "⊙" not in drawn  # the font, read right
    used = {c for op in OPS.values() for text in (op.glyph, op.symbol) for c in text}
    used |= {c for text in _rule_formulas() for c in text}
    used |= {chr(c) for c in _SUB.values()}
    for source in _label_sources():
        used |= set(source)
    missing = sorted(used - drawn - {"\n", "\t"})
    assert not missing, [f"{c} U+{ord(c):04X}" for c in missing]


def test_operands_are_numbered_where_their_order_matters():
    """`x - 1` and `1 - x` draw differently: each operand of −, ÷, ^ and @ is numbered."""
    a = diagram_of(parse("y = x - 1"), {"x": 2}).source
    b = diagram_of(parse("y = 1 - x"), {"x": 2}).source
    # x is node 0 of the first program (read first) and node 1 of the second
    assert re.search(r"n0 -> n2 \[headlabel=1 ", a) and re.search(r"n1 -> n2 \[headlabel=2 ", a)
    assert re.search(r"n1 -> n2 \[headlabel=2 ", b) and '"x"' not in b
    assert "headlabel" not in diagram_of(parse("y = x + 1"), {"x": 2}).source


@pytest.mark.skipif(image.locate("dot") is None, reason="needs Graphviz's dot")
def test_a_huge_png_is_scaled_to_what_a_screen_shows_and_says_so(cli, tmp_path):
    from cgraph_cli.render.image import PNG_MAX_PIXELS

    chain = "\n".join(["h0 = x"] + [f"h{k} = tanh(h{k - 1} * a + b)" for k in range(1, 67)])
    (tmp_path / "chain.cg").write_text(chain)
    result = cli("render", str(tmp_path / "chain.cg"), "x=0.5", "a=0.9", "b=0.1", "-o",
                 str(tmp_path / "chain.png"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert max(png_size((tmp_path / "chain.png").read_bytes())) <= PNG_MAX_PIXELS
    assert "scaled down to 8,000 pixels a side" in result.stderr and "SVG" in result.stderr
    small = cli("render", "sample:seed", "-o", str(tmp_path / "seed.png"))
    assert "scaled down" not in small.stderr
