"""`cgraph lsp` end to end: a pytest-lsp client starts the server over stdio, as an editor
would, and checks what a user sees against what the commands print."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

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


_NUMBER = r"(\[[^\]]*\]|[^\s\[]+)"  # a number, or a vector written whole


def _hinted(text: str, hints: list[t.InlayHint]) -> dict[str, dict[str, Any]]:
    """Each hint's name (the one its statement or input item defines) and numbers, by kind:
    ``value`` after ``= ``, ``grad`` after ``∂out/∂name = `` (a vector: a list)."""
    found = {}
    for hint in hints:
        before = text.split("\n")[hint.position.line][: hint.position.character]
        name = re.findall(r"(\w+)\s*=[^=]*$", before)[-1]
        label = str(hint.label)
        numbers = {"grad": json.loads(re.search(rf"∂\w+/∂{name} = {_NUMBER}", label)[1])}
        if label.startswith("= "):
            numbers["value"] = json.loads(re.match(f"= {_NUMBER}", label)[1])
        found[name] = numbers
    return found


async def _hints(client: LanguageClient, uri: str, text: str) -> list[t.InlayHint]:
    return await client.text_document_inlay_hint_async(
        t.InlayHintParams(text_document=t.TextDocumentIdentifier(uri=uri), range=_whole(text))
    )


def _same_as_the_commands(text: str, hints: list[t.InlayHint], *program: str) -> dict:
    """Check the hints' numbers against ``cgraph eval --all`` and ``cgraph grad`` of
    ``program`` (the command's source and options); the hints by name."""
    values = json.loads(_cli("eval", *program, "--all", "--format", "json").stdout)
    names = list(values["values"])
    wrt = ",".join(names)
    grads = json.loads(_cli("grad", *program, "--format", "json", "--wrt", wrt).stdout)
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
    return hinted


@pytest.mark.parametrize("sample", ["seed", "neuron"])
async def test_inlay_hints_are_the_values_and_gradients_eval_and_grad_print(client, sample):
    text = (SAMPLES / f"{sample}.cg").read_text()
    uri = _open(client, text)
    hinted = _same_as_the_commands(text, await _hints(client, uri, text), f"sample:{sample}")
    defaults = {name for name, numbers in hinted.items() if "value" not in numbers}
    assert defaults == set(parse(text).inputs)  # an input's value is its text: no "= "


def _open_file(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    item = t.TextDocumentItem(uri=uri, language_id="cgraph", version=1, text=path.read_text())
    client.text_document_did_open(t.DidOpenTextDocumentParams(text_document=item))
    return uri


async def test_a_bindings_file_beside_the_program_gives_the_hints_values(client, tmp_path):
    program = tmp_path / "neuron.cg"
    program.write_text((SAMPLES / "neuron.cg").read_text())
    bindings = tmp_path / "neuron.bindings.json"
    bindings.write_text(json.dumps({"x1": 1.5, "w2": -0.5, "b": 1}))
    text = program.read_text()
    uri = _open_file(client, program)
    hints = await _hints(client, uri, text)
    hinted = _same_as_the_commands(text, hints, str(program), "--bindings", str(bindings))
    assert hinted["x1"]["value"] == 1.5 and "value" not in hinted["x2"]  # bound: shown
    bindings.write_text(json.dumps({"x1": -2}))  # changed: the editor says so
    client.workspace_did_change_watched_files(
        t.DidChangeWatchedFilesParams(
            changes=[t.FileEvent(uri=bindings.as_uri(), type=t.FileChangeType.Changed)]
        )
    )
    hints = await _hints(client, uri, text)
    _same_as_the_commands(text, hints, str(program), "--bindings", str(bindings))
    assert _hinted(text, hints)["x1"]["value"] == -2


WATCHES = t.ClientCapabilities(
    workspace=t.WorkspaceClientCapabilities(
        did_change_watched_files=t.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=True
        )
    )
)
registered: list[t.RegistrationParams] = []


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "cgraph_cli", "lsp"]),
)
async def watching(lsp_client: LanguageClient):
    """A client that lets the server ask to hear of changed files, as VS Code's does."""

    @lsp_client.feature(t.CLIENT_REGISTER_CAPABILITY)
    def on_register(params: t.RegistrationParams) -> None:
        registered.append(params)

    await lsp_client.initialize_session(t.InitializeParams(capabilities=WATCHES))
    yield
    await lsp_client.shutdown_session()


async def test_the_server_asks_to_hear_of_changed_bindings_files(watching):
    for _ in range(100):
        if registered:
            break
        await asyncio.sleep(0.05)
    ((registration,),) = [r.registrations for r in registered]
    assert registration.method == t.WORKSPACE_DID_CHANGE_WATCHED_FILES
    globs = [w["globPattern"] for w in registration.register_options["watchers"]]  # as sent
    assert globs == ["**/*.json", "**/*.npz"]


