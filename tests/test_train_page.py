"""`cgraph train ... --page FILE.html`: the training filmed on the graph. The file is offline and
small; in headless Chromium, the slider at the last step shows the weights `train -o` saved,
and at every step the loss under it is the log's."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
from test_page import browser  # noqa: F401  (the module's one Chromium)

from cgraph_cli import parse
from cgraph_cli.app.film import Film
from cgraph_cli.jobs.training import train

MOONS = [
    "train", "samples/moons.cg", "--rows", "samples/data/two_moons.csv",
    "--wrt", "W1,b1,W2,b2", "--epochs", "200",
]  # fmt: skip


def test_the_film_keeps_at_most_its_limit_of_steps_evenly_and_the_last_one():
    film = Film(["x"], limit=10)
    train(parse("input x = 3\nf = (x - 1)^2"), wrt=["x"], lr=0.01, steps=77, watch=film)
    steps = [s for s, _ in film.frames()]
    assert steps[0] == 1 and steps[-1] == 77 and len(steps) <= 11
    gaps = {b - a for a, b in zip(steps[:-2], steps[1:-1])}
    assert len(gaps) == 1  # evenly spaced, the last step aside
    # each kept step holds the parameter going into it, not the one after the run
    x0 = dict(film.frames())[1]["x"]
    assert float(x0) == 3.0


@pytest.fixture(scope="module")
def moons(tmp_path_factory):
    """The moons MLP trained for 200 epochs with --page, -o and --log."""
    from click.testing import CliRunner

    from cgraph_cli.cli import main

    folder = tmp_path_factory.mktemp("film")
    page, weights, log = folder / "moons.html", folder / "moons.npz", folder / "moons.csv"
    args = [*MOONS, "--optimizer", "adam", "--lr", "0.02", "--page", str(page)]
    r = CliRunner().invoke(main, [*args, "-o", str(weights), "--log", str(log)])
    assert r.exit_code == 0, r.output
    with open(log, newline="") as f:
        rows = {int(row["step"]): float(row["loss"]) for row in csv.DictReader(f)}
    return page, dict(np.load(weights)), rows


def test_the_page_is_one_small_file_that_asks_for_nothing(moons):
    page, _, _ = moons
    html = page.read_text(encoding="utf-8")
    assert page.stat().st_size < 5_000_000
    assert "default-src 'none'" in html
    assert not re.search(r"https?://", html)
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", html)


def _open(browser, page):  # noqa: F811
    tab = browser.new_page(viewport={"width": 1366, "height": 768})
    tab.problems, tab.requests = [], []
    tab.on("console", lambda m: tab.problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: tab.problems.append(str(e)))
    tab.on("request", lambda q: tab.requests.append(q.url))
    tab.goto(page.as_uri())
    return tab


def _slide(tab, k: int) -> None:
    tab.evaluate(
        "(k) => { const s = document.getElementById('frame'); s.value = k;"
        " s.dispatchEvent(new Event('input')); }",
        k,
    )


def test_the_last_step_shows_the_weights_train_saved(browser, moons):  # noqa: F811
    page, weights, _ = moons
    tab = _open(browser, page)
    last = int(tab.get_attribute("#frame", "max"))
    _slide(tab, 0)
    _slide(tab, last)
    for name in ("W1", "b1", "W2", "b2"):
        shown = json.loads(tab.get_attribute(f'[data-node="{name}"]', "data-value"))
        assert np.array_equal(np.array(shown), weights[name]), name
    assert "trained" in tab.text_content("#counter")
    assert tab.problems == [] and tab.requests == [page.as_uri()]


def test_the_loss_under_the_slider_is_the_logs(browser, moons):  # noqa: F811
    page, _, log = moons
    tab = _open(browser, page)
    last = int(tab.get_attribute("#frame", "max"))
    seen = set()
    for k in [0, 1, 57, 123, last - 1]:
        _slide(tab, k)
        step = int(re.match(r"step (\d+) of 200", tab.text_content("#counter")).group(1))
        shown = tab.text_content("#loss-now")
        assert float(tab.get_attribute("#loss-now", "data-loss")) == log[step]
        assert float(shown) == pytest.approx(log[step], rel=1e-5)
        # the graph's output node shows the same loss (the forward pass of that step)
        loss_text = tab.text_content('[data-node="loss"] .val')
        assert float(loss_text.removeprefix("= ")) == pytest.approx(log[step], rel=1e-3)
        seen.add(step)
    assert len(seen) == 5 and 200 in seen  # every step of 200 is kept
    assert tab.problems == [] and tab.requests == [page.as_uri()]


def test_play_moves_through_the_steps(browser, moons):  # noqa: F811
    page, _, _ = moons
    tab = _open(browser, page)
    tab.click("#play")
    tab.wait_for_timeout(600)  # wait_for_function evaluates text: the page's CSP forbids it
    assert int(tab.eval_on_selector("#frame", "(s) => Number(s.value)")) > 3
    tab.click("#play")
    assert tab.text_content("#play").strip().endswith("Play")
    assert tab.problems == []
