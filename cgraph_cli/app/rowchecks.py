"""Every row of a data file a test case: ``cgraph check --rows FILE --expect-column NAME``.

The rows run as :func:`cgraph_cli.jobs.rows.run_rows` runs them; each named value is compared with
the row's cell as :func:`cgraph_cli.check` compares values, into the same report (text, JSON,
JUnit).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping

from ..core.arrays import np
from ..core.errors import EvalError, UsageError
from ..core.ir import Graph, resolve_name
from ..data.datafiles import to_column
from ..jobs.rows import run_rows


def check_rows(
    graph: Graph,
    chunks: Iterable[tuple[str, int, Mapping]],
    *,
    expect: Mapping[str, str],
    bindings: Mapping[str, object] | None = None,
    of: str | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
    strict: bool = False,
    note: Callable[[str], None] | None = None,
):
    """Every row a test case (``cgraph check --rows``): each named value of ``expect``
    against the row's cell in the column it names, as :func:`cgraph_cli.check` compares them.
    A row that cannot be evaluated, or whose expected cell is empty, is that case's error.

    >>> from cgraph_cli import parse
    >>> chunks = [("cases.csv", 0, {"x": [1.0, 2.0], "y": [2.0, 5.0]})]
    >>> check_rows(parse("y = 2 * x"), chunks, expect={"y": "y"})
    <CheckReport: 1 passed, 1 failed; FAIL y = 4 (expected 5)>
    """
    from .cases import close
    from .checks_report import CaseRun, CheckReport, Result

    columns = list(dict.fromkeys(expect.values()))
    program_names = graph.named_nodes()
    for name in expect:
        if name not in program_names:
            resolve_name(graph, name)  # the usual error, with a did-you-mean
    expected: list[dict] = []  # each chunk's expected cells, in the order run_rows takes them

    def feed():
        for path, start, chunk in chunks:
            missing = [c for c in columns if c not in chunk]
            if missing:
                raise UsageError(f"{path} has no column {missing[0]} to expect values from")
            expected.append({c: to_column(c, chunk[c]) for c in columns})
            yield path, start, chunk

    result = run_rows(
        graph, feed(), bindings=bindings, of=of, show_all=True, strict=strict, note=note,
        expected=columns,
    )  # fmt: skip
    runs = []
    row = 0
    for table, cells in zip(result.tables, expected):
        for r, error in enumerate(table["error"]):
            row += 1
            case = f"row {row}"
            if error is not None:
                runs.append(CaseRun(case, [], EvalError(error.split(": ", 1)[1])))
                continue
            results = []
            for name, column in expect.items():
                if r in cells[column].problems:
                    runs.append(CaseRun(case, [], EvalError(cells[column].problems[r])))
                    break
                wanted = cells[column].cell(r)
                got = table[name][r]
                if isinstance(got, str):  # a row of its own shape, as JSON text
                    got = json.loads(got)
                got = np.asarray(got, dtype=float) if isinstance(got, list) else float(got)
                ok = close(got, wanted, rtol, atol)
                results.append(Result(case, "value", name, result.output, wanted, got, ok))
            else:
                runs.append(CaseRun(case, results))
    return CheckReport(runs)
