"""Graph -> a standalone Python module: the forward pass and the reverse pass (the derivative
program, optimized) as straight-line code, one line per node, named after the program's
names, each with a comment pointing back to its source line.

The module imports only ``math`` (``target="python"``, programs of numbers) or ``numpy``
(``target="numpy"``); the few helpers an op's rule calls (a stable sigmoid...) are copied in
from :mod:`cgraph_cli.core.runtime`. Running it needs no cgraph. It checks what the interpreter
checks: a domain error, or a result that is not finite, raises ``DomainError`` naming the
program's node and its line.

The code is built from the op table's value rules and names made here; nothing the user
typed becomes code except names that are valid Python identifiers (and not keywords), and
numbers written as Python literals.

>>> from cgraph_cli import parse
>>> namespace = {}
>>> exec(compile_module(parse("p = x + y; g = p * z")), namespace)
>>> namespace["forward"](x=1, y=3, z=-3)["g"], namespace["grad"](x=1, y=3, z=-3)
(-12.0, (-12.0, {'x': -3.0, 'y': -3.0, 'z': 4.0}))
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.errors import UsageError
from ..core.ir import IF, MASK, Graph, resolve_name
from ..core.walks import fresh
from ..passes.grad_graph import NotANumber
from ..passes.guards import check_conditions, has_selects, marked
from .batch import elementwise, uncovered
from .compile_emit import _HELPER, _Emitter
from .compile_names import _identifier, input_variables
from .compile_scalar import fuse_forward, reverse_lines, reverse_plan
from .compile_text import module_text

__all__ = ["TARGETS", "check_target", "compile_module", "input_variables"]

TARGETS = ("python", "numpy", "js")  # js: run/compile_js.py


def check_target(target: str) -> None:
    """Refuse a target that is not one of :data:`TARGETS`."""
    if target not in TARGETS:
        raise UsageError(f"unknown target '{target}'", hints=["targets: " + ", ".join(TARGETS)])


def compile_module(
    graph: Graph,
    target: str = "python",
    *,
    of: str | None = None,
    wrt: list[str] | None = None,
    bindings: Mapping | None = None,
    name: str = "",
    rows: bool = False,
    gradient: bool = True,
    kinks: bool = False,
    names: list[str] | None = None,
    strict: bool = False,
) -> str:
    """The module's source text (see the module's docstring); ``of``, ``wrt``: as for
    ``grad``; ``bindings``: values that give a tensor program's shapes (else its defaults).
    ``rows``: for cgraph's own batch engine (:mod:`cgraph_cli.run.engine`), NumPy only: nothing
    raises for a value that is not finite; ``forward`` and ``grad`` return, last, what they
    watched (see :func:`absorbs`): with rows of numbers, a list of the watched values' sums
    (a copy of a value whose sum is not finite), with rows of tensors a number per row that
    is not finite where some value on the way was not; ``CHECKED`` names, per function, the
    results the caller must check too.
    ``gradient`` False: ``forward`` alone (``grad`` raises ``TypeError``). ``kinks`` (rows
    mode): ``forward``'s values also hold, under ``" kinks"``, the kink quantity of each op that
    has one (:attr:`~cgraph_cli.core.ops.OpSpec.kink`), for gradcheck. ``names`` (rows mode):
    the named values ``forward`` gives back (default: every one); the others need not outlive
    the call (work arrays). ``strict`` (NumPy, not rows: cgraph's own calls): inputs
    of other shapes than compiled for, a batch axis too, refused with a ``TypeError`` (a
    module written out runs a batch row by row).

    >>> from cgraph_cli import parse
    >>> namespace = {}
    >>> exec(compile_module(parse("y = sum(W @ x)"), "numpy", bindings={"W": [[1, 2]], "x": [3, 4]}), namespace)
    >>> value, grads = namespace["grad"](W=[[1, 2]], x=[3, 4])
    >>> value, grads["x"].tolist()
    (11.0, [1.0, 2.0])
    """
    from ..core.ir_control import refuse
    from ..passes.derivatives import derivative_program
    from ..passes.optimize import optimize

    refuse(graph, "--rows" if rows else "compile", loops=not rows)  # loops: run/scan_code.py
    graph = marked(graph)  # if/else: each branch computed only where it is taken

    check_target(target)
    assert not rows or target == "numpy", "rows mode is NumPy's"
    # Every statement is kept, also with ``of`` (the interpreter runs them all: one failing
    # fails the call, or the row), differentiating the value ``of`` names.
    output = graph.output if of is None else resolve_name(graph, of)
    # Without a statement per intermediate derivative: those are temporaries, whose variables
    # are used again once they are dead (floats freed as soon as possible run faster).
    from ..passes.optimize import known_shapes

    known = known_shapes(graph, bindings or {})
    emitter = _Emitter(target, graph.source.text, known, rows)
    if has_selects(graph):  # a condition that is a tensor: refused as the interpreter does
        from ..passes.rewrite import only_shape, shapes

        sigs = shapes(graph, known)
        check_conditions(graph, lambda c: only_shape(sigs[c]))
    emitter.kinks = kinks
    emitter.strict = strict and target == "numpy" and not rows
    emitter.names = names if rows else None
    emitter.variables = input_variables(graph.inputs)
    emitter.statements = set(graph.names)
    if target == "python" and gradient and not kinks and not has_selects(graph):
        from ..passes.derivatives import wrt_inputs

        plan = reverse_plan(graph, output, wrt_inputs(graph, wrt))
        if plan is not None:  # a program of numbers: its reverse pass from the float rules
            return _scalar_module(emitter, graph, output, plan, name)
    emitter.checking = not rows  # each body's checked copy written beside it
    try:
        if not gradient:
            raise NotANumber("this module was compiled without its gradient")
        # Each contribution whose partial may not be finite is 0 where its adjoint is, as in
        # the interpreter (which skips a node whose gradient is 0): the checked copy's mask
        # (NumPy), a branch (Python: computed only where the adjoint is not 0).
        mask = () if rows else IF if target == "python" else MASK
        program = derivative_program(graph, bindings, of, wrt, intermediates=False, mask=mask)
    except NotANumber as e:  # a tensor output: forward() alone; grad() says why not
        if rows and gradient:
            raise
        emitter.vector = target == "numpy" and elementwise(graph, known)
        forward_body, forward_names = emitter.body(
            graph, returned=_returned(graph, output, rows), kinks=kinks,
            escapes=_given(graph, output, emitter.names), results=_keys(graph, emitter.names),
        )  # fmt: skip
        emitter.checked_forward = emitter.checked_lines
        emitter.result_shapes(graph, "forward", graph.named_nodes())
        emitter.to_check["forward"] = uncovered(graph, graph.named_nodes())
        return module_text(
            emitter, graph, name, forward_body, forward_names, None, e.message, {}, ""
        )
    # The derivative program, optimized; dead-code elimination would keep one gradient only.
    derived = optimize(program.graph, ["fold", "cse", "simplify"], texts=False).graph
    emitter.vector = target == "numpy" and elementwise(graph, known) and elementwise(derived, known)
    emitter.defer = target == "numpy" and not rows  # the checked copy says where, if needed
    # Rows mode: every value the output does not read is watched, so that the engine need
    # check only the values it keeps (the output, or all of them with --all).
    forward_body, forward_names = emitter.body(
        graph,
        returned=_returned(graph, output, rows),
        kinks=kinks,
        escapes=_given(graph, output, emitter.names),
        results=_keys(graph, emitter.names),
    )
    emitter.checked_forward = emitter.checked_lines
    emitter.result_shapes(graph, "forward", graph.named_nodes())
    emitter.to_check["forward"] = uncovered(graph, graph.named_nodes())
    emitter.deferred_by["forward"] = emitter.deferred
    base = program.output if program.output.isidentifier() else "out"
    returned = [derived.names[h] for h in program.gradients.values()]
    returned.append(derived.names.get(base, derived.inputs.get(base, derived.output)))
    if base in derived.names:
        value_node = derived.names[base]
    elif base in derived.inputs:  # the output is an input itself: `y = x * 2; x`
        value_node = derived.inputs[base]
    else:
        value_node = derived.output
    keys = {derived.names[h]: w for w, h in program.gradients.items()}
    grad_body, grad_names = emitter.body(
        derived, returned=returned, escapes=set(returned), results={value_node: "", **keys}
    )
    emitter.deferred_by["grad"] = emitter.deferred
    emitter.checked_grad = emitter.checked_lines
    value = grad_names[value_node]
    gradients = {w: grad_names[derived.names[h]] for w, h in program.gradients.items()}
    emitter.exact = emitter.exact_shapes(derived, program.gradients)
    results = {w: derived.names[h] for w, h in program.gradients.items()}
    emitter.result_shapes(derived, "grad", {"": value_node, **results})
    emitter.to_check["grad"] = uncovered(derived, {"": value_node, **results})
    return module_text(
        emitter,
        graph,
        name,
        forward_body,
        forward_names,
        grad_body,
        value,
        gradients,
        program.output,
    )


def _scalar_module(emitter: _Emitter, graph: Graph, output: int, plan, name: str) -> str:
    """The module of a program of numbers, its reverse pass written by
    :func:`~cgraph_cli.run.compile_scalar.reverse_lines` after the forward lines; the
    copies that check every value (run only when a result is not finite) keep one line
    a node, the others write temporaries into their readers (:func:`fuse_forward`)."""
    # One forward pass for both functions: what the reverse pass reads kept in its variables,
    # each value the output does not read checked where it is made (forward returns the
    # named ones too, checked again at its end).
    body, names = emitter.body(graph, keep=plan.read, returned=[output])
    fast = fuse_forward(body, emitter.records, graph, plan.read)
    emitter.checked_forward = body
    emitter.result_shapes(graph, "forward", graph.named_nodes())
    shown = graph.display_name(output)
    base = shown if shown.isidentifier() else "out"
    taken, counts = emitter.taken, emitter.counts

    def new(name: str) -> str:
        return fresh(_identifier(name, taken), taken, counts=counts)

    lines, checked, found = reverse_lines(
        plan, graph, names, new, lambda i: emitter.comment(graph, i), base
    )
    if any("rt." in line for line in lines):  # a helper the partials call: copied in
        for line in lines:
            emitter.helpers.update(_HELPER.findall(line))
        lines = [_HELPER.sub(r"\1", line) for line in lines]
        checked = [_HELPER.sub(r"\1", line) for line in checked]
    emitter.checked_grad = body + checked
    value = names[output]
    return module_text(emitter, graph, name, fast, names, fast + lines, value, found, shown)


def _given(graph: Graph, output: int, names: list[str] | None) -> set[int]:
    """The nodes whose values ``forward`` gives back: the output and every named one (those
    of ``names`` when given)."""
    named = graph.named_nodes()
    return {output, *(named.values() if names is None else (named[n] for n in names if n in named))}


def _keys(graph: Graph, names: list[str] | None) -> dict[int, str] | None:
    """The nodes of ``names`` (the values a rows module's ``forward`` gives back), each with
    its name; None when every named value is given back (no rows module)."""
    if names is None:
        return None
    named = graph.named_nodes()
    return {named[n]: n for n in reversed(names) if n in named}


def _returned(graph: Graph, output: int, rows: bool) -> list[int]:
    """The nodes forward returns and checks at its end: in rows mode the output alone (cgraph
    checks what it keeps), else every named value and input too."""
    return [output] if rows else [output, *graph.named_nodes().values()]
