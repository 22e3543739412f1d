"""Linear in the program's length and the file's width: counted work, not timed (the seconds
are bench/bench_scale.py's), and the derivative program of names given again is right."""

from __future__ import annotations

import json

import pytest

from cgraph_cli import grad, parse, to_source
from cgraph_cli.app.api import derivative_program
from cgraph_cli.parse import unparse


def _rebinding(n: int) -> str:
    """``t`` given again and again; each line reads the value before it."""
    lines = ["input x = 0.5", "t = x * 1.5"]
    for i in range(2, n):
        lines.append("t = sin(t) * 0.5 + t * 0.25" if i % 2 == 0 else "t = t * 0.5 - x")
    return "\n".join(lines)


@pytest.mark.parametrize("n", [6, 9, 40])
def test_the_derivative_program_of_a_name_given_again_computes_the_gradient(cli, n):
    # Texts written inline that said `t` were written again from their arguments' stale
    # texts: `cos(0.5 * t - x)` read the last t, and the program's dt_dx was wrong.
    program = _rebinding(n)
    text = cli("diff", program).stdout
    assert cli("eval", "-", "--format", "plain", input=text).stdout.strip() == (
        f"dt_dx={json.loads(cli('grad', program, '--format', 'json').stdout)['gradients']['x']}"
    )


def test_printing_a_derivative_program_writes_each_node_a_bounded_number_of_times(monkeypatch):
    # Every text that said a name was written again each time the name was given again:
    # 4 million writes for 4,000 lines, 67 s for `cgraph diff` on 8,000.
    writes = []
    real = unparse._node_text

    def counted(graph, i, ref, exprs):
        writes.append(i)
        return real(graph, i, ref, exprs)

    monkeypatch.setattr(unparse, "_node_text", counted)
    for n in (500, 2000):
        graph = derivative_program(parse(_rebinding(n))).graph
        writes.clear()
        text = to_source(graph)
        assert len(writes) <= 3 * len(graph.ops), (n, len(writes), len(graph.ops))
        again = grad(parse(text), {"x": 0.5})
        assert again.value == grad(_rebinding(n), {"x": 0.5}).gradients["x"]


def test_a_parsed_program_giving_names_again_prints_as_written():
    text = "c = a * 2\nc = c * c + a\ng = c * c\n"
    assert to_source(parse(text)) == text


def test_a_wide_file_with_a_column_twice_is_refused_by_name(cli, tmp_path):
    # Counting each name's copies made the check quadratic: 100,000 columns took 100 s.
    data = tmp_path / "wide.csv"
    names = [f"c{i}" for i in range(100_000)] + ["x", "c7"]
    data.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    result = cli("eval", "y = x * 2", "--rows", str(data))
    assert result.exit_code == 2
    assert f"{data} has two columns named c7" in result.stderr


LONG = "q" * 1_000_000  # a column or key name from data: a message shows it cut


def test_a_long_column_name_is_cut_in_messages(cli, tmp_path):
    twice = tmp_path / "twice.csv"
    twice.write_text(f"{LONG},x,{LONG}\n1,2,3\n")
    result = cli("eval", "y = x * 2", "--rows", str(twice))
    assert result.exit_code == 2, result.stderr
    assert "has two columns named qqq" in result.stderr
    assert "(1,000,000 characters)" in result.stderr and len(result.stderr) < 500


def test_many_ignored_columns_are_counted_not_listed(cli, tmp_path):
    wide = tmp_path / "wide.csv"
    names = [f"c{i}" for i in range(5000)] + ["x"]
    wide.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    result = cli("eval", "y = x * 2", "--rows", str(wide), "--strict")
    assert result.exit_code == 2
    assert "c19 and 4,980 more" in result.stderr and len(result.stderr) < 600


def test_a_long_binding_name_is_cut_in_messages(cli, tmp_path):
    bindings = tmp_path / "b.json"
    bindings.write_text(f'{{"{LONG}": 1, "x": 2}}')
    result = cli("eval", "y = x * 2", "--bindings", str(bindings))
    assert result.exit_code == 4, result.stderr
    assert "no input named 'qqq" in result.stderr and len(result.stderr) < 500


def _smart_lines(graph_text: str) -> tuple[int, int]:
    """Lines of passes/smart.py run to build ``graph_text``'s derivative program, and the
    number of nodes that program has."""
    import sys

    from cgraph_cli.passes import smart

    lines = [0]

    def local(frame, event, arg):
        lines[0] += event == "line"
        return local

    def calls(frame, event, arg):
        return local if frame.f_code.co_filename == smart.__file__ else None

    sys.settrace(calls)
    try:
        graph = derivative_program(parse(graph_text)).graph
    finally:
        sys.settrace(None)
    return lines[0], len(graph.ops)


def test_simplifying_the_derivative_of_a_long_product_is_linear():
    # The sign rule walked each partial derivative's product down its left side to look for a
    # negative constant: `1 - x * x * ... * x` (4,000 factors) took 4 times as long to
    # differentiate as before the walk, the more the longer.
    per_node = []
    for n in (250, 1000):
        lines, nodes = _smart_lines("y = 1 - " + " * ".join(["x"] * n))
        per_node.append(lines / nodes)
    assert per_node[1] < 1.25 * per_node[0], per_node  # was 3.4 times: quadratic


def test_printing_a_long_sum_written_inline_holds_memory_linear_in_its_length():
    # Every partial sum of a sum written inline (the gradient of x * ... * x, a term per
    # factor) kept its whole text: 4,000 factors held 121 MB at once, 16,000 factors 2 GB.
    import tracemalloc

    peaks = []
    for n in (1000, 4000):
        graph = derivative_program(parse("y = " + " * ".join(["x"] * n))).graph
        tracemalloc.start()
        text = to_source(graph)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert grad(parse(text), {"x": 1.0}).value == n  # dy_dx, the program's output
    assert peaks[1] < 6 * peaks[0], peaks  # four times the length: 16 times, were it square
