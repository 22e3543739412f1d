"""Whole-program calls: evaluate a program, or differentiate it, in one step.

>>> evaluate("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3}).named
{'x': 1.0, 'y': 3.0, 'z': -3.0, 'p': 4.0, 'g': -12.0}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .ir import Graph, resolve_name, wrt_node
from .parse import parse
from .passes.evaluate import forward
from .passes.vjp import vjp


@dataclass(frozen=True)
class Evaluation:
    """A forward pass: ``values[i]`` is node ``i``'s value."""

    graph: Graph
    values: list[float]
    output: int  # the node asked for

    @property
    def output_name(self) -> str:
        return self.graph.display_name(self.output)

    @property
    def value(self) -> float:
        return self.values[self.output]

    @property
    def named(self) -> dict[str, float]:
        """Every input and named node (its newest assignment) with its value."""
        return {name: self.values[node] for name, node in self.graph.named_nodes().items()}


@dataclass(frozen=True)
class Gradients(Evaluation):
    """A forward and a reverse pass: ``adjoints[i]`` is ∂output/∂node ``i``."""

    adjoints: list[float]

    @property
    def gradients(self) -> dict[str, float]:
        """∂output/∂input for every input, in order of first use."""
        return {name: self.adjoints[node] for name, node in self.graph.inputs.items()}

    def wrt(self, name: str) -> float:
        """∂output/∂``name`` for an input or any named node."""
        return self.adjoints[wrt_node(self.graph, name)]


def _graph(program: str | Graph) -> Graph:
    return program if isinstance(program, Graph) else parse(program)


def evaluate(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    of: str | None = None,
) -> Evaluation:
    """Run the forward pass. ``of`` names the output (default: the last statement)."""
    graph = _graph(program)
    out = graph.output if of is None else resolve_name(graph, of)
    return Evaluation(graph, forward(graph, bindings), out)


def grad(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    of: str | None = None,
) -> Gradients:
    """Run the forward and reverse passes: the value of ``of`` and its gradients.

    >>> grad("y = x * x", {"x": 3}).gradients
    {'x': 6.0}
    """
    e = evaluate(program, bindings, of)
    return Gradients(e.graph, e.values, e.output, vjp(e.graph, e.values, of=e.output))
