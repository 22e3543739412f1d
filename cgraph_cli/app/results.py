"""The results of the whole-program calls (:mod:`cgraph_cli.app.api`): read-only objects
that print readably and, in Jupyter, show themselves (a diagram, a worked example). A
compiled call's result holds the module's answers and asks the interpreter for every node's
values only when they are read.

>>> listing([short_value(2 / 3), short_value(1e-9)])
'0.666667, 1e-9'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.arrays import Value
from ..core.ir import Graph, wrt_node

if TYPE_CHECKING:
    from .diagrams import Diagram

#: Entries a repr lists before it says how many more there are.
SHOWN = 6


class _Result:
    """A read-only result (plain slotted classes: importing dataclasses costs every command
    its start-up)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a {type(self).__name__} is read-only: cannot set {name}")


class Evaluation(_Result):
    """A forward pass: ``values[i]`` is node ``i``'s value (a float, or a NumPy array for a
    tensor).

    >>> from cgraph_cli import evaluate
    >>> evaluate("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    <Evaluation g = -12>
    """

    __slots__ = ("_graph", "_values", "_output", "_named", "_run")
    _graph: Graph | None
    _values: list[Value] | None
    _output: int | None
    # From the compiled module: every named value; every node's values from ``_run()`` (the
    # interpreter's passes: ``(graph that ran, values, ..., output)``) when first asked for.
    # A program with loops run as a scan knows its output's value alone: ``{"": value}``,
    # and its graph that runs too comes from ``_run()``.
    _named: dict[str, Value] | None
    _run: Any

    def __init__(self, graph: Graph, values: list[Value], output: int) -> None:
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_output", output)
        object.__setattr__(self, "_named", None)
        object.__setattr__(self, "_run", None)

    @classmethod
    def from_named(
        cls, graph: Graph | None, output: int | None, named: dict[str, Value], run: Any
    ) -> Evaluation:
        """The result of a compiled forward pass: the named values now, every node's from
        ``run()`` when first asked for (the graph too, when None: a scan's)."""
        result = cls.__new__(cls)
        for name, v in (("_graph", graph), ("_values", None), ("_output", output)):
            object.__setattr__(result, name, v)
        object.__setattr__(result, "_named", named)
        object.__setattr__(result, "_run", run)
        return result

    def _passes(self) -> None:
        ran = self._run()
        object.__setattr__(self, "_graph", ran[0])
        object.__setattr__(self, "_values", ran[1])
        object.__setattr__(self, "_output", ran[-1])

    @property
    def graph(self) -> Graph:
        """The graph that ran (one branch of each conditional, the loops unrolled)."""
        if self._graph is None:
            self._passes()
        assert self._graph is not None
        return self._graph

    @property
    def output(self) -> int:
        """The node asked for (``of``, else the output), in :attr:`graph`."""
        if self._output is None:
            self._passes()
        assert self._output is not None
        return self._output

    @property
    def values(self) -> list[Value]:
        """Every node's value, by node id."""
        if self._values is None:
            self._passes()
        assert self._values is not None
        return self._values

    @property
    def output_name(self) -> str:
        """The output's name (its statement's, or its source text)."""
        return self.graph.display_name(self.output)

    @property
    def value(self) -> Value:
        """The output's value."""
        if self._named is not None:
            if "" in self._named:  # a scan's
                return self._named[""]
            return self._named[self.graph.display_name(self.output)]
        return self.values[self.output]

    @property
    def named(self) -> dict[str, Value]:
        """Every input and named node (its newest assignment) with its value."""
        if self._named is not None and "" not in self._named:
            return dict(self._named)
        return {name: self.values[node] for name, node in self.graph.named_nodes().items()}

    def diagram(self, **options: Any) -> Diagram:
        """This result drawn, each node with its value (and its gradient, for
        :class:`Gradients`). ``options`` as :func:`cgraph_cli.diagram` takes them: theme,
        rankdir, precision, values, grads, backward, force.

        >>> from cgraph_cli import evaluate
        >>> print(evaluate("y = 2 * x", {"x": 3}).diagram().dot.splitlines()[0])
        digraph cgraph {
        """
        from .diagrams import drawing

        return drawing(self.graph, self.values, None, self.output, **options)

    def _repr_svg_(self) -> str | None:
        """Jupyter shows the result as its diagram; None (the repr instead) when it cannot be
        drawn: too large, or no renderer."""
        from ..core.errors import CgraphError

        try:
            return self.diagram()._repr_svg_()
        except CgraphError:
            return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.output_name} = {short_value(self.value)}>"


