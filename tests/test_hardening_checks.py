"""Hardening of `check`, `gradcheck` and JSON output: no input gives a wrong answer, a crash,
a hang, or a look outside what the user named."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from cgraph_cli.app.report import to_json_text

SECRET = "top secret line"


def spec(folder: Path, text: str) -> str:
    """A checks file in ``folder`` next to prog.cg (y = x * x, x = 2 by default)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prog.cg").write_text("input x = 2\ny = x * x\n")
    path = folder / "checks.toml"
    path.write_text(text)
    return str(path)


def assert_exit_2_at(result, path: str, line: int, message: str, col: int | None = None):
    assert result.exit_code == 2, result.stdout + result.stderr
    where = f"{path}:{line}:" + (f"{col}:" if col else "")
    assert result.stderr.startswith(where), result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


# --- 1. a checks file reads only what is under its folder ----------------------------------------
@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink", "symlinked folder"])
def test_a_case_file_outside_the_checks_folder_is_refused_unread(cli, tmp_path, kind):
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    folder = tmp_path / "ci"
    folder.mkdir()
    (folder / "link.cg").symlink_to(secret)
    (folder / "out").symlink_to(tmp_path)
    value = {
        "absolute": str(secret),
        "dotdot": "../secret.txt",
        "symlink": "link.cg",
        "symlinked folder": "out/secret.txt",
    }[kind]
    path = spec(folder, f'[[case]]\nfile = "{value}"\nexpect = {{ y = 4 }}\n')
    result = cli("check", "--spec", path)
    assert_exit_2_at(result, path, 2, "'file' in case 1 ", col=8)
    assert f'   2 | file = "{value}"\n     |        ^~~' in result.stderr  # the caret at the value
    assert SECRET not in result.stdout + result.stderr
    assert "secret" not in result.stdout


def test_a_case_file_under_the_checks_folder_is_read(cli, tmp_path):
    folder = tmp_path / "ci"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "p.cg").write_text("y = 3 * x\n")
    (folder / "alias.cg").symlink_to(folder / "sub" / "p.cg")  # a link that stays inside
    path = spec(
        folder,
        '[[case]]\nfile = "sub/../sub/p.cg"\nbindings = { x = 1 }\n'
        'expect = { y = 3 }\n[[case]]\nfile = "alias.cg"\nbindings = { x = 2 }\n'
        'expect = { y = 6 }\n[[case]]\nfile = "/etc/hostname"\nexpect = { y = 6 }\n',
    )
    result = cli("check", "--spec", path)
    assert_exit_2_at(result, path, 10, "'file' in case 3 is an absolute path: \"/etc/hostname\"")
    Path(path).write_text(Path(path).read_text().rsplit("[[case]]", 1)[0])
    result = cli("check", "--spec", path)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.endswith("2 passed, 0 failed\n")


# --- 2. a checks file of the wrong structure: exit 2 at its line, with the key -------------------
@pytest.mark.parametrize(
    "text, line, message",
    [
        ("case = [1, 2]\n", 1, "'case' must be one or more [[case]] tables"),
        ("case = 5\n", 1, "'case' must be one or more [[case]] tables"),
        ('[case]\nfile = "prog.cg"\nexpect = { y = 4 }\n', 1, "'case' must be one or more"),
        (
            '[[case]]\nfile = "prog.cg"\nof = 5\nexpect = { y = 4 }\n',
            3,
            "'of' in case 1 must be a string",
        ),
        (
            '[[case]]\nname = 3\nfile = "prog.cg"\nexpect = { y = 4 }\n',
            2,
            "'name' in case 1 must be a string",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = [[1, 2], [3]] }\n',
            3,
            "'expect' in case 1: the value of 'y' is not a rectangular array of numbers",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nbindings = { x = [[1, 2], [3]] }\nexpect = { y = 4 }\n',
            3,
            "'bindings' in case 1: the value of 'x' is not a rectangular array of numbers",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nbindings = { x = ["a"] }\nexpect = { y = 4 }\n',
            3,
            "'bindings' in case 1: the value of 'x' holds text (strings); cgraph computes with real numbers",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nbindings = { x = true }\nexpect = { y = 4 }\n',
            3,
            "'bindings' in case 1 must be a table of name = number or array ('x' is true)",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nbindings = { x = "3" }\nexpect = { y = 4 }\n',
            3,
            "'bindings' in case 1 must be a table of name = number or array ('x' is \"3\")",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = nan }\n',
            3,
            "'expect' in case 1: the value of 'y' is not a finite number",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = 1e400 }\n',
            3,
            "'expect' in case 1: the value of 'y' is not a finite number",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = 1' + "0" * 400 + " }\n",
            3,
            "'expect' in case 1: the value of 'y' is not a finite number: a whole number of 401",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = [1' + "0" * 400 + "] }\n",
            3,
            "'expect' in case 1: the value of 'y' holds a value that is not a finite number",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = 1' + "0" * 5000 + " }\n",
            3,
            "is not valid TOML: a whole number with too many digits",
        ),
        (
            '[[case]]\nfile = "prog.cg"\natol = inf\nexpect = { y = 5 }\n',
            3,
            "'atol' in case 1 must be a finite, non-negative number, got inf",
        ),
        (
            'rtol = nan\n[[case]]\nfile = "prog.cg"\nexpect = { y = 5 }\n',
            1,
            "'rtol' must be a finite, non-negative number, got nan",
        ),
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = '
            + "[" * 10_000
            + "1"
            + "]" * 10_000
            + " }\n",
            3,
            "arrays or tables nested more than 40 deep",
        ),
        (
            'case = [{ file = "prog.cg", expect = { y = "four" } }]\n',
            1,
            "'expect' in case 1 must be a table of name = number or array ('y' is \"four\")",
        ),
    ],
    ids=lambda v: v[:40] if isinstance(v, str) else None,
)
def test_spec_structure_mistakes_exit_2_with_line_and_key(cli, tmp_path, text, line, message):
    path = spec(tmp_path, text)
    assert_exit_2_at(cli("check", "--spec", path), path, line, message)


