"""The grammar, compiled by Lark into LALR(1) tables and a scanner. The only module that imports
lark, and only when the tables are not cached yet.

Lark reads ``grammars/cgraph.lark`` and computes the parse tables; this module turns them into
plain data (:class:`Tables`): per state, the next state or the rule to reduce by, and per rule
the parser callback to call. The data is cached as JSON in the user's cache folder, keyed by a
checksum of the grammar, so a normal start never imports Lark (about 70 ms saved per command) and
never unpickles anything.

>>> tables().keywords
{'NAME': {'input': 'INPUT'}}
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

FORMAT = 1  # bump when the JSON layout or the meaning of a field changes

# How a reduction builds its value. CALL: call the reader method named by the rule; PASS: a
# `?rule` with one child hands it up unchanged; SPLICE: a rule Lark inlines (`_sep`, the
# helpers behind `*` and `+`) hands its children to the parent.
CALL, PASS, SPLICE = 0, 1, 2


def grammar_path() -> Path:
    """The grammar file: inside the installed package, or ``grammars/`` in a source checkout."""
    here = Path(__file__).resolve().parent
    packaged = here / "grammars" / "cgraph.lark"
    return packaged if packaged.is_file() else here.parent / "grammars" / "cgraph.lark"


@dataclass(frozen=True)
class Tables:
    """A compiled grammar, as plain data.

    ``states[s][symbol]`` is a state (shift or goto, >= 0) or ``-1 - r`` (reduce by rule r).
    ``rules[r]`` is ``(mode, callback name, size, origin, flatten)``; ``flatten`` says the
    children may hold spliced lists or ``_``-named tokens to drop (as Lark's tree builder does).
    ``pattern`` matches one token, after any ignored text; ``keywords`` maps a terminal and a
    text to the keyword terminal it really is (NAME "input" -> INPUT).
    """

    states: list[dict[str, int]]
    rules: list[tuple[int, str | None, int, str, bool]]
    start: int
    end: int
    pattern: str
    trailer: str
    keywords: dict[str, dict[str, str]]

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **self.__dict__}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Tables:
        data = json.loads(text)
        if data.pop("format") != FORMAT:
            raise ValueError("old table format")
        data["rules"] = [tuple(r) for r in data["rules"]]
        return cls(**data)


def scanner_parts(terminals, ignore) -> tuple[str, str, dict[str, dict[str, str]]]:
    """The one-token pattern, the trailing-ignorable pattern, and the keywords, from Lark's
    terminal definitions: ignored terminals become a prefix every match skips; a string
    terminal that a regex terminal also matches becomes a keyword of that regex terminal."""
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
    body = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in ordered)
    return f"(?:{skip})*(?:{body})", f"(?:{skip})*", keywords


def lark_parser(transformer=None, lexer=None):
    """Lark's own LALR parser for the grammar (for the tests that compare against it)."""
    from lark import Lark

    return Lark(
        grammar_path().read_text(encoding="utf-8"), parser="lalr", maybe_placeholders=False,
        transformer=transformer, **({"lexer": lexer} if lexer else {}),
    )


def build_tables() -> Tables:
    """Compile the grammar with Lark and flatten the result into :class:`Tables`."""
    from lark.parsers.lalr_analysis import Shift

    parser = lark_parser()
    table = parser.parser.parser.parser.parse_table  # frontend -> LALR_Parser -> _Parser
    index: dict = {}
    rules = []
    for state_actions in table.states.values():
        for action, arg in state_actions.values():
            if action is not Shift and arg not in index:
                index[arg] = len(rules)
                rules.append(_rule(arg))
    states = [
        {sym: (arg if action is Shift else -1 - index[arg]) for sym, (action, arg) in actions.items()}
        for _, actions in sorted(table.states.items())
    ]
    assert [s for s, _ in sorted(table.states.items())] == list(range(len(states)))
    pattern, trailer, keywords = scanner_parts(parser.lexer_conf.terminals, parser.lexer_conf.ignore)
    return Tables(
        states, rules, table.start_states["start"], table.end_states["start"],
        pattern, trailer, keywords,
    )


def _rule(rule) -> tuple[int, str | None, int, str, bool]:
    origin = rule.origin.name
    names = [s.name for s in rule.expansion]
    flatten = any(n.startswith("_") for n in names)
    if origin.startswith("_"):
        return SPLICE, None, len(names), origin, flatten
    if rule.options.expand1 and not rule.alias:
        # A `?rule` without an alias builds a tree node when it has several children; the
        # grammar never does that, so each such rule has exactly one child to pass up.
        assert len(names) == 1, f"?{origin} with {names} would build a tree node"
        return PASS, None, 1, origin, False
    return CALL, rule.alias or origin, len(names), origin, flatten


def _cache_path(grammar: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = f"{zlib.crc32(grammar.encode()):08x}-{len(grammar)}"  # hashlib would cost 7 ms to import
    return Path(base) / "cgraph" / f"tables-v{FORMAT}-{key}.json"


def tables() -> Tables:
    """The grammar's tables: from the cache when it is current, else built and cached."""
    grammar = grammar_path().read_text(encoding="utf-8")
    path = _cache_path(grammar)
    try:
        return Tables.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError):
        pass  # missing, unreadable or stale: rebuild
    built = build_tables()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(built.to_json(), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        pass  # a read-only home still works, only slower to start
    return built
