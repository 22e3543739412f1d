"""The grammar compiled into the parser's tables: a build step, not part of a normal run.

Lark reads ``grammars/cgraph.lark`` and computes the LALR(1) tables; :func:`build_tables` turns
them into plain data and :func:`module_text` writes that data as the Python module
``cgraph_cli/parse/tables.py``, which ships in the package. At run time cgraph imports only that
module: it never imports Lark, never reads or writes a cache, and trusts no file outside the
installed package. A test rebuilds the tables from the grammar and requires them to equal the
shipped module, so the two cannot drift apart.

    python cgraph_cli/parse/build.py      # (make tables) rewrite cgraph_cli/parse/tables.py

>>> build_tables()["keywords"]["NAME"]["input"], build_tables()["keywords"]["NAME"]["for"]
('INPUT', 'FOR')
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# How a reduction builds its value. CALL: call the reader method named by the rule; PASS: a
# `?rule` with one child hands it up unchanged; SPLICE: a rule Lark inlines (`_sep`, the
# helpers behind `*` and `+`) hands its children to the parent.
CALL, PASS, SPLICE = 0, 1, 2

ROOT = Path(__file__).resolve().parent.parent.parent
GRAMMAR = ROOT / "grammars" / "cgraph.lark"
MODULE = Path(__file__).resolve().parent / "tables.py"


def lark_parser(**options):
    """Lark's own LALR parser for the grammar (the tests compare cgraph's parser with it)."""
    from lark import Lark

    return Lark(
        GRAMMAR.read_text(encoding="utf-8"), parser="lalr", maybe_placeholders=False, **options
    )


def scanner_parts(terminals, ignore) -> tuple[str, str, dict[str, dict[str, str]]]:
    """The one-token pattern, the pattern of ignorable text alone, and the keywords, from
    Lark's terminal definitions.

    Ignored text (spaces, comments, line continuations) becomes a prefix of every token's
    match, inside a lookahead so that it is atomic: the regular-expression engine cannot
    backtrack into a comment to find a token there, just as Lark's lexer, which matches each
    ignored terminal on its own and whole, never does. A string terminal that a regex terminal
    also matches becomes a keyword of that regex terminal (NAME "input" -> INPUT), as in Lark.
    """
    kept = [t for t in terminals if t.name not in ignore]
    strings = [t for t in kept if t.pattern.type == "str"]
    regexes = [t for t in kept if t.pattern.type == "re"]
    keywords: dict[str, dict[str, str]] = {}
    for r in regexes:
        for s in strings:
            if re.fullmatch(r.pattern.to_regexp(), s.pattern.value):
                keywords.setdefault(r.name, {})[s.pattern.value] = s.name
    keyword_names = {name for kw in keywords.values() for name in kw.values()}
    # Lark's own order: the longest possible match first, so "**" wins over "*".
    ordered = sorted(
        (t for t in kept if t.name not in keyword_names),
        key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name),
    )
    skip = "|".join(t.pattern.to_regexp() for t in terminals if t.name in ignore)
    atomic = f"(?=(?P<_IGNORED>(?:{skip})*))(?P=_IGNORED)"
    body = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in ordered)
    # _BAD, last, takes a character no token starts with, or the end, after the ignored
    # text: the scan stops there at once (a search for the next token from each space of a
    # long run before it would take time quadratic in the run's length).
    return f"{atomic}(?:{body}|(?P<_BAD>[\\s\\S]|\\Z))", atomic, keywords


#: Terminals' patterns (as Lark writes them, groups made non-capturing) -> the same language
#: spelled so that Python's regex engine rejects a character quickly: each alternative starts
#: with a character or a class, which the engine checks before entering it, and no lookahead.
#: tests/test_scanner.py holds the tokens equal to Lark's.
_FASTER = {
    "(?!\\d)\\w+": "[^\\W\\d]\\w*",  # names
    "(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?": (  # numbers
        "[0-9][0-9]*\\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\\.[0-9]+(?:[eE][+-]?[0-9]+)?"
    ),
    # newlines, with blank lines and the next line's indentation: a run of these characters
    # that starts with a line break is exactly that
    "(?:(?:\r\n?|\n)[\t \x0c]*)+": "[\r\n][\r\n\t \x0c]*",
}


def _non_capturing(regexp: str) -> str:
    """``regexp`` with its groups made non-capturing (the quick pattern has one group)."""
    return re.sub(r"(?<!\\)\((?!\?)", "(?:", regexp)


def fast_parts(terminals, ignore) -> tuple[str, dict[str, str], str]:
    """For the quick scan: one pattern whose one group is a token, for ``split`` (which returns
    the spaces and the tokens in one flat list of strings: no match object, no tuple per
    token); the kind of every token written as a fixed string (operators and keywords); and
    the pattern of the ignored text other than spaces (comments, line continuations), which
    the first pattern takes as tokens too, for the scan to drop. The other tokens are names,
    numbers and newlines, told apart by their first character.

    The pattern is written for speed in Python's regex engine, which tries alternatives one
    by one: it takes any character but a space first (so that only spaces are left between
    tokens, and the engine skips them without trying a match: each character is looked at
    once), then the rest of the alternative that starts with it (:func:`_after_first`):
    names first (the commonest token); then the operators, grouped by their first
    character; then numbers and newlines (:data:`_FASTER` spells them); then comments and line
    continuations; last, nothing more: the character alone. Keywords are names to this
    pattern (their kind comes from the strings). No two alternatives can start at the same
    character, so their order changes no match (tests/test_scanner.py holds the tokens equal
    to Lark's)."""
    spaces = [
        t.pattern.to_regexp()
        for t in terminals
        if t.name in ignore and re.fullmatch(t.pattern.to_regexp(), " ")
    ]
    kept = [t for t in terminals if t.name not in ignore]
    strings = {t.pattern.value: t.name for t in kept if t.pattern.type == "str"}
    fixed = {t.name for t in kept if t.pattern.type == "str"}
    for t in kept:  # a terminal that is one of a few strings (AUGOP: "+=" | "-=" ...)
        regexp = t.pattern.to_regexp()
        alternatives = re.fullmatch(r"\(\?:(.*)\)", regexp)
        if t.pattern.type == "re" and alternatives:
            values = [re.sub(r"\\(.)", r"\1", a) for a in alternatives.group(1).split("|")]
            if all(re.fullmatch(r"[^\w\s]+", v) and re.fullmatch(regexp, v) for v in values):
                strings.update(dict.fromkeys(values, t.name))
                fixed.add(t.name)
    words = [v for v in strings if re.fullmatch(r"\w+", v)]  # keywords: names to the pattern
    symbols = [v for v in strings if v not in words]
    assert all(len(v) <= 2 for v in symbols), symbols
    # An operator is its first character and, optionally, a second: one alternative per set of
    # seconds (``[!+\-/<=>]=?``), the rest one class. Where a first character alone is no
    # operator ("!"), the catch-all would have taken it too: the same text either way.
    seconds: dict[str, str] = {}
    for v in sorted(symbols):
        seconds[v[0]] = seconds.get(v[0], "") + v[1:]
    by_seconds: dict[str, str] = {}
    for first, after in seconds.items():
        by_seconds[after] = by_seconds.get(after, "") + first
    operators = [
        f"[{re.escape(firsts)}]" + (f"[{re.escape(after)}]?" if after else "")
        for after, firsts in sorted(by_seconds.items(), key=lambda item: -len(item[0]))
    ]
    others = []  # names, numbers, newlines: the terminals that are patterns
    for t in sorted(kept, key=lambda t: t.name != "NAME"):
        if t.name in fixed:
            continue
        regexp = _non_capturing(t.pattern.to_regexp())
        others.append(_FASTER.get(regexp, regexp))
    # split leaves between tokens what the last alternative does not take: the grammar's spaces
    (space,) = spaces
    assert re.fullmatch(f"(?:{space})+", " \t\x0c"), space
    skipped = [
        _non_capturing(t.pattern.to_regexp())
        for t in terminals
        if t.name in ignore and t.pattern.to_regexp() not in spaces
    ]
    body = [others[0], *operators, *others[1:], *skipped]
    parts = [a for regexp in body for a in _top_level(regexp)]
    pattern = f"([^\\t \\x0c](?:{'|'.join(map(_after_first, parts))}|))"
    from .lexer import possessive

    assert re.compile(possessive(pattern)).groups == 1, pattern
    return pattern, strings, "|".join(skipped)


def _top_level(regexp: str) -> list[str]:
    """``regexp``'s alternatives (split at each ``|`` outside groups and classes).

    >>> _top_level("[0-9]+(?:a|b)|[|]x")
    ['[0-9]+(?:a|b)', '[|]x']
    """
    parts = re.findall(r"\\.|\[(?:\\.|[^\]\\])*\]|[()|]|[^\\\[()|]+", regexp)
    assert "".join(parts) == regexp, regexp
    out, depth = [""], 0
    for part in parts:
        depth += (part == "(") - (part == ")")
        if part == "|" and not depth:
            out.append("")
        else:
            out[-1] += part
    return out


def _after_first(regexp: str) -> str:
    r"""An alternative of the quick pattern as it is written there: its first character
    already taken (by a class that takes any character but a space, which the engine then
    looks for before trying a match, so that spaces are skipped at C speed), the rest tried
    only where the character taken was the alternative's first (a lookbehind of one
    character); a trailing repetition possessive (nothing follows it to give characters
    back to). Where no alternative goes on, the pattern's last, empty, takes the character
    alone, as the catch-all did.

    >>> _after_first(r"[^\W\d]\w*"), _after_first(r"#[^\r\n]*"), _after_first(r"[\(\)]")
    ('(?<=[^\\W\\d])\\w*+', '(?<=#)[^\\r\\n]*+', '(?<=[\\(\\)])')
    """
    first = re.match(r"\[(?:\\.|[^\]\\])*\]|\\.|[^\\\[(]", regexp)
    assert first is not None and not re.match(r"[*+?{]", regexp[first.end() :]), regexp
    assert not any(re.match(first.group(), c) for c in " \t\x0c"), regexp
    rest = regexp[first.end() :]
    if re.fullmatch(r"(?:\[(?:\\.|[^\]\\])*\]|\\.|[^\\\[(])\*", rest):
        rest += "+"
    return f"(?<={first.group()}){rest}"


def build_tables() -> dict:
    """Compile the grammar with Lark and flatten the result into plain data:

    ``states[s][symbol]`` is a state (shift or goto, >= 0) or ``-1 - r`` (reduce by rule r);
    ``rules[r]`` is ``(mode, callback name, size, origin, flatten)``, where ``flatten`` says the
    children may hold spliced lists or ``_``-named tokens to drop (as Lark's tree builder
    does); ``pattern`` matches one token after any ignored text, ``trailer`` ignored text
    alone; ``keywords`` maps a terminal and a text to the keyword terminal it really is.
    """
    from lark.parsers.lalr_analysis import Shift

    # Two entry points: a whole program (the reference the tests hold the driver to), and one
    # statement, which the driver parses statement by statement (see driver.py).
    parser = lark_parser(start=["start", "stmt"])
    table = parser.parser.parser.parser.parse_table  # frontend -> LALR_Parser -> _Parser
    # Lark numbers states and rules in an order that varies from run to run (it follows set
    # iteration, which string hashing randomises): number them canonically instead, in the
    # order a breadth-first walk from the start states meets them, symbols sorted.
    starts = [table.start_states["start"], table.start_states["stmt"]]
    number = {s: k for k, s in enumerate(starts)}
    queue = list(starts)
    index: dict = {}
    rules: list = []
    states = []
    for state in queue:
        actions = {}
        for sym, (action, arg) in sorted(table.states[state].items(), key=lambda kv: str(kv[0])):
            if action is Shift:
                if arg not in number:
                    number[arg] = len(number)
                    queue.append(arg)
                actions[str(sym)] = number[arg]
            else:
                if arg not in index:
                    index[arg] = len(rules)
                    rules.append(_rule(arg))
                actions[str(sym)] = -1 - index[arg]
        states.append(actions)
    assert len(states) == len(table.states), "a state no walk from the start reaches"
    terminals, ignore = parser.lexer_conf.terminals, parser.lexer_conf.ignore
    pattern, trailer, keywords = scanner_parts(terminals, ignore)
    fast, strings, skipped = fast_parts(terminals, ignore)
    return {
        "states": states,
        "rules": rules,
        "start": 0,
        "end": number[table.end_states["start"]],
        "stmt_start": 1,
        "stmt_end": number[table.end_states["stmt"]],
        "pattern": pattern,
        "trailer": trailer,
        "keywords": keywords,
        "fast_pattern": fast,
        "fast_ignored": skipped,
        "strings": strings,
    }


def _rule(rule) -> tuple[int, str | None, int, str, bool]:
    origin = str(rule.origin.name)
    names = [str(s.name) for s in rule.expansion]
    flatten = any(n.startswith("_") for n in names)
    if origin.startswith("_"):
        return SPLICE, None, len(names), origin, flatten
    if rule.options.expand1 and not rule.alias:
        # A `?rule` without an alias builds a tree node when it has several children; the
        # grammar never does that, so each such rule has exactly one child to pass up.
        assert len(names) == 1, f"?{origin} with {names} would build a tree node"
        return PASS, None, 1, origin, False
    return CALL, str(rule.alias or origin), len(names), origin, flatten


def module_text(tables: dict) -> str:
    """The tables as the source of ``cgraph_cli/parse/tables.py``."""
    lines = [
        '"""The parser\'s tables, generated from grammars/cgraph.lark by cgraph_cli/parse/build.py.',
        "",
        "Do not edit: `make tables` writes this file, and a test rebuilds it from the grammar",
        'with Lark and requires it to be equal."""',
        "",
        "# fmt: off",
        f"CALL, PASS, SPLICE = {CALL}, {PASS}, {SPLICE}",
    ]
    for key, value in tables.items():
        if isinstance(value, list):  # one state or rule a line
            text = "[\n" + "".join(f"    {item!r},\n" for item in value) + "]"
        else:
            text = repr(value)
        lines.append(f"{key.upper()} = {text}")
    return "\n".join(lines) + "\n"


def main() -> None:
    text = module_text(build_tables())
    MODULE.write_text(text, encoding="utf-8")
    print(f"wrote {MODULE.relative_to(ROOT)} ({len(text):,} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
