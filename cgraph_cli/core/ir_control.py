"""The records the IR keeps for a program with conditionals and loops (``graph.control``).

A parsed program's :class:`Static` holds its structure, independent of the data: each loop's
body, bound and back edges, each conditional's condition. The graph that ran for given
bindings (:func:`cgraph_cli.run.control.run_graph`) holds a :class:`Run`: the :class:`Guard`
facts it depends on and the nodes of each loop step. The parser writes the first, the tracer
the second; every layer above reads them.
"""

from __future__ import annotations

from .errors import EvalError, Span, UsageError
from .ir import Graph

#: Loop steps listed one by one in explanations at most; longer loops are summarised.
SHOWN_STEPS = 6


class Loop:
    """A loop of the static graph: its variable, its bound as written, its header's span,
    the ids of its body's nodes (``lo`` to ``hi``) and its back edges ``(last node of a name in
    the body, the node it replaces at the next step, name)``. ``count``: the bound as the
    reader holds it and the node of the name it reads (None for a number), which give the
    number of steps for given bindings. ``aliased``: the body reads a value it carries under
    another name too (``h = x``, then ``h = h * x`` in the body): the static graph does not
    tell the two apart there."""

    __slots__ = (
        *("var", "bound", "start", "end", "lo", "hi", "back", "depth", "count", "aliased"),
        *("_before", "_reads"),
    )

    def __init__(
        self, var: str, bound: str, start: int, end: int, lo: int, depth: int, count=None
    ) -> None:
        self.var, self.bound, self.start, self.end = var, bound, start, end
        self.lo, self.hi, self.depth, self.count = lo, lo, depth, count
        self.back: list[tuple[int, int, str]] = []
        self.aliased = False
        self._before: dict[str, int] = {}
        self._reads: dict[int, set[str]] = {}  # node -> the names the body read it by

    @property
    def trips(self) -> str:
        """The number of steps as a label: ``× len(xs)``."""
        return f"× {self.bound}"


class Static:
    """The structure of a program with control flow (``graph.control`` of a parsed program):
    its loops and its conditionals (select node -> the condition's span)."""

    __slots__ = ("loops", "conds", "_open")

    def __init__(self) -> None:
        self.loops: list[Loop] = []
        self.conds: dict[int, tuple[int, int]] = {}
        self._open: list[Loop] = []

    def begin_loop(self, reader, var: str, bound, start: int, end: int, read=None) -> None:
        text = str(bound) if isinstance(bound, int) else reader.text[bound[3] : bound[4]]
        depth = len(self._open)
        loop = Loop(var, text, start, end, len(reader.b.graph.ops), depth, (bound, read))
        loop._before = dict(reader.scope)
        self.loops.append(loop)
        self._open.append(loop)

    def end_loop(self, reader) -> None:
        loop = self._open.pop()
        loop.hi = len(reader.b.graph.ops)
        inputs = reader.b.graph.inputs
        earlier: list[
            tuple[int, int, str]
        ] = []  # names set in the body to a value from before it: carried, or not
        for name, node in reader.scope.items():
            if name == loop.var:  # the loop gives it its values: not carried
                continue
            before = loop._before.get(name)
            if before is None and inputs.get(name, -1) >= loop.lo:
                before = inputs[name]  # an input first read in the body, then assigned
            if before is not None and before != node:
                (loop.back if node >= loop.lo else earlier).append((node, before, name))
        # `h = g` in the body reads what g carries (g's value before the loop stands for it
        # there): h is carried too, its next value g's at the start of the step (Fibonacci).
        carried = {before for _, before, _ in loop.back}
        while earlier:
            found = [edge for edge in earlier if edge[0] in carried]
            if not found:
                break
            loop.back.extend(found)
            carried.update(before for _, before, _ in found)
            earlier = [edge for edge in earlier if edge not in found]
        loop.aliased = any(
            loop._reads.get(before, {name}) != {name} for _, before, name in loop.back
        )
        loop._before, loop._reads = {}, {}

    def read(self, name: str, node: int) -> None:
        """The body of each open loop read ``node`` by ``name``."""
        for loop in self._open:
            loop._reads.setdefault(node, set()).add(name)


def which(holds: bool) -> str:
    """The branch a condition picks, in words."""
    return "the branch before `if`" if holds else "the `else` branch"


