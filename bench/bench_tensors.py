"""Tensor benchmark: the MLP sample's forward+backward against the same computation written
directly in NumPy (the practical limit), and what tensors cost scalar programs (nothing).

Prints figures; asserts nothing.

    python bench/bench_tensors.py                   # widths 16 .. 1024
    python bench/bench_tensors.py --widths 16,256   # quicker
    python bench/bench_tensors.py --json out.json   # also write the figures as JSON

The MLP is samples/mlp.cg with a batch of 64 examples: X (64, w) @ W1 (w, w) + b1, relu,
@ W2 (w, 10) + b2, mean squared error against T (64, 10). PyTorch is timed too when installed
(pip install torch==2.13.0; never a dependency of cgraph).
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


def best(fn, repeat: int) -> float:
    """The best of ``repeat`` timings of ``fn``, each over enough calls to last ~50 ms."""
    calls, elapsed = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > 0.05:
            break
        calls *= 4
    times = [elapsed / calls]
    for _ in range(repeat - 1):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls)
    return min(times)


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
    t = {k: torch.tensor(v, requires_grad=True) for k, v in b.items()}

    def step():
        for v in t.values():
            v.grad = None
        H = torch.relu(t["X"] @ t["W1"] + t["b1"])
        loss = ((H @ t["W2"] + t["b2"] - t["T"]) ** 2).mean()
        loss.backward()

    return step


def mlp_rows(widths: list[int], repeat: int) -> list[dict]:
    import numpy as np

    from cgraph_cli import grad, parse

    graph = parse((ROOT / "samples" / "mlp.cg").read_text())
    rows = []
    for w in widths:
        b = bindings(w)
        ours = grad(graph, b)
        ref = mlp_numpy(**b)
        assert abs(ours.value - ref[0]) <= 1e-9 * abs(ref[0])
        assert np.allclose(ours.gradients["W1"], ref[3], rtol=1e-9, atol=1e-12)
        t_ours = best(lambda: grad(graph, b), repeat)  # noqa: B023
        t_np = best(lambda: mlp_numpy(**b), repeat)  # noqa: B023
        step = torch_step(b)
        t_torch = best(step, repeat) if step else None
        rows.append(
            {
                "width": w,
                "cgraph_ms": t_ours * 1e3,
                "numpy_ms": t_np * 1e3,
                "ratio": t_ours / t_np,
                "torch_ms": None if t_torch is None else t_torch * 1e3,
            }
        )
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
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")]

    print(f"MLP sample, batch {BATCH}, forward+backward (best of {args.repeat}):")
    print(f"{'width':>6} {'cgraph ms':>10} {'numpy ms':>10} {'ratio':>7} {'torch ms':>10}")
    rows = mlp_rows(widths, args.repeat)
    for r in rows:
        torch_ms = "-" if r["torch_ms"] is None else f"{r['torch_ms']:.3f}"
        print(
            f"{r['width']:>6} {r['cgraph_ms']:>10.3f} {r['numpy_ms']:>10.3f} "
            f"{r['ratio']:>7.2f} {torch_ms:>10}"
        )
    scalar = scalar_rows(max(args.repeat, 9))
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
