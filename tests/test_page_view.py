"""The page at the size of a real network, in headless Chromium at 1366x768: at every step the
active node is inside the visible canvas, node text is at least 12 px, the zoom keys zoom,
search finds a node, and nothing is asked of the network or written to the console."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_page import browser  # noqa: F401  (the module's one Chromium)

SAMPLES = sorted(Path(__file__).resolve().parent.parent.glob("samples/*.cg"))
STEPS_CHECKED = 60  # every step of a sample, up to this many (spread over the whole run)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Every sample's page, written once."""
    from cgraph_cli.app.diagrams import page

    folder = tmp_path_factory.mktemp("pages")
    out = {}
    for path in SAMPLES:
        target = folder / f"{path.stem}.html"
        target.write_text(page(path.read_text()), encoding="utf-8")
        out[path.stem] = target
    return out


def _open(browser, target):  # noqa: F811
    tab = browser.new_page(viewport={"width": 1366, "height": 768})
    tab.problems, tab.requests = [], []
    tab.on("console", lambda m: tab.problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: tab.problems.append(str(e)))
    tab.on("request", lambda q: tab.requests.append(q.url))
    tab.goto(target.as_uri())
    return tab


INSIDE = """() => {
  const c = document.querySelector('.stage .canvas').getBoundingClientRect();
  const boxes = [...document.querySelectorAll('#graph .node.active')]
    .map((g) => g.getBoundingClientRect());
  const inside = (r) => r.left >= c.left - 1 && r.right <= c.right + 1 &&
                        r.top >= c.top - 1 && r.bottom <= c.bottom + 1;
  if (!boxes.length) return true;
  const u = { left: Math.min(...boxes.map((r) => r.left)), right: Math.max(...boxes.map((r) => r.right)),
              top: Math.min(...boxes.map((r) => r.top)), bottom: Math.max(...boxes.map((r) => r.bottom)) };
  // every active node in view where they fit together (the inputs, spread over a wide graph,
  // may not: then the view starts at the first)
  const fit = u.right - u.left <= c.width && u.bottom - u.top <= c.height;
  return fit ? boxes.every(inside) : boxes.some(inside);
}"""

SMALLEST_TEXT = """() => Math.min(...[...document.querySelectorAll('#graph .node text')]
  .filter((t) => t.getBBox().height > 0)
  .map((t) => parseFloat(getComputedStyle(t).fontSize) *
       document.getElementById('graph').getBoundingClientRect().width /
       document.getElementById('graph').viewBox.baseVal.width))"""


