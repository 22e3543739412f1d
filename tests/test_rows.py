"""Rows of a data file (--rows): every row's result equal to the interpreter's for that row,
each format read and written, row order kept, errors per row, --reduce against the sum of the
per-row gradients, and the usage errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.csv as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import INPUTS, TENSOR_SHAPES, programs, tensor_expressions

from cgraph_cli import CgraphError, parse, run_rows, validate
from cgraph_cli.app import api
from cgraph_cli.data.datafiles import read_chunks
from cgraph_cli.data.datawriter import RowWriter
from cgraph_cli.passes.derivatives import derivative_name, derivative_program

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NEURON = "samples/neuron.cg"


def _close(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=1e-12, atol=1e-12))


def _reference(graph, row: dict, mode: str):
    """The interpreter's answer for one row: {column: value}, or None when it fails."""
    try:
        if mode == "eval":
            return dict(api.evaluate(graph, row).named)
        g = api.grad(graph, row)
    except CgraphError:
        return None
    base = graph.output_label if graph.output_label.isidentifier() else "out"
    return {
        graph.output_label: g.value,
        **{derivative_name(base, (w,)): v for w, v in g.gradients.items()},
    }


def _derived(graph, row: dict):
    """The derivative program's answer for one row, as the interpreter evaluates it."""
    program = derivative_program(graph, intermediates=False)
    named = api.evaluate(program.graph, row).named
    base = graph.output_label if graph.output_label.isidentifier() else "out"
    return {
        graph.output_label: named[program.output],
        **{derivative_name(base, (w,)): named[h] for w, h in program.gradients.items()},
    }


def _rows_of(result) -> list[dict]:
    """The result's tables as one dict per row."""
    out = []
    for table in result.tables:
        n = len(table["error"])
        for r in range(n):
            out.append({k: v[r] for k, v in table.items()})
    return out


def _check_against_interpreter(graph, rows: list[dict], shared: dict, mode: str, chunk: int):
    columns = {k: [row[k] for row in rows] for k in rows[0]}
    chunks = []
    for start in range(0, len(rows), chunk):
        part = {k: np.array(v[start : start + chunk], dtype=float) for k, v in columns.items()}
        chunks.append(("data", start, part))
    result = run_rows(graph, chunks, mode=mode, bindings=shared, show_all=True)
    got = _rows_of(result)
    assert len(got) == len(rows)
    for k, (row, out) in enumerate(zip(rows, got)):
        expected = _reference(graph, {**shared, **row}, mode)
        if expected is None and mode == "grad" and out["error"] is None:
            # The interpreter's reverse pass computes every partial, and stops at one that is
            # undefined even where a zero derivative multiplies it (pow(t, sign(x)) at t < 0);
            # the derivative program drops such paths: the row has its value (cgraph diff's).
            expected = _derived(graph, {**shared, **row})
        if expected is None:
            assert out["error"] and out["error"].startswith(f"row {k + 1}: "), (k, out)
            continue
        assert out["error"] is None, (k, out["error"])
        for name, value in expected.items():
            assert _close(out[name], value), (k, name, out[name], value)


# No magnitudes below 1e-100 (0 instead): there y * y underflows, and a derivative that is 0 in
# exact arithmetic ((0.2 * y) / y: 0.2/y - 0.2*y/y^2) comes out as rounding noise of order 1e204
# whose size depends on the order of operations, which the two engines need not share.
_cell = st.floats(-3, 3).map(lambda v: 0.0 if abs(v) < 1e-100 else v) | st.sampled_from(
    [0.0, -1.0, 1.0, 1e3, 1e300, math.inf]
)


@PROPERTY
@given(programs(), st.lists(st.tuples(_cell, _cell, _cell), min_size=1, max_size=9), st.booleans())
def test_every_row_equals_the_interpreter(program, points, eval_mode):
    graph = validate(parse(program))
    per_row = [n for n in INPUTS if n in graph.inputs][:2]
    if not per_row:
        return
    shared = {n: 0.7 for n in graph.inputs if n not in per_row}
    rows = [{n: p[k] for k, n in enumerate(per_row)} for p in points]
    mode = "eval" if eval_mode else "grad"
    _check_against_interpreter(graph, rows, shared, mode, chunk=4)


