"""Compiled programs against the practical limit and the interpreter.

    python bench/bench_compile.py              # chains of 1e3..1e5 nodes, MLPs of width 16..1024

Scalar: `cgraph compile` of two chains (v = v * a + b, and v = sin(v) * a + b * v, repeated)
against the same forward and backward passes written by hand as straight-line Python (one line
a statement, each statement's partials gathered into one expression), the two taking turns
round by round (the median and range of the per-round ratios), and against cgraph's
interpreter (`cgraph_cli.grad`), per node; the compile step per node: cgraph's source
generation, and Python's `compile` of the result. `--only scalar` runs this part alone;
`--step-vs CHECKOUT` times the compile step of chains of 3,000 and 150,000 nodes against
another checkout's (each in a fresh process, the two taking turns). Tensors: the MLP of
samples/mlp.cg, compiled with --target numpy, against hand-written NumPy and the interpreter.
Optimize: the passes on programs of 10^3 to 10^5 nodes, per node (linear time shows as a
constant).
Prints figures; asserts only that the compiled and hand-written results agree.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if "--step" not in sys.argv:  # a step runs the checkout PYTHONPATH names (see step_vs)
    sys.path.insert(0, str(ROOT))

from cgraph_cli import grad, parse  # noqa: E402
from cgraph_cli.run.compile import compile_module  # noqa: E402


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def per_call(fns: list, runs: int, seconds: float = 0.02) -> list[float]:
    """The best time per call of each of ``fns``: ``runs`` rounds, each timing every function
    over as many calls as last about ``seconds`` (a call of some microseconds is too short to
    time alone, and a few calls in a row still run on cold caches), the functions taking turns
    so that a busy moment of a shared machine falls on all of them."""
    numbers = []
    for fn in fns:
        fn()  # the first call: imports, caches
        t = time.perf_counter()
        fn()
        numbers.append(max(1, round(seconds / max(time.perf_counter() - t, 1e-7))))
    found = [float("inf")] * len(fns)
    for _ in range(runs):
        for k, (fn, n) in enumerate(zip(fns, numbers)):
            t = time.perf_counter()
            for _ in range(n):
                fn()
            found[k] = min(found[k], (time.perf_counter() - t) / n)
    return found


def chain(statements: int, kind: str = "affine") -> str:
    if kind == "affine":
        return "input x = 0.5, a = 1, b = 0.001\nv = x\n" + "v = v * a + b\n" * statements
    return "input x = 0.5, a = 1, b = 0.001\nv = x\n" + "v = sin(v) * a + b * v\n" * statements


def hand_written(statements: int, kind: str = "affine"):
    """The chain's forward and backward passes as a person would write them: one line a
    statement (a sine kept for the backward pass), then the adjoints in reverse, each
    statement's partials gathered into one expression."""
    lines = ["def grad(x, a, b):", "    v0 = x"]
    for k in range(statements):
        if kind == "affine":
            lines += [f"    m{k} = v{k} * a", f"    v{k + 1} = m{k} + b"]
        else:
            lines += [f"    s{k} = sin(v{k})", f"    v{k + 1} = s{k} * a + b * v{k}"]
    lines += ["    g = 1.0", "    ga = 0.0", "    gb = 0.0"]
    for k in range(statements - 1, -1, -1):
        if kind == "affine":
            lines += ["    gb += g", f"    ga += g * v{k}", "    g = g * a"]
        else:
            lines += [
                f"    ga += g * s{k}",
                f"    gb += g * v{k}",
                f"    g = g * (a * cos(v{k}) + b)",
            ]
    lines += [f"    return v{statements}, {{'x': g, 'a': ga, 'b': gb}}"]
    namespace: dict = {"sin": math.sin, "cos": math.cos}
    exec(compile("\n".join(lines), "<hand>", "exec"), namespace)
    return namespace["grad"]


def ratios(fns: list, rounds: int, seconds: float = 0.05) -> tuple[list[float], list[list[float]]]:
    """Each function's median time per call, and the per-round ratios of each to the last
    (its yardstick): ``rounds`` rounds, each timing every function over as many calls as
    last about ``seconds``, the functions taking turns so that a busy moment of a shared
    machine falls on all of them."""
    numbers = []
    for fn in fns:
        fn()  # the first call: imports, caches
        t = time.perf_counter()
        fn()
        numbers.append(max(1, round(seconds / max(time.perf_counter() - t, 1e-7))))
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for k, (fn, n) in enumerate(zip(fns, numbers)):
            t = time.perf_counter()
            for _ in range(n):
                fn()
            times[k].append((time.perf_counter() - t) / n)
    per_round = [[a / b for a, b in zip(ts, times[-1])] for ts in times[:-1]]
    return [statistics.median(ts) for ts in times], per_round


