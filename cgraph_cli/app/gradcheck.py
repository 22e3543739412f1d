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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import CgraphError, DomainError
from ..core.interpret import ARRAYS
from ..core.ir import Graph, resolve_name
from ..data.bindings import check_value
from ..run.evaluate import forward
from ..run.vjp import vjp

EPS, RTOL, ATOL = 1e-6, 1e-5, 1e-7
RANGE = (-2.0, 2.0)  # where --points draws each input
MAX_POINTS = 100_000  # --points at most (cli/checks.py's option says so too)
ELEMENTS = 64  # elements checked per tensor input at most


#: Why a check is skipped, by its status.
SKIPPED = {
    "kink": "the steps cross a kink (relu, abs at 0; max, min at a tie)",
    "undefined": "the program is undefined at the point or at a step from it",
}


@dataclass(frozen=True)
class Check:
    point: dict[str, Any]  # the bindings of every input: floats or NumPy arrays
    name: str  # the input
    analytic: float | None
    numeric: float | None
    status: str  # "ok", "mismatch", "kink" (skipped), "undefined" (skipped)
    element: tuple[int, ...] = ()  # which element of a tensor input
    # A second derivative's other input and element: the one stepped (order 2).
    partner: tuple[str, tuple[int, ...]] | None = None

    @property
    def label(self) -> str:
        """``x``, or ``W[0, 1]`` for an element of a tensor; for a second derivative
        ``∂²/∂x∂y``, or ``∂²/∂x²``."""
        first = element_label(self.name, self.element)
        if self.partner is None:
            return first
        second = element_label(*self.partner)
        return f"∂²/∂{first}²" if second == first else f"∂²/∂{first}∂{second}"

    @property
    def value(self) -> float | None:
        """The input's (element's) value at the point (None for a second derivative)."""
        if self.partner is not None:
            return None
        x = self.point[self.name]
        return float(x[self.element]) if self.element else float(x)

    @property
    def error(self) -> float | None:
        if self.analytic is None or self.numeric is None:
            return None
        return abs(self.analytic - self.numeric)


def element_label(name: str, element: tuple[int, ...]) -> str:
    """``x``, or ``W[0, 1]``: as :func:`cgraph_cli.run.higher.hessian` labels them.

    >>> element_label("W", (0, 1))
    'W[0, 1]'
    """
    return f"{name}[{', '.join(str(k) for k in element)}]" if element else name


def _branches(graph: Graph, values: list) -> list[float]:
    """The kink quantity of every op that has one (see OpSpec.kink), element by element."""
    out: list[float] = []
    for i, op in enumerate(graph.ops):
        if op.kink is not None:
            args = [values[a] for a in graph.args[i]]
            if all(x.__class__ is float for x in args):
                k = op.kink(ARRAYS, *args)
            else:  # x - y may overflow to ±inf, whose sign is still right: no warning
                from ..core.arrays import np

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


def position_inputs(graph: Graph) -> set[str]:
    """The inputs read only as positions (take's ids): their values are whole numbers, so a
    finite difference has no step to take in them.

    >>> from cgraph_cli import parse
    >>> sorted(position_inputs(parse("y = sum(take(W, ids) * ids)"))), position_inputs(
    ...     parse("y = sum(take(W, ids))"))
    ([], {'ids'})
    """
    read_otherwise = set()
    for op, args in zip(graph.ops, graph.args):
        for k, a in enumerate(args):
            if k not in op.positions:
                read_otherwise.add(a)
    return {n for n, i in graph.inputs.items() if i not in read_otherwise and any(
        i in args for args in graph.args)}  # fmt: skip


