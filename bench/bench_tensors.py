"""Tensor benchmark: the MLP sample's forward+backward against the same computation written
directly in NumPy (the practical limit), and what tensors cost scalar programs (nothing).

Prints figures; asserts nothing.

    python bench/bench_tensors.py                   # widths 16 .. 1024, 9 rounds
    python bench/bench_tensors.py --widths 16,256 --rounds 5   # quicker
    python bench/bench_tensors.py --json out.json   # also write the figures as JSON

The MLP is samples/mlp.cg with a batch of 64 examples: X (64, w) @ W1 (w, w) + b1, relu,
@ W2 (w, 10) + b2, mean squared error against T (64, 10). PyTorch eager and JAX's jit of
value_and_grad are timed too when installed (pip install torch==2.13.0 jax; never dependencies
of cgraph). Each width's contenders take turns, round by round: the machine's drift hits all.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BATCH, OUTPUTS = 64, 10


def mlp_numpy(X, T, W1, b1, W2, b2):
    """The forward and backward passes of the MLP, by hand."""
    import numpy as np

    a1 = X @ W1 + b1
    H = np.maximum(a1, 0.0)
    Y = H @ W2 + b2
    loss = np.mean((Y - T) ** 2)
    dY = 2.0 * (Y - T) / Y.size
    dW2, db2 = H.T @ dY, dY.sum(axis=0)
    da1 = (dY @ W2.T) * (a1 > 0)
    return loss, da1 @ W1.T, -dY, X.T @ da1, da1.sum(axis=0), dW2, db2


def bindings(width: int) -> dict:
    import numpy as np

    rng = np.random.default_rng(width)
    return {
        "X": rng.normal(size=(BATCH, width)),
        "T": rng.normal(size=(BATCH, OUTPUTS)),
        "W1": rng.normal(size=(width, width)) / width**0.5,
        "b1": rng.normal(size=width),
        "W2": rng.normal(size=(width, OUTPUTS)) / width**0.5,
        "b2": rng.normal(size=OUTPUTS),
    }


def torch_step(b: dict):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)  # as NumPy here (OPENBLAS_NUM_THREADS=1): one core each
    t = {k: torch.tensor(v, requires_grad=True) for k, v in b.items()}

    def step():
        for v in t.values():
            v.grad = None
        H = torch.relu(t["X"] @ t["W1"] + t["b1"])
        loss = ((H @ t["W2"] + t["b2"] - t["T"]) ** 2).mean()
        loss.backward()

    return step


def jax_step(b: dict):
    """JAX's jit of the same loss and its gradients (None when JAX is not installed)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def loss(X, T, W1, b1, W2, b2):
        H = jnp.maximum(X @ W1 + b1, 0.0)
        return jnp.mean((H @ W2 + b2 - T) ** 2)

    f = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3, 4, 5)))
    args = [jnp.asarray(b[k]) for k in ("X", "T", "W1", "b1", "W2", "b2")]

    def step():
        value, grads = f(*args)
        jax.block_until_ready(grads)

    step()
    return step


def calls_for(fn, seconds: float = 0.02) -> int:
    """How many calls of ``fn`` last about ``seconds``."""
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - start > seconds:
            return calls
        calls *= 2


def timed(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def mlp_rows(widths: list[int], rounds: int) -> list[dict]:
    """Each width: every contender timed in turn, round by round; per contender its median
    time, and its ratio to NumPy by hand per round (median and range)."""
    import statistics

    import numpy as np

    from cgraph_cli import grad, parse

    graph = parse((ROOT / "samples" / "mlp.cg").read_text())
    rows = []
    for w in widths:
        b = bindings(w)
        ours = grad(graph, b)
        ours = grad(graph, b)  # the second call: the compiled module, as every call after
        ref = mlp_numpy(**b)
        assert abs(ours.value - ref[0]) <= 1e-9 * abs(ref[0])
        assert np.allclose(ours.gradients["W1"], ref[3], rtol=1e-9, atol=1e-12)
        contenders = {"cgraph": lambda: grad(graph, b), "numpy": lambda: mlp_numpy(**b)}  # noqa: B023
        for name, make in (("torch", torch_step), ("jax", jax_step)):
            step = make(b)
            if step is not None:
                contenders[name] = step
        calls = {k: calls_for(f) for k, f in contenders.items()}
        times: dict[str, list[float]] = {k: [] for k in contenders}
        for _ in range(rounds):
            for k, f in contenders.items():
                times[k].append(timed(f, calls[k]))
        row: dict = {"width": w}
        for k, ts in times.items():
            ratios = [t / n for t, n in zip(ts, times["numpy"])]
            row[f"{k}_us"] = statistics.median(ts) * 1e6
            row[f"{k}_ratio"] = (statistics.median(ratios), min(ratios), max(ratios))
        rows.append(row)
    return rows


def scalar_rows(repeat: int) -> dict:
    """A scalar chain through the public path (which checks for tensors first) against the
    float loop alone, and whether NumPy was imported at all."""
    code = f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
from cgraph_cli import parse
from cgraph_cli.run.evaluate import forward, initial_values, run
from cgraph_cli.run.vjp import vjp
g = parse("v = x\\n" + "v = v * a + b\\n" * 50000)
b = {{"x": 0.5, "a": 1.0, "b": 0.001}}
forward(g, b)
def once(f):
    s = time.perf_counter(); f(); return time.perf_counter() - s
public, inner = [], []
for _ in range({repeat}):  # interleaved: the machine's drift hits both alike
    public.append(once(lambda: vjp(g, forward(g, b))))
    inner.append(once(lambda: vjp(g, run(g, initial_values(g, b)))))
print(len(g), min(public), min(inner), 'numpy' in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    nodes, public, inner, numpy_loaded = out.stdout.split()
    n = int(nodes)
    return {
        "nodes": n,
        "public_ns_per_node": float(public) / n * 1e9,
        "float_loop_ns_per_node": float(inner) / n * 1e9,
        "numpy_imported": numpy_loaded == "True",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--widths", default="16,64,256,1024")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")]

    print(
        f"MLP sample, batch {BATCH}, forward+backward, cg.grad called again and again; "
        f"{args.rounds} rounds in turns: median us a call, and x NumPy by hand per round, "
        "median (range):"
    )
    rows = mlp_rows(widths, args.rounds)
    names = [k[:-3] for k in rows[0] if k.endswith("_us")]
    print(f"{'width':>6} " + " ".join(f"{n:>26}" for n in names))
    for r in rows:
        cells = []
        for n in names:
            m, lo, hi = r[f"{n}_ratio"]
            cells.append(f"{r[n + '_us']:>9.1f} {m:>5.2f}x ({lo:.2f}-{hi:.2f})")
        print(f"{r['width']:>6} " + " ".join(f"{c:>26}" for c in cells))
    scalar = scalar_rows(max(args.rounds, 9))
    print(
        f"\nScalar chain of {scalar['nodes']:,} nodes, forward+backward: "
        f"{scalar['public_ns_per_node']:.0f} ns/node through forward()/vjp(), "
        f"{scalar['float_loop_ns_per_node']:.0f} ns/node in the float loop alone; "
        f"NumPy imported: {scalar['numpy_imported']}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"mlp": rows, "scalar": scalar}, indent=2))


if __name__ == "__main__":
    main()
