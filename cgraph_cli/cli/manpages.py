"""Manual pages from the click commands: cgraph(1), and cgraph-COMMAND(1) for each command.

Each page is troff with the man macros: NAME, SYNOPSIS, DESCRIPTION (the docstring),
OPTIONS (every option, with its help, choices, range and default), EXAMPLES (the docstring's
``Examples:`` block), EXIT STATUS (the epilog's exit codes) and SEE ALSO. ``make man``
writes them to ``docs/man/`` (shipped in the sdist), and ``cgraph help COMMAND --man``
prints one, for ``| man -l -``.

Written here rather than taken from click-man, which is unmaintained, writes no EXAMPLES or
EXIT STATUS, and leaves ``-``, ``'`` and non-ASCII text for groff to misprint.

    python -m cgraph_cli.cli.manpages docs/man
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import click

SECTION = "1"
ARGUMENTS = {
    "args": "SOURCE is program text, a file path, '-' for standard input, or sample:NAME "
    "(cgraph samples lists them). The NAME=VALUE pairs after it bind inputs: a number, a "
    "tensor as a nested list (W='[[1,2],[3,4]]'), or an array file (W=@w.npy).",
}
ENVIRONMENT = [
    ("NO_COLOR", "When set, --color auto does not colour the output."),
    ("FORCE_COLOR", "When set, --color auto colours the output even when it is not a terminal."),
    ("CGRAPH_DEBUG", "When set, an internal error shows its Python traceback."),
]
# troff spellings of the characters it would print otherwise: a hyphen for -, a curly quote
# for ', a circumflex for ^; what a reader copies from a page must run.
_TROFF = {"\\": "\\e", "-": "\\-", "'": "\\(aq", "`": "\\(ga", "^": "\\(ha", "~": "\\(ti"}


def escape(text: str) -> str:
    """Text for troff: its special characters spelt out, non-ASCII as ``\\[uXXXX]``.

    >>> print(escape("∂g/∂x = -3"))
    \\[u2202]g/\\[u2202]x = \\-3
    """
    return "".join(
        _TROFF.get(ch) or (ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]") for ch in text
    )


def _line(text: str) -> str:
    """A text line: one that starts with a dot or quote would be read as a request."""
    return "\\&" + text if text[:1] in (".", "'") else text


def _inline(text: str) -> str:
    """Running text: `code` in bold."""
    parts = re.split(r"`([^`]*)`", text)
    return "".join(f"\\fB{escape(p)}\\fR" if i % 2 else escape(p) for i, p in enumerate(parts))


def _blocks(doc: str | None) -> list[tuple[bool, list[str]]]:
    """The docstring's paragraphs: (verbatim, lines); click's ``\\b`` marks a verbatim one."""
    text = inspect.cleandoc(doc or "").split("\f")[0]
    blocks = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        if lines[0].strip() == "\b":
            blocks.append((True, lines[1:]))
        elif block.strip():
            blocks.append((False, [" ".join(ln.strip() for ln in lines)]))
    return blocks


def _is_examples(verbatim: bool, lines: list[str]) -> bool:
    if not verbatim or not lines:
        return False
    return lines[0].strip() == "Examples:" or all(
        ln.strip().startswith("cgraph") for ln in lines if ln.strip()
    )


def _examples(doc: str | None) -> list[str]:
    lines = [
        ln
        for verbatim, block in _blocks(doc)
        if _is_examples(verbatim, block)
        for ln in block
        if ln.strip() != "Examples:"
    ]
    return inspect.cleandoc("\n".join(lines)).split("\n") if lines else []


def _verbatim(lines: list[str]) -> list[str]:
    body = inspect.cleandoc("\n".join(lines)).split("\n")
    return [".PP", ".RS 4", ".nf", *(_line(escape(ln)) for ln in body), ".fi", ".RE"]


def _description(doc: str | None, skip: int = 0) -> list[str]:
    out = []
    for verbatim, lines in _blocks(doc)[skip:]:
        if _is_examples(verbatim, lines):
            continue
        out += _verbatim(lines) if verbatim else [".PP", _line(_inline(lines[0]))]
    return out[1:] if out[:1] == [".PP"] else out


def _metavar(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param.type, click.Choice) and not param.metavar:
        return "|".join(map(str, param.type.choices))
    return param.make_metavar(ctx)


_UNSET = click.Option(["--unset"]).default  # None before click 8.3, a sentinel since


def _default(param: click.Option, ctx: click.Context) -> str | None:
    value = param.get_default(ctx, call=False)
    if param.is_flag or param.multiple or callable(value) or value is _UNSET:
        return None
    return None if value in (None, "", ()) else str(value)


def _option_entry(param: click.Option, ctx: click.Context) -> list[str]:
    """An option as a ``.TP`` paragraph: its names and value, then its help, the range of its
    values and its default."""
    # Short names first: click 8.2.0 builds the help option from a set, in any order.
    opts = sorted(param.opts, key=lambda name: name.startswith("--")) + param.secondary_opts
    names = ", ".join(f"\\fB{escape(name)}\\fR" for name in opts)
    if not param.is_flag and not param.count:
        names += f" \\fI{escape(_metavar(param, ctx))}\\fR"
    text = [param.help or ""]
    describe = getattr(param.type, "_describe_range", None)
    if describe and describe():  # a range with no bound (any whole number) says nothing
        text.append(f"Range: {describe()}.")
    default = _default(param, ctx)
    if default is not None:
        text.append(f"Default: `{default}`.")
    return [".TP", names, _line(_inline(" ".join(t for t in text if t)))]


def _exit_status(epilog: str | None) -> list[str]:
    out, entry = [], None
    for ln in (epilog or "").split("\n"):
        match = re.match(r"^ {2}(\d+) {2}(.*)$", ln)
        if match:
            entry = [match[1], match[2].strip()]
            out.append(entry)
        elif entry and ln.startswith("     "):
            entry[1] += " " + ln.strip()
    lines = []
    for code, meaning in out:
        lines += [".TP", f".B {code}", _line(_inline(meaning))]
    return lines


def _head(name: str, summary: str, version: str) -> list[str]:
    title = escape(name.upper())
    return [
        f'.TH {title} {SECTION} "" "cgraph {escape(version)}" "cgraph manual"',
        ".nh",  # sample:NAME and option names are not to be hyphenated,
        ".ad l",  # nor lines stretched to the margin
        ".SH NAME",
        f"{escape(name)} \\- {escape(summary.rstrip('.'))}",
    ]


def _see_also(names: list[str]) -> list[str]:
    refs = [f".BR {escape(n)} ({SECTION})," for n in names]
    refs[-1] = refs[-1].rstrip(",")
    return [".SH SEE ALSO", *refs]


def page_name(command: str | None) -> str:
    """The page of a command: ``cgraph-grad``; ``cgraph`` for the program itself.

    >>> page_name("grad"), page_name(None)
    ('cgraph-grad', 'cgraph')
    """
    return "cgraph" if command is None else f"cgraph-{command}"


def _root_context() -> tuple[click.Context, click.Group]:
    from .group import main

    return click.Context(main, info_name="cgraph", **main.context_settings), main


def _command(group: click.Group, root: click.Context, name: str) -> click.Command:
    cmd = group.get_command(root, name)
    if cmd is None:
        raise ValueError(f"cgraph has no command {name!r}")
    return cmd


def man_page(command: str | None = None) -> str:
    """The troff text of cgraph(1) (``command`` None) or cgraph-COMMAND(1).

    >>> man_page("grad").startswith(".TH CGRAPH\\\\-GRAD 1")
    True
    """
    from .. import __version__

    root, group = _root_context()
    if command is None:
        return "\n".join(_program_page(root, group, __version__)) + "\n"
    cmd = _command(group, root, command)
    ctx = click.Context(cmd, info_name=command, parent=root)
    lines = _head(page_name(command), cmd.get_short_help_str(limit=200), __version__)
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    lines += [".SH SYNOPSIS", f".B cgraph {escape(command)}", _line(escape(usage))]
    lines += [".SH DESCRIPTION", *_description(cmd.help)]
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Argument) and param.name in ARGUMENTS:
            lines += [".PP", _line(_inline(ARGUMENTS[param.name]))]
    lines += [".SH OPTIONS"]
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Option) and not param.hidden:
            lines += _option_entry(param, ctx)
    examples = _examples(cmd.help)
    if examples:
        lines += [".SH EXAMPLES", ".nf", *(_line(escape(ln)) for ln in examples), ".fi"]
    lines += [".SH EXIT STATUS", *_exit_status(cmd.epilog)]
    others = [page_name(None)] + [page_name(n) for n in group.list_commands(root) if n != command]
    lines += _see_also(others)
    return "\n".join(lines) + "\n"


def _program_page(root: click.Context, group: click.Group, version: str) -> list[str]:
    summary = _blocks(group.help)[0][1][0]
    lines = _head("cgraph", summary, version)
    usage = " ".join(group.collect_usage_pieces(root))
    lines += [".SH SYNOPSIS", ".B cgraph", _line(escape(usage))]
    lines += [".SH DESCRIPTION", *_description(group.help, skip=1)]  # the first line is NAME
    lines += [".SH COMMANDS"]
    for name in group.list_commands(root):
        cmd = _command(group, root, name)
        lines += [
            ".TP",
            f"\\fBcgraph {escape(name)}\\fR",
            _line(_inline(cmd.get_short_help_str(limit=200))),
            f"See \\fB{escape(page_name(name))}\\fR({SECTION}).",
        ]
    lines += [".SH OPTIONS"]
    for param in group.get_params(root):
        if isinstance(param, click.Option) and not param.hidden:
            lines += _option_entry(param, root)
    lines += [".SH EXAMPLES", ".nf", *(_line(escape(ln)) for ln in _examples(group.help)), ".fi"]
    lines += [".SH EXIT STATUS", *_exit_status(group.epilog)]
    lines += [".SH ENVIRONMENT"]
    for name, meaning in ENVIRONMENT:
        lines += [".TP", f".B {escape(name)}", _line(_inline(meaning))]
    return lines + _see_also([page_name(n) for n in group.list_commands(root)])


def man_pages() -> dict[str, str]:
    """Every page, by file name: ``cgraph.1``, ``cgraph-eval.1``...

    >>> "cgraph-grad.1" in man_pages()
    True
    """
    root, group = _root_context()
    names = [None, *group.list_commands(root)]
    return {f"{page_name(n)}.{SECTION}": man_page(n) for n in names}


def write_man_pages(folder: str | Path) -> list[Path]:
    """Write every page into ``folder`` and remove pages of commands that no longer exist.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as where:
    ...     [p.name for p in write_man_pages(where)][:2]
    ['cgraph.1', 'cgraph-check.1']
    """
    from ..core.errors import UsageError
    from ..data.outputs import write_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pages = man_pages()
    for old in folder.glob(f"cgraph*.{SECTION}"):
        if old.name not in pages and _is_ours(old):
            old.unlink()
    written = []
    for name, text in pages.items():
        path = folder / name
        if path.exists() and not _is_ours(path):
            raise UsageError(f"{path} is not a page cgraph wrote: refusing to overwrite it")
        write_file(str(path), text.encode("utf-8"))
        written.append(path)
    return written


def _is_ours(path: Path) -> bool:
    """A page this module wrote: its first line is the title line of cgraph's manual."""
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b".TH CGRAPH") and b'"cgraph manual"' in first


if __name__ == "__main__":
    for path in write_man_pages(sys.argv[1] if len(sys.argv) > 1 else "docs/man"):
        print(path)