def gradcheck(
    graph: Graph,
    bindings: Mapping[str, object],
    *,
    of: int | None = None,
    eps: float = EPS,
    rtol: float = RTOL,
    atol: float = ATOL,
    elements: int = ELEMENTS,
    seed: int = 0,
    order: int = 1,
    strict: bool = False,
) -> list[Check]:
    """One :class:`Check` per input (per checked element of a tensor input) at the point
    ``bindings`` (inputs with defaults may be left out). With ``order`` 2, one per pair of
    them instead: each second derivative against the central difference of the gradient
    (see :func:`second_derivatives`). ``strict``: a program undefined at the point itself
    raises its error instead of giving "undefined" checks."""
    out = graph.output if of is None else of
    point: dict[str, Any] = {
        n: check_value(n, bindings[n]) if n in bindings else graph.defaults.get(n, math.nan)
        for n in graph.inputs
    }
    rng = None if all(x.__class__ is float for x in point.values()) else random.Random(seed)
    if order == 2:
        positions = position_inputs(graph)
        chosen = [
            (n, e)
            for n in graph.inputs
            if n not in positions
            for e in _elements(point[n], elements, rng)
        ]
        return second_derivatives(graph, point, chosen, out, eps, rtol, atol, strict)
    try:
        values = forward(graph, point)
        adjoints = vjp(graph, values, of=out)
    except DomainError:  # one check per element, as at a point where f is defined
        if strict:
            raise
        return [
            Check(point, n, None, None, "undefined", element)
            for n in graph.inputs
            for element in _elements(point[n], elements, rng)
        ]
    base = _branches(graph, values)
    checks = []
    positions = position_inputs(graph)
    for name, node in graph.inputs.items():
        if name in positions:  # token ids: whole numbers, no derivative to check
            continue
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
            kink = crosses_kink(base, _branches(graph, up), _branches(graph, down))
            status = _status(analytic, numeric, kink, rtol, atol)
            if status == "undefined":  # the difference overflowed: no slope to compare
                numeric = None
            checks.append(Check(point, name, analytic, numeric, status, element))
    return checks


def second_derivatives(
    graph: Graph,
    point: dict,
    chosen: list[tuple[str, tuple[int, ...]]],
    out: int,
    eps: float = EPS,
    rtol: float = RTOL,
    atol: float = ATOL,
    strict: bool = False,
) -> list[Check]:
    """Each second derivative ∂²out/∂a∂b among the ``chosen`` input elements (each pair once,
    a not after b: the Hessian is symmetric) against the central difference of the gradient
    along b: (∂out/∂a(x + h·e_b) - ∂out/∂a(x - h·e_b)) / 2h, with h = eps·max(1, |x_b|).
    One forward-mode pass and two gradients per b. Skipped as first derivatives are: a step
    that crosses a kink, a point where a gradient is undefined.

    >>> from cgraph_cli import parse
    >>> g = parse("y = x^3 * z")
    >>> [(c.label, c.status) for c in gradcheck(g, {"x": 2, "z": 1}, order=2)]
    [('∂²/∂x²', 'ok'), ('∂²/∂x∂z', 'ok'), ('∂²/∂z²', 'ok')]
    """
    from ..run.higher import hessian_columns

    pairs = [(a, b) for k, a in enumerate(chosen) for b in chosen[k:]]
    try:
        values = forward(graph, point)
        columns = hessian_columns(graph, point, chosen, of=out)
    except DomainError:
        if strict:
            raise
        return [Check(point, a, None, None, "undefined", ea, b) for (a, ea), b in pairs]
    base = _branches(graph, values)
    checks = []
    for k, (b, eb) in enumerate(chosen):
        x = point[b]
        xv = float(x[eb]) if eb else x
        h = eps * max(1.0, abs(xv))
        rows = chosen[: k + 1]
        exact = [_entry(columns[k][a], ea) for a, ea in rows]
        try:
            if not math.isfinite(xv + h) or not math.isfinite(xv - h):
                raise DomainError("the step leaves the floating-point range")
            up = forward(graph, {**point, b: _shifted(x, eb, xv + h)})
            down = forward(graph, {**point, b: _shifted(x, eb, xv - h)})
            g_up, g_down = vjp(graph, up, of=out), vjp(graph, down, of=out)
        except DomainError:
            checks += [
                Check(point, a, e, None, "undefined", ea, (b, eb))
                for (a, ea), e in zip(rows, exact)
            ]
            continue
        kink = crosses_kink(base, _branches(graph, up), _branches(graph, down))
        for (a, ea), analytic in zip(rows, exact):
            node = graph.inputs[a]
            numeric = (_entry(g_up[node], ea) - _entry(g_down[node], ea)) / (2 * h)
            status = _status(analytic, numeric, kink, rtol, atol)
            if status == "undefined":  # the difference overflowed: no slope to compare
                numeric = None
            checks.append(Check(point, a, analytic, numeric, status, ea, (b, eb)))
    order: dict[Any, int] = {
        key: k for k, key in enumerate(chosen)
    }  # row by row: ∂²/∂x², ∂²/∂x∂y, ...
    return sorted(checks, key=lambda c: (order[c.name, c.element], order[c.partner]))


