"""The tables laid out without rich (render/simple.py) are, character for character, what
rich prints for them to a file or a pipe; anything else is left to rich."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgraph_cli import evaluate, grad
from cgraph_cli.app.report import eval_report, grad_report
from cgraph_cli.render.simple import gradient_text, output_text
from cgraph_cli.render.table import gradient_table, output_line


def _rich(renderable) -> str:
    """What cli/output.write_rich prints to a file or a pipe, with no colour."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        highlight=False,
        width=10_000,
        color_system=None,
        force_terminal=False,
        no_color=True,
        soft_wrap=False,
    )
    console.print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().split("\n")).rstrip("\n")


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True)
labels = names | st.sampled_from(["x + 1", "sin(x) * y", "-x", "x ^ 2 / 3", "a_b  -  c"])
numbers = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 1e-300])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    labels,
    numbers,
    st.dictionaries(names, st.tuples(numbers, numbers), max_size=6),
    st.none() | st.integers(1, 12),
)
def test_the_gradient_table_is_what_rich_prints(output, value, inputs, precision):
    report = {
        "output": output,
        "value": value,
        "values": {name: v for name, (v, _) in inputs.items()},
        "gradients": {name: g for name, (_, g) in inputs.items()},
    }
    text = gradient_text(report, precision)
    assert text is not None
    assert text == _rich(gradient_table(report, precision))
    assert output_text(report, precision) == _rich(output_line(report, precision))


@pytest.mark.parametrize(
    ("program", "bindings"),
    [("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}), ("x + 1", {"x": 2}), ("y = 3", {})],
)
def test_reports_of_programs_are_what_rich_prints(program, bindings):
    report = grad_report(grad(program, bindings))
    assert gradient_text(report) == _rich(gradient_table(report))
    report = eval_report(evaluate(program, bindings))
    assert output_text(report) == _rich(output_line(report))


@pytest.mark.parametrize(
    ("program", "bindings"),
    [
        ("y = α * 2", {"α": 1}),  # not ASCII: rich measures it
        ("y = sum(W)", {"W": [1, 2]}),  # a tensor
        ("x[0] + 1", {"x": [1.0]}),  # brackets: markup to rich
    ],
)
def test_what_rich_alone_lays_out_is_left_to_it(program, bindings):
    report = grad_report(grad(program, bindings))
    assert gradient_text(report) is None


def test_the_command_prints_the_same_table_either_way(cli):
    args = ["grad", "g = (x + y) * z", "x=1", "y=3", "z=-3"]
    plain = cli(*args)
    fancy = cli(*args, "--full")  # --full goes through rich
    assert plain.output == fancy.output
    assert plain.output.startswith(" input   value   ∂g/∂input\n")
