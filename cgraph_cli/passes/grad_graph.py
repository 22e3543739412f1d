"""Differentiation as a graph transform: a program -> the program that also computes its
derivatives, as Theano, TensorFlow 1 and JAX's ``grad`` of a jaxpr do.

The forward program is copied as written; then the one reverse loop
(:func:`cgraph_cli.core.autodiff.reverse`) or the one forward-mode loop
(:func:`cgraph_cli.core.autodiff.push`) runs over it with the op table's rules interpreted by a
:class:`~cgraph_cli.passes.recorder.Recorder`, which builds nodes instead of computing numbers. Nothing numeric happens but
constant folding, and the builder simplifies as it goes, so the result reads as a textbook
writes it. The result is an ordinary Graph: it prints with ``to_source``, reads back,
evaluates, passes ``validate``, and can be differentiated again (Hessians).

>>> from cgraph_cli import parse, to_source
>>> d = grad_graph(parse("p = x + y; g = p * z"))
>>> print(to_source(d.graph), end="")
p = x + y
g = p * z
dg_dp = z
dg_dz = p
dg_dx = dg_dp
dg_dy = dg_dx
>>> d.gradients
{'z': 'dg_dz', 'x': 'dg_dx', 'y': 'dg_dy'}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast

from ..core.errors import EvalError
from ..core.ir import MASK, Graph, GraphBuilder, relayout, wrt_node
from ..core.ops import CONST, INPUT
from ..core.walks import fresh
from .recorder import Recorder
from .smart import rewrite


@dataclass(frozen=True)
class Derived:
    """A derivative program: the graph; the output differentiated; for each name
    differentiated against, the name of the statement holding its derivative."""

    graph: Graph
    output: str
    gradients: dict[str, str]


def input_shapes(graph: Graph, bindings=None) -> dict[str, tuple[int, ...]]:
    """Each input's shape: from ``bindings`` (values), else its default, else a number's."""
    bindings = bindings or {}
    return {
        name: tuple(getattr(bindings.get(name, graph.defaults.get(name)), "shape", ()))
        for name in graph.inputs
    }


def _copy(graph: Graph, shapes: dict[str, tuple[int, ...]]) -> GraphBuilder:
    """A builder holding the forward program node for node (the ids stay the same), with
    every node's shape, ready to extend with simplified, hash-consed nodes."""
    from ..core.arrays import ShapeMismatch
    from .shapes import ShapeError

    b = GraphBuilder(graph.source, simplify=rewrite, shapes=shapes)
    g = b.graph
    for i, op in enumerate(graph.ops):
        start, end = graph.starts[i], graph.ends[i]
        if op is INPUT:
            b.input(cast(str, graph.labels[i]), start, end)
        elif op is CONST:
            node = b.add(CONST, (), start, end)
            g.consts[node] = graph.consts[i]
            cast(list, b.shapes)[node] = tuple(getattr(graph.consts[i], "shape", ()))
        else:
            try:
                b.add(op, graph.args[i], start, end, graph.params.get(i, ()))
            except ShapeMismatch as e:
                raise graph.error(ShapeError, str(e), i) from None
            b.remember(i)
        g.labels[i] = graph.labels[i]
    g.defaults.update(graph.defaults)
    return b


def _reaching(graph: Graph, out: int) -> tuple[list[bool], list[bool]]:
    """Which nodes lead to ``out``, and which depend on an input through ops with
    derivatives (only those have derivatives; as the interpreter's reverse pass decides)."""
    from ..core.walks import ancestors, depends_on_input

    return ancestors(graph, out), depends_on_input(graph)


