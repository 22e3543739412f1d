"""A loop: an Elman RNN over a long sequence, forward and backward (backpropagation through time).

    python bench/bench_rnn.py                  # 1,000 steps, hidden size 16, inputs 8
    python bench/bench_rnn.py --steps 100 --hidden 4

cgraph runs the program of samples/rnn.cg (sizes changed) end to end: reading it, recording
the graph that runs (the loop unrolled), the forward pass and the reverse pass. Against it:
the same computation written by hand in NumPy (a loop forward, a loop backward: the practical
limit for a step-by-step interpreter), and the peers that install here: PyTorch (eager
autograd) and JAX (`lax.scan` under `jit(grad)`, compile time apart). micrograd is left out: it
has scalars only, and a 16-wide RNN is thousands of scalar nodes a step. Prints figures; the
results are checked equal to NumPy's before timing.
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
from cgraph_cli.run.control import run_graph  # noqa: E402

PROGRAM = """\
input W, U, b, v, target = 0.5
input xs
h = zeros
for t in range(len(xs)):
    h = tanh(W @ h + U @ xs[t] + b)
y = sum(v * h)
loss = (y - target)^2
"""


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def data(steps: int, hidden: int, features: int) -> dict:
    rng = np.random.default_rng(0)
    return {
        "W": rng.normal(scale=0.3, size=(hidden, hidden)),
        "U": rng.normal(scale=0.3, size=(hidden, features)),
        "b": rng.normal(scale=0.1, size=hidden),
        "v": rng.normal(size=hidden),
        "xs": rng.normal(size=(steps, features)),
        "zeros": np.zeros(hidden),
    }


def numpy_by_hand(W, U, b, v, xs, zeros, target=0.5):
    hs = [zeros]
    for x in xs:
        hs.append(np.tanh(W @ hs[-1] + U @ x + b))
    y = v @ hs[-1]
    dh = 2 * (y - target) * v
    dW, dU, db = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    dxs = np.empty_like(xs)
    for t in range(len(xs) - 1, -1, -1):
        da = dh * (1 - hs[t + 1] ** 2)
        dW += np.outer(da, hs[t])
        dU += np.outer(da, xs[t])
        db += da
        dxs[t] = U.T @ da
        dh = W.T @ da
    return (y - target) ** 2, dW


def torch_eager(bindings: dict):
    try:
        import torch
    except ImportError:
        return None
    t = {k: torch.tensor(v, requires_grad=k != "zeros") for k, v in bindings.items()}

    def run():
        for k in ("W", "U", "b", "v", "xs"):
            t[k].grad = None
        h = t["zeros"]
        for k in range(t["xs"].shape[0]):
            h = torch.tanh(t["W"] @ h + t["U"] @ t["xs"][k] + t["b"])
        loss = ((t["v"] * h).sum() - 0.5) ** 2
        loss.backward()
        return loss.item(), t["W"].grad.numpy()

    return run


def jax_scan(bindings: dict):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def loss(W, U, b, v, xs, zeros):
        def step(h, x):
            return jnp.tanh(W @ h + U @ x + b), None

        h, _ = jax.lax.scan(step, zeros, xs)
        return (jnp.sum(v * h) - 0.5) ** 2

    f = jax.jit(jax.value_and_grad(loss))
    args = [jnp.asarray(bindings[k]) for k in ("W", "U", "b", "v", "xs", "zeros")]
    start = time.perf_counter()
    jax.block_until_ready(f(*args))
    compile_time = time.perf_counter() - start

    def run():
        value, g = jax.block_until_ready(f(*args))
        return float(value), np.asarray(g)

    return run, compile_time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--features", type=int, default=8)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    bindings = data(args.steps, args.hidden, args.features)
    static = parse(PROGRAM)

    cg = grad(PROGRAM, bindings)
    ref_loss, ref_dW = numpy_by_hand(**bindings)
    assert np.isclose(cg.value, ref_loss) and np.allclose(cg.gradients["W"], ref_dW)

    t_cg = best(lambda: grad(PROGRAM, bindings), args.runs)
    t_trace = best(lambda: run_graph(static, bindings), args.runs)
    ran = run_graph(static, bindings)
    t_passes = best(lambda: grad(ran, bindings), args.runs)
    t_np = best(lambda: numpy_by_hand(**bindings), args.runs)
    nodes = len(ran)
    print(
        f"Elman RNN, {args.steps:,} steps, hidden {args.hidden}, inputs {args.features}: "
        f"forward + backward, best of {args.runs}"
    )
    print(f"  the graph that runs: {nodes:,} nodes ({len(static)} in the static graph)")
    rows = [
        ("cgraph grad (read, unroll, forward, backward)", t_cg),
        ("  of which: read and unroll (run_graph)", t_trace),
        ("  of which: forward + backward on the graph", t_passes),
        ("NumPy by hand (loop forward, loop backward)", t_np),
    ]
    torch_run = torch_eager(bindings)
    if torch_run is not None:
        value, dW = torch_run()
        assert np.isclose(value, ref_loss) and np.allclose(dW, ref_dW)
        rows.append(("PyTorch eager autograd", best(torch_run, args.runs)))
    jax_run = jax_scan(bindings)
    if jax_run is not None:
        run, compile_time = jax_run
        value, dW = run()
        assert np.isclose(value, ref_loss) and np.allclose(dW, ref_dW)
        rows.append(
            (
                f"JAX jit(grad) over lax.scan (compile {compile_time * 1e3:.0f} ms apart)",
                best(run, args.runs),
            )
        )
    for label, seconds in rows:
        print(f"  {label:<62} {seconds * 1e3:9.2f} ms   {seconds / t_np:6.2f}x NumPy")
    print(
        f"  per step: cgraph {t_cg / args.steps * 1e6:.1f} µs, NumPy {t_np / args.steps * 1e6:.1f} µs"
    )


if __name__ == "__main__":
    main()
