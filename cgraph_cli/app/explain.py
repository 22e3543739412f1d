"""The forward and backward passes as steps, plain data (the JSON of ``cgraph explain``), one
schema for numbers and tensors; :mod:`cgraph_cli.render.prose` writes them for people.

Every formula comes from the op table's rules, printed by :mod:`cgraph_cli.render.formulas`:
the local derivative of each elementwise op (``∂o/∂n = 1 - o²``) and the reverse rule of
every op applied to its gradient (``∂y/∂W = ∂y/∂t1 @ xᵀ``).

>>> from cgraph_cli import grad
>>> r = grad("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3})
>>> steps = explain(r.graph, r.values, r.adjoints)
>>> [(p["wrt"], p["local"], p["local_value"]) for p in steps["backward"]["through"][0]["partials"]]
[('p', 'z', -3.0), ('z', 'p', 4.0)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..core.arrays import np
from ..core.ir import Graph, resolve_name
from ..core.names import node_names
from ..core.ops import CONST, PREC_ATOM
from ..core.walks import ancestors
from ..parse.unparse import combine
from ..render.formulas import Expr, Formula, Latex
from ..render.notation import adjoint, adjoint_tex, positions
from ..render.notation import local as local_name
from ..render.notation import local_tex as local_name_tex
from ..run.evaluate import is_tensor_run, local_partials


def _shape(value) -> list[int]:
    return list(getattr(value, "shape", ()))


def explain(graph: Graph, values: Sequence, adjoints: Sequence, output: int | None = None) -> dict:
    """The steps of both passes, as data."""
    out = graph.output if output is None else output
    tensors = is_tensor_run(graph, list(values))
    names = node_names(graph)
    reach = ancestors(graph, out)
    ops = [i for i in range(out + 1) if graph.ops[i].arity]
    forward = [
        {
            "node": names[i],
            "op": graph.ops[i].name,
            "formula": _formula(graph, i, names),
            "formula_tex": _formula_tex(graph, i, names),
            "args": [names[a] for a in graph.args[i]],
            "arg_values": [values[a] for a in graph.args[i]],
            "arg_shapes": [_shape(values[a]) for a in graph.args[i]],
            "shape": _shape(values[i]),
            "value": values[i],
        }
        for i in ops
    ]
    shapes = {names[i]: tuple(_shape(values[i])) for i in range(len(graph.ops))}
    shapes.update({adjoint(names[i]): shapes[names[i]] for i in ops})
    through = []
    uses: dict[int, list[tuple[int, int]]] = {}  # node -> (reader, argument position)
    run = _Run(list(values), [op is not CONST for op in graph.ops], tensors)  # once, not per node
    for i in reversed(ops):
        if not reach[i]:
            continue
        parts = _partials(graph, run, adjoints, i, names, shapes)
        for k, a in enumerate(graph.args[i]):
            if graph.ops[a] is not CONST:
                uses.setdefault(a, []).append((i, k))
        if parts:  # a node of constants only passes no gradient back
            through.append(
                {
                    "node": names[i],
                    "op": graph.ops[i].name,
                    "formula": _formula(graph, i, names),
                    "formula_tex": _formula_tex(graph, i, names),
                    "partials": parts,
                }
            )
    for readers in uses.values():
        readers.sort()
    sums = _sums(graph, values, adjoints, out, names, uses, reach, tensors)
    return {
        "output": names[out],
        "tensors": tensors,
        "forward": forward,
        "backward": {
            "start": {"node": names[out], "gradient": 1.0},
            "through": through,
            "sums": sums,
        },
        "gradients": {name: adjoints[node] for name, node in graph.inputs.items()},
    }


def _args(graph: Graph, i: int, names: list[str]) -> list:
    """Node ``i``'s arguments for a rule: names, and numbers for constants (which fold)."""
    return [
        graph.consts[a]
        if graph.ops[a] is CONST and graph.consts[a].__class__ is float
        else names[a]
        for a in graph.args[i]
    ]


class _Run(NamedTuple):
    """What every node's step reads of the run: built once (per node it made explain
    quadratic in the program's length)."""

    values: list
    needs: list[bool]  # per node: not a constant
    tensors: bool