def scalar(runs: int) -> None:
    print(
        "scalar chains: forward + backward, ns per node (medians of",
        runs,
        "rounds taking"
        " turns); ratio: the median and range of the per-round ratios to the hand-written code",
    )
    print(
        f"  {'program':>22}  {'nodes':>7}  {'compiled':>9}  {'by hand':>8}  {'ratio':>17}"
        f"  {'interpreter':>11}  {'generate':>8}  {'compile':>8}"
    )
    for kind, statement in (("affine", "v = v * a + b"), ("sine", "v = sin(v) * a + b * v")):
        for statements in (1_000, 10_000, 50_000):
            scalar_row(kind, statement, statements, runs)
    print(
        "  (generate: cgraph's compile_module, us per node; compile: Python's compile of"
        " the result, us per node)"
    )


def scalar_row(kind: str, statement: str, statements: int, runs: int) -> None:
    text = chain(statements, kind)
    graph = parse(text)
    nodes = len(graph.ops)
    t = time.perf_counter()
    source = compile_module(graph)
    generate = time.perf_counter() - t
    t = time.perf_counter()
    code = compile(source, "<compiled>", "exec")
    python = time.perf_counter() - t
    module: dict = {"__file__": "<compiled>"}
    exec(code, module)
    args = {"x": 0.5, "a": 1.0, "b": 0.001}
    by_hand_fn = hand_written(statements, kind)
    got, want = module["grad"](**args), by_hand_fn(**args)
    assert all(abs(got[1][k] - want[1][k]) <= 1e-9 * (1 + abs(want[1][k])) for k in want[1])
    interpreted = best(lambda g=graph, a=args: grad(g, a), 3)
    (compiled, by_hand), (ratio,) = ratios(
        [lambda m=module, a=args: m["grad"](**a), lambda f=by_hand_fn, a=args: f(**a)], runs
    )
    shown = f"{statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})"
    print(
        f"  {statement:>22}  {nodes:>7,}  {compiled / nodes * 1e9:>9.1f}"
        f"  {by_hand / nodes * 1e9:>8.1f}  {shown:>17}  {interpreted / nodes * 1e9:>11.1f}"
        f"  {generate / nodes * 1e6:>8.1f}  {python / nodes * 1e6:>8.1f}"
    )


MLP = """\
H = relu(X @ W1 + b1)
Y = H @ W2 + b2
loss = mean((Y - T) ^ 2)
"""


def by_hand_mlp(X, T, W1, b1, W2, b2):
    Z = X @ W1 + b1
    H = np.maximum(Z, 0.0)
    Y = H @ W2 + b2
    D = Y - T
    loss = np.mean(D**2)
    gY = 2.0 * D / D.size
    gW2 = H.T @ gY
    gb2 = gY.sum(axis=0)
    gH = gY @ W2.T
    gZ = gH * (Z > 0)
    gW1 = X.T @ gZ
    gb1 = gZ.sum(axis=0)
    gX = gZ @ W1.T
    gT = -gY
    return loss, {"X": gX, "T": gT, "W1": gW1, "b1": gb1, "W2": gW2, "b2": gb2}


def tensors(runs: int) -> None:
    print(
        "\nMLP (samples/mlp.cg's shape, 64 rows): forward + backward, ms per call;"
        f" best of {runs} rounds of about 20 ms each"
    )
    print(f"  {'width':>6}  {'compiled':>9}  {'by hand':>8}  {'ratio':>6}  {'interpreter':>11}")
    rng = np.random.default_rng(0)
    for width in (16, 64, 256, 1024):
        values = {
            "X": rng.normal(size=(64, width)),
            "T": rng.normal(size=(64, width)),
            "W1": rng.normal(size=(width, width)) / np.sqrt(width),
            "b1": rng.normal(size=width),
            "W2": rng.normal(size=(width, width)) / np.sqrt(width),
            "b2": rng.normal(size=width),
        }
        graph = parse(MLP)
        module: dict = {"__file__": "<compiled>"}
        exec(compile(compile_module(graph, "numpy", bindings=values), "<compiled>", "exec"), module)
        got = module["grad"](**values)
        want = by_hand_mlp(**values)
        # The same results both ways: the loss and every gradient.
        assert np.isclose(got[0], want[0]) and got[1].keys() == want[1].keys()
        assert all(np.allclose(got[1][k], want[1][k]) for k in want[1])
        compiled, hand, interpreted = per_call(
            [
                lambda m=module, v=values: m["grad"](**v),
                lambda v=values: by_hand_mlp(**v),
                lambda g=graph, v=values: grad(g, v),
            ],
            runs,
        )
        print(
            f"  {width:>6}  {compiled * 1e3:>9.3f}  {hand * 1e3:>8.3f}  {compiled / hand:>6.2f}"
            f"  {interpreted * 1e3:>11.3f}"
        )


