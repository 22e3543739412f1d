"""The Pygments lexer for cgraph's language (cgraph_cli/parse/pygments_lexer.py): every sample
and every ```cgraph block of the docs tokenises without an error token, and the words of the
language get their kinds."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygments.token import Comment, Error, Keyword, Name, Number, Operator

from cgraph_cli.core.ops import FUNCTIONS
from cgraph_cli.parse.pygments_lexer import CgraphLexer

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "samples").glob("*.cg"))


def tokens(text: str) -> list[tuple[object, str]]:
    return [(t, v) for t, v in CgraphLexer().get_tokens(text) if v.strip()]


def errors(text: str) -> list[str]:
    return [v for t, v in CgraphLexer().get_tokens(text) if t in Error]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_every_sample_tokenises_without_an_error(sample):
    assert errors(sample.read_text(encoding="utf-8")) == [], sample.name


def test_the_samples_are_all_there():
    assert len(SAMPLES) >= 19 and (ROOT / "samples" / "rnn.cg") in SAMPLES


def test_what_the_language_has_no_place_for_is_an_error():
    """Characters no rule takes (a `$`, a `{`, a look-alike minus) come out as error tokens, so
    the sample test above can fail."""
    assert errors("y = $x + {1} − 2") == ["$", "{", "}", "−"]


def test_each_kind_of_word():
    program = (
        "def layer(x, W):\n    return tanh(W @ x)\n"
        "input xs = [[1, 2]], n = 2.5e-3  # data\n"
        "for t in range(len(xs)):\n    h = layer(xs[t], xs) if not n > 0 else -h ** 2\n"
    )
    kinds: dict[str, object] = {}
    for kind, text in tokens(program):
        kinds.setdefault(text, kind)  # a word's first appearance
    assert kinds["def"] is Keyword and kinds["input"] is Keyword and kinds["return"] is Keyword
    assert kinds["for"] is Keyword and kinds["in"] is Keyword and kinds["if"] is Keyword
    assert kinds["not"] is Operator.Word and kinds["**"] is Operator and kinds["@"] is Operator
    assert kinds["layer"] is Name.Function  # its definition's name (its calls are names)
    assert kinds["tanh"] is Name.Builtin and kinds["range"] is Name.Builtin
    assert kinds["len"] is Name.Builtin and kinds["xs"] is Name
    assert kinds["2.5e-3"] is Number.Float and kinds["# data"] is Comment.Single


def test_every_function_of_the_op_table_is_a_builtin():
    for name in FUNCTIONS:
        assert tokens(f"y = {name}(x)")[2] == (Name.Builtin, name), name


def test_a_function_name_not_called_is_a_name():
    """`sum = 1` and `max` as a variable are names: only a call is a function."""
    assert tokens("sum = max + 1")[0] == (Name, "sum")
    assert tokens("sum = max + 1")[2] == (Name, "max")


def test_names_in_any_script():
    assert errors("θ_0 = α * x") == [] and tokens("θ_0 = α")[0] == (Name, "θ_0")


def test_the_entry_point_names_the_lexer():
    """pyproject.toml registers the class under `pygments.lexers` (tests/test_install.py runs
    `pygmentize -l cgraph` in an installed cgraph)."""
    import importlib

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    target = pyproject["project"]["entry-points"]["pygments.lexers"]["cgraph"]
    module, _, name = target.partition(":")
    assert getattr(importlib.import_module(module), name) is CgraphLexer
    assert CgraphLexer.name == "cgraph" and CgraphLexer.filenames == ["*.cg"]
