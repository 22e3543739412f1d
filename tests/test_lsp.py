"""`cgraph lsp` end to end: a pytest-lsp client starts the server over stdio, as an editor
would, and checks what a user sees against what the commands print."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra is not installed: pip install 'cgraph-cli[lsp]'")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (test extra)")
from conftest import make_runner  # noqa: E402
from lsprotocol import types as t  # noqa: E402  (after the skip: pygls brings it)
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from cgraph_cli import parse  # noqa: E402

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
        assert numbers["grad"] == pytest.approx(grads["gradients"][name], rel=1e-5, abs=1e-12)
        if "value" in numbers:
            assert numbers["value"] == pytest.approx(values["values"][name], rel=1e-5, abs=1e-12)
    defaults = {name for name, numbers in hinted.items() if "value" not in numbers}
    assert defaults == set(parse(text).inputs)  # an input's value is its text: no "= "
