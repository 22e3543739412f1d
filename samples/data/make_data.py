"""Write the training sets of the samples, from a fixed seed (run from anywhere):

    python samples/data/make_data.py

- xor.csv: the four points of XOR (X a JSON array per row, T the label).
- two_moons.csv: 200 points of two interleaved half circles with noise 0.1, as
  scikit-learn's make_moons draws them (X, T), and two_moons_val.csv: 100 more for validation.
- linear.csv: 100 points of y = 3x - 1 with noise 0.2 (x, y).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def moons(n: int, noise: float, rng) -> tuple[np.ndarray, np.ndarray]:
    outer = n // 2
    inner = n - outer
    angles_out = np.linspace(0, np.pi, outer)
    angles_in = np.linspace(0, np.pi, inner)
    X = np.concatenate(
        [
            np.stack([np.cos(angles_out), np.sin(angles_out)], axis=1),
            np.stack([1 - np.cos(angles_in), 0.5 - np.sin(angles_in)], axis=1),
        ]
    )
    T = np.concatenate([np.zeros(outer), np.ones(inner)])
    X += rng.normal(scale=noise, size=X.shape)
    order = rng.permutation(n)
    return X[order], T[order]


def write(name: str, header: list[str], rows) -> None:
    with open(HERE / name, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(header)
        out.writerows(rows)


def point(x) -> str:
    return json.dumps([round(float(v), 4) for v in x])


def main() -> None:
    rng = np.random.default_rng(0)
    write(
        "xor.csv",
        ["X", "T"],
        [(point(x), t) for x, t in [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]],
    )
    X, T = moons(200, 0.1, rng)
    write("two_moons.csv", ["X", "T"], [(point(x), int(t)) for x, t in zip(X, T)])
    X, T = moons(100, 0.1, rng)
    write("two_moons_val.csv", ["X", "T"], [(point(x), int(t)) for x, t in zip(X, T)])
    x = rng.uniform(-2, 2, size=100)
    y = 3 * x - 1 + rng.normal(scale=0.2, size=100)
    write("linear.csv", ["x", "y"], [(round(a, 4), round(b, 4)) for a, b in zip(x, y)])


if __name__ == "__main__":
    main()
