"""Every command, given random bytes, random tokens and random bindings, ends with a documented
exit code and a message: never an internal error (exit 70), never a traceback, never a control
character on stderr that a terminal would act on."""

from __future__ import annotations

import os
import re

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs
from test_scanner import token_text

from cgraph_cli.cli import main

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", 250)),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
COMMANDS = sorted(main.commands)
# Arguments that make each command do its work without writing files.
EXTRA = {"render": ["--format", "dot", "-o", "-"], "check": ["--expect", "y=1"]}
DOCUMENTED = {0, 1, 2, 3, 4}
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")

names = st.sampled_from(["x", "y", "z", "W", "b", "t", "input", "ｘ", "x\x1b", ""])
numbers = st.sampled_from(
    [
        "1",
        "-3",
        "0",
        "1e308",
        "1e400",
        "-0",
        "nan",
        "inf",
        "0x10",
        "1_000",
        " 2 ",
        "",
        "١",
        "9" * 500,
        "[1, 2]",
        "[[1, 2], [3, 4]]",
        "[[1, 2], [3]]",
        "[]",
        "[[]]",
        "[true]",
        '["a"]',
        "[" * 100 + "1" + "]" * 100,
        "[1e308, 1e308]",
        "{}",
        "null",
        "\x1b[2J",
        "@",
        "@missing.npy",
    ]
)
bindings = st.lists(st.tuples(names, numbers).map(lambda t: f"{t[0]}={t[1]}"), max_size=4)
texts = st.one_of(
    programs(),
    token_text(),
    st.text(max_size=60),
    st.binary(max_size=60).map(lambda b: b.decode("utf-8", "replace")),
    st.sampled_from(
        [
            "y = sum(x)",
            "y = x @ W + b",
            "y = x[1:0]",
            "y = max(x)",
            "y = log(x)",
            "y = reshape(x, [-1, 1]) + x",
            "y = softmax(x)",
            "y = x / 0",
        ]
    ),
)


def _ok(result) -> None:
    assert result.exit_code in DOCUMENTED, (result.exit_code, result.stderr[-800:])
    assert "Traceback" not in result.stderr + result.stdout
    assert not HIDDEN.search(result.stderr), repr(result.stderr)
    assert "warning:" not in result.stderr, result.stderr  # NumPy's, say: errstate missing


@FUZZ
@given(st.sampled_from(COMMANDS), texts, bindings)
def test_text_programs(cli, command, text, binds):
    if "\x00" in text:  # a NUL cannot be passed in a command-line argument
        text = text.replace("\x00", "")
    _ok(cli(command, "-e", text, *binds, *EXTRA.get(command, [])))


@FUZZ
@given(st.sampled_from(COMMANDS), st.binary(max_size=200), bindings)
def test_bytes_on_standard_input(cli, command, data, binds):
    _ok(cli(command, "-", *binds, *EXTRA.get(command, []), input=data))


# --- every command, every option --------------------------------------------------------------
# Options left out: they reach a network (a Dask scheduler) or an encoder (--gif, --mp4), or
# draw many images (--frames): slow, and another test's subject.
SKIPPED_OPTIONS = {"--scheduler", "--gif", "--mp4", "--frames"}
# Choices left out for speed: images need a layout and a rasteriser; dask starts a cluster.
SLOW_CHOICES = {"png", "pdf", "dask"}
# Options whose number is a count of work (steps, points, sheets): small values, or wrong ones.
COUNTS = {"--steps", "--epochs", "--points", "--count", "--save-every", "--depth", "--order"}
OUTPUTS = {"--output", "--junit", "--log", "--plot", "--answers"}
NAMES = {"--of", "--wrt", "--keep", "--focus", "--expect-column", "--blank"}
PAIRS = {"--bind", "--expect", "--expect-grad", "--expect-hessian", "--tangent", "--vector"}
# Per file option: the files it reads when all is well; any other file of the pool otherwise.
GOOD_FILES = {
    "args": ["prog.cg", "vec.cg", "loop.cg", "tensor.cg", "sample:seed", "sample:linear", "-"]
    + ["sample:mlp", "sample:rnn", "\udcff\udcfe.cg"],
    "--bindings": ["b.json", "arrays.npz"],
    "--rows": ["rows.csv", "rows.jsonl", "arrays.npz", "huge.csv"],
    "--val-rows": ["rows.csv"],
    "--spec": ["spec.toml"],
    "--file": ["prog.cg"],
}
GOOD_NUMBERS = ["1", "2", "0.5", "3", "1e-3", "0"]
BAD_NUMBERS = ["-1", "1e-320", "1e308", "1e400", "nan", "inf", "-inf", "9" * 40, "1_0", "0x1f"]
BAD_NUMBERS += ["١٢", "１", "−1", "", " ", "x", "1,2", "[1, 2]", "None"]
GOOD_VALUES = ["1", "2", "-0.5", "[1, 2]", "[[1, 2], [3, 4]]", "@x.npy", "1e300", "[0, 0]"]
CARELESS = st.shared(st.booleans(), key="careless")  # one draw per command line
CARELESS = st.shared(st.booleans(), key="careless")  # one draw per command line
COUNTS_GOOD, COUNTS_BAD = ["1", "2", "3"], ["0", "-2", "1.5", "nan", "1e400", "x", "", "١"]