def _partials(graph, run: _Run, adjoints, i, names, shapes) -> list[dict]:
    from ..core.autodiff import pullback, rule_pullback
    from ..core.interpret import ARRAYS

    op, args, values = graph.ops[i], graph.args[i], run.values
    with np.errstate(all="ignore"):  # as the reverse pass computed them: checked
        pulled = pullback(ARRAYS, graph, values, i, adjoints[i], run.needs, checked=True)
    formula, latex = Formula(shapes), Latex(shapes)
    xs, out, params = _args(graph, i, names), names[i], graph.params.get(i, ())
    wanted = [graph.ops[a] is not CONST for a in args]
    gradient = adjoint(names[i])
    rules_f = rule_pullback(formula, op, xs, out, params, gradient, wanted, summed=False)
    tex_gradient = Expr(adjoint_tex(names[i]), PREC_ATOM, shapes.get(gradient, ()))
    rules_t = rule_pullback(latex, op, xs, out, params, tex_gradient, wanted, summed=False)
    numbers = None
    if op.vjp is None and not run.tensors:
        numbers = local_partials(graph, values, i)
    parts = []
    at = positions(list(args))
    for k, a in enumerate(args):
        if graph.ops[a] is CONST:
            continue
        local = local_tex = None
        if op.vjp is None and op.partials[k] is not None:
            local = formula.write(op.partials[k](formula, *xs, out))
            local_tex = latex.write(op.partials[k](latex, *xs, out))
        parts.append(
            {
                "wrt": names[a],
                "operand": at[k],
                "partial": local_name(names[i], names[a], at[k]),
                "partial_tex": local_name_tex(names[i], names[a], at[k]),
                "local": local,
                "local_tex": local_tex,
                "local_value": None if numbers is None else numbers[k],
                "rule": formula.write(rules_f[k]) if rules_f[k] is not None else "0",
                "rule_tex": latex.write(rules_t[k]) if rules_t[k] is not None else "0",
                "summed_axes": _summed_axes(graph, values, i, a),
                "shape": _shape(pulled[k]) if pulled[k] is not None else _shape(values[a]),
                "value": pulled[k] if pulled[k] is not None else 0.0,
            }
        )
    return parts


def _summed_axes(graph: Graph, values: Sequence, i: int, a: int) -> list[int]:
    """The axes of node ``i``'s shape that broadcasting added or stretched for argument ``a``
    (an elementwise op sums its gradient over them)."""
    if not graph.ops[i].elementwise:
        return []
    out, arg = np.shape(values[i]), np.shape(values[a])
    lead = len(out) - len(arg)
    return list(range(lead)) + [
        lead + k for k, n in enumerate(arg) if n == 1 and out[lead + k] != 1
    ]


def _sums(graph, values, adjoints, out, names, uses, reach, tensors) -> list[dict]:
    """The gradients that are sums over paths: for numbers, every node read by a node other
    than the output (the chain rule, term by term); for tensors, the nodes read twice or
    more."""
    if tensors:
        return [
            {
                "node": names[a],
                "terms": [
                    {"via": names[c], "upstream": None, "local": None, "partial": None}
                    for c, _ in via
                ],
                "gradient": adjoints[a],
            }
            for a, via in sorted(uses.items())
            if len(via) > 1
        ]
    local = {c: local_partials(graph, values, c) for c in {c for v in uses.values() for c, _ in v}}
    # Each node after every node that reads it (its gradient needs theirs): by the longest
    # path to the output, then in program order, so x comes before y when both feed p.
    depth = [0] * (out + 1)
    for i in range(out, -1, -1):
        if reach[i]:
            for a in graph.args[i]:
                depth[a] = max(depth[a], depth[i] + 1)
    order = sorted((a for a in uses if a != out), key=lambda a: (depth[a], a))
    chain = []
    for a in order:
        if uses[a] == [(out, uses[a][0][1])]:
            continue  # read once, by the output: its gradient is the local partial shown
        terms = [
            {
                "via": names[c],
                "upstream": adjoints[c],
                "local": local[c][k],
                "partial": local_name(names[c], names[a], positions(list(graph.args[c]))[k]),
            }
            for c, k in uses[a]
        ]
        chain.append({"node": names[a], "terms": terms, "gradient": adjoints[a]})
    return chain


def _formula(graph: Graph, i: int, names: list[str]) -> str:
    args = [(names[a], PREC_ATOM) for a in graph.args[i]]
    return combine(graph.ops[i], args, params=graph.params.get(i, ()))[0]


def _formula_tex(graph: Graph, i: int, names: list[str]) -> str:
    latex = Latex()
    return latex.write(
        latex.apply(graph.ops[i], list(names[a] for a in graph.args[i]), graph.params.get(i, ()))
    )


