"""Every command, given random bytes, random tokens and random bindings, ends with a documented
exit code and a message: never an internal error (exit 70), never a traceback, never a control
character on stderr that a terminal would act on."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs
from test_scanner import token_text

from cgraph_cli.cli import main

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
COMMANDS = sorted(main.commands)
# Arguments that make each command do its work without writing files.
EXTRA = {"render": ["--format", "dot", "-o", "-"], "check": ["--expect", "y=1"]}
DOCUMENTED = {0, 1, 2, 3, 4}
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")

names = st.sampled_from(["x", "y", "z", "W", "b", "t", "input", "ｘ", "x\x1b", ""])
numbers = st.sampled_from(
    [
        "1",
        "-3",
        "0",
        "1e308",
        "1e400",
        "-0",
        "nan",
        "inf",
        "0x10",
        "1_000",
        " 2 ",
        "",
        "١",
        "9" * 500,
        "[1, 2]",
        "[[1, 2], [3, 4]]",
        "[[1, 2], [3]]",
        "[]",
        "[[]]",
        "[true]",
        '["a"]',
        "[" * 100 + "1" + "]" * 100,
        "[1e308, 1e308]",
        "{}",
        "null",
        "\x1b[2J",
        "@",
        "@missing.npy",
    ]
)
bindings = st.lists(st.tuples(names, numbers).map(lambda t: f"{t[0]}={t[1]}"), max_size=4)
texts = st.one_of(
    programs(),
    token_text(),
    st.text(max_size=60),
    st.binary(max_size=60).map(lambda b: b.decode("utf-8", "replace")),
    st.sampled_from(
        [
            "y = sum(x)",
            "y = x @ W + b",
            "y = x[1:0]",
            "y = max(x)",
            "y = log(x)",
            "y = reshape(x, [-1, 1]) + x",
            "y = softmax(x)",
            "y = x / 0",
        ]
    ),
)


def _ok(result) -> None:
    assert result.exit_code in DOCUMENTED, (result.exit_code, result.stderr[-800:])
    assert "Traceback" not in result.stderr + result.stdout
    assert not HIDDEN.search(result.stderr), repr(result.stderr)


@FUZZ
@given(st.sampled_from(COMMANDS), texts, bindings)
def test_text_programs(cli, command, text, binds):
    if "\x00" in text:  # a NUL cannot be passed in a command-line argument
        text = text.replace("\x00", "")
    _ok(cli(command, "-e", text, *binds, *EXTRA.get(command, [])))


@FUZZ
@given(st.sampled_from(COMMANDS), st.binary(max_size=200), bindings)
def test_bytes_on_standard_input(cli, command, data, binds):
    _ok(cli(command, "-", *binds, *EXTRA.get(command, []), input=data))
