"""Hessian benchmark: forward-over-reverse (what ``cgraph hessian`` does) against
reverse-over-reverse, on the same derivative program, next to the practical limit (the Hessian
written by hand in NumPy) and the peers (JAX's ``hessian``, PyTorch's
``torch.autograd.functional.hessian``) when they are installed.

Prints figures; asserts nothing (but checks every strategy gives the same matrix).

    python bench/bench_hessian.py                 # n = 4 .. 256
    python bench/bench_hessian.py --sizes 8,64    # quicker
    python bench/bench_hessian.py --json out.json

The function: f(x) = sum(tanh(W @ x)) + sum(x * x) / 2 with W an (n, n) matrix, the Hessian
with respect to x (n by n). Both cgraph strategies run on the derivative program that
``grad_graph`` builds once (its cost is shown apart):

- forward over reverse: one forward-mode pass (jvp) over the derivative program per column,
  seeded with the unit vector e_k of x;
- reverse over reverse: one reverse pass over the derivative program per row, from the
  gradient's element k.

A scalar program with n inputs (f = sum over i of sin(x_i) * x_{i+1} + x_i^2) shows the same
for programs of numbers, where the Hessian is also a derivative program of order 2 (built
once, then evaluated: ``cgraph diff --order 2``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def best(fn, repeat: int = 5) -> float:
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


def once(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# --- cgraph ----------------------------------------------------------------------------------
def cgraph_strategies(graph, point: dict, wrt: str):
    """Closures computing the Hessian with respect to input ``wrt`` both ways, and one that
    builds the derivative program (the transform alone)."""
    from cgraph_cli.core.autodiff import reverse
    from cgraph_cli.core.interpret import ARRAYS
    from cgraph_cli.passes.grad_graph import grad_graph
    from cgraph_cli.run.evaluate import forward
    from cgraph_cli.run.jvp import jvp

    values = forward(graph, point)
    shapes = {n: tuple(np.shape(values[i])) for n, i in graph.inputs.items()}
    derived = grad_graph(graph, None, [wrt], shapes)
    dg = derived.graph
    holder = dg.names[derived.gradients[wrt]]
    x = dg.inputs[wrt]
    shape = shapes[wrt]
    size = int(np.prod(shape)) if shape else 1
    dvalues = forward(dg, point)
    needs = [True] * len(dg.ops)

    def unit(k):
        if not shape:
            return 1.0
        e = np.zeros(shape)
        e.flat[k] = 1.0
        return e

    def forward_over_reverse():
        columns = [np.ravel(jvp(dg, dvalues, {wrt: unit(k)})[holder]) for k in range(size)]
        return np.stack(columns, axis=1)

    def reverse_over_reverse():
        rows = []
        with np.errstate(all="ignore"):
            for k in range(size):
                adj = reverse(dg, dvalues, ARRAYS, holder, unit(k), needs)
                rows.append(np.ravel(np.broadcast_to(adj[x], shape) if shape else adj[x]))
        return np.stack(rows)

    def transform():
        grad_graph(graph, None, [wrt], shapes)

    return transform, forward_over_reverse, reverse_over_reverse


def tensor_case(n: int, seed: int = 0):
    from cgraph_cli import parse

    rng = np.random.default_rng(seed)
    W = rng.normal(0.0, 1.0 / np.sqrt(n), (n, n))
    x = rng.normal(0.0, 1.0, n)
    graph = parse("f = sum(tanh(W @ x)) + sum(x * x) / 2")
    return graph, {"W": W, "x": x}


def tensor_numpy(W, x):
    """The Hessian by hand: W^T diag(-2 tanh(a) (1 - tanh(a)^2)) W + I, a = W x."""
    t = np.tanh(W @ x)
    return (W.T * (-2.0 * t * (1.0 - t * t))) @ W + np.eye(len(x))


def scalar_program(n: int) -> str:
    terms = [f"sin(x{i}) * x{(i + 1) % n} + x{i} ^ 2" for i in range(n)]
    return "f = " + " + ".join(terms)


# --- peers -------------------------------------------------------------------------------------
def jax_hessian(W, x):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    Wj, xj = jnp.asarray(W), jnp.asarray(x)

    def f(x):
        return jnp.sum(jnp.tanh(Wj @ x)) + jnp.sum(x * x) / 2

    plain = jax.hessian(f)
    jitted = jax.jit(jax.hessian(f))
    jitted(xj).block_until_ready()
    return (
        lambda: np.asarray(plain(xj)),
        lambda: jitted(xj).block_until_ready(),
        lambda: np.asarray(jitted(xj)),
    )


def torch_hessian(W, x):
    try:
        import torch
    except ImportError:
        return None
    Wt = torch.tensor(W, dtype=torch.float64)
    xt = torch.tensor(x, dtype=torch.float64)

    def f(x):
        return torch.tanh(Wt @ x).sum() + (x * x).sum() / 2

    def ror():  # torch's default: reverse over reverse, one backward pass per row
        return torch.autograd.functional.hessian(f, xt)

    def vectorized():  # reverse over reverse with vmap over the rows
        return torch.autograd.functional.hessian(f, xt, vectorize=True)

    return ror, vectorized


def tensor_row(n: int) -> dict:
    """One size of the tensor case: times in seconds, checked against NumPy."""
    graph, point = tensor_case(n)
    transform, fwd, rev = cgraph_strategies(graph, point, "x")
    expected = tensor_numpy(point["W"], point["x"])
    for fn in (fwd, rev):
        assert np.allclose(fn(), expected, rtol=1e-9, atol=1e-9)
    row = {
        "n": n,
        "transform": once(transform),
        "forward_over_reverse": best(fwd, 3),
        "reverse_over_reverse": best(rev, 3),
        "numpy": best(lambda: tensor_numpy(point["W"], point["x"])),
    }
    jx = jax_hessian(point["W"], point["x"])
    if jx is not None:
        assert np.allclose(jx[2](), expected, rtol=1e-9, atol=1e-9)
        row["jax"], row["jax_jit"] = best(jx[0], 3), best(jx[1])
    th = torch_hessian(point["W"], point["x"])
    if th is not None:
        assert np.allclose(th[0]().numpy(), expected, rtol=1e-9, atol=1e-9)
        row["torch"], row["torch_vectorized"] = best(th[0], 3), best(th[1], 3)
    return row


def scalar_row(n: int) -> dict:
    """One size of the scalar case: times in seconds."""
    from cgraph_cli import parse
    from cgraph_cli.passes.derivatives import derivative_program
    from cgraph_cli.passes.grad_graph import grad_graph
    from cgraph_cli.run.evaluate import forward
    from cgraph_cli.run.higher import hessian
    from cgraph_cli.run.jvp import jvp
    from cgraph_cli.run.vjp import vjp

    graph = parse(scalar_program(n))
    point = {f"x{i}": 0.1 * (i + 1) for i in range(n)}
    derived = grad_graph(graph)
    dg = derived.graph
    dvalues = forward(dg, point)
    holders = [dg.names[derived.gradients[w]] for w in graph.inputs]
    inputs = [dg.inputs[w] for w in graph.inputs]

    def fwd():  # one forward-mode pass per column over the derivative program
        columns = [jvp(dg, dvalues, {w: 1.0}) for w in graph.inputs]
        return [[t[h] for t in columns] for h in holders]

    def rev():  # one reverse pass per row over the derivative program
        return [[vjp(dg, dvalues, h)[x] for x in inputs] for h in holders]

    assert np.allclose(fwd(), rev(), rtol=1e-9, atol=1e-12)
    assert np.allclose(fwd(), hessian(graph, point)["hessian"], rtol=1e-9, atol=1e-12)
    build = once(lambda: derivative_program(graph, order=2))
    program = derivative_program(graph, order=2)
    row = {
        "n": n,
        "forward_over_reverse": best(fwd, 3),
        "reverse_over_reverse": best(rev, 3),
        "order2_build": build,
        "order2_eval": best(lambda: forward(program.graph, point), 3),
        "hessian_call": best(lambda: hessian(graph, point), 3),
    }
    return row


COLUMNS = (
    ("transform", 10),
    ("forward_over_reverse", 10),
    ("reverse_over_reverse", 10),
    ("numpy", 9),
    ("jax", 9),
    ("jax_jit", 9),
    ("torch", 9),
    ("torch_vectorized", 10),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,16,64,256")
    parser.add_argument("--scalar-sizes", default="4,16,64")
    parser.add_argument("--json", dest="json_path")
    opts = parser.parse_args()
    results: dict = {"tensor": [], "scalar": []}

    print("Hessian of f(x) = sum(tanh(W @ x)) + sum(x * x) / 2, x of n elements (ms per Hessian)")
    header = f"{'n':>5} {'transform':>10} {'fwd/rev':>10} {'rev/rev':>10} {'numpy':>9}"
    header += f" {'jax':>9} {'jax jit':>9} {'torch':>9} {'torch vec':>10}"
    print(header)
    for n in [int(s) for s in opts.sizes.split(",")]:
        row = tensor_row(n)
        results["tensor"].append(row)
        print(
            " ".join(
                [f"{n:>5}"]
                + [f"{row[k] * 1e3:>{w}.3f}" if k in row else f"{'-':>{w}}" for k, w in COLUMNS]
            )
        )

    print()
    print("Scalar program with n inputs, f = sum of sin(x_i) * x_(i+1) + x_i^2 (ms per Hessian)")
    print(
        f"{'n':>5} {'fwd/rev':>10} {'rev/rev':>10} {'order-2 build':>14} {'order-2 eval':>13}"
        f" {'hessian()':>10}"
    )
    for n in [int(s) for s in opts.scalar_sizes.split(",")]:
        row = scalar_row(n)
        results["scalar"].append(row)
        print(
            f"{n:>5} {row['forward_over_reverse'] * 1e3:>10.3f}"
            f" {row['reverse_over_reverse'] * 1e3:>10.3f} {row['order2_build'] * 1e3:>14.1f}"
            f" {row['order2_eval'] * 1e3:>13.3f} {row['hessian_call'] * 1e3:>10.3f}"
        )
    if opts.json_path:
        Path(opts.json_path).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
