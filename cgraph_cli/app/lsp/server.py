"""The language server over pygls: each document is parsed at once on every change (its
diagnostics published), then evaluated with its ``input`` defaults after a short pause, in a
thread, so that typing never waits; a newer version of the text cancels the older evaluation.

Only this module imports pygls and lsprotocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import types as t
from pygls import uris
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from ... import __version__
from ...core.errors import Span
from ...core.ops import FUNCTIONS
from .analysis import Analysis, Problem, Values
from .bindfile import KINDS
from .edits import Refused, call_at, formatted, rename_target, renamed
from .features import completions, hover, signatures
from .index import Site
from .positions import Lines, units

DEBOUNCE = 0.25  # seconds of no typing before evaluating
_KINDS = {
    "function": t.CompletionItemKind.Function,
    "variable": t.CompletionItemKind.Variable,
    "keyword": t.CompletionItemKind.Keyword,
}


class Document:
    """One version of an open document: its analysis and, once evaluated, its values."""

    def __init__(self, uri: str, version: int | None, text: str, path: str | None) -> None:
        self.uri, self.version = uri, version
        self.analysis = Analysis(text, path or uri, path)
        self.lines = Lines(text)
        self.values: Values | None = None
        self.task: asyncio.Task | None = None

    def range(self, span: Span) -> t.Range:
        (l0, c0), (l1, c1) = self.lines.position(span.start), self.lines.position(span.end)
        return t.Range(
            start=t.Position(line=l0, character=c0), end=t.Position(line=l1, character=c1)
        )

    def offset(self, position: t.Position) -> int:
        return self.lines.offset(position.line, position.character)

    def location(self, site: Site) -> t.Location:
        return t.Location(uri=self.uri, range=self.range(Span(site.start, site.end)))

    def problems(self) -> list[Problem]:
        return self.analysis.problems + (self.values.problems if self.values else [])

    def diagnostic(self, found: Problem) -> t.Diagnostic:
        message = "\n".join([found.message, *(f"help: {hint}" for hint in found.hints)])
        return t.Diagnostic(
            range=self.range(found.span),
            message=message,
            severity=t.DiagnosticSeverity.Error,
            source="cgraph",
        )


class CgraphServer(LanguageServer):
    """The documents a client has open, by URI."""

    def __init__(self) -> None:
        super().__init__("cgraph", __version__)
        self.documents: dict[str, Document] = {}
        # One evaluation at a time: a thread cannot be stopped, so a stale one is skipped
        # before it starts rather than run beside the current one.
        self.evaluator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cgraph-eval")

    def current(self, doc: Document) -> bool:
        return self.documents.get(doc.uri) is doc

    def changed(self, uri: str) -> None:
        """Parse the new text, publish its diagnostics, schedule its evaluation."""
        text = self.workspace.get_text_document(uri)
        old = self.documents.get(uri)
        if old is not None and old.task is not None:
            old.task.cancel()
        path = text.path if uri.startswith("file:") else None
        doc = Document(uri, text.version, text.source, path)
        self.documents[uri] = doc
        self.publish(doc)
        if doc.analysis.evaluable():
            doc.task = asyncio.get_running_loop().create_task(self.evaluate(doc))

    def publish(self, doc: Document) -> None:
        diagnostics = [doc.diagnostic(p) for p in doc.problems()]
        params = t.PublishDiagnosticsParams(
            uri=doc.uri, version=doc.version, diagnostics=diagnostics
        )
        self.text_document_publish_diagnostics(params)

    async def evaluate(self, doc: Document) -> None:
        await asyncio.sleep(DEBOUNCE)
        job = lambda: doc.analysis.evaluate() if self.current(doc) else None  # noqa: E731
        values = await asyncio.get_running_loop().run_in_executor(self.evaluator, job)
        if values is None or not self.current(doc):
            return  # the text changed meanwhile
        doc.values = values
        self.publish(doc)
        capabilities = self.client_capabilities.workspace
        inlay = capabilities.inlay_hint if capabilities else None
        if inlay is not None and inlay.refresh_support:
            self.workspace_inlay_hint_refresh(None)

    async def values(self, uri: str) -> tuple[Document | None, Values | None]:
        """The document and its values, waiting for an evaluation under way."""
        doc = self.documents.get(uri)
        if doc is None:
            return None, None
        if doc.task is not None and doc.values is None:
            try:
                await asyncio.shield(doc.task)
            except asyncio.CancelledError:
                return doc, None
        return doc, doc.values


def _did_open(ls: CgraphServer, params: t.DidOpenTextDocumentParams) -> None:
    ls.changed(params.text_document.uri)


def _did_change(ls: CgraphServer, params: t.DidChangeTextDocumentParams) -> None:
    ls.changed(params.text_document.uri)


def _initialized(ls: CgraphServer, params: t.InitializedParams) -> None:
    """Ask to hear of changes to bindings files (.json, .npz), where the client lets a server
    ask; VS Code's client, Neovim's and others do."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    if watched is None or not watched.dynamic_registration:
        return
    watchers = [t.FileSystemWatcher(glob_pattern=f"**/*{kind}") for kind in KINDS]
    options = t.DidChangeWatchedFilesRegistrationOptions(watchers=watchers)
    method = t.WORKSPACE_DID_CHANGE_WATCHED_FILES
    ls.client_register_capability(
        t.RegistrationParams(
            registrations=[
                t.Registration(id="cgraph-bindings", method=method, register_options=options)
            ]
        )
    )


