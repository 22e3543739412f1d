"""`cgraph check`, `cgraph gradcheck` and `cgraph explain`: results, reports, exit codes."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cgraph_cli import parse
from cgraph_cli.app.gradcheck import gradcheck, random_points
from cgraph_cli.render.notation import adjoint

ROOT = Path(__file__).resolve().parent.parent
SEED = str(ROOT / "samples" / "seed.cg")
SPEC = str(ROOT / "samples" / "checks.toml")


# --- check ---------------------------------------------------------------------------------------
def test_check_passes_exit_0(cli):
    result = cli(
        "check", SEED, "--expect", "g=-12", "--expect-grad", "x=-3", "--expect-grad", "z=4"
    )
    assert result.exit_code == 0
    assert result.stdout == (
        "ok    g = -12 (expected -12)\n"
        "ok    ∂g/∂x = -3 (expected -3)\n"
        "ok    ∂g/∂z = 4 (expected 4)\n"
        "3 passed, 0 failed\n"
    )


def test_check_fails_exit_1_with_the_difference(cli):
    result = cli("check", SEED, "--expect", "g=-11.5", "--expect-grad", "y=-3")
    assert result.exit_code == 1
    assert "FAIL  g = -12 (expected -11.5, difference 0.5)" in result.stdout
    assert result.stdout.endswith("1 passed, 1 failed\n")


def test_check_tolerances(cli):
    assert cli("check", "y = x / 3", "x=1", "--expect", "y=0.3333").exit_code == 1
    assert cli("check", "y = x / 3", "x=1", "--expect", "y=0.3333", "--rtol", "1e-3").exit_code == 0
    assert cli("check", "y = x - x", "x=1", "--expect", "y=1e-9", "--atol", "1e-8").exit_code == 0


def test_check_json_and_junit(cli, tmp_path):
    junit = tmp_path / "report.xml"
    result = cli(
        "check",
        SEED,
        "--expect",
        "g=-12",
        "--expect-grad",
        "z=5",
        "--format",
        "json",
        "--junit",
        str(junit),
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert (report["passed"], report["failed"]) == (1, 1)
    assert report["checks"][1] == {
        "case": "",
        "kind": "gradient",
        "name": "z",
        "output": "g",
        "expected": 5.0,
        "actual": 4.0,
        "difference": 1.0,
        "ok": False,
    }
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    failure = suite.findall("testcase")[1].find("failure")
    assert failure.get("message") == "∂g/∂z = 4 (expected 5, difference 1)"


def test_check_spec_file(cli):
    result = cli("check", "--spec", SPEC)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "worked example:\n  ok    p = 4 (expected 4)" in result.stdout
    assert (
        "tensors: the softmax cross-entropy sample:\n  ok    p = [0.6874665437783251,"
        in result.stdout
    )
    assert (
        "logistic: gradients against finite differences at random points:\n  ok    ∂loss/∂w at point 1 = "
        in result.stdout
    )
    assert result.stdout.endswith("36 passed, 0 failed\n")  # 16 expectations, 5 points x 4 inputs


def write(tmp_path, text: str) -> str:
    path = tmp_path / "checks.toml"
    path.write_text(text)
    (tmp_path / "prog.cg").write_text("input x = 2\ny = x * x\n")
    return str(path)


@pytest.mark.parametrize(
    "text, message, line",
    [
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = 4 }\nexpct_grad = { x = 4 }\n',
            "unknown key 'expct_grad' in case 1",
            4,
        ),
        (
            '[[case]]\nfile = "prog.cg"\nexpect = { y = "four" }\n',
            "'expect' in case 1 must be a table of name = number",
            3,
        ),
        ("[[case]]\nexpect = { y = 4 }\n", "case 1 needs exactly one of 'file' and 'program'", 1),
        (
            'rtol = -1\n[[case]]\nfile = "prog.cg"\nexpect = { y = 4 }\n',
            "'rtol' must be a finite, non-negative number, got -1",
            1,
        ),
        ('[[case]]\nfile = "prog.cg"\nexpect = { y = 4 \n', "is not valid TOML", 3),
        ('[[case]]\nfile = "prog.cg"\n', "case 1 expects nothing", 1),
    ],
)
def test_spec_mistakes_exit_2_with_file_line_and_key(cli, tmp_path, text, message, line):
    path = write(tmp_path, text)
    result = cli("check", "--spec", path)
    assert result.exit_code == 2, result.stdout
    assert message in result.stderr
    assert result.stderr.startswith(f"{path}:{line}:")
    assert "Traceback" not in result.stderr


def test_spec_cases_that_cannot_run_are_errors_of_their_case(cli, tmp_path):
    for case, code in (
        ('program = "y = sinn(x)"', "ParseError"),
        ('program = "y = log(x)"\nbindings = { x = -1 }', "DomainError"),
        ('file = "missing.cg"', "UsageError"),
    ):
        path = write(tmp_path, f'[[case]]\nname = "{code}"\n{case}\nexpect = {{ y = 1 }}\n')
        result = cli("check", "--spec", path)
        assert result.exit_code == 1, result.stderr
        assert result.stdout.startswith(f"{code}:\n  ERROR  ")
        assert result.stdout.endswith("0 passed, 0 failed, 1 case could not run\n")


def test_check_usage_errors(cli):
    assert "nothing to check" in cli("check", SEED).stderr
    assert cli("check", SEED).exit_code == 2
    assert cli("check", SEED, "--expect", "g").exit_code == 2
    assert cli("check", SEED, "--expect", "g=abc").exit_code == 2
    assert cli("check", SEED, "--spec", SPEC).exit_code == 2
    result = cli("check", SEED, "--expect", "gg=1")
    assert result.exit_code == 2 and "did you mean 'g'?" in result.stderr


# --- gradcheck cases in a checks file -------------------------------------------------------------
GRADCHECK_SPEC = """\
[[case]]
name = "at its bindings"
program = "y = x * relu(x)"
bindings = { x = 0 }
gradcheck = true

