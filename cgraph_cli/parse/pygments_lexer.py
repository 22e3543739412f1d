"""A Pygments lexer for cgraph's language, registered as ``cgraph`` through the
``pygments.lexers`` entry point (pyproject.toml), so that ``pygmentize -l cgraph FILE.cg``, MkDocs
(```` ```cgraph ```` blocks) and Sphinx highlight cgraph programs once cgraph is installed.

It follows the grammar (grammars/cgraph.lark): its keywords, its operators, its numbers (ASCII
digits only), and the functions of the op table (core/ops.py), the one list of them. It colours,
it does not check: a program it colours may still be refused by the parser.

>>> from pygments.token import Name
>>> [(t, v) for t, v in CgraphLexer().get_tokens("y = sin(x)") if t in Name]
[(Token.Name, 'y'), (Token.Name.Builtin, 'sin'), (Token.Name, 'x')]
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    Text,
    Whitespace,
)

from ..core.ops import FUNCTIONS

# The grammar's keywords; `and`, `or`, `not` are operators that read as words.
KEYWORDS = ("input", "def", "return", "for", "in", "if", "else")
OPERATOR_WORDS = ("and", "or", "not")
# The names a loop's bound may call: range(len(xs)), range(shape(x, 1)).
LOOP_BUILTINS = ("range", "len", "shape")


class CgraphLexer(RegexLexer):
    """cgraph programs (``.cg``): statements, ``input`` declarations, ``def``, ``for``,
    ``a if c else b``, numbers, tensors, comments."""

    name = "cgraph"
    aliases = ["cgraph"]
    filenames = ["*.cg"]
    mimetypes = ["text/x-cgraph"]
    url = "https://github.com/cgraph-dev/cgraph"

    tokens = {
        "root": [
            (r"[^\S\n]+", Whitespace),
            (r"\n", Whitespace),
            (r"\\\n", Text),  # a line continued on the next
            (r"#.*$", Comment.Single),
            (r"(def)(\s+)((?!\d)\w+)", bygroups(Keyword, Whitespace, Name.Function)),
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(OPERATOR_WORDS, suffix=r"\b"), Operator.Word),
            (words(LOOP_BUILTINS, suffix=r"\b(?=\s*\()"), Name.Builtin),
            (words(sorted(FUNCTIONS), suffix=r"\b(?=\s*\()"), Name.Builtin),
            (r"([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", Number.Float),
            (r"\*\*|[-+*/]=|<=|>=|==|!=|[-+*/^@<>=]", Operator),
            (r"[()\[\],;:]", Punctuation),
            (r"(?!\d)\w+", Name),
        ],
    }