def grad_graph(
    graph: Graph,
    output: int | None = None,
    wrt: list[str] | None = None,
    shapes: dict[str, tuple[int, ...]] | None = None,
    names_for: dict[str, str] | None = None,
    intermediates: bool = True,
    mask: tuple = (),
) -> Derived:
    """The forward program and, for each name in ``wrt`` (default: every input), a statement
    ``d<out>_d<name>`` holding ∂output/∂name (``names_for`` names them otherwise, by input;
    a name the program uses already gets a numeric suffix). ``shapes`` (each input's, by name;
    default: as :func:`input_shapes` finds them) specialise the rules that need one (@ of
    vectors or matrices, sums over broadcast axes). The output must be a number. With
    ``intermediates`` (the default), the derivative with respect to each named value is a
    statement too (``dg_dp``; with ``wrt`` given, each one the asked derivatives read);
    without, only those read more than once are. The name of an
    input means the input, though the program assigns it again (``x = x * 3``). ``mask``:
    each contribution whose partial may not be finite is 0 where its adjoint is, in a
    ``where`` with these params (see :class:`~.recorder.Recorder`; for compiled modules)."""
    from ..core.autodiff import reverse
    from ..core.names import node_names

    out = graph.output if output is None else output
    every = wrt is None  # else only the gradients the asked derivatives read are statements
    wrt = list(graph.inputs) if wrt is None else wrt
    targets = {wrt_node(graph, w): w for w in wrt}
    b = _copy(graph, input_shapes(graph) if shapes is None else shapes)
    _require_number(graph, b, out)
    reach, depends = _reaching(graph, out)

    marks: list[tuple[int, int]] = []  # (first node made for node i's rules, i)

    def at(i: int) -> None:  # a derivative node points back to where it came from
        b.span = (graph.starts[i], graph.ends[i])
        marks.append((len(b.graph.ops), i))

    adj = reverse(
        graph,
        list(range(len(graph.ops))),
        Recorder(b, mask, len(graph.ops)),
        out,
        1.0,
        [d and r for d, r in zip(depends, reach)],
        checked=bool(mask),
        before=at,
        wrap=_wrapper(graph, b, out),
    )
    names = [_identifier(n) for n in node_names(graph)]
    out_name = graph.output_label if graph.ops[out] is INPUT and out == graph.output else names[out]
    out_name = out_name if out_name.isidentifier() else "out"
    final = _final_order(graph, out, reach)
    if graph.ops[out] is INPUT:  # the output is an input itself: its derivative is 1
        final.insert(0, out)
    derived, gradients = _assemble(
        graph,
        b,
        adj,
        final,
        targets,
        f"d{out_name}",
        names,
        names_for or {},
        intermediates,
        every,
    )
    if graph.groups:
        derived.groups, of = derived_groups(graph, derived, marks)
        derived.memo["group_of"] = of
        derived.memo["headings"] = {  # a comment over each statement: the call it is in
            name: derived.groups[of[node]].label if of[node] >= 0 else ""
            for _, name, node, _ in derived.statements()
        }
    return Derived(derived, graph.display_name(out), gradients)


def _wrapper(graph: Graph, b: GraphBuilder, out: int):
    """For a graph with compiled conditionals (marked selects), what node i passes back
    wrapped in the guard under which ``out`` reads node i (where it does not, the graph that
    runs has no path from node i to ``out``: :func:`~cgraph_cli.passes.guards.wrap`); else
    None."""
    from .guards import ALWAYS, has_selects, needs, wrap

    if not has_selects(graph):
        return None
    guards = needs(graph, [out])

    def wrapped(i: int, c):
        guard = guards[i]
        if guard is ALWAYS:
            return c
        return wrap(b, graph, guard, c if c.__class__ is int else b.const(float(c)))

    return wrapped