def reverse_rule(
    graph: Graph, i: int, k: int, gradient: str, names: list[str], shapes: dict | None = None
) -> str:
    """The rule that gives argument ``k`` of node ``i`` its gradient, as a formula over the
    node's gradient ``gradient``: ``t̅1̅ @ xᵀ``, ``t̅2̅·[t1 > 0]``."""
    from ..core.autodiff import rule_pullback

    formula = Formula(shapes)
    xs = _args(graph, i, names)
    wanted = [j == k for j in range(len(xs))]
    rules = rule_pullback(
        formula, graph.ops[i], xs, names[i], graph.params.get(i, ()), gradient, wanted, summed=False
    )
    return formula.write(rules[k]) if rules[k] is not None else "0"


def edge_labels(
    graph: Graph,
    values: Sequence | None,
    out: int,
    precision: int | None = 4,
    shown: Sequence[bool] | None = None,
) -> dict[tuple[int, int], str]:
    """The text of each edge of the backward pass a diagram draws (``(node, argument)`` ->
    text) for the nodes ``shown`` (default: those leading to ``out``): an elementwise op's
    local partial with its number at ``values`` (``∂p/∂x = 1``; an op reading one node twice
    names the operand by its place, ``∂t1/∂(operand 2)``); a tensor's, or an op with a reverse
    rule, that rule applied to the node's gradient, written with a bar (``t̅1̅ @ xᵀ``): the
    notation of :mod:`cgraph_cli.render.notation`.

    >>> from cgraph_cli import grad
    >>> r = grad("p = x + y; g = p * z", {"x": 1, "y": 3, "z": -3})
    >>> edge_labels(r.graph, r.values, r.output)[(4, 0)]
    '∂g/∂p = z = -3'
    >>> r = grad("g = x * x", {"x": 3})
    >>> sorted(edge_labels(r.graph, r.values, r.output).values())
    ['∂g/∂(operand 1) = x = 3', '∂g/∂(operand 2) = x = 3']
    """
    from ..core.numfmt import format_number, is_tensor

    names = node_names(graph)
    values = None if values is None else list(values)
    shown = ancestors(graph, out) if shown is None else shown
    labels: dict[tuple[int, int], str] = {}
    for i, (op, args) in enumerate(zip(graph.ops, graph.args)):
        if not shown[i] or not op.arity or not op.differentiable:
            continue
        tensors = values is not None and any(is_tensor(values[a]) for a in (*args, i))
        numbers = None
        at = positions(list(args))
        for k, a in enumerate(args):
            rule = op.partials[k] if op.partials is not None else None
            if graph.ops[a] is CONST or (op.vjp is None and rule is None):
                continue  # no gradient flows back along this edge (where's condition)
            if tensors or op.vjp is not None:
                shapes = None
                if values is not None:
                    shapes = {names[x]: tuple(getattr(values[x], "shape", ())) for x in (*args, i)}
                    shapes[adjoint(names[i])] = shapes[names[i]]
                labels[i, k] = reverse_rule(graph, i, k, adjoint(names[i]), names, shapes)
                continue
            formula_e = Formula()
            assert rule is not None, "an elementwise op's partial"
            formula = formula_e.write(rule(formula_e, *_args(graph, i, names), names[i]))
            text = f"{local_name(names[i], names[a], at[k])} = {formula}"
            if values is not None:
                numbers = numbers or local_partials(graph, values, i)
                number = format_number(numbers[k], precision)
                if number != formula:
                    text += f" = {number}"
            labels[i, k] = text
    return labels


def frame_order(graph: Graph, output: int | None = None) -> list[int]:
    """The nodes in the order the backward pass finalises their gradients: the output, then
    every node that leads to it, closest first (constants have none)."""
    out = graph.output if output is None else output
    reach = ancestors(graph, out)
    return [i for i in range(out, -1, -1) if reach[i] and graph.ops[i] is not CONST]


