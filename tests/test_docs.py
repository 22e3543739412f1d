"""The examples of README.md and of every page of the documentation site (docs/**/*.md) run
and print what the page shows.

Every ```console block is a transcript: each `$ ...` line runs (cgraph in-process, from a
temporary copy of the checkout's samples/, so files it writes land there), and the lines below
it up to the next `$ ` are its output, stdout and stderr as a terminal shows them, compared
exactly (trailing whitespace aside). A pipe feeds one command's output to the next; `echo`,
`head -n N`, `jq` path filters and `> FILE` work as in a shell (jq is read by Python's json,
so the test needs no jq), `echo $?` prints the exit code of the command before it. A command
that prints an `error:` must exit non-zero, every other one 0 (unless `echo $?` says), and a
file it names with -o, --junit, --frames or `>` must exist afterwards (render without -o:
SOURCE's stem with the type's extension, or graph.png for program text).

Every ```python block runs too: with `>>>` as a doctest, otherwise as a script (a ```py block
is shown, not run: it needs PyTorch or JAX); a ```pycon block of the API reference runs as a
doctest among the names `cgraph_cli` exports; a ```toml block is a checks file and must pass
`cgraph check --spec`; a ```cgraph block must parse. The options page must list every option
of every command, the JSON page every schema, and the language page's list of functions every
function of the op table (and nothing else). The site builds with `mkdocs build --strict`.
"""

from __future__ import annotations

import doctest
import io
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# The pages whose examples run: the README and the site's pages.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
# The environment of every command: no colour forced or refused, no width, no debug traceback.
ENV = {"FORCE_COLOR": None, "NO_COLOR": None, "COLUMNS": None, "CGRAPH_DEBUG": None}


# --- reading the pages ----------------------------------------------------------------------------
@dataclass
class Block:
    """A fenced code block: its language, the page's line of its first line, its lines."""

    lang: str
    line: int
    lines: list[str]
    page: str = "README.md"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


@dataclass
class Example:
    """One `$ COMMAND` of a console block and the output the page shows for it."""

    line: int
    command: str
    expected: list[str] = field(default_factory=list)
    page: str = "README.md"


FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")


def code_blocks(text: str, page: str = "README.md") -> list[Block]:
    """The fenced blocks of a Markdown text, also those indented inside a list item.

    >>> [(b.lang, b.line, b.lines) for b in code_blocks("a\\n\\n  ```sh\\n  make\\n  ```\\n")]
    [('sh', 4, ['make'])]
    """
    lines, blocks, i = text.splitlines(), [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, j = len(m["indent"]), i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        assert j < len(lines), f"{page}:{i + 1}: the block is never closed"
        body = [line[indent:] if not line[:indent].strip() else line for line in lines[i + 1 : j]]
        blocks.append(Block(m["lang"], i + 2, body, page))
        i = j + 1
    return blocks


def examples(block: Block) -> list[Example]:
    """The commands of a console block, each with the output lines below it."""
    found: list[Example] = []
    for k, line in enumerate(block.lines):
        if line.startswith("$ "):
            found.append(Example(block.line + k, line[2:], page=block.page))
        else:
            assert found, f"{block.page}:{block.line + k}: output before any `$ ` command"
            found[-1].expected.append(line)
    return found


def page_name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def page_blocks(lang: str) -> list[Block]:
    """The blocks of language ``lang`` in the README and every page of the site."""
    return [
        block
        for path in PAGES
        for block in code_blocks(path.read_text(encoding="utf-8"), page_name(path))
        if block.lang == lang
    ]


# --- running a command line ------------------------------------------------------------------------
@dataclass
class Shell:
    """A folder to run commands in, and the exit code of the last one."""

    cwd: Path
    status: int = 0


@dataclass
class Ran:
    stdout: bytes  # what goes on down a pipe
    stderr: str  # what shows on the terminal when stdout goes down a pipe or into a file
    shown: str  # what a terminal shows: stdout and stderr interleaved
    code: int


def words(command: str) -> list[str]:
    """A command line split as a POSIX shell does, `|` and `>` apart, `# comments` dropped.

    >>> words("cgraph eval 'y = x|1' x=2 | head -n 1 > out.txt   # note")
    ['cgraph', 'eval', 'y = x|1', 'x=2', '|', 'head', '-n', '1', '>', 'out.txt']
    """
    lex = shlex.shlex(command, posix=True, punctuation_chars="|>")
    lex.whitespace_split = True
    return list(lex)


def _runner(mixed: bool) -> CliRunner:
    try:  # click 8.1 (the floor): stdout and stderr apart only when told
        return CliRunner(mix_stderr=mixed)
    except TypeError:  # click 8.2 dropped the option: .output interleaves, .stdout is apart
        return CliRunner()


def run_cgraph(args: list[str], stdin: bytes | None, last: bool) -> Ran:
    from cgraph_cli.cli import main

    result = _runner(mixed=last).invoke(
        main, args, input=stdin, env=ENV, prog_name="cgraph", catch_exceptions=False
    )
    if last:  # click 8.1 keeps no stderr apart when it interleaves
        return Ran(result.stdout_bytes, "", result.output, result.exit_code)
    return Ran(result.stdout_bytes, result.stderr, result.output, result.exit_code)


def jq(args: list[str], stdin: bytes) -> Ran:
    """`jq [-r] [-c] .path.to[0].value`, by Python's json."""
    flags = {a for a in args if a.startswith("-")}
    (path,) = [a for a in args if not a.startswith("-")]
    assert flags <= {"-r", "-c"} and re.fullmatch(r"\.|(\.\w+|\[\d+\])+", path), args
    value = json.loads(stdin)
    for key, index in re.findall(r"\.(\w+)|\[(\d+)\]", path):
        value = value[key] if key else value[int(index)]
    assert not any(isinstance(v, float) and v.is_integer() for v in _leaves(value)), (
        "jq 1.6 prints 4.0 as 4, jq 1.7 as 4.0: show a value with a fraction"
    )
    if "-r" in flags and isinstance(value, str):
        text = value
    elif "-c" in flags:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False)
    return Ran((text + "\n").encode(), "", text + "\n", 0)