async def test_a_first_line_comment_names_the_bindings_file(client, tmp_path):
    np = pytest.importorskip("numpy")
    (tmp_path / "runs").mkdir()
    arrays = tmp_path / "runs" / "one.npz"
    np.savez(arrays, w=np.array([0.5, -1.0]), b=np.array(0.25))
    program = tmp_path / "fit.cg"
    program.write_text(
        "# bindings: runs/one.npz\ninput x = [1, 2], w = [0, 0], b = 0\np = sum(w * x) + b\n"
        "loss = p ^ 2\n"
    )
    (tmp_path / "fit.bindings.json").write_text('{"b": 9}')  # the comment wins
    text = program.read_text()
    uri = _open_file(client, program)
    hints = await _hints(client, uri, text)
    _same_as_the_commands(text, hints, str(program), "--bindings", str(arrays))
    assert _hinted(text, hints)["b"]["value"] == 0.25


async def test_a_bindings_file_that_cannot_be_read_is_a_diagnostic_at_its_name(client, tmp_path):
    program = tmp_path / "gone.cg"
    program.write_text("# bindings: nowhere.json\ninput x = 1\ny = x * 2\n")
    uri = _open_file(client, program)
    (found,) = await _diagnostics(client, uri)
    assert found.message == f"cannot read {tmp_path / 'nowhere.json'}: no such file"
    assert (found.range.start.character, found.range.end.character) == (12, 24)


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


def _explained(program: str, op: str, *source: str) -> str:
    """The (first) line ``cgraph explain`` prints for the backward step through ``op``."""
    printed = _cli("explain", *(source or ("-e", program))).stdout
    return re.search(rf"^ +\d+\. (Through {re.escape(op)}:.*)$", printed, re.M)[1]


async def test_hover_shows_the_local_derivatives_as_explain_prints_them(client):
    uri = _open(client, PROGRAM)
    on_p = await client.text_document_hover_async(t.HoverParams(**_at(uri, 2, 14)))  # a read
    assert _explained(PROGRAM, "*") in str(on_p.contents.value)
    on_sin = await client.text_document_hover_async(t.HoverParams(**_at(uri, 2, 5)))
    assert _explained(PROGRAM, "sin") in str(on_sin.contents.value)
    on_x = await client.text_document_hover_async(t.HoverParams(**_at(uri, 0, 6)))
    assert "Through" not in str(on_x.contents.value)  # an input: no op made it


async def test_hover_in_a_loop_shows_the_last_steps_local_derivatives(client):
    text = (SAMPLES / "rnn.cg").read_text()
    uri = _open(client, text)
    row = next(k for k, line in enumerate(text.split("\n")) if line.startswith("    h = tanh("))
    shown = await client.text_document_hover_async(t.HoverParams(**_at(uri, row, 4)))
    last = _explained(text, "tanh", "sample:rnn")  # the backward pass meets the last step first
    assert f"```text\n{last}\n" in str(shown.contents.value)


async def test_hover_on_a_call_of_a_def_shows_its_signature_and_value(client):
    text = (SAMPLES / "layers.cg").read_text()
    uri = _open(client, text)
    row = next(k for k, line in enumerate(text.split("\n")) if line.startswith("y = layer("))
    shown = await client.text_document_hover_async(t.HoverParams(**_at(uri, row, 5)))
    value = json.loads(_cli("eval", "sample:layers", "--all", "--format", "json").stdout)
    (y,) = value["values"]["y"]
    assert str(shown.contents.value).split("\n\n") == [
        "```cgraph\ndef layer(x, W, b)\n```",
        f"this call: [{y:.4g}]",
    ]


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

    slow = "input x = 0.5\nh = x\nfor i in range(40000):\n    h = tanh(h * x + 0.1) + sin(h)\n"
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


def _apply(text: str, edits: list[t.TextEdit]) -> str:
    """``text`` with LSP edits made (ASCII text: characters are UTF-16 units), last first."""
    lines = text.split("\n")
    starts = [sum(len(ln) + 1 for ln in lines[:k]) for k in range(len(lines) + 1)]

    def at(p: t.Position) -> int:
        return starts[p.line] + p.character if p.line < len(lines) else len(text)

    for edit in sorted(edits, key=lambda e: at(e.range.start), reverse=True):
        text = text[: at(edit.range.start)] + edit.new_text + text[at(edit.range.end) :]
    return text


RENAMED = "def f(p):\n    return p * 2\ninput x = 2, p = 3\nq = f(x) + p\np = p * q\n"


async def test_rename_changes_a_name_where_it_is_defined_and_read(client):
    uri = _open(client, RENAMED)
    ready = await client.text_document_prepare_rename_async(
        t.PrepareRenameParams(**_at(uri, 3, 11))
    )
    assert ready.placeholder == "p" and ready.range.start == t.Position(line=3, character=11)
    edit = await client.text_document_rename_async(t.RenameParams(**_at(uri, 3, 11), new_name="b"))
    renamed = _apply(RENAMED, edit.changes[uri])
    # the parameter p of f is another name: it stays
    assert renamed == "def f(p):\n    return p * 2\ninput x = 2, b = 3\nq = f(x) + b\nb = b * q\n"
    before = json.loads(_cli("eval", "-e", RENAMED, "--format", "json").stdout)
    after = json.loads(_cli("eval", "-e", renamed, "--format", "json").stdout)
    assert after["value"] == before["value"]


