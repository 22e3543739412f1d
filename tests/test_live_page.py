"""The live page (`cgraph render P -o P.html --live`) in headless Chromium: inputs set through
the sliders and the number fields recompute every value and gradient in the page, each equal to
`cgraph grad` for those bindings; a gradient step, a reset, a domain error shown at its node, a
branch that changes said; the time from an input to its repaint; no console error, no request."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_page import browser  # noqa: F401  (the module's one Chromium)

from cgraph_cli.app.live import live_page

# sample, then input settings: (name, how, value): how is "field", "slider" or an element index
CASES = {
    "seed": [("x", "field", 2.5), ("z", "slider", 1.25), ("y", "field", -0.75)],
    "neuron": [("x1", "slider", 1.5), ("w2", "field", -2.0), ("b", "field", 0.1)],
    "huber": [("e", "field", -0.4), ("d", "slider", 0.75)],
    "mlp": [("W1", 4, 0.9), ("b2", 1, -0.3), ("X", 0, -1.5)],
    "rnn": [("target", "field", -0.2), ("W", 1, 0.7), ("xs", 5, 0.25)],
}


def _open(browser, target):  # noqa: F811
    tab = browser.new_page(viewport={"width": 1366, "height": 768})
    tab.problems, tab.requests = [], []
    tab.on("console", lambda m: tab.problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: tab.problems.append(str(e)))
    tab.on("request", lambda q: tab.requests.append(q.url))
    tab.goto(target.as_uri())
    return tab


def _set(tab, name, how, value) -> None:
    if how == "slider":
        selector = f'[data-slider="{name}"]'
    elif how == "field":
        selector = f'input[data-input="{name}"]:not([data-index])'
    else:
        selector = f'input[data-input="{name}"][data-index="{how}"]'
    tab.eval_on_selector(
        selector,
        "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input')); }",
        value,
    )


def _shown(tab, name, what="value"):
    node = tab.query_selector(f'[data-node="{name}"]')
    text = None if node is None else node.get_attribute(f"data-{what}")
    return None if text in (None, "") else np.array(json.loads(text), dtype=float)


@pytest.mark.parametrize("sample", sorted(CASES))
def test_values_and_gradients_set_through_the_page_are_cgraph_grads(browser, cli, tmp_path, sample):  # noqa: F811
    target = tmp_path / f"{sample}.html"
    r = cli("render", f"samples/{sample}.cg", "-o", str(target), "--live")
    assert r.exit_code == 0, r.stderr
    tab = _open(browser, target)
    bound = {}
    for name, how, value in CASES[sample]:
        _set(tab, name, how, value)
        if isinstance(how, int):
            bound.setdefault(
                name, json.loads(tab.get_attribute(f'[data-node="{name}"]', "data-value"))
            )
        else:
            bound[name] = value
        args = [f"{k}={json.dumps(v)}" for k, v in bound.items()]
        g = json.loads(cli("grad", f"samples/{sample}.cg", *args, "--format", "json").stdout)
        out = g["output"]
        assert _shown(tab, out) == pytest.approx(g["value"], rel=1e-12, abs=1e-15)
        for x, expected in g["gradients"].items():
            shown = _shown(tab, x, "grad")
            if shown is None:  # an input the output does not read is not drawn
                continue
            np.testing.assert_allclose(shown, np.array(expected), rtol=1e-12, atol=1e-15)
        # and the value drawn in the output's node, to the digits shown
        drawn = tab.text_content(f'[data-node="{out}"] .val').removeprefix("= ")
        assert float(drawn) == pytest.approx(g["value"], rel=1e-3)
    assert tab.problems == [] and tab.requests == [target.as_uri()]


def test_an_input_is_recomputed_and_drawn_within_50_ms_for_mlp(browser, tmp_path):  # noqa: F811
    target = tmp_path / "mlp.html"
    target.write_text(live_page(open("samples/mlp.cg").read()), encoding="utf-8")
    tab = _open(browser, target)
    times = []
    for k in range(8):
        _set(tab, "W1", k % 15, 0.1 * k)
        tab.wait_for_timeout(60)
        times.append(float(tab.evaluate("() => Number(document.body.dataset.repaintMs)")))
    assert sorted(times)[len(times) // 2] < 50, times
    assert tab.problems == []


def test_a_gradient_step_lowers_the_loss_and_reset_brings_the_inputs_back(browser, tmp_path):  # noqa: F811
    target = tmp_path / "neuron.html"
    target.write_text(live_page(open("samples/neuron.cg").read()), encoding="utf-8")
    tab = _open(browser, target)
    x1 = _shown(tab, "x1")
    w1 = float(_shown(tab, "w1"))
    g = float(_shown(tab, "w1", "grad"))
    tab.click("#live-step")  # o rises along its gradient's negative: inputs -= 0.1 * gradient
    assert float(_shown(tab, "w1")) == pytest.approx(w1 - 0.1 * g, rel=1e-12)
    assert _shown(tab, "x1") == x1  # data, frozen
    tab.click("#live-reset")
    assert float(_shown(tab, "w1")) == w1
    assert tab.problems == []


def test_a_domain_error_is_shown_at_its_node_and_no_number_is_drawn(browser, tmp_path):  # noqa: F811
    target = tmp_path / "log.html"
    target.write_text(live_page("input x = 2\ny = log(x) * 3"), encoding="utf-8")
    tab = _open(browser, target)
    tab.click('[data-node="y"]')  # its details open, with its value in them
    assert "Value" in tab.text_content("#details")
    _set(tab, "x", "field", -1)
    error = tab.text_content("#live-error")
    assert "log" in error and ":2:" in error
    assert tab.text_content("#details") == "No values: see the message above the graph"
    tab.click('[data-node="y"]')  # chosen again: a question mark, never the old number
    details = tab.text_content("#details")
    assert "?" in details and str(round(np.log(2) * 3, 4)) not in details
    assert tab.get_attribute('[data-node="y"]', "data-value") == ""
    assert "failed" in tab.get_attribute('[data-node="t1"]', "class")
    assert "nan" not in tab.text_content("#graph").lower()
    _set(tab, "x", "field", 3)
    assert _shown(tab, "y") == pytest.approx(3 * np.log(3))
    assert tab.problems == []


def test_a_branch_that_changes_is_drawn_again_and_said(browser, cli, tmp_path):  # noqa: F811
    target = tmp_path / "huber.html"
    target.write_text(live_page(open("samples/huber.cg").read()), encoding="utf-8")
    tab = _open(browser, target)
    inside = {n.get_attribute("data-node") for n in tab.query_selector_all("[data-node]")}
    for e, branch in ((2.5, "else"), (0.5, "if"), (-4.0, "else"), (0.3, "if")):
        _set(tab, "e", "field", e)
        g = json.loads(cli("grad", "samples/huber.cg", f"e={e}", "--format", "json").stdout)
        assert _shown(tab, "loss") == pytest.approx(g["value"], rel=1e-12)
        for x in "ed":  # (d read by the condition alone: no gradient drawn, 0)
            shown = _shown(tab, x, "grad")
            assert (0.0 if shown is None else shown) == pytest.approx(g["gradients"][x], rel=1e-12)
        drawn = {n.get_attribute("data-node") for n in tab.query_selector_all("[data-node]")}
        note = tab.text_content("#live-note")
        assert tab.get_attribute("#live-error", "hidden") is not None  # no error shown
        if branch == "else":  # the else branch drawn: d * (abs(e) - 0.5 * d), no e^2
            assert drawn != inside and "abs(e) <= d is false" in note, (drawn, note)
            assert "`else` branch runs: d * (abs(e) - 0.5 * d)" in note
        else:
            assert drawn == inside and "abs(e) <= d is true" in note, (drawn, note)
        # the drawing's numbers are the new ones: the output's node, and the steps' captions
        shown = tab.text_content('[data-node="loss"] .val').removeprefix("= ")
        assert float(shown) == pytest.approx(g["value"], rel=1e-3)
        tab.click("#first")
        tab.click("#next")
        assert "Inputs: e = " + str(e).rstrip("0").rstrip(".") in tab.text_content("#caption")
        tab.click("#last")
    assert tab.problems == [] and tab.requests == [target.as_uri()]


def test_a_branch_the_page_does_not_hold_is_said_and_nothing_stale_is_shown(browser, tmp_path):  # noqa: F811
    # x > 1e9 is out of every input tried: the page holds one graph and says how to draw the other
    target = tmp_path / "far.html"
    target.write_text(live_page("input x = 2\ny = x * 2 if x < 1e9 else log(x)"), encoding="utf-8")
    tab = _open(browser, target)
    _set(tab, "x", "field", 2e9)
    error = tab.text_content("#live-error")
    assert "x < 1e9 is now false" in error and "`else` branch" in error, error
    assert "Draw that one: cgraph render" in error and "x=2000000000" in error
    assert tab.get_attribute('[data-node="y"]', "data-value") == ""
    _set(tab, "x", "field", 0.5)
    assert _shown(tab, "y") == pytest.approx(1.0)
    assert tab.problems == []


def test_the_local_derivatives_keep_their_numbers_after_a_change(browser, tmp_path):  # noqa: F811
    # g = (x + y) * z: the edge p -> g carries ∂g/∂p = z, the edge z -> g ∂g/∂z = p
    target = tmp_path / "seed.html"
    target.write_text(live_page(open("samples/seed.cg").read()), encoding="utf-8")
    tab = _open(browser, target)
    _set(tab, "z", "field", 1.25)
    _set(tab, "x", "field", 2.5)  # p = 2.5 + 3 = 5.5
    labels = [
        t.strip()
        for t in tab.eval_on_selector_all(".edge text", "els => els.map(e => e.textContent)")
    ]
    assert "∂g/∂p = 1.25" in labels and "∂g/∂z = 5.5" in labels, labels
    tab.click('[data-node="g"]')
    details = tab.text_content("#details")
    assert "∂g/∂p = z = 1.25" in details and "∂g/∂z = p = 5.5" in details, details
    captions = tab.evaluate("() => cgraphPage.data.events.map((e) => e.caption)")
    assert any("= 1 · 1.25 = 1.25" in c for c in captions), captions  # p̄ += ḡ · ∂g/∂p
    assert tab.problems == []


def test_a_loop_whose_number_of_steps_changes_is_drawn_again(browser, cli, tmp_path):  # noqa: F811
    program = tmp_path / "power.cg"
    program.write_text("input n = 3, x = 1.5\nh = 1\nfor t in range(n):\n    h = h * x\n")
    target = tmp_path / "power.html"
    r = cli("render", str(program), "-o", str(target), "--live")
    assert r.exit_code == 0, r.stderr
    tab = _open(browser, target)
    for n, last in ((5, "h_5"), (2, "h_2"), (3, "h_3")):
        _set(tab, "n", "field", n)
        names = {e.get_attribute("data-node") for e in tab.query_selector_all("[data-node]")}
        assert last in names and f"h_{n + 1}" not in names, names
        g = json.loads(cli("grad", str(program), f"n={n}", "--format", "json").stdout)
        assert _shown(tab, last) == pytest.approx(g["value"], rel=1e-12)
        assert _shown(tab, "x", "grad") == pytest.approx(g["gradients"]["x"], rel=1e-12)
        assert f"n is {n}, so the loop runs {n} steps" in tab.text_content("#live-note") or n == 3
    _set(tab, "n", "field", 40)  # past the slider's range: another graph, said
    assert "Draw that one: cgraph render power.cg" in tab.text_content("#live-error")
    assert tab.problems == []


def test_an_error_of_the_branch_taken_is_the_one_shown(browser, tmp_path):  # noqa: F811
    # x = -1 takes the else branch, sqrt(-1): its error (2:26), not the drawn branch's log(-1)
    target = tmp_path / "both.html"
    target.write_text(live_page("input x = 2\ny = log(x) if x > 0 else sqrt(x)"), encoding="utf-8")
    tab = _open(browser, target)
    _set(tab, "x", "field", -1)
    error = tab.text_content("#live-error")
    assert "2:26" in error and "sqrt(-1)" in error and "log" not in error, error
    _set(tab, "x", "field", 4)
    assert _shown(tab, "y") == pytest.approx(np.log(4))
    assert tab.problems == []


def test_a_number_of_steps_that_is_not_whole_is_said(browser, tmp_path):  # noqa: F811
    target = tmp_path / "power.html"
    program = "input n = 3, x = 1.5\nh = 1\nfor t in range(n):\n    h = h * x\n"
    target.write_text(live_page(program), encoding="utf-8")
    tab = _open(browser, target)
    _set(tab, "n", "field", 2.5)
    assert "a loop's number of steps is a whole number, but n is 2.5" in tab.text_content(
        "#live-error"
    )
    assert tab.get_attribute('[data-node="h_3"]', "data-value") == ""
    assert tab.problems == []


def test_a_loop_with_if_else_keeps_computing_while_its_branches_stay(browser, cli, tmp_path):  # noqa: F811
    program = tmp_path / "loopif.cg"
    program.write_text(
        "input x = 0.5, n = 3\nh = x\nfor t in range(n):\n    h = h * 2 if h < 1 else h - 0.5\n"
        "y = h^2\n"
    )
    target = tmp_path / "loopif.html"
    assert cli("render", str(program), "-o", str(target), "--live").exit_code == 0
    tab = _open(browser, target)
    for x in (0.5, 0.6):  # the same branch at every step as the page's own inputs
        _set(tab, "x", "field", x)
        g = json.loads(cli("grad", str(program), f"x={x}", "--format", "json").stdout)
        assert _shown(tab, "y") == pytest.approx(g["value"], rel=1e-12), x
    _set(tab, "x", "field", 0.3)  # at step 2, h = 0.6 (not 1): the other branch
    assert "h < 1 is now true" in tab.text_content("#live-error")
    assert tab.problems == []


def test_a_folded_steps_captions_follow_a_change(browser, cli, tmp_path):  # noqa: F811
    target = tmp_path / "rnn.html"
    assert cli("render", "samples/rnn.cg", "-o", str(target), "--live").exit_code == 0
    tab = _open(browser, target)
    _set(tab, "W", 1, 0.7)
    W = json.loads(tab.get_attribute('[data-node="W"]', "data-value"))
    ran = json.loads(
        cli("eval", "samples/rnn.cg", f"W={json.dumps(W)}", "--all", "--format", "json").stdout
    )
    captions = tab.evaluate("() => cgraphPage.data.groups.map((g) => [g.forward, g.backward])")
    h2 = ran["values"]["h_2"]
    assert f"h_2 = [{h2[0]:.4g}, {h2[1]:.4g}]" in captions[1][0], captions[1]
    assert all(b.endswith("its vector-Jacobian product") for _, b in captions)  # no stale share
    assert tab.problems == []
