"""Frames for slides (`explain --frames`, `optimize --frames`): one canvas and one tint scale
for the whole sequence, the frames of an earlier run removed (nothing else), themes, and
`--gif`."""

from __future__ import annotations

import io
import re

import pytest

Image = pytest.importorskip("PIL.Image")  # the plot extra, which make test installs


def sizes(folder) -> set:
    return {Image.open(p).size for p in folder.glob("*.png")}


def test_explain_frames_share_one_canvas_and_replace_an_earlier_runs(cli, tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    mine = {"frame-99.png": b"old", "01-intro.png": b"my slide", "notes.txt": b"mine"}
    for name, data in mine.items():
        (folder / name).write_bytes(data)
    r = cli("explain", "sample:neuron", "--frames", str(folder), "-q")
    assert r.exit_code == 0, r.stderr
    drawn = [f"frame-{k:02d}.png" for k in range(1, 11)]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*drawn, *mine, ".cgraph-frames-explain"]
    )
    assert len({Image.open(folder / name).size for name in drawn}) == 1
    r = cli("explain", "sample:seed", "--frames", str(folder), "-q")  # 5 frames replace the 10
    assert r.exit_code == 0, r.stderr
    drawn = [f"frame-{k}.png" for k in range(1, 6)]
    assert sorted(p.name for p in folder.glob("frame-*")) == sorted([*drawn, "frame-99.png"])
    assert all((folder / name).read_bytes() == data for name, data in mine.items())


def test_explain_and_optimize_keep_each_others_frames(cli, tmp_path):
    folder = tmp_path / "slides"
    assert cli("explain", "sample:seed", "--frames", str(folder), "-q").exit_code == 0
    assert cli("optimize", "sample:rewrites", "--frames", str(folder), "-q").exit_code == 0
    assert cli("explain", "sample:seed", "--frames", str(folder), "-q").exit_code == 0
    names = {p.name for p in folder.iterdir()}
    assert {f"frame-{k}.png" for k in range(1, 6)} <= names
    assert "00-original.png" in names


def test_frames_never_overwrite_a_file_cgraph_did_not_write(cli, tmp_path):
    folder = tmp_path / "slides"
    folder.mkdir()
    (folder / "frame-1.png").write_bytes(b"my own slide")
    r = cli("explain", "sample:seed", "--frames", str(folder), "-q")
    assert r.exit_code == 2
    assert "frame-1.png was not written by explain --frames: refusing to overwrite it" in r.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["frame-1.png"]
    assert (folder / "frame-1.png").read_bytes() == b"my own slide"


def test_the_tint_of_a_gradient_is_the_same_in_every_frame():
    from cgraph_cli import grad
    from cgraph_cli.render.dot import DiagramOptions, diagram

    r = grad("y = 3 * x + w * x", {"x": 2, "w": 1})
    nan = float("nan")
    partial = [a if k >= 4 else nan for k, a in enumerate(r.adjoints)]
    fixed = DiagramOptions(backward=True, scale=max(abs(a) for a in r.adjoints))
    whole = diagram(r.graph, r.values, r.adjoints, fixed).source
    early = diagram(r.graph, r.values, partial, fixed).source
    unscaled = diagram(r.graph, r.values, partial, DiagramOptions(backward=True)).source
    tint = [line for line in whole.splitlines() if ">y\u0304</FONT>" in line][0]
    assert tint in early  # the output's cell: the same colour with and without the others
    assert tint not in unscaled


def test_gif_animates_the_frames(cli, tmp_path):
    gif = tmp_path / "seed.gif"
    r = cli("explain", "sample:seed", "--frames", str(tmp_path / "f"), "--gif", str(gif),
            "--theme", "dark", "-q")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    animation = Image.open(io.BytesIO(gif.read_bytes()))
    assert animation.format == "GIF" and animation.n_frames == 5
    assert animation.size == next(iter(sizes(tmp_path / "f")))
    first = Image.open(tmp_path / "f" / "frame-1.png").convert("RGB")
    assert first.getpixel((2, 2)) == (13, 17, 23)  # the dark theme's background


def test_optimize_frames_take_the_theme_and_a_gif(cli, tmp_path):
    gif = tmp_path / "rewrites.gif"
    r = cli("optimize", "sample:rewrites", "--frames", str(tmp_path / "o"), "--gif", str(gif))
    assert r.exit_code == 0, r.stderr
    assert len(sizes(tmp_path / "o")) == 1 and Image.open(gif).n_frames > 2


