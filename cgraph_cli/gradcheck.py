"""Reverse-mode gradients against central finite differences.

For each input x: numeric = (f(x + h) - f(x - h)) / 2h with h = eps · max(1, |x|), compared with
the analytic gradient as |analytic - numeric| <= atol + rtol · max(|analytic|, |numeric|).
A point where a step crosses a kink (relu, abs at 0; max, min at a tie) is skipped, not
failed: there the function has no derivative for a difference to approximate. So is a point
where f or a shifted f is undefined. For a tensor input, each element is checked (at most
``elements`` of them, chosen at random, for a large tensor).

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

from .bindings import check_value
from .errors import DomainError
from .ir import Graph
from .passes.evaluate import forward
from .passes.vjp import vjp
from .vocab import ARRAYS

EPS, RTOL, ATOL = 1e-6, 1e-5, 1e-7
RANGE = (-2.0, 2.0)  # where --points draws each input
ELEMENTS = 64  # elements checked per tensor input at most


@dataclass(frozen=True)
class Check:
    point: dict[str, object]  # the bindings of every input
    name: str  # the input
    analytic: float | None
    numeric: float | None
    status: str  # "ok", "mismatch", "kink" (skipped), "undefined" (skipped)
    element: tuple[int, ...] = ()  # which element of a tensor input

    @property
    def label(self) -> str:
        """``x``, or ``W[0, 1]`` for an element of a tensor."""
        if not self.element:
            return self.name
        return f"{self.name}[{', '.join(str(k) for k in self.element)}]"

    @property
    def value(self) -> float:
        """The input's (element's) value at the point."""
        x = self.point[self.name]
        return float(x[self.element]) if self.element else x

    @property
    def error(self) -> float | None:
        if self.analytic is None or self.numeric is None:
            return None
        return abs(self.analytic - self.numeric)


def _branches(graph: Graph, values: list) -> list[float]:
    """The kink quantity of every op that has one (see OpSpec.kink), element by element."""
    out: list[float] = []
    for i, op in enumerate(graph.ops):
        if op.kink is not None:
            args = [values[a] for a in graph.args[i]]
            if all(x.__class__ is float for x in args):
                k = op.kink(ARRAYS, *args)
            else:  # x - y may overflow to ±inf, whose sign is still right: no warning
                from .arrays import np

                with np.errstate(all="ignore"):
                    k = op.kink(ARRAYS, *args)
            if k.__class__ is float:
                out.append(k)
            else:
                out.extend(k.ravel().tolist() if hasattr(k, "ravel") else [float(k)])
    return out


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
    elements: int = ELEMENTS,
    seed: int = 0,
) -> list[Check]:
    """One :class:`Check` per input (per checked element of a tensor input) at the point
    ``bindings`` (inputs with defaults may be left out)."""
    out = graph.output if of is None else of
    point = {
        n: check_value(n, bindings[n]) if n in bindings else graph.defaults.get(n, math.nan)
        for n in graph.inputs
    }
    rng = None if all(x.__class__ is float for x in point.values()) else random.Random(seed)
    try:
        values = forward(graph, point)
        adjoints = vjp(graph, values, of=out)
    except DomainError:  # one check per element, as at a point where f is defined
        return [
            Check(point, n, None, None, "undefined", element)
            for n in graph.inputs
            for element in _elements(point[n], elements, rng)
        ]
    base = _branches(graph, values)
    checks = []
    for name, node in graph.inputs.items():
        x = point[name]
        for element in _elements(x, elements, rng):
            xv = float(x[element]) if element else x
            h = eps * max(1.0, abs(xv))
            analytic = float(adjoints[node][element]) if element else adjoints[node]
            try:
                if not math.isfinite(xv + h) or not math.isfinite(xv - h):
                    raise DomainError("the step leaves the floating-point range")
                up = forward(graph, {**point, name: _shifted(x, element, xv + h)})
                down = forward(graph, {**point, name: _shifted(x, element, xv - h)})
            except DomainError:
                checks.append(Check(point, name, analytic, None, "undefined", element))
                continue
            numeric = (up[out] - down[out]) / (2 * h)
            if not math.isfinite(numeric):  # the difference overflowed: no slope to compare
                checks.append(Check(point, name, analytic, None, "undefined", element))
                continue
            if crosses_kink(base, _branches(graph, up), _branches(graph, down)):
                status = "kink"
            elif abs(analytic - numeric) <= atol + rtol * max(abs(analytic), abs(numeric)):
                status = "ok"
            else:
                status = "mismatch"
            checks.append(Check(point, name, analytic, numeric, status, element))
    return checks


def worst_first(checks: list[tuple[int, Check]], limit: int) -> list[tuple[int, Check]]:
    """The ``limit`` (point, check) pairs most worth a look: mismatches, then passed checks,
    each by largest error first, then skipped ones; in that order.

    >>> from cgraph_cli import parse
    >>> g = parse("y = exp(10 * x)")
    >>> checks = [(k, c) for k, x in enumerate([0.1, 1.0, -3.0], 1) for c in gradcheck(g, {"x": x}, eps=1e-2)]
    >>> [(k, c.status) for k, c in worst_first(checks, 2)]
    [(2, 'mismatch'), (1, 'mismatch')]
    """
    import heapq

    rank = {"mismatch": 0, "ok": 1, "kink": 2, "undefined": 2}

    def key(item: tuple[int, tuple[int, Check]]):
        n, (_, c) = item
        error = c.error if c.error is not None and c.error == c.error else -math.inf
        return rank[c.status], -error, n

    return [item for _, item in heapq.nsmallest(limit, enumerate(checks), key=key)]


def _elements(x, limit: int, rng: random.Random | None) -> list[tuple[int, ...]]:
    """The elements of ``x`` to check: ``[()]`` for a number; all of a small tensor; else
    ``limit`` of them at random, in order."""
    if x.__class__ is float or not getattr(x, "shape", ()):
        return [()]
    from .arrays import np

    flat = range(x.size) if x.size <= limit else sorted(rng.sample(range(x.size), limit))
    return [tuple(int(k) for k in np.unravel_index(f, x.shape)) for f in flat]


def _shifted(x, element: tuple[int, ...], value: float):
    if not element:
        return value
    y = x.copy()
    y[element] = value
    return y


def random_points(
    graph: Graph,
    count: int,
    seed: int = 0,
    fixed: Mapping[str, float] | None = None,
    low: float = RANGE[0],
    high: float = RANGE[1],
) -> list[dict[str, float]]:
    """``count`` points, each input drawn uniformly from [low, high] except those ``fixed``.

    >>> from cgraph_cli import parse
    >>> random_points(parse("y = a * b"), 2, seed=1, fixed={"b": 5})
    [{'a': -1.4625430235503951, 'b': 5}, {'a': 1.3897349477489307, 'b': 5}]
    """
    rng = random.Random(seed)
    fixed = fixed or {}

    def draw(name: str):
        shape = getattr(graph.defaults.get(name), "shape", ())
        if not shape:
            return rng.uniform(low, high)
        from .arrays import np

        # A tensor input takes its default's shape.
        return np.random.default_rng(rng.getrandbits(32)).uniform(low, high, shape)

    return [{n: fixed[n] if n in fixed else draw(n) for n in graph.inputs} for _ in range(count)]
