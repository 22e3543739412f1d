"""`cgraph lsp` end to end: a pytest-lsp client starts the server over stdio, as an editor
would, and checks what a user sees against what the commands print."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra is not installed: pip install 'cgraph-cli[lsp]'")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (test extra)")
from conftest import make_runner  # noqa: E402
from lsprotocol import types as t  # noqa: E402  (after the skip: pygls brings it)
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from cgraph_cli import parse  # noqa: E402
from cgraph_cli.app.lsp.analysis import Analysis  # noqa: E402

SAMPLES = Path(__file__).parent.parent / "samples"
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "cgraph_cli", "lsp"]),
)
async def client(lsp_client: LanguageClient):
    # pytest-lsp's client answers no workspace/inlayHint/refresh: it asks for hints instead
    await lsp_client.initialize_session(t.InitializeParams(capabilities=t.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


_count = iter(range(10**6))


def _open(client: LanguageClient, text: str) -> str:
    uri = f"file:///tmp/cgraph-lsp-test-{next(_count)}.cg"
    item = t.TextDocumentItem(uri=uri, language_id="cgraph", version=1, text=text)
    client.text_document_did_open(t.DidOpenTextDocumentParams(text_document=item))
    return uri


async def _diagnostics(client: LanguageClient, uri: str) -> list[t.Diagnostic]:
    """The first non-empty diagnostics published for ``uri`` (an evaluation's come later)."""
    for _ in range(50):
        if client.diagnostics.get(uri):
            return list(client.diagnostics[uri])
        await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    raise AssertionError(f"no diagnostics for {uri}")


def _cli(*args: str):
    from cgraph_cli.cli import main

    return make_runner().invoke(main, list(args))


def _whole(text: str) -> t.Range:
    lines = text.split("\n")
    return t.Range(
        start=t.Position(line=0, character=0), end=t.Position(line=len(lines), character=0)
    )


BAD = [
    "y = (x +",  # a syntax error at the end
    "input x = 1\ny = x − 1",  # a look-alike character
    "input x = 1\ny = sinn(x)",  # an unknown function, with did-you-mean
    "input W = [[1, 2]], x = [1, 2, 3]\ny = W @ x",  # shapes that do not fit
    "input x = -1\np = x * 2\ny = log(p)",  # a domain error, found by evaluating
]


@pytest.mark.parametrize("program", BAD)
async def test_diagnostics_say_what_the_command_line_says(client, program):
    uri = _open(client, program)
    (found,) = await _diagnostics(client, uri)
    result = _cli("grad", "-e", program)
    assert result.exit_code in (3, 4)
    head, *rest = result.stderr.rstrip("\n").split("\n")
    line, col, message = re.fullmatch(r"<expr>:(\d+):(\d+): error: (.*)", head).groups()
    helps = [ln for ln in rest if ln.startswith("help: ")]
    assert found.message == "\n".join([message, *helps])
    assert (found.range.start.line, found.range.start.character) == (int(line) - 1, int(col) - 1)
    carets = next(ln for ln in rest if "^" in ln)
    width = len(carets.strip().lstrip("|").strip())  # ^~~~ under the span
    assert found.range.end.character - found.range.start.character in (width, width - 1)


async def test_a_fix_clears_the_diagnostics(client):
    uri = _open(client, "y = sinn(x)")
    await _diagnostics(client, uri)
    change = t.TextDocumentContentChangeWholeDocument(text="input x = 1\ny = sin(x)")
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[change],
        )
    )
    await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


def _hinted(text: str, hints: list[t.InlayHint]) -> dict[str, dict[str, float]]:
    """Each hint's name (the one its statement or input item defines) and numbers, by kind:
    ``value`` after ``= ``, ``grad`` after ``∂out/∂name = ``."""
    found = {}
    for hint in hints:
        before = text.split("\n")[hint.position.line][: hint.position.character]
        name = re.findall(r"(\w+)\s*=[^=]*$", before)[-1]
        label = str(hint.label)
        numbers = {"grad": float(re.search(rf"∂\w+/∂{name} = (\S+)", label)[1])}
        if label.startswith("= "):
            numbers["value"] = float(label.split()[1])
        found[name] = numbers
    return found


@pytest.mark.parametrize("sample", ["seed", "neuron"])
async def test_inlay_hints_are_the_values_and_gradients_eval_and_grad_print(client, sample):
    text = (SAMPLES / f"{sample}.cg").read_text()
    uri = _open(client, text)
    hints = await client.text_document_inlay_hint_async(
        t.InlayHintParams(text_document=t.TextDocumentIdentifier(uri=uri), range=_whole(text))
    )
    values = json.loads(_cli("eval", f"sample:{sample}", "--all", "--format", "json").stdout)
    names = list(values["values"])
    wrt = ",".join(names)
    grads = json.loads(_cli("grad", f"sample:{sample}", "--format", "json", "--wrt", wrt).stdout)
    hinted = _hinted(text, hints)
    assert list(hinted) == names
    for name, numbers in hinted.items():
        assert numbers["grad"] == pytest.approx(
            grads["gradients"][name], rel=5e-4, abs=1e-12
        )  # 4 digits shown
        if "value" in numbers:
            assert numbers["value"] == pytest.approx(
                values["values"][name], rel=5e-4, abs=1e-12
            )  # 4 digits shown
    defaults = {name for name, numbers in hinted.items() if "value" not in numbers}
    assert defaults == set(parse(text).inputs)  # an input's value is its text: no "= "