def test_mp4_is_a_video_of_the_frames_that_plays_everywhere(cli, tmp_path):
    av = pytest.importorskip("av")  # the video extra, which make test installs
    video = tmp_path / "seed.mp4"
    r = cli("explain", "sample:seed", "--frames", str(tmp_path / "f"), "--mp4", str(video))
    assert r.exit_code == 0, r.stderr
    assert f"and {video}" in r.stderr
    width, height = next(iter(sizes(tmp_path / "f")))
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == "h264" and stream.codec_context.pix_fmt == "yuv420p"
        decoded = list(container.decode(stream))
    # 5 frames: 1.2 s each at 5 a second, 3 s on the last
    assert len(decoded) == 4 * 6 + 15
    assert (decoded[0].width, decoded[0].height) == (width + width % 2, height + height % 2)
    # the first and the last frame differ (the gradients appear), repeated frames do not
    first, second, last = (
        f.to_ndarray(format="rgb24").astype(int) for f in decoded[0:2] + decoded[-1:]
    )
    assert abs(first - second).mean() < 1 and abs(first - last).mean() > 1


def test_optimize_frames_make_a_video_too(cli, tmp_path):
    pytest.importorskip("av")
    video = tmp_path / "rewrites.mp4"
    r = cli("optimize", "sample:rewrites", "--frames", str(tmp_path / "o"), "--mp4", str(video))
    assert r.exit_code == 0, r.stderr
    assert video.stat().st_size > 1000


def test_mp4_without_pyav_says_what_to_install(cli, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "av", None)  # import av fails
    r = cli(
        "explain", "sample:seed", "--frames", str(tmp_path / "f"), "--mp4", str(tmp_path / "v.mp4")
    )
    assert r.exit_code == 2 and "--mp4 needs PyAV" in r.stderr and "cgraph-cli[video]" in r.stderr


@pytest.mark.parametrize(
    ("option", "target", "message"),
    [
        ("--mp4", "video.gif", "--mp4 writes a file of type MP4, not video.gif"),
        ("--mp4", "-", "'-' (standard output) cannot take this file: give it a name"),
        ("--mp4", "", "--mp4 writes a file of type MP4, not ''"),
        ("--gif", "x.bin", "--gif writes a file of type GIF, not x.bin"),
        ("--gif", "-", "'-' (standard output) cannot take this file: give it a name"),
    ],
)
def test_an_animation_is_named_for_its_type(cli, tmp_path, option, target, message):
    r = cli("explain", "sample:seed", "--frames", str(tmp_path / "f"), option, target)
    assert r.exit_code == 2 and message in r.stderr
    assert not (tmp_path / "f").exists()  # refused before any frame was drawn