class Guard:
    """A fact the graph that ran depends on: a condition's truth, or a loop's number of steps.
    Other bindings that change it give another graph."""

    __slots__ = ("text", "value", "start", "end", "kind", "step", "detail", "branch")

    def __init__(
        self,
        text: str,
        value,
        start: int,
        end: int,
        kind: str,
        step: str,
        detail: str = "",
        branch: str = "",
    ) -> None:
        self.text, self.value, self.start, self.end = text, value, start, end
        self.kind = kind  # "if" or "loop"
        self.step = step  # the loop variables when it was met: "t = 2", or ""
        self.detail = detail  # the condition with its operands' values: 3 <= 1
        self.branch = branch  # the text of the branch that ran

    def sentence(self) -> str:
        """The guard as ``explain`` says it: which branch ran and why."""
        where = f" at {self.step}" if self.step else ""
        why = f" ({self.detail})" if self.detail and self.detail != self.text else ""
        return f"{self}{why}{where}, so {which(bool(self.value))} ran: {self.branch}"

    def rule(self) -> str:
        """What the guard says holds for any inputs that meet it, without their numbers (a
        live page's graph held for others): ``c is false, so the `else` branch runs: b``,
        ``n is 3, so the loop runs 3 steps``."""
        if self.kind == "loop":
            return f"{self.text} is {self.value}, so the loop runs {self.value} steps"
        holds = "true" if self.value else "false"
        return f"{self.text} is {holds}, so {which(bool(self.value))} runs: {self.branch}"

    def __str__(self) -> str:
        if self.kind == "loop":
            return f"{self.text} == {self.value}"
        return f"{self.text} was {'true' if self.value else 'false'}"

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "guard": self.text,
            "value": self.value,
            "step": self.step or None,
            "text": str(self),
        }


class Run:
    """What the graph that ran depends on (``graph.control`` of :func:`run_graph`'s result):
    its guards; for each name assigned in a loop, its node at each step; which of those names
    carry a value from one step to the next (an RNN's ``h``); and the static graph."""

    __slots__ = ("guards", "steps", "carried", "static", "notes")

    def __init__(self, guards, steps, carried, static, notes) -> None:
        self.notes: list[str] = notes  # what ran, as sentences: branches and loops, in order
        self.guards: list[Guard] = guards
        self.steps: dict[str, list[int | None]] = steps  # [step 0 (or None), step 1, ...]
        self.carried: list[str] = carried
        self.static: Graph = static


def middle_steps(graph: Graph, keep: int = SHOWN_STEPS // 2) -> tuple[set[int], str]:
    """For an explanation of a long loop: the nodes of its middle steps (all but the first and
    last ``keep``) and a sentence saying they are left out; nothing for short loops. The steps
    are those of the name assigned in loops most often (the outermost loop's)."""
    run = graph.control
    if not isinstance(run, Run) or not run.steps:
        return set(), ""
    name = max(run.steps, key=lambda n: len(run.steps[n]))
    nodes = [n for n in run.steps[name][1:] if n is not None]
    if len(nodes) <= 2 * keep:
        return set(), ""
    first, last = nodes[keep - 1], nodes[-keep - 1]  # the middle: after step keep, to n - keep
    hidden = set(range(first + 1, last + 1))
    shown = f"steps {keep + 1} to {len(nodes) - keep} of {len(nodes)}"
    return hidden, f"{shown} (of {name}) are left out below: the same statements, other numbers"


def tensor_condition(text: str, shape: tuple, span: Span, source) -> EvalError:
    """The error for a condition (``text`` at ``span``) that is a tensor of ``shape``: `a if
    c else b` takes one branch for one number (the interpreter's and the compiler's)."""
    return EvalError(
        f"the condition {text} is a {tuple(shape)} tensor; `a if c else b` needs a number",
        span,
        source,
        hints=["to choose element by element, write where(c, a, b) (both sides run)"],
    )


def refuse(graph: Graph, what: str, loops: bool = False) -> None:
    """Refuse ``what`` (a command's work) on a program with conditionals or loops (``loops``:
    with loops; it takes if/else), saying so."""
    if isinstance(graph.control, Static) and (graph.control.loops or not loops):
        static = graph.control
        places = [] if loops else [(lo, hi) for lo, hi in static.conds.values()]
        places += [(loop.start, loop.end) for loop in static.loops]
        first = min(places, default=None)  # the first condition or loop, for the caret
        kinds = "loops" if loops else "if/else or loops"
        raise UsageError(
            f"{what} does not take programs with {kinds} yet",
            Span(*first) if first is not None else None,
            graph.source,
            hints=[
                "eval, grad, explain, check, gradcheck, diff, hessian, jvp and jacobian run "
                "them, on the graph that runs for the bindings"
            ],
        )