def _watched_files(ls: CgraphServer, params: t.DidChangeWatchedFilesParams) -> None:
    """A bindings file changed (or appeared, or went): analyse again each open program that
    names it or lies in its folder (a few documents: each is cheap to read again)."""
    changed = {os.path.normpath(uris.to_fs_path(c.uri) or "") for c in params.changes}
    folders = {os.path.dirname(path) for path in changed}
    for uri, doc in list(ls.documents.items()):
        path = uris.to_fs_path(uri) if uri.startswith("file:") else None
        named = doc.analysis.bindings
        if named is not None and os.path.normpath(named.path) in changed:
            ls.changed(uri)
        elif path is not None and os.path.dirname(os.path.normpath(path)) in folders:
            ls.changed(uri)


def _did_close(ls: CgraphServer, params: t.DidCloseTextDocumentParams) -> None:
    doc = ls.documents.pop(params.text_document.uri, None)
    if doc is not None and doc.task is not None:
        doc.task.cancel()


async def _inlay_hints(ls: CgraphServer, params: t.InlayHintParams) -> list[t.InlayHint]:
    doc, values = await ls.values(params.text_document.uri)
    if doc is None or values is None:
        return []
    first, last = doc.offset(params.range.start), doc.offset(params.range.end)
    return [
        t.InlayHint(
            position=doc.range(Span(site.end_of, site.end_of)).end,
            label=text,
            kind=t.InlayHintKind.Type,
            padding_left=True,
        )
        for site, text in values.hints()
        if first <= site.end_of <= last
    ]


async def _on_hover(ls: CgraphServer, params: t.HoverParams) -> t.Hover | None:
    doc, values = await ls.values(params.text_document.uri)
    site = doc.analysis.index.at(doc.offset(params.position)) if doc else None
    if doc is None or site is None:
        return None
    if values is None or values.explained():
        shown = hover(doc.analysis, values, site)
    else:  # the first hover explains the whole program: in the evaluation's thread
        loop = asyncio.get_running_loop()
        shown = await loop.run_in_executor(ls.evaluator, hover, doc.analysis, values, site)
    if shown is None:
        return None
    contents = t.MarkupContent(kind=t.MarkupKind.Markdown, value=shown)
    return t.Hover(contents=contents, range=doc.range(Span(site.start, site.end)))


def _on_completion(ls: CgraphServer, params: t.CompletionParams) -> list[t.CompletionItem]:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return []
    found = completions(doc.analysis, doc.offset(params.position))
    return [t.CompletionItem(label=c.label, kind=_KINDS[c.kind], detail=c.detail) for c in found]


def _code_actions(ls: CgraphServer, params: t.CodeActionParams) -> list[t.CodeAction]:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return []
    first, last = doc.offset(params.range.start), doc.offset(params.range.end)
    actions = []
    for found in doc.problems():
        if found.fix is None or found.span.end < first or found.span.start > last:
            continue
        title, new_text = found.fix
        edit = t.TextEdit(range=doc.range(found.span), new_text=new_text)
        actions.append(
            t.CodeAction(
                title=title,
                kind=t.CodeActionKind.QuickFix,
                diagnostics=[doc.diagnostic(found)],
                edit=t.WorkspaceEdit(changes={doc.uri: [edit]}),
                is_preferred=True,
            )
        )
    return actions


def _site_at(ls: CgraphServer, uri: str, position: t.Position) -> tuple[Any, Site | None]:
    doc = ls.documents.get(uri)
    return doc, doc.analysis.index.at(doc.offset(position)) if doc else None


def _definition(ls: CgraphServer, params: t.DefinitionParams) -> t.Location | None:
    doc, site = _site_at(ls, params.text_document.uri, params.position)
    found = doc.analysis.index.definition(site.name, site.start) if site else None
    return doc.location(found) if found is not None else None


def _references(ls: CgraphServer, params: t.ReferenceParams) -> list[t.Location]:
    doc, site = _site_at(ls, params.text_document.uri, params.position)
    if site is None or site.kind in ("param", "counter"):
        return []
    declared = params.context.include_declaration
    found = doc.analysis.index.references(site.name)
    return [doc.location(s) for s in found if declared or s.kind in ("read", "call")]


