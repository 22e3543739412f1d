"""`cgraph worksheet`: exercise sheets checked against the worked example's numbers, blanks
of every kind, seeds that repeat, numbered files, the answer key, and the refusals."""

from __future__ import annotations

import json
import re

import pytest

from cgraph_cli.app.worksheet import sheet

SEED = "g = (x + y) * z"
WORKED = {"x": 1, "y": 3, "z": -3}


def cells(markdown: str) -> dict[str, list[str]]:
    """The table's rows by node: [computes, value, locals, gradient]."""
    rows = {}
    for line in markdown.splitlines():
        parts = [p.strip() for p in line.strip("|").split("|")]
        if line.startswith("| ") and len(parts) == 5 and parts[0] not in ("node", "---"):
            rows[parts[0]] = parts[1:]
    return rows


def test_the_key_holds_the_worked_examples_numbers(cli, tmp_path):
    key = tmp_path / "key.md"
    r = cli("worksheet", SEED, "x=1", "y=3", "z=-3", "--answers", str(key))
    assert r.exit_code == 0, r.stderr
    sheet_rows = cells(r.stdout)
    key_rows = cells(key.read_text())
    assert key_rows["t1"] == ["x + y", "**4**", "∂t1/∂x = **1**, ∂t1/∂y = **1**", "**-3**"]
    assert key_rows["g"] == ["t1 * z", "**-12**", "∂g/∂t1 = **-3**, ∂g/∂z = **4**", "1"]
    assert [key_rows[n][3] for n in "xyz"] == ["**-3**", "**-3**", "**4**"]
    # The sheet: the same table with every answer blank, the inputs' values and ∂g/∂g given.
    assert sheet_rows["t1"] == ["x + y", "____", "∂t1/∂x = ____, ∂t1/∂y = ____", "____"]
    assert sheet_rows["x"] == ["input", "1", "", "____"] and sheet_rows["g"][3] == "1"
    assert "-12" not in r.stdout and "```mermaid" in r.stdout


@pytest.mark.parametrize(
    ("blank", "kinds"),
    [("values", {"value"}), ("gradients", {"gradient"}), ("local", {"local:0", "local:1"})],
)
def test_each_kind_of_blank_leaves_out_only_its_cells(blank, kinds):
    s = sheet(SEED, WORKED, blank=blank)
    assert {cell for _, cell in s["blanks"]} == kinds
    if blank == "values":
        assert [n for n, _ in s["blanks"]] == ["t1", "g"]  # an input's value is given
    if blank == "gradients":
        assert "g" not in [n for n, _ in s["blanks"]]  # the backward pass starts from 1


def test_a_fraction_of_blanks_is_drawn_by_the_seed_and_repeats():
    every = sheet(SEED, WORKED, blank="all")["blanks"]
    some = sheet(SEED, WORKED, blank=0.5, seed=3)["blanks"]
    assert len(some) == round(0.5 * len(every)) and all(b in every for b in some)
    assert sheet(SEED, WORKED, blank=0.5, seed=3)["blanks"] == some
    assert any(sheet(SEED, WORKED, blank=0.5, seed=k)["blanks"] != some for k in range(4, 9))


def test_a_seed_draws_small_numbers_for_the_inputs_not_bound():
    seen = set()
    for k in range(20):
        s = sheet(SEED, {"z": 2}, seed=k)
        assert s["bindings"]["z"] == 2
        for name in "xy":
            v = s["bindings"][name]
            assert v == int(v) and 1 <= abs(v) <= 5
            seen.add(v)
        assert s == sheet(SEED, {"z": 2}, seed=k)  # the same seed, the same sheet
    assert len(seen) > 4
    one = sheet(SEED, seed=1, numbers="decimal")["bindings"]
    assert all(round(v, 1) == v and 0 < abs(v) <= 3 for v in one.values())


def test_a_draw_where_a_value_is_not_finite_is_drawn_again():
    for k in range(10):
        s = sheet("y = log(x) / (x - 1)", seed=k)
        x = s["bindings"]["x"]
        assert x > 0 and x != 1


def test_saturated_draws_are_drawn_again_where_a_tamer_one_exists():
    s = sheet((open("samples/neuron.cg").read()), seed=7)
    assert all(abs(r["gradient"]) >= 1e-3 for r in s["rows"])


def test_the_sheet_hides_the_programs_defaults_and_comments():
    s = sheet("# answer: 0.7071\ninput x = 2, w = -3\no = tanh(x * w)  # -1", seed=1)
    assert s["program"] == "input x, w\no = tanh(x * w)"


def test_count_writes_numbered_sheets_and_keys(cli, tmp_path):
    r = cli(
        "worksheet", "sample:seed", "--count", "3", "--seed", "10", "--blank", "values",
        "-o", str(tmp_path / "week1.md"), "--answers", str(tmp_path / "key.md"),
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"{n}-{k}.md" for n in ("key", "week1") for k in (1, 2, 3)]
    texts = [(tmp_path / f"week1-{k}.md").read_text() for k in (1, 2, 3)]
    assert "Worksheet 1: seed.cg (seed 10)" in texts[0] and "(seed 12)" in texts[2]
    assert len(set(texts)) == 3


def test_latex_and_html_sheets(cli, tmp_path):
    r = cli("worksheet", "sample:seed", "--format", "latex", "-o", str(tmp_path / "s.tex"),
            "--answers", str(tmp_path / "k.tex"))  # fmt: skip
    assert r.exit_code == 0, r.stderr
    tex = (tmp_path / "s.tex").read_text()
    assert tex.startswith("\\documentclass") and "\\underline{\\hspace{1.6cm}}" in tex
    assert "\\fbox{\\ensuremath{-}12}" in (tmp_path / "k.tex").read_text()
    r = cli("worksheet", "sample:seed", "--format", "html", "--answers", str(tmp_path / "k.html"))
    assert r.exit_code == 0 and '<span class="blank"></span>' in r.stdout and "<svg" in r.stdout
    assert "<mark>-12</mark>" in (tmp_path / "k.html").read_text()


def test_json_holds_every_answer_and_the_blanks(cli):
    r = cli("worksheet", SEED, "x=1", "y=3", "z=-3", "--blank", "gradients", "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1
    (s,) = doc["sheets"]
    assert {row["node"]: row["gradient"] for row in s["rows"]}["z"] == 4
    assert ["x", "gradient"] in s["blanks"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--count", "3"], "--count 3 writes 3 sheets: name them with -o FILE"),
        (["--blank", "some"], "--blank some: not one of values, gradients, local, all"),
        (["--blank", "1.5"], "--blank 1.5: a fraction must be more than 0 and at most 1"),
        (["--format", "json", "--answers", "k.json"], "--answers does not go with --format json"),
    ],
)
def test_usage_errors(cli, args, message):
    r = cli("worksheet", "sample:seed", *args)
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_a_tensor_program_is_refused_with_a_reason(cli):
    r = cli("worksheet", "sample:mlp")
    assert r.exit_code == 2
    assert re.search(r"must compute with numbers, not tensors", r.stderr)


def test_an_op_with_a_reverse_rule_only_has_no_local_cell(cli):
    # sum(x) of a number: no local derivative as a number, but a value and a gradient
    r = cli("worksheet", "y = sum(x)", "--format", "json")
    assert r.exit_code == 0, r.stderr
    (row,) = [row for row in json.loads(r.stdout)["sheets"][0]["rows"] if row["node"] == "y"]
    assert row["locals"] == [] and row["gradient"] == 1