def _leaves(value):
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def run_stage(argv: list[str], stdin: bytes | None, last: bool, shell: Shell) -> Ran:
    name, args = argv[0], argv[1:]
    if name == "cgraph":
        return run_cgraph(args, stdin, last)
    if name == "echo":
        text = " ".join(str(shell.status) if a == "$?" else a for a in args) + "\n"
        return Ran(text.encode(), "", text, 0)
    if name in ("head", "tail"):
        n = int(args[1]) if args[0] == "-n" else int(args[0].lstrip("-"))
        lines = (stdin or b"").splitlines(keepends=True)
        out = b"".join(lines[:n] if name == "head" else lines[-n:])
        return Ran(out, "", out.decode(), 0)
    if name == "grep":  # grep [--] PATTERN: the lines that hold PATTERN, a regular expression
        pattern = args[-1]
        lines = (stdin or b"").decode().splitlines(keepends=True)
        out = "".join(line for line in lines if re.search(pattern, line))
        return Ran(out.encode(), "", out, 0 if out else 1)
    if name == "jq":
        return jq(args, stdin or b"")
    if name in ("python", "python3"):
        argv = [sys.executable, *args]
    elif shutil.which(name) is None:
        pytest.skip(f"{name} is not installed")
    done = subprocess.run(argv, input=stdin, cwd=shell.cwd, capture_output=True)
    err = done.stderr.decode()
    return Ran(done.stdout, err, done.stdout.decode() + err, done.returncode)


def run(command: str, shell: Shell) -> str:
    """Run a command line in ``shell.cwd``; returns what a terminal shows, checks the rest."""
    argv = words(command)
    target = None
    if ">" in argv:
        k = argv.index(">")
        argv, target = argv[:k], argv[k + 1 :]
        assert len(target) == 1, command
    stages: list[list[str]] = [[]]
    for word in argv:
        if word == "|":
            stages.append([])
        else:
            stages[-1].append(word)
    files = written(stages, target)
    for path in files:  # so that the check below sees this command write it
        if (shell.cwd / path).is_file():
            (shell.cwd / path).unlink()
    shown, stdin = "", None
    for k, stage in enumerate(stages):
        last = k == len(stages) - 1
        ran = run_stage(stage, stdin, last and target is None, shell)
        assert ran.code != 70, f"internal error:\n{ran.shown}"
        if not last:
            assert ran.code == 0, f"{' '.join(stage)} exited {ran.code}:\n{ran.shown}"
            shown += ran.stderr  # a pipe's stderr still shows
        stdin = ran.stdout
    if target is not None:
        (shell.cwd / target[0]).write_bytes(ran.stdout)
        shown += ran.stderr
    else:
        shown += ran.shown
    if stages[0] != ["echo", "$?"]:
        shell.status = ran.code
    for path in files:
        assert (shell.cwd / path).exists(), f"{command}: {path} was not written"
    return shown


