"""cgraph's scanner and LALR driver against Lark's own lexer and parser (tests/lark_reference.py),
on the whole language: programs built from the grammar's tokens and from the text between
them (spaces, tabs, comments anywhere, with and without a final newline, CRLF and lone CR line
endings, line continuations, blank lines, Unicode letters and look-alikes). Both must build the
same graph, or fail at the same place."""

from __future__ import annotations

import re
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lark_reference import lark_outcome, our_outcome
from strategies import programs

from cgraph_cli import ParseError, grad, parse
from cgraph_cli.core.errors import Source
from cgraph_cli.parse import driver
from cgraph_cli.parse.lexer import scan

DIFFERENTIAL = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Every terminal of the grammar, in several spellings, and text that is not one.
TOKENS = [
    "x",
    "y",
    "w1",
    "_t",
    "α",
    "βeta",
    "ｘ",
    "x²",
    "х",  # ASCII, Greek, fullwidth, superscript, Cyrillic
    "input",
    "inputs",
    "sin",
    "max",
    "sum",
    "reshape",
    "mean",
    "3",
    "2.5",
    ".5",
    "7.",
    "1e-3",
    "6.02E23",
    "1e",
    "1.2.3",
    "１２",
    "٣",
    "1" * 30,
    "+",
    "-",
    "*",
    "/",
    "^",
    "**",
    "@",
    "=",
    "+=",
    "-=",
    "*=",
    "/=",
    ",",
    ":",
    ";",
    "(",
    ")",
    "[",
    "]",
    "−",
    "×",
    "÷",
    "·",
    "√",
    "$",
    "?",
    "'",
    '"',
    "!",
    "==",
    "\\",
]
BETWEEN = [
    "",
    " ",
    "  ",
    "\t",
    "\f",
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    "\r\n\r\n",
    " \n  ",
    "\n\t",
    "# c\n",
    " # note\n",
    "#\r\n",
    "# x = 1 + 2",
    "#",
    "\\\n",
    " \\\r\n",
    "\\\r",
    " \\ \n",
    "\u00a0",
    "\u200b",
    "\u3000",
    "\x1b",
    "\x00",
    "\ufeff",
]
ENDINGS = ["", "\n", "\r\n", "\r", "# end", "  # end", "\n# end", "\\", ";", " \\\n"]


@st.composite
def token_text(draw) -> str:
    """Tokens with random text between them."""
    parts = []
    for _ in range(draw(st.integers(0, 14))):
        parts.append(draw(st.sampled_from(BETWEEN)))
        parts.append(draw(st.sampled_from(TOKENS)))
    return "".join(parts) + draw(st.sampled_from(ENDINGS))


_SPLIT = re.compile(r"\s+|(?<=[^\w.])|(?=[^\w.])")


@st.composite
def respaced_programs(draw) -> str:
    """A valid program with the text between its tokens replaced at random: mostly still
    valid, sometimes not."""
    words = [w for w in _SPLIT.split(draw(programs())) if w]
    out = []
    for w in words:
        out.append(w)
        gap = draw(st.sampled_from(BETWEEN[:22] + [" ", " ", " ", " "]))
        out.append(
            gap if gap.strip() or w[-1:] not in "abcdefghijklmnopqrstuvwxyz0123456789_" else " "
        )
    return "".join(out) + draw(st.sampled_from(ENDINGS))


def _agree(text: str) -> None:
    theirs = lark_outcome(text)
    if theirs == ("loop",):  # Lark reached a loop: the rest is the driver's (test_control.py)
        our_outcome(text)  # no crash: a graph or an error with its place
        return
    assert our_outcome(text) == theirs, repr(text)


@DIFFERENTIAL
@given(token_text())
@example("input x = 2\ny = x * x\n# gradient w.r.t. x")  # the comment read as code (issue 9)
@example("g = x # note")
@example("y = x + 1 # c\r# d")
@example("y = (x +\r\n 1)\r")
@example("y = x \\")
@example(".")  # the quick scan's last alternative took it for a number (float('.'): exit 70)
@example("x = . + 1")
@example("x = 1 $ 2")
@example("y = x * \u2118")  # ℘: an identifier to Python, but not \\w to re (nor to Lark)
@example("\u212e = 1")
def test_token_soup_parses_alike(text):
    _agree(text)


