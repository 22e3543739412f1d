"""Compiled programs against the practical limit and the interpreter.

    python bench/bench_compile.py              # chains of 1e3..1e5 nodes, MLPs of width 16..1024

Scalar: `cgraph compile` of a chain (v = v * a + b, repeated) against the same forward and
backward passes written by hand as straight-line Python, and against cgraph's interpreter
(`cgraph_cli.grad`), per node; the compile step (source generation and Python's `compile`) per
node, and the number of evaluations at which compiling pays off. Tensors: the MLP of
samples/mlp.cg, compiled with --target numpy, against hand-written NumPy and the interpreter.
Optimize: the passes on programs of 10^3 to 10^5 nodes, per node (linear time shows as a
constant).
Prints figures; asserts only that the compiled and hand-written results agree.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
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


def chain(statements: int) -> str:
    return "input x = 0.5, a = 1, b = 0.001\nv = x\n" + "v = v * a + b\n" * statements


def hand_written(statements: int):
    """The chain's forward and backward passes as a person would write them: one line a
    node, then the adjoints in reverse."""
    lines = ["def grad(x, a, b):", "    v0 = x"]
    for k in range(statements):
        lines += [f"    m{k} = v{k} * a", f"    v{k + 1} = m{k} + b"]
    lines += ["    g = 1.0", "    ga = 0.0", "    gb = 0.0"]
    for k in range(statements - 1, -1, -1):
        lines += ["    gb += g", f"    ga += g * v{k}", "    g = g * a"]
    lines += [f"    return v{statements}, {{'x': g, 'a': ga, 'b': gb}}"]
    namespace: dict = {}
    exec(compile("\n".join(lines), "<hand>", "exec"), namespace)
    return namespace["grad"]


def scalar(runs: int) -> None:
    print("scalar chains (v = v * a + b): forward + backward, ns per node; best of", runs)
    print(
        f"  {'nodes':>7}  {'compiled':>9}  {'by hand':>8}  {'ratio':>6}  {'interpreter':>11}"
        f"  {'compile':>8}  {'break-even':>10}"
    )
    for statements in (500, 5_000, 50_000):
        text = chain(statements)
        graph = parse(text)
        nodes = 2 * statements
        t = time.perf_counter()
        source = compile_module(graph)
        generate = time.perf_counter() - t
        t = time.perf_counter()
        code = compile(source, "<compiled>", "exec")
        python = time.perf_counter() - t
        module: dict = {"__file__": "<compiled>"}
        exec(code, module)
        args = {"x": 0.5, "a": 1.0, "b": 0.001}
        compiled = best(lambda m=module, a=args: m["grad"](**a), runs)
        by_hand_fn = hand_written(statements)
        by_hand = best(lambda f=by_hand_fn, a=args: f(**a), runs)
        assert abs(by_hand_fn(**args)[1]["a"] - module["grad"](**args)[1]["a"]) < 1e-6
        interpreted = best(lambda g=graph, a=args: grad(g, a), runs)
        step = generate + python
        gain = interpreted - compiled
        even = step / gain if gain > 0 else float("inf")
        print(
            f"  {nodes:>7,}  {compiled / nodes * 1e9:>9.1f}  {by_hand / nodes * 1e9:>8.1f}"
            f"  {compiled / by_hand:>6.2f}  {interpreted / nodes * 1e9:>11.1f}"
            f"  {step / nodes * 1e9:>8.0f}  {even:>10.1f}"
        )
    print("  (compile: source generation + Python's compile, ns per node; break-even: runs)")


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


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}\n")
    scalar(args.runs)
    tensors(args.runs)
    optimizing(args.runs)


if __name__ == "__main__":
    main()
