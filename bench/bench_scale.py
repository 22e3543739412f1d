"""Linear everywhere: the commands that write a program back as text (diff, explain, worksheet,
compile) on programs of 1,000 to 40,000 lines, a run over rows on CSV files of 1,000 to
1,000,000 columns, and programs of 1,000 to 40,000 calls of a function (``def``) beside the
same program with each call written out, each beside its practical limit.

    python bench/bench_scale.py                  # 1,000 / 8,000 / 40,000 lines; 1e3..1e6 columns
    python bench/bench_scale.py --runs 5 --lines 1000,4000 --columns 1000,10000

Each figure is the installed command end to end in a subprocess, the median and range of
``--runs`` runs. The limits: for text, ``grad`` of the same file (reading, parsing and both
passes: what every command does before it writes anything); for columns, pyarrow reading the
same file (the reader cgraph uses). They take turns with the command, run by run. "x/step" is
how much longer a size takes than the one before, over how much larger it is: 1 is linear, 2
at a step of 5x would be quadratic's 10x. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CGRAPH = [sys.executable, "-m", "cgraph_cli"]


def program(lines: int) -> str:
    """A chain that fans out: each statement reads the one before twice."""
    body = ["t0 = sin(x) * 1.5"]
    body += [f"t{k} = sin(t{k - 1}) * 0.5 + t{k - 1}" for k in range(1, lines)]
    return "\n".join(body) + "\n"


def calls(count: int, by_hand: bool) -> str:
    """A chain of ``count`` calls of a two-statement function (``by_hand``: each call written
    out instead), over seven weights."""
    if by_hand:
        body = [f"h = tanh(h * w{k % 7} + 1)" for k in range(count)]
        return "\n".join(["h = x", *body]) + "\n"
    body = [f"h = f(h, w{k % 7})" for k in range(count)]
    return (
        "\n".join(["def f(h, w):", "    u = h * w + 1", "    return tanh(u)", "h = x", *body])
        + "\n"
    )


WEIGHTS = [f"w{k}=0.5" for k in range(7)]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:6])}... failed: {done.stderr.strip()[:300]}")
    return time.perf_counter() - started


def turns(commands: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Each command ``runs`` times, taking turns run by run."""
    times: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for k, command in commands.items():
            times[k].append(timed(command))
    return times


def shown(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} s ({min(values):.2f}-{max(values):.2f})"


def report(title: str, sizes: list[int], unit: str, rows: dict[int, dict[str, list[float]]]):
    if not sizes:
        return
    print(f"\n{title}")
    names = list(next(iter(rows.values())))
    print(f"{unit:>10}  " + "  ".join(f"{n:>30}" for n in names) + "   x/step (each)")
    before = None
    for size in sizes:
        medians = {n: statistics.median(rows[size][n]) for n in names}
        step = ""
        if before is not None:
            grow = size / before[0]
            step = "  ".join(f"{medians[n] / before[1][n] / grow:.2f}" for n in names)
        print(
            f"{size:>10,}  "
            + "  ".join(f"{shown(rows[size][n]):>30}" for n in names)
            + f"   {step}"
        )
        before = (size, medians)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lines", default="1000,8000,40000")
    parser.add_argument("--columns", default="1000,10000,100000,1000000")
    parser.add_argument("--calls", default="1000,8000,40000")
    args = parser.parse_args()
    lines = [int(n) for n in args.lines.split(",") if n]
    columns = [int(n) for n in args.columns.split(",") if n]
    counts = [int(n) for n in args.calls.split(",") if n]
    with tempfile.TemporaryDirectory() as where:
        folder = Path(where)
        text_rows = {}
        for n in lines:
            path = folder / f"chain{n}.cg"
            path.write_text(program(n))
            p = str(path)
            text_rows[n] = turns(
                {
                    "grad (the limit)": [*CGRAPH, "grad", p, "x=0.5"],
                    "diff": [*CGRAPH, "diff", p],
                    "explain": [*CGRAPH, "explain", p, "x=0.5"],
                    "worksheet": [*CGRAPH, "worksheet", p, "--no-drawing"],
                    "compile": [*CGRAPH, "compile", p],
                },
                args.runs,
            )
        report("Programs of many lines (seconds, median and range)", lines, "lines", text_rows)
        column_rows = {}
        for n in columns:
            path = folder / f"wide{n}.csv"
            names = ["x"] + [f"c{k}" for k in range(1, n)]
            path.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
            p = str(path)
            limit = f"import pyarrow.csv as c; c.read_csv({p!r}, c.ReadOptions(block_size=1 << 26))"
            column_rows[n] = turns(
                {
                    "pyarrow (the limit)": [sys.executable, "-c", limit],
                    "eval --rows": [*CGRAPH, "eval", "-e", "y = x * 2", "--rows", p, "-q"],
                },
                args.runs,
            )
        report("CSV files of many columns, two lines", columns, "columns", column_rows)
        call_rows = {}
        for n in counts:
            paths = {}
            for hand in (True, False):
                paths[hand] = folder / f"calls{n}{'_hand' * hand}.cg"
                paths[hand].write_text(calls(n, hand))
            call_rows[n] = turns(
                {
                    "grad, written out (the limit)": [
                        *CGRAPH, "grad", str(paths[True]), "x=0.1", *WEIGHTS
                    ],
                    "grad, calls of a function": [
                        *CGRAPH, "grad", str(paths[False]), "x=0.1", *WEIGHTS
                    ],
                },
                args.runs,
            )  # fmt: skip
        report("Programs of many calls of a function (seconds)", counts, "calls", call_rows)


if __name__ == "__main__":
    main()