@PROPERTY
@given(tensor_expressions(max_leaves=4), st.integers(0, 10**6))
def test_tensor_rows_equal_the_interpreter(expression, seed):
    graph = validate(parse(f"y = sum({expression})"))
    rng = np.random.default_rng(seed)
    names = list(graph.inputs)
    if not names:
        return
    per_row = names[:1]
    shared = {n: rng.uniform(-2, 2, TENSOR_SHAPES[n]) for n in names[1:]}
    shared = {n: float(v) if np.ndim(v) == 0 else v for n, v in shared.items()}
    rows = [{n: rng.uniform(-2, 2, TENSOR_SHAPES[n]).tolist() for n in per_row} for _ in range(3)]
    chunks = [("data", 0, {n: [row[n] for row in rows] for n in per_row})]
    result = run_rows(graph, chunks, mode="grad", bindings=shared)
    for k, (row, out) in enumerate(zip(rows, _rows_of(result))):
        expected = _reference(graph, {**shared, **row}, "grad")
        if expected is None:
            assert out["error"], k
            continue
        assert out["error"] is None, out["error"]
        for name, value in expected.items():
            assert _close(np.asarray(out[name], dtype=float), value), (name, out[name], value)


def test_a_value_absorbed_on_the_way_is_still_an_error():
    # 1 / (1 / x) at x = 0: NumPy's inf turns back into 0, the interpreter stops at 1 / 0
    graph = parse("y = 1 / (1 / x)")
    result = run_rows(graph, [("d", 0, {"x": np.array([0.0, 2.0])})])
    table = result.tables[0]
    assert table["error"][0].startswith("row 1: ") and table["error"][1] is None
    assert math.isnan(table["y"][0]) and table["y"][1] == 2.0


def test_reduce_is_the_sum_of_the_rows_gradients():
    graph = parse(open("samples/logistic.cg").read())
    rng = np.random.default_rng(1)
    xs, ts = rng.normal(size=50), (rng.random(50) > 0.5).astype(float)
    chunks = [("d", 0, {"x": xs[:20], "t": ts[:20]}), ("d", 20, {"x": xs[20:], "t": ts[20:]})]
    total = run_rows(graph, chunks, mode="grad", reduce="sum")
    mean = run_rows(graph, chunks, mode="grad", reduce="mean")
    rows = [api.grad(graph, {"x": x, "t": t}) for x, t in zip(xs, ts)]
    assert set(total.gradients) == {"w", "b"}  # the shared inputs only
    for w in ("w", "b"):
        expected = sum(g.gradients[w] for g in rows)
        assert _close(total.gradients[w], expected)
        assert _close(mean.gradients[w], expected / 50)
    assert _close(total.value, sum(g.value for g in rows))


FORMATS = ["csv", "tsv", "jsonl", "parquet", "npz"]


def _write_input(path, fmt, columns: dict):
    writer = RowWriter(str(path), fmt)
    writer.write({k: np.asarray(v, dtype=float) for k, v in columns.items()})
    writer.close()


