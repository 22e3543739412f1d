"""The interactive page (`cgraph render P -o P.html`): its data (cgraph_cli/app/walkthrough.py),
its HTML (cgraph_cli/render/page.py) and, in headless Chromium, its script: stepping through
both passes shows the worked example's numbers in order, a node's details, the themes; no
console error and no request of any kind. The browser tests need Debian's `chromium` and the
`playwright` package (the test extra; `.ci/run` installs both)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from cgraph_cli import page, parse
from cgraph_cli.app.walkthrough import steps
from cgraph_cli.core.interpret import commutative
from cgraph_cli.core.ops import OPS
from cgraph_cli.render.dot import THEMES

SEED = "g = (x + y) * z"
SEED_BINDINGS = {"x": 1, "y": 3, "z": -3}


def data_of(html: str) -> dict:
    found = re.search(
        r'<script type="application/json" id="cgraph-data">(.*?)</script>', html, re.S
    )
    assert found, "the page carries its data"
    return json.loads(found.group(1))


# --- the data ---------------------------------------------------------------------------------
def test_the_events_run_the_forward_pass_then_the_backward_pass_edge_by_edge():
    w = steps(parse(SEED), SEED_BINDINGS)
    phases = [e["phase"] for e in w["events"]]
    assert phases == ["forward"] * 3 + ["backward"] * 5 + ["done"]
    grads = {}
    for event in w["events"]:
        grads.update(event.get("grads", {}))
    names = {n["id"]: n["name"] for n in w["nodes"]}
    final = {names[k]: g["text"] for k, g in grads.items()}
    assert final == {"g": "1", "t1": "-3", "z": "4", "x": "-3", "y": "-3"}
    assert all(g["complete"] for g in grads.values())


def test_a_value_read_twice_sums_its_paths_and_is_partial_until_the_last_one():
    w = steps(parse("y = x * x + x"), {"x": 3})  # ∂y/∂x = 2x + 1 = 7, over three edges
    x = next(n["id"] for n in w["nodes"] if n["name"] == "x")
    seen = [e["grads"][x] for e in w["events"] if x in e.get("grads", {})]
    assert [s["complete"] for s in seen] == [False, False, True]
    assert [s["text"] for s in seen] == ["1", "4", "7"]
    last = next(e for e in w["events"] if e.get("grads", {}).get(x, {}).get("complete"))
    assert "all 3 paths in: x̄ = 7" in last["caption"]
    assert next(n for n in w["nodes"] if n["id"] == x)["grad"] == "7"


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if op.arity == 2))
def test_commutative_says_whether_swapping_the_arguments_changes_the_value(name):
    op = OPS[name]
    expected = name in {"add", "mul", "max", "min", "logical_and", "logical_or", "eq", "ne"}
    assert commutative(op) == expected, name


def test_operand_order_is_drawn_only_where_it_matters():
    w = steps(parse("d = a - b; s = a + b; y = d * s"), {"a": 3, "b": 1})
    ports = {(e["from"], e["to"]): e["port"] for e in w["edges"]}
    names = {n["name"]: n["id"] for n in w["nodes"]}
    assert ports[(names["a"], names["d"])] == 1 and ports[(names["b"], names["d"])] == 2
    assert ports[(names["a"], names["s"])] is None


def test_a_tensor_program_carries_shapes_on_its_edges_and_full_values_in_its_nodes():
    w = steps(parse("input W = [[1, 2], [3, 4]]\ninput v = [1, -1]\ny = sum(W @ v)"))
    assert {e["shape"] for e in w["edges"]} >= {"(2, 2)", "(2,)"}
    W = next(n for n in w["nodes"] if n["name"] == "W")
    assert W["value"] == "[[1, 2], [3, 4]]" and W["grad"] == "[[1, -1], [1, -1]]"


def test_a_program_with_a_branch_is_shown_as_it_ran():
    source = Path("samples/huber.cg").read_text()
    w = steps(parse(source, filename="samples/huber.cg"), {"e": 3})
    assert any("`else` branch ran" in note for note in w["notes"])
    assert w["value"] == "2.5"


# --- the HTML ---------------------------------------------------------------------------------
def test_a_program_with_control_flow_is_also_drawn_as_written_in_every_theme():
    html = page(Path("samples/huber.cg").read_text(), {"e": 3})
    assert "The program as written" in html
    views = re.findall(r'<div class="static-view" data-for-theme="(\w+)"><svg', html)
    assert views == ["light", "dark", "print"]
    assert "if abs(e) &lt;= d" in html and "else" in html  # both branches, framed
    assert not re.search(r"https?://|<\?xml|<!DOCTYPE svg", html)
    assert "both branches of each <code>if</code> (the graph" in html  # no loop: not said
    ids = re.findall(r' id="([^"]+)"', html)
    assert len(ids) == len(set(ids))  # three drawings, every id once
    assert "The program as written" not in page(SEED, SEED_BINDINGS)  # straight-line code


def test_the_page_is_one_file_that_asks_for_nothing():
    html = page(SEED, SEED_BINDINGS)
    assert "default-src 'none'" in html  # the browser itself refuses any request
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", html)
    assert not re.search(r"https?://", html)
    assert "@import" not in html and "url(http" not in html
    data = data_of(html)
    assert data["output"] == "g" and data["value"] == "-12"
    # Without its script the page shows the finished graph.
    assert "x̄ = -3" in html and "= -12" in html


def test_text_in_the_program_cannot_close_the_script_element():
    html = page("input a = 1\ny = a * 2  # <!-- <script> </script><script>alert(1)</script>", {})
    assert html.count("<script") == 2 and "alert(1)</script>" not in html
    assert data_of(html)["source"].endswith("<!-- <script> </script><script>alert(1)</script>")


def test_every_theme_colour_of_text_passes_wcag_aa_on_every_background_it_sits_on():
    def luminance(colour: str) -> float:
        channels = [int(colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    def contrast(a: str, b: str) -> float:
        hi, lo = sorted([luminance(a), luminance(b)], reverse=True)
        return (hi + 0.05) / (lo + 0.05)

    for name, theme in THEMES.items():
        for text in ("text", "muted", "positive", "negative", "backward"):
            for ground in ("background", "input_fill", "op_fill", "const_fill"):
                ratio = contrast(getattr(theme, text), getattr(theme, ground))
                assert ratio >= 4.5, f"{name}: {text} on {ground} is {ratio:.2f}:1"


# --- the command ------------------------------------------------------------------------------
def test_render_writes_the_page_by_its_extension(cli, tmp_path):
    target = tmp_path / "seed.html"
    r = cli("render", SEED, "x=1", "y=3", "z=-3", "-o", str(target))
    assert r.exit_code == 0, r.output
    assert "wrote" in r.stderr and data_of(target.read_text())["value"] == "-12"
    r = cli("render", "sample:neuron", "-T", "html", "-o", "-")
    assert r.exit_code == 0 and r.stdout.startswith("<!DOCTYPE html>")


def test_the_page_names_its_program_by_the_file_name_alone(cli, tmp_path):
    folder = tmp_path / "home" / "ada" / "secret-project"
    folder.mkdir(parents=True)
    (folder / "seed.cg").write_text(SEED + "\n")
    target = tmp_path / "seed.html"
    r = cli("render", str(folder / "seed.cg"), "x=1", "y=3", "z=-3", "-o", str(target))
    assert r.exit_code == 0, r.output
    text = target.read_text()
    assert data_of(text)["filename"] == "seed.cg"
    assert "secret-project" not in text


def test_render_html_refuses_what_the_page_does_not_draw(cli):
    r = cli("render", SEED, "x=1", "y=3", "z=-3", "-o", "a.html", "--backward")
    assert r.exit_code == 2
    assert "--backward does not apply to the interactive page" in r.stderr
    assert "Traceback" not in r.output


def test_render_html_needs_every_input_bound(cli):
    r = cli("render", SEED, "x=1", "-T", "html", "-o", "-")
    assert r.exit_code == 4 and "y" in r.stderr and "Traceback" not in r.output


# --- in a browser -----------------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield b
        b.close()


@pytest.fixture
def opened(browser, cli, tmp_path):
    """Open a page written by `cgraph render`, recording console errors and requests."""
    pages = []

    def open_(args: list[str], name: str = "page.html"):
        target = tmp_path / name
        r = cli("render", *args, "-o", str(target))
        assert r.exit_code == 0, r.output
        tab = browser.new_page(viewport={"width": 1600, "height": 900})
        tab.problems = []
        tab.requests = []
        tab.on("console", lambda m: tab.problems.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda e: tab.problems.append(str(e)))
        tab.on("request", lambda q: tab.requests.append(q.url))
        tab.goto(target.as_uri())
        pages.append(tab)
        return tab

    yield open_
    for tab in pages:
        tab.close()


def visible_text(tab, selector: str) -> str | None:
    el = tab.query_selector(selector)
    if el is None or "hidden" in (el.get_attribute("class") or ""):
        return None
    return el.text_content()


def node_id(tab, name: str) -> str:
    return tab.evaluate(
        "(n) => JSON.parse(document.getElementById('cgraph-data').textContent)"
        ".nodes.find((x) => x.name === n).id",
        name,
    )


def test_stepping_shows_the_worked_example_in_order(opened, tmp_path):
    tab = opened([SEED, "x=1", "y=3", "z=-3"])
    ids = {n: node_id(tab, n) for n in ["x", "y", "z", "t1", "g"]}
    assert tab.text_content("#counter") == "0 / 9"
    assert visible_text(tab, f"#{ids['g']}-v") is None  # nothing computed yet
    captions, seen_values, seen_grads = [], [], []
    for _ in range(9):
        tab.keyboard.press("ArrowRight")
        captions.append(tab.text_content("#caption"))
        for n in ("t1", "g"):
            v = visible_text(tab, f"#{ids[n]}-v")
            if v and (n, v) not in seen_values:
                seen_values.append((n, v))
        for n in ("z", "x", "y"):
            g = visible_text(tab, f"#{ids[n]}-g")
            if g and not g.endswith("…") and (n, g) not in seen_grads:
                seen_grads.append((n, g))
    assert seen_values == [("t1", "= 4"), ("g", "= -12")]
    assert seen_grads == [("z", "z̄ = 4"), ("x", "x̄ = -3"), ("y", "ȳ = -3")]
    assert captions[1] == "t1 = x + y = 1 + 3 = 4"
    assert captions[-1] == "Gradients: x̄ = -3, ȳ = -3, z̄ = 4"
    assert tab.is_disabled("#next") and not tab.is_disabled("#prev")
    tab.keyboard.press("ArrowLeft")
    assert tab.text_content("#counter") == "8 / 9"
    tab.keyboard.press("Home")
    assert tab.text_content("#counter") == "0 / 9" and visible_text(tab, f"#{ids['x']}-v") is None
    tab.click("#last")
    assert tab.text_content("#counter") == "9 / 9"
    tab.screenshot(path=str(tmp_path / "seed.png"))
    assert (tmp_path / "seed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert tab.problems == []
    assert all(url.startswith("file://") for url in tab.requests), tab.requests
    assert len(tab.requests) == 1  # the page itself, and nothing else


def test_a_node_shows_its_chain_rule_and_hides_what_is_not_computed_yet(opened):
    tab = opened([SEED, "x=1", "y=3", "z=-3"])
    x = node_id(tab, "x")
    tab.click(f"#{x}")
    panel = tab.text_content("#details")
    assert "x: input" in panel and "not computed yet" in panel
    tab.keyboard.press("End")
    panel = tab.text_content("#details")
    assert "x̄ = t̅1̅ · ∂t1/∂x = (-3) · 1" in panel and "not computed yet" not in panel
    assert "Gradient x̄ (of g, over every path)" in panel
    t1 = node_id(tab, "t1")
    tab.focus(f"#{t1}")  # the keyboard alone reaches a node's details
    assert "t1 = x + y" in tab.text_content("#details")
    assert tab.problems == []


def test_themes_switch_and_the_gradient_sign_is_in_the_text_not_only_the_colour(opened):
    tab = opened(["sample:neuron"])
    tab.select_option("#theme", "dark")
    assert tab.evaluate("document.documentElement.dataset.theme") == "dark"
    background = tab.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(13, 17, 23)"
    x1 = node_id(tab, "x1")
    tab.keyboard.press("End")
    cell = tab.query_selector(f"#{x1}-g")
    assert cell.text_content() == "x̅1̅ = -1.5" and "neg" in cell.get_attribute("class")
    assert tab.problems == []


def test_tensor_and_control_flow_programs_step_through_without_errors(opened):
    for args in (["sample:mlp"], ["sample:huber", "e=3"], ["sample:rnn"]):
        tab = opened(args, name=args[0].split(":")[1] + ".html")
        total = int(tab.text_content("#counter").split("/")[1])
        for _ in range(total):
            tab.keyboard.press("ArrowRight")
        assert tab.text_content("#phase") == "Both passes done"
        assert tab.problems == [], args


def test_the_drawing_as_written_follows_the_pages_theme(opened):
    tab = opened(["sample:huber", "e=3"])
    shown = "[...document.querySelectorAll('.static-view')].filter((v) => v.offsetParent).map((v) => v.dataset.forTheme)"
    assert tab.evaluate(shown) == ["light"]
    tab.select_option("#theme", "dark")
    assert tab.evaluate(shown) == ["dark"]
    assert tab.problems == [] and all(q.startswith("file:") for q in tab.requests)


def test_a_page_counts_a_loops_steps_against_the_size_limit(cli, tmp_path):
    program = "input x = 0.5\ny = x\nfor i in range(300):\n    y = sin(y) + x\n"
    r = cli("render", "-e", program, "-o", str(tmp_path / "p.html"))
    assert r.exit_code == 2 and "the page would have 601 nodes" in r.stderr
    assert "--focus" not in r.stderr and "--force" in r.stderr  # pages refuse --focus


def test_a_loop_reading_an_input_at_every_step_lays_out(cli, tmp_path):
    # x -> every step: 80 labelled edges across the ranks took dot minutes before the page's
    # layout used fewer passes above 60 nodes
    program = "input x = 0.5\ny = x\nfor i in range(80):\n    y = sin(y) + x\n"
    r = cli("render", "-e", program, "-o", str(tmp_path / "p.html"))
    assert r.exit_code == 0, r.stderr
    assert "y = " in (tmp_path / "p.html").read_text()


def _chain(steps: int) -> str:
    """A chain reading the same two inputs at every step: h = tanh(h * a + b)."""
    return "\n".join(["h0 = x"] + [f"h{k} = tanh(h{k - 1} * a + b)" for k in range(1, steps + 1)])


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")
def test_inputs_read_at_every_step_run_along_lanes_below_the_page():
    """A large page's inputs read in many places are left out of dot's layout (their edges
    across every rank took dot minutes, then all its memory) and drawn below it: each in a
    row of its own, its edges along a lane and up into each node that reads it."""
    from cgraph_cli.app.walkthrough import walkthrough
    from cgraph_cli.render.layout import layout_source, shared_sources

    graph = parse(_chain(66))
    data = walkthrough(graph, {"x": 0.5, "a": 0.9, "b": 0.1})
    ids = {n["name"]: n["id"] for n in data["nodes"]}
    assert shared_sources(data) == {ids["a"], ids["b"]}
    assert f"{ids['a']} ->" not in layout_source(data)
    boxes = {n["id"]: n["box"] for n in data["nodes"]}
    others = [b for i, b in boxes.items() if i not in (ids["a"], ids["b"])]
    lowest = max(b[1] + b[3] for b in others)
    a, b = boxes[ids["a"]], boxes[ids["b"]]
    assert lowest < a[1] < a[1] + a[3] < b[1] <= data["height"] - b[3]  # a row each, below
    for edge in data["edges"]:
        if edge["from"] == ids["a"]:
            (x1, y1), (x2, y2), (x3, y3) = edge["points"]
            target = boxes[edge["to"]]
            assert y1 == y2 and x3 == x2 and y3 > target[1] + target[3]  # along, then up
            assert target[1] + target[3] < edge["label_at"][1] < y1
    assert min(b[1] for b in others) == 16  # the room dot kept above for them: taken back