# --- the derivative program ------------------------------------------------------------------
def derivative_steps(graph: Graph, bindings=None, of: str | None = None) -> dict:
    """The derivative program beside the steps (``explain --program``): the program as
    ``cgraph diff`` prints it, and each derivative statement with the name it differentiates
    against (``wrt``), its formula in plain text and LaTeX, and its value at ``bindings``.

    >>> from cgraph_cli import parse
    >>> p = derivative_steps(parse("p = x + y; g = p * z"), {"x": 1, "y": 3, "z": -3})
    >>> [(s["name"], s["wrt"], s["formula"], s["value"]) for s in p["statements"]][:2]
    [('dg_dp', 'p', 'z', -3.0), ('dg_dz', 'z', 'p', 4.0)]
    """
    from ..parse.unparse import to_source
    from ..passes.derivatives import derivative_program
    from ..run.control import ran_graph

    program = derivative_program(ran_graph(graph, bindings), bindings, of)
    derived = program.graph
    values = program_values(derived, bindings)
    text = to_source(derived)
    # one line per statement: not the comments that head each call's derivative code
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    tex = statement_tex(derived)
    names = node_names(graph)
    first = first_derivative_statement(derived, graph)
    out = graph.output if of is None else resolve_name(graph, of)
    wrt = derivative_targets(derived, graph, out, program.gradients)
    statements = []
    for k, (_, name, node, _) in enumerate(derived.statements()):
        if k < first:
            continue
        target = wrt.get(name)
        statements.append(
            {
                "name": name,
                "wrt": None if target is None else names[target],
                "formula": lines[k].split(" = ", 1)[1],
                "formula_tex": tex[k],
                "value": values[node],
            }
        )
    return {"text": text, "statements": statements, "gradients": program.gradients}


def program_values(program: Graph, bindings=None) -> list:
    """Every node's value in a derivative program, for showing: ``nan`` (or ``inf``) where a
    rule is undefined, instead of the error the forward pass raises. The reverse pass skips
    a zero gradient, where the program multiplies it: ∂(sqrt(x)·w)/∂x at x = w = 0 is 0 for
    the reverse pass, 0·(0.5/0) here.

    >>> from cgraph_cli import parse
    >>> program_values(parse("y = w * (0.5 / x)"), {"w": 0, "x": 0})[-1]
    nan
    """
    from ..run.evaluate import apply_arrays, initial_values

    return apply_arrays(program, initial_values(program, bindings), undefined="nan")


def first_derivative_statement(derived: Graph, graph: Graph) -> int:
    """Where the derivative statements of ``derived`` (a derivative program of ``graph``, as
    :func:`~cgraph_cli.passes.grad_graph.grad_graph` made it) begin.

    >>> from cgraph_cli import parse
    >>> from cgraph_cli.passes.derivatives import derivative_program
    >>> g = parse("p = x + y; g = p * z")
    >>> first_derivative_statement(derivative_program(g).graph, g)
    2
    """
    return derived.memo["derivatives"]["forward"]


def derivative_targets(
    derived: Graph, graph: Graph, output: int, gradients: dict[str, str] | None = None
) -> dict[str, int | None]:
    """For each derivative statement of ``derived``, the node of ``graph`` it is the
    derivative with respect to (as grad_graph recorded it).

    >>> from cgraph_cli import parse
    >>> from cgraph_cli.passes.derivatives import derivative_program
    >>> g = parse("p = x + y; g = p * z")
    >>> derivative_targets(derivative_program(g).graph, g, g.output)
    {'dg_dp': 2, 'dg_dz': 3, 'dg_dx': 0, 'dg_dy': 1}
    """
    return dict(derived.memo["derivatives"]["against"])


def statement_tex(graph: Graph) -> list[str]:
    """Each statement's expression in LaTeX, naming what earlier statements named, as
    :func:`~cgraph_cli.parse.unparse.to_source` writes them in text.

    >>> from cgraph_cli import parse
    >>> statement_tex(parse("p = x / y; g = tanh(p) * w1"))
    ['\\\\frac{x}{y}', '\\\\tanh\\\\left(p\\\\right) \\\\cdot w_{1}']
    """
    from ..core.names import const_name
    from ..core.ops import INPUT

    latex = Latex()
    exprs: list = [None] * len(graph.ops)
    scope: dict[str, int] = {}
    names_of: dict[int, list[str]] = {}

    def ref(node: int, last: bool = False):
        given = names_of.get(node, ())
        for name in reversed(given) if last else given:
            if scope.get(name) == node:
                return name
        return exprs[node]

    out, done = [], 0
    for _, name, node, end in graph.statements():
        for i in range(done, end):
            op = graph.ops[i]
            label = graph.labels[i]
            if op is INPUT and label is not None:  # an input always has its name
                exprs[i] = label
                scope[label] = i
                names_of[i] = [label]
            elif op is CONST:
                value = graph.consts[i]
                is_number = value.__class__ is float
                exprs[i] = value if is_number else Expr(const_name(value), PREC_ATOM)
            else:
                args = [ref(a) for a in graph.args[i]]
                exprs[i] = latex.apply(op, args, graph.params.get(i, ()))
        out.append(latex.write(exprs[node] if node >= done else ref(node, last=True)))
        done = end
        scope[name] = node
        names_of.setdefault(node, []).append(name)
    return out
