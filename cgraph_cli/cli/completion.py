"""Shell completion: ``cgraph completion [bash|zsh|fish]`` prints the script to install, and
the completers behind it.

Completion is click's own (``_CGRAPH_COMPLETE=bash_complete cgraph``), with two changes:

- bash: click's script drops every suggestion when a file name is one of them (SOURCE is a
  file *or* ``sample:NAME``), and bash splits ``sample:se`` at the colon, so ``sample:NAME``
  never completed. cgraph's script lists files with ``compgen`` next to the other
  suggestions, and reads the word under the cursor from ``COMP_LINE``; it then leaves out
  the part of each suggestion that readline keeps (``sample:``).
- zsh: a suggestion with a colon (``sample:seed``) is escaped for ``_describe``.
- fish: descriptions (of commands, of samples) are no longer cut at their first comma.
- a completer that fails prints nothing, rather than a traceback into the user's prompt.
"""

from __future__ import annotations

import os

import click
from click import shell_completion as sc

from .options import EXIT_CODES, common_options, output_option

SHELLS = ["bash", "zsh", "fish"]
COMPLETE_VAR = "_CGRAPH_COMPLETE"

# The response starts with `trim,N`: the first N characters of the word are before the last
# word-break character (`sample:` of `sample:se`), which readline leaves in place; every
# suggestion, file names included, is cut by as many. Files come from compgen, so that they
# sit next to the plain suggestions; `-o filenames` then quotes them and puts / after folders.
_SOURCE_BASH = """\
%(complete_func)s() {
    local response type value trim=0
    local -a files=()
    response=$(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD \\
COMP_LINE="$COMP_LINE" COMP_POINT=$COMP_POINT COMP_WORDBREAKS="$COMP_WORDBREAKS" \\
%(complete_var)s=bash_complete $1)
    COMPREPLY=()
    while IFS=',' read -r type value; do
        case $type in
            trim) trim=$value ;;
            plain) COMPREPLY+=("${value:trim}") ;;
            file) mapfile -t -O "${#files[@]}" files < <(compgen -f -- "$value") ;;
            dir) mapfile -t -O "${#files[@]}" files < <(compgen -d -- "$value") ;;
        esac
    done <<< "$response"
    if ((${#files[@]})); then
        compopt -o filenames
        for value in "${files[@]}"; do
            COMPREPLY+=("${value:trim}")
        done
    fi
    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""


class _Quiet(sc.ShellComplete):
    """A completer that fails completes nothing: a traceback must not land in the prompt."""

    def complete(self) -> str:
        try:
            return super().complete()
        except Exception:
            if os.environ.get("CGRAPH_DEBUG"):
                raise
            return ""


class BashComplete(_Quiet, sc.BashComplete):
    """bash, reading the line as typed (``COMP_LINE``), not bash's words split at ``:``."""

    source_template = _SOURCE_BASH

    def get_completion_args(self) -> tuple[list[str], str]:
        line, point = os.environ.get("COMP_LINE"), os.environ.get("COMP_POINT", "")
        if line is None or not point.isdigit():
            self.trim = 0
            return super().get_completion_args()
        text = line[: int(point)]
        start = word_start(text)
        words = sc.split_arg_string(text[:start])
        raw = text[start:]
        incomplete = (sc.split_arg_string(raw) or [""])[0] if raw else ""
        if incomplete.startswith("-") and "=" in raw:  # --bindings=FILE: bash completes FILE
            raw = raw.partition("=")[2]
        self.trim = kept_by_readline(raw, os.environ.get("COMP_WORDBREAKS", ""))
        return words[1:], incomplete

    def complete(self) -> str:
        self.trim = 0
        body = super().complete()
        return f"trim,{self.trim}" + (f"\n{body}" if body else "")