@pytest.mark.parametrize(
    "new, says",
    [
        ("q", "'q' is already a name of this program"),
        ("sin", "'sin' is a function of cgraph's op table"),
        ("for", "'for' is a keyword"),
        ("2p", "'2p' is not a name"),
        ("a b", "'a b' is not a name"),
    ],
)
async def test_rename_refuses_a_name_that_would_change_the_program(client, new, says):
    from pygls.exceptions import JsonRpcException

    uri = _open(client, RENAMED)
    with pytest.raises(JsonRpcException) as refused:
        await client.text_document_rename_async(t.RenameParams(**_at(uri, 4, 0), new_name=new))
    assert refused.value.message.startswith(says)


async def test_rename_refuses_an_op_tables_function(client):
    from pygls.exceptions import JsonRpcException

    uri = _open(client, PROGRAM)
    with pytest.raises(JsonRpcException) as refused:
        await client.text_document_prepare_rename_async(t.PrepareRenameParams(**_at(uri, 2, 5)))
    assert "'sin' is a function of cgraph's op table" in refused.value.message


@pytest.mark.parametrize(
    "line, expected",
    [
        ("y = max(x, ", ("max(x, y)", 1, "y")),  # the second form: the cursor is in argument 2
        ("y = max(", ("max(x)", 0, "x")),
        ("y = sum(x * [1, 2], ", ("sum(x[, axis])", 1, "axis")),  # a comma inside [] is not one
        ("y = sum(sin(x), ", ("sum(x[, axis])", 1, "axis")),  # nor one inside an inner call
        ("y = sum(sin(", ("sin(x)", 0, "x")),
        ("y = f(x, ", ("f(a, b)", 1, "b")),  # a def of the program
    ],
)
async def test_signature_help_shows_the_call_and_its_active_parameter(client, line, expected):
    text = "def f(a, b):\n    return a * b\ninput x = 2\n" + line
    uri = _open(client, text)
    found = await client.text_document_signature_help_async(
        t.SignatureHelpParams(**_at(uri, 3, len(line)))
    )
    form = found.signatures[found.active_signature]
    start, end = form.parameters[found.active_parameter].label
    assert (form.label, found.active_parameter, form.label[start:end]) == expected


async def test_signature_help_says_what_the_functions_argument_needs(client):
    uri = _open(client, "input x = 2\ny = log(")
    found = await client.text_document_signature_help_async(t.SignatureHelpParams(**_at(uri, 1, 8)))
    assert found.signatures[0].documentation == "log needs a positive argument"


async def test_no_signature_help_outside_a_call(client):
    uri = _open(client, "input x = 2\ny = (x + 1) * sin(x)")
    found = await client.text_document_signature_help_async(
        t.SignatureHelpParams(**_at(uri, 1, 10))
    )
    assert found is None


async def _format(client: LanguageClient, text: str) -> list[t.TextEdit] | None:
    uri = _open(client, text)
    return await client.text_document_formatting_async(
        t.DocumentFormattingParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            options=t.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )


async def test_formatting_writes_statements_as_to_source_and_keeps_comments(client):
    head = "def f(a):  # twice\n    return a*2\n\n# a model\n"
    text = head + "input x=2,w = [1,2.50]  # weights\ny = (x)*w**2\ny+=f( y )\n"
    edits = await _format(client, text)
    done = _apply(text, edits)
    assert done == head + "input x = 2, w = [1, 2.5]  # weights\ny = x * w ^ 2\ny += f(y)\n"
    assert parse(done).ops == parse(text).ops
    assert list(await _format(client, done)) == []  # formatted text stays as it is


@pytest.mark.parametrize("sample", sorted(p.stem for p in SAMPLES.glob("*.cg")))
async def test_formatting_a_sample_keeps_its_comments_and_its_graph(client, sample):
    from cgraph_cli.app.lsp.edits import comments

    text = (SAMPLES / f"{sample}.cg").read_text()
    done = _apply(text, await _format(client, text) or [])
    assert comments(done) == comments(text)
    before, after = parse(text), parse(done)
    assert (after.ops, after.args, after.params) == (before.ops, before.args, before.params)


async def test_formatting_a_program_that_does_not_parse_says_why(client):
    shown = len(client.messages)
    assert await _format(client, "y = (x +") is None
    if len(client.messages) == shown:  # sent before the answer: it is usually here already
        await asyncio.wait_for(client.wait_for_notification(t.WINDOW_SHOW_MESSAGE), 10)
    assert client.messages[-1].message == "not formatted: the program does not parse"
    assert client.messages[-1].type == t.MessageType.Warning
