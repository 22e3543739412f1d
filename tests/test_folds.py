"""Folded drawings: each call of a function (and a loop's steps, as they ran) as one box."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cgraph_cli as cg
from cgraph_cli.app.diagrams import diagram
from cgraph_cli.app.folds import fold_plan

MLP3 = """\
def layer(x, W, b):
    return tanh(W @ x + b)
def mse(y, t):
    return mean((y - t)^2)
input x = [1, 2, 3], t = [0.5, -0.5]
input W1 = [[0.1, 0.2, 0.3], [0.3, -0.4, 0.1], [0.5, 0.6, -0.1]], b1 = [0, 0.1, -0.1]
input W2 = [[0.2, -0.3, 0.4], [0.1, 0.2, 0.3], [0.5, 0.6, -0.1]], b2 = [0.05, 0, 0.1]
input W3 = [[0.2, -0.3, 0.4], [0.1, 0.2, 0.3]], b3 = [0.05, 0]
h1 = layer(x, W1, b1)
h2 = layer(h1, W2, b2)
y = layer(h2, W3, b3)
loss = mse(y, t)
"""

RNN = """\
def step(h, x, W, U, b):
    return tanh(W @ h + U @ x + b)
input W = [[0.5, -0.3], [0.2, 0.4]], U = [[1, 0.5], [-0.5, 1]], b = [0.1, -0.1]
input v = [1, -1], target = 0.5
h = [0, 0]
for t in range(len(xs)):
    h = step(h, xs[t], W, U, b)