@DIFFERENTIAL
@given(respaced_programs())
def test_respaced_programs_parse_alike(text):
    _agree(text)


@DIFFERENTIAL
@given(token_text() | respaced_programs(), st.integers(0, 3))
@example(";\nx", 0)  # a window that starts past separators only
@example("a = 1;; b = a\n\n c = b $", 1)
def test_a_narrow_window_of_tokens_parses_alike(text, extra):
    """The driver reads the tokens a window at a time (a few thousand beyond what a statement
    needs); with 0 to 3 beyond, the window moves at almost every statement, and the graphs and
    the errors are the same."""
    with patch.object(driver, "_WINDOW", extra):
        _agree(text)


def test_a_long_program_parses_alike_across_windows():
    """Statements on both sides of a refill of the window, separated every way, and an error
    far past the first window, where Lark puts it."""
    lines = [f"v{k} = v{k - 1} * (a + {k}) ; w{k} = -v{k}" for k in range(1, 700)]
    text = "v0 = x\n" + "\n\n".join(lines) + "\n"
    _agree(text)
    _agree(text + "y = w699 + ")
    _agree(text.replace("v350 = ", "v350 = * "))


@pytest.mark.parametrize("extra", [0, 5, 4096])
@pytest.mark.parametrize(
    "end",
    [
        "",
        "v = v * a +",  # a syntax error after the run
        "v = v * a + b $",  # the scanner's error in a statement of the run's shape
        "v = v * a + b; v = v * a + b $",
        "v = v * a + \uff42 $",  # the scanner's error first: Lark reads no further
    ],
)
def test_a_long_run_of_one_shape_parses_alike(extra, end):
    """Statements of one shape one after another go to their plan's code in one call, as
    many as the window holds (with 0, 5 and 4,096 tokens beyond what a statement needs): the
    same graph, names and places, and the error where Lark puts it, at the end of the run or
    in it (a name read before it is assigned is an input; a look-alike letter is an error)."""
    run = "v = v * a + b\n" * 60
    texts = [
        "v = x\n" + run + end,
        "v = x\n" + run + "v = v * \uff41 + b\n" + run + end,  # a full-width a: no name
        "v = x;" + run.replace("\n", ";") + end,
        "v = x\n" + run.replace("b\n", "c0\n", 1) + run.replace(" b", " v") + end,
    ]
    with patch.object(driver, "_WINDOW", extra):
        for text in texts:
            _agree(text)


SAMPLE_DIR = Path(__file__).resolve().parent.parent / "samples"
TENSOR_PROGRAMS = [
    (SAMPLE_DIR / f"{name}.cg").read_text()
    for name in ("logistic_regression", "softmax_cross_entropy")
] + [
    # the mlp sample with its functions written out (Lark stops at a function's header)
    (SAMPLE_DIR / "mlp.cg")
    .read_text()
    .split("input X", 1)[1]
    .join(["input X", ""])
    .replace("dense(X, W1, b1)", "X @ W1 + b1")
    .replace("dense(H, W2, b2)", "H @ W2 + b2")
    .replace("mse(Y, T)", "mean((Y - T) ^ 2)"),
    "y = sum((a + b)[0, 1:], -1) + reshape(x, [2, -1])[::2] @ -[1, 2]\n",
]
_MUTATIONS = st.sampled_from(
    [
        "+",
        "(",
        ")",
        ",",
        "*",
        "= ",
        "\n",
        "max(",
        "2 3",
        "^^",
        "input ",
        "[",
        "]",
        "[1, 2]",
        "@",
        ":",
        "[0]",
        "sum(",
        "#",
        "\r",
        "\\",
    ]
)


@pytest.mark.parametrize("program", TENSOR_PROGRAMS)
def test_tensor_programs_parse_alike(program):
    _agree(program)
    _agree(program.replace("\n", "\r\n"))


@DIFFERENTIAL
@given(st.sampled_from(TENSOR_PROGRAMS) | programs(), _MUTATIONS, st.integers(0, 400))
def test_broken_programs_fail_at_the_same_place(program, junk, at):
    at = min(at, len(program))
    _agree(program[:at] + junk + program[at:])