def written(stages: list[list[str]], target: list[str] | None) -> list[str]:
    """The files a command line says it writes."""
    paths = list(target or [])
    for argv in stages:
        if argv[0] != "cgraph":
            continue
        for k, word in enumerate(argv[:-1]):
            if word in ("-o", "--output", "--junit", "--frames") and argv[k + 1] != "-":
                paths.append(argv[k + 1])
        if argv[1] == "render" and not {"-o", "--output"} & set(argv):
            paths.append(default_image(argv[2:]))
    return paths


def default_image(args: list[str]) -> str:
    """Where `cgraph render` writes without -o: SOURCE's stem with the type's extension, or
    graph.png for program text."""
    from cgraph_cli.cli import main

    ctx = main.get_command(None, "render").make_context("render", args, resilient_parsing=True)
    kind = ctx.params["kind"] or "png"
    source = ctx.params["file_"] or (None if ctx.params["expr"] else ctx.params["args"][0])
    if source and source.startswith("sample:"):
        return f"{Path(source.removeprefix('sample:')).stem}.{kind}"
    return f"{Path(source).stem}.{kind}" if source and Path(source).is_file() else f"graph.{kind}"


def check(example: Example, shell: Shell) -> None:
    """Run one example and hold its output to the page's."""
    shown = run(example.command, shell)
    got = [line.rstrip() for line in shown.rstrip("\n").split("\n")] if shown.strip() else []
    want = [line.rstrip() for line in example.expected]
    assert got == want, (
        f"{example.page}:{example.line}: $ {example.command}\n--- the page\n"
        + "\n".join(want)
        + "\n--- printed\n"
        + "\n".join(got)
    )
    if "error:" in shown and example.command != "echo $?":
        assert shell.status != 0, f"{example.page}:{example.line}: an error, but exit 0"


@pytest.fixture
def shell(tmp_path, monkeypatch) -> Shell:
    """A folder holding a copy of samples/ (the examples run from the checkout's root)."""
    shutil.copytree(ROOT / "samples", tmp_path / "samples")
    monkeypatch.chdir(tmp_path)
    return Shell(tmp_path)


# --- the tests -----------------------------------------------------------------------------------
def ids(blocks: list[Block]) -> list[str]:
    return [f"{b.page}:{b.line}" for b in blocks]


CONSOLE = page_blocks("console")


@pytest.mark.parametrize("block", CONSOLE, ids=ids(CONSOLE))
def test_console_block_prints_what_the_page_shows(block, shell):
    steps = examples(block)
    assert steps, f"{block.where}: a console block without a `$ ` command"
    for k, example in enumerate(steps):
        check(example, shell)
        follows = steps[k + 1].command if k + 1 < len(steps) else ""
        if follows != "echo $?" and example.command != "echo $?":
            assert shell.status == 0 or any("error:" in line for line in example.expected), (
                f"{example.page}:{example.line}: exit {shell.status}; show it with `$ echo $?`"
            )


def run_doctest(block: Block, globs: dict, flags: int = 0) -> None:
    test = doctest.DocTestParser().get_doctest(
        block.text, globs, block.page, block.page, block.line
    )
    report = io.StringIO()
    results = doctest.DocTestRunner(verbose=False, optionflags=flags).run(test, out=report.write)
    assert results.attempted and results.failed == 0, f"{block.where}:\n{report.getvalue()}"


PYTHON = page_blocks("python")


@pytest.mark.parametrize("block", PYTHON, ids=ids(PYTHON))
def test_python_block_runs(block, shell):
    if ">>>" not in block.text:
        exec(compile(block.text, block.where, "exec"), {"__name__": "docs"})
        return
    run_doctest(block, {})


PYCON = page_blocks("pycon")


def documented_name(block: Block) -> str:
    """The exported name whose entry in docs/api.md holds ``block``: the heading above it,
    `### `name(...)``, `### class `Name``, or `#### `Name.attribute``."""
    lines = (ROOT / block.page).read_text(encoding="utf-8").splitlines()[: block.line]
    heading = next(line for line in reversed(lines) if re.match(r"#{3,4} ", line))
    return re.search(r"`(\w+)", heading)[1]