def optimizing(runs: int) -> None:
    """The optimizer's cost per node, on programs full of work for it: each statement has a
    constant to fold, a common subexpression and an identity to simplify."""
    from cgraph_cli.passes.optimize import optimize

    print("\noptimize (all passes, to a fixed point), us per node of the original")
    print(f"  {'nodes':>8}  {'us/node':>8}  {'nodes after':>11}")
    for statements in (300, 3_000, 30_000):
        text = "input x = 0.5\nv = x\n" + "v = sin(v) * (2 * 3) + sin(v) * 1 + 0\n" * statements
        graph = parse(text)
        seconds = best(lambda g=graph: optimize(g), max(1, runs // 2))
        after = len(optimize(graph).graph.ops)
        print(f"  {len(graph.ops):>8,}  {seconds / len(graph.ops) * 1e6:>8.1f}  {after:>11,}")


def step(kind: str, statements: int) -> None:
    """One compile step in this process (NumPy imported first: cgraph's first compile imports
    it once): generation and Python's compile, in seconds, as JSON."""
    import json

    graph = parse(chain(statements, kind))
    t = time.perf_counter()
    source = compile_module(graph)
    generate = time.perf_counter() - t
    t = time.perf_counter()
    compile(source, "<compiled>", "exec")
    python = time.perf_counter() - t
    print(json.dumps({"nodes": len(graph.ops), "gen": generate, "py": python}))


def step_vs(other: str, rounds: int) -> None:
    """The compile step of this checkout against the one at ``other``, each in a fresh
    process, taking turns round by round: per node, and the per-round ratios."""
    import json
    import os
    import subprocess

    print(f"compile step, this checkout against {other}; {rounds} rounds taking turns")
    for kind, statements in (
        ("affine", 1_500),
        ("affine", 75_000),
        ("sine", 750),
        ("sine", 37_500),
    ):
        found: dict[str, list[dict]] = {str(ROOT): [], other: []}
        for _ in range(rounds):
            for path in found:
                env = dict(os.environ, PYTHONPATH=path, OPENBLAS_NUM_THREADS="1")
                command = [sys.executable, __file__, "--step", kind, str(statements)]
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                found[path].append(json.loads(out.stdout))
        mine, theirs = found[str(ROOT)], found[other]
        nodes = mine[0]["nodes"]
        ratios = [a["gen"] / b["gen"] for a, b in zip(mine, theirs)]

        def us(runs: list[dict], key: str, nodes: int = nodes) -> float:
            return statistics.median(r[key] for r in runs) / nodes * 1e6

        print(
            f"  {kind:>6} {nodes:>8,} nodes: generate {us(mine, 'gen'):.1f} us/node against"
            f" {us(theirs, 'gen'):.1f}, ratio {statistics.median(ratios):.2f}"
            f" ({min(ratios):.2f}-{max(ratios):.2f}); Python's compile {us(mine, 'py'):.1f}"
            f" against {us(theirs, 'py'):.1f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=["scalar", "tensors", "optimize"], help="one part alone")
    ap.add_argument("--step", nargs=2, metavar=("KIND", "STATEMENTS"), help=argparse.SUPPRESS)
    ap.add_argument("--step-vs", metavar="CHECKOUT", help="the compile step against another")
    args = ap.parse_args()
    if args.step:
        return step(args.step[0], int(args.step[1]))
    if args.step_vs:
        return step_vs(args.step_vs, args.runs)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}\n")
    for part, fn in (("scalar", scalar), ("tensors", tensors), ("optimize", optimizing)):
        if args.only in (None, part):
            fn(args.runs)


if __name__ == "__main__":
    main()