def derived_groups(graph: Graph, derived: Graph, marks: list[tuple[int, int]]):
    """The groups of a derivative program: a forward node keeps its call's group; a node the
    backward pass made for node i is in the group ``∂ layer#2`` of i's call. Returns the
    groups (the forward ones, then one ``∂`` group each) and each node's group."""
    from bisect import bisect_right

    from ..core.groups import group_of

    n, k = len(graph.ops), len(graph.groups)
    forward = group_of(graph)
    starts = [m[0] for m in marks]
    grads = [
        grp._replace(
            kind="grad",
            name=f"∂ {grp.name}",
            parent=grp.parent + k if grp.parent >= 0 else -1,
            label=f"∂ {grp.label}",
            lo=0,
            hi=0,
        )
        for grp in graph.groups
    ]
    groups = [grp._replace(lo=0, hi=0) for grp in graph.groups] + grads
    copied = derived.memo.pop("copied_from", {})
    out = []
    for j in range(len(derived.ops)):
        i = copied.get(j, -1)
        if 0 <= i < n:
            out.append(forward[i])
        elif i >= n and marks:
            origin = marks[bisect_right(starts, i) - 1][1]
            g = forward[origin]
            out.append(g + k if g >= 0 else -1)
        else:
            out.append(-1)
    return groups, out


class NotANumber(EvalError):
    """The output is a tensor: it has no gradient (a derivative program needs a number)."""


def _require_number(graph: Graph, b: GraphBuilder, out: int) -> None:
    shape = b.shape_of(out)
    if shape:
        name = graph.display_name(out)
        raise graph.error(
            NotANumber,
            f"{name} is a {tuple(shape)} tensor; a derivative program needs a single number",
            out,
            hints=[f"reduce it, as a loss does: sum({name}) or mean({name})"],
        )


def _final_order(graph: Graph, out: int, reach: list[bool]) -> list[int]:
    """The nodes in the order the reverse pass finishes their gradients: a node is done when
    its last reader (the one with the smallest id) has been processed."""
    last_reader = {}
    for i in range(out, -1, -1):
        if reach[i]:
            for a in graph.args[i]:
                last_reader[a] = i
    order, seen = [], set()
    for i in range(out, -1, -1):
        if reach[i]:
            for a in graph.args[i]:
                if last_reader[a] == i and a not in seen:
                    seen.add(a)
                    order.append(a)
    return order


def _assemble(graph, b, adj, final, targets, prefix, names, names_for, intermediates, every):
    """The derivative program's graph and the names of its gradients: the forward statements
    (with a name for each unnamed forward value the derivative reads), then one per derivative,
    in the order the reverse pass finishes them."""
    n = len(graph.ops)
    taken = set(graph.named_nodes()) | set(graph.inputs) | set(filter(None, graph.labels))
    backward = []
    gradients: dict[str, str] = {}
    against: dict[str, int] = {}  # each derivative statement -> the forward node it is taken wrt
    named: set[int] = set()  # nodes a derivative statement already names
    wanted: set[int] = set()  # unnamed forward nodes that must get a name
    # Derivatives asked for by name: the gradients they do not read are left out.
    roots = [adj[a] for a in targets if adj[a].__class__ is int]
    live = _needed(b.graph, roots)
    needed = None if every else live
    # Reads by nodes no gradient reads do not count: a gradient read twice only there (by a
    # mask whose contribution folds away) would be a statement no result reads, computed
    # outside the branch whose values it reads.
    uses = _uses(b.graph, n, live)
    for a in final:
        node = adj[a]
        if node is None:
            if a in targets:
                node = b.const(0.0)
            else:
                continue
        if node.__class__ is not int:
            node = b.const(float(node))
        if graph.ops[a] is INPUT and a not in targets:
            continue  # an input not asked for
        if needed is not None and a not in targets and node not in needed:
            continue  # a gradient no derivative asked for reads
        labelled = (intermediates and graph.labels[a] is not None) or a in targets
        if not labelled and (
            node < n or node in named or uses.get(node, 0) < 2 or b.graph.ops[node] is CONST
        ):
            continue  # an unnamed value's gradient, used once: written inline
        if not labelled:
            wanted.add(a)
        name = _fresh(names_for.get(targets.get(a), f"{prefix}_d{names[a]}"), taken)
        if b.graph.ops[node] is CONST:
            node = _own_constant(b, node)
        backward.append(("=", name, node))
        against[name] = a
        named.add(node)
        if a in targets:
            gradients[targets[a]] = name
    for a, w in targets.items():  # a name the output does not depend on: 0
        if w not in gradients:
            name = _fresh(names_for.get(w, f"{prefix}_d{names[a]}"), taken)
            against[name] = a
            backward.append(("=", name, _own_constant(b, b.const(0.0))))
            gradients[w] = name
    forward = forward_statements(graph, b, backward, wanted, taken, names)
    statements = forward + backward
    _, last, node = statements[-1]
    derived = relayout(b.graph, statements, node, last)
    # What the statements mean, for views that draw or explain them (not in the program text).
    derived.memo["derivatives"] = {"forward": len(forward), "against": against}
    return derived, gradients