[[case]]
name = "random"
program = "y = sin(a) * b"
bindings = { b = 3 }
gradcheck = { points = 4, range = [-1, 1], seed = 7 }

[[case]]
name = "coarse"
program = "y = exp(10 * x)"
bindings = { x = 1 }
expect = { y = 22026.465794806718 }
gradcheck = { eps = 1e-2 }
"""


def test_gradcheck_cases_are_results_in_the_text_report(cli, tmp_path):
    result = cli("check", "--spec", write(tmp_path, GRADCHECK_SPEC))
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "at its bindings:",
        "  skip  ∂y/∂x at point 1: the steps cross a kink (relu, abs at 0; max, min at a tie)",
        "random:",
    ]
    random = lines[3:11]
    assert [line.split(" = ")[0] for line in random] == [
        f"  ok    ∂y/∂{name} at point {k}" for k in range(1, 5) for name in "ab"
    ]
    # with b bound, every point's ∂y/∂b is sin(a) at a drawn from [-1, 1]
    slopes = [float(line.split(" = ")[1].split()[0]) for line in random[1::2]]
    assert all(abs(s) <= math.sin(1) for s in slopes) and len(set(slopes)) == 4
    assert lines[11:13] == [
        "coarse:",
        "  ok    y = 22026.465794806718 (expected 22026.465794806718)",
    ]
    assert lines[13].startswith("  FAIL  ∂y/∂x at point 1 = 220264.65794806718 (numeric 220631.9")
    assert "> tolerance 2.2063" in lines[13]
    assert lines[-1] == "9 passed, 1 failed, 1 skipped"


def test_gradcheck_cases_in_json_and_junit(cli, tmp_path):
    from jsonschema import Draft202012Validator

    from cgraph_cli import schemas

    junit = tmp_path / "report.xml"
    result = cli("check", "--spec", write(tmp_path, GRADCHECK_SPEC), "--format", "json",
                 "--junit", str(junit))  # fmt: skip
    report = json.loads(result.stdout)
    assert list(Draft202012Validator(schemas.load("check")).iter_errors(report)) == []
    assert (report["passed"], report["failed"], report["skipped"]) == (9, 1, 1)
    kink, *_ = report["checks"]
    assert (kink["kind"], kink["name"], kink["status"], kink["ok"]) == (
        "gradcheck",
        "x",
        "kink",
        True,
    )
    assert kink["bindings"] == {"x": 0.0} and kink["analytic"] == 0.0
    failed = report["checks"][-1]
    assert failed["status"] == "mismatch" and not failed["ok"]
    assert failed["analytic"] == pytest.approx(10 * math.exp(10))
    assert (
        failed["difference"] > failed["tolerance"] == pytest.approx(1e-7 + 1e-5 * failed["numeric"])
    )
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("11", "1", "1")
    cases = suite.findall("testcase")
    assert cases[0].get("name") == "∂y/∂x at point 1" and cases[0].find("skipped") is not None
    message = cases[-1].find("failure").get("message")
    assert message.startswith("∂y/∂x at point 1: analytic 220264.65794806718, numeric 220631.9")
    assert "> tolerance 2.2063" in message and "(atol 1e-7 + rtol 1e-5 x the larger)" in message


def test_the_librarys_gradcheck_gives_the_checks_files_results(tmp_path):
    from cgraph_cli import check

    spec = check(spec=write(tmp_path, GRADCHECK_SPEC)).to_dict()["checks"]
    runs = [
        check("y = x * relu(x)", {"x": 0}, gradcheck=True),
        check("y = sin(a) * b", {"b": 3}, gradcheck={"points": 4, "range": (-1, 1), "seed": 7}),
        check(
            "y = exp(10 * x)", {"x": 1}, expect={"y": 22026.465794806718}, gradcheck={"eps": 1e-2}
        ),  # fmt: skip
    ]
    library = [{**c, "case": ""} for r in runs for c in r.to_dict()["checks"]]
    assert library == [{**c, "case": ""} for c in spec]
    assert [r.ok for r in runs] == [True, True, False]
    assert "∂y/∂x at point 1" in repr(runs[2]) and "1 failed" in repr(runs[2])


@pytest.mark.parametrize(
    "given, message",
    [
        ({"points": -1}, "gradcheck: 'points' must be a whole number from 0 to 100,000"),
        ({"range": (1, -1)}, "gradcheck: 'range' must be two numbers LOW < HIGH"),
        ({"pionts": 3}, "gradcheck: unknown key 'pionts'"),
        ("yes", "gradcheck: must be true, false or a table"),
    ],
)
def test_the_librarys_gradcheck_mistakes_are_usage_errors(given, message):
    from cgraph_cli import check
    from cgraph_cli.core.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(message)):
        check("y = x^2", {"x": 1}, gradcheck=given)
    with pytest.raises(UsageError, match="nothing to check"):
        check("y = x^2", {"x": 1}, gradcheck=False)


def test_a_gradcheck_case_undefined_at_its_bindings_cannot_run(cli, tmp_path):
    spec = '[[case]]\nprogram = "y = log(x)"\nbindings = { x = -1 }\ngradcheck = true\n'
    result = cli("check", "--spec", write(tmp_path, spec))
    assert result.exit_code == 1
    assert result.stdout.startswith("case 1:\n  ERROR  ")
    # at random points, an undefined one is skipped instead
    spec = '[[case]]\nprogram = "y = log(x)"\n[case.gradcheck]\npoints = 6\n'
    result = cli("check", "--spec", write(tmp_path, spec))
    assert result.exit_code == 0, result.stdout
    passed, skipped = (int(w) for w in result.stdout.splitlines()[-1].split()[::2][::2])
    assert passed + skipped == 6 and passed > 0 and skipped > 0


@pytest.mark.parametrize(
    "table, message, place",
    [
        ("gradcheck = { points = 20, rnage = [-1, 1] }", "unknown key 'rnage'", (3, 28)),
        ("gradcheck = { range = [1] }", "'range' must be two numbers LOW < HIGH", (3, 15)),
        ("gradcheck = { range = [1, -1] }", "'range' must be two numbers LOW < HIGH", (3, 15)),
        ("gradcheck = { range = [0, 'a'] }", "'range' must be two numbers", (3, 15)),
        # the user's values shown as TOML writes them, not as Python does
        ("gradcheck = { range = [true, 'b'] }", 'as [-1, 1], got [true, "b"]', (3, 15)),
        ("gradcheck = { points = true }", "whole number from 0 to 100,000, got true", (3, 15)),
        ("gradcheck = { seed = [1, false] }", "0 or more, got [1, false]", (3, 15)),
        ("gradcheck = { eps = 'small' }", 'positive number, got "small"', (3, 15)),
        ("gradcheck = { rtol = { a = 1 } }", "non-negative number, got { a = 1 }", (3, 15)),
        ("gradcheck = { points = 0.5 }", "'points' must be a whole number from 0", (3, 15)),
        ("gradcheck = { points = 100001 }", "from 0 to 100,000, got 100001", (3, 15)),
        ("gradcheck = { eps = 0 }", "'eps' must be a finite, positive number", (3, 15)),
        ("gradcheck = 3", "must be true, false or a table", (3, 1)),
        ("[case.gradcheck]\npoints = 5\nrange = 2", "'range' must be two numbers", (5, 1)),
    ],
)
def test_gradcheck_table_mistakes_exit_2_at_their_place(cli, tmp_path, table, message, place):
    path = write(tmp_path, f'[[case]]\nprogram = "y = x"\n{table}\n')
    result = cli("check", "--spec", path)
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith(f"{path}:{place[0]}:{place[1]}: error: 'gradcheck' in case 1")
    assert message in result.stderr and "Traceback" not in result.stderr
    if "rnage" in table:
        assert "did you mean 'range'?" in result.stderr


# --- gradcheck -----------------------------------------------------------------------------------
def test_gradcheck_library_ok_kink_undefined_mismatch():
    assert [c.status for c in gradcheck(parse("y = sin(x) * x"), {"x": 0.3})] == ["ok"]
    assert [c.status for c in gradcheck(parse("y = max(x, z)"), {"x": 1, "z": 1})] == [
        "kink",
        "kink",
    ]
    assert [c.status for c in gradcheck(parse("y = abs(x)"), {"x": 1e-9})] == ["kink"]
    assert [c.status for c in gradcheck(parse("y = sqrt(x)"), {"x": 0})] == ["undefined"]
    # a step that leaves the domain: log at 1e-7 shifted by 1e-6
    assert [c.status for c in gradcheck(parse("y = log(x)"), {"x": 1e-7})] == ["undefined"]
    # too coarse a step on a curved function: a real disagreement
    assert [c.status for c in gradcheck(parse("y = exp(10 * x)"), {"x": 1}, eps=1e-2)] == [
        "mismatch"
    ]


def test_random_points_are_reproducible_and_in_range():
    graph = parse("y = a * b + c")
    points = random_points(graph, 50, seed=7, fixed={"c": 1.0}, low=-1, high=3)
    assert points == random_points(graph, 50, seed=7, fixed={"c": 1.0}, low=-1, high=3)
    assert all(-1 <= p["a"] <= 3 and -1 <= p["b"] <= 3 and p["c"] == 1.0 for p in points)


def test_gradcheck_command(cli):
    result = cli("gradcheck", str(ROOT / "samples" / "neuron.cg"))
    assert result.exit_code == 0
    assert result.stdout.endswith("5 passed, 0 failed, 0 skipped\n")
    result = cli("gradcheck", "y = relu(x) + log(x)", "--points", "20", "--seed", "2")
    assert result.exit_code == 0
    passed, failed, skipped = (int(w) for w in result.stdout.splitlines()[-1].split()[::2])
    assert passed + skipped == 20 and failed == 0 and skipped > 0  # x < 0: log undefined
    assert "skip (undefined)" in result.stdout


def test_gradcheck_mismatch_exit_1_and_json(cli):
    result = cli("gradcheck", "y = exp(10 * x)", "x=1", "--eps", "0.01", "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["failed"] == 1 and report["checks"][0]["status"] == "mismatch"
    assert report["checks"][0]["analytic"] == pytest.approx(10 * 2.718281828459045**10)


def test_gradcheck_errors(cli):
    assert cli("gradcheck", "y = x * z", "x=1").exit_code == 4  # z missing
    assert cli("gradcheck", "y = x * z", "--points", "3", "w=1").exit_code == 4
    assert cli("gradcheck", "y = x", "--points", "3", "--range", "2,1").exit_code == 2
    assert cli("gradcheck", "y = (x").exit_code == 3


# --- explain -------------------------------------------------------------------------------------
WORKED = """\
Forward pass
  1. p = x + y = 1 + 3 = 4
  2. g = p * z = 4 * (-3) = -12
