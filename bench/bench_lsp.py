"""The language server's speed on a long program: how soon a change's diagnostics arrive.

    python bench/bench_lsp.py                      # 1,000 statements, 15 rounds
    python bench/bench_lsp.py --statements 5000 --rounds 5

In one process: the analysis the server makes on every change (parse, names, the parse
error's diagnostic), for a valid program and for one with a syntax error at its end. Over
stdio, as an editor sees it: `cgraph lsp` in a subprocess, a whole-text change sent, the time
until its diagnostics are published; and, after the idle pause (DEBOUNCE), until the inlay
hints (every value and gradient) are answered. In process too: formatting, rename and
signature help on the whole text, and the first hover's explanation of the program. Medians
and ranges; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def program(statements: int) -> str:
    """Named statements, each reading the two before it through an op."""
    lines = ["input x = 0.5, y = 0.25", "v0 = x * y", "v1 = sin(v0) + x"]
    lines += [f"v{k} = tanh(v{k - 1}) * 0.5 + v{k - 2} * 0.5" for k in range(2, statements)]
    return "\n".join(lines) + "\n"


def shown(seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return f"median {statistics.median(ms):7.2f} ms   range {min(ms):.2f}-{max(ms):.2f} ms"


def in_process(text: str, rounds: int) -> None:
    from cgraph_cli.app.lsp.analysis import Analysis

    for label, source in (("valid", text), ("syntax error at the end", text + "w = (v1 +\n")):
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            analysis = Analysis(source)
            times.append(time.perf_counter() - start)
        assert (analysis.problems == []) == (label == "valid")
        print(f"  analysis, {label:<24} {shown(times)}")


def edits(text: str, rounds: int) -> None:
    """The requests that work on the text alone (formatting, rename, signature help), and the
    first hover's explanation of the whole program (later hovers reuse it)."""
    from cgraph_cli.app.lsp.analysis import Analysis
    from cgraph_cli.app.lsp.edits import call_at, formatted, renamed

    analysis = Analysis(text)
    end = len(text) - 2
    jobs = {
        "formatting": lambda: formatted(analysis),
        "rename of v1": lambda: renamed(analysis, text.index("v1"), "first"),
        "signature help at the end": lambda: call_at(text, end),
    }
    for label, job in jobs.items():
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            job()
            times.append(time.perf_counter() - start)
        print(f"  {label:<34} {shown(times)}")
    times = []
    for _ in range(max(1, rounds // 5)):
        values = analysis.evaluate()
        start = time.perf_counter()
        values.rule(analysis.index.defs[-1])
        times.append(time.perf_counter() - start)
    print(f"  {'first hover: explaining it all':<34} {shown(times)}")


async def over_stdio(text: str, rounds: int) -> None:
    from lsprotocol import types as t
    from pygls.lsp.client import BaseLanguageClient

    client = BaseLanguageClient("bench", "1")
    published: asyncio.Queue = asyncio.Queue()

    @client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: t.PublishDiagnosticsParams) -> None:
        published.put_nowait(params)

    await client.start_io(sys.executable, "-m", "cgraph_cli", "lsp")
    await client.initialize_async(t.InitializeParams(capabilities=t.ClientCapabilities()))
    client.initialized(t.InitializedParams())
    uri = "file:///bench.cg"
    item = t.TextDocumentItem(uri=uri, language_id="cgraph", version=0, text=text)
    client.text_document_did_open(t.DidOpenTextDocumentParams(text_document=item))
    await published.get()
    diagnostics, hints = [], []
    whole = t.Range(start=t.Position(line=0, character=0), end=t.Position(line=10**6, character=0))
    for version in range(1, rounds + 1):
        edited = text + f"w = v1 * {version}\n"
        start = time.perf_counter()
        client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[t.TextDocumentContentChangeWholeDocument(text=edited)],
            )
        )
        while (await published.get()).version != version:
            pass
        diagnostics.append(time.perf_counter() - start)
        found = await client.text_document_inlay_hint_async(
            t.InlayHintParams(text_document=t.TextDocumentIdentifier(uri=uri), range=whole)
        )
        hints.append(time.perf_counter() - start)
        assert found, "no hints"
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    from cgraph_cli.app.lsp.server import DEBOUNCE

    print(f"  stdio, change to diagnostics     {shown(diagnostics)}")
    print(f"  stdio, change to inlay hints     {shown(hints)}  (after a {DEBOUNCE} s pause)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--statements", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    text = program(args.statements)
    print(f"cgraph lsp, a {args.statements:,}-statement program ({len(text):,} characters)")
    in_process(text, args.rounds)
    edits(text, args.rounds)
    asyncio.run(over_stdio(text, args.rounds))


if __name__ == "__main__":
    main()