class Gradients(Evaluation):
    """A forward and a reverse pass: ``adjoints[i]`` is ∂output/∂node ``i``.

    >>> from cgraph_cli import grad
    >>> grad("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    <Gradients g = -12; ∂g/∂x = -3, ∂g/∂y = -3, ∂g/∂z = 4>
    """

    __slots__ = ("_adjoints", "_known", "_later")
    _adjoints: list[Value] | None
    # From the compiled module: the output's value and the inputs' gradients, every node's
    # values and adjoints worked out by the interpreter (``_later``) when first asked for.
    _known: tuple[Value, dict[str, Value]] | None
    _later: Any

    def __init__(
        self, graph: Graph, values: list[Value], output: int, adjoints: list[Value]
    ) -> None:
        super().__init__(graph, values, output)
        object.__setattr__(self, "_adjoints", adjoints)
        object.__setattr__(self, "_known", None)
        object.__setattr__(self, "_later", None)

    @classmethod
    def compiled(
        cls,
        graph: Graph | None,
        output: int | None,
        value: Value,
        gradients: dict[str, Value],
        later: Any,
    ) -> Gradients:
        """The result of a compiled run: ``value`` and ``gradients`` now, every node's values
        and adjoints from ``later()`` (the interpreter's passes) when first asked for (the
        graph that ran too, when None: a scan's)."""
        result = cls.__new__(cls)  # (on the path of every compiled call: no loop)
        _graph, _values, _output, _named, _run, _adjoints, _known, _later = _SLOTS
        _graph(result, graph)
        _values(result, None)
        _output(result, output)
        _named(result, None)
        _run(result, later)
        _adjoints(result, None)
        _known(result, (value, gradients))
        _later(result, later)
        return result

    def _passes(self) -> None:
        ran, values, adjoints, out = self._later()
        object.__setattr__(self, "_graph", ran)
        object.__setattr__(self, "_output", out)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_adjoints", adjoints)

    @property
    def adjoints(self) -> list[Value]:
        """∂output/∂node for every node, by node id."""
        if self._adjoints is None:
            self._passes()
        assert self._adjoints is not None
        return self._adjoints

    @property
    def value(self) -> Value:
        """The output's value."""
        return self._known[0] if self._known is not None else self.values[self.output]

    @property
    def gradients(self) -> dict[str, Value]:
        """∂output/∂input for every input, in order of first use."""
        if self._known is not None:
            return dict(self._known[1])
        return {name: self.adjoints[node] for name, node in self.graph.inputs.items()}

    def wrt(self, name: str) -> Value:
        """∂output/∂``name`` for an input or any named node."""
        return self.adjoints[wrt_node(self.graph, name)]

    def diagram(self, **options: Any) -> Diagram:
        from .diagrams import drawing

        return drawing(self.graph, self.values, self.adjoints, self.output, **options)

    diagram.__doc__ = Evaluation.diagram.__doc__

    def __repr__(self) -> str:
        out = self.output_name
        parts = [f"∂{out}/∂{n} = {short_value(g)}" for n, g in self.gradients.items()]
        return f"<Gradients {out} = {short_value(self.value)}; {listing(parts)}>"


# The slots a compiled result sets, by their descriptors (read-only results: no __setattr__).
_SLOTS = [
    getattr(Gradients, n).__set__
    for n in ("_graph", "_values", "_output", "_named", "_run", "_adjoints", "_known", "_later")
]


def short_value(value: Value) -> str:
    """A value for a repr: a number to 6 digits; a small tensor in full, a larger one by its
    shape.

    >>> import numpy as np
    >>> short_value(2 / 3), short_value(np.ones(2)), short_value(np.ones((3, 4)))
    ('0.666667', '[1, 1]', '(3, 4) tensor')
    """
    from ..core.numfmt import format_number, is_tensor, nested, shape_text

    if not is_tensor(value):
        return format_number(float(value), 6)
    return nested(value, 4) if value.size <= SHOWN else f"{shape_text(value)} tensor"


def listing(parts: list[str], shown: int = SHOWN) -> str:
    """The first ``shown`` parts, then how many more there are.

    >>> listing(["a", "b", "c"], 2)
    'a, b, … (1 more)'
    """
    more = len(parts) - shown
    return ", ".join(parts[:shown] + ([f"… ({more} more)"] if more > 0 else []))


class Explanation(_Result):
    """Both passes spelled out step by step: ``steps`` is the data (the JSON of ``cgraph
    explain``), :meth:`text` and :meth:`markdown` write it for people; ``str()`` is the text.
    Jupyter shows the Markdown, with LaTeX formulas.

    >>> from cgraph_cli import explain
    >>> e = explain("y = x * x", {"x": 3})
    >>> e.steps["gradients"], e.result.value
    ({'x': 6.0}, 9.0)
    >>> print(e.markdown().splitlines()[0])
    ## Forward pass
    """

    __slots__ = ("steps", "result")
    steps: dict[str, Any]
    result: Gradients  # the values and gradients explained

    def __init__(self, steps: dict[str, Any], result: Gradients) -> None:
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "result", result)

    def text(self, precision: int | None = 4) -> str:
        """The worked example as plain text, numbers to ``precision`` digits."""
        from ..render.prose import to_text

        return to_text(self.steps, precision)

    def markdown(self, math: str = "plain", precision: int | None = 4) -> str:
        """As Markdown; ``math`` "latex" writes the formulas as ``$LaTeX$``."""
        from ..render.prose import to_markdown

        return to_markdown(self.steps, math, precision)

    def _repr_markdown_(self) -> str:
        return self.markdown("latex")

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        r, count = self.result, len(self.steps["forward"])
        from ..render.notation import adjoint

        gradients = [f"{adjoint(n)} = {short_value(g)}" for n, g in r.gradients.items()]
        return (
            f"<Explanation of {r.output_name} = {short_value(r.value)}: {count} forward "
            f"step{'s' * (count != 1)}; {listing(gradients)}>"
        )