def test_toml_error_position_from_the_exception(cli, tmp_path, monkeypatch):
    """tomli 2.1+ and Python 3.14's tomllib give lineno/colno; the message need not say them."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    class Located(tomllib.TOMLDecodeError):
        def __init__(self):
            ValueError.__init__(self, "Invalid value")
            self.msg, self.lineno, self.colno = "Invalid value", 3, 10

    def loads(text):
        raise Located()

    monkeypatch.setattr(tomllib, "loads", loads)
    path = spec(tmp_path, '[[case]]\nfile = "prog.cg"\nexpect = { y = @ }\n')
    result = cli("check", "--spec", path)
    assert_exit_2_at(result, path, 3, "is not valid TOML: Invalid value", col=10)


# --- 3. CI runs report every case ----------------------------------------------------------------
BROKEN = """\
[[case]]
name = "good"
program = "y = x * x"
bindings = { x = 3 }
expect = { y = 9 }

[[case]]
name = "syntax"
program = "y = x +* 2"
expect = { y = 1 }

[[case]]
name = "missing"
file = "missing.cg"
expect = { y = 1 }

[[case]]
name = "domain"
program = "y = log(x)"
bindings = { x = -1 }
expect = { y = 1 }

[[case]]
name = "wrong"
file = "prog.cg"
expect = { y = 5 }
expect_grad = { x = 4 }
"""


def test_every_case_runs_and_each_error_is_reported_as_its_case(cli, tmp_path):
    path = spec(tmp_path, BROKEN)
    junit = tmp_path / "report.xml"
    result = cli("check", "--spec", path, "--junit", str(junit))
    assert result.exit_code == 1, result.stderr
    out = result.stdout
    assert f"syntax:\n  ERROR  {path}[syntax]:1:8: expected an expression" in out
    assert f"missing:\n  ERROR  no such file: {tmp_path / 'missing.cg'}" in out
    assert f"domain:\n  ERROR  {path}[domain]:1:5: log" in out
    assert "wrong:\n  FAIL  y = 4 (expected 5, difference 1)\n  ok    ∂y/∂x = 4" in out
    assert out.endswith("2 passed, 1 failed, 3 cases could not run\n")

    suite = ET.fromstring(junit.read_bytes()).find("testsuite")
    counts = {k: suite.get(k) for k in ("tests", "failures", "errors")}
    assert counts == {"tests": "6", "failures": "1", "errors": "3"}
    errors = {c.get("classname"): c.find("error") for c in suite.iter("testcase")}
    assert errors["syntax"].get("message").startswith(f"{path}[syntax]:1:8: expected")
    assert errors["missing"].get("message") == f"no such file: {tmp_path / 'missing.cg'}"
    assert errors["good"] is None and errors["wrong"] is None

    report = json.loads(cli("check", "--spec", path, "--format", "json").stdout)
    assert (report["passed"], report["failed"], report["errors"]) == (2, 1, 3)
    by_case = {c["case"]: c for c in report["checks"] if "error" in c}
    assert set(by_case) == {"syntax", "missing", "domain"}
    assert by_case["domain"]["error"].startswith(f"{path}[domain]:1:5: log")


def test_spec_mistakes_stay_exit_2_before_anything_runs(cli, tmp_path):
    path = spec(tmp_path, BROKEN + '\n[[case]]\nfile = "prog.cg"\nexpect = { y = 4 }\nexpct = 1\n')
    junit = tmp_path / "report.xml"
    result = cli("check", "--spec", path, "--junit", str(junit))
    assert_exit_2_at(result, path, 32, "unknown key 'expct' in case 6")
    assert result.stdout == "" and not junit.exists()


def test_junit_is_utf8_without_characters_xml_forbids(cli, tmp_path):
    path = spec(
        tmp_path,
        '[[case]]\nname = "a\\u0000b\\u001bc\\u000bd ∂é"\nfile = "prog.cg"\nexpect = { y = 5 }\n',
    )
    junit = tmp_path / "report.xml"
    assert cli("check", "--spec", path, "--junit", str(junit)).exit_code == 1
    data = junit.read_bytes()
    assert data.startswith(b"<?xml version='1.0' encoding='utf-8'?>")
    suite = ET.fromstring(data).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "1", "0")
    assert suite.find("testcase").get("classname") == "a\ufffdb\ufffdc\ufffdd ∂é"
    assert "∂y" not in data.decode("utf-8")  # a value: y = 5 expected, nothing differentiated
    assert "y = 4 (expected 5, difference 1)" in suite.find("testcase/failure").get("message")


def test_junit_to_standard_output(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = spec(tmp_path, BROKEN)
    result = cli("check", "--spec", path, "--junit", "-")
    assert result.exit_code == 1
    suite = ET.fromstring(result.stdout_bytes).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "1", "3")
    assert result.stderr.endswith("2 passed, 1 failed, 3 cases could not run\n")  # the text report
    assert not (tmp_path / "-").exists()
    result = cli("check", "--spec", path, "--junit", "-", "--format", "json")
    assert result.exit_code == 2 and "both write to standard output" in result.stderr


@pytest.mark.parametrize(
    "where, why", [("missing/report.xml", "the folder {} does not exist"), (".", "it is a folder")]
)
def test_junit_that_cannot_be_written_exit_2_before_the_checks(cli, tmp_path, where, why):
    path = spec(tmp_path, BROKEN)
    target = str(tmp_path / where)
    result = cli("check", "--spec", path, "--junit", target)
    assert result.exit_code == 2
    why = why.format(tmp_path / "missing")
    assert result.stderr == f"cgraph: error: cannot write {target}: {why}\n"
    assert result.stdout == ""  # refused before a case ran, as other outputs are


# --- 4. tolerances are finite and not negative ---------------------------------------------------
@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["check", "y = x", "x=1", "--expect", "y=5", "--atol", "inf"],
            "Invalid value for '--atol': 'inf' is not a finite number",
        ),
        (
            ["check", "y = x", "x=1", "--expect", "y=1", "--rtol", "nan"],
            "Invalid value for '--rtol': 'nan' is not a finite number",
        ),
        (
            ["gradcheck", "y = x * x", "x=1", "--rtol", "nan"],
            "Invalid value for '--rtol': 'nan' is not a finite number",
        ),
        (
            ["gradcheck", "y = x * x", "x=1", "--atol", "inf"],
            "Invalid value for '--atol': 'inf' is not a finite number",
        ),
        (
            ["gradcheck", "y = x * x", "x=1", "--eps", "inf"],
            "Invalid value for '--eps': 'inf' is not a finite number",
        ),
        (
            ["gradcheck", "y = x * x", "x=1", "--eps", "nan"],
            "Invalid value for '--eps': 'nan' is not a finite number",
        ),
        (
            ["gradcheck", "y = x * x", "--points", "2", "--range=nan,1"],
            "Invalid value for '--range': LO,HI must be two finite numbers with LO < HI",
        ),
        (
            ["gradcheck", "y = x * x", "--points", "2", "--range=-1e308,1e308"],
            "Invalid value for '--range': HI - LO must be a finite number too",
        ),
    ],
)
def test_non_finite_tolerances_steps_and_ranges_exit_2(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 2, result.stdout
    assert message in result.stderr


def test_a_step_outside_the_float_range_is_skipped_not_an_error(cli):
    result = cli("gradcheck", "y = 2 * x", "x=1e300", "--eps", "1e10")
    assert result.exit_code == 0, result.stderr
    assert "skip (undefined)" in result.stdout


def test_check_never_says_the_shapes_differ_when_they_do_not(cli):
    result = cli("check", "y = x", "x=1e308", "--expect", "y=-1e308")
    assert result.exit_code == 1
    assert "shapes differ" not in result.stdout
    assert "FAIL  y = 1e308 (expected -1e308, difference inf)" in result.stdout


def test_an_expected_array_with_a_huge_whole_number_is_a_usage_error(cli):
    result = cli("check", "y = x", "x=1", "--expect", "y=[1" + "0" * 400 + "]")
    assert result.exit_code == 2
    assert (
        "the expected value of 'y' holds an integer of 401 digits, too large for a float64"
        in result.stderr
    )


# --- 5. JSON output is linear in the number of arrays --------------------------------------------
def test_json_with_thousands_of_arrays_is_fast_and_exact():
    report = {
        "checks": [
            {"point": k, "bindings": {"W": np.full((4, 5), 0.5 * k)}, "shape": [4, 5]}
            for k in range(5000)
        ]
    }
    start = time.perf_counter()
    text = to_json_text(report)
    assert time.perf_counter() - start < 2.0  # it took 14 s when each array was a text.replace
    assert json.loads(text)["checks"][4999]["bindings"]["W"] == [[2499.5] * 5] * 4
    assert '      "bindings": {\n        "W": [[0.5, 0.5, 0.5, 0.5, 0.5], [0.5,' in text
    assert '      "shape": [4, 5]\n' in text


def test_json_strings_are_never_taken_for_arrays_or_shapes():
    text = to_json_text({"name": "\x000", "note": "a [ 1 ] b", "W": np.eye(2), "n": [1, 2]})
    assert json.loads(text) == {
        "name": "\x000",
        "note": "a [ 1 ] b",
        "W": [[1.0, 0.0], [0.0, 1.0]],
        "n": [1, 2],
    }


# --- 6. gradcheck with many points: a bounded table, the worst rows first ------------------------
def test_gradcheck_table_shows_the_worst_rows_first_and_all_on_request(cli):
    args = ("gradcheck", "y = exp(10 * x)", "--points", "100", "--eps", "0.01")
    result = cli(*args)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    rows = [ln for ln in lines if " x " in ln]
    assert len(rows) == 20
    errors = [float(r.split()[-2]) for r in rows]
    assert all("MISMATCH" in r for r in rows) and errors == sorted(errors, reverse=True)
    assert lines[-2] == (
        "20 of 100 rows: the mismatches first, then the largest errors (--all-rows prints them all)"
    )
    passed, failed, skipped = (int(w) for w in lines[-1].split()[::2])
    assert passed + failed + skipped == 100 and failed > 20

    full = cli(*args, "--all-rows").stdout.splitlines()
    assert len([ln for ln in full if " x " in ln]) == 100
    assert full[-1] == lines[-1]
    report = json.loads(cli(*args, "--format", "json").stdout)
    assert len(report["checks"]) == 100 and report["failed"] == failed


def test_case_names_with_control_characters_print_as_escapes(cli, tmp_path):
    path = tmp_path / "checks.toml"
    path.write_text('[[case]]\nname = "a\\u001b[2Jb"\nprogram = "y = 1"\nexpect = { y = 1 }\n')
    result = cli("check", "--spec", str(path))
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout and "a\\x1b[2Jb:" in result.stdout


def test_json_output_has_no_infinity_or_nan(cli):
    import json

    result = cli("explain", "y = 0 * x ^ -1", "x=1e-300", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout
    json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


@pytest.mark.parametrize(
    "line, shown",
    [
        ("bindings = { x = false }", "('x' is false)"),
        ("bindings = { x = 'say \"hi\"' }", """('x' is "say \\"hi\\"")"""),
        ("bindings = { x = 1979-05-27 }", "('x' is 1979-05-27)"),
        ("expect = { y = { z = true } }", "('y' is { z = true })"),
    ],
)
def test_a_checks_files_values_are_shown_in_toml_spelling(cli, tmp_path, line, shown):
    spec = tmp_path / "checks.toml"
    expect = "" if line.startswith("expect") else "\nexpect = { y = 1 }"
    spec.write_text(f'[[case]]\nprogram = "y = x"\n{line}{expect}\n')
    result = cli("check", "--spec", str(spec))
    assert result.exit_code == 2 and shown in result.stderr, result.stderr
    assert "True" not in result.stderr and "False" not in result.stderr