# --- what a user sees -------------------------------------------------------------------------
def test_a_final_comment_without_a_newline_is_a_comment():
    graph = parse("input x = 2\ny = x * x\n# gradient w.r.t. x")
    assert graph.output_label == "y"
    assert grad(graph).gradients == {"x": 4.0}
    assert parse("g = x # note").output_label == "g"


def test_line_endings_crlf_and_lone_cr_are_newlines():
    for nl in ("\n", "\r\n", "\r"):
        graph = parse(f"a = x{nl}# c{nl}b = a * 2{nl}")
        assert graph.output_label == "b" and list(graph.inputs) == ["x"]


@pytest.mark.parametrize(
    "text, col, hint",
    [
        ("y = x − 1", 7, "'\u2212' (U+2212 MINUS SIGN) looks like '-' but is not: type '-'"),
        (
            "y = １２ + x",
            5,
            "'１' (U+FF11 FULLWIDTH DIGIT ONE) looks like '1' but is not: type '1'",
        ),
        ("y = x\u00a0+ 1", 6, "looks like a space but is not one: type a plain space"),
        ("y = x +\u200b1", 8, "'\\u200b' (U+200B ZERO WIDTH SPACE) is invisible: delete it"),
        ("y = 2 × x", 7, "looks like '*' but is not: type '*'"),
        ("y = x\x1b[2J", 6, "a control character cannot appear in a program"),
    ],
)
def test_lookalikes_are_errors_at_their_place_with_the_ascii_meant(text, col, hint):
    with pytest.raises(ParseError) as e:
        parse(text)
    assert e.value.where() == f"<expr>:1:{col}"
    assert any(hint in h for h in e.value.hints), e.value.hints
    assert "\x1b" not in e.value.render()


@pytest.mark.parametrize(
    "text, hint",
    [
        ("ｘ = 1", "'ｘ' (U+FF58 FULLWIDTH LATIN SMALL LETTER X) looks like 'x'"),
        ("y = x² + 1", "'²' (U+00B2 SUPERSCRIPT TWO) is not a power: write x^2"),
    ],
)
def test_names_with_lookalike_letters_are_refused(text, hint):
    with pytest.raises(ParseError) as e:
        parse(text)
    assert "is not a valid name" in e.value.message
    assert any(hint in h for h in e.value.hints), e.value.hints


def test_names_in_other_scripts_are_names():
    assert list(parse("y = α * βeta + θ_0").inputs) == ["α", "βeta", "θ_0"]
    # a decomposed é (e + U+0301) is refused with a hint; the composed one is a name
    assert list(parse("y = caf\u00e9 * 2").inputs) == ["caf\u00e9"]
    with pytest.raises(ParseError) as e:
        parse("y = cafe\u0301 * 2")
    assert "write the accented letter as one character" in e.value.hints[0]


def test_subscript_digits_say_how_to_write_the_name():
    with pytest.raises(ParseError) as e:
        parse("y = θ₀ + 1")
    assert "write x0 or x_0" in e.value.hints[0]


def test_a_stray_backslash_says_what_it_is_for():
    with pytest.raises(ParseError) as e:
        parse("y = x \\ + 1")
    assert e.value.where() == "<expr>:1:7" and "continues a statement" in e.value.message


def test_long_numbers_are_shortened_in_messages():
    digits = "9" * 100_000
    with pytest.raises(ParseError) as e:
        parse(f"y = x {digits}")
    text = e.value.render()
    assert len(text) < 600 and "100,000 characters" in text


def test_every_terminal_of_the_pattern_has_a_kind_code():
    """The string of token kinds gives each terminal the scanner can produce its own
    character, and the separators their own."""
    from cgraph_cli.parse import tables
    from cgraph_cli.parse.lexer import CODES

    groups = set(re.findall(r"\(\?P<(\w+)>", tables.PATTERN)) - {"_IGNORED", "_BAD"}
    assert groups | set(tables.STRINGS.values()) | {"_IGNORED"} == set(CODES)
    assert len(set(CODES.values())) == len(CODES)
    assert CODES["_NL"] == "\n" and CODES["_SEMI"] == ";"


