"""The emitter of a compiled module's code: the lines of a graph's nodes for one target (``python``
over ``math``, ``numpy`` over arrays), named after the program's names, each with a comment
pointing back to its source line, watched where the interpreter would stop; see
:mod:`cgraph_cli.run.compile` for the module it writes."""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Mapping

from ..core.errors import UsageError, visible
from ..core.interpret import Source
from ..core.ir import MASK, Graph
from ..core.ops import CONST, INPUT
from ..core.walks import fresh
from ..passes.guards import IF
from .batch import (
    absorbs,
    decisive,
    hidden,
    into_work_array,
    private_nodes,
    ufunc_form,
    unread,
    unread_inputs,
    watch_line,
    work_arrays,
)
from .compile_ifs import COMPARISONS as _COMPARISONS
from .compile_ifs import conditionals, grouped, statement_nodes
from .compile_names import _HELPERS, _RESERVED, _fresh, _identifier
from .compile_nodes import comparison_masks, last_uses, masked_only, unwatched_inputs
from .compile_shapes import Shape, Shaped

SOURCE = Source()  # the op table's rules written as Python expressions
_HELPER = re.compile(r"\brt\.(\w+)")
_MATH = re.compile(r"\bmath\.(\w+)")  # bound to a local variable each: _math_sin
_LOCAL = re.compile(r"\b_math_(\w+)")
_MATH_NAMES = set(dir(math))


