"""The statements of a program with loops or functions, nested by indentation, read as
Python reads it (the driver runs them, :meth:`cgraph_cli.parse.driver.Driver._run_blocks`)."""

from __future__ import annotations

import re

from ..core.errors import ParseError, Source, Span
from .lexer import CODES

_STATEMENT = re.compile("[^\n;]+")  # in the string of token kinds: one statement
_HEADERS = (CODES["FOR"], CODES["DEF"])  # a loop's or a function's header starts with one
_DEF = CODES["DEF"]


def blocks(
    tokens, codes: str, source: Source
) -> tuple[list[tuple[int, int]], list[int], dict[int, ParseError]]:
    """The statements of a program with loops, as token ranges; for each, the index of the
    statement after its body (a loop header's) or its own index (any other statement); and the
    indentation error met at a statement, if any (raised when the parse reaches it, so an
    earlier syntax error is reported first; index ``len(statements)``: at the end).

    Indentation is read as Python reads it, from the first loop's or function's header on (before it, lines
    may be indented as they like, as in a program without loops): a loop's body is the lines
    below its header indented deeper (or the statements after its colon, on the same line); a
    line indented less must return to an enclosing level; tabs and spaces must agree. A line's
    indentation is the text after the last line break of the newline token before it."""
    stmts: list[tuple[int, int]] = []
    indents: list[str | None] = []  # per statement: its line's indentation; None: not first
    text = source.text
    colon = CODES["COLON"]
    for m in _STATEMENT.finditer(codes):
        i, j = m.span()
        if i == 0 or codes[i - 1] == "\n":
            if i == 0:
                first = tokens[0][2]
                begins = max(text.rfind("\n", 0, first), text.rfind("\r", 0, first)) + 1
                indent: str | None = text[begins:first]
            else:
                nl = tokens[i - 1][1]
                indent = nl[max(nl.rfind("\n"), nl.rfind("\r")) + 1 :]
        else:
            indent = None
        c = codes.find(colon, i, j) if codes[i] in _HEADERS else -1
        if c >= 0 and c + 1 < j:  # for t in range(3): h = h * 2
            stmts += [(i, c + 1), (c + 1, j)]
            indents += [indent, "\0"]  # "\0": the body on the header's line
        else:
            stmts.append((i, j))
            indents.append(indent)
    ends = list(range(len(stmts)))
    errors: dict[int, ParseError] = {}
    levels: list[str] = []  # the indentations of the open blocks; empty before the first loop
    opened: list[int] = []  # the headers whose bodies are open
    expect = -1  # a header just read, whose body must come next, deeper
    inline = False  # the open body is on its header's line
    line = ""  # the indentation of the line being read

    def fail(k: int, message: str, hints=()) -> ParseError:
        i = stmts[min(k, len(stmts) - 1)][0]
        span = Span(tokens[i][2], tokens[i][3])
        return ParseError(message, span, source, hints=list(hints))

    def no_body(k: int) -> ParseError:
        what = "function's" if codes[stmts[k][0]] == _DEF else "loop's"
        return fail(
            k, f"expected an indented block after the {what} header", ["indent its body below it"]
        )

    for k, indent in enumerate(indents):
        if indent == "\0":
            expect, inline = -1, True
        elif indent is not None:
            line = indent
            if inline:  # the line after a one-line body closes it
                ends[opened.pop()] = k
                inline = False
            if not levels and expect < 0:
                pass  # before the first loop: indentation does not matter
            elif expect >= 0:
                current = levels[-1]
                if not (indent.startswith(current) and len(indent) > len(current)):
                    if not (indent.startswith(current) or current.startswith(indent)):
                        errors[k] = fail(k, "inconsistent use of tabs and spaces in indentation")
                    else:
                        errors[k] = no_body(expect)
                    break
                levels.append(indent)
                expect = -1
            elif indent != levels[-1]:
                current = levels[-1]
                if not (indent.startswith(current) or current.startswith(indent)):
                    errors[k] = fail(k, "inconsistent use of tabs and spaces in indentation")
                    break
                if indent.startswith(current):
                    errors[k] = fail(
                        k,
                        "unexpected indent",
                        ["only the body of a loop or a function is indented"],
                    )
                    break
                while len(levels) > 1 and levels[-1] != indent and levels[-1].startswith(indent):
                    levels.pop()
                    ends[opened.pop()] = k
                if levels[-1] != indent:
                    if opened or not levels[-1].startswith(indent):
                        errors[k] = fail(k, "unindent does not match any outer indentation level")
                        break
                    levels[-1] = indent  # out of every loop, back to the program's top level
        elif expect >= 0:
            errors[k] = no_body(expect)
            break
        if codes[stmts[k][0]] in _HEADERS:
            if not levels:
                levels.append(line)
            expect = k
            opened.append(k)
    else:
        if expect >= 0:
            errors[len(stmts)] = no_body(expect)
    while opened:  # the program's end closes every open body
        ends[opened.pop()] = len(stmts)
    return stmts, ends, errors
