"""The ``cgraph`` group: every error becomes its message on stderr and its exit code, here and
nowhere else, in one style (``cgraph: error: ...`` with ``help:`` lines), click's own usage
errors included."""

from __future__ import annotations

import errno
import gc
import io
import os
import sys
import warnings
from collections.abc import MutableMapping
from typing import NoReturn

import click

from .. import __version__
from ..core.errors import CgraphError, visible
from ..core.startup import AS_COMMAND
from . import output
from .options import EXIT_CODES


def print_error(text: str, located: bool = False) -> None:
    """An error on stderr: ``cgraph: error: ...`` (or ``FILE:LINE:COL: error: ...``) and its
    ``help:`` lines, coloured when stderr is."""
    if not located:
        text = "cgraph: " + text
    text = visible(text, keep="\n")
    if output.color_for(sys.stderr):
        lines = text.split("\n")
        lines[0] = lines[0].replace("error:", click.style("error:", fg="red", bold=True), 1)
        lines = [
            click.style("help:", fg="cyan") + ln[5:] if ln.startswith("help:") else ln
            for ln in lines
        ]
        text = "\n".join(lines)
    click.echo(text, err=True, color=output.color_for(sys.stderr))


def _color_in(args: list[str]) -> str | None:
    """The value of the last ``--color`` in ``args``, if it is a valid one.

    >>> _color_in(["eval", "x", "--color", "never", "--bogus"]), _color_in(["--color=always"])
    ('never', 'always')
    """
    found = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        value = arg[len("--color=") :] if arg.startswith("--color=") else None
        if arg == "--color" and i + 1 < len(args):
            value = args[i + 1]
        if value in ("auto", "always", "never"):
            found = value
    return found