def _read_output(path, fmt) -> dict:
    if fmt == "npz":
        with np.load(path) as data:
            return {k: data[k].tolist() for k in data.files}
    if fmt == "jsonl":
        rows = [json.loads(line) for line in open(path)]
        return {k: [r[k] for r in rows] for k in rows[0]}
    if fmt == "parquet":
        return pq.read_table(path).to_pydict()
    delimiter = "\t" if fmt == "tsv" else ","
    return pc.read_csv(path, parse_options=pc.ParseOptions(delimiter=delimiter)).to_pydict()


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_in_and_out_keeps_row_order(cli, tmp_path, fmt):
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(-2, 2, 37), rng.uniform(-2, 2, 37)
    source, target = tmp_path / f"in.{fmt}", tmp_path / f"out.{fmt}"
    _write_input(source, fmt, {"x1": x1, "x2": x2})
    result = cli("grad", NEURON, "--rows", str(source), "--chunk-rows", "5", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    assert "37 rows in" in result.stderr and "0 errors" in result.stderr
    out = _read_output(target, fmt)
    assert list(out) == ["o", "do_dx1", "do_dx2", "do_dw1", "do_dw2", "do_db", "error"]
    graph = parse(open(NEURON).read())
    for k in range(37):
        g = api.grad(graph, {"x1": x1[k], "x2": x2[k]})
        assert _close(out["o"][k], g.value)
        assert _close(out["do_dw1"][k], g.gradients["w1"])
    assert all(e in (None, "") for e in out["error"])


def test_tensor_cells_as_json_text_and_as_lists(cli, tmp_path):
    program = "input W = [[1, 2], [3, 4]]\ny = sum(W @ x) * t"
    csv = tmp_path / "in.csv"
    csv.write_text('x,t\n"[1, 2]",1\n"[3, 4]",0.5\n')
    out = tmp_path / "out.parquet"
    assert cli("grad", "-e", program, "--rows", str(csv), "-o", str(out)).exit_code == 0
    table = pq.read_table(out).to_pydict()
    assert table["y"] == [16.0, 18.0]
    assert table["dy_dx"] == [[4.0, 6.0], [2.0, 3.0]]  # a list column
    parquet = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": [[1.0, 2.0], [3.0, 4.0]], "t": [1.0, 0.5]}), parquet)
    result = cli("eval", "-e", program, "--rows", str(parquet))
    assert result.stdout.splitlines()[1:] == ["16,", "18,"]


def test_a_failing_row_does_not_stop_the_others(cli, tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("x,k\n4,1\n-1,2\n,3\n9,4\nabc,5\n")
    result = cli("eval", "-e", "y = sqrt(x)", "--rows", str(data), "--keep", "k")
    assert result.exit_code == 4
    lines = result.stdout.splitlines()
    assert lines[0] == '"k","y","error"'
    assert lines[1] == '"1",2,'  # a kept column as it was read: text
    assert lines[2].startswith('"2",,"row 2: sqrt(-1) is undefined')
    assert lines[3].startswith('"3",,"row 3: the cell of x is empty')
    assert lines[4] == '"4",3,'
    assert lines[5].startswith("\"5\",,\"row 5: the value of 'x' is not a number: 'abc'")
    assert "5 rows in" in result.stderr and "3 errors" in result.stderr
    assert "3 of 5 rows could not be evaluated" in result.stderr
    allowed = cli("eval", "-e", "y = sqrt(x)", "--rows", str(data), "--keep", "k", "--allow-errors")
    assert allowed.exit_code == 0 and allowed.stdout == result.stdout


def test_reduce_on_the_command_line(cli, tmp_path):
    result = cli(
        "grad", "samples/logistic.cg", "--rows", "samples/data/train.csv", "--reduce", "mean",
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["reduce"] == "mean" and report["rows"] == 40 and report["errors"] == 0
    assert set(report["gradients"]) == {"w", "b"}
    text = cli("grad", "samples/logistic.cg", "--rows", "samples/data/train.csv", "--reduce", "sum")
    assert "∂(sum(loss))/∂input" in text.stdout


def test_standard_input_globs_and_keep(cli, tmp_path):
    result = cli("eval", "-e", "y = 2 * x", "--rows", "-", "--keep", "id", input="id,x\na,1\nb,2\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ['"id","y","error"', "a,2,", "b,4,"]
    (tmp_path / "part-1.csv").write_text("x\n1\n2\n")
    (tmp_path / "part-2.csv").write_text("x\n3\n")
    both = cli("eval", "-e", "y = 2 * x", "--rows", str(tmp_path / "part-*.csv"))
    assert both.stdout.splitlines()[1:] == ["2,", "4,", "6,"]


def test_chunks_and_a_file_larger_than_a_chunk_give_the_same_rows(tmp_path):
    path = tmp_path / "big.parquet"
    x = np.linspace(-1, 1, 1000)
    pq.write_table(pa.table({"x": x}), path)
    graph = parse("y = tanh(3 * x) + x^2")
    small = run_rows(graph, read_chunks([str(path)], "parquet", 7))
    large = run_rows(graph, read_chunks([str(path)], "parquet", 10_000))
    assert len(small.tables) == 143 and len(large.tables) == 1
    assert np.array_equal(np.concatenate([t["y"] for t in small.tables]), large.tables[0]["y"])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["-e", "y = x * w"], 4, "input 'w' has no value: no column of"),
        (["-e", "y = x * w", "w=1", "x=2"], 2, "'x' is a column of"),
        (["-e", "y = x * 2", "--strict"], 2, "columns that are not inputs: z"),
        (["-e", "y = x * 2", "--keep", "q"], 2, "has no column q"),
        (["-e", "y = a * 2", "a=1"], 2, "no column of"),
        (["-e", "y = x * 2", "--format", "plain"], 2, "--format plain"),
    ],
)
def test_usage_errors(cli, tmp_path, args, code, message):
    data = tmp_path / "in.csv"
    data.write_text("x,z\n1,2\n")
    result = cli("eval", "--rows", str(data), *args)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_reduce_usage_errors(cli, tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("x,t\n1,0\n")
    assert cli("grad", "samples/logistic.cg", "--reduce", "sum").exit_code == 2
    per_row = cli(
        "grad", "samples/logistic.cg", "--rows", str(data), "--reduce", "sum", "--wrt", "x"
    )
    assert per_row.exit_code == 2 and "'x' has a value per row" in per_row.stderr
    unknown = cli("eval", "-e", "y = x", "--rows", str(tmp_path / "in.txt"))
    assert unknown.exit_code == 2 and "cannot read" in unknown.stderr
    (tmp_path / "in.txt").write_text("x\n1\n")
    unknown = cli("eval", "-e", "y = x", "--rows", str(tmp_path / "in.txt"))
    assert unknown.exit_code == 2 and "--rows-format" in unknown.stderr


def test_check_rows_every_row_a_case(cli, tmp_path):
    result = cli(
        "check", "sample:logistic", "--rows", "sample:cases.csv", "--expect-column", "loss",
        "--rtol", "1e-6", "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["passed"], report["failed"], report["errors"]) == (6, 0, 0)
    assert report["checks"][0]["case"] == "row 1"
    cases = tmp_path / "cases.csv"
    cases.write_text("x,t,want\n3,1,0.474076984\n-1,0,9\n3,,1\n")
    junit = tmp_path / "report.xml"
    failing = cli(
        "check", "sample:logistic", "--rows", str(cases), "--expect-column", "loss=want",
        "--rtol", "1e-6", "--junit", str(junit),
    )  # fmt: skip
    assert failing.exit_code == 1
    assert "row 2:" in failing.stdout and "FAIL" in failing.stdout
    assert "the cell of t is empty" in failing.stdout  # row 3: an error of its case
    xml = junit.read_text()
    assert xml.count("<testcase") == 3 and "<failure" in xml and "<error" in xml
    assert cli("check", "sample:logistic", "--rows", str(cases)).exit_code == 2
    unknown = cli("check", "sample:logistic", "--rows", str(cases), "--expect-column", "los")
    assert unknown.exit_code == 2 and "did you mean" in unknown.stderr


def test_rows_of_their_own_shapes_and_types(cli, tmp_path):
    ragged = tmp_path / "ragged.csv"
    ragged.write_text('x\n"[1,2]"\n"[1,2,3]"\n"[4,5]"\n')
    result = cli("eval", "-e", "y = 2 * x", "--rows", str(ragged), "-q")
    assert result.stdout.splitlines()[1:] == [
        '"[2.0, 4.0]",',
        '"[2.0, 4.0, 6.0]",',
        '"[8.0, 10.0]",',
    ]
    lines = ["x,t"] + [f"{k / 7:.3f},1" for k in range(3000)] + ["abc,1", "2,"]
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("\n".join(lines) + "\n")  # a word after the first block of the reader
    result = cli("eval", "sample:logistic", "--rows", str(mixed), "--chunk-rows", "100", "-q")
    assert result.exit_code == 4
    out = result.stdout.splitlines()
    assert len(out) == 3003 and "row 3001: the value of 'x' is not a number" in out[-2]
    assert "row 3002: the cell of t is empty" in out[-1]
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"x": 3, "t": 1}\n{"x": "2", "t": 0}\n{"x": 1}\n\n{"x": true, "t": 1}\n')
    result = cli("eval", "sample:logistic", "--rows", str(jsonl), "--format", "json", "-q")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["error"] is None for r in rows] == [True, True, False, False]
    assert "boolean" in rows[3]["error"] and "row 4" in rows[3]["error"]


def test_every_file_binds_the_same_inputs(cli, tmp_path):
    (tmp_path / "p1.csv").write_text("x,t\n1,1\n")
    (tmp_path / "p2.csv").write_text("t,x,id\n1,2,a\n")  # other order, one more column
    (tmp_path / "p3.csv").write_text("x\n1\n")
    both = cli("eval", "sample:logistic", "--rows", str(tmp_path / "p[12].csv"), "-q")
    assert both.exit_code == 0 and len(both.stdout.splitlines()) == 3
    strict = cli("eval", "sample:logistic", "--rows", str(tmp_path / "p[12].csv"), "--strict")
    assert strict.exit_code == 2 and "p2.csv has columns that are not inputs: id" in strict.stderr
    missing = cli("eval", "sample:logistic", "--rows", str(tmp_path / "p*.csv"))
    assert missing.exit_code == 2 and "p3.csv has no column t" in missing.stderr
    assert missing.stdout == ""  # every file checked before any row is written


def test_what_a_run_over_rows_refuses(cli, tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("x,t\n3,1\n")
    named_error = cli("eval", "-e", "error = 2 * x", "--rows", str(data))
    assert named_error.exit_code == 2 and "'error' names the column" in named_error.stderr
    same = cli("eval", "sample:logistic", "--rows", str(data), "-o", str(data))
    assert same.exit_code == 2 and "is the file --rows reads" in same.stderr
    assert data.read_text() == "x,t\n3,1\n"
    assert cli("eval", "-e", "y = x", "x=1", "--keep", "x").exit_code == 2  # without --rows
    vectors = tmp_path / "vectors.csv"
    vectors.write_text('x\n"[1, 2]"\n"[3, 4]"\n')
    tensor = cli("grad", "-e", "y = 2 * x", "--rows", str(vectors))
    assert tensor.exit_code == 4 and tensor.stderr.count("error:") == 1
    stdin = cli("eval", "-", "--rows", "-", input="y = 2 * x\n")
    assert stdin.exit_code == 2 and "not both" in stdin.stderr
    header = tmp_path / "header.csv"
    header.write_text("x,t\n")
    out = tmp_path / "out.csv"
    assert cli("eval", "sample:logistic", "--rows", str(header), "-o", str(out)).exit_code == 0
    assert out.read_text() == '"loss","error"\n'


def test_of_runs_the_whole_program_as_eval_does(cli, tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("x,t\n1000,1\n1,1\n")
    rows = cli("eval", "sample:logistic", "--rows", str(data), "--of", "z", "-q")
    single = cli("eval", "sample:logistic", "x=1000", "t=1", "--of", "z")
    assert single.exit_code == 4 and rows.exit_code == 4
    assert "log(0) is undefined" in rows.stdout.splitlines()[1]
    assert rows.stdout.splitlines()[2] == "-0.5,"


@PROPERTY
@given(programs(conditions=True), st.integers(0, 1000))
def test_gradcheck_at_many_points_equals_one_point_at_a_time(program, seed):
    # gradcheck --points runs every point at once through the compiled engine; each point's
    # checks are those of gradcheck at that point alone.
    from cgraph_cli.app.gradcheck import check_gradients, gradcheck, random_points

    graph = validate(parse(program))
    if not graph.inputs:
        return
    report = check_gradients(graph, {}, points=12, seed=seed, low=-3, high=3)
    places = random_points(graph, 12, seed, {}, -3, 3)
    alone = [(k, c) for k, p in enumerate(places, 1) for c in gradcheck(graph, p)]
    assert len(report.checks) == len(alone)
    for (k, got), (j, want) in zip(report.checks, alone):
        if want.analytic is None and got.analytic is not None:
            # The interpreter stopped at an undefined partial that a zero derivative
            # multiplies; the derivative program (cgraph diff's) is defined there.
            base = graph.output_label if graph.output_label.isidentifier() else "out"
            derived = _derived(graph, places[k - 1])[derivative_name(base, (got.name,))]
            assert math.isclose(got.analytic, derived, rel_tol=1e-9, abs_tol=1e-12)
            continue
        assert (k, got.name, got.status) == (j, want.name, want.status), (got, want)
        for a, b in ((got.analytic, want.analytic), (got.numeric, want.numeric)):
            assert (a is None) == (b is None) and (
                a is None or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
            )


def test_an_output_named_like_its_input_gets_its_value_and_its_gradient_columns(cli, tmp_path):
    (tmp_path / "p.cg").write_text("x = sin(x) * 3\n")
    (tmp_path / "d.csv").write_text("x\n1\n")
    r = cli("grad", str(tmp_path / "p.cg"), "--rows", str(tmp_path / "d.csv"), "-q")
    assert r.exit_code == 0, r.stderr
    header, row = r.stdout.strip().splitlines()
    assert header == '"x","dx_dx","error"'
    value, gradient = (float(c) for c in row.split(",")[:2])
    assert value == 3 * math.sin(1) and gradient == 3 * math.cos(1)
    kept = cli("grad", str(tmp_path / "p.cg"), "--rows", str(tmp_path / "d.csv"), "--keep", "x")
    assert (
        kept.exit_code == 2
        and "--keep x: a result is written in a column of that name too" in kept.stderr
    )


@pytest.mark.parametrize("x", [36.0, 37.0, 38.0, -37.0, 709.0, -745.0])
def test_a_comparison_of_sigmoid_with_1_is_the_same_on_rows_as_in_eval(cli, tmp_path, x):
    (tmp_path / "p.cg").write_text("y = where(sigmoid(x) >= 1, 1, 0)\n")
    (tmp_path / "d.csv").write_text(f"x\n{x!r}\n")
    alone = cli("eval", str(tmp_path / "p.cg"), f"x={x!r}", "--format", "plain")
    rows = cli("eval", str(tmp_path / "p.cg"), "--rows", str(tmp_path / "d.csv"), "-q")
    assert float(rows.stdout.splitlines()[1].split(",")[0]) == float(alone.stdout.split("=")[1])


@pytest.mark.parametrize(
    "header, program",
    [
        ("lambda,lambda_", "y = lambda * 2 + lambda_"),
        ("math,math_", "y = math * 2 + math_"),
        ("relu,x", "y = relu(x) * 2 + relu"),
        ("np_softmax,sigmoid", "y = np_softmax * 2 + sigmoid(sigmoid)"),
        ("x\u0bf0,x", "y = x\u0bf0 * 2 + x"),
        ("float,len", "y = float * 2 + len"),
    ],
)
def test_inputs_named_like_python_or_the_module_keep_their_own_values_on_rows(
    cli, tmp_path, header, program
):
    (tmp_path / "p.cg").write_text(program + "\n", encoding="utf-8")
    (tmp_path / "d.csv").write_text(f"{header}\n1,5\n", encoding="utf-8")
    a, b = header.split(",")
    for mode in ("eval", "grad"):
        alone = cli(mode, str(tmp_path / "p.cg"), f"{a}=1", f"{b}=5", "--format", "json")
        rows = cli(mode, str(tmp_path / "p.cg"), "--rows", str(tmp_path / "d.csv"), "-q")
        assert alone.exit_code == 0 and rows.exit_code == 0, rows.stderr
        import json

        value = json.loads(alone.stdout)["value"]
        assert float(rows.stdout.splitlines()[1].split(",")[0]) == value


def test_a_csv_file_separated_by_semicolons_is_read_as_spreadsheets_write_it(cli, tmp_path):
    data = tmp_path / "semi.csv"
    data.write_text('x;w;"name; full"\n1;2;a\n3;4;"b, c"\n')
    result = cli("eval", "y = x * w", "--rows", str(data), "--keep", "name; full")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ['"name; full","y","error"', '"a",2,', '"b, c",12,']
    commas = tmp_path / "commas.csv"  # a comma anywhere outside quotes: commas separate
    commas.write_text('x,"w;v"\n1,2\n')
    assert cli("eval", "y = x * 2", "--rows", str(commas)).stdout.splitlines()[1] == "2,"


@pytest.mark.parametrize("mark, given", [("|", "|"), ("\t", "tab"), ("\t", "\\t"), (";", ";")])
def test_delimiter_reads_cells_split_by_that_mark_as_a_comma_file(cli, tmp_path, mark, given):
    rows = [("x", "w", "name"), ("1", "2", "a"), ("3.5", "4", "b")]
    commas, other = tmp_path / "commas.csv", tmp_path / "other.csv"
    commas.write_text("\n".join(",".join(r) for r in rows) + "\n")
    other.write_text("\n".join(mark.join(r) for r in rows) + "\n")
    args = ["grad", "y = x * w", "--keep", "name", "--format", "json"]
    expected = cli(*args, "--rows", str(commas))
    got = cli(*args, "--rows", str(other), "--delimiter", given)
    assert got.exit_code == 0, got.stderr
    assert got.stdout == expected.stdout and '"name": "b"' in got.stdout
    piped = cli(*args, "--rows", "-", "--delimiter", given, input=other.read_text())
    assert piped.stdout == expected.stdout  # standard input too


def test_delimiter_overrides_the_semicolon_guess_and_a_lone_column_hints_at_it(cli, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x;w\n1;2\n")
    told = cli("eval", "y = x * w", "--rows", str(data), "--delimiter", ",")
    assert told.exit_code == 2 and "no column of" in told.stderr
    assert "its one column holds ';': if that splits the columns, say --delimiter ';'" in (
        told.stderr
    )
    pipes = tmp_path / "p.csv"
    pipes.write_text("x|w\n1|2\n")
    hinted = cli("eval", "y = x * w", "--rows", str(pipes))
    assert hinted.exit_code == 2 and "say --delimiter '|'" in hinted.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--delimiter", ":"], "':' is not one cgraph reads: give , ; | or tab"),
        (["--delimiter", ",,"], "',,' is not one cgraph reads"),
        (["--rows-format", "jsonl", "--delimiter", ";"], "--delimiter is for CSV and TSV rows"),
    ],
)
def test_delimiter_mistakes_are_usage_errors(cli, args, message):
    result = cli("eval", "y = x * w", "--rows", "sample:train.csv", *args)
    assert result.exit_code == 2 and message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_delimiter_without_rows_is_refused_in_every_command(cli):
    for command in (["eval"], ["grad"], ["check", "--expect", "y=2"], ["train", "--wrt", "x"]):
        result = cli(*command, "y = x * 2", "x=1", "--delimiter", ";")
        assert result.exit_code == 2, command
        assert "--delimiter is for" in result.stderr and "give --rows FILE" in result.stderr


def test_check_and_train_read_rows_with_a_delimiter(cli, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x|y\n0|1\n1|3\n2|5\n")
    checked = cli("check", "y = 2 * x + 1", "--rows", str(data), "--delimiter", "|",
                  "--expect-column", "y")  # fmt: skip
    assert checked.exit_code == 0 and "3 passed, 0 failed" in checked.stdout
    program = "input w = 0, b = 0; loss = mean((w * x + b - y)^2)"
    args = ["train", program, "--wrt", "w,b", "--lr", "0.1", "--epochs", "300", "--format", "json"]
    trained = cli(*args, "--rows", str(data), "--delimiter", "|", "-o", str(tmp_path / "w.npz"))
    assert trained.exit_code == 0, trained.stderr
    assert json.loads(trained.stdout)["loss"] < 1e-12  # y = 2x + 1 learned from the three rows
    learned = np.load(tmp_path / "w.npz")
    assert learned["w"] == pytest.approx(2, abs=1e-6) and learned["b"] == pytest.approx(1, abs=1e-6)
    config = tmp_path / "train.toml"
    config.write_text("[train]\ndelimiter = 3\n")
    refused = cli(*args, "--rows", str(data), "--config", str(config))
    assert (
        refused.exit_code == 2 and "[train] delimiter: 3 is not one cgraph reads" in refused.stderr
    )


def test_a_kept_input_column_is_written_as_the_numbers_the_program_read(cli, tmp_path):
    data = tmp_path / "k.csv"
    data.write_text("x,w,id\n1,2,007\n3.5,4,b\n")
    result = cli("eval", "y = x * w", "--rows", str(data), "--keep", "x,id", "--format", "json")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["x"], r["id"], r["y"]) for r in rows] == [(1.0, "007", 2.0), (3.5, "b", 14.0)]
    empty = tmp_path / "empty.csv"  # a cell that is not a number: the column as read
    empty.write_text("x,w\n1,2\n,4\n")
    result = cli("eval", "y = x * w", "--rows", str(empty), "--keep", "x", "--format", "json")
    assert [json.loads(line)["x"] for line in result.stdout.splitlines()] == ["1", None]
