"""Shared fixtures: golden-file updating and a runner for the CLI."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import settings

# The same examples on every run (CI must not fail on a draw no one saw before); other seeds
# are swept by hand: python -m pytest --hypothesis-seed=N with a copy of this file's profile
# that leaves derandomize off.
settings.register_profile("cgraph", derandomize=True)
settings.load_profile("cgraph")


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="Rewrite the expected sections of tests/cases/*.cg from the current output.",
    )


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")


def make_runner() -> CliRunner:
    """A CliRunner keeping stdout and stderr apart, on every click pyproject allows."""
    try:  # click 8.1, the floor pyproject declares, mixes stderr into stdout unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:  # click 8.2 dropped the option: stdout and stderr are always apart
        return CliRunner()


@pytest.fixture
def cli():
    """Run `cgraph ARGS...` in-process; returns the click Result (stdout and stderr apart)."""
    from cgraph_cli.cli import main

    runner = make_runner()

    def invoke(*args: str, input: str | bytes | None = None):
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)

    return invoke
