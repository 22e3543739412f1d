"""Every command, every documented exit code, and never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

SEED = str(Path(__file__).resolve().parent.parent / "samples" / "seed.cg")

# Per command: the extra arguments that make it succeed (after SOURCE and bindings).
COMMANDS = {
    "eval": [],
    "grad": [],
    "show": [],
    "dot": [],
    "render": ["--format", "dot", "-o", "-"],
    "explain": [],
    "check": ["--expect", "g=-12"],
    "gradcheck": [],
}


def run(cli, command: str, source: str, *bindings: str, extra=None):
    result = cli(command, source, *bindings, *(COMMANDS[command] if extra is None else extra))
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    return result


@pytest.mark.parametrize("command", COMMANDS)
def test_0_success(cli, command):
    result = run(cli, command, SEED)
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_2_usage(cli, command):
    assert run(cli, command, "missing.cg").exit_code == 2
    assert run(cli, command, SEED, "x").exit_code == 2  # a binding without '='
    assert cli(command, "--no-such-option").exit_code == 2


@pytest.mark.parametrize("command", COMMANDS)
def test_3_invalid_program(cli, command):
    result = run(cli, command, "g = (x + ")
    assert result.exit_code == 3
    assert result.stderr.startswith("<expr>:1:9: error: expected an expression after '+'")


@pytest.mark.parametrize("command", COMMANDS)
def test_4_cannot_evaluate(cli, command):
    result = run(
        cli,
        command,
        "g = log(x)",
        "x=-1",
        extra=["--expect", "g=0"] if command == "check" else None,
    )
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert "log(-1) is undefined" in result.stderr
    result = run(cli, command, SEED, "w=1")
    assert result.exit_code == 4 and "no input named 'w'" in result.stderr


@pytest.mark.parametrize(
    "command, extra",
    [
        ("check", ["--expect", "g=12"]),
        ("gradcheck", ["--eps", "0.5", "--atol", "0", "--rtol", "1e-12"]),
    ],
)
def test_1_check_failed(cli, command, extra):
    source = SEED if command == "check" else "y = exp(3 * x)"
    result = run(cli, command, source, *(["x=1"] if command == "gradcheck" else []), extra=extra)
    assert result.exit_code == 1, result.stdout