def _pick(draw, good: list[str], bad: list[str]) -> str:
    """A value that works (so that the command gets on to its work), or, in half the command
    lines, one that does not now and then."""
    careless = draw(CARELESS)
    return draw(st.sampled_from(bad if careless and not draw(st.integers(0, 3)) else good))


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """Files for file arguments: good ones, and every kind of bad one."""
    import numpy as np

    root = tmp_path_factory.mktemp("fuzz")
    files = {
        "prog.cg": b"input y = 2\np = x * y\ng = sin(p) + log(x)\n",
        "vec.cg": b"g = sum(W @ x + b)\n",
        "loop.cg": b"h = 0\nfor t in range(len(x)):\n    h = h * y + x[t]\ng = h if h > 0 else -h\n",
        "tensor.cg": b"input b = [0, 1]\nz = softmax(x * y) + b\ng = logsumexp(z) + sum(exp(x) / y)\n",
        "huge.csv": b'x,y\n1e308,1e308\n-1e308,0\n0,0\n1e-320,-1\n"[1, 2]",2\n',
        "empty.cg": b"",
        "garbage.bin": bytes(range(256)) * 4,
        os.fsdecode(b"\xff\xfe.cg"): b"g = x * 2\n",
        "deep.json": b'{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        "deep.jsonl": b'{"x": 1}\n{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n",
        "b.json": b'{"x": 1.5, "W": [[1, 2], [3, 4]], "b": [0, 1]}',
        "wrong.json": b'{"x": "one", "y": [1, [2]], "z": true}',
        "rows.csv": b"x,y\n1,2\n3,4\n-1,0\n",
        "header.csv": b'"x\ny",x\n1,2\n',
        "bad.csv": b"x,y\n1,2,3\n\x00\xff\n",
        "rows.jsonl": b'{"x": 1, "y": 2}\n{"x": 2}\n',
        "damaged.npz": b"PK\x03\x04" + bytes(100),
        "conf.toml": b'lr = "fast"\nsteps = -3\n[nested]\nx = 1\n',
        "spec.toml": b'[case]\nexpect = "g=2"\nx = [1, 2]\n',
        "notes.txt": b"just text\n",
    }
    for name, data in files.items():
        with open(os.path.join(os.fsencode(root), os.fsencode(name)), "wb") as f:
            f.write(data)
    np.savez(root / "arrays.npz", x=np.arange(3.0), y=np.ones(3))
    (root / "folder").mkdir()
    (root / "out").mkdir()
    np.save(root / "out" / "x.npy", np.arange(4.0))  # x=@x.npy, from the folder commands run in
    names = [*files, "folder", "missing.cg", "arrays.npz", "/dev/null", "sample:seed", "-"]
    return root, names


def _file(draw, option: str, root, names: list[str]) -> str:
    name = _pick(draw, GOOD_FILES.get(option, names), names)
    return name if name.startswith(("/", "sample:")) or name == "-" else str(root / name)


def _number(draw, param) -> str:
    kind = type(param.type).__name__
    low = getattr(param.type, "min", None) or 0
    high = getattr(param.type, "max", None) or low + 3
    if "Int" in kind:
        return _pick(draw, [str(n) for n in range(low, min(high, low + 3) + 1)], BAD_NUMBERS)
    return _pick(draw, GOOD_NUMBERS, BAD_NUMBERS)


def _value(draw, param, root, names) -> str:
    option = max(param.opts, key=len)
    if option in OUTPUTS:
        ext = draw(st.sampled_from(["json", "csv", "txt", "npz", "svg", "md", "xml", "cg", ""]))
        where = draw(st.sampled_from(["out", "out", "missing", "folder"]))
        # never a device: as root, a writer that renames over its target would replace it
        return draw(st.sampled_from([f"{root}/{where}/f.{ext}", "-", str(root)]))
    if option in COUNTS:
        return _pick(draw, COUNTS_GOOD, COUNTS_BAD)
    if option in NAMES:
        return _pick(draw, ["x", "y", "g", "p", "x,y"], ["nope", "", "ｘ", "x\x1b", "1"])
    if option in PAIRS:
        name = draw(st.sampled_from(["x", "y", "g", "b"]))
        return name + "=" + _pick(draw, GOOD_VALUES, BAD_NUMBERS)
    choices = getattr(param.type, "choices", None)
    if choices:
        return _pick(draw, [c for c in choices if c not in SLOW_CHOICES], ["bogus", ""])
    if isinstance(param.type, click.Path) or option in ("--rows", "--val-rows", "--config"):
        return _file(draw, option, root, names)
    if option in ("--range", "--betas"):
        return _pick(draw, ["-1,1", "0.5,0.9"], ["1,-1", "nan,1", "1", "", "a,b"])
    if option == "--fit":
        return _pick(draw, ["W,b", "x"], ["", "?", "W,W"])
    return _number(draw, param)


@st.composite
def command_lines(draw, pool):
    root, names = pool
    command = draw(st.sampled_from(COMMANDS))
    args: list[str] = []
    for param in main.commands[command].params:
        if isinstance(param, click.Argument):
            if param.name == "args":  # SOURCE (unless -e or -f) and NAME=VALUE bindings
                source = _file(draw, "args", root, names)
                binds = draw(st.lists(st.sampled_from(["x", "y", "W", "b", "q"]), unique=True))
                args += [source] + [f"{n}={_pick(draw, GOOD_VALUES, BAD_NUMBERS)}" for n in binds]
            else:
                args.append(_pick(draw, [*sorted(main.commands), "bash", "seed"], ["", "?"]))
            continue
        option = max(param.opts, key=len)
        if option in SKIPPED_OPTIONS or draw(st.integers(0, 4)):
            continue
        if getattr(param, "is_flag", False):
            args.append(param.opts[0])
        elif option in ("--expr", "--file") and args and args[0] != "":
            args[0:1] = [param.opts[0], _pick(draw, ["g = x * 2"], ["", "g = (", "\x1b"])]
            if option == "--file":
                args[1] = _file(draw, "--file", root, names)
        else:
            args += [param.opts[0], _value(draw, param, root, names)]
    return command, args


# FUZZ_EXAMPLES=5000 for a longer hunt, with a new seed each run
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 400))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_every_command_with_random_options(cli, pool, data, monkeypatch):
    """Each command with random options and values, files of every kind: a documented exit
    code, a message, no traceback, no Python warning (outputs are named only under the pool)."""
    root, _ = pool
    monkeypatch.chdir(root / "out")  # default outputs (render's seed.svg) land here
    command, args = data.draw(command_lines(pool))
    result = cli(command, *args, input=b"g = x * 2\n")
    stderr = re.sub("\x1b\\[[0-9;]*m", "", result.stderr)  # --color always: colours asked for
    assert result.exit_code in DOCUMENTED, (command, args, result.exit_code, stderr[-800:])
    assert "Traceback" not in stderr + result.stdout, (command, args)
    assert not HIDDEN.search(stderr), (command, args, stderr)
    assert "warning:" not in stderr, (command, args, stderr)
