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