@pytest.mark.parametrize("name", [p.stem for p in SAMPLES])
def test_every_step_shows_its_node_and_the_text_reads(browser, pages, name):  # noqa: F811
    tab = _open(browser, pages[name])
    try:
        assert tab.evaluate(SMALLEST_TEXT) >= 12 - 0.01
        total = int(tab.text_content("#counter").split("/")[1])
        stride = max(1, total // STEPS_CHECKED)
        for k in range(1, total + 1):
            tab.keyboard.press("ArrowRight")
            if k % stride and k != total:
                continue
            assert tab.evaluate(INSIDE), (name, k, tab.text_content("#caption"))
        assert not tab.problems and all(u.startswith("file:") for u in tab.requests)
    finally:
        tab.close()


def test_zoom_keys_buttons_and_search(browser, pages):  # noqa: F811
    tab = _open(browser, pages["mlp"])
    try:

        def width() -> float:
            return tab.evaluate("document.getElementById('graph').getBoundingClientRect().width")

        start = width()
        tab.keyboard.press("+")
        assert width() > start * 1.2
        tab.click("#zoom-out")
        tab.click("#zoom-out")
        assert width() < start
        tab.keyboard.press("0")
        assert abs(width() - start) < 2
        tab.fill("#search", "W2")
        tab.press("#search", "Enter")
        found = tab.evaluate("[...document.querySelectorAll('#graph .node.found')].length")
        assert found >= 1 and "1 of" in tab.text_content("#search-result")
        assert "W2" in tab.text_content("#details h2")
        tab.press("#search", "Escape")
        assert tab.evaluate("document.querySelectorAll('#graph .node.found').length") == 0
        tab.fill("#search", "nothing-like-this")
        tab.press("#search", "Enter")
        assert "no node named" in tab.text_content("#search-result")
        assert not tab.problems
    finally:
        tab.close()


# Folding: each call of a function is one box until opened ---------------------------------
VISIBLE = """(id) => { const el = document.getElementById(id);
  return !!el && getComputedStyle(el).display !== 'none' && getComputedStyle(el).visibility !== 'hidden'; }"""


def _total(tab) -> int:
    return int(tab.text_content("#counter").split("/")[1])


def test_calls_open_folded_and_step_as_one_node(browser, pages):  # noqa: F811
    tab = _open(browser, pages["layers"])
    try:
        for box in ("c0-box", "c1-box", "c2-box"):
            assert tab.evaluate(VISIBLE, box)
        for node in ("n6", "n7", "n8", "n9", "n12"):  # inside the calls: hidden
            assert not tab.evaluate(VISIBLE, node)
        for node in ("n0", "n2", "n3", "n4"):  # x, W1, b1, W2 stay outside
            assert tab.evaluate(VISIBLE, node)
        # Inputs, 3 calls, the seed, back through 3 calls, done: 9 steps, not 15
        assert _total(tab) == 9
        tab.keyboard.press("ArrowRight")
        tab.keyboard.press("ArrowRight")
        assert tab.text_content("#caption") == "h = layer(x, W1, b1) = [0.4621, -0.3799, 0.9217]"
        assert tab.evaluate(
            "[...document.querySelectorAll('#graph .active')].map((e) => e.id)"
        ) == ["c0-box"]
        assert tab.text_content("#c0-v").startswith("= [0.4621")
        for _ in range(5):
            tab.keyboard.press("ArrowRight")
        caption = tab.text_content("#caption")
        assert caption.startswith("Back through layer(h, W2, b2), its vector-Jacobian product:")
        assert "W\u0305" in caption and "h\u0304 += [0.01514, -0.0227, 0.03027]" in caption
        assert tab.evaluate(INSIDE)
        assert not tab.problems
    finally:
        tab.close()


def test_a_click_or_enter_opens_a_call_and_its_header_folds_it(browser, pages):  # noqa: F811
    tab = _open(browser, pages["layers"])
    try:
        tab.keyboard.press("End")
        tab.click("#c1-box")
        assert not tab.evaluate(VISIBLE, "c1-box")
        assert all(tab.evaluate(VISIBLE, n) for n in ("n9", "n10", "n11"))
        assert tab.evaluate(VISIBLE, "c1")  # its outline, headed by the call
        # its 3 nodes' values, and the gradient along its 5 edges, one step each: 1 and 1 before
        assert _total(tab) == 9 + 2 + 4
        assert tab.text_content("#counter").startswith("15 /")  # still at the end
        tab.click("#c1 .ghead")  # the header folds it again
        assert tab.evaluate(VISIBLE, "c1-box") and not tab.evaluate(VISIBLE, "n10")
        assert _total(tab) == 9
        tab.focus("#c0-box")
        tab.keyboard.press("Enter")
        assert tab.evaluate(VISIBLE, "n7") and not tab.evaluate(VISIBLE, "c0-box")
        assert tab.evaluate("document.activeElement.id") == "n8"  # what the call returns
        tab.focus("#c0 .ghead")
        tab.keyboard.press("Enter")
        assert tab.evaluate(VISIBLE, "c0-box") and not tab.evaluate(VISIBLE, "n7")
        assert "layer(x, W1, b1)" in tab.text_content("#details h2")
        assert not tab.problems
    finally:
        tab.close()


def test_search_opens_the_call_a_node_is_in(browser, pages):  # noqa: F811
    tab = _open(browser, pages["layers"])
    try:
        tab.fill("#search", "t3")
        tab.press("#search", "Enter")
        assert tab.evaluate(VISIBLE, "n9") and not tab.evaluate(VISIBLE, "c1-box")
        assert tab.text_content("#details h2").startswith("t3")
        assert tab.evaluate(VISIBLE, "c0-box")  # the others stay folded
    finally:
        tab.close()


ELEMENT_COLOURS = """() => [...document.querySelectorAll('#graph .grad')]
  .filter((t) => getComputedStyle(t.closest('g')).display !== 'none')
  .flatMap((t) => {
    const spans = [...t.querySelectorAll('tspan')];
    if (!spans.length) return t.textContent.includes('±') &&
        (t.classList.contains('pos') || t.classList.contains('neg')) ? [t.textContent] : [];
    return spans.filter((s) => {
      const x = parseFloat(s.textContent);
      const want = x > 0 ? 'pos' : x < 0 ? 'neg' : '';
      return (s.getAttribute('class') || '') !== want;
    }).map((s) => t.textContent + ': ' + s.textContent);
  })"""


@pytest.mark.parametrize("name", ["layers", "mlp", "fanout", "softmax_cross_entropy"])
def test_each_element_of_a_gradient_has_the_colour_of_its_sign(browser, pages, name):  # noqa: F811
    tab = _open(browser, pages[name])
    try:
        assert tab.evaluate(ELEMENT_COLOURS) == []  # the page as written, before the script's steps
        tab.keyboard.press("End")
        assert tab.evaluate(ELEMENT_COLOURS) == []
        spans = tab.evaluate("document.querySelectorAll('#graph .grad tspan').length")
        assert spans > 0 or name == "fanout"
        for _ in range(3):  # halfway through the backward pass too
            tab.keyboard.press("ArrowLeft")
        assert tab.evaluate(ELEMENT_COLOURS) == []
    finally:
        tab.close()