def test_an_animation_and_the_report_cannot_share_a_file(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = cli("explain", "sample:seed", "--frames", "f", "--gif", "same.gif", "-o", "same.gif")
    assert r.exit_code == 2 and "--gif same.gif and -o same.gif are the same file" in r.stderr


def test_fit_to_a_tall_box_stands_a_chain_up_straight():
    from cgraph_cli import diagram

    chain = "\n".join(f"x{k + 1} = sin(x{k}) * 0.9" for k in range(12))
    png, text = diagram(chain, {"x0": 1}).fitted((400, 3000))
    width, height = drawn_box(png)
    assert height > 0.9 * 3000 and text >= 10  # one straight column, filling the height


def test_mp4_into_a_folder_that_cannot_be_written_is_a_usage_error(cli, tmp_path):
    pytest.importorskip("av")
    target = tmp_path / "missing" / "v.mp4"
    r = cli("explain", "sample:seed", "--frames", str(tmp_path / "f"), "--mp4", str(target))
    assert (
        r.exit_code != 0
        and r.exit_code != 70
        and str(target) in r.stderr
        and "Traceback" not in r.stderr
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gif", "a.gif"], "--gif animates the frames: say where they go with --frames DIR"),
        (["--frames", "f", "--frames-format", "svg", "--gif", "a.gif"], "--gif animates PNG"),
        (["--mp4", "a.mp4"], "--mp4 animates the frames: say where they go with --frames DIR"),
        (["--frames", "f", "--frames-format", "svg", "--mp4", "a.mp4"], "--mp4 animates PNG"),
    ],
)
def test_gif_usage_errors(cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    r = cli("explain", "sample:seed", *args)
    assert r.exit_code == 2 and message in r.stderr


@pytest.mark.parametrize(
    ("fit", "size"), [("16:9", (1920, 1080)), ("4:3", (1440, 1080)), ("800x600", (800, 600))]
)
def test_fit_makes_a_png_of_exactly_the_slides_size(cli, tmp_path, fit, size):
    target = tmp_path / "neuron.png"
    r = cli("render", "sample:neuron", "--fit", fit, "-o", str(target))
    assert r.exit_code == 0, r.stderr
    image = Image.open(target)
    assert image.size == size
    assert image.convert("RGB").getpixel((1, 1)) == (255, 255, 255)  # the theme's background


def test_fit_makes_the_text_as_large_as_the_box_allows():
    from cgraph_cli import diagram

    d = diagram(open("samples/neuron.cg").read())
    _, text = d.fitted((1920, 1080))
    assert text >= 30  # pixels: a 10-node graph reads from the back of a room at 1080p
    _, small = d.fitted((960, 540))
    assert small == pytest.approx(text / 2, rel=0.1)


def drawn_box(png: bytes) -> tuple[int, int]:
    """The width and height of what is drawn on a white canvas, in pixels."""
    from PIL import ImageChops

    image = Image.open(io.BytesIO(png)).convert("RGB")
    box = ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()
    return box[2] - box[0], box[3] - box[1]


def test_fit_wraps_a_long_chain_into_rows_that_fill_the_slide():
    from cgraph_cli import diagram

    chain = "\n".join(f"x{k + 1} = sin(x{k}) * 0.9" for k in range(24)) + "\n"
    d = diagram(chain, {"x0": 1})
    png, text = d.fitted((1920, 1080))
    # one row of 49 nodes would have text of about 5 px; wrapped, it reads on a projector
    assert text >= 14
    width, height = drawn_box(png)
    assert width >= 0.9 * 1920 or height >= 0.9 * 1080  # the drawing fills the slide one way
    assert width <= 1920 and height <= 1080


@pytest.mark.parametrize("sample", ["seed", "fanout", "huber", "micrograd_more_ops", "rnn"])
def test_fit_never_cuts_the_drawing_at_the_slides_edge(sample):
    from cgraph_cli import diagram

    d = diagram(open(f"samples/{sample}.cg").read())
    png, _ = d.fitted((1920, 1080))
    image = Image.open(io.BytesIO(png)).convert("RGB")
    from PIL import ImageChops

    left, top, right, bottom = ImageChops.difference(
        image, Image.new("RGB", image.size, "white")
    ).getbbox()
    # a margin all round: nothing drawn within 8 pixels of an edge
    assert left >= 8 and top >= 8 and right <= 1920 - 8 and bottom <= 1080 - 8


def test_fit_to_a_large_size_is_a_large_png(cli, tmp_path):
    target = tmp_path / "big.png"
    r = cli("render", "sample:seed", "--fit", "12000x9000", "-o", str(target))
    assert r.exit_code == 0, r.stderr
    Image.MAX_IMAGE_PIXELS = None
    assert Image.open(target).size == (12000, 9000)


def test_fit_does_not_wrap_the_backward_view():
    from cgraph_cli import diagram

    chain = "\n".join(f"x{k + 1} = x{k} * 1.1" for k in range(10))
    d = diagram(chain, {"x0": 1}, backward=True)
    from cgraph_cli.render.fit import best_fit

    _, dot = best_fit(d.dot, (1920, 1080), "auto")
    assert "layout=neato" not in dot  # neato would set the derivatives on the lines


def test_fit_keeps_every_node_and_edge_when_it_wraps():
    from cgraph_cli import diagram
    from cgraph_cli.render.image import choose, render
    from cgraph_cli.render.wrap import wrapped

    d = diagram("\n".join(f"x{k + 1} = x{k} * c + {k}" for k in range(20)), {"x0": 1, "c": 2})
    plain = render(d.dot, "plain", choose("plain")).decode()
    text, width, height = wrapped(d.dot, plain, 3)
    rows = render(text, "plain", choose("plain")).decode()
    count = lambda text, kind: sum(ln.startswith(kind + " ") for ln in text.splitlines())  # noqa: E731
    assert count(rows, "node") == count(plain, "node") and count(rows, "edge") == count(
        plain, "edge"
    )
    # in three rows: the drawing is about a third as wide as the single row
    ratio = float(rows.split()[2]) / float(plain.split()[2])
    assert 0.25 < ratio < 0.5
    # the size the rows were judged by is the size drawn, near enough
    assert width == pytest.approx(float(rows.split()[2]), rel=0.15)
    assert height == pytest.approx(float(rows.split()[3]), rel=0.15)


def test_fit_summarises_tensor_grids_only_where_they_make_the_text_small():
    from cgraph_cli import diagram

    mlp = diagram(open("samples/mlp.cg").read())
    _, text = mlp.fitted((1920, 1080))
    assert text >= 18  # 10 px with every 4x2 and 3x5 grid drawn in full
    assert 'TABLE BORDER="0" CELLBORDER="0" CELLSPACING="1"' in mlp.dot  # grids unless fit
    small = diagram("y = sum(v * w)", {"v": "[1, 2]", "w": "[3, 4]"})
    png, text = small.fitted((1920, 1080))
    assert text >= 30 and small.summarised is not None


def test_fit_warns_when_the_text_comes_out_small(cli, tmp_path):
    r = cli(
        "render", "sample:rnn", "--fit", "16:9", "--expand", "for", "-o", str(tmp_path / "rnn.png")
    )
    assert r.exit_code == 0 and "small for a projector" in r.stderr
    # unasked, the loop's steps fold into one box, so that the text reads
    r = cli("render", "sample:rnn", "--fit", "16:9", "-o", str(tmp_path / "rnn.png"))
    assert r.exit_code == 0 and "calls and loop steps drawn folded" in r.stderr
    r = cli("render", "sample:seed", "--fit", "16:9", "-o", str(tmp_path / "seed.svg"))
    assert r.exit_code == 2 and "--fit makes a PNG" in r.stderr


# --- explain --frames --fit, captions, one layout, folded frames (issue 26) ---------------------
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


def _ran(source: str):
    from cgraph_cli import grad

    return grad(source)


@pytest.mark.parametrize(("fit", "size"), [("16:9", (1920, 1080)), ("640x480", (640, 480))])
def test_explain_frames_fit_a_slide(cli, tmp_path, fit, size):
    folder = tmp_path / "slides"
    r = cli("explain", "sample:mlp", "--frames", str(folder), "--fit", fit, "-q")
    assert r.exit_code == 0, r.stderr
    # folded into its calls to be read at that size: a frame where a drawn gradient arrives
    # (the loss, mse's vjp, dense's, the relu, dense's)
    assert len(list(folder.glob("frame-*.png"))) == 5
    assert sizes(folder) == {size}


def test_each_frame_says_its_step_in_a_caption():
    from cgraph_cli.app.frames import explain_frames

    r = _ran(open("samples/mlp.cg").read())
    frames = explain_frames(r.graph, r, "svg")
    assert len(frames) == 14
    first, fifth = frames[0][1].decode(), frames[4][1].decode()
    assert "step 1 of 14, backward: l̅o̅s̅s̅ = 1" in first
    assert "step 5 of 14, backward: t̅3̅ = (4, 2) tensor in" in fifth
    assert "(t3 = H @ W2)" in fifth


def test_frames_are_drawn_on_one_layout_nothing_moves():
    """The nodes stand at the same place in every frame (one layout, the last frame's)."""
    from cgraph_cli.app.frames import explain_frames

    r = _ran(open("samples/neuron.cg").read())
    frames = [data.decode() for _, data in explain_frames(r.graph, r, "svg")]
    node = (
        r'<g id="node\d+" class="node">\s*<title>([^<]*)</title>\s*<\w+ [^>]*(?:d|points)="([^"]+)"'
    )
    boxes = [re.findall(node, f) for f in frames]
    assert len(boxes[0]) >= 8 and all(b == boxes[0] for b in boxes)
    assert "?" in frames[0] and "?" not in re.sub(r"<[^>]+>", "", frames[-1])


def test_frames_of_a_program_with_functions_fold_where_the_text_would_be_small(cli, tmp_path):
    from cgraph_cli.app.explain import frame_order
    from cgraph_cli.app.frames import FrameSequence
    from cgraph_cli.render.dot import DiagramOptions

    r = _ran(MLP3)
    order = frame_order(r.graph, r.output)
    folded = FrameSequence(r.graph, r, order, DiagramOptions(backward=True, collapse=True))
    # a frame for the output, each call's box (its result's gradient) and x
    assert len(folded.steps) == 5 < len(order)
    assert "what layer(h1, W2, b2) returns" in " ".join(folded.captions)
    last = folded.dot(len(folded.steps) - 1)
    assert "layer(h2, W3, b3)" in last and "holds W3, b3" in last
    source = tmp_path / "mlp3.cg"
    source.write_text(MLP3)
    folder = tmp_path / "slides"
    done = cli("explain", str(source), "--frames", str(folder), "--fit", "480x270", "-q")
    assert done.exit_code == 0, done.stderr
    assert len(list(folder.glob("frame-*.png"))) == 5
    assert sizes(folder) == {(480, 270)}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--fit", "16:9"), "--fit sizes the frames: say where they go with --frames DIR"),
        (("--frames", "f", "--frames-format", "svg", "--fit", "16:9"), "--fit makes PNG frames"),
        (("--frames", "f", "--fit", "huge"), "--fit huge: not a slide's shape"),
    ],
)
def test_frames_fit_usage_errors(cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    r = cli("explain", "sample:seed", *args)
    assert r.exit_code == 2 and message in r.stderr
    assert not (tmp_path / "f").exists() or not any((tmp_path / "f").iterdir())


def test_optimize_frames_fit_a_slide(cli, tmp_path):
    folder = tmp_path / "slides"
    r = cli("optimize", "sample:rewrites", "--frames", str(folder), "--fit", "16:9", "-q")
    assert r.exit_code == 0, r.stderr
    assert len(list(folder.glob("*.png"))) > 2
    assert sizes(folder) == {(1920, 1080)}
