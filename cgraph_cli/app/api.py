"""Whole-program calls: each takes a program (text or a parsed :class:`~cgraph_cli.core.ir.Graph`)
and its bindings, and returns a result object that prints readably and, in Jupyter, shows
itself (a diagram, a table, a worked example).

>>> evaluate("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3}).named
{'x': 1.0, 'y': 3.0, 'z': -3.0, 'p': 4.0, 'g': -12.0}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.ir import Graph, resolve_name
from ..parse import parse
from ..run.engine import compiled_forward, compiled_grad
from .results import Evaluation, Explanation, Gradients

if TYPE_CHECKING:
    from ..passes.derivatives import Program
    from ..passes.jvp_graph import TangentProgram
    from .gradcheck import GradcheckReport


def _parsed(program: str | Graph) -> Graph:
    return program if isinstance(program, Graph) else parse(program)


def _graph(program: str | Graph, bindings: Mapping[str, object] | None = None) -> Graph:
    """The program's graph; for a program with conditionals or loops, the graph that runs for
    ``bindings`` (:func:`cgraph_cli.run.control.run_graph`): all computing is done on it."""
    graph = program if isinstance(program, Graph) else parse(program)
    if graph.control is not None:
        from ..run.control import run_graph

        graph = run_graph(graph, bindings)
    return graph


def evaluate(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    of: str | None = None,
) -> Evaluation:
    """Run the forward pass. ``of`` names the output (default: the last statement).
    ``bindings`` give each input a number or an array (nested lists or NumPy); inputs with
    defaults in the program may be left out.

    >>> evaluate("h = W @ x", {"W": [[1, 2], [3, 4]], "x": [1, 1]}).value
    array([3., 7.])
    """
    parsed = _parsed(program)
    named = compiled_forward(parsed, bindings, of)
    if named is not None:  # its compiled module, or loops run as a scan
        kept = _kept(parsed, bindings)  # as they are now
        run = lambda: _evaluated(parsed, kept, of)  # noqa: E731 - asked for later
        if "" in named:  # a scan's: the graph that runs is made when asked for
            return Evaluation.from_named(None, None, named, run)
        out = parsed.output if of is None else resolve_name(parsed, of)
        return Evaluation.from_named(parsed, out, named, run)
    return Evaluation(*_evaluated(parsed, _held(parsed, bindings), of))


def grad(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    of: str | None = None,
) -> Gradients:
    """Run the forward and reverse passes: the value of ``of`` and its gradients.

    >>> grad("y = x * x", {"x": 3}).gradients
    {'x': 6.0}
    """
    parsed = _parsed(program)
    fast = compiled_grad(parsed, bindings, of)
    if fast is not None:  # its compiled module, or loops run as a scan
        value, gradients = fast
        kept = _kept(parsed, bindings)  # as they are now
        later = lambda: _differentiated(parsed, kept, of)  # noqa: E731 - asked for later
        if parsed.control is not None:  # a scan's: the graph that runs is made when asked for
            return Gradients.compiled(None, None, value, gradients, later)
        out = parsed.output if of is None else resolve_name(parsed, of)
        return Gradients.compiled(parsed, out, value, gradients, later)
    graph, values, adjoints, out = _differentiated(parsed, _held(parsed, bindings), of)
    return Gradients(graph, values, out, adjoints)


def _held(parsed: Graph, bindings: Mapping[str, object] | None):
    """``bindings`` as the interpreter's result may hold them: an array copied, as a compiled
    result's are (a result never shares the caller's array: ``y = x`` is not ``x`` itself,
    and changing ``x`` afterwards changes no value the result holds); numbers, text and
    lists as they are (the interpreter makes its own arrays of them)."""
    if not bindings or not any(hasattr(v, "__array__") for v in bindings.values()):
        return bindings
    return _kept(parsed, bindings)


#: :func:`cgraph_cli.app.snapshot.snapshot`, imported at the first call that needs it: a
#: program of numbers never does, and an import statement run at every call costs 2 µs of a
#: compiled call's 38 (the MLP of width 16).
_snapshot: Any = None


def _kept(parsed: Graph, bindings: Mapping[str, object] | None) -> dict:
    """A copy of ``bindings`` as they are now (its large buffers those of an earlier call's
    copy that nothing holds any more)."""
    global _snapshot
    if _snapshot is None:
        from .snapshot import snapshot as _snapshot
    return _snapshot(bindings, parsed.memo.setdefault("kept", []))


def _evaluated(parsed: Graph, bindings: Mapping[str, object] | None, of: str | None):
    from ..run.program import evaluated

    return evaluated(parsed, bindings, of)


def _differentiated(parsed: Graph, bindings: Mapping[str, object] | None, of: str | None):
    from ..run.program import differentiated

    return differentiated(parsed, bindings, of)


def explain(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    derivative: bool = False,
    depth: int | None = None,
    expand: Sequence[str] = (),
) -> Explanation:
    """The forward and backward passes spelled out, as ``cgraph explain`` prints them;
    ``derivative`` adds the derivative program, statement by statement (``--program``).
    ``depth``: the levels explained step by step, the program's own the first (1: each call
    of a function one step, its gradient the call's vector-Jacobian product); ``expand``:
    calls explained inside, by name (``layer``) or call (``layer#2``).

    >>> e = explain("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    >>> e
    <Explanation of g = -12: 2 forward steps; x̄ = -3, ȳ = -3, z̄ = 4>
    >>> print(e)
    Forward pass
      1. t1 = x + y = 1 + 3 = 4
      2. g = t1 * z = 4 * (-3) = -12
    Backward pass
      1. Start at the output: ḡ = 1   (a bar: the gradient over every path; ∂t/∂x: one op's local partial)
      2. Through *: ∂g/∂t1 = z = -3, ∂g/∂z = t1 = 4
      3. Through +: ∂t1/∂x = 1, ∂t1/∂y = 1
      4. Chain rule: x̄ = t̅1̅ · ∂t1/∂x = (-3) · 1 = -3
                     ȳ = t̅1̅ · ∂t1/∂y = (-3) · 1 = -3
    Gradients: x̄ = -3, ȳ = -3, z̄ = 4
    """
    from .explain import derivative_steps
    from .explain import explain as steps_of

    result = grad(program, bindings, of=of)
    steps = steps_of(result.graph, result.values, result.adjoints, result.output)
    if depth is not None or expand:
        from .explain_calls import fold_steps
        from .folds import check_expand

        check_expand(result.graph, expand)
        fold_steps(result.graph, result.values, result.adjoints, steps, depth or 1, expand)
    run = result.graph.control
    if run is not None and hasattr(run, "notes"):
        steps["control"] = list(run.notes)
        _leave_out_middle_steps(steps, result.graph)
    if derivative:
        steps["program"] = derivative_steps(result.graph, bindings, of)
    return Explanation(steps, result)


def _leave_out_middle_steps(steps: dict, graph: Graph) -> None:
    """A long loop is explained by its first and last steps; the control-flow notes say which
    steps are left out."""
    from ..core.ir_control import middle_steps
    from ..core.names import node_names

    hidden, note = middle_steps(graph)
    if not hidden:
        return
    names = node_names(graph)
    gone = {names[i] for i in hidden}
    steps["forward"] = [s for s in steps["forward"] if s["node"] not in gone]
    back = steps["backward"]
    back["through"] = [s for s in back["through"] if s["node"] not in gone]
    back["sums"] = [s for s in back["sums"] if s["node"] not in gone]
    steps["control"].append(note)


# --- checks ---------------------------------------------------------------------------------------
def gradcheck(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    points: int = 0,
    seed: int = 0,
    low: float = -2.0,
    high: float = 2.0,
    order: int = 1,
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-7,
) -> GradcheckReport:
    """Every reverse-mode gradient against a central finite difference, as ``cgraph
    gradcheck``: at the point ``bindings`` give, or at ``points`` random points (each input
    not bound drawn from [low, high]). With ``order`` 2, every second derivative against the
    difference of the gradient. Kinks and undefined points are skipped, not failed.

    >>> r = gradcheck("y = x^3 - sin(x)", points=20, seed=1)
    >>> r
    <GradcheckReport of y: 20 passed, 0 failed, 0 skipped at 20 points>
    >>> r.ok
    True
    """
    from .gradcheck import check_gradients

    return check_gradients(
        _graph(program),
        bindings,
        of=of,
        points=points,
        seed=seed,
        low=low,
        high=high,
        order=order,
        eps=eps,
        rtol=rtol,
        atol=atol,
    )


# --- derivatives ----------------------------------------------------------------------------------
def derivative_program(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    order: int = 1,
) -> Program:
    """The program extended with its derivatives, as ``cgraph diff`` writes it: a statement
    per derivative up to ``order`` (1 to 4) with respect to ``wrt`` (default: every input).
    ``.graph`` is an ordinary Graph (:func:`to_source` prints it, :func:`evaluate` runs it);
    ``.derivatives`` maps each tuple of names to its statement. Bindings give tensor inputs
    their shapes.

    >>> from cgraph_cli import to_source
    >>> print(to_source(derivative_program("f = x * y + sin(x)").graph), end="")
    f = x * y + sin(x)
    df_dx = cos(x) + y
    df_dy = x
    >>> p = derivative_program("f = x^3", order=3)
    >>> print(to_source(p.graph), end="")
    f = x ^ 3
    df_dx = 3 * x ^ 2
    d2f_dx2 = 6 * x
    d3f_dx3 = 6
    >>> p.derivatives[("x", "x")]
    'd2f_dx2'
    """
    from ..passes.derivatives import derivative_program as build

    return build(_graph(program, bindings), bindings, of, wrt, order)


def tangent_program(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
) -> TangentProgram:
    """Forward mode as a program, as ``cgraph diff --mode forward`` writes it: after the
    program, the tangent of each value the output reads. With one input in ``wrt`` that is a
    number, the tangents are derivatives with respect to it (``dp_dx``); else each input of
    ``wrt`` (default: every input) gets a tangent input ``x_dot``, bound when it runs.
    ``.tangents`` maps each name to the name holding its tangent.

    >>> from cgraph_cli import to_source
    >>> t = tangent_program("p = sin(x); y = p * x", wrt=["x"])
    >>> print(to_source(t.graph), end="")
    p = sin(x)
    y = p * x
    dp_dx = cos(x)
    dy_dx = x * dp_dx + p
    >>> evaluate(t.graph, {"x": 0.0}, of=t.tangents["y"]).value
    0.0
    """
    from ..passes.derivatives import tangent_program as build

    return build(_graph(program, bindings), bindings, of, wrt)


def hessian(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    vector: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The matrix of second derivatives of the output, as ``cgraph hessian`` reports it
    (``"hessian"``, rows and columns named by ``"labels"``; tensor inputs element by
    element); with ``vector`` (a direction per input), the Hessian-vector product
    (``"hvp"``) alone.

    >>> h = hessian("f = x^2 * y", {"x": 1, "y": 2})
    >>> h["labels"], h["hessian"]
    (['x', 'y'], [[4.0, 2.0], [2.0, 0.0]])
    >>> hessian("f = x^2 * y", {"x": 1, "y": 2}, vector={"x": 1, "y": 0})["hvp"]
    {'x': 4.0, 'y': 2.0}
    """
    from ..run.higher import hessian as build

    return build(_graph(program, bindings), bindings, of, wrt, vector)


def jacobian(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    mode: str = "auto",
) -> dict[str, Any]:
    """The Jacobian of the output (any shape) with respect to each input, as ``cgraph
    jacobian`` reports it: ``"jacobian"`` holds, per input, an array of shape
    ``output.shape + input.shape``. ``mode``: "reverse" (a pass per output element),
    "forward" (a pass per input element) or "auto", whichever needs fewer.

    >>> j = jacobian("y = x * x", {"x": [1, 2]})
    >>> j["jacobian"]["x"], j["mode"]
    (array([[2., 0.],
           [0., 4.]]), 'reverse')
    """
    from ..run.higher import jacobian as build

    return build(_graph(program, bindings), bindings, of, wrt, mode)
