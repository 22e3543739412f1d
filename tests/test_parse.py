"""The language: literals, precedence, statements, inputs, and every class of syntax error."""

from __future__ import annotations

import pytest

from cgraph_cli import ParseError, evaluate, parse, validate


def value(program: str, **bindings) -> float:
    graph = parse(program)
    return evaluate(graph, {k: v for k, v in bindings.items() if k in graph.inputs}).value


@pytest.mark.parametrize(
    "literal, expected",
    [("3", 3.0), ("2.5", 2.5), (".5", 0.5), ("1e-3", 0.001), ("6.02E23", 6.02e23), ("7.", 7.0)],
)
def test_literals(literal, expected):
    assert value(f"c = {literal}") == expected


@pytest.mark.parametrize(
    "program, expected",
    [
        ("-x^2", -9.0),  # ^ binds tighter than unary minus on its left
        ("2^-1", 0.5),  # and takes a signed exponent on its right
        ("2^3^2", 512.0),  # right-associative
        ("2**3**2", 512.0),  # ** is ^
        ("(2^3)^2", 64.0),
        ("-2^2", -4.0),
        ("(-2)^2", 4.0),
        ("10 - 4 - 3", 3.0),  # left-associative
        ("64 / 4 / 2", 8.0),
        ("1 + 2 * 3", 7.0),
        ("(1 + 2) * 3", 9.0),
        ("--x", 3.0),
        ("+x", 3.0),
        ("2 * -x", -6.0),
        ("x ^ 2 * 2", 18.0),
        ("pow(x, 2) + max(1, 2) - min(1, 2)", 10.0),
    ],
)
def test_precedence_and_associativity(program, expected):
    assert value(program, x=3) == expected


def test_statements_newlines_semicolons_comments():
    program = "# header\n\n  p = x + y   # a comment\n\n\nq = p * 2; r = q + 1;\n# trailer"
    assert evaluate(program, {"x": 1, "y": 2}).named == {
        "x": 1.0,
        "y": 2.0,
        "p": 3.0,
        "q": 6.0,
        "r": 7.0,
    }


def test_crlf_and_no_final_newline():
    assert value("p = x + 1\r\nq = p * 2", x=1) == 4.0


def test_newlines_inside_parentheses_continue_the_statement():
    assert value("g = (x +\n     1) * max(x,\n 2)", x=3) == 12.0


def test_backslash_continues_a_line():
    assert value("g = x + \\\n  1", x=1) == 2.0


def test_reassignment_sees_the_newest_value():
    # micrograd's `c = c + c + 1`: later statements read the newest c
    graph = parse("c = a + b\nc = c + c + 1\nd = c * 2")
    assert evaluate(graph, {"a": 1, "b": 2}).named == {"a": 1.0, "b": 2.0, "c": 7.0, "d": 14.0}
    assert list(graph.inputs) == ["a", "b"]


def test_augmented_assignment():
    assert evaluate("c = x; c += 2; c *= 3; c -= 1; c /= 2", {"x": 1}).value == 4.0


def test_inputs_are_names_read_before_assignment():
    graph = parse("a = x * y\nb = a + x\nx = 5\nc = x + z")
    assert list(graph.inputs) == ["x", "y", "z"]
    assert evaluate(graph, {"x": 2, "y": 3, "z": 1}).value == 6.0


def test_one_node_per_input_so_gradients_add_up():
    graph = validate(parse("y = x * x"))
    assert [n.op.name for n in graph] == ["input", "mul"]
    assert graph.args[1] == (0, 0)


def test_input_declarations_give_defaults():
    graph = parse("input x = 1, y = -3.5\ninput z\ng = x + y + z")
    assert graph.defaults == {"x": 1.0, "y": -3.5}
    assert list(graph.inputs) == ["x", "y", "z"]
    assert evaluate(graph, {"z": 1}).value == -1.5


def test_bare_expression_is_the_output():
    graph = parse("p = x + 1\np * 2")
    assert graph.output_label == "p * 2"
    assert evaluate(graph, {"x": 1}).value == 4.0


def test_last_assignment_is_the_output():
    graph = parse("p = x + 1\ng = p * 2")
    assert graph.output_label == "g"


def test_unicode_names():
    assert value("σ = 2 * α", α=3) == 6.0


def test_names_that_start_with_a_keyword():
    assert value("inputs = 2 + input_x", input_x=1) == 3.0


