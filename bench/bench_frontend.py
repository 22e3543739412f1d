"""The front end: `cgraph grad` of a long program, end to end, against the same program run as
Python over micrograd, with cgraph's time split into its phases.

    python bench/bench_frontend.py                 # a 20,000-statement chain
    python bench/bench_frontend.py --statements 100000 --runs 3

Phases (in one process, best of the runs): start (the interpreter and `import cgraph_cli.cli`),
read (the file), scan (tokens alone), parse+build (tokens to the graph, scanning included),
passes (forward and reverse, compiling the graph's float program included), output (the
table). End to end is the installed command in a
subprocess; micrograd's is `python chain_micrograd.py`, the same statements over its `Value`
(its recursive topological sort needs a raised recursion limit and a large thread stack). The
two take turns, run by run, and the ratio is given best to best and per pair.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def program(statements: int) -> str:
    """A chain: each statement reads the one before (2 operation nodes a statement)."""
    lines = ["input x = 0.5, a = 1, b = 0.001", "v = x"]
    lines += ["v = v * a + b"] * (statements - 1)
    return "\n".join(lines) + "\n"


MICROGRAD = """\
import sys, threading
from micrograd.engine import Value
sys.setrecursionlimit(10**7)
threading.stack_size(1 << 29)

def main():
    x, a, b = Value(0.5), Value(1.0), Value(0.001)
    v = x
{body}
    v.backward()
    print(x.grad, a.grad, b.grad)

t = threading.Thread(target=main)
t.start()
t.join()
"""


def micrograd_script(statements: int) -> str:
    return MICROGRAD.format(body="\n".join(["    v = v * a + b"] * (statements - 1)))


def wall(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return min(times)


def phases(text: str, runs: int) -> dict[str, float]:
    from cgraph_cli.app.api import grad
    from cgraph_cli.app.report import grad_report
    from cgraph_cli.core.errors import Source
    from cgraph_cli.parse import parse, scan
    from cgraph_cli.render.table import gradient_table

    def best(fn):
        out, times = None, []
        for _ in range(runs):
            t = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t)
        return min(times), out

    scan_s, tokens = best(lambda: scan(Source(text)))
    parse_s, graph = best(lambda: parse(text))
    # The passes on a graph just parsed, as the command runs them: compiling the graph's
    # float program on first use is part of them.
    graphs = [parse(text) for _ in range(runs)]
    passes_s, result = best(lambda: grad(graphs.pop()))

    def output():
        from rich.console import Console

        Console(file=io.StringIO(), width=200).print(gradient_table(grad_report(result)))

    output_s, _ = best(output)
    return {
        "scan": scan_s,
        "parse+build": parse_s,
        "passes": passes_s,
        "output": output_s,
        "tokens": tokens,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--statements", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    n = args.statements
    text = program(n)
    folder = Path(tempfile.mkdtemp())
    source = folder / "chain.cg"
    source.write_text(text)
    cgraph = shutil.which("cgraph") or str(Path(sys.executable).with_name("cgraph"))
    start = wall([sys.executable, "-c", "import cgraph_cli.cli"], args.runs)
    p = phases(text, args.runs)
    print(
        f"{n:,} statements, {2 * n + 2:,} nodes, {p['tokens']:,} tokens; python "
        f"{sys.version.split()[0]}, best of {args.runs}\n"
    )
    print(f"  start (interpreter + import)  {start * 1e3:8.1f} ms")
    print(
        f"  scan                          {p['scan'] * 1e3:8.1f} ms  "
        f"({p['scan'] / p['tokens'] * 1e9:.0f} ns/token)"
    )
    print(
        f"  parse+build (scan included)   {p['parse+build'] * 1e3:8.1f} ms  "
        f"({p['parse+build'] / p['tokens'] * 1e9:.0f} ns/token)"
    )
    print(f"  passes (forward, reverse)     {p['passes'] * 1e3:8.1f} ms")
    print(f"  output (the table)            {p['output'] * 1e3:8.1f} ms")
    try:
        import micrograd  # noqa: F401
    except ImportError:
        ours = wall([cgraph, "grad", str(source)], args.runs)
        print(f"\n  cgraph grad, end to end       {ours * 1e3:8.1f} ms")
        print("  micrograd: not installed (pip install micrograd)")
        return
    script = folder / "chain_micrograd.py"
    script.write_text(micrograd_script(n))
    # The two commands take turns, so that both meet the machine in the same moods (a shared
    # machine's speed drifts over seconds); each one's best, and the ratio of each pair.
    ours_runs, theirs_runs = [], []
    for _ in range(args.runs):
        ours_runs.append(wall([cgraph, "grad", str(source)], 1))
        theirs_runs.append(wall([sys.executable, str(script)], 1))
    ours, theirs = min(ours_runs), min(theirs_runs)
    pairs = sorted(a / b for a, b in zip(ours_runs, theirs_runs))
    compile_s = min(
        (lambda t: (compile(script.read_text(), "s", "exec"), time.perf_counter() - t)[1])(
            time.perf_counter()
        )
        for _ in range(args.runs)
    )
    print(f"\n  cgraph grad, end to end       {ours * 1e3:8.1f} ms")
    print(
        f"  micrograd, same program       {theirs * 1e3:8.1f} ms  (of it, Python's compile: "
        f"{compile_s * 1e3:.1f} ms)"
    )
    print(
        f"\n  ratio cgraph / micrograd      {ours / theirs:8.2f}  (best to best; of the "
        f"{len(pairs)} pairs run in turn: median {pairs[len(pairs) // 2]:.2f}, "
        f"{pairs[0]:.2f} to {pairs[-1]:.2f})"
    )


if __name__ == "__main__":
    main()