class ZshComplete(_Quiet, sc.ZshComplete):
    """zsh, with ``sample:seed`` whole: the script hands a suggestion with a description to
    ``_describe``, which splits it at its first colon unless escaped (click 8.2.0 did not
    escape it), and one without to ``compadd``, which takes it as it is."""

    def format_completion(self, item) -> str:
        described = item.help or "_"
        value = item.value.replace(":", r"\:") if described != "_" else item.value
        return f"{item.type}\n{value}\n{described}"


class FishComplete(_Quiet, sc.FishComplete):
    """fish, keeping the descriptions whole: click's script cut them at their first comma."""

    source_template = sc.FishComplete.source_template.replace(
        'string split "," $completion', 'string split -m 1 "," $completion'
    )


for _cls in (BashComplete, ZshComplete, FishComplete):
    sc.add_completion_class(_cls)


def word_start(text: str) -> int:
    """Where the last word of a command line starts: after the last space outside quotes.

    >>> word_start("cgraph render 'my fi")
    14
    >>> word_start("cgraph render ")
    14
    """
    start, quote, escaped = 0, None, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif quote:
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"':
                escaped = True
        elif ch == "\\":
            escaped = True
        elif ch in "'\"":
            quote = ch
        elif ch.isspace():
            start = i + 1
    return start


def kept_by_readline(raw: str, breaks: str) -> int:
    """How many characters of the word (unquoted) come before its last word-break character
    outside quotes: the part readline keeps, and bash's suggestions must leave out.

    >>> kept_by_readline("sample:se", ":=@")
    7
    >>> kept_by_readline("'sample:se", ":=@")
    0
    """
    breaks = "".join(ch for ch in breaks if not ch.isspace() and ch not in "'\"")
    length = kept = 0
    quote, escaped = None, False
    for ch in raw:
        if escaped:
            escaped = False
            length += 1
        elif quote:
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"':
                escaped = True
            else:
                length += 1
        elif ch == "\\":
            escaped = True
        elif ch in "'\"":
            quote = ch
        else:
            length += 1
            if ch in breaks:
                kept = length
    return kept


def _guess_shell() -> str:
    """The shell named by ``$SHELL``, if cgraph can complete for it."""
    from ..core.errors import UsageError

    shell = os.environ.get("SHELL", "")
    name = os.path.basename(shell)
    if name not in SHELLS:
        said = f"$SHELL is '{shell}'" if shell else "$SHELL is not set"
        raise UsageError(
            f"cannot tell which shell to complete for: {said}",
            hints=["name it: cgraph completion bash, zsh or fish"],
        )
    return name


def script(shell: str, command: click.Command, prog_name: str = "cgraph") -> str:
    """The completion script for ``shell``, completing ``command`` (cgraph's group).

    >>> from cgraph_cli.cli import main
    >>> "complete -o nosort -F _cgraph_completion cgraph" in script("bash", main)
    True
    """
    completer = sc.get_completion_class(shell)
    if completer is None:  # the command checks the name first (see SHELLS)
        from ..core.errors import UsageError

        raise UsageError(f"cannot complete for the shell '{shell}'")
    return completer(command, {}, prog_name, COMPLETE_VAR).source()


@click.command("completion", short_help="Print the shell completion script.", epilog=EXIT_CODES)
@click.argument("shell", required=False, type=click.Choice(SHELLS), metavar="[SHELL]")
@output_option
@common_options
def completion_command(shell):
    """Print the script that makes your shell complete cgraph's commands, options, choices,
    samples (sample:NAME) and file names. SHELL is bash, zsh or fish (default: the one
    $SHELL names).

    \b
    Examples:
      eval "$(cgraph completion bash)"                  # in ~/.bashrc
      eval "$(cgraph completion zsh)"                   # in ~/.zshrc, after compinit
      cgraph completion fish > ~/.config/fish/completions/cgraph.fish
    """
    from . import output

    root = click.get_current_context().find_root().command
    output.write_text(script(shell or _guess_shell(), root), nl=False)


COMMANDS = [completion_command]