def _entry(value, element: tuple[int, ...]) -> float:
    return float(value[element]) if element else float(value)


def _batched(graph: Graph, places: list[dict], of, eps, rtol, atol) -> list | None:
    """:func:`gradcheck` at every point of ``places`` at once, through the compiled engine
    (:mod:`cgraph_cli.run.engine`): the points as rows of whole columns, the gradient once, the
    output at the two steps of each input, and the kink quantities. A point the engine flags
    (a value on the way not finite) is left as None, for :func:`gradcheck` to check alone; so
    is everything when a point holds a tensor (then None is returned)."""
    from ..core.arrays import np
    from ..run.engine import engine

    if not places or any(v.__class__ is not float for p in places for v in p.values()):
        return None
    from ..run.evaluate import compile_program

    if compile_program(graph).tensor:  # an op on tensors: not rows of numbers
        return None
    try:
        run = engine(graph, of=of, bindings=places[0], kinks=True)
    except CgraphError:
        return None
    n = len(places)
    columns = {name: np.array([p[name] for p in places]) for name in graph.inputs}
    out = graph.display_name(graph.output if of is None else resolve_name(graph, of))
    named, sound = run.evaluate_rows(columns, n, [out])
    _, grads, sound_grad = run.grad_rows(columns, n)
    sound &= sound_grad
    base = named.get(" kinks", [])
    steps, numeric, crossed = {}, {}, {}
    for name in graph.inputs:
        x = columns[name]
        h = eps * np.maximum(1.0, np.abs(x))
        with np.errstate(all="ignore"):
            up_named, up_ok = run.evaluate_rows({**columns, name: x + h}, n, [out])
            down_named, down_ok = run.evaluate_rows({**columns, name: x - h}, n, [out])
            sound &= up_ok & down_ok & np.isfinite(x + h) & np.isfinite(x - h)
            numeric[name] = (up_named.get(out, np.nan) - down_named.get(out, np.nan)) / (2 * h)
        cross = np.zeros(n, dtype=bool)
        for b, u, d in zip(base, up_named.get(" kinks", []), down_named.get(" kinks", [])):
            positive = b > 0.0
            cross |= (b == 0.0) | ((u > 0.0) != positive) | (u == 0.0)
            cross |= ((d > 0.0) != positive) | (d == 0.0)
        crossed[name] = cross.tolist()
        steps[name] = numeric[name].tolist()
    found: list = [None] * n
    analytic = {name: np.asarray(grads.get(name, np.nan)).tolist() for name in graph.inputs}
    for r in np.flatnonzero(sound).tolist():
        checks = []
        for name in graph.inputs:
            a, d = analytic[name][r], steps[name][r]
            status = _status(a, d, crossed[name][r], rtol, atol)
            checks.append(Check(places[r], name, a, None if status == "undefined" else d, status))
        found[r] = checks
    return found


