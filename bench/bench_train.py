"""Training: time per epoch of an MLP on the two-moons set, against the same loop by hand.

    python bench/bench_train.py                 # width 64, 200 rows, batches of 32, Adam, 200 epochs
    python bench/bench_train.py --width 256 --epochs 20

cgraph trains the program below with `cgraph_cli.train` (the compiled NumPy module once per
batch, Adam as torch.optim has it). Against it: the same training loop written by hand in
NumPy (forward, backward and Adam for the same MLP: the practical limit), and PyTorch eager
(autograd and torch.optim.Adam) when it is installed. All three start from the same weights,
see the same batches, and must end with the same loss before any timing is printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgraph_cli import parse  # noqa: E402
from cgraph_cli.data.datafiles import expand  # noqa: E402
from cgraph_cli.jobs.training import load_rows, train  # noqa: E402

PROGRAM = """\
input X, T, W1, b1, W2, b2
H = relu(X @ W1 + b1)
Z = H @ W2 + b2
loss = mean(softplus(Z) - T * Z)
"""
PARAMS = ["W1", "b1", "W2", "b2"]


def initial(width: int) -> dict:
    rng = np.random.default_rng(0)
    return {
        "W1": rng.normal(scale=1.0, size=(2, width)),
        "b1": np.zeros(width),
        "W2": rng.normal(scale=1 / np.sqrt(width), size=width),
        "b2": 0.0,
    }


def batches(n: int, size: int, epochs: int, seed: int):
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(n)
        for k in range(0, n, size):
            yield order[k : k + size]


def numpy_by_hand(data, init, size, epochs, lr, seed=0):
    X, T = data["X"], data["T"]
    p = {k: np.array(v, dtype=float) for k, v in init.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    b1, b2, eps = 0.9, 0.999, 1e-8
    t = 0
    for pick in batches(len(X), size, epochs, seed):
        x, y = X[pick], T[pick]
        a = x @ p["W1"] + p["b1"]
        h = np.maximum(a, 0)
        z = h @ p["W2"] + p["b2"]
        dz = (1 / (1 + np.exp(-z)) - y) / len(y)
        dh = np.outer(dz, p["W2"]) * (a > 0)
        g = {"W1": x.T @ dh, "b1": dh.sum(0), "W2": h.T @ dz, "b2": dz.sum()}
        t += 1
        for k in p:
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
            p[k] = p[k] - (lr / (1 - b1**t)) * m[k] / (np.sqrt(v[k]) / np.sqrt(1 - b2**t) + eps)
    return p


def torch_eager(data, init, size, epochs, lr, seed=0):
    import torch

    X, T = torch.tensor(data["X"]), torch.tensor(data["T"])
    p = {k: torch.tensor(np.array(v, dtype=float), requires_grad=True) for k, v in init.items()}
    opt = torch.optim.Adam(p.values(), lr=lr)
    for pick in batches(len(X), size, epochs, seed):
        idx = torch.tensor(pick)
        x, y = X[idx], T[idx]
        z = torch.relu(x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
        loss = (torch.nn.functional.softplus(z) - y * z).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in p.items()}


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=200)  # as the example runs
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows = expand("sample:two_moons.csv")[0]
    graph = parse(PROGRAM)
    data, n = load_rows(rows, None, graph, PARAMS)
    init = initial(args.width)

    def run_cgraph():
        return train(
            graph, init, wrt=PARAMS, rows=rows, optimizer="adam", lr=args.lr,
            epochs=args.epochs, batch_size=args.batch_size, shuffle=True, seed=0,
        )  # fmt: skip

    got = run_cgraph().params
    want = numpy_by_hand(data, init, args.batch_size, args.epochs, args.lr)
    for k in PARAMS:
        assert np.allclose(got[k], want[k], rtol=1e-9, atol=1e-12), k
    rows_out = [
        ("cgraph train (compiled NumPy module, Adam)", best(run_cgraph, args.runs)),
        (
            "NumPy by hand (forward, backward, Adam)",
            best(
                lambda: numpy_by_hand(data, init, args.batch_size, args.epochs, args.lr), args.runs
            ),
        ),
    ]
    try:
        import torch  # noqa: F401

        theirs = torch_eager(data, init, args.batch_size, args.epochs, args.lr)
        for k in PARAMS:
            assert np.allclose(theirs[k], want[k], rtol=1e-6, atol=1e-9), k
        rows_out.append(
            (
                "PyTorch eager (autograd, torch.optim.Adam)",
                best(
                    lambda: torch_eager(data, init, args.batch_size, args.epochs, args.lr),
                    args.runs,
                ),
            )
        )
    except ImportError:
        pass
    steps = args.epochs * -(-n // args.batch_size)
    print(
        f"two moons, {n} rows, MLP 2-{args.width}-1, batches of {args.batch_size}, "
        f"{args.epochs} epochs ({steps} steps), Adam; best of {args.runs}"
    )
    limit = rows_out[1][1]
    for label, seconds in rows_out:
        per_epoch = seconds / args.epochs * 1e3
        print(f"  {label:<45} {per_epoch:8.2f} ms/epoch  {seconds / limit:5.2f}x NumPy")
    # Without the fixed costs (reading the data, compiling, the final loss): the time of
    # twice the epochs, less that of the epochs.
    twice = args.epochs * 2
    cg = best(lambda: train(
        graph, init, wrt=PARAMS, rows=rows, optimizer="adam", lr=args.lr,
        epochs=twice, batch_size=args.batch_size, shuffle=True, seed=0,
    ), args.runs) - rows_out[0][1]  # fmt: skip
    hand = (
        best(lambda: numpy_by_hand(data, init, args.batch_size, twice, args.lr), args.runs) - limit
    )
    fixed = rows_out[0][1] - cg
    print(
        f"  an epoch past the fixed costs: cgraph {cg / args.epochs * 1e3:.2f} ms, NumPy "
        f"{hand / args.epochs * 1e3:.2f} ms: {cg / hand:.2f}x; cgraph's fixed costs (reading "
        f"the rows, compiling a module per batch size): {fixed * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
