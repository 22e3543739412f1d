"""Every number option of every command against the values that broke them (issue 25): nan,
inf, -inf, 1e400, -1, 0, 2.5, 10**30 and text. Each is refused with exit 2 and a message
naming the option, or runs as a user would expect; never exit 70, never a silent nonsense run.
The options are found from the commands themselves, so a new one is covered when it is added."""

from __future__ import annotations

import click
import pytest

from cgraph_cli.cli import main

PROGRAM = ["-e", "input x = 3; f = (x - 1)^2"]
#: What each command runs on (a command not here takes PROGRAM).
BASE = {
    "train": [*PROGRAM, "--wrt", "x", "--steps", "2"],
    "worksheet": ["sample:seed"],
    "check": [*PROGRAM, "--expect", "f=4"],
}
HUGE = str(10**30)
NUMBER_TYPES = (click.types.IntParamType, click.types.FloatParamType)


def _number_options() -> list[tuple[str, str]]:
    ctx = click.Context(main)
    found = []
    for name in sorted(main.list_commands(ctx)):
        command = main.get_command(ctx, name)
        assert command is not None
        for p in command.params:
            numeric = isinstance(p.type, NUMBER_TYPES) or type(p.type).__name__ in (
                "Interval",
                "Floats",
            )
            if isinstance(p, click.Option) and not p.is_flag and numeric:
                found.append((name, max(p.opts, key=len)))
    return found


OPTIONS = _number_options()
#: (command, option, value) -> the exit code of a value that is taken (0, or 1: a check fails).
TAKEN = {
    **{("gradcheck", "--seed", v): 0 for v in ("-1", "0", HUGE)},
    **{("worksheet", "--seed", v): 0 for v in ("-1", "0", HUGE)},
    ("gradcheck", "--points", "0"): 0,  # the given bindings, no random points
    ("gradcheck", "--eps", "2.5"): 0,
    ("gradcheck", "--eps", HUGE): 1,  # a finite difference that far off fails the check
    **{
        (c, o, v): 0
        for c in ("check", "gradcheck")
        for o in ("--rtol", "--atol")
        for v in ("0", "2.5", HUGE)
    },  # fmt: skip
    **{
        ("train", o, v): 0
        for o in ("--lr", "--momentum", "--weight-decay", "--clip-norm", "--tol")
        for v in ("2.5", HUGE)
    },  # fmt: skip
    **{
        ("train", o, "0"): 0
        for o in ("--momentum", "--dampening", "--weight-decay", "--tol", "--seed")
    },  # fmt: skip
    **{("train", o, HUGE): 0 for o in ("--step-size", "--save-every", "--seed")},  # fmt: skip
}


def test_every_number_option_is_found():
    assert len(OPTIONS) >= 40
    assert ("train", "--clip-norm") in OPTIONS and ("gradcheck", "--range") in OPTIONS


@pytest.mark.parametrize("command, option", OPTIONS)
def test_numbers_that_are_not_finite_are_refused_naming_the_option(cli, command, option):
    for value in ("nan", "inf", "-inf", "1e400", "abc"):
        result = cli(command, *BASE.get(command, PROGRAM), option, value)
        assert result.exit_code == 2, (command, option, value, result.stderr)
        assert option in result.stderr, (command, option, value, result.stderr)


@pytest.mark.parametrize("command, option", OPTIONS)
def test_edge_numbers_are_refused_naming_the_option_or_taken(cli, command, option, tmp_path):
    for value in ("-1", "0", "2.5", HUGE):
        args = BASE.get(command, PROGRAM)
        if command == "train" and option == "--save-every":
            args = [*args, "-o", str(tmp_path / "w.npz")]
        result = cli(command, *args, option, value)
        expected = TAKEN.get((command, option, value), 2)
        assert result.exit_code == expected, (command, option, value, result.stderr)
        if expected == 2:
            assert option in result.stderr, (command, option, value, result.stderr)


def test_steps_past_what_a_weights_file_counts_are_refused(cli):
    result = cli("train", *BASE["train"][:-2], "--steps", str(10**30))
    assert result.exit_code == 2
    assert "more than 2**53: give fewer --steps or --epochs" in result.stderr


@pytest.mark.parametrize("command, option", OPTIONS)
def test_look_alike_digits_are_not_numbers(cli, command, option):
    """float() and int() take fullwidth and Arabic-Indic digits; an option does not."""
    for value in ("３", "٣", "０.５", "０,１"):
        result = cli(command, *BASE.get(command, PROGRAM), option, value)
        assert result.exit_code == 2, (command, option, value, result.stderr)
        assert option in result.stderr