def forward_statements(
    graph: Graph, b: GraphBuilder, later: list, wanted: set[int], taken: set[str], names: list
) -> list[tuple[str, str, int]]:
    """The forward program's statements, for a derived program whose ``later`` statements
    and new nodes (in ``b``) read forward values: each unnamed one they read (and each in
    ``wanted``) gets a name first, and an input whose name the program assigns again gets a
    second name, so that both stay reachable."""
    n = len(graph.ops)
    wanted = wanted | {x for i in range(n, len(b.graph.ops)) for x in b.graph.args[i] if x < n}
    wanted |= {node for _, _, node in later if node < n}
    forward = []
    shadowed = [i for name, i in graph.inputs.items() if name in graph.names and i in wanted]
    for i in shadowed:  # an input whose name the program reassigns: keep it reachable
        forward.append(("=", _fresh(f"{graph.labels[i]}_input", taken), i))
    done = 0
    for kind, name, node, end in graph.statements():
        for t in range(done, end):  # unnamed values the derivative reads get a name first
            if t in wanted and graph.labels[t] is None and graph.ops[t].arity and t != node:
                forward.append(("=", _fresh(names[t], taken), t))
        if kind == "bare":  # more statements follow: the expression needs a name
            kind, name = "=", _fresh("out", taken)
        forward.append((kind, name, node))
        done = end
    return forward


def _identifier(name: str) -> str:
    """A node's name as a program can write it: the subscript of a name assigned again
    (``c₂``) becomes ``c_2``."""
    return _SUBSCRIPT.sub(lambda m: "_" + m.group().translate(_DIGITS), name)


_SUBSCRIPT = re.compile("[₀-₉]+")
_DIGITS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


def _own_constant(b: GraphBuilder, node: int) -> int:
    """A copy of constant ``node`` for a statement to name: the builder shares one node per
    number, and a name given to it would stand for that number everywhere (``x - dy_dh``
    for ``x - 1``)."""
    value = b.graph.consts[node]
    own = b.add(CONST, (), b.graph.starts[node], b.graph.ends[node])
    b.graph.consts[own] = value
    if b.shapes is not None:
        b.shapes[own] = b.shapes[node]
    return own


def _needed(graph: Graph, roots: list[int]) -> set[int]:
    """The nodes ``roots`` are computed from (themselves included)."""
    seen, stack = set(), list(roots)
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(graph.args[i])
    return seen


def _uses(graph: Graph, start: int, among: set[int]) -> dict[int, int]:
    """How many nodes from ``start`` on, ``among`` those, read each node; a NumPy mask's
    adjoint not counted (the fast lines read it once: :data:`~cgraph_cli.core.ir.MASK`)."""
    uses: dict[int, int] = {}
    for i in range(start, len(graph.ops)):
        if i not in among:
            continue
        args = graph.args[i]
        for a in args[1:] if graph.params.get(i) == MASK else args:
            uses[a] = uses.get(a, 0) + 1
    return uses


def _fresh(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... if the program uses it already."""
    return fresh(name, taken, first=2)