def _at(uri: str, line: int, character: int) -> dict:
    return {
        "text_document": t.TextDocumentIdentifier(uri=uri),
        "position": t.Position(line=line, character=character),
    }


PROGRAM = "input x = 2, y = 3\np = x * y\nq = sin(p) + p\n"


async def test_hover_shows_a_value_its_shape_and_gradient_and_a_functions_signature(client):
    uri = _open(client, PROGRAM)
    on_p = await client.text_document_hover_async(t.HoverParams(**_at(uri, 2, 14)))
    assert on_p is not None and on_p.range.start == t.Position(line=2, character=13)
    value = str(on_p.contents.value)
    assert "**p** = 6" in value and "shape: ()" in value
    grads = json.loads(_cli("grad", "-e", PROGRAM, "--wrt", "p", "--format", "json").stdout)
    assert f"∂q/∂p = {grads['gradients']['p']:.4g}" in value
    on_sin = await client.text_document_hover_async(t.HoverParams(**_at(uri, 2, 5)))
    shown = str(on_sin.contents.value)
    assert "sin(x)" in shown
    sin_p = json.loads(_cli("eval", "-e", PROGRAM + "s = sin(p)", "--format", "json").stdout)
    assert f"this call: {sin_p['value']:.4g}" in shown


async def test_completion_offers_functions_names_above_and_keywords(client):
    uri = _open(client, PROGRAM + "r = ")
    items = await client.text_document_completion_async(t.CompletionParams(**_at(uri, 3, 4)))
    found = {item.label: item for item in items}
    assert found["softmax"].detail == "softmax(x[, axis])"
    assert found["softmax"].kind == t.CompletionItemKind.Function
    assert {"x", "y", "p", "q"} <= set(found) and "r" not in found
    assert found["input"].kind == t.CompletionItemKind.Keyword


async def test_definition_and_references_of_a_name(client):
    uri = _open(client, PROGRAM)
    there = await client.text_document_definition_async(t.DefinitionParams(**_at(uri, 2, 8)))
    assert there.range.start == t.Position(line=1, character=0)  # p = x * y
    found = await client.text_document_references_async(
        t.ReferenceParams(**_at(uri, 1, 0), context=t.ReferenceContext(include_declaration=True))
    )
    places = [(r.range.start.line, r.range.start.character) for r in found]
    assert places == [(1, 0), (2, 8), (2, 13)]


async def test_the_outline_lists_inputs_values_and_the_output(client):
    uri = _open(client, "def f(a):\n    return a * 2\n" + PROGRAM)
    found = await client.text_document_document_symbol_async(
        t.DocumentSymbolParams(text_document=t.TextDocumentIdentifier(uri=uri))
    )
    assert [(s.name, s.detail) for s in found] == [
        ("f", "function"),
        ("x", "input"),
        ("y", "input"),
        ("p", "value"),
        ("q", "output"),
    ]
    assert found[0].kind == t.SymbolKind.Function


@pytest.mark.parametrize(
    "program, title, fixed",
    [
        ("input x = 1\ny = x − 1", "replace '−' with '-'", "input x = 1\ny = x - 1"),
        ("input x = 1\ny = sinn(x)", "did you mean 'sin'", "input x = 1\ny = sin(x)"),
    ],
)
async def test_a_quick_fix_makes_the_program_parse(client, program, title, fixed):
    uri = _open(client, program)
    (found,) = await _diagnostics(client, uri)
    actions = await client.text_document_code_action_async(
        t.CodeActionParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            range=found.range,
            context=t.CodeActionContext(diagnostics=[found]),
        )
    )
    (action,) = actions
    assert action.title == title
    (edit,) = action.edit.changes[uri]
    lines = program.split("\n")
    row = lines[edit.range.start.line]
    start, end = edit.range.start.character, edit.range.end.character
    lines[edit.range.start.line] = row[:start] + edit.new_text + row[end:]
    assert "\n".join(lines) == fixed
    parse(fixed)  # and it parses


async def test_an_edit_during_a_long_evaluation_gets_its_diagnostics_at_once(client):
    from cgraph_cli.app.lsp.server import DEBOUNCE

    slow = "input x = 0.5\nh = x\nfor i in range(20000):\n    h = tanh(h * x + 0.1) + sin(h)\n"
    uri = _open(client, slow)
    await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # the parse's
    await asyncio.sleep(DEBOUNCE + 0.2)  # the evaluation is under way in its thread
    started = time.perf_counter()
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=slow + "y = (h +")],
        )
    )
    (found,) = await _diagnostics(client, uri)
    waited = time.perf_counter() - started
    assert found.message == "expected an expression after '+'"
    evaluation = time.perf_counter()
    Analysis(slow).evaluate()  # what the edit did not wait for
    assert waited < (time.perf_counter() - evaluation) / 2, waited
