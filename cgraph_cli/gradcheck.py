"""Reverse-mode gradients against central finite differences.

For each input x: numeric = (f(x + h) - f(x - h)) / 2h with h = eps · max(1, |x|), compared with
the analytic gradient as |analytic - numeric| <= atol + rtol · max(|analytic|, |numeric|).
A point where a step crosses a kink (relu, abs at 0; max, min at a tie) is skipped, not
failed: there the function has no derivative for a difference to approximate. So is a point
where f or a shifted f is undefined.

>>> from cgraph_cli import parse
>>> [(c.name, c.status) for c in gradcheck(parse("y = x * x + relu(x)"), {"x": 3})]
[('x', 'ok')]
>>> [c.status for c in gradcheck(parse("y = relu(x)"), {"x": 0})]
['kink']
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

from .backward import vjp
from .errors import DomainError
from .forward import forward
from .ir import Graph

EPS, RTOL, ATOL = 1e-6, 1e-5, 1e-7
RANGE = (-2.0, 2.0)  # where --points draws each input


@dataclass(frozen=True)
class Check:
    point: dict[str, float]  # the bindings of every input
    name: str  # the input
    analytic: float | None
    numeric: float | None
    status: str  # "ok", "mismatch", "kink" (skipped), "undefined" (skipped)

    @property
    def error(self) -> float | None:
        if self.analytic is None or self.numeric is None:
            return None
        return abs(self.analytic - self.numeric)


def _branches(graph: Graph, values: list[float]) -> list[float]:
    """The kink quantity of every op that has one (see OpSpec.kink)."""
    return [
        op.kink(*(values[a] for a in graph.args[i]))
        for i, op in enumerate(graph.ops) if op.kink is not None
    ]


def crosses_kink(base: list[float], *shifted: list[float]) -> bool:
    """True if a kink quantity is 0 at the base point or changes sign at a shifted one."""
    for k, b in enumerate(base):
        if b == 0.0 or any((s[k] > 0.0) != (b > 0.0) or s[k] == 0.0 for s in shifted):
            return True
    return False


def gradcheck(
    graph: Graph,
    bindings: Mapping[str, float],
    *,
    of: int | None = None,
    eps: float = EPS,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> list[Check]:
    """One :class:`Check` per input at the point ``bindings`` (inputs with defaults may be
    left out)."""
    out = graph.output if of is None else of
    point = {n: float(bindings.get(n, graph.defaults.get(n, math.nan))) for n in graph.inputs}
    try:
        values = forward(graph, point)
        adjoints = vjp(graph, values, of=out)
    except DomainError:
        return [Check(point, n, None, None, "undefined") for n in graph.inputs]
    base = _branches(graph, values)
    checks = []
    for name, node in graph.inputs.items():
        h = eps * max(1.0, abs(point[name]))
        try:
            up = forward(graph, {**point, name: point[name] + h})
            down = forward(graph, {**point, name: point[name] - h})
        except DomainError:
            checks.append(Check(point, name, adjoints[node], None, "undefined"))
            continue
        numeric = (up[out] - down[out]) / (2 * h)
        analytic = adjoints[node]
        if crosses_kink(base, _branches(graph, up), _branches(graph, down)):
            status = "kink"
        elif abs(analytic - numeric) <= atol + rtol * max(abs(analytic), abs(numeric)):
            status = "ok"
        else:
            status = "mismatch"
        checks.append(Check(point, name, analytic, numeric, status))
    return checks


def random_points(
    graph: Graph, count: int, seed: int = 0, fixed: Mapping[str, float] | None = None,
    low: float = RANGE[0], high: float = RANGE[1],
) -> list[dict[str, float]]:
    """``count`` points, each input drawn uniformly from [low, high] except those ``fixed``.

    >>> from cgraph_cli import parse
    >>> random_points(parse("y = a * b"), 2, seed=1, fixed={"b": 5})
    [{'a': -1.4625430235503951, 'b': 5}, {'a': 1.3897349477489307, 'b': 5}]
    """
    rng = random.Random(seed)
    fixed = fixed or {}
    return [
        {n: fixed[n] if n in fixed else rng.uniform(low, high) for n in graph.inputs}
        for _ in range(count)
    ]