@pytest.mark.parametrize("block", PYCON, ids=ids(PYCON))
def test_pycon_block_of_the_api_reference_runs(block, shell):
    """docs/api.md's examples (its names' docstrings', also run as doctests of their modules)
    run among the names the package exports and those of the module that defines the name."""
    import importlib

    import cgraph_cli

    exported = getattr(cgraph_cli, documented_name(block))
    module = importlib.import_module(getattr(exported, "__module__", "cgraph_cli"))
    globs = {name: getattr(cgraph_cli, name) for name in cgraph_cli.__all__}
    run_doctest(block, {**vars(module), **globs}, doctest.NORMALIZE_WHITESPACE)  # as pyproject's


TOML = page_blocks("toml")


@pytest.mark.parametrize("block", TOML, ids=ids(TOML))
def test_toml_block_is_a_checks_file_that_passes(block, shell):
    """A checks file shown in the docs sits beside the samples, as samples/checks.toml."""
    spec = shell.cwd / "samples" / "docs.toml"
    spec.write_text(block.text, encoding="utf-8")
    ran = run_cgraph(["check", "--spec", str(spec)], None, last=True)
    assert ran.code == 0, f"{block.where}:\n{ran.shown}"


CGRAPH = page_blocks("cgraph")


@pytest.mark.parametrize("block", CGRAPH, ids=ids(CGRAPH))
def test_cgraph_block_is_a_program_that_runs(block):
    """A program shown in a ```cgraph block parses, and runs where every input has a value."""
    import cgraph_cli

    graph = cgraph_cli.parse(block.text, block.where)
    if set(graph.inputs) <= set(graph.defaults):
        cgraph_cli.evaluate(graph)


def test_there_are_examples_of_each_kind():
    """The collection above finds the blocks (a renamed fence would silently drop them)."""
    for blocks in (CONSOLE, PYTHON, TOML, CGRAPH):  # (no pycon since api.md is mkdocstrings')
        assert blocks
    assert {b.page for b in CONSOLE} >= {"README.md", "docs/language.md", "docs/commands/check.md"}


def test_every_command_has_an_example():
    from cgraph_cli.cli import main

    run_ = {words(e.command)[1] for b in CONSOLE for e in examples(b) if e.command[:7] == "cgraph "}
    assert set(main.list_commands(None)) <= run_, set(main.list_commands(None)) - run_


def test_a_changed_output_fails(shell):
    """The comparison is exact: one character changed in an output line is a failure."""
    example = next(e for b in CONSOLE for e in examples(b) if e.expected)
    check(example, shell)
    line = example.expected[0]
    broken = Example(example.line, example.command, list(example.expected))
    broken.expected[0] = line[:-1] + ("0" if line[-1:] != "0" else "1")
    with pytest.raises(AssertionError, match="--- the page"):
        check(broken, shell)
    with pytest.raises(AssertionError, match="--- the page"):
        check(Example(example.line, example.command, example.expected[:-1]), shell)


def _page(name: str, title: str) -> str:
    """The text of the page docs/NAME titled ``# TITLE``, up to its first ``## `` section."""
    text = (DOCS / name).read_text(encoding="utf-8")
    assert text.startswith(f"# {title}\n"), f"docs/{name}: not titled '# {title}'"
    return text.split("\n## ", 1)[0]