Backward pass
  1. Start at the output: ḡ = 1   (a bar: the gradient over every path; ∂t/∂x: one op's local partial)
  2. Through *: ∂g/∂p = z = -3, ∂g/∂z = p = 4
  3. Through +: ∂p/∂x = 1, ∂p/∂y = 1
  4. Chain rule: x̄ = p̄ · ∂p/∂x = (-3) · 1 = -3
                 ȳ = p̄ · ∂p/∂y = (-3) · 1 = -3
Gradients: x̄ = -3, ȳ = -3, z̄ = 4
"""


def test_explain_the_worked_example(cli):
    result = cli("explain", SEED)
    assert result.exit_code == 0
    assert result.stdout == WORKED


def test_explain_names_unnamed_results_as_diagrams_do(cli):
    result = cli("explain", "g = (x + y) * z", "x=1", "y=3", "z=-3")
    assert "1. t1 = x + y = 1 + 3 = 4" in result.stdout
    dot = cli("dot", "g = (x + y) * z", "x=1", "y=3", "z=-3").stdout
    assert "t1</FONT>" in dot


def test_explain_fan_out_sums_the_paths(cli):
    result = cli("explain", str(ROOT / "samples" / "fanout.cg"))
    x, t1, t2, y = (adjoint(n) for n in ("x", "t1", "t2", "y"))
    assert (  # x * x: the two operands of one multiplication, each by its place
        f"{x} = {t1} · ∂t1/∂(operand 1) + {t1} · ∂t1/∂(operand 2) + {t2} · ∂t2/∂x + {y} · ∂y/∂x"
        " = 1 · 3 + 1 · 3 + 1 · (-0.99) + 1 · 1 = 6.01"
    ) in result.stdout
    assert "Through *: ∂t1/∂(operand 1) = x = 3, ∂t1/∂(operand 2) = x = 3" in result.stdout
    lines = [ln.split("=")[0].strip().split()[-1] for ln in result.stdout.splitlines() if "=" in ln]
    # every chain-rule line comes after the lines of the nodes that read it
    assert lines.index(x) > lines.index(t1)


def test_explain_markdown_latex_json(cli):
    md = cli("explain", SEED, "--format", "markdown").stdout
    assert md.startswith("## Forward pass\n\n1. `p = x + y = 1 + 3 = 4`")
    tex = cli("explain", SEED, "--format", "markdown", "--math", "latex").stdout
    assert r"$\overline{x} = \overline{p} \, \frac{\partial p}{\partial x}" in tex
    assert r"$g = p \cdot z = 4 \cdot (-3) = -12$" in tex
    steps = json.loads(cli("explain", SEED, "--format", "json").stdout)
    assert steps["gradients"] == {"x": -3.0, "y": -3.0, "z": 4.0}
    assert steps["backward"]["sums"][0] == {
        "node": "x",
        "terms": [{"via": "p", "upstream": -3.0, "local": 1.0, "partial": "∂p/∂x"}],
        "gradient": -3.0,
    }


def test_explain_frames(cli, tmp_path):
    result = cli("explain", SEED, "--frames", str(tmp_path / "frames"), "--frames-format", "svg")
    assert result.exit_code == 0
    frames = sorted((tmp_path / "frames").glob("frame-*"))
    assert [f.name for f in frames] == [f"frame-{k}.svg" for k in range(1, 6)]
    first, last = frames[0].read_text(), frames[-1].read_text()
    assert first.count("> ? <") == 4 and last.count("> ? <") == 0  # one more gradient each frame
    assert "result" not in result.stderr and "wrote 5 frames" in result.stderr


def test_gradcheck_junit_one_case_per_input_and_point(cli, tmp_path):
    junit = tmp_path / "gradcheck.xml"
    result = cli("gradcheck", "sample:neuron", "--points", "3", "--junit", str(junit))
    assert result.exit_code == 0, result.stderr
    assert "passed, 0 failed" in result.stdout  # the text report as without --junit
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert suite.get("name") == "neuron" and suite.get("failures") == "0"
    assert len(cases) == int(suite.get("tests")) == 3 * 5  # five inputs at three points
    assert cases[0].get("name") == "∂o/∂x1 at point 1"
    assert cases[-1].get("name").endswith(" at point 3")


def test_gradcheck_junit_failures_give_both_numbers_and_the_tolerance(cli):
    result = cli("gradcheck", "y = exp(x)", "x=1", "--rtol", "0", "--atol", "0", "--junit", "-")
    assert result.exit_code == 1
    failure = ET.fromstring(result.stdout).find("testsuite/testcase/failure")
    message = failure.get("message")
    assert message.startswith(f"∂y/∂x at point 1: analytic {math.e!r}, numeric ")
    assert "> tolerance 0 (atol 0 + rtol 0 x the larger)" in message
    assert "0 passed, 1 failed, 0 skipped" in result.stderr  # stdout holds the XML alone


def test_gradcheck_junit_skips_kinks_and_refuses_two_reports_on_stdout(cli):
    result = cli("gradcheck", "y = x * relu(x)", "x=0", "--junit", "-")
    assert result.exit_code == 0
    case = ET.fromstring(result.stdout).find("testsuite/testcase")
    assert case.find("skipped").get("message").startswith("the steps cross a kink")
    refused = cli("gradcheck", "sample:neuron", "--format", "json", "--junit", "-")
    assert refused.exit_code == 2
    assert "would both write to standard output" in refused.stderr
