"""A loop: an Elman RNN over a long sequence, forward and backward (backpropagation through time).

    python bench/bench_rnn.py                  # 1,000 steps, hidden size 16, inputs 8
    python bench/bench_rnn.py --steps 100 --hidden 4

cgraph runs the program of samples/rnn.cg (sizes changed) through `cgraph_cli.grad`, which runs
the loop as a scan (cgraph_cli.run.scan: the body compiled once into a step function and its
vector-Jacobian product, the loop run forward and back over the saved steps): from the text
(reading it and compiling the steps included) and again on the parsed program (the steps
compiled already); and, for reference, the graph that runs unrolled and its passes. Against
it: the same computation written by hand in NumPy (a loop forward, a loop backward: the
practical limit), and the peers that install here: PyTorch (eager autograd) and JAX
(`lax.scan` under `jit(grad)`, compile time apart). micrograd is left out: it has scalars
only, and a 16-wide RNN is thousands of scalar nodes a step. Every contender runs once a
round, after NumPy's run of the round, and is given as its median time and the median and
range of its per-round ratios to NumPy. The results are checked equal to NumPy's before
timing. Use OPENBLAS_NUM_THREADS=1 (the peers' single thread).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgraph_cli import grad, parse  # noqa: E402
from cgraph_cli.run.control import run_graph  # noqa: E402
from cgraph_cli.run.program import differentiated  # noqa: E402

PROGRAM = """\
input W, U, b, v, target = 0.5
input xs
h = zeros
for t in range(len(xs)):
    h = tanh(W @ h + U @ xs[t] + b)
y = sum(v * h)
loss = (y - target)^2
"""


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
    torch.set_num_threads(1)  # one thread, as every other contender
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
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    bindings = data(args.steps, args.hidden, args.features)
    static = parse(PROGRAM)
    ref_loss, ref_dW = numpy_by_hand(**bindings)
    for result in (grad(PROGRAM, bindings), grad(static, bindings)):
        assert result._graph is None, "the loop ran as a scan"
        assert np.isclose(result.value, ref_loss) and np.allclose(result.gradients["W"], ref_dW)
    contenders = {
        "cgraph grad of the text (read, compile the steps, scan)": lambda: grad(PROGRAM, bindings),
        "cgraph grad of the parsed program again (scan)": lambda: grad(static, bindings),
        "cgraph, the loop unrolled (run_graph + passes)": lambda: differentiated(static, bindings),
    }
    torch_run = torch_eager(bindings)
    if torch_run is not None:
        value, dW = torch_run()
        assert np.isclose(value, ref_loss) and np.allclose(dW, ref_dW)
        contenders["PyTorch eager autograd"] = torch_run
    jax_run = jax_scan(bindings)
    compile_note = ""
    if jax_run is not None:
        run, compile_time = jax_run
        value, dW = run()
        assert np.isclose(value, ref_loss) and np.allclose(dW, ref_dW)
        contenders["JAX jit(grad) over lax.scan"] = run
        compile_note = f" (JAX's compile, {compile_time * 1e3:.0f} ms, apart)"
    baseline = lambda: numpy_by_hand(**bindings)  # noqa: E731
    times: dict[str, list[float]] = {k: [] for k in contenders}
    ratios: dict[str, list[float]] = {k: [] for k in contenders}
    base_times = []
    for _ in range(args.rounds):  # turns taken round by round: the same load for each
        t_np = timed(baseline)
        base_times.append(t_np)
        for label, fn in contenders.items():
            t = timed(fn)
            times[label].append(t)
            ratios[label].append(t / t_np)
    print(
        f"Elman RNN, {args.steps:,} steps, hidden {args.hidden}, inputs {args.features}: "
        f"forward + backward, {args.rounds} rounds{compile_note}"
    )
    print(f"  the graph that runs unrolled: {len(run_graph(static, bindings)):,} nodes")
    print(f"  {'':<58} {'median ms':>10}   ratio to NumPy by hand: median [range]")
    print(f"  {'NumPy by hand (loop forward, loop backward)':<58} {median(base_times) * 1e3:10.2f}")
    for label in contenders:
        r = ratios[label]
        print(
            f"  {label:<58} {median(times[label]) * 1e3:10.2f}   "
            f"{median(r):5.2f}x [{min(r):.2f}-{max(r):.2f}]"
        )


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