def error(program: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(program, "prog.cg")
    err = info.value
    assert err.exit_code == 3
    return err


@pytest.mark.parametrize(
    "program, message, where, caret",
    [
        ("g = x +", "expected an expression after '+'", "prog.cg:1:8", "       ^"),
        ("g = x +* y", "expected an expression after '+', found '*'", "prog.cg:1:8", "       ^"),
        ("g = (x + y", "expected ')' to close the '(' at 1:5", "prog.cg:1:11", "          ^"),
        ("g = (x + y))", "unmatched ')'", "prog.cg:1:12", "           ^"),
        ("g = x y", "unexpected name 'y' after name 'x'", "prog.cg:1:7", "      ^"),
        ("1 = x", "only a name can be assigned to", "prog.cg:1:3", "  ^"),
        ("g = x $ y", "unexpected character '$'", "prog.cg:1:7", "      ^"),
        ("p = 1\ng = max(x,)", "expected an expression after ','", "prog.cg:2:11", "          ^"),
        ("g = 1e999", "too large for a float64", "prog.cg:1:5", "    ^~~~~"),
        ("input = 3", "'input' declares inputs", "prog.cg:1:7", "      ^"),
        (
            "x + 1\ny = 2",
            "only the last statement may be a bare expression",
            "prog.cg:1:1",
            "^~~~~",
        ),
        ("y = 2\ninput y", "already computed by the program", "prog.cg:2:7", "      ^"),
        ("input x = 1, x = 2", "declared twice", "prog.cg:1:14", "             ^"),
    ],
)
def test_syntax_errors_say_what_and_where(program, message, where, caret):
    err = error(program)
    assert message in err.message
    assert err.where() == where
    rendered = err.render()
    assert rendered.startswith(f"{where}: error: ")
    assert rendered.splitlines()[2].split("| ", 1)[1] == caret


def test_unknown_function_suggests_the_nearest():
    err = error("g = sinn(x)")
    assert err.message == "unknown function 'sinn'"
    assert "did you mean 'sin'?" in err.hints
    assert "^~~~" in err.render()


def test_wrong_argument_count():
    err = error("g = sin(x, y)")
    assert err.message == "sin takes 1 argument, got 2"
    assert err.hints == ("write it as sin(x)",)
    err = error("g = max(x, y, z)")
    assert err.message == "max takes 1 or 2 arguments, got 3"
    assert err.hints == ("write it as max(x) or max(x, y)",)
    err = error("g = sum(x, 0, 1)")
    assert err.message == "sum takes 1 argument and an optional axis, got 3"
    assert error("g = reshape(x)").message == "reshape takes 1 argument and its shape, got 1"


def test_calling_without_parentheses_hints_the_call():
    err = error("g = sin x")
    assert "sin(...)" in err.hints[0]


@pytest.mark.parametrize("program", ["", "\n\n", "# only a comment\n", " ; ;"])
def test_empty_program(program):
    assert "has no statements" in error(program).message


def test_only_declarations_compute_nothing():
    assert "computes nothing" in error("input x = 1").message


def test_error_caret_lines_up_after_tabs():
    rendered = error("g =\tx +").render().splitlines()
    assert rendered[1].endswith("g = x +")
    assert rendered[2].endswith("       ^")


# --- the tables ----------------------------------------------------------------------------------
def test_shipped_tables_equal_the_grammar_compiled_by_lark():
    """cgraph_cli/parse/tables.py is generated; it must be what `make tables` writes today."""
    from pathlib import Path

    from cgraph_cli.parse import build as grammar

    expected = grammar.module_text(grammar.build_tables())
    shipped = Path(grammar.MODULE).read_text(encoding="utf-8")
    assert shipped == expected, "grammars/cgraph.lark changed: run `make tables`"


def test_parsing_reads_no_cache_and_never_imports_lark(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys, cgraph_cli; cgraph_cli.parse('y = x # c'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'lark'))"
    )
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert (proc.returncode, proc.stdout) == (0, "[]\n"), proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_no_module_reads_a_cache_folder():
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "cgraph_cli"
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert ".cache" not in text and "XDG_CACHE_HOME" not in text, path


def test_an_array_literal_deeper_than_64_axes_is_refused_quickly():
    import time

    text = "y = " + "[" * 10_000 + "1" + "]" * 10_000
    started = time.perf_counter()
    with pytest.raises(ParseError) as e:
        parse(text)
    assert "at most 64 axes" in e.value.message
    assert time.perf_counter() - started < 5  # was 15 s (quadratic) and then exit 70
    assert parse("y = " + "[" * 64 + "1" + "]" * 64).output_label == "y"