def mismatch(check: Check, rtol: float = RTOL, atol: float = ATOL) -> str:
    """Why a check failed: the two numbers, their difference and the tolerance (JUnit's
    failure message).

    >>> from cgraph_cli import parse
    >>> print(mismatch(gradcheck(parse("y = x^3"), {"x": 0}, eps=1)[0], rtol=0, atol=0.5))
    analytic 0, numeric 1, difference 1 > tolerance 0.5 (atol 0.5 + rtol 0 x the larger)
    """
    from ..core.numfmt import plain_value as f

    assert check.analytic is not None and check.numeric is not None, "a mismatch has both"
    allowed = atol + rtol * max(abs(check.analytic), abs(check.numeric))
    return (
        f"analytic {f(check.analytic)}, numeric {f(check.numeric)}, difference "
        f"{f(abs(check.analytic - check.numeric))} > tolerance {f(allowed)} "
        f"(atol {f(atol)} + rtol {f(rtol)} x the larger)"
    )


def _status(analytic: float, numeric: float, kink: bool, rtol: float, atol: float) -> str:
    if not math.isfinite(numeric):
        return "undefined"
    if kink:
        return "kink"
    if abs(analytic - numeric) <= atol + rtol * max(abs(analytic), abs(numeric)):
        return "ok"
    return "mismatch"


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
    from ..core.arrays import np

    assert rng is not None, "tensor points are checked with a random generator"
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
    fixed: Mapping[str, object] | None = None,
    low: float = RANGE[0],
    high: float = RANGE[1],
) -> list[dict[str, Any]]:
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
        from ..core.arrays import np

        # A tensor input takes its default's shape.
        return np.random.default_rng(rng.getrandbits(32)).uniform(low, high, shape)

    return [{n: fixed[n] if n in fixed else draw(n) for n in graph.inputs} for _ in range(count)]


# --- the library's entry point -------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class GradcheckReport:
    """What a gradient check found: ``checks`` holds (point number, from 1, :class:`Check`)
    pairs; ``ok`` when no gradient differs from its finite difference (skipped ones aside).

    >>> from cgraph_cli import parse
    >>> r = check_gradients(parse("y = x * relu(x)"), {"x": 0})
    >>> r
    <GradcheckReport of y: 0 passed, 0 failed, 1 skipped at 1 point>
    >>> r.checks[0][1].status
    'kink'
    """

    output: str  # the output differentiated
    order: int
    points: int
    checks: list[tuple[int, Check]]

    def count(self, *statuses: str) -> int:
        """How many checks have one of ``statuses`` ("ok", "mismatch", "kink", "undefined")."""
        return sum(c.status in statuses for _, c in self.checks)

    @property
    def passed(self) -> int:
        """Checks whose gradient matches its finite difference."""
        return self.count("ok")

    @property
    def failed(self) -> int:
        """Checks whose gradient differs from its finite difference."""
        return self.count("mismatch")

    @property
    def skipped(self) -> int:
        """Checks skipped: at a kink, or where the function is undefined."""
        return self.count("kink", "undefined")

    @property
    def ok(self) -> bool:
        """No gradient differs from its finite difference."""
        return self.failed == 0

    def worst(self, limit: int = 20) -> list[tuple[int, Check]]:
        """The ``limit`` checks most worth a look (see :func:`worst_first`)."""
        return worst_first(self.checks, limit)

    def to_dict(self) -> dict[str, Any]:
        """The report as ``cgraph gradcheck --format json`` writes it."""
        return {
            "order": self.order,
            "passed": self.passed,
            "failed": self.failed,
            "skipped": self.skipped,
            "checks": [
                {
                    "point": k,
                    "bindings": c.point,
                    "input": c.label,
                    "analytic": c.analytic,
                    "numeric": c.numeric,
                    "error": c.error,
                    "status": c.status,
                }
                for k, c in self.checks
            ],
        }

    def junit(self, suite: str = "gradcheck", rtol: float = RTOL, atol: float = ATOL) -> bytes:
        """JUnit XML, UTF-8 encoded, as ``cgraph gradcheck --junit`` writes it: one testcase
        per input (element, pair) and point; a mismatch a failure with the two numbers and
        the tolerance, a check at a kink or where the program is undefined skipped.

        >>> from cgraph_cli import parse
        >>> report = check_gradients(parse("y = x * relu(x)"), {"x": 0})
        >>> print(report.junit().decode().splitlines()[4].strip())
        <skipped message="the steps cross a kink (relu, abs at 0; max, min at a tie)" />
        """
        import xml.etree.ElementTree as ET

        from ..render.html import xml_text

        root = ET.Element("testsuites")
        node = ET.SubElement(
            root,
            "testsuite",
            name=xml_text(suite),
            tests=str(len(self.checks)),
            failures=str(self.failed),
            skipped=str(self.skipped),
        )
        d = f"∂{self.output}/∂" if self.order == 1 else ""
        for k, c in self.checks:
            name = f"{d}{c.label} at point {k}"
            case = ET.SubElement(node, "testcase", classname=xml_text(suite), name=xml_text(name))
            if c.status == "mismatch":
                message = f"{name}: {mismatch(c, rtol, atol)}"
                ET.SubElement(case, "failure", message=xml_text(message))
            elif c.status in SKIPPED:
                ET.SubElement(case, "skipped", message=SKIPPED[c.status])
        ET.indent(root)
        return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"

    def _summary(self) -> str:
        where = f"{self.points} point{'s' * (self.points != 1)}"
        return f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped at {where}"

    def _repr_html_(self) -> str:
        from ..core.numfmt import format_number
        from ..render.html import table

        def f(x: float | None) -> str:
            return "" if x is None else format_number(x, 6)

        shown = self.worst(len(self.checks) if len(self.checks) <= 50 else 50)
        rows = [
            [str(k), c.label, f(c.value), f(c.analytic), f(c.numeric), f(c.error), c.status]
            for k, c in shown
        ]
        caption = f"gradcheck of {self.output}: {self._summary()}"
        if len(shown) < len(self.checks):
            caption += f" (the {len(shown)} most worth a look)"
        d = f"∂²{self.output}" if self.order == 2 else f"∂{self.output}/∂input"
        headers = ["point", "input", "value", d, "numeric", "error", "status"]
        return table(headers, rows, caption)

    def __repr__(self) -> str:
        return f"<GradcheckReport of {self.output}: {self._summary()}>"