def _symbols(ls: CgraphServer, params: t.DocumentSymbolParams) -> list[t.DocumentSymbol]:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return []
    graph = doc.analysis.graph
    output = graph.output_label if graph is not None else None
    defs = doc.analysis.index.defs
    last = {s.name: s for s in defs}
    return [
        t.DocumentSymbol(
            name=s.name,
            detail="output" if s.name == output and last[s.name] is s else s.kind,
            kind=t.SymbolKind.Function if s.kind == "function" else t.SymbolKind.Variable,
            range=doc.range(Span(s.start, max(s.end, s.end_of))),
            selection_range=doc.range(Span(s.start, s.end)),
        )
        for s in defs
    ]


def _refused(refused: Refused) -> JsonRpcException:
    """The error response an editor shows for an edit the server will not make."""
    return JsonRpcException(refused.message, code=t.LSPErrorCodes.RequestFailed)


def _prepare_rename(
    ls: CgraphServer, params: t.PrepareRenameParams
) -> t.PrepareRenamePlaceholder | None:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return None
    try:
        site = rename_target(doc.analysis, doc.offset(params.position))
    except Refused as refused:
        raise _refused(refused) from None
    return t.PrepareRenamePlaceholder(
        range=doc.range(Span(site.start, site.end)), placeholder=site.name
    )


def _rename(ls: CgraphServer, params: t.RenameParams) -> t.WorkspaceEdit | None:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return None
    try:
        sites = renamed(doc.analysis, doc.offset(params.position), params.new_name)
    except Refused as refused:
        raise _refused(refused) from None
    edits = [
        t.TextEdit(range=doc.range(Span(s.start, s.end)), new_text=params.new_name) for s in sites
    ]
    return t.WorkspaceEdit(changes={doc.uri: edits})


def _signature_help(ls: CgraphServer, params: t.SignatureHelpParams) -> t.SignatureHelp | None:
    doc = ls.documents.get(params.text_document.uri)
    found = call_at(doc.analysis.text, doc.offset(params.position)) if doc else None
    forms = signatures(found[0], doc.analysis) if doc and found else []
    if not forms or found is None:
        return None
    active = found[2]
    chosen = next((k for k, f in enumerate(forms) if len(f.params) > active), len(forms) - 1)
    needs = [op.domain for op in FUNCTIONS.get(found[0], {}).values() if op.domain]
    shown = [
        t.SignatureInformation(
            label=form.label,
            parameters=[  # its place in UTF-16 units, as LSP counts
                t.ParameterInformation(label=(units(form.label[:a]), units(form.label[:b])))
                for a, b in form.params
            ],
            documentation="\n\n".join(needs) or None,
        )
        for form in forms
    ]
    return t.SignatureHelp(signatures=shown, active_signature=chosen, active_parameter=active)


def _formatting(ls: CgraphServer, params: t.DocumentFormattingParams) -> list[t.TextEdit] | None:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return None
    text = doc.analysis.text
    try:
        new = formatted(doc.analysis)
    except Refused as refused:
        message = t.ShowMessageParams(type=t.MessageType.Warning, message=refused.message)
        ls.window_show_message(message)
        return None
    if new == text:
        return []
    return [t.TextEdit(range=doc.range(Span(0, len(text))), new_text=new)]


def make_server() -> CgraphServer:
    """A server with every feature registered (a new one per call, for tests)."""
    server = CgraphServer()
    for method, handler in FEATURES.items():
        server.feature(method, OPTIONS.get(method))(handler)
    return server


FEATURES: dict[str, Any] = {
    t.TEXT_DOCUMENT_DID_OPEN: _did_open,
    t.TEXT_DOCUMENT_DID_CHANGE: _did_change,
    t.TEXT_DOCUMENT_DID_CLOSE: _did_close,
    t.INITIALIZED: _initialized,
    t.WORKSPACE_DID_CHANGE_WATCHED_FILES: _watched_files,
    t.TEXT_DOCUMENT_INLAY_HINT: _inlay_hints,
    t.TEXT_DOCUMENT_HOVER: _on_hover,
    t.TEXT_DOCUMENT_COMPLETION: _on_completion,
    t.TEXT_DOCUMENT_CODE_ACTION: _code_actions,
    t.TEXT_DOCUMENT_DEFINITION: _definition,
    t.TEXT_DOCUMENT_REFERENCES: _references,
    t.TEXT_DOCUMENT_DOCUMENT_SYMBOL: _symbols,
    t.TEXT_DOCUMENT_PREPARE_RENAME: _prepare_rename,
    t.TEXT_DOCUMENT_RENAME: _rename,
    t.TEXT_DOCUMENT_SIGNATURE_HELP: _signature_help,
    t.TEXT_DOCUMENT_FORMATTING: _formatting,
}
OPTIONS: dict[str, Any] = {
    t.TEXT_DOCUMENT_SIGNATURE_HELP: t.SignatureHelpOptions(
        trigger_characters=["(", ","], retrigger_characters=[")"]
    ),
}


def serve() -> None:
    """Serve one client over stdin and stdout until it says exit. The server reads and writes
    copies of the two (pygls closes what it was given, and the CLI still flushes stdout); a
    stray print goes to stderr, where it cannot break the protocol."""
    stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    with contextlib.redirect_stdout(sys.stderr):
        make_server().start_io(stdin, stdout)