class _Emitter(Shaped):
    """Writes the lines of a graph's nodes for one target."""

    def __init__(self, target: str, text: str, known: dict | None = None, rows=False) -> None:
        self.target = target
        self.rows = rows  # watch the arguments of ops that absorb what is not finite
        # Every op elementwise on numbers: rows of inputs broadcast through the code as they
        # are (else a batch runs one row at a time).
        self.vector = False
        self.kinks = False  # forward also lists the kink quantities (rows mode)
        self.work = False  # some value computed into a work array (rows of numbers)
        self.dest = False  # some result computed into an array the caller gives
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
        # True: body() also writes its checked copy's lines (each value checked, masks
        # applied) into checked_lines, which the checked copies are (no checks to insert);
        # "masks": the masks applied alone (a loop module's steps back run again).
        self.checking: bool | str = False
        self.checked_lines: list[str] = []
        self.variables: dict[str, str] = {}  # each input's variable: input_variables()
        # The program's statements by name (a derivative program names more): those run in
        # any case, whatever the conditionals choose (None: every named value).
        self.statements: set[str] | None = None
        # Values returned but computed only where their guard holds (None elsewhere).
        self.optional: set[int] = set()
        self.unread: set[str] = set()  # inputs that no op of a function's body reads
        # NumPy outside rows mode, no if/else: a watched value is summed with the results at
        # the end instead of stopped at (see compile_checks.finite_lines); ``deferred``: the
        # last body's, each (variable, shape).
        self.defer = False
        # cgraph's own engine (not rows): an input of another shape than compiled for, or
        # with a batch axis, is refused with a TypeError (in a module written out: refused
        # with a ValueError, or run row by row).
        self.strict = False
        self.deferred: list[tuple[str, Shape]] = []
        self.deferred_by: dict[str, list[tuple[str, Shape]]] = {}  # by function
        # Where each line starts, for a node's line number by bisection.
        self.lines = [0] + [m.end() for m in re.finditer(r"\r\n?|\n", text)]

    def body(
        self,
        graph: Graph,
        keep: set[int] | None = None,
        returned: list[int] | None = None,
        kinks: bool = False,
        escapes: set[int] | None = None,
        results: Mapping[int, str] | None = None,
    ) -> tuple[list[str], list[str]]:
        """The lines computing every operation node of ``graph``, and each node's variable
        (inputs are the function's arguments; constants are written in place). A node the
        program names gets its own variable (``v``, ``v_1``...); a temporary takes the
        variable of one that is dead by then, unless it is in ``keep``. A node that no
        ``returned`` node reads is watched too (the interpreter checks every value). Rows
        of numbers, with ``escapes`` (the nodes the function gives back): the values no one
        else sees are computed into work arrays kept for the next call (:func:`work_arrays`),
        and a named one's variable, once dead, is taken again as a temporary's; a node of
        ``results`` (the key the function gives its value back under) is computed into the
        array the caller gives for that key, if any (see :data:`~.batch.DEST`)."""
        dead = unread(graph, returned) if returned is not None else set()
        if not self.rows:  # inputs summed with the results (see finite)
            self.unread.update(unwatched_inputs(graph, self.variables))
        self.stopped: set[int] = set()  # nodes a line stops at already (watched)
        conditions = comparison_masks(graph)
        exact = decisive(graph) if self.vector else set()  # by the interpreter's float rule
        templates = {
            i: self.node_template(graph, i, op, i in exact, i in conditions)
            for i, op in enumerate(graph.ops)
            if op is not INPUT and op is not CONST
        }
        last = last_uses(graph)
        work: set[int] = set()  # rows of numbers: values computed into kept work arrays
        given: dict[int, str] = {}  # rows of numbers: results computed into arrays given
        if escapes is not None and self.rows and self.vector and not kinks:
            last, private = private_nodes(graph, escapes)
            work = work_arrays(graph, templates, private)
            self.work = self.work or bool(work)
            given = {
                i: k
                for i, k in (results or {}).items()
                if i in templates and ufunc_form(templates[i]) is not None
            }
            self.dest = self.dest or bool(given)
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
        needed = [r for r in returned or () if r not in self.optional]
        guards, laid, (selects, tested) = conditionals(graph, needed, self.statements)
        if guards is not None:
            last = last_uses(graph, laid)
            # a statement a select reads (a branch) is not seen by a result where the select
            # takes the other: checked where it is made, as one no result reads
            dead |= {
                i for i in statement_nodes(graph, self.statements) if i not in (returned or ())
            }
        names = [""] * len(graph.ops)
        spans: dict[int, tuple[int, int]] = {}  # each node's lines (conditionals)
        defer = self.defer and guards is None and self.known is not None
        self.deferred, alive = [], set()  # (watched values summed at the end, their nodes)
        checking = self.checking and not self.rows
        masked = masked_only(graph, returned) if checking else set()
        checked: list[str] = []  # the checked copy's lines, one for each of lines

        def add(line: str, instead: str | None = None) -> None:
            lines.append(line)
            if checking:
                checked.append(line if instead is None else instead)

        for i in laid:
            op = graph.ops[i]
            if op is INPUT:
                names[i] = variables[graph.labels[i] or ""]
                continue
            if op is CONST:
                names[i] = self.literal(graph.consts[i])
                continue
            first = len(lines)
            template = self.local(templates[i])
            args = [names[a] for a in graph.args[i]]
            params = [repr(p) for p in graph.params.get(i, ())]
            params += ["None"] * (len(op.params) - len(params))  # an optional one not given
            expr = template.format(*args, *params)
            if "rt." in expr:
                self.helpers.update(_HELPER.findall(expr))
                expr = _HELPER.sub(r"\1", expr)
            mask = graph.params.get(i) == MASK  # where(g, c, 0): c (the checked copy masks it)
            watch = (
                []
                if self.rows or not absorbs(op) or i in selects or mask
                else self.watched(graph, i)
            )
            known = [self.shape_of(graph, a) for a in watch] if defer else []
            if defer and None not in known:  # summed at the end: their variables live until then
                alive.update(watch)
                self.deferred += [(names[a], shape) for a, shape in zip(watch, known)]
            else:  # stops at its node (the checked copy: not at one only a mask reads)
                for a in watch:
                    stop = self.stop(names[a], self.comment(graph, a))
                    add(stop, "" if a in masked else None)  # ("": no line)
            for a in set(graph.args[i]):  # arguments read for the last time: their variables
                if last[a] == i and names[a] in temporary and (keep is None or a not in keep):
                    if a not in alive:
                        free.append(names[a])
            if kinks and op.kink is not None:  # which smooth piece: for gradcheck's steps
                where = op.kink(SOURCE, *(names[a] for a in graph.args[i]))
                add(f"    _kinks.append({where if isinstance(where, str) else float(where)})")
            if self.rows and absorbs(op):  # before the line: its variable may be an argument's
                for a in hidden(graph, i):
                    add(watch_line(names[a], self.vector))
            label = graph.labels[i]
            value = names[graph.args[i][1]] if mask else ""
            if mask and label is None and value in free and (keep is None or i not in keep):
                var = value  # c's own variable: no line, but in the checked copy (see below)
                free.remove(value)
            elif (label is None or i in work) and free and (keep is None or i not in keep):
                var = free.pop()
            else:
                var = _fresh(label or "t", taken, counts)
                if label is None or i in work:
                    temporary.add(var)
            names[i] = var
            if i in work:  # into the work array of its variable (per row), or a new number
                expr = into_work_array(graph, i, template, var, names)
            elif i in given:  # into the caller's array for it (per row), or a new one
                expr = into_work_array(graph, i, template, var, names, given[i])
            self.records.append((i, len(lines), var, expr))
            comment = self.comment(graph, i)
            line = "" if mask and var == expr else f"    {var} = {expr}" + comment
            if not checking or i in masked:  # (a value only a mask reads: where g is 0, none)
                add(line, self.unraised(op, var, args, comment) if i in masked else None)
            else:  # the checked copy stops at every other value that is not finite
                if mask:  # as the interpreter: nothing passed back where the adjoint is 0
                    expr = self.masked(*args)
                check = f"; _check({var})" if self.checking is True else ""
                add(line, f"    {var} = {expr}{check}" + comment)
            if i in dead and self.rows:
                add(watch_line(var, self.vector))
            elif i in dead or (i in tested and i not in self.stopped):
                # a statement no result reads, or a condition (the interpreter checks it
                # before it takes a branch)
                add(self.stop(var, self.comment(graph, i)), "" if i in masked else None)
                self.stopped.add(i)
            spans[i] = (first, len(lines))
        if guards is not None:
            holds = "{0}" if self.target != "numpy" else "np_holds({0})"
            if self.target == "numpy":
                self.helpers.add("np_holds")
            if checking:
                checked = grouped(graph, checked, spans, laid, guards, names, self.optional, holds)
            lines = grouped(graph, lines, spans, laid, guards, names, self.optional, holds)
        self.checked_lines = [line for line in checked if line.strip()]  # ("": no line)
        return [line for line in lines if line.strip()], names

    def unraised(self, op, var: str, args: list[str], comment: str) -> str | None:
        """The checked copy's line for a value only masks read, where its fast line may
        raise: NumPy's ``/`` of two numbers (Python floats: ``x / 0`` raises where an array's
        gives inf) as ``np.divide``, whose value the mask drops where the adjoint is 0."""
        if self.target != "numpy" or op.name != "div":
            return None
        return f"    {var} = np.divide({args[0]}, {args[1]})" + comment

    def masked(self, g: str, c: str, zero: str) -> str:
        """A masked contribution (``where(g, c, 0)`` marked :data:`MASK`) in the checked copy:
        ``c``, 0 where the adjoint ``g`` is 0 (elementwise for NumPy)."""
        if self.target == "numpy":
            return f"np.where({g}, {c}, {zero})"
        return f"({c} if {g} else {zero})"

    def node_template(self, graph: Graph, i: int, op, exact: bool, mask: bool) -> str:
        """Node ``i``'s template: its op's, specialised where shapes are known, by the float
        rule (``exact``), as a boolean ``mask`` (read by ``where`` only), or a square."""
        if graph.params.get(i) == MASK:  # c itself in the fast lines (see body)
            return "{1}"
        if graph.params.get(i) == IF:  # a conditional: the branch taken alone computed
            if self.target != "numpy":
                return "({1} if {0} else {2})"
            from ..passes.rewrite import only_shape

            shape = only_shape(self.shapes(graph)[i]) if self.known is not None else None
            chosen = "({1} if rt.np_holds({0}) else {2})"  # the shape the static graph gives it:
            return f"np.broadcast_to({chosen}, {shape!r})" if shape else chosen  # (0 + tensor)
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

    def watched(self, graph: Graph, i: int) -> list[int]:
        """The arguments of node ``i`` to stop at where they are not finite (each once):
        ``i`` could turn such a value into a finite one (``where``, ``1 / inf``, ``tanh``),
        where the interpreter stops at the node that made it."""
        found = []
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
            found.append(a)
        return found

    def exact_template(self, op) -> str:
        """A template that applies ``op``'s float rule (the interpreter's, on numbers) to each
        element, through ``_exact``: the same rounding as ``eval``."""
        self.exact_rule = True
        a = [f"a{k}" for k in range(op.arity)]
        rule = f"lambda {', '.join(a)}: {op.py.format(*a)}"
        return f"_exact({rule}, {', '.join(f'{{{k}}}' for k in range(op.arity))})"

    def stop(self, v: str, comment: str) -> str:
        """The line that stops where variable ``v`` is not finite; ``comment`` says where."""
        test = f"not np.isfinite({v}).all()" if self.target == "numpy" else f"{v} - {v} != 0.0"
        return f"    if {test}: raise FloatingPointError('the value is not finite')" + comment

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
