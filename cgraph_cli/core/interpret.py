"""Interpretations of the op vocabulary: what ``e.mul(g, e.cos(x))`` in a rule of the op table
means. One rule, many meanings:

- :data:`ARRAYS` computes on NumPy arrays (and floats);
- :class:`Source` writes Python source over floats, from which the fast scalar loops are
  compiled (:func:`value_function`, :func:`partials_function`);
- :class:`cgraph_cli.passes.recorder.Recorder` builds graph nodes: derivative programs;
- :mod:`cgraph_cli.render.formulas` prints formulas and LaTeX.

Each interpretation defines :meth:`Interpretation.apply` (an op applied to arguments and
static params) and :meth:`Interpretation.shape`; the op methods (``e.sin``, ``e.sum``...) are
generated from the table. Numbers written in a rule (``1.0``) are Python floats.

>>> partials_function(OPS["tanh"], (True,))(0.5, 0.25)
(0.9375,)
>>> Source().sub(1.0, Source().pow("o", 2.0))
'(1.0 - (o * o))'
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import runtime
from .ops import OPS, OpSpec

_NAMESPACE: dict = {"math": math, "rt": runtime, "min": min, "max": max}
# Value rules that are a Python operator: the operator itself is the fastest function.
_OPERATORS = {
    "{0} + {1}": operator.add,
    "{0} - {1}": operator.sub,
    "{0} * {1}": operator.mul,
    "{0} / {1}": operator.truediv,
    "-{0}": operator.neg,
    "{0} @ {1}": operator.matmul,
}


class Interpretation:
    """Speaks the op vocabulary; subclasses say what an op applied to arguments means."""

    def apply(self, op: OpSpec, args: Sequence[Any], params: tuple):
        raise NotImplementedError

    def shape(self, x) -> tuple[int, ...]:
        raise NotImplementedError

    def unless_zero(self, g, c, partial):
        """``c`` (the gradient ``g`` times a local ``partial``), or 0 where ``g`` is 0, however
        the partial is there (infinite, undefined): as the reverse pass skips a node whose
        gradient is 0."""
        return self.where(self.eq(g, 0.0), 0.0, c)

    def add_tangents(self, a, b):
        """``a + b`` where ``None`` stands for zero."""
        return b if a is None else a if b is None else self.add(a, b)

    if TYPE_CHECKING:  # the op methods (e.add, e.sin...), set from the op table below

        def __getattr__(self, name: str) -> Callable[..., Any]: ...


def _method(op: OpSpec):
    n = op.arity

    def method(self, *args):
        return self.apply(op, args[:n], args[n:])

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = f"The op {op.name} ({op.example})."
    return method


for _op in OPS.values():
    if _op.arity:
        setattr(Interpretation, _op.name, _method(_op))


# --- values ------------------------------------------------------------------------------------
_value_cache: dict[tuple[str, str, int], object] = {}


def value_function(op: OpSpec, kind: str = "py", nparams: int = 0):
    """The op's value rule as a function of ``(*args, *params)``: ``kind`` "py" on floats,
    "np" on NumPy arrays. Compiled once from the table's expression; an expression that is a
    Python operator or just a call of a function (``math.sin({0})``) gives that function
    itself, with no wrapper around it.

    >>> value_function(OPS["sin"]), value_function(OPS["add"])
    (<built-in function sin>, <built-in function add>)
    """
    key = (op.name, kind, nparams)
    fn = _value_cache.get(key)
    if fn is None:
        fn = _value_cache[key] = _compile_value(op, kind, nparams)
    return fn


def _compile_value(op: OpSpec, kind: str, nparams: int):
    template = op.py if kind == "py" else op.np or op.py
    if template is None:
        raise TypeError(f"{op.name} has no {'float' if kind == 'py' else 'array'} rule")
    if template in _OPERATORS:
        return _OPERATORS[template]
    names = [f"a{k}" for k in range(op.arity)] + [f"p{k}" for k in range(len(op.params))]
    body = template.format(*names)
    direct = body.split("(", 1)[0]
    if body == f"{direct}({', '.join(names)})" and "." in direct and nparams == len(op.params):
        return _eval(direct)  # math.sin itself
    args = names[: op.arity] + [f"{p}=None" for p in names[op.arity :]]
    return _eval(f"lambda {', '.join(args)}: {body}")


def _eval(text: str):
    if "np." in text and "np" not in _NAMESPACE:
        import numpy

        _NAMESPACE["np"] = numpy
    return eval(text, _NAMESPACE)  # noqa: S307 - text built from the op table only


# --- NumPy ----------------------------------------------------------------------------------------
class Arrays(Interpretation):
    """Values: floats and NumPy float64 arrays. A result with no axes is a float."""

    def apply(self, op: OpSpec, args: Sequence[Any], params: tuple):
        # NumPy's float64, not Python's float: 1/0 is inf (within np.errstate), not an error
        xs = [_f64(a) if a.__class__ is float else a for a in args]
        fn = _np_functions.get((op, len(params)))
        if fn is None:
            fn = _np_functions[(op, len(params))] = value_function(op, "np", len(params))
        out = fn(*xs, *params)
        if out.__class__ is not float and not getattr(out, "shape", True):
            return float(out)
        return out

    def shape(self, x) -> tuple[int, ...]:
        return tuple(getattr(x, "shape", ()))


_np_functions: dict = {}  # (op, number of params) -> its array rule: the hot path's cache


def _f64(x: float):
    import numpy

    return numpy.float64(x)


ARRAYS = Arrays()


# --- Python source on floats --------------------------------------------------------------------
class Source(Interpretation):
    """Python expressions over float variables: the fast scalar loops are compiled from what
    the rules write under this interpretation. Every expression is parenthesized."""

    def apply(self, op: OpSpec, args: Sequence[Any], params: tuple) -> str:
        texts = [a if isinstance(a, str) else repr(float(a)) for a in args]
        if op.name == "pow" and texts[1] == "2.0":
            return f"({texts[0]} * {texts[0]})"  # o * o: faster, and exact
        assert op.py is not None, f"{op.name} has no float rule"  # only such ops compile
        return f"({op.py.format(*texts, *map(repr, params))})"

    def shape(self, x) -> tuple[int, ...]:
        return ()


_partials_cache: dict[tuple[str, tuple[bool, ...]], object] = {}


def partials_function(op: OpSpec, needs: tuple[bool, ...]):
    """The op's local partials on floats, as one compiled function ``(*args, out) -> tuple``
    computing only the partials ``needs`` asks for (0.0 for the others): pow's ∂/∂y, a log,
    is not computed for ``x ^ 2``, and cannot fail there for a negative x."""
    key = (op.name, needs)
    fn = _partials_cache.get(key)
    if fn is None:
        fn = _partials_cache[key] = _eval(partials_source(op, needs))
    return fn


def partials_source(op: OpSpec, needs: tuple[bool, ...] | None = None) -> str:
    """The source of :func:`partials_function`.

    >>> partials_source(OPS["mul"])
    'lambda a0, a1, o: (a1, a0,)'
    """
    names = [f"a{k}" for k in range(op.arity)]
    needs = needs or (True,) * op.arity
    src = Source()
    parts = []
    for rule, need in zip(op.partials or (), needs):
        part = rule(src, *names, "o") if need and rule is not None else 0.0
        parts.append(part if isinstance(part, str) else repr(float(part)))
    return f"lambda {', '.join(names)}, o: ({', '.join(parts)},)"


def partial_function(op: OpSpec, k: int):
    """∂op/∂(argument ``k``) on floats, for the reverse loop when only that argument needs a
    gradient: a float when it does not depend on the values (add: 1.0), else one compiled
    function of ``(argument k, the other arguments in order, out) -> float``.

    >>> partial_function(OPS["tanh"], 0)(0.5, 0.25), partial_function(OPS["sub"], 1)
    (0.9375, -1.0)
    >>> partial_function(OPS["div"], 1)(2.0, 1.0, 0.5)
    -0.25
    """
    key = (op.name, k)
    found = _partial_cache.get(key)
    if found is None:
        names = [f"a{j}" for j in range(op.arity)]
        rule = (op.partials or ())[k]
        assert rule is not None, f"{op.name} has no partial for argument {k}"
        part = rule(Source(), *names, "o")
        if isinstance(part, str):
            order = [names[k], *names[:k], *names[k + 1 :], "o"]
            found = _eval(f"lambda {', '.join(order)}: {part}")
        else:
            found = float(part)
        _partial_cache[key] = found
    return found


_partial_cache: dict[tuple[str, int], object] = {}


def constant_partials(op: OpSpec) -> tuple[float, ...] | None:
    """The partials when they do not depend on the values (add: (1, 1)), else None: the fast
    reverse loop then reads them instead of calling a function."""
    if op.partials is None or any(rule is None for rule in op.partials):
        return None
    names = [f"a{k}" for k in range(op.arity)]
    parts = [rule(Source(), *names, "o") for rule in op.partials if rule is not None]
    return None if any(isinstance(p, str) for p in parts) else tuple(map(float, parts))


def swaps_arguments(op: OpSpec) -> bool:
    """Whether each partial of a two-argument op is the other argument (mul)."""
    if op.arity != 2 or op.partials is None or None in op.partials:
        return False
    rules = [rule for rule in op.partials if rule is not None]
    return tuple(rule(Source(), "a0", "a1", "o") for rule in rules) == ("a1", "a0")


def commutative(op: OpSpec) -> bool:
    """Whether swapping an op's two arguments never changes its value (decided by its value
    rule on two asymmetric points): ``x - y`` and ``x @ y`` are not; their operand order is
    drawn.

    >>> from cgraph_cli.core.ops import OPS
    >>> commutative(OPS["add"]), commutative(OPS["sub"]), commutative(OPS["pow"])
    (True, False, False)
    """
    found = _commutative.get(op.name)
    if found is None:
        found = op.arity < 2  # matmul and the like (not elementwise): their order matters
        if op.arity == 2 and not op.required and op.elementwise:
            import numpy

            with numpy.errstate(all="ignore"):
                found = all(
                    ARRAYS.apply(op, (a, b), ()) == ARRAYS.apply(op, (b, a), ())
                    for a, b in ((0.3, 1.7), (2.5, -0.75))  # two asymmetric points
                )
        _commutative[op.name] = found
    return found


_commutative: dict[str, bool] = {}  # op name -> commutative(op): diagrams ask once per node
