"""Where a command's output goes and how it looks: the one place that decides colour, width,
the ``-o`` file, notes on stderr and progress bars.

Colour follows ``--color auto|always|never``; with ``auto``, ``FORCE_COLOR`` turns it on,
``NO_COLOR`` off, and otherwise it is on for a terminal only (an ``-o`` file is coloured by
``--color always`` only). When standard output is not a
terminal (a pipe, a file, a CI log), nothing is cut to a width or wrapped, and no line ends
in spaces: the output is the same whatever the width of the terminal that started it.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager

import click


class Settings:
    """What the common options said, for the command being run (a plain class: no dataclass
    at start-up)."""

    __slots__ = ("color", "quiet", "output")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Back to the defaults, before each command (a test runs many in one process)."""
        self.color = "auto"  # auto, always, never
        self.quiet = False
        self.output: str | None = None  # -o FILE; None or "-": standard output
        from ..data.outputs import forget_all

        forget_all()


settings = Settings()

#: What the command made that the ``cgraph`` process keeps to its end (a list, set by
#: :func:`cgraph_cli.cli.group.run`, which ends the process without freeing it): a long
#: program's graph freed node by node as the command returns costs milliseconds for nothing.
#: None where commands run in a process that goes on (tests, a program calling ``main``).
kept: list | None = None


def keep(*made: object) -> None:
    """Keep ``made`` to the process's end in the ``cgraph`` command (see :data:`kept`);
    elsewhere, nothing.

    >>> keep([1.0] * 3) is None and kept is None
    True
    """
    if kept is not None:
        kept.extend(made)


def color_for(stream) -> bool:
    """Whether to colour what goes to ``stream``. Standard output means the -o file when there
    is one, which only ``--color always`` colours."""
    if settings.color != "auto":
        return settings.color == "always"
    if stream is sys.stdout and _to_file():
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return _isatty(stream)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def style(text: str, stream=None, **kw) -> str:
    """``click.style`` when ``stream`` (default: standard output) is coloured."""
    return click.style(text, **kw) if color_for(stream or sys.stdout) else text


def _to_file() -> bool:
    return settings.output not in (None, "-")


def write_text(text: str, nl: bool = True) -> None:
    """Text to the -o file, or to standard output."""
    if _to_file():
        write_bytes((text + ("\n" if nl else "")).encode("utf-8"))
    else:
        click.echo(text, nl=nl, color=color_for(sys.stdout))


def write_bytes(data: bytes, target: str | None = None) -> None:
    """Bytes to ``target`` (default: the -o file), or to standard output."""
    target = settings.output if target is None else target
    if target in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    from ..data.outputs import write_file

    write_file(target, data)


def write_rich(renderable, min_width: int = 0, err: bool = False) -> None:
    """A rich renderable (a table, a tree) to standard output or the -o file (``err``:
    standard error). On a terminal it fits the terminal (wider if ``min_width`` says the
    renderable needs it); elsewhere it is laid out at its natural width, with no trailing
    spaces."""
    from rich.console import Console

    stream = sys.stderr if err else sys.stdout
    color = color_for(stream)
    # no_color: rich would also read NO_COLOR itself, and drop the colours --color always asks for
    if (err or not _to_file()) and _isatty(stream):
        console = Console(
            stderr=err,
            highlight=False,
            color_system="auto" if color else None,
            force_terminal=color,
            no_color=not color,
        )
        console.width = max(console.width, min_width)
        console.print(renderable)
        return
    import io

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        highlight=False,
        width=max(min_width, 10_000),
        color_system="standard" if color else None,
        force_terminal=color,
        no_color=not color,
        soft_wrap=False,
    )
    console.print(renderable)
    lines = buffer.getvalue().split("\n")
    text = "\n".join(map(_rstrip, lines)).rstrip("\n")
    if err:
        click.echo(text, err=True, color=color)
    else:
        write_text(text)


def laid_out_plainly() -> bool:
    """Whether :func:`write_rich` would lay a table out at its natural width, with no
    colour: the output is not a terminal (or is the -o file), and not coloured."""
    return (_to_file() or not _isatty(sys.stdout)) and not color_for(sys.stdout)


_CODE_AT_END = r"\x1b\[[0-9;]*m\Z"  # a pattern: compiled (and cached) by re on first use


def _rstrip(line: str) -> str:
    r"""``line`` without spaces at its end, even among colour codes (kept).

    >>> _rstrip("ok  \x1b[0m  \x1b[0m "), _rstrip("x   ")
    ('ok\x1b[0m\x1b[0m', 'x')
    """
    codes = []
    line = line.rstrip(" ")
    while (match := re.search(_CODE_AT_END, line)) is not None:
        codes.append(match.group())
        line = line[: match.start()].rstrip(" ")
    return line + "".join(reversed(codes))


def note(text: str) -> None:
    """A line for the user on standard error (``note: ...``, ``wrote FILE``); -q silences it."""
    if not settings.quiet:
        from ..core.errors import visible

        click.echo(visible(text), err=True)


@contextmanager
def progress(total: int | None, what: str, noted: bool = False):
    """A progress bar on standard error for work that takes a while (``total`` units, or None:
    a pulsing bar for work that cannot be counted); hidden when standard error is not a
    terminal and by -q. Yields a function to call once per unit done; with ``noted`` it also
    takes a short text shown after the bar (``advance(1, "loss 0.031")``)."""
    if settings.quiet or (total is not None and total < 2) or not _isatty(sys.stderr):
        yield lambda n=1, note="", total=None: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    color = color_for(sys.stderr)
    console = Console(stderr=True, color_system="auto" if color else None, no_color=not color)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if noted:
        columns.append(TextColumn("{task.fields[note]}"))
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task(what, total=total, note="")
        if noted:  # and the total, once known: advance(1, "loss 0.03", total=700)
            yield lambda n=1, note="", total=None: bar.update(
                task, advance=n, note=note, **({"total": total} if total else {})
            )
        else:
            yield lambda n=1, note="": bar.advance(task, n)


def junit_first(junit: str | None, fmt: str) -> None:
    """Refuse, before anything runs, a JUnit report that cannot be written: on standard output
    beside JSON, or where no file can go (a folder, say)."""
    from ..core.errors import UsageError

    if junit == "-" and fmt == "json" and settings.output in (None, "-"):
        raise UsageError(
            "--junit - and --format json would both write to standard output",
            hints=["write the JUnit report to a file: --junit report.xml"],
        )
    if junit and junit != "-":
        from ..data.outputs import check_writable

        check_writable(junit)
