"""The parts of `cgraph lsp` that need no editor: the message without the extra, and what the
server computes before it speaks LSP (tests/test_lsp.py drives the server itself)."""

from __future__ import annotations

import importlib.util

import pytest

from cgraph_cli.app.lsp.analysis import Analysis
from cgraph_cli.app.lsp.positions import Lines


def test_without_the_extra_the_command_names_it_and_exits_2(cli, monkeypatch):
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pygls" else found(name, *a)
    )
    result = cli("lsp")
    assert result.exit_code == 2
    assert result.stderr.startswith("cgraph: error: cgraph lsp needs pygls\n")
    assert "help: pip install 'cgraph-cli[lsp]'" in result.stderr


@pytest.mark.parametrize("text", ["a = 1\n𝑥 = a + 1\n", "p = 1\r\nq = p\rr = é + 𝔽"])
def test_positions_count_utf16_units_and_every_line_ending(text):
    lines = Lines(text)
    inside_crlf = {k + 1 for k in range(len(text)) if text.startswith("\r\n", k)}
    for offset in sorted(set(range(len(text) + 1)) - inside_crlf):
        line, character = lines.position(offset)
        assert lines.offset(line, character) == offset
        before = text[:offset].replace("\r\n", "\n").replace("\r", "\n").split("\n")
        assert line == len(before) - 1
        assert character == len(before[-1].encode("utf-16-le")) // 2


def test_a_program_with_an_input_without_default_is_not_evaluated():
    analysis = Analysis("input x = 1\ny = x * w")
    assert analysis.graph is not None and not analysis.evaluable()
    assert analysis.evaluate().hints() == []


def test_a_tensor_output_has_values_but_no_gradients():
    values = Analysis("input x = [1, 2, 3]\ny = x * 2").evaluate()
    assert values.problems == []
    assert [text for _site, text in values.hints()] == ["= [2, 4, 6]"]


def test_formatting_writes_a_conditional_and_keeps_a_loop_as_written():
    from cgraph_cli.app.lsp.edits import formatted

    text = "input x = 1\ny = (x) if x>0 else -x\nfor k in range(2):\n    y = (y)*2\nz = (y)*2\n"
    expected = text.replace("z = (y)*2", "z = y * 2").replace("(x) if x>0", "x if x > 0")
    assert formatted(Analysis(text)) == expected


@pytest.mark.parametrize(
    "text, offset, says",
    [
        ("def f(a):\n    return a * 2\ny = f(1)", 6, "'a' is a function's parameter"),
        ("h = 0\nfor t in range(2):\n    h = h + t", 10, "'t' is a loop's counter"),
        ("y = 1 + 2", 5, "no name here to rename"),
    ],
)
def test_rename_refuses_a_parameter_a_counter_and_no_name(text, offset, says):
    from cgraph_cli.app.lsp.edits import Refused, rename_target

    with pytest.raises(Refused) as refused:
        rename_target(Analysis(text), offset)
    assert refused.value.message.startswith(says)


def test_lsp_without_a_terminal_or_pipe_says_so(cli):
    # CliRunner's streams have no file descriptor: refused with a message, exit 2, and the
    # runner's own output stream left open (it was closed as if a disk were full)
    result = cli("lsp", "-q", input=b"g = x * 2\n")
    assert result.exit_code == 2
    assert "standard input here is not a file or a pipe" in result.stderr