y = sum(v * h)
loss = (y - target)^2
"""


def _boxes(dot: str) -> int:
    """The nodes a DOT text draws."""
    return len(re.findall(r"^\t+n\w+ \[label=", dot, flags=re.M))


def test_an_mlp_of_three_layers_folds_to_a_few_boxes():
    full, folded = diagram(MLP3), diagram(MLP3, collapse=True)
    assert _boxes(full.dot) > 20
    assert _boxes(folded.dot) <= 8
    for text in ("layer(x, W1, b1)", "layer(h1, W2, b2)", "layer(h2, W3, b3)", "mse(y, t)"):
        assert text in folded.dot
    assert "holds W1, b1" in folded.dot  # a layer's weights are drawn inside it


def test_an_rnn_of_fifty_steps_folds_to_one_box_times_fifty():
    xs = [[0.1 * k, -0.05 * k] for k in range(50)]
    folded = diagram(RNN, {"xs": xs}, collapse=True)
    assert _boxes(folded.dot) <= 12
    assert "× 50" in folded.dot
    full = diagram(RNN, {"xs": xs}, force=True)
    assert _boxes(full.dot) > 300


def test_like_calls_in_a_chain_roll_up_only_with_the_same_weights():
    same = cg.parse("def f(h, W):\n    return tanh(W * h)\na = f(x, W)\nb = f(a, W)\nc = f(b, W)")
    assert [box.label for box in fold_plan(same).boxes] == ["f(x, W) × 3"]
    other = cg.parse("def f(h, W):\n    return tanh(W * h)\na = f(x, W1)\nb = f(a, W2)")
    assert [box.label for box in fold_plan(other).boxes] == ["f(x, W1)", "f(a, W2)"]


def test_expand_opens_exactly_the_groups_nodes():
    folded = diagram(MLP3, collapse=True)
    opened = diagram(MLP3, expand=["layer#2"])
    g = cg.parse(MLP3)
    layer2 = g.groups[1]
    inside = layer2.hi - layer2.lo + 2  # its nodes, and W2 and b2 drawn again on their own
    assert _boxes(opened.dot) == _boxes(folded.dot) - 1 + inside
    assert "layer(h1, W2, b2)" not in opened.dot


def test_depth_opens_the_outer_calls():
    nested = "def f(u):\n    return sin(u) * 2\ndef g(u):\n    return f(u) + f(u * 3)\ny = g(x)"
    assert [b.label for b in fold_plan(cg.parse(nested)).boxes] == ["g(x)"]
    assert [b.label for b in fold_plan(cg.parse(nested), depth=2).boxes] == ["f(u)", "f(u * 3)"]
    assert fold_plan(cg.parse(nested), depth=3).boxes == []


def test_an_unknown_expand_is_a_usage_error(cli, tmp_path):
    program = tmp_path / "m.cg"
    program.write_text(MLP3)
    result = cli("render", str(program), "--expand", "layr", "-o", str(tmp_path / "m.dot"))
    assert result.exit_code == 2
    assert "--expand layr: the program has no call or loop of that name" in result.stderr
    assert "layer#2" in result.stderr


@pytest.mark.parametrize("backward", [False, True])
def test_fit_folds_when_the_text_would_be_small(cli, tmp_path, backward):
    program = tmp_path / "m.cg"
    program.write_text(MLP3)
    out = tmp_path / "m.png"
    args = ["render", str(program), "--fit", "16:9", "-o", str(out)]
    result = cli(*args, *(["--backward"] if backward else []))
    assert result.exit_code == 0, result.stderr
    assert ("calls and loop steps drawn folded" in result.stderr) == backward
    assert "small for a projector" not in result.stderr  # folded only where that is needed
    assert out.read_bytes()[:4] == b"\x89PNG"


GOLDEN = Path(__file__).parent / "golden_dot"
SAMPLES = Path(__file__).resolve().parent.parent / "samples"
FOLDED = {
    "layers_collapse": ("layers.cg", {"collapse": True}),
    "layers_expand_layer2": ("layers.cg", {"expand": ["layer#2"]}),
    "layers_collapse_backward": ("layers.cg", {"collapse": True, "backward": True}),
    "rnn_collapse": ("rnn.cg", {"collapse": True}),
    "mlp_collapse": ("mlp.cg", {"collapse": True}),
    "mlp_collapse_backward": ("mlp.cg", {"collapse": True, "backward": True}),
    "seed_collapse": ("seed.cg", {"collapse": True}),  # no calls: drawn as it is
}


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_golden_folded_dot(name, update_golden):
    sample, options = FOLDED[name]
    source = diagram((SAMPLES / sample).read_text(), **options).dot
    path = GOLDEN / f"{name}.dot"
    if update_golden:
        path.write_text(source)
    assert source == path.read_text()


def test_a_program_without_calls_draws_the_same_folded():
    seed = (SAMPLES / "seed.cg").read_text()
    assert diagram(seed, collapse=True).dot == diagram(seed).dot


# explain --depth: calls as single steps ------------------------------------------------------
def test_explain_depth_1_explains_each_call_as_one_step():
    layers = (SAMPLES / "layers.cg").read_text()
    full, folded = cg.explain(layers), cg.explain(layers, depth=1)
    assert [s["formula"] for s in folded.steps["forward"]] == [
        "layer(x, W1, b1)",
        "layer(h, W2, b2)",
        "mse(y, t)",
    ]
    through = {s["formula"]: s for s in folded.steps["backward"]["through"]}
    w2 = next(p for p in through["layer(h, W2, b2)"]["partials"] if p["wrt"] == "W2")
    assert w2["rule"].startswith("vjp of layer at ")
    # what the call passes back is the gradient the full explanation arrives at
    assert (w2["value"] == full.steps["gradients"]["W2"]).all()
    assert folded.steps["gradients"].keys() == full.steps["gradients"].keys()


def test_explain_depth_sums_the_paths_through_a_call():
    e = cg.explain("def sq(u):\n    v = u * u\n    return v + 1\ny = 3 * sq(x) + sq(x)", {"x": 2.0})
    folded = cg.explain("def sq(u):\n    v = u * u\n    return v + 1\ny = 3 * sq(x) + sq(x)",
                        {"x": 2.0}, depth=1)  # fmt: skip
    text = str(folded)
    assert "1. t2 = sq(x) = sq(2) = 5" in text
    assert "Through sq(x): ∂t2/∂x = 4" in text and "= 3 · 4 + 1 · 4 = 16" in text
    assert folded.steps["gradients"] == e.steps["gradients"] == {"x": 16.0}


def test_explain_expand_opens_one_call(cli):
    result = cli("explain", "sample:layers", "--expand", "layer#2")
    assert result.exit_code == 0, result.stderr
    assert "1. h = layer(x, W1, b1)" in result.stdout and "t3 = W2 @ h" in result.stdout
    bad = cli("explain", "sample:layers", "--expand", "nope")
    assert bad.exit_code == 2 and "--expand nope" in bad.stderr


def test_explain_frames_fit_a_slide_with_a_caption_and_fold_the_calls(cli, tmp_path):
    result = cli("explain", "sample:layers", "--frames", str(tmp_path), "--fit", "16:9")
    assert result.exit_code == 0, result.stderr
    frames = sorted(tmp_path.glob("frame-*.png"))
    assert len(frames) == 4  # one per folded call, and the output: nothing inside a box
    for frame in frames:
        data = frame.read_bytes()
        assert int.from_bytes(data[16:20], "big") == 1920
        assert int.from_bytes(data[20:24], "big") == 1080
    bad = cli("explain", "sample:layers", "--fit", "16:9")
    assert bad.exit_code == 2 and "--fit sizes the frames" in bad.stderr


def test_expand_names_no_call_of_a_program_without_calls(cli, tmp_path):
    result = cli("render", "sample:seed", "--expand", "layer", "-o", str(tmp_path / "s.png"))
    assert result.exit_code == 2
    assert "--expand layer: the program has no call or loop of that name" in result.stderr


def test_show_draws_a_call_past_its_depth_as_the_call(cli):
    result = cli("show", "sample:layers", "--depth", "2", "--no-grads")
    assert result.exit_code == 0, result.stderr
    assert "y = layer(h, W2, b2) = [0.5547]  call" in result.stdout
    assert "its body and arguments: draw more with --depth 3" in result.stdout
    assert "in layer:" in cli("show", "sample:layers", "--no-grads").stdout


def test_fit_folds_a_program_read_from_standard_input(cli, tmp_path):
    """The folded drawing is made from the program read once: standard input is not read
    again (it was, and came back empty)."""
    out = tmp_path / "m.png"
    result = cli("render", "-", "--fit", "16:9", "--backward", "-o", str(out), input=MLP3)
    assert result.exit_code == 0, result.stderr
    assert "calls and loop steps drawn folded" in result.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


def _drawn(dot: str) -> list[str]:
    """The names of the nodes a DOT text draws (forward, band, copies)."""
    return re.findall(r"^\t+(\w+) \[label=", dot, flags=re.M)


def _edges(dot: str) -> list[str]:
    return [line.strip() for line in dot.splitlines() if " -> " in line]


@pytest.mark.parametrize(
    ("source", "boxes", "crossing"),
    [
        ("samples/layers.cg", 3, ["x\u0304", "h\u0304", "y\u0304"]),
        (None, 4, ["x\u0304", "<O>h1</O>", "<O>h2</O>", "y\u0304"]),
    ],
)
def test_the_backward_view_folds_with_its_edges_against_the_flow(source, boxes, crossing):
    text = open(source).read() if source else MLP3
    full, folded = diagram(text, backward=True), diagram(text, backward=True, collapse=True)
    assert len(_drawn(folded.dot)) == boxes + 1 < len(_drawn(full.dot))  # the boxes and x
    edges = _edges(folded.dot)
    assert len(edges) == boxes and all("dir=back" in e for e in edges)
    for label in crossing:  # what crosses each edge backwards: all of that value's gradient
        assert sum(f"<BR/>{label}>" in e for e in edges) == 1, label


def test_an_edge_into_a_box_from_a_value_read_twice_says_whose_vjp_crosses_it():
    text = (
        "def f(u, w):\n    return tanh(w * u)\ninput x = 0.5, a = 2, b = 3\ny = f(x, a) + f(x, b)"
    )
    edges = _edges(diagram(text, backward=True, collapse=True).dot)
    assert sum("vjp of f(x, a)" in e for e in edges) == sum("vjp of f(x, b)" in e for e in edges)
    assert any("vjp of f(x, a)" in e and "dir=back" in e for e in edges)


@pytest.mark.parametrize(
    ("source", "calls", "most"),
    [
        ("samples/layers.cg", ["layer(x, W1, b1)", "layer(h, W2, b2)", "mse(y, t)"], 8),
        (None, ["layer(x, W1, b1)", "layer(h1, W2, b2)", "layer(h2, W3, b3)", "mse(y, t)"], 14),
    ],
)
def test_the_derivative_band_folds_into_one_box_per_call(source, calls, most):
    text = open(source).read() if source else MLP3
    full = diagram(text, derivative=True).dot
    folded = diagram(text, derivative=True, collapse=True).dot
    drawn = _drawn(folded)
    assert len(drawn) <= most < len(_drawn(full))
    band = [name for name in drawn if name.startswith("dg")]
    assert len(band) == len(calls)
    for call in calls:  # each box under its call's box, joined in one column
        k = calls.index(call)
        assert f"∂ {call}" in folded
        assert f"{{rank=same; ng{k}; dg{k}}}" in folded
    # what the inputs of the second layer receive, shown in its box; its inner steps are not
    box = re.search(r"\tdg1 \[label=<(.*)>", folded).group(1)
    for name in ("dloss_dW2", "dloss_db2"):
        assert name in box
    assert "dloss_dt4" not in box  # a step inside the call


def test_derivative_collapse_of_a_program_without_calls_draws_as_before():
    text = open("samples/seed.cg").read()
    assert diagram(text, derivative=True, collapse=True).dot == diagram(text, derivative=True).dot


# The page's groups -------------------------------------------------------------------------
def test_the_page_knows_each_call_its_box_and_what_it_passes_back():
    from cgraph_cli.app.walkthrough import walkthrough

    data = walkthrough(cg.parse((SAMPLES / "layers.cg").read_text()))
    groups = {g["key"]: g for g in data["groups"]}
    assert list(groups) == ["layer#1", "layer#2", "mse#1"]
    boxes = {n["id"]: n["box"] for n in data["nodes"]}
    for g in data["groups"]:
        x, y, w, h = g["box"]
        for node in g["nodes"]:  # its nodes inside its outline
            nx, ny, nw, nh = boxes[node]
            assert x <= nx and nx + nw <= x + w and y <= ny and ny + nh <= y + h, (g["key"], node)
        fx, fy, fw, fh = g["fold"]  # folded, one box inside the outline
        assert x <= fx and fx + fw <= x + w and y <= fy and fy + fh <= y + h
        for node in data["nodes"]:  # and over none of the nodes outside it
            if node["id"] not in g["nodes"]:
                nx, ny, nw, nh = node["box"]
                assert nx >= fx + fw or nx + nw <= fx or ny >= fy + fh or ny + nh <= fy
    second = groups["layer#2"]
    assert second["forward"] == "y = layer(h, W2, b2) = [0.5547]"
    # what its vector-Jacobian product passes back to h is h's whole gradient (h has one reader)
    h = next(n for n in data["nodes"] if n["name"] == "h")
    assert f"h\u0304 += {h['grad']}" in second["backward"]
    assert [n["group"] for n in data["nodes"] if n["name"] in ("x", "W1", "h", "t3")] == [
        None,
        None,
        "c0",
        "c1",
    ]


def test_a_page_of_loop_steps_names_each_step():
    from cgraph_cli.app.walkthrough import steps

    data = steps(cg.parse((SAMPLES / "rnn.cg").read_text()))
    labels = [g["label"] for g in data["groups"]]
    assert labels == [f"step t={k} of for t in range(len(xs))" for k in range(4)]


# --fit holds 14 px on every sample --------------------------------------------------------
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.cg")))
def test_every_sample_fits_a_slide_with_text_of_14_px_or_more(sample, backward):
    from cgraph_cli.render.fit import LEGIBLE_PX

    drawn = diagram((SAMPLES / sample).read_text(), backward=backward)
    png, px, folded = drawn.fitted_folding((1920, 1080))
    assert png[:4] == b"\x89PNG"
    assert px >= LEGIBLE_PX, (sample, px, folded)


def test_a_program_without_calls_folds_its_statements_where_it_must(cli, tmp_path):
    out = tmp_path / "m.png"
    result = cli(
        "render", "sample:micrograd_more_ops", "--backward", "--fit", "16:9", "-o", str(out)
    )
    assert result.exit_code == 0, result.stderr
    assert "statements drawn folded, one box each" in result.stderr
    folded = diagram((SAMPLES / "micrograd_more_ops.cg").read_text(), backward=True).folded()
    for statement in ("d = a * b + b**3", "c += c + 1", "d += d * 2 + relu(b + a)", "f = e**2"):
        assert statement in folded.dot
    assert "c = a + b" not in folded.dot  # one node: drawn as it is
    # a box's gradient is named as its node is: c₂'s bar, not "out"
    assert "<O>c₂</O>" in folded.dot
