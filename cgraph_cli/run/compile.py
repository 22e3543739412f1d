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

import builtins
import inspect
import keyword
import math
import re
from bisect import bisect_right
from collections.abc import Mapping

from ..core import runtime
from ..core.errors import UsageError, visible
from ..core.interpret import Source
from ..core.ir import Graph, resolve_name
from ..core.ops import CONST, INPUT
from ..core.walks import fresh, last_readers
from ..passes.grad_graph import NotANumber
from .batch import (
    PER_ROW,
    ROWS,
    SEEN,
    WATCHED,
    WORK,
    absorbs,
    decisive,
    elementwise,
    hidden,
    into_work_array,
    private_nodes,
    uncovered,
    unread,
    unread_inputs,
    watch_line,
    work_arrays,
)  # fmt: skip
from .compile_scalar import fuse_forward, reverse_lines, reverse_plan

TARGETS = ("python", "numpy", "js")  # js: run/compile_js.py
Shape = tuple[int, ...] | None  # known when compiling, or None
SOURCE = Source()  # the op table's rules written as Python expressions
_HELPER = re.compile(r"\brt\.(\w+)")
_MATH = re.compile(r"\bmath\.(\w+)")  # bound to a local variable each: _math_sin
_LOCAL = re.compile(r"\b_math_(\w+)")
_MATH_NAMES = set(dir(math))
_RESERVED = {
    *dir(builtins),
    *("math", "np", "DomainError", "INPUTS", "DEFAULTS", "forward", "grad", "out", "value"),
    *("grads", "inputs", "_finite", "_domain", "_arg", "_like", "_plain", "_expect", "_WHERE"),
    "_WHERE_TEXT",
    *(
        "SHAPES",
        "rows",
        "_acc",
        "_watch",
        "_rows",
        "_per_row",
        "_stack",
        "_kinks",
        "_total",
        "_FLOAT",
    ),
    *("sys", "_exact", "_check", "_CHECKED", "_CHECKED_SOURCE", "_CHECKED_WHERE"),
    *("_out", "_pool", "_POOLS", "_buffers", "_seen", "CHECKED"),
    *(f"_math_{n}" for n in dir(math)),  # math.sin read once per call into _math_sin
}


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
    the call (work arrays).

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

    refuse(graph, "compile")  # programs with loops: cgraph_cli.run.scan_code.compile_module

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
    emitter.kinks = kinks
    emitter.names = names if rows else None
    emitter.variables = input_variables(graph.inputs)
    if target == "python" and gradient and not kinks:
        from ..passes.derivatives import wrt_inputs

        plan = reverse_plan(graph, output, wrt_inputs(graph, wrt))
        if plan is not None:  # a program of numbers: its reverse pass from the float rules
            return _scalar_module(emitter, graph, output, plan, name)
    try:
        if not gradient:
            raise NotANumber("this module was compiled without its gradient")
        program = derivative_program(graph, bindings, of, wrt, intermediates=False)
    except NotANumber as e:  # a tensor output: forward() alone; grad() says why not
        if rows and gradient:
            raise
        emitter.vector = target == "numpy" and elementwise(graph, known)
        forward_body, forward_names = emitter.body(
            graph, returned=_returned(graph, output, rows), kinks=kinks,
            escapes=_given(graph, output, emitter.names),
        )  # fmt: skip
        emitter.result_shapes(graph, "forward", graph.named_nodes())
        emitter.to_check["forward"] = uncovered(graph, graph.named_nodes())
        return emitter.module(graph, name, forward_body, forward_names, None, e.message, {}, "")
    # The derivative program, optimized; dead-code elimination would keep one gradient only.
    derived = optimize(program.graph, ["fold", "cse", "simplify"], texts=False).graph
    emitter.vector = target == "numpy" and elementwise(graph, known) and elementwise(derived, known)
    # Rows mode: every value the output does not read is watched, so that the engine need
    # check only the values it keeps (the output, or all of them with --all).
    forward_body, forward_names = emitter.body(
        graph,
        returned=_returned(graph, output, rows),
        kinks=kinks,
        escapes=_given(graph, output, emitter.names),
    )
    emitter.result_shapes(graph, "forward", graph.named_nodes())
    emitter.to_check["forward"] = uncovered(graph, graph.named_nodes())
    base = program.output if program.output.isidentifier() else "out"
    returned = [derived.names[h] for h in program.gradients.values()]
    returned.append(derived.names.get(base, derived.inputs.get(base, derived.output)))
    grad_body, grad_names = emitter.body(derived, returned=returned, escapes=set(returned))
    if base in derived.names:
        value_node = derived.names[base]
    elif base in derived.inputs:  # the output is an input itself: `y = x * 2; x`
        value_node = derived.inputs[base]
    else:
        value_node = derived.output
    value = grad_names[value_node]
    gradients = {w: grad_names[derived.names[h]] for w, h in program.gradients.items()}
    emitter.exact = emitter.exact_shapes(derived, program.gradients)
    results = {w: derived.names[h] for w, h in program.gradients.items()}
    emitter.result_shapes(derived, "grad", {"": value_node, **results})
    emitter.to_check["grad"] = uncovered(derived, {"": value_node, **results})
    return emitter.module(
        graph, name, forward_body, forward_names, grad_body, value, gradients, program.output
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
    return emitter.module(graph, name, fast, names, fast + lines, value, found, shown)


class _Emitter:
    """Writes the lines of a graph's nodes for one target."""

    def __init__(self, target: str, text: str, known: dict | None = None, rows=False) -> None:
        self.target = target
        self.rows = rows  # watch the arguments of ops that absorb what is not finite
        # Every op elementwise on numbers: rows of inputs broadcast through the code as they
        # are (else a batch runs one row at a time).
        self.vector = False
        self.kinks = False  # forward also lists the kink quantities (rows mode)
        self.work = False  # some value computed into a work array (rows of numbers)
        self.names: list[str] | None = None  # the named values forward gives (None: all)
        # Rows mode: per function, the results the engine checks (the others pass a value
        # that is not finite on to one that is checked).
        self.to_check: dict[str, list[str]] = {}
        # The inputs' shapes when compiling for NumPy (None: no specialising).
        self.known = known if target == "numpy" else None
        self._shaped_graph: Graph | None = None
        self._sigs: list = []
        self.exact: set[str] = set()  # inputs whose gradient needs no reshaping
        self.exact_rule = False  # some value computed by _exact (see exact_template)
        # Per function, each value it returns: its shape when known, and whether an operation
        # computes it (else an input, already converted, or a constant).
        self.returns: dict[str, dict[str, tuple[Shape, bool]]] = {}
        self.text = text  # the program's source, for the comments
        self.helpers: set[str] = set()
        # The lines of forward and grad for their checked copies, where they differ.
        self.checked_forward: list[str] | None = None
        self._comments: dict[tuple[int, int], str] = {}  # (graph's id, node): its comment
        self.checked_grad: list[str] | None = None
        self.variables: dict[str, str] = {}  # each input's variable: input_variables()
        # Where each line starts, for a node's line number by bisection.
        self.lines = [0] + [m.end() for m in re.finditer(r"\r\n?|\n", text)]

    def body(
        self,
        graph: Graph,
        keep: set[int] | None = None,
        returned: list[int] | None = None,
        kinks: bool = False,
        escapes: set[int] | None = None,
    ) -> tuple[list[str], list[str]]:
        """The lines computing every operation node of ``graph``, and each node's variable
        (inputs are the function's arguments; constants are written in place). A node the
        program names gets its own variable (``v``, ``v_1``...); a temporary takes the
        variable of one that is dead by then, unless it is in ``keep``. A node that no
        ``returned`` node reads is watched too (the interpreter checks every value). Rows
        of numbers, with ``escapes`` (the nodes the function gives back): the values no one
        else sees are computed into work arrays kept for the next call (:func:`work_arrays`),
        and a named one's variable, once dead, is taken again as a temporary's."""
        dead = unread(graph, returned) if returned is not None else set()
        self.stopped: set[int] = set()  # nodes a line stops at already (watched)
        conditions = _masks(graph)
        exact = decisive(graph) if self.vector else set()  # by the interpreter's float rule
        templates = {
            i: self.node_template(graph, i, op, i in exact, i in conditions)
            for i, op in enumerate(graph.ops)
            if op is not INPUT and op is not CONST
        }
        last = _last_uses(graph)
        work: set[int] = set()  # rows of numbers: values computed into kept work arrays
        if escapes is not None and self.rows and self.vector and not kinks:
            last, private = private_nodes(graph, escapes)
            work = work_arrays(graph, templates, private)
            self.work = self.work or bool(work)
        names: list[str] = []
        # The inputs' variables first: a temporary must never take one (an input `t` is read
        # after the first temporary `t` is made).
        variables = dict(self.variables)
        taken = set(_RESERVED) | _HELPERS | set(variables.values())
        counts: dict[str, int] = {}
        self.taken, self.counts = taken, counts  # for more variables in the same function
        for name in graph.inputs:
            if name not in variables:
                variables[name] = fresh(_identifier(name, taken), taken, counts=counts)
        lines: list[str] = []
        self.records: list[tuple[int, int, str, str]] = []  # node, line, variable, expression
        if self.rows:  # an input no op reads: watched itself (else a value made of it is)
            lines += [
                watch_line(self.variables[n], self.vector)
                for n in unread_inputs(graph, self.variables)
            ]
        free: list[str] = []  # variables of dead temporaries
        temporary: set[str] = set()
        for i, op in enumerate(graph.ops):
            if op is INPUT:
                names.append(variables[graph.labels[i] or ""])
                continue
            if op is CONST:
                names.append(self.literal(graph.consts[i]))
                continue
            template = self.local(templates[i])
            args = [names[a] for a in graph.args[i]]
            params = [repr(p) for p in graph.params.get(i, ())]
            params += ["None"] * (len(op.params) - len(params))  # an optional one not given
            expr = template.format(*args, *params)
            if "rt." in expr:
                self.helpers.update(_HELPER.findall(expr))
                expr = _HELPER.sub(r"\1", expr)
            for a in set(graph.args[i]):  # arguments read for the last time: their variables
                if last[a] == i and names[a] in temporary and (keep is None or a not in keep):
                    free.append(names[a])
            if kinks and op.kink is not None:  # which smooth piece: for gradcheck's steps
                where = op.kink(SOURCE, *(names[a] for a in graph.args[i]))
                lines.append(
                    f"    _kinks.append({where if isinstance(where, str) else float(where)})"
                )
            if not self.rows and absorbs(op):  # a value this op would hide: stop at its node
                lines += self.watched(graph, i, names)
            if self.rows and absorbs(op):  # before the line: its variable may be an argument's
                lines += [watch_line(names[a], self.vector) for a in hidden(graph, i)]
            label = graph.labels[i]
            if (label is None or i in work) and free and (keep is None or i not in keep):
                var = free.pop()
            else:
                var = _fresh(label or "t", taken, counts)
                if label is None or i in work:
                    temporary.add(var)
            names.append(var)
            if i in work:  # into the work array of its variable (per row), or a new number
                expr = into_work_array(graph, i, template, var, names)
            self.records.append((i, len(lines), var, expr))
            lines.append(f"    {var} = {expr}" + self.comment(graph, i))
            if i in dead and self.rows:
                lines.append(watch_line(var, self.vector))
            elif i in dead:  # a statement no result reads: the interpreter checks it too
                lines.append(self.stop(var, self.comment(graph, i)))
        return lines, names

    def node_template(self, graph: Graph, i: int, op, exact: bool, mask: bool) -> str:
        """Node ``i``'s template: its op's, specialised where shapes are known, by the float
        rule (``exact``), as a boolean ``mask`` (read by ``where`` only), or a square."""
        template = self.template(op)
        if self.known is not None:
            template = self.specialised(graph, i, op, template)
        if exact:
            template = self.exact_template(op)
        if self.target == "numpy" and mask:  # read by where only: a mask
            template = f"({{0}} {_COMPARISONS[op.name]} {{1}})"
        exponent = graph.consts.get(graph.args[i][-1])
        if op.name == "pow" and exponent.__class__ is float and exponent == 2.0:
            template = "{0} * {0}"  # a square: one multiplication, not a call of pow
        return template

    def local(self, expr: str) -> str:
        """``expr`` with each ``math.f`` of the python target read from a local variable
        (``_math_f``, bound once per call by :meth:`bindings`), not looked up every time."""
        if self.target != "python" or "math." not in expr:
            return expr
        return _MATH.sub(r"_math_\1", expr)

    def bindings(self, body: list[str]) -> list[str]:
        """The lines binding the math functions ``body`` calls to local variables."""
        if self.target != "python":
            return []
        called = {
            f
            for line in body
            if "_math_" in line
            for f in _LOCAL.findall(line.split("  # line ", 1)[0])
        }
        return [f"    _math_{f} = math.{f}" for f in sorted(called & _MATH_NAMES)]

    def watched(self, graph: Graph, i: int, names: list[str]) -> list[str]:
        """Lines that stop at an argument of node ``i`` that is not finite, naming the
        argument's node: ``i`` could turn it into a finite value (``where``, ``1 / inf``,
        ``tanh``), where the interpreter stops at the node that made it."""
        lines = []
        args = graph.args[i]
        exponent = graph.consts.get(args[-1]) if graph.ops[i].name == "pow" else None
        for a in dict.fromkeys(args):
            if graph.ops[a] is CONST or graph.ops[a] is INPUT or a in self.stopped:
                continue
            if graph.ops[a].name in _COMPARISONS:  # 0 or 1, whatever it compared
                continue
            self.stopped.add(a)  # checked once: its value does not change
            if exponent.__class__ is float and exponent > 0.0 and a == args[0]:
                continue  # inf ^ 2 is inf, nan ^ 2 nan: a positive power passes it on
            lines.append(self.stop(names[a], self.comment(graph, a)))
        return lines

    def exact_template(self, op) -> str:
        """A template that applies ``op``'s float rule (the interpreter's, on numbers) to each
        element, through ``_exact``: the same rounding as ``eval``."""
        self.exact_rule = True
        a = [f"a{k}" for k in range(op.arity)]
        rule = f"lambda {', '.join(a)}: {op.py.format(*a)}"
        return f"_exact({rule}, {', '.join(f'{{{k}}}' for k in range(op.arity))})"

    def checked(self, fn: str, again: list[str], body: list[str]) -> list[str]:
        """``fn`` again, from a dict of its inputs, stopping at the first value that is not
        finite, naming its node: what ``_finite`` runs when a result is not finite, to say
        where, as the interpreter does (``grad: a result is not finite`` said only that)."""
        lines = []
        for line in body:
            lines.append(line)
            head, sep, where = line.partition("  # line ")
            var, _, rest = head[4:].partition(" ")
            if sep and rest[:2] in ("= ", "+=") and var.isidentifier():
                lines.append(f"    _check({var}){sep}{where}")  # a call: no branch
        return [
            f"def _{fn}_checked(inputs):",
            *again,
            *self.bindings(body),
            *_guarded(lines, self.target == "numpy", []),
            "",
            "",
        ]

    def stop(self, v: str, comment: str) -> str:
        """The line that stops where variable ``v`` is not finite; ``comment`` says where."""
        test = f"not np.isfinite({v}).all()" if self.target == "numpy" else f"{v} - {v} != 0.0"
        return f"    if {test}: raise FloatingPointError('the value is not finite')" + comment

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
        if key in self.exact:
            return var, self.known[key]
        x = self.variables[key]
        if self.vector:
            return f"_like({var}, {x}, rows)", None
        if self.known.get(key) == () and self.returns["grad"][key][0] == ():
            return self.returned("grad", key, var)
        return f"_like({var}, {x})", self.known.get(key)  # _like gives it the input's shape

    def finite(self, fn: str, given: str, results: Mapping[str, tuple[str, Shape]]) -> list[str]:
        """The lines that raise DomainError for a result that is not finite: ``_finite(given,
        fn)``, which finds it. With every result's shape known, NumPy code first sums them
        as written here, without ``_finite``'s loop, and calls it only if the sum is not
        finite (one of them is not, or the sum overflowed). ``results``: by name, how
        ``given`` holds each value and its shape (None: unknown)."""
        call = f"_finite({given}, {fn})"
        if self.target != "numpy" or any(shape is None for _, shape in results.values()):
            return [f"    {call}"]
        numbers, small, large = [], [], []
        for key, (expr, shape) in results.items():
            v = expr if expr.isidentifier() else f"{'out' if fn == 'forward' else 'grads'}[{key!r}]"
            if not shape:
                numbers.append(v)
            elif math.prod(shape) > _JOINED:  # summed alone: joining would copy much
                large.append(f"np.add.reduce({v}, None)")
            else:
                small.append(f"{v}.ravel()" if len(shape) > 1 else v)
        if len(small) > 1:
            large.append(f"np.add.reduce(np.concatenate(({', '.join(small)})), None)")
        elif small:
            large.append(f"np.add.reduce({small[0]}, None)")
        if not numbers and not large:  # nothing returned
            return []
        return [
            f"    _total = {' + '.join(numbers + large)}",
            "    if _total - _total != 0.0:  # a result is not finite, or their sum overflowed",
            f"        {call}",
        ]

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

    def template(self, op) -> str:
        if self.target == "python":
            if op.py is None:
                raise UsageError(
                    f"{op.symbol} works on tensors: compile this program with --target numpy"
                )
            return op.py
        template = op.np or op.py
        assert template is not None, op
        return template

    def literal(self, value) -> str:
        if value.__class__ is float:
            return repr(value)
        if self.target == "python":
            raise UsageError("an array constant needs --target numpy")
        return f"np.array({value.tolist()!r})"

    def comment(self, graph: Graph, i: int) -> str:
        """``  # line N: text`` of node ``i``, made once per node (every function, and the
        reverse pass, comment the same nodes)."""
        key = (id(graph), i)
        found = self._comments.get(key)
        if found is None:
            found = self._comments[key] = self._comment(graph, i)
        return found

    def _comment(self, graph: Graph, i: int) -> str:
        start, end = graph.starts[i], graph.ends[i]
        if end <= start or graph.source.text != self.text:
            return ""
        line = bisect_right(self.lines, start)
        # A window of the text, not all of it: a node deep in a long expression spans most of
        # it, and reading it whole for every node would be quadratic.
        snippet = visible(" ".join(self.text[start : min(end, start + 400)].split()))
        long = len(snippet) > 50 or end - start > 400
        return f"  # line {line}: {snippet[:49] + '…' if long else snippet}"

    def module(self, graph, name, forward_body, names, grad_body, value, gradients, output) -> str:
        numpy = self.target == "numpy"
        inputs = list(graph.inputs)
        variables = [self.variables[n] for n in inputs]
        args = ", ".join(variables)
        signature = f"*, {args}" if args else ""
        named = {
            n: names[node]
            for n, node in graph.named_nodes().items()
            if self.names is None or n in self.names
        }
        head = [
            f'"""A cgraph program compiled by cgraph (target {self.target}): the forward pass',
            "(forward) and the forward and reverse passes (grad) as straight-line code. It needs",
            'no cgraph to run."""',
            "",
            # The program as comments: whatever it holds stays a comment (splitlines breaks at
            # every character Python ends a line at, and more).
            f"# The program{(' ' + visible(_one_line(name))) if name else ''}:",
            *("#     " + visible(line) for line in graph.source.text.strip().splitlines()),
            "",
            "import numpy as np" if numpy else "import math",
            *(["import math"] if numpy and self.exact_rule else []),
            *([] if self.rows else ["import sys"]),
            "",
            f"INPUTS = {tuple(inputs)!r}",
            f"DEFAULTS = {self._defaults(graph)}",
            *(
                [f"SHAPES = {self.row_shapes(graph)!r}", "_FLOAT = np.dtype(float)"]
                + ([f"CHECKED = {self.to_check!r}"] if self.rows else [])
                if numpy
                else []
            ),
            "",
            "",
            "class DomainError(ArithmeticError):",
            '    """A value the program cannot compute (log(-1), 1/0, an overflow...)."""',
            "",
            "",
        ]
        helpers = [
            inspect.getsource(getattr(runtime, h)) + "\n" for h in _with_callees(self.helpers)
        ]
        # What each function returns, by name: how, and the shape when known.
        out: dict[str, tuple[str, Shape]] = {n: (v, None) for n, v in named.items()}
        if numpy and not self.rows:  # rows mode: cgraph broadcasts what it keeps
            out = {n: self.returned("forward", n, v) for n, v in named.items()}
        values = ", ".join(f"{n!r}: {v}" for n, (v, _) in out.items())
        results: dict[str, tuple[str, Shape]] = {n: (v, None) for n, v in gradients.items()}
        if numpy:  # a gradient that is 0 everywhere may be written as the number 0
            results = {n: self.gradient(n, v) for n, v in gradients.items()}
        grads = ", ".join(f"{n!r}: {v}" for n, (v, _) in results.items())
        if numpy and grad_body is not None:
            if self.rows:
                value, shape = f"_plain({value}{', rows' if self.vector else ''})", None
            else:
                value, shape = self.returned("grad", "", value)
            results = {"": ("value", shape), **results}
        if variables == inputs:  # every input a plain keyword argument
            convert = [f"    {a} = _arg({a})" for a in variables]
        else:  # a name Python or the module keeps (lambda, math, grad...): by keyword only
            signature = "**inputs"
            convert = ["    _expect(inputs, INPUTS)"] + [
                f"    {v} = _arg(inputs[{n!r}])" for v, n in zip(variables, inputs)
            ]
        start = (
            [f"    {WATCHED[self.vector]} = {'[]' if self.vector else '0.0'}"] if self.rows else []
        )
        if self.kinks:
            start.append("    _kinks = []")
        if self.vector:  # rows of numbers broadcast through the code
            start.append(f"    rows = _rows({', '.join(variables)})")
            if self.work:
                start.append("    _out, _pool = _buffers(rows)")
        elif numpy and inputs:  # rows of tensors: one row at a time
            shapes = self.row_shapes(graph)
            batched = " or ".join(  # _arg made a number a float, and anything else an array
                f"{v}.__class__ is not float"
                if not shapes[n]
                else f"({v}.__class__ is np.ndarray and {v}.ndim > {len(shapes[n])})"
                for v, n in zip(variables, inputs)
            )
            given = ", ".join(f"{n!r}: {v}" for v, n in zip(variables, inputs))
            per_row = [f"    if {batched}:", f"        return _per_row({{fn}}, {{{{{given}}}}})"]
            if signature == "**inputs":
                start += per_row
            else:  # inputs that are one row's floats already need neither _arg nor _per_row
                ready = " and ".join(
                    f"{v}.__class__ is float"
                    if not shapes[n]
                    else f"{v}.__class__ is np.ndarray and {v}.dtype is _FLOAT"
                    f" and {v}.ndim == {len(shapes[n])}"
                    for v, n in zip(variables, inputs)
                )
                indented = ["    " + line for line in convert + per_row]
                start = [f"    if not ({ready}):", *indented, *start]
                convert = []
        again = [f"    {v} = _arg(inputs[{n!r}])" for v, n in zip(variables, inputs)]
        checked = (
            []
            if self.rows
            else self.checked("forward", again, self.checked_forward or forward_body)
        )
        if grad_body is not None and not self.rows:
            checked += self.checked("grad", again, self.checked_grad or grad_body)
        forward = [
            f"def forward({signature}):",
            '    """Every named value of the program, by name."""',
            *convert,
            *(line.format(fn="forward") for line in start),
            *self.bindings(forward_body),
            *_guarded(
                forward_body,
                numpy,
                [
                    f"    out = {{{values}}}",
                    *(['    out[" kinks"] = _kinks'] if self.kinks else []),
                    *([] if self.rows else self.finite("forward", "out", out)),
                ],
            ),
            *(["    _POOLS.append(_pool)"] if self.work else []),
            f"    return out, {WATCHED[self.vector]}" if self.rows else "    return out",
            "",
            "",
            f"def grad({signature}):",
            *(
                [
                    f'    """The value of {output} and its gradient with respect to each input."""',
                    *convert,
                    *(line.format(fn="grad") for line in start),
                    *self.bindings(grad_body),
                    *_guarded(
                        grad_body,
                        numpy,
                        [
                            f"    value = {value}",
                            f"    grads = {{{grads}}}",
                            *(
                                []
                                if self.rows
                                else self.finite("grad", "{'': value, **grads}", results)
                            ),
                        ],
                    ),
                    *(["    _POOLS.append(_pool)"] if self.work else []),
                    f"    return value, grads, {WATCHED[self.vector]}"
                    if self.rows
                    else "    return value, grads",
                ]
                if grad_body is not None
                else [  # value: why not, as a string literal (repr: nothing of it runs)
                    '    """No gradient: the output is a tensor (reduce it to a number)."""',
                    f"    raise TypeError({value!r})",
                ]
            ),
            "",
            "",
        ]
        check = "np.all(np.isfinite(v))" if numpy else "math.isfinite(v)"
        finite = [
            "def _finite(values, fn):",
            '    """Raise DomainError if a result is not finite (as cgraph\'s interpreter does)."""',
            *(
                [  # one sum over every result (small arrays joined first: one reduction)
                    "    total, small = 0.0, []",
                    "    for v in values.values():",
                    "        if v.__class__ is not np.ndarray:",
                    "            total += v",
                    f"        elif v.size > {_JOINED}:",
                    "            total += np.add.reduce(v, None)",
                    "        else:",
                    "            small.append(v.ravel())",
                    "    if small:",
                    "        total += np.add.reduce(np.concatenate(small), None)",
                    "    if total - total == 0.0:  # a finite sum: all are finite",
                ]
                if numpy
                else ["    if math.isfinite(sum(values.values())):  # a finite sum: all are"]
            ),
            "        return",
            *(
                []
                if self.rows
                else [  # the call's inputs, run again checking each value: at which node
                    "    if not _CHECKED:  # compiled on first need, and where its lines are",
                    "        exec(compile(_CHECKED_SOURCE, '<checked>', 'exec'), globals())",
                    "        for k, line in enumerate(_CHECKED_SOURCE.split('\\n')):",
                    "            if '  #' ' line ' in line:  # (split: this line is none of them)",
                    "                _CHECKED_WHERE[k + 1] = line.split('  # ', 1)[1]",
                    "    given = sys._getframe(1).f_locals",
                    "    _CHECKED[fn.__name__](",
                    "        given['inputs'] if 'inputs' in given else {n: given[n] for n in INPUTS}",
                    "    )",
                ]
            ),
            "    for name, v in values.items():",
            f"        if not {check}:",
            "            what = f' (d{name})' if fn is grad and name else (f' ({name})' if name else '')",
            "            raise DomainError(f'{fn.__name__}: a result is not finite{what}')",
            "",
            "",
            *((_EXACT_ROWS if self.rows else _EXACT) if self.exact_rule else []),
            *(
                []
                if self.rows
                else [
                    "def _check(v):",
                    '    """Stop at a value that is not finite (the caller\'s line names it)."""',
                    f"    if {'not np.isfinite(v).all()' if numpy else 'v - v != 0.0'}:",
                    "        raise FloatingPointError('the value is not finite')",
                    "",
                    "",
                ]
            ),
            "def _domain(error):",
            '    """The error as a DomainError naming the program\'s line that raised it."""',
            "    if not _WHERE:  # each line's place in the program, read at the first error",
            "        found = (line.partition(':') for line in _WHERE_TEXT.split('\\n'))",
            "        _WHERE.update((int(k), v) for k, _, v in found if k)",
            "    tb = error.__traceback__",
            "    where = ''",
            "    while tb is not None:",
            "        if tb.tb_frame.f_globals is globals() or tb.tb_next is None:",
            "            where = _WHERE.get(tb.tb_lineno, where)"
            if self.rows
            else "            where = (_CHECKED_WHERE if tb.tb_frame.f_code.co_filename =="
            " '<checked>' else _WHERE).get(tb.tb_lineno, where)",
            "        tb = tb.tb_next",
            "    return DomainError(f'{where}: {error}' if where else str(error))",
            "",
            "",
            *(
                [
                    "def _like(g, x, rows=()):",
                    '    """The gradient g with the shape of its input x (of each row: rows)."""',
                    "    shape = rows or np.shape(x)",
                    "    if np.shape(g) != shape:",
                    "        g = np.broadcast_to(g, shape).copy()",
                    "    return _plain(g)",
                    "",
                    "",
                    "def _plain(v, rows=()):",
                    '    """A number as a float, an array as it is; with rows, a value per row."""',
                    "    if rows:",
                    "        return v if np.shape(v) == rows else np.broadcast_to(v, rows).copy()",
                    "    return float(v) if np.ndim(v) == 0 else v",
                    "",
                    "",
                    *(ROWS if self.vector else PER_ROW),
                    *(SEEN if self.vector and self.rows else []),
                    *(WORK if self.work else []),
                ]
                if numpy
                else []
            ),
            "def _expect(given, names):",
            '    """Refuse keyword arguments missing or unknown, as a signature would."""',
            "    missing = [n for n in names if n not in given]",
            "    unknown = [n for n in given if n not in names]",
            "    if missing or unknown:",
            "        raise TypeError(f'missing inputs {missing}, unknown inputs {unknown}')",
            "",
            "",
            "def _arg(x):",
            *(
                [
                    "    x = np.asarray(x, dtype=float)",
                    *([] if self.rows else _ARG_FINITE),
                    "    return float(x) if x.ndim == 0 else x",
                ]
                if numpy
                else ["    x = float(x)", "    if x - x != 0.0:", _ARG_FINITE[1], "    return x"]
            ),
            "",
            "",
        ]
        lines = "\n".join(head + helpers + forward + finite).split("\n")
        # As one string, not a dict literal: Python compiles it in a fraction of the time.
        where = "\n".join(
            f"{k + 1}:{line.split('  # ', 1)[1]}"
            for k, line in enumerate(lines)
            if "  # line " in line and not line.lstrip().startswith("#")
        )
        return "\n".join(
            [
                *lines,
                *_checked_source(checked, grad_body),
                "_WHERE: dict = {}",
                f"_WHERE_TEXT = {where!r}",
                "",
            ]
        )

    def row_shapes(self, graph: Graph) -> dict[str, tuple[int, ...]]:
        """One row's shape of each input: the known shape, else a number's."""
        return {n: tuple(self.known.get(n, ())) if self.known else () for n in graph.inputs}

    def _defaults(self, graph: Graph) -> str:
        items = []
        for name, value in graph.defaults.items():
            if isinstance(value, float):
                shown = repr(value)
            elif self.target == "python":
                raise UsageError(
                    f"the default of '{name}' is a tensor: compile with --target numpy"
                )
            else:
                shown = f"np.array({value.tolist()!r})"
            items.append(f"{name!r}: {shown}")
        return "{" + ", ".join(items) + "}"


# Elementwise, the interpreter's float rule: a value that decides a comparison rounds as in eval.
_EXACT = [
    "def _exact(rule, *args):",
    '    """rule (cgraph\'s on floats) on each element of args."""',
    "    return np.asarray(np.frompyfunc(rule, len(args), 1)(*args), dtype=float)[()]",
    "",
    "",
]
_EXACT_ROWS = [
    "def _exact(rule, *args):",
    '    """rule (cgraph\'s on floats) on each element of args; nan where it raises (the row',
    '    is flagged, and cgraph\'s interpreter says why)."""',
    "",
    "    def safe(*a):",
    "        try:",
    "            return rule(*a)",
    "        except (ValueError, ArithmeticError):",
    "            return math.nan",
    "",
    "    return np.asarray(np.frompyfunc(safe, len(args), 1)(*args), dtype=float)[()]",
    "",
    "",
]
# _arg's check of an input (as the interpreter refuses inf and nan), outside rows mode (where
# cgraph flags such rows itself).
_ARG_FINITE = [
    "    if not np.isfinite(x).all():",
    "        raise DomainError(f'an input is not finite ({x})')",
]
_JOINED = 4096  # results up to this size are joined into one array for one sum

_COMPARISONS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def _masks(graph: Graph) -> set[int]:
    """The comparisons read only as the condition of ``where``: NumPy takes their boolean
    arrays as they are (no conversion to 0.0 and 1.0 and back). Not the named ones: a name
    is a value the module returns."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for i, args in enumerate(graph.args):
        for k, a in enumerate(args):
            readers.setdefault(a, []).append((i, k))
    named = set(graph.names.values()) | {graph.output}
    return {
        i
        for i, op in enumerate(graph.ops)
        if op.name in _COMPARISONS
        and i not in named
        and readers.get(i)
        and all(graph.ops[j].name == "where" and k == 0 for j, k in readers[i])
    }


def _checked_source(checked: list[str], grad_body) -> list[str]:
    """The checked functions as a string the module compiles only when a result is not
    finite (compiled with the module, they doubled its compile time); none in rows mode."""
    if not checked:
        return []
    names = ["'forward': _forward_checked"]
    names += [] if grad_body is None else ["'grad': _grad_checked"]
    text = [*checked, f"_CHECKED.update({{{', '.join(names)}}})", ""]
    return [
        "_CHECKED: dict = {}",
        "_CHECKED_WHERE: dict = {}",
        f"_CHECKED_SOURCE = {chr(10).join(text)!r}",
    ]


def _given(graph: Graph, output: int, names: list[str] | None) -> set[int]:
    """The nodes whose values ``forward`` gives back: the output and every named one (those
    of ``names`` when given)."""
    named = graph.named_nodes()
    return {output, *(named.values() if names is None else (named[n] for n in names if n in named))}


def _returned(graph: Graph, output: int, rows: bool) -> list[int]:
    """The nodes forward returns and checks at its end: in rows mode the output alone (cgraph
    checks what it keeps), else every named value and input too."""
    return [output] if rows else [output, *graph.named_nodes().values()]


def _last_uses(graph: Graph) -> list[int]:
    """For each node, the last node that reads it (the output and named nodes: the end)."""
    end = len(graph.ops)
    last = last_readers(graph)
    for node in (graph.output, *graph.names.values(), *graph.inputs.values()):
        last[node] = end
    return last


def _guarded(body: list[str], numpy: bool, after: list[str]) -> list[str]:
    """``body`` in a try that turns an error into a DomainError naming the program's line,
    then the lines ``after`` it; with NumPy, all inside ``errstate``: a non-finite result is
    found at the end instead (by sums that may overflow: no warning)."""
    pad = "    " if numpy else ""
    body = body or ["    pass"]  # a program with no operation
    lines = [
        f"    {pad}try:",
        *(f"    {pad}{line}" for line in body),
        f"    {pad}except (ValueError, ArithmeticError) as e:",
        f"    {pad}    raise _domain(e) from None",
        *(f"{pad}{line}" for line in after),
    ]
    return ["    with np.errstate(all='ignore'):", *lines] if numpy else lines


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _with_callees(names: set[str]) -> list[str]:
    """``names`` and the helpers their source calls (np_max_pool2d calls np_windows), in the
    order of their names."""
    found, todo = set(names), list(names)
    while todo:
        source = inspect.getsource(getattr(runtime, todo.pop()))
        for callee in re.findall(r"\b(\w+)\(", source):
            if callee in _HELPERS and callee not in found:
                found.add(callee)
                todo.append(callee)
    return sorted(found)


def _helper_names() -> list[str]:
    return [n for n, f in vars(runtime).items() if inspect.isfunction(f)]


_HELPERS = set(_helper_names())


def _plain(name: str) -> bool:
    """Whether ``name`` can be a variable of the module as it is: an identifier Python keeps
    as written (NFKC would make ``ﬁ`` and ``fi`` one variable), not a keyword, and not a
    name the module's code reads (a builtin, ``np``, a helper such as ``relu``)."""
    import unicodedata

    return (
        name.isidentifier()
        and unicodedata.normalize("NFKC", name) == name
        and not keyword.iskeyword(name)
        and name not in _RESERVED
        and name not in _HELPERS
    )


def _identifier(name: str, taken: set[str]) -> str:
    """``name`` if it can be a variable as it is (:func:`_plain`), else a spelling of it in
    ASCII letters, digits and ``_`` (``lambda_``, ``v_x_bf0``): a valid identifier always;
    two names apart come from :func:`input_variables` and :func:`fresh`.

    >>> _identifier("lambda", set()), _identifier("relu", set()), _identifier("x\u0bf0", set())
    ('lambda_', 'relu_', 'v_x_bf0')
    """
    if _plain(name):
        return name
    if name.isidentifier() and name.isascii():
        return name + "_"
    return "v_" + "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else f"_{ord(c):x}" for c in name
    )


def input_variables(inputs) -> dict[str, str]:
    """Each input's variable in the module, no two alike: names that can be variables keep
    their spelling, the others get one of :func:`_identifier`'s, numbered past any taken.

    >>> input_variables(["lambda", "lambda_", "x"])
    {'lambda': 'lambda__1', 'lambda_': 'lambda_', 'x': 'x'}
    """
    taken = set(_RESERVED) | _HELPERS
    variables = {n: n for n in inputs if _plain(n)}
    taken |= set(variables.values())
    counts: dict[str, int] = {}
    for n in inputs:
        if n not in variables:
            variables[n] = fresh(_identifier(n, taken), taken, counts=counts)
    return {n: variables[n] for n in inputs}


def _fresh(name: str, taken: set[str], counts: dict[str, int]) -> str:
    """A variable for a node called ``name``: the name itself the first time, then
    ``name_1``, ``name_2``... (a reassigned name gets a new variable: single assignment)."""
    return fresh(_identifier(name, taken), taken, counts=counts)
