"""What the server knows of one document: its parse (and the error the CLI would print), its
names, and, once evaluated with the program's ``input`` defaults, every statement's value and
gradient. Nothing here knows LSP: offsets are cgraph's, problems are cgraph's errors.

>>> a = Analysis("input x = 1, y = 3, z = -3\\np = x + y\\ng = p * z")
>>> a.problems, [(s.name, hint) for s, hint in a.evaluate().hints()]
([], [('x', '∂g/∂x = -3'), ('y', '∂g/∂y = -3'), ('z', '∂g/∂z = 4'), ('p', '= 4   ∂g/∂p = -3'), ('g', '= -12   ∂g/∂g = 1')])
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ...core.errors import CgraphError, EvalError, Span
from ...core.ir import Graph
from ...core.ops import CALL
from ...parse import parse
from ...parse.lookalike import meant
from .bindfile import BindingsFile, bindings_file, load
from .index import Index, Site, index

SHOWN = 6  # a tensor with at most this many elements is shown whole
_DID_YOU_MEAN = re.compile(r"did you mean '([^']+)'\?")


class Problem(NamedTuple):
    """A diagnostic: the error's message and ``help:`` lines as the CLI prints them, where it
    is, and the edit that fixes it (title, new text) when there is one."""

    message: str
    span: Span
    hints: tuple[str, ...]
    fix: tuple[str, str] | None


def problem(error: CgraphError, text: str) -> Problem:
    """The :class:`Problem` of a cgraph error in ``text`` (at its start when it has no place).

    >>> problem(CgraphError("unknown function 'sinn'", Span(4, 8), hints=["did you mean 'sin'?"]),
    ...         "y = sinn(x)").fix
    ("did you mean 'sin'", 'sin')
    """
    span = error.span or Span(0, 0)
    fix = None
    replaced = text[span.start : span.end]
    wanted = meant(replaced) if len(replaced) == 1 else None
    if wanted is not None:
        fix = (
            f"replace '{replaced}' with '{wanted}'" if wanted else f"delete '{replaced}'",
            wanted,
        )
    for hint in error.hints:
        found = _DID_YOU_MEAN.fullmatch(hint)
        if found and fix is None:
            fix = (f"did you mean '{found[1]}'", found[1])
    return Problem(error.message, span, error.hints, fix)


def summary(value: Any) -> str:
    """A value in a hint, as cgraph shows numbers to people (4 significant digits, a number
    or a tensor's element alike): a small tensor whole, a larger one by its shape and first
    elements.

    >>> import numpy as np
    >>> summary(2 / 3), summary(np.arange(3.0)), summary(np.ones((3, 4)))
    ('0.6667', '[0, 1, 2]', '(3, 4) [1, 1, 1, …]')
    """
    from ...core.numfmt import DIGITS, format_number, is_tensor, nested, shape_text

    if not is_tensor(value):
        return format_number(float(value), DIGITS)
    if value.size <= SHOWN:
        return nested(value, DIGITS)
    first = ", ".join(format_number(float(v), DIGITS) for v in value.flat[:3])
    return f"{shape_text(value)} [{first}, …]"


class Analysis:
    """One version of a document: ``graph`` (None when it does not parse), ``problems`` (the
    parse error's), ``index`` (its names), ``bindings`` (its bindings file, if it has one:
    ``path``, the document's file, finds it)."""

    def __init__(self, text: str, filename: str = "<expr>", path: str | None = None) -> None:
        self.text = text
        self.index: Index = index(text)
        self.graph: Graph | None = None
        self.problems: list[Problem] = []
        self.bindings: BindingsFile | None = bindings_file(text, path)
        try:
            self.graph = parse(text, filename)
        except CgraphError as error:
            self.problems.append(problem(error, text))

    def evaluable(self) -> bool:
        """Whether the program parsed and has a bindings file or a default for every input."""
        graph = self.graph
        if graph is None:
            return False
        return self.bindings is not None or all(name in graph.defaults for name in graph.inputs)

    def evaluate(self) -> Values:
        """Values and gradients with the inputs' defaults (slow: the server runs it in a
        thread); an evaluation error is a problem of the result."""
        return Values(self)


class Values:
    """A document's values and gradients by definition site, and the evaluation's problem."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.output = ""
        self.values: dict[Site, Any] = {}
        self.gradients: dict[Site, Any] = {}
        self.calls: dict[int, Any] = {}  # an op's call, by where its name starts: its value
        self.problems: list[Problem] = []
        self.bound: dict[str, Any] = {}  # the bindings file's values
        self.nodes: dict[Site | int, int] = {}  # a statement's node; an op call's, by start
        self._result: Any = None  # a straight-line program's passes, for explaining them
        self._rules: dict[int, str] | None = None
        graph = analysis.graph
        if graph is None or not analysis.evaluable():
            return
        self.output = graph.output_label
        try:
            if analysis.bindings is not None:
                self.bound = load(analysis.bindings)
            if all(name in graph.defaults or name in self.bound for name in graph.inputs):
                self._run(graph)
        except CgraphError as error:
            if error.span is None and analysis.bindings is not None:  # the file's values
                error.span = analysis.bindings.span
                error.hints += (f"the values come from {analysis.bindings.path}",)
            self.problems.append(problem(error, analysis.text))

    def _run(self, graph: Graph) -> None:
        from .. import api

        try:
            result: Any = api.grad(graph, self.bound)
            adjoints = result.adjoints if graph.control is None else None
        except EvalError as error:
            if "gradients need a single number" not in error.message:
                raise
            result, adjoints = api.evaluate(graph, self.bound), None
        sites = self._sites(graph)
        if adjoints is not None:  # straight-line: each statement's own node
            self._result = result
            for site, node in sites:
                self.values[site] = result.values[node]
                self.gradients[site] = adjoints[node]
                self.nodes[site] = node
            for i, op in enumerate(graph.ops):
                if op.function and op.style == CALL:
                    self.calls[graph.starts[i]] = result.values[i]
                    self.nodes[graph.starts[i]] = i
            for grp in graph.groups:  # a def's call (not one inside a def): what it returns
                if grp.kind == "call" and grp.parent < 0:
                    self.calls[grp.start] = result.values[grp.output]
            return
        named = result.named
        gradients = isinstance(result, api.Gradients)
        if gradients:  # the graph that ran: its nodes, for the local derivatives
            self._result = result
            ran = result.graph.named_nodes()
        for site, _node in sites:
            last = _last_version(named, site.name)
            if last is not None:
                self.values[site] = named[last]
                if gradients:
                    self.gradients[site] = result.wrt(last)
                    if last in ran:
                        self.nodes[site] = ran[last]

    def _sites(self, graph: Graph) -> list[tuple[Site, int]]:
        """Each top-level statement's definition site and node, matched by name in order."""
        waiting: dict[str, list[Site]] = {}
        for site in self.analysis.index.defs:
            if site.kind in ("input", "value"):
                waiting.setdefault(site.name, []).append(site)
        found = []
        for kind, name, node, _count in graph.statements():
            queue = waiting.get(name)
            if kind != "bare" and queue:
                found.append((queue.pop(0), node))
        return found

    def hints(self) -> list[tuple[Site, str]]:
        """``(site, text)`` for each statement: ``= value   ∂out/∂name = gradient`` (an input's
        value is in its text, unless a bindings file gives it: only its gradient)."""
        shown = []
        for site, value in self.values.items():
            typed = site.kind == "input" and site.name not in self.bound
            parts = [] if typed else [f"= {summary(value)}"]
            if site in self.gradients:
                parts.append(f"∂{self.output}/∂{site.name} = {summary(self.gradients[site])}")
            if parts:
                shown.append((site, "   ".join(parts)))
        return shown

    def rule(self, at: Site | int) -> str | None:
        """The backward step through the node a statement (a site) or an op's call (where its
        name starts) made, as ``cgraph explain`` prints it: its local derivatives; None where
        there is none (an input, a tensor output); in a loop, its last step's.

        >>> a = Analysis("input x = 2, y = 3\\np = x * y\\nq = sin(p)")
        >>> v = a.evaluate()
        >>> v.rule(a.index.defs[2]), v.rule(a.index.at(33).start)
        ('Through *: ∂p/∂x = y = 3, ∂p/∂y = x = 2', 'Through sin: ∂q/∂p = cos(p) = 0.9602')
        """
        if self._rules is None:
            self._rules = self._explained()
        node = self.nodes.get(at)
        return None if node is None else self._rules.get(node)

    def explained(self) -> bool:
        """Whether :meth:`rule` answers at once (the program is explained, or has nothing to
        explain)."""
        return self._rules is not None or self._result is None

    def _explained(self) -> dict[int, str]:
        """Each backward step's text, by node (explaining the whole program once)."""
        from ...core.names import node_names
        from ...core.numfmt import DIGITS
        from ...render.prose import scalar_lines, tensor_lines
        from ..explain import explain

        result = self._result
        if result is None:
            return {}
        try:
            steps = explain(result.graph, result.values, result.adjoints, result.output)
        except CgraphError:
            return {}
        lines = (tensor_lines if steps["tensors"] else scalar_lines)(steps, DIGITS)[1]
        node = {name: i for i, name in enumerate(node_names(result.graph))}
        through = steps["backward"]["through"]
        return {node[step["node"]]: line for step, line in zip(through, lines[1:])}

    def of(self, site: Site | None) -> tuple[Any, Any] | None:
        """The value and gradient (or None) of a definition site, if known."""
        if site is None or site not in self.values:
            return None
        return self.values[site], self.gradients.get(site)


def _last_version(named: dict[str, Any], name: str) -> str | None:
    """The last value of ``name`` a loop made (``h_3``), or ``name`` itself."""
    versions = [k for k in named if k == name or re.fullmatch(re.escape(name) + r"_\d+", k)]
    return versions[-1] if versions else None