def check_gradients(
    graph: Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    points: int = 0,
    seed: int = 0,
    low: float = RANGE[0],
    high: float = RANGE[1],
    order: int = 1,
    eps: float = EPS,
    rtol: float = RTOL,
    atol: float = ATOL,
    on_point: Callable[[], object] | None = None,
) -> GradcheckReport:
    """``cgraph gradcheck``: :func:`gradcheck` at the point ``bindings`` give (where an
    evaluation error is raised as usual), or at ``points`` random points (:func:`random_points`
    over [low, high] for each input not bound; there an undefined point is skipped).
    ``on_point()`` is called after each point (a progress bar)."""
    from ..data.bindings import check_bindings
    from ..run.program import differentiated

    out = None if of is None else resolve_name(graph, of)
    static = graph.control is not None  # each point runs its own graph: its branches, steps
    if points:
        fixed = check_bindings(graph, bindings)
        places = random_points(graph, points, seed, fixed, low, high)
    else:
        ran, values, _, _ = differentiated(graph, bindings, of)
        places = [{n: values[i] for n, i in ran.inputs.items()}]
    checks: list[tuple[int, Check]] = []
    batched = (
        _batched(graph, places, of, eps, rtol, atol)
        if points and order == 1 and not static
        else None
    )
    for k, place in enumerate(places, 1):
        found = batched[k - 1] if batched is not None else None
        if found is None:
            ran = graph
            if static:
                from ..run.control import run_graph

                ran = run_graph(graph, place)
            found = gradcheck(
                ran,
                place,
                of=None if of is None else resolve_name(ran, of),
                eps=eps,
                rtol=rtol,
                atol=atol,
                order=order,
                strict=not points,
            )
        checks += [(k, c) for c in found]
        if on_point is not None:
            on_point()
    name = graph.display_name(graph.output if out is None else out)
    return GradcheckReport(name, order, len(places), checks)