# click >= 8.2 raises this for `cgraph` without a command; older versions print the help.
NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class Group(click.Group):
    """Turns every library error into its message on stderr and its exit code."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        args = sys.argv[1:] if args is None else list(args)
        output.settings.reset()
        # --color also for a usage error, which click raises before any option's callback runs
        output.settings.color = _color_in(args) or "auto"
        if any(k.endswith("_COMPLETE") for k in os.environ):  # a shell asks for completions
            from . import completion  # noqa: F401  (cgraph's completers replace click's)
        with warnings.catch_warnings():  # restores Python's way of showing them, for a library
            warnings.showwarning = _show_warning
            # A library's notice to its own callers (matplotlib's use of an old pyparsing name)
            # is not the user's business; NumPy's RuntimeWarnings and cgraph's own are.
            for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
                warnings.filterwarnings("ignore", category=category)
                warnings.filterwarnings("default", category=category, module="cgraph_cli")
            code = self._main(args, prog_name, complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _main(self, args, prog_name, complete_var, **extra) -> int:
        """The command's exit code, every error it raised turned into its message."""
        try:
            code = super().main(
                args, prog_name or "cgraph", complete_var, standalone_mode=False, **extra
            )
            sys.stdout.flush()  # a full disk shows here, not at exit with a Python complaint
        except NO_ARGS_IS_HELP as e:  # `cgraph` alone: the help, on stderr as click does
            click.echo(e.ctx.get_help(), err=True, color=output.color_for(sys.stderr))
            code = e.exit_code
        except click.UsageError as e:  # click's own: bad option, missing argument
            # click's parser leaves ctx out of "Option '--of' requires an argument."
            command = e.ctx.command_path if e.ctx else self._path(prog_name or "cgraph", args)
            print_error(f"error: {e.format_message()}\nhelp: see '{command} --help'")
            code = e.exit_code
        except click.ClickException as e:
            print_error(f"error: {e.format_message()}")
            code = e.exit_code
        except (click.exceptions.Abort, KeyboardInterrupt):
            print_error("interrupted")
            code = 130
        except OSError as e:  # standard output on a full disk, a closed or failing device
            print_error(_os_message(e))
            _detach_stdout()
            code = 2
        return code if isinstance(code, int) else 0

    def _path(self, prog_name: str, args: list[str]) -> str:
        """``cgraph eval`` for ``eval x --of``: the group takes no option with a value, so its
        first other argument names the command."""
        name = next((a for a in args if not a.startswith("-")), None)
        return f"{prog_name} {name}" if name in self.commands else prog_name

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CgraphError as e:
            print_error(e.render(), located=e.where() is not None)
            ctx.exit(e.exit_code)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:  # Ctrl-C: not click's "Aborted!" with exit 1, a failed check's
            print_error("interrupted")
            ctx.exit(130)
        except BrokenPipeError:
            # `cgraph ... | head`: the reader left; say nothing and do not let Python complain.
            _detach_stdout()
            ctx.exit(141)
        except OSError:  # standard output on a full disk: main() says so, also for --help
            raise
        except RecursionError:  # pragma: no cover - no code path recurses on graph depth
            print_error("error: internal error: recursion limit reached; please report this")
            ctx.exit(70)
        except Exception as e:  # never show a traceback, unless asked to
            if os.environ.get("CGRAPH_DEBUG"):
                raise
            print_error(
                f"error: internal error: {type(e).__name__}: {e}\n"
                "help: please report this; CGRAPH_DEBUG=1 shows the traceback"
            )
            ctx.exit(70)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A Python warning (NumPy's ``overflow encountered``) as one line on stderr, without
    the path of the library file that raised it."""
    print_error(f"warning: {message}")


def _os_message(error: OSError) -> str:
    """The message for an ``OSError`` no command turned into a :class:`CgraphError`: one on a
    named file names it; one without a name that writing fails with (a full disk, a device
    error, a closed stream) comes from standard output, every file write being named.

    >>> import errno
    >>> _os_message(OSError(errno.ENOSPC, "No space left on device"))
    'error: cannot write to standard output: No space left on device'
    >>> _os_message(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"))
    'error: Connection refused'
    """
    reason = error.strerror or str(error)
    if error.filename is not None:
        return f"error: {visible(os.fsdecode(error.filename))}: {reason}"
    if error.errno in _WRITE_ERRORS:
        return f"error: cannot write to standard output: {reason}"
    return f"error: {reason}"


_WRITE_ERRORS = {
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EBADF", "EPIPE", "EAGAIN", "EINVAL")
    if hasattr(errno, name)
}


def _detach_stdout() -> None:
    """Standard output to the null device: what is still buffered for the device that failed
    (or the reader that left) is dropped rather than complained about at exit. A stream with
    no file descriptor (a program calling ``main`` with its own ``sys.stdout``) is closed
    instead: its buffer would fail again when Python flushes it at exit or collects it, and
    Python would print that as an "Exception ignored" traceback."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    except (OSError, ValueError, AttributeError):  # not a real file
        pass
    try:
        sys.stdout.close()  # flushes once more, fails, and is closed all the same
    except (OSError, ValueError, AttributeError):
        pass


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES)
@click.version_option(__version__, "-V", "--version", prog_name="cgraph")
def main() -> None:
    """Computational graphs: values and gradients of expression programs.

    \b
      cgraph eval 'g = (x + y) * z' x=1 y=3 z=-3
      cgraph grad sample:seed --format json
      cgraph render sample:seed -o seed.png
      cgraph show sample:neuron
      cgraph grad sample:mlp                     # tensors: a two-layer perceptron
      cgraph samples                             # the sample programs

    SOURCE is program text, a file path, '-' for standard input, or sample:NAME.
    Values are numbers or tensors (W='[[1,2],[3,4]]', --bindings weights.npz, W=@w.npy).
    """


def _tolerant_streams() -> None:
    """Where the locale cannot spell ∂ or │ (LC_ALL=POSIX, a Latin-1 terminal), print them as
    escapes rather than crash on the first one."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not encoding or not hasattr(stream, "reconfigure"):
            continue
        try:
            "∂×│…".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            stream.reconfigure(errors="backslashreplace")


class _ClosedOutput(io.RawIOBase):
    """Standard output when the shell closed it (``cgraph eval ... >&-``): the first write is
    the error any failing standard output is; later ones (at exit) are dropped."""

    told = False

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if not self.told:
            self.told = True
            raise OSError(errno.EBADF, "it is closed")
        return len(data)


def run() -> None:
    """Console-script entry point."""
    if sys.stdout is None:
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_ClosedOutput()), encoding="utf-8")
    _tolerant_streams()
    if not AS_COMMAND:  # a program calling run() itself: Python's own exit, as always
        main(prog_name="cgraph")
        return
    output.kept = []  # what the command made, let go of by the process's end (below)
    code = main(prog_name="cgraph", standalone_mode=False)
    leave(code)


def leave(code: int) -> NoReturn:
    """End the ``cgraph`` process with ``code`` as Python's exit would (the functions
    registered with :mod:`atexit` run, then standard output and error are flushed), but
    without its teardown: freeing every object left one by one (a long program's graph, its
    float program, every module) costs milliseconds and has nothing to give back. Python's
    own exit where it has more to do: a thread still running (it waits for it), or a stream
    that fails as it is flushed (it says so)."""
    import atexit
    import threading  # (imported already: click imports it)

    if threading.active_count() == 1:
        atexit._run_exitfuncs()  # (and unregisters them: Python's exit will not run them again)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        else:
            os._exit(code)
    sys.exit(code)


# Command name -> "module:attribute" in this package: a command's module is imported when the
# command runs (or its help is shown), so `cgraph eval` does not import the diagram or checks
# modules (click's "Lazily Loading Subcommands", kept behind the usual ``main.commands``).
LAZY_COMMANDS = {
    "eval": "compute:eval_command",
    "grad": "compute:grad_command",
    "diff": "derivatives:diff_command",
    "hessian": "derivatives:hessian_command",
    "jvp": "derivatives:jvp_command",
    "jacobian": "derivatives:jacobian_command",
    "optimize": "optimize:optimize_command",
    "compile": "optimize:compile_command",
    "import": "imports:import_command",
    "render": "draw:render_command",
    "dot": "draw:dot_command",
    "show": "draw:show_command",
    "check": "checks:check_command",
    "gradcheck": "gradcheck:gradcheck_command",
    "explain": "explain:explain_command",
    "train": "train:train_command",
    "worksheet": "worksheet:worksheet_command",
    "samples": "samples:samples_command",
    "schema": "schema:schema_command",
    "completion": "completion:completion_command",
    "help": "help:help_command",
    "lsp": "lsp:lsp_command",
}


class LazyCommands(MutableMapping):
    """``main.commands``: name -> command, importing a command's module on first access.

    >>> commands = LazyCommands({"samples": "samples:samples_command"})
    >>> list(commands), commands["samples"].name
    (['samples'], 'samples')
    """

    def __init__(self, table: dict[str, str]) -> None:
        self._entries: dict[str, click.Command | str] = dict(table)

    def __getitem__(self, name: str) -> click.Command:
        entry = self._entries[name]
        if isinstance(entry, str):
            module, attribute = entry.split(":")
            collecting = gc.isenabled()
            gc.disable()  # an import makes no garbage for the collector to look for
            try:
                loaded = __import__(f"{__package__}.{module}", fromlist=[attribute])
            finally:
                if collecting:
                    gc.enable()
            entry = getattr(loaded, attribute)
            self._entries[name] = entry
        return entry

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._entries[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


main.commands = LazyCommands(LAZY_COMMANDS)
