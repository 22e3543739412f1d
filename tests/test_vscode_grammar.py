"""The VS Code extension's TextMate grammar (editors/vscode/syntaxes/cgraph.tmLanguage.json):
in step with the Lark grammar and the op table, and, tokenised by the engine VS Code uses
(vscode-textmate with Oniguruma, under node), leaving no character of a sample unclassified."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cgraph_cli.core.ops import FUNCTIONS

ROOT = Path(__file__).parent.parent
EXTENSION = ROOT / "editors" / "vscode"
GRAMMAR = EXTENSION / "syntaxes" / "cgraph.tmLanguage.json"
SAMPLES = sorted((ROOT / "samples").glob("*.cg"))
NODE, NPM = shutil.which("node"), shutil.which("npm")
needs_node = pytest.mark.skipif(
    NODE is None or NPM is None,
    reason="node and npm are not installed: the grammar is tokenised by VS Code's engine in node",
)


def _generator():
    spec = importlib.util.spec_from_file_location("vscode_grammar", EXTENSION / "grammar.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_grammar_file_is_what_grammar_py_writes():
    assert GRAMMAR.read_text(encoding="utf-8") == _generator().text(), (
        "run: python editors/vscode/grammar.py"
    )


def _words(scope: str) -> set[str]:
    """The words the grammar's top-level rules give ``scope``."""
    rules = json.loads(GRAMMAR.read_text(encoding="utf-8"))["patterns"]
    found = [re.search(r"\(\?:([^)]*)\)", r["match"]) for r in rules if r.get("name") == scope]
    return {word for match in found if match for word in match[1].split("|")}


def test_the_grammars_functions_are_the_op_tables_and_its_keywords_the_lark_grammars():
    assert _words("support.function.cgraph") == set(FUNCTIONS)
    lark = (ROOT / "grammars" / "cgraph.lark").read_text()
    keywords = set(re.findall(r'^[A-Z]+: "([a-z]+)"$', lark, re.M))
    scopes = [
        "keyword.control.cgraph",
        "keyword.operator.logical.cgraph",
        "keyword.other.input.cgraph",
        "support.function.builtin.cgraph",
    ]
    # and len and shape, which only a loop's bound reads: range(len(xs))
    assert set().union(*(_words(s) for s in scopes)) == keywords | {"len", "shape"}


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Path:
    """A folder with vscode-textmate and vscode-oniguruma installed as the lock file pins them."""
    where = tmp_path_factory.mktemp("vscode-textmate")
    for name in ("package.json", "package-lock.json", "tokenize.js"):
        shutil.copy(EXTENSION / "test" / name, where / name)
    done = subprocess.run(
        [NPM, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        pytest.skip(f"npm ci could not install vscode-textmate: {done.stderr.strip()[-400:]}")
    return where


def tokenise(engine: Path, texts: list[str]) -> list[list[list]]:
    """Per text, per line: [start, end, scopes] of each token."""
    request = json.dumps({"grammar": str(GRAMMAR), "texts": texts})
    done = subprocess.run(
        [NODE, "tokenize.js"], cwd=engine, input=request, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _docs_programs() -> list[str]:
    """The cgraph blocks of the docs that parse (some show errors on purpose)."""
    from cgraph_cli import parse
    from cgraph_cli.core.errors import CgraphError

    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for block in re.findall(r"^```cgraph\n(.*?)^```", page.read_text(), re.S | re.M):
            try:
                parse(block)
            except CgraphError:
                continue
            found.append(block)
    return found


def _unclassified(text: str, lines: list[list]) -> list[str]:
    """Each non-blank character whose only scope is the root, or that is scoped invalid."""
    bad = []
    for number, (line, tokens) in enumerate(zip(re.split(r"\r\n|\r|\n", text), lines), 1):
        units = line.encode("utf-16-le")
        for start, end, scopes in tokens:
            piece = units[2 * start : 2 * end].decode("utf-16-le")
            if piece.strip() and (len(scopes) < 2 or any("invalid" in s for s in scopes)):
                bad.append(f"line {number}: {piece!r} {scopes}")
    return bad


@needs_node
def test_every_character_of_the_samples_and_docs_programs_gets_a_scope(engine):
    texts = [path.read_text(encoding="utf-8") for path in SAMPLES] + _docs_programs()
    assert len(texts) > len(SAMPLES)
    for text, lines in zip(texts, tokenise(engine, texts)):
        assert _unclassified(text, lines) == [], text


SMALL = """# bindings: runs/one.json
input x = 1.5e-3, W = [[1, 2]]   # a comment
def layer(h, b):
    return tanh(W @ h + b)
for t in range(len(x)):
    x += relu(x) ** 2 if x >= 0 and not x != 1 else -x; y = layer(x, 0.5)
"""
EXPECTED = [  # (line, text, the token's innermost scope)
    (0, "#", "punctuation.definition.comment.cgraph"),
    (0, "bindings", "keyword.other.bindings.cgraph"),
    (0, "runs/one.json", "string.unquoted.path.cgraph"),
    (1, "input", "keyword.other.input.cgraph"),
    (1, "x", "variable.other.cgraph"),
    (1, "=", "keyword.operator.assignment.cgraph"),
    (1, "1.5e-3", "constant.numeric.cgraph"),
    (1, "[", "punctuation.section.brackets.begin.cgraph"),
    (1, " a comment", "comment.line.number-sign.cgraph"),
    (2, "def", "keyword.control.cgraph"),
    (2, "layer", "entity.name.function.cgraph"),
    (2, "h", "variable.parameter.cgraph"),
    (3, "return", "keyword.control.cgraph"),
    (3, "tanh", "support.function.cgraph"),
    (3, "@", "keyword.operator.arithmetic.cgraph"),
    (4, "for", "keyword.control.cgraph"),
    (4, "t", "variable.other.counter.cgraph"),
    (4, "in", "keyword.control.cgraph"),
    (4, "range", "support.function.builtin.cgraph"),
    (4, "len", "support.function.builtin.cgraph"),
    (4, ":", "punctuation.separator.colon.cgraph"),
    (5, "+=", "keyword.operator.assignment.augmented.cgraph"),
    (5, "relu", "support.function.cgraph"),
    (5, "**", "keyword.operator.arithmetic.cgraph"),
    (5, "if", "keyword.control.cgraph"),
    (5, ">=", "keyword.operator.comparison.cgraph"),
    (5, "and", "keyword.operator.logical.cgraph"),
    (5, "not", "keyword.operator.logical.cgraph"),
    (5, "!=", "keyword.operator.comparison.cgraph"),
    (5, "else", "keyword.control.cgraph"),
    (5, ";", "punctuation.terminator.statement.cgraph"),
    (5, "layer", "entity.name.function.call.cgraph"),
    (5, "0.5", "constant.numeric.cgraph"),
]


@needs_node
def test_keywords_functions_numbers_comments_and_operators_get_their_scopes(engine):
    (lines,) = tokenise(engine, [SMALL])
    rows = SMALL.split("\n")
    found = {
        (k, rows[k][s:e], scopes[-1]) for k, tokens in enumerate(lines) for s, e, scopes in tokens
    }
    assert [e for e in EXPECTED if e not in found] == []


@needs_node
def test_a_look_alike_character_is_marked_invalid(engine):
    (lines,) = tokenise(engine, ["y = x − 1"])
    (minus,) = [scopes for s, e, scopes in lines[0] if s == 6]
    assert minus[-1] == "invalid.illegal.character.cgraph"
