"""What a compiled NumPy module knows of shapes when compiling: every node's shape, the
cheaper templates they allow, and how each function returns its values and gradients (a mixin
of :class:`~cgraph_cli.run.compile_emit._Emitter`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..core.ir import Graph
from ..core.ops import CONST, INPUT

Shape = tuple[int, ...] | None  # known when compiling, or None


class Shaped:
    """The emitter's shape-dependent methods (NumPy, with the inputs' shapes ``known``)."""

    known: dict | None
    vector: bool
    variables: dict[str, str]
    exact: set[str]
    returns: dict[str, dict[str, tuple[Shape, bool]]]
    _shaped_graph: Graph | None
    _sigs: list

    def shape_of(self, graph: Graph, i: int) -> Shape:
        """Node ``i``'s shape when known (NumPy, shapes given), else None."""
        from ..passes.rewrite import only_shape

        return None if self.known is None else only_shape(self.shapes(graph)[i])

    def result_shapes(self, graph: Graph, fn: str, nodes: Mapping[str, int]) -> None:
        """Record what ``fn`` returns (``nodes``, by the name it returns each under): each
        value's shape when known (never with rows of numbers: a value per row)."""
        from ..passes.rewrite import only_shape

        sigs = self.shapes(graph) if self.known is not None and not self.vector else None
        self.returns[fn] = {
            k: (
                None if sigs is None else only_shape(sigs[i]),
                graph.ops[i] is not INPUT and graph.ops[i] is not CONST,
            )
            for k, i in nodes.items()
        }

    def returned(self, fn: str, key: str, var: str) -> tuple[str, Shape]:
        """How NumPy code returns the value ``key`` of ``fn`` (in variable ``var``), and its
        shape when known: a number as a float, an array as it is (``_plain`` does either when
        the shape is not known; with rows of numbers, a value per row)."""
        if self.vector:
            return f"_plain({var}, rows)", None
        shape, operation = self.returns[fn][key]
        if shape is None:
            return f"_plain({var})", None
        return (f"float({var})" if operation and not shape else var), shape

    def gradient(self, key: str, var: str) -> tuple[str, Shape]:
        """How NumPy code returns the gradient with respect to input ``key`` (in variable
        ``var``): with the input's shape, and that shape when known."""
        assert self.known is not None
        if var in self.variables.values():  # an input itself (c's in sum(x * c)): a copy
            var = f"np.copy({var})"  # (the caller's arrays stay theirs)
        if key in self.exact:
            return var, self.known[key]
        x = self.variables[key]
        if self.vector:
            return f"_like({var}, {x}, rows)", None
        if self.known.get(key) == () and self.returns["grad"][key][0] == ():
            return self.returned("grad", key, var)
        return f"_like({var}, {x})", self.known.get(key)  # _like gives it the input's shape

    def exact_shapes(self, derived: Graph, gradients: Mapping[str, str]) -> set[str]:
        """The inputs whose gradient is known, when compiling, to be an array of the input's
        own shape (no reshaping to do when called with such inputs)."""
        if self.known is None:
            return set()
        from ..passes.rewrite import only_shape

        sigs = self.shapes(derived)
        return {
            w
            for w, h in gradients.items()
            if self.known.get(w) and only_shape(sigs[derived.names[h]]) == self.known[w]
        }

    def shapes(self, graph: Graph) -> list:
        """Every node's shape (see :mod:`.rewrite`), worked out once per graph."""
        from ..passes.rewrite import shapes

        if graph is not self._shaped_graph:
            self._shaped_graph, self._sigs = graph, shapes(graph, self.known)
        return self._sigs

    def specialised(self, graph: Graph, i: int, op, template: str) -> str:
        """A cheaper template where the argument's shape is known when compiling: a method
        of the array instead of a general helper (``sum_to`` over the axes it will sum,
        ``mean`` of a non-empty array, a transpose)."""
        from ..passes.rewrite import only_shape

        shape = only_shape(self.shapes(graph)[graph.args[i][0]]) if graph.args[i] else None
        if not shape:  # unknown, or a number (no array methods)
            return template
        params = graph.params.get(i, ())
        if op.name == "transpose" and not params:
            return "{0}.T"
        if op.name == "mean" and not params and all(shape):  # ndarray.mean, no wrapper
            return f"(np.add.reduce({{0}}, None) / {math.prod(shape)})"
        if op.name == "sum_to":
            target = tuple(params[0])
            if target == shape:
                return "{0}"
            lead = len(shape) - len(target)
            axes = tuple(range(lead)) + tuple(
                lead + k for k, n in enumerate(target) if n == 1 and shape[lead + k] != 1
            )
            summed = tuple(n for k, n in enumerate(shape) if k not in axes)
            text = f"np.add.reduce({{0}}, {axes!r})"  # ndarray.sum, without its wrapper
            return text if summed == target else f"np.reshape({text}, {target!r})"
        return template

    def row_shapes(self, graph: Graph) -> dict[str, tuple[int, ...]]:
        """One row's shape of each input: the known shape, else a number's."""
        return {n: tuple(self.known.get(n, ())) if self.known else () for n in graph.inputs}