@pytest.mark.parametrize("before", ["", "y = 1 # a comment\n"])
def test_a_long_run_of_spaces_before_a_bad_character_is_reported_where_it_is(before):
    # Both scans once searched for a token from every space of the run (20,000 spaces took
    # seconds, quadratic in the run); the pattern's last alternative now takes the character.
    text = before + "x = 1" + " " * 20000 + "$"
    tokens, _, error = scan(Source(text))
    assert [t[0] for t in tokens][-3:] == ["NAME", "EQUAL", "NUMBER"]
    assert error is not None and error.span.start == len(text) - 1


# --- compiled plans ----------------------------------------------------------------------------
_REPEATED = [
    # a shape seen a third time runs its compiled plan, which reads names already in scope
    # and builds binary operators itself (everything else goes to the reader's callbacks)
    "v = x\n" + "v = v * a + b\n" * 4 + "w = c - v / d\n" * 3,
    "y = α * β + γ\n" * 3 + "z = y * ａ\n",  # not ASCII: the callback's; a look-alike: error
    "y = p ^ 2\ny = y ^ 2\ny = q ^ y\nz = y < q\nz = z <= y\n" * 2,
    "def f(u):\n    w = u * k + u\n    return w * w\ny = f(x) * t + f(x)\ny = f(y) * t + f(y)\n"
    "y = f(y) * t + f(y)\n",
    "h = x\nfor s in range(3):\n    h = h * w + h\n    h = h * w + h\ny = h * w + h\n",
    "y = x * 2\ny = y * 2\ny * 2\ny = y * 2\n",  # an assignment after a bare expression
    "def f(u):\n    return u\ny = x * 2\nz = y * 2\nf = z * 2\n",  # a function's name
    "y = x * 2\ny = y * 2\nz = y\nz = z\nw = z\n",  # a name relabelled
    "y = x * 2\n" + "y = y * 2\n" * 9 + "y * 2\n" + "y = y * 2\n" * 3,  # runs of one shape
    "y = 2 * x\n" * 5 + "y = β * x\n" * 5 + "y = y * 2; y = y * 2\n",
    # a call's body is read in a scope of its own: its parameter x is not the program's x
    "y = x * x\ny = y * x\ndef f(x):\n    y = x * x\n    y = y * x\n    return y\n"
    "z = f(y)\nz = f(z) * z\n",
    # a conditional's callback starts the static structure, which records every name read
    # after it, in its own statement and in the plans' statements after it
    "y = x * 2\ny = y * 2\n" + "y = (y if y > 1 else x) * y + y\n" * 2 + "y = y * 2\n" * 3,
]


@pytest.mark.parametrize("text", _REPEATED)
def test_compiled_plans_build_what_the_recorded_actions_build(text):
    """A plan turned into code (some callbacks inlined) against the same actions replayed
    one by one: the same graph, names, places and errors."""
    with patch.object(driver, "_MAX_COMPILED", -1):  # every plan replayed, none compiled
        driver._parser = None
        replayed = _built(text)
    driver._parser = None
    assert _built(text) == replayed
    assert _built(text) == replayed  # plans compiled by the parse before


@pytest.mark.parametrize("x", [-2.0, 3.0])
def test_compiled_plans_build_the_graph_that_runs_as_the_recorded_actions_do(x):
    """The graph that runs (one branch of each conditional, decided at the statement's
    assignment): a conditional's callback leaves the decision pending, and the plan's inlined
    assignment then leaves it to the reader's callback, as replayed actions do."""
    from cgraph_cli.run.control import run_graph

    text = "y = x * 2\ny = y * 2\n" + "y = (y if y > 1 else x) * y\ny = y * 2\n" * 3

    def ran() -> list[str]:
        return [str(node) for node in run_graph(parse(text), {"x": x})]

    with patch.object(driver, "_MAX_COMPILED", -1):
        driver._parser = None
        replayed = ran()
    driver._parser = None
    assert ran() == replayed
    assert ran() == replayed
    assert not any("select" in node or "where" in node for node in replayed)


def _built(text: str) -> tuple:
    try:
        g = parse(text)
    except ParseError as e:
        return "error", e.span.start, e.message
    spans = list(zip(g.starts, g.ends))
    statements = list(g.stmt_kinds), list(g.stmt_names), list(g.stmt_nodes)
    return our_outcome(text), spans, list(g.labels), dict(g.names), statements