def _table_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``text``, as cells (`\\|` is a `|`).

    >>> _table_rows("| a | b |\\n|---|---|\\n| 1 | x \\\\| y |\\n\\n| c |\\n|---|\\n| 2 |\\n")
    [['1', 'x | y']]
    """
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return [
        [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", row.strip("|"))]
        for row in rows[2:]
    ]


def _commands_named(cell: str, every: set[str], sources: set[str]) -> set[str]:
    """``every command``, ``every program command``, `` `name` ``s, ``... but `name` ``."""
    named = lambda text: set(re.findall(r"`(\w+)`", text)) & (every | {"cgraph"})  # noqa: E731
    given, _, excluded = cell.partition(" but ")
    names = named(given)
    if "every program command" in given:
        names |= sources
    elif "every command" in given:
        names |= every
    return names - named(excluded)


def test_the_options_table_lists_every_option_and_its_commands():
    """Each option (its spellings in backticks) with the commands that take it."""
    from cgraph_cli.cli import main

    every = set(main.list_commands(None))
    taken: dict[str, set[str]] = {"-h, --help": every | {"cgraph"}, "-V, --version": {"cgraph"}}
    for name in every:
        for p in main.get_command(None, name).params:
            if p.param_type_name == "option" and not p.hidden:
                taken.setdefault(", ".join(p.opts), set()).add(name)
    sources = {
        name for name in every if "args" in [p.name for p in main.get_command(None, name).params]
    }
    assert len(sources) == 16, sources  # docs/options.md calls them "the sixteen"
    table = {}
    for option, commands, *_ in _table_rows(_page("options.md", "Options")):
        spelled = ", ".join(re.findall(r"`(-[-\w]+)", option))
        assert spelled not in table, f"{spelled} twice"
        table[spelled] = _commands_named(commands, every, sources)
    assert table == taken


def test_the_json_table_lists_every_schema_with_its_version():
    from cgraph_cli import schemas

    rows = {cells[0].strip("`"): cells[1] for cells in _table_rows(_page("json.md", "JSON output"))}
    assert set(rows) == set(schemas.VERSIONS), set(rows) ^ set(schemas.VERSIONS)
    for name, version in schemas.VERSIONS.items():
        assert rows[name] == str(version), name


def function_list(text: str) -> tuple[set[str], set[str]]:
    """The functions the **Functions** item of ``text`` names: the elementwise ones, and those
    after "On tensors also". A name counts inside backticks, alone or in a run of names, or as
    the head of a call (`where(c, a, b)`).

    >>> item = "- **Functions**: `sin cos\\n  exp` (one; `log` is ln), `where(c, a, b)`. On "
    >>> [sorted(names) for names in function_list(item + "tensors also `sum`.\\n- **More**: `x`")]
    [['cos', 'exp', 'log', 'sin', 'where'], ['sum']]
    """
    assert "\n- **Functions**" in "\n" + text, "docs/language.md: no '- **Functions**' item"
    item = ("\n" + text).split("\n- **Functions**", 1)[1].split("\n- **", 1)[0]
    elementwise, _, tensors = " ".join(item.split()).partition("On tensors also")

    def names(part: str) -> set[str]:
        found: set[str] = set()
        for span in re.findall(r"`([^`]+)`", part):
            call = re.match(r"(\w+)\(", span)
            if call:
                found.add(call[1])
            elif re.fullmatch(r"\w+( \w+)*", span):
                found.update(span.split())
        return found

    return names(elementwise), names(tensors)


def documented_functions() -> set[str]:
    """Every function docs/language.md names: the language's promise."""
    return set().union(*function_list(_page("language.md", "The language")))


def test_the_function_list_names_every_function_of_the_op_table():
    """Adding a function to the op table fails here until its line in docs/language.md is
    written."""
    from cgraph_cli.core.ops import FUNCTIONS

    elementwise, tensors = function_list(_page("language.md", "The language"))
    for kind, listed, wanted in (
        ("elementwise", elementwise, lambda op: op.elementwise),
        ("tensor (after 'On tensors also')", tensors, lambda op: not op.elementwise),
    ):
        table = {name for name, ops in FUNCTIONS.items() if any(map(wanted, ops.values()))}
        missing, stray = sorted(table - listed), sorted(listed - table)
        assert not missing, (
            f"docs/language.md's **Functions** item lacks the {kind} functions {missing}"
        )
        assert not stray, (
            f"docs/language.md lists {stray} as {kind} functions; the op table does not"
        )


def _links(text: str) -> list[str]:
    """The targets of a Markdown text's links and images, and of its <img> tags."""
    return re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"<img[^>]*\ssrc=[\"']([^\"']+)", text)


def test_the_readme_links_to_files_and_headings_it_has():
    """README.md's relative links and images name files of the checkout (images by relative path,
    so they show offline and in a fork), and its `#anchor` links its own headings."""
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^#{1,4} (.+)$", text, re.MULTILINE)
    anchors = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    links = _links(text)
    assert any(link.startswith("docs/") and link.endswith(".png") for link in links)
    for link in links:
        if link.startswith("#"):
            assert link[1:] in anchors, link
        elif not re.match(r"[a-z]+:", link):
            assert (ROOT / link.split("#")[0]).exists(), link


def test_the_readme_is_at_most_400_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 400


def test_the_json_page_is_up_to_date_with_the_schemas():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_json", DOCS / "gen_json.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = gen.TARGET.read_text(encoding="utf-8")
    assert text == gen.render(text), "docs/json.md is out of date: run `python docs/gen_json.py`"


def test_the_site_builds_with_strict_checks(tmp_path):
    """`mkdocs build --strict` (what `make docs` runs): every page in the nav, every link and
    anchor found. Skipped where the docs extra is not installed."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "commands" / "check" / "index.html").is_file()


def test_the_commands_page_lists_every_command():
    from cgraph_cli.cli import main

    listed = {
        cells[0].split("`")[1] for cells in _table_rows(_page("commands/index.md", "Commands"))
    }
    assert listed == set(main.list_commands(None))
