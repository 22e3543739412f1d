"""Parser callbacks that build the graph IR as the LALR parser reduces.

One method per grammar alias; each receives the list of its rule's children (tokens, and what
inner callbacks returned). Expressions return ``(node, start, end)`` so that spans reach the
nodes without a parse tree. This module does not import lark.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ..core.arrays import frozen
from ..core.errors import CgraphError, ParseError, Source, Span, shorten
from ..core.ir import ASSIGNMENT, Graph, GraphBuilder
from ..core.ops import CONST, FUNCTIONS, LIST_PARAMS, OPS, OpSpec
from .messages import END, START, TEXT

MAX_AXES = 64  # NumPy's limit on a tensor's axes
_AUGMENTED = {"+=": OPS["add"], "-=": OPS["sub"], "*=": OPS["mul"], "/=": OPS["div"]}


def _binary(op_name: str):
    op = OPS[op_name]

    def build(self, children):
        # GraphBuilder.add, inlined: this runs for most nodes of a long program.
        a, _, b = children
        start, end = a[1], b[2]
        g = self.b.graph
        node = len(g.ops)
        g.ops.append(op)
        g.args.append((a[0], b[0]))
        g.labels.append(None)
        g.starts.append(start)
        g.ends.append(end)
        return node, start, end

    build.op = op  # type: ignore[attr-defined]  # the driver's compiled plans inline it
    return build


class Literal(NamedTuple):
    """An array literal as read: nested lists of floats, its shape and its span."""

    rows: list
    shape: tuple[int, ...]
    start: int
    end: int


def _fits(op: OpSpec, given: int) -> bool:
    """Whether ``op`` takes ``given`` arguments (an index takes as many as it needs)."""
    if op.params and op.params[-1] == "indices":
        return given >= op.arity + len(op.params)
    return op.arity + op.required <= given <= op.arity + len(op.params)


def _count_args(op: OpSpec) -> str:
    if not op.params:
        return f"{op.arity} argument{'' if op.arity == 1 else 's'}"
    extra = " and ".join(op.params[: op.required])
    optional = " and ".join(op.params[op.required :])
    return (
        f"{op.arity} argument"
        + (f" and its {extra}" if extra else "")
        + (f" and an optional {optional}" if optional else "")
    )


class Function(NamedTuple):
    """A function of the program: its name, parameters, the span of its header, and its
    body (the indices of its first statement and of the one after its last)."""

    name: str
    params: tuple[str, ...]
    start: int
    end: int
    body: tuple[int, int]


class Frame:
    """A call being read: the function, its group, the loops open outside it, the node its
    ``return`` gave (-1 until then), the nodes of its arguments."""

    __slots__ = ("function", "group", "loops", "returned", "bound")

    def __init__(self, function: Function, group: int, loops: int, bound: set[int]) -> None:
        self.function, self.group, self.loops, self.returned = function, group, loops, -1
        self.bound = bound  # the nodes its parameters stand for


class Reader:
    """Parser callbacks, one per grammar alias, each given the list of its rule's children
    (tokens, and the results of inner callbacks). :meth:`begin` resets the state per parse."""

    def begin(self, source: Source, tracer=None) -> None:
        """Start a parse. Without a ``tracer`` the reader builds the static graph: both sides of
        a conditional, a loop's body once. With one (a :class:`cgraph_cli.run.control.Tracer`,
        which knows the bindings) it builds the graph that runs: only the branch taken, the
        loop unrolled, each step's names suffixed with the step (``h_1``, ``h_2``)."""
        self.b = GraphBuilder(source)
        self.tracer: Any = tracer
        self.flow: Any = (
            None  # the static structure (cgraph_cli.core.ir_control.Static), once needed
        )
        # The loops being read, outermost first: [var, step, header, group, the var's value
        # before the loop].
        self.loops: list = []
        self.steps: dict[str, int] = {}  # a loop variable -> its step now (the run only)
        self.suffix = ""  # _step added to every name assigned in a loop's body (the run only)
        self.header: Any = None  # the loop header just read, for the driver
        self.scope: dict[str, int] = {}  # name -> the node it refers to now
        self.text = source.text
        self.output = -1
        self.output_label = ""
        self.bare_span: Span | None = (
            None  # a bare expression seen; legal only as the last statement
        )
        self.declared: set[str] = set()  # names given by `input` statements
        self.functions: dict[str, Function] = {}  # the functions defined so far
        self.frames: list[Frame] = []  # the calls being read, innermost last
        self.groups: list[list] = []  # per call: the fields of a Group, hi and output last
        self.calls: dict[str, int] = {}  # a function -> its calls so far
        self.open: list[int] = []  # the groups open now (calls, loop steps), innermost last
        self.loop_numbers: dict[int, int] = {}  # a loop header's start -> for#N's N
        self.defining: Function | None = None  # a header just read, for the driver
        self.run_body: Any = None  # the driver's: run statements lo to hi
        # The run: each `a if c else b` read and not yet decided (its select node -> the
        # spans and the loop steps now), decided from the statement's top (_decided).
        self.pending: dict[int, tuple] = {}

    def _error(self, message: str, start: int, end: int, **kw) -> ParseError:
        return ParseError(message, Span(start, end), self.b.graph.source, **kw)

    def _statement(self) -> None:
        if self.bare_span is not None and self.frames and self.frames[-1].returned >= 0:
            raise self._error(
                "nothing may follow `return`: it ends the function's body",
                *self.bare_span,
                hints=["move the statements after it above it"],
            )
        if self.bare_span is not None:
            raise self._error(
                "this value is computed and then lost: only the last statement may be a bare "
                "expression",
                *self.bare_span,
                hints=["name it (NAME = ...) to keep it, or delete it"],
            )

    # expressions -----------------------------------------------------------------------------
    def number(self, children):
        tok = children[0]
        value = float(tok[TEXT])
        if value == float("inf"):
            raise self._error(
                f"the number {shorten(tok[TEXT])} is too large for a float64",
                tok[START],
                tok[END],
            )
        return self.b.const(value, tok[START], tok[END]), tok[START], tok[END]

    def _read(self, name: str, start: int, end: int) -> int:
        """The node ``name`` refers to now; a name never assigned before becomes an input."""
        node = self.scope.get(name)
        if node is None:
            if self.frames:
                raise self._outer(name, start, end)
            node = self.scope[name] = self.b.input(name, start, end)
        if self.flow is not None and self.tracer is None and not self.frames:
            self.flow.read(name, node)
        return node

    def _outer(self, name: str, start: int, end: int) -> ParseError:
        fn = self.frames[-1].function
        return self._error(
            f"'{name}' is not a parameter of {fn.name} nor assigned in it: a function reads "
            "only its parameters and its own names",
            start,
            end,
            hints=[f"pass it in: def {fn.name}({', '.join([*fn.params, name])})"],
        )

    def _assign(self, name: str, node: int) -> None:
        self.b.name(node, name)
        self.scope[name] = node

    def _name(self, tok) -> str:
        """A NAME token's text, refused if it holds a look-alike of an ASCII character
        (fullwidth ``ｘ``, ``x²``); letters of any script are names, in their composed form."""
        text = tok[TEXT]
        if text.isascii():
            return text
        import unicodedata

        from .lookalike import check_name

        why = check_name(unicodedata.normalize("NFC", text))
        if why is not None:
            raise self._error(f"'{text}' is not a valid name", tok[START], tok[END], hints=[why])
        return unicodedata.normalize("NFC", text)

    def name(self, children):
        _, text, start, end = children[0]
        if not text.isascii():
            text = self._name(children[0])
        node = self.scope.get(text)
        if node is None:
            if text in self.steps:  # a loop variable, read in the graph that runs: a number
                node = self.scope[text] = self.b.const(float(self.steps[text]), start, end)
            elif text in self.functions:
                raise self._error(
                    f"'{text}' is a function of the program, not a value",
                    start,
                    end,
                    hints=[f"call it: {text}({', '.join(self.functions[text].params)})"],
                )
            elif self.frames:
                raise self._outer(text, start, end)
            else:
                node = self.scope[text] = self.b.input(text, start, end)
        if self.flow is not None and self.tracer is None and not self.frames:
            self.flow.read(text, node)
        return node, start, end

    add = _binary("add")
    sub = _binary("sub")
    mul = _binary("mul")
    div = _binary("div")
    pow = _binary("pow")
    lt = _binary("lt")
    le = _binary("le")
    gt = _binary("gt")
    ge = _binary("ge")
    eq = _binary("eq")
    ne = _binary("ne")
    matmul = _binary("matmul")
    logical_and = _binary("logical_and")
    logical_or = _binary("logical_or")

    def logical_not(self, children):
        tok, e = children
        return self.b.add(OPS["logical_not"], (e[0],), tok[START], e[2]), tok[START], e[2]

    def cond(self, children):
        """``a if c else b``: in the static graph a select node, ``where(c, a, b)``, over both
        branches; in the graph that runs, only the branch the condition picks (so the other is
        never evaluated), and the condition becomes a guard."""
        a, _, c, _, b = children
        start, end = a[1], b[2]
        if self.tracer is None:
            node = self.b.add(OPS["where"], (c[0], a[0], b[0]), start, end)
            self._flow().conds[node] = (c[1], c[2])
            return node, start, end
        # Decided when the statement is read whole, from its top (a condition inside a
        # branch not taken is never computed): a select node until then.
        at = ", ".join(f"{var} = {step}" for var, step, *_ in self.loops)
        node = self.b.add(OPS["where"], (c[0], a[0], b[0]), start, end)
        self.pending[node] = ((c[1], c[2]), ((a[1], a[2]), (b[1], b[2])), at)
        return node, start, end

    def _decided(self, root: int) -> int:
        """The run: ``root`` (a statement's node) with each conditional under it decided from
        the top, outermost first, its condition computed before either branch, and only the
        branch taken read on (so a condition inside a branch not taken is never computed); a
        node above a decided one is made again over it. Without recursion: a stack."""
        if not self.pending or self.frames:
            return root
        g, pending = self.b.graph, self.pending
        lo = min(pending)
        made: dict[int, int] = {}
        stack = [(root, 0)]
        while stack:
            n, state = stack.pop()
            if n in made and state == 0:
                continue
            if n < lo:
                made[n] = n
            elif n in pending:
                c, a, b = g.args[n]
                if state == 0:
                    stack += [(n, 1), (c, 0)]
                elif state == 1:
                    span, branches, at = pending[n]
                    holds = self.tracer.condition(g, made[c], span, branches, at)
                    stack += [(n, 2 if holds else 3), (a if holds else b, 0)]
                else:
                    made[n] = made[a if state == 2 else b]
            elif state == 0:
                stack.append((n, 1))
                stack += [(x, 0) for x in reversed(g.args[n]) if x not in made]
            else:
                args = tuple(made[x] for x in g.args[n])
                made[n] = (
                    n
                    if args == g.args[n]
                    else self.b.add(g.ops[n], args, g.starts[n], g.ends[n], g.params.get(n, ()))
                )
        self.pending = {}
        return made[root]

    def _flow(self):
        if self.flow is None:
            from ..core.ir_control import Static

            self.flow = Static()
        return self.flow

    def array(self, children):
        lsqb, rsqb = children[0], children[-1]
        items = [c for c in children[1:-1] if c.__class__ is float or c.__class__ is Literal]
        start, end = lsqb[START], rsqb[END]
        if not items:
            raise self._error("an array literal needs at least one number", start, end)
        shapes = {() if isinstance(i, float) else i.shape for i in items}
        if len(shapes) > 1:
            raise self._error(
                "the rows of an array literal must all have the same shape",
                start,
                end,
                hints=["every row needs as many numbers as the others: [[1, 2], [3, 4]]"],
            )
        shape = (len(items), *shapes.pop())
        if len(shape) > MAX_AXES:
            raise self._error(
                f"an array literal has at most {MAX_AXES} axes (NumPy's limit); this one has more",
                start,
                end,
            )
        rows = [i if isinstance(i, float) else i.rows for i in items]
        if not all(math.isfinite(x) for x in _flat(rows)):
            raise self._error("a number in this array is too large for a float64", start, end)
        return Literal(rows, shape, start, end)

    def literal(self, children):
        lit = children[0]
        return self.b.const(_to_array(lit.rows), lit.start, lit.end), lit.start, lit.end

    def slice(self, children):
        parts: list[int | None] = [None]
        for c in children:
            if c.__class__ is float:
                parts[-1] = self._whole(c, children)
            else:
                parts.append(None)
        if len(parts) == 3 and parts[2] == 0:
            raise self._error("a slice's step cannot be 0", *self._where(children))
        return slice(*parts)

    def _where(self, children) -> tuple[int, int]:
        toks = [c for c in children if _is_token(c)]
        return (toks[0][START], toks[-1][END]) if toks else (0, 0)

    def _whole(self, number: float, children) -> int:
        if not number.is_integer():
            raise self._error(f"an index is a whole number, got {number:g}", *self._where(children))
        return int(number)

    def index(self, children):
        e, lsqb, rest = children[0], children[1], children[2:]
        subscripts = [c for c in rest if _is_subscript(c)]
        items = tuple(self._subscript_value(c, lsqb, rest[-1]) for c in subscripts)
        end = rest[-1][END]
        if self.steps:  # a loop variable as an index, as the program runs: check it now
            for axis, c in enumerate(subscripts):
                if _is_token(c) and c[0] == "NAME":
                    self.tracer.check_index(self.b.graph, e[0], axis, c, items[axis])
        node = self.b.add(OPS["index"], (e[0],), e[1], end)
        self.b.graph.params[node] = (items,)
        return node, e[1], end

    def _subscript_value(self, c, lsqb, rsqb):
        if c.__class__ is float:
            return self._whole(c, [lsqb, rsqb])
        return c if c.__class__ is slice else self._step_index(c)

    def _step_index(self, tok) -> int | str:
        """An index written as a name: a loop's variable; its step in the graph that runs, the
        name itself in the static graph."""
        name = tok[1]
        if name in self.steps:
            return self.steps[name]
        if self.tracer is None and any(loop[0] == name for loop in self.loops):
            return name
        raise self._error(
            f"'{name}' is not a loop variable: an index is a whole number or a loop's variable",
            tok[START],
            tok[END],
            hints=["for example: x[0], or xs[t] in the body of `for t in range(len(xs)):`"],
        )

    def neg(self, children):
        minus, e = children
        graph = self.b.graph
        node = e[0]
        # A minus sign written on a literal is part of the number: -3 is one constant node, not
        # neg(3). Not so for -(3) or -c where c names a constant.
        if graph.ops[node] is CONST and graph.starts[node] == e[1] and graph.ends[node] == e[2]:
            graph.consts[node] = frozen(-graph.consts[node])
            graph.starts[node] = minus[START]
            return node, minus[START], e[2]
        return self.b.add(OPS["neg"], (node,), minus[START], e[2]), minus[START], e[2]

    def pos(self, children):
        plus, e = children
        return e[0], plus[START], e[2]

    def group(self, children):
        lpar, e, rpar = children
        return e[0], lpar[START], rpar[END]

    def call(self, children):
        name, rest = children[0], children[1:]
        self._name(name)
        given: list = [r for r in rest if r.__class__ is slice or not _is_token(r)]
        start, end = name[START], rest[-1][END]
        fn = self.functions.get(name[TEXT])
        if fn is not None:
            return self._call(fn, given, start, end)
        overloads = FUNCTIONS.get(name[TEXT])
        if overloads is None:
            import difflib

            close = difflib.get_close_matches(name[TEXT], list(FUNCTIONS), n=1)
            hints = [f"did you mean '{close[0]}'?"] if close else []
            if self.frames:
                hints.append("a function calls only the functions defined above it")
            hints.append("functions: " + ", ".join(sorted([*FUNCTIONS, *self.functions])))
            raise self._error(f"unknown function '{name[TEXT]}'", start, name[END], hints=hints)
        ranked = sorted(overloads.values(), key=lambda o: o.arity)
        op = next((o for o in ranked if _fits(o, len(given))), None)
        if op is None:
            if all(not o.params for o in ranked) and len(ranked) > 1:
                counts = " or ".join(str(o.arity) for o in ranked) + " arguments"
            else:
                counts = " or ".join(_count_args(o) for o in ranked)
            examples = " or ".join(o.example for o in ranked)
            raise self._error(
                f"{name[TEXT]} takes {counts}, got {len(given)}",
                start,
                end,
                hints=[f"write it as {examples}"],
            )
        if any(e.__class__ is slice for e in given[: op.arity]):
            raise self._error(
                f"a slice is written only where {op.symbol} takes an index",
                start,
                end,
                hints=[f"write it as {op.example}"],
            )
        # Backwards, so that each number taken back off the graph is the last node added.
        taken = [self._param(op, k, given[k]) for k in range(len(given) - 1, op.arity - 1, -1)]
        taken.reverse()
        if op.params and op.params[-1] == "indices":  # the rest of the arguments: one index
            fixed = len(op.params) - 1
            taken = [*taken[:fixed], tuple(taken[fixed:])]
        params = tuple(taken)
        node = self.b.add(op, tuple(e[0] for e in given[: op.arity]), start, end)
        if params:
            self.b.graph.params[node] = params
        return node, start, end

    def _param(self, op: OpSpec, k: int, e):
        """The number written as argument ``k`` of a call to ``op`` (an axis, a shape, an
        index's whole number or slice)."""
        what = op.params[min(k - op.arity, len(op.params) - 1)]
        if e.__class__ is slice:
            if what == "indices":
                return e
            raise self._error(f"the {what} of {op.symbol} cannot be a slice", 0, 0)
        # (a parameter of the function being read stands for its argument: not a number here)
        bound = self.frames[-1].bound if self.frames else {}
        value = None if e[0] in bound else self.b.pop_const(e[0])
        if value is not None and what in LIST_PARAMS:
            shape = [value] if value.__class__ is float else value.tolist()
            if isinstance(shape, list) and all(
                isinstance(n, float) and n.is_integer() for n in shape
            ):
                return tuple(int(n) for n in shape)
        elif value.__class__ is float and value.is_integer():
            return int(value)
        example = LIST_PARAMS.get(what, "0")
        raise self._error(
            f"the {what} of {op.symbol} must be written as "
            + ("whole numbers" if what in LIST_PARAMS else "a whole number")
            + " in the program",
            e[1],
            e[2],
            hints=[
                f"for example: {op.symbol}(x, {example})"
                if op.arity == 1 and k == op.arity
                else f"for example: {example}"
            ],
        )

    # statements ------------------------------------------------------------------------------
    def assign(self, children):
        tok, _, e = children
        if self.bare_span is not None:
            self._statement()
        name = tok[1]
        if not name.isascii():
            name = self._name(tok)
        node = self._decided(e[0]) if self.pending else e[0]
        if self.functions and name in self.functions:
            raise self._error(
                f"'{name}' names a function of the program: a value needs another name",
                tok[START],
                tok[END],
            )
        self.scope[name] = node
        if self.frames:  # a function's own name: local to the call, no statement
            return
        if self.suffix:  # in a loop's body, as it runs: the step's own name
            self._in_step(name, node)
            name += self.suffix
        # GraphBuilder.name and .statement, inlined: one assignment per statement.
        g = self.b.graph
        if g.labels[node] is None:
            g.labels[node] = name
        g.names[name] = node
        g.stmt_kinds.append(ASSIGNMENT)
        g.stmt_names.append(name)
        g.stmt_nodes.extend((node, len(g.ops)))
        self.output, self.output_label = node, name

    def augassign(self, children):
        tok, op, e = children
        self._statement()
        name = self._name(tok)
        left = self._read(name, tok[START], tok[END])
        right = self._decided(e[0]) if self.pending else e[0]
        node = self.b.add(_AUGMENTED[op[TEXT]], (left, right), tok[START], e[2])
        self.scope[name] = node
        if self.frames:
            return
        if self.suffix:
            self._in_step(name, node)
            name += self.suffix
        self._assign(name, node)
        self.b.statement("=", name, node)
        self.output, self.output_label = node, name

    def bare(self, children):
        e = children[0]
        self._statement()
        if self.pending and not self.frames:
            e = (self._decided(e[0]), e[1], e[2])
        if self.frames:
            raise self._error(
                "this value is computed and then lost: a function's body assigns names and "
                "ends with `return`",
                e[1],
                e[2],
                hints=["name it (NAME = ...), or return it: return EXPR"],
            )
        self.output = e[0]
        # The expression's text, on one line: without comments or line continuations.
        text = self.text[e[1] : e[2]].replace("\\\n", " ")
        self.output_label = " ".join(line.split("#")[0] for line in text.splitlines()).strip()
        self.output_label = " ".join(self.output_label.split())
        self.bare_span = Span(e[1], e[2])
        self.b.statement("bare", self.output_label, e[0])

    def input_item(self, children):
        default = children[2] if len(children) > 1 else None
        if default.__class__ is Literal:
            default = _to_array(default.rows)
        return children[0], default

    def signed_number(self, toks):
        value = float(toks[-1][TEXT])
        return -value if len(toks) == 2 else value

    def declare(self, children):
        items = children[1:]
        self._statement()
        if self.frames:
            raise self._error(
                "inputs are declared at the program's top level, not in a function",
                children[0][START],
                children[0][END],
                hints=["declare it at the top and pass it to the function as a parameter"],
            )
        if self.loops:
            raise self._error(
                "inputs are declared outside loops",
                children[0][START],
                children[0][END],
                hints=["move the `input` statement above the loop"],
            )
        graph = self.b.graph
        for item in items:
            if _is_token(item):
                continue  # a comma
            tok, default = item
            where = (tok[START], tok[END])
            name = self._name(tok)
            if name in self.declared:
                raise self._error(f"input '{name}' is declared twice", *where)
            if name in self.scope and name not in graph.inputs:
                raise self._error(
                    f"'{name}' is already computed by the program, so it cannot be an input",
                    *where,
                    hints=["declare inputs before the statements that assign them"],
                )
            if default.__class__ is float and default in (float("inf"), float("-inf")):
                raise self._error(f"the default of '{name}' is too large", *where)
            node = self._read(name, *where)
            if default is not None:
                graph.defaults[name] = frozen(default)
            self.b.statement("input", name, node)
            self.declared.add(name)

    # loops -------------------------------------------------------------------------------
    def loop_bound(self, children):
        """``range``'s argument: a whole number (an int), or ``(what, name token, axis,
        start, end)`` for ``len(xs)``, ``shape(x, k)`` and ``n`` (what: "value")."""
        if len(children) == 1 and children[0][0] == "NAME":  # range(n): n's value
            tok = children[0]
            return "value", tok, 0, tok[START], tok[END]
        if len(children) == 1:
            tok = children[0]
            value = float(tok[TEXT])
            if not value.is_integer():
                raise self._error(
                    f"a loop's number of steps is a whole number, got {tok[TEXT]}",
                    tok[START],
                    tok[END],
                )
            return int(value)
        fn, _, arg = children[0], children[1], children[2]
        axis = children[4] if len(children) > 4 else None
        end = children[-1][END]
        if fn[TEXT] not in ("len", "shape") or (fn[TEXT] == "len") != (axis is None):
            raise self._error(
                "a loop's number of steps is a whole number, len(NAME) or shape(NAME, AXIS)",
                fn[START],
                end,
                hints=["for example: for t in range(len(xs)):"],
            )
        if axis is not None and not axis.is_integer():
            raise self._error(f"an axis is a whole number, got {axis:g}", fn[START], end)
        return fn[TEXT], arg, 0 if axis is None else int(axis), fn[START], end

    def loop(self, children):
        """A loop's header: the driver reads the body below it (see driver.py)."""
        var, bound, colon = children[1], children[5], children[7]
        self._statement()
        name = self._name(var)
        if any(loop[0] == name for loop in self.loops):
            raise self._error(
                f"'{name}' is already the variable of an enclosing loop",
                var[START],
                var[END],
            )
        self.header = (name, bound, children[0][START], colon[END])

    def enter_loop(self) -> int:
        """Begin the loop whose header was just read; the number of times to read its body:
        its steps as the program runs, once for the static graph."""
        name, bound, start, end = self.header
        self.header = None
        read = None if isinstance(bound, int) else self._read(bound[1][1], *bound[1][2:4])
        prior = self.scope.get(name)  # what the name holds again after the loop
        if self.tracer is None:
            flow = self._flow()
            flow.begin_loop(self, name, bound, start, end, read)
            self.loops.append([name, 0, (start, end), -1, prior])
            # The variable, in the static graph: a placeholder named after it (not an input:
            # the loop gives it its values).
            var = self.scope[name] = self.b.const(0.0, start, end)
            self.b.graph.labels[var] = name
            return 1
        header = " ".join(self.text[start:end].rstrip(":").split())
        n = self.tracer.trip_count(self.b.graph, bound, read, self.text, header, (start, end))
        self.loops.append([name, 0, (start, end), -1, prior])
        return n

    def begin_step(self, step: int) -> None:
        loop = self.loops[-1]
        loop[1] = step
        if self.tracer is not None:
            header = " ".join(self.text[loop[2][0] : loop[2][1]].rstrip(":").split())
            self.tracer.check_size(self.b.graph, loop[2], header)
            self.steps[loop[0]] = step
            self.scope.pop(loop[0], None)  # read again as this step's number
            self.suffix = "".join(f"_{lp[1] + 1}" for lp in self.loops)
            self._close_step(loop)
            start, end = loop[2]
            number = self.loop_numbers.setdefault(start, len(self.loop_numbers) + 1)
            loop[3] = self._open_group(
                "step", "for", number, header, start, end, (), f"{loop[0]}={step}"
            )

    def end_loop(self) -> None:
        """End the loop being read: its variable is the loop's own, so after it the name
        holds what it held before (nothing: a name never assigned)."""
        loop = self.loops.pop()
        name, prior = loop[0], loop[4]
        if self.tracer is None:
            self.flow.end_loop(self)
        else:
            self._close_step(loop)
            self.steps.pop(name, None)
            self.suffix = "".join(f"_{lp[1] + 1}" for lp in self.loops)
        if prior is None:
            self.scope.pop(name, None)
        else:
            self.scope[name] = prior

    def _in_step(self, name: str, node: int) -> None:
        self.tracer.assigned(name, node)

    # functions ---------------------------------------------------------------------------
    def params(self, children):
        return [c for c in children if c[0] == "NAME"]

    def define(self, children):
        """A function's header: the driver hands its body to :meth:`define_body`."""
        self._statement()
        head, tok = children[0], children[1]
        given = children[3] if len(children) == 6 else []
        name = self._name(tok)
        where = (head[START], children[-1][END])
        if self.frames or self.loops:
            raise self._error(
                "a function is defined at the program's top level",
                *where,
                hints=["move the definition out of the loop or function"],
            )
        if name in FUNCTIONS:
            raise self._error(
                f"'{name}' is a built-in function: a function of the program needs another name",
                tok[START],
                tok[END],
            )
        if name in self.functions:
            raise self._error(f"function '{name}' is defined twice", tok[START], tok[END])
        if name in self.scope:
            raise self._error(
                f"'{name}' already names a value of the program: a function needs another name",
                tok[START],
                tok[END],
            )
        params: list[str] = []
        for p in given:
            text = self._name(p)
            if text in params:
                raise self._error(f"parameter '{text}' is named twice", p[START], p[END])
            params.append(text)
        self.defining = Function(name, tuple(params), where[0], where[1], (0, 0))

    def define_body(self, lo: int, hi: int, end: int) -> None:
        """The body of the function whose header was just read: statements ``lo`` to ``hi``
        of the program, whose text ends at ``end``. It is read once here, on placeholders for the parameters, so that a
        mistake in it is found though the function is never called; the nodes are dropped."""
        assert self.defining is not None, "a function's header comes before its body"
        fn = self.defining._replace(body=(lo, hi))
        self.defining = None
        g = self.b.graph
        mark = (len(g.ops), len(self.flow.loops) if self.flow else 0)
        tracer, self.tracer = self.tracer, None
        calls = dict(self.calls)
        self.functions[fn.name] = fn  # so that a call of itself is found to be one
        try:
            bound = {}
            for p in fn.params:
                bound[p] = self.b.const(0.0, fn.start, fn.end)
                g.labels[bound[p]] = p
            self._run(fn, bound, fn.start, fn.end)
        except BaseException:
            del self.functions[fn.name]
            raise
        finally:
            self.tracer, self.calls = tracer, calls
            self._rollback(*mark)
        g.functions[fn.name] = (fn.params, fn.start, end)

    def _rollback(self, nodes: int, loops: int) -> None:
        """Forget the nodes from ``nodes`` on (a function's body read for its check)."""
        g = self.b.graph
        for column in (g.ops, g.args, g.labels):
            del column[nodes:]
        del g.starts[nodes:], g.ends[nodes:]
        for table in (g.consts, g.params):
            for k in [k for k in table if k >= nodes]:
                del table[k]
        del self.groups[sum(1 for grp in self.groups if grp[9] < nodes) :]
        if self.flow is not None:
            del self.flow.loops[loops:]
            for k in [k for k in self.flow.conds if k >= nodes]:
                del self.flow.conds[k]

    def ret(self, children):
        tok, e = children
        self._statement()
        if not self.frames:
            raise self._error("`return` is written only in a function's body", tok[START], e[2])
        frame = self.frames[-1]
        if len(self.loops) > frame.loops:
            raise self._error(
                "`return` ends a function's body: it is written outside the function's loops",
                tok[START],
                e[2],
            )
        frame.returned = e[0]
        self.bare_span = Span(tok[START], e[2])

    def _call(self, fn: Function, given: list, start: int, end: int):
        """A call of a function of the program: its body, read with the arguments in place
        of the parameters; a :class:`~cgraph_cli.core.groups.Group` records what it made."""
        if len(given) != len(fn.params) or any(e.__class__ is slice for e in given):
            raise self._error(
                f"{fn.name} takes {len(fn.params)} argument{'s' * (len(fn.params) != 1)}, "
                f"got {len(given)}",
                start,
                end,
                hints=[f"write it as {fn.name}({', '.join(fn.params)})"],
            )
        if any(frame.function.name == fn.name for frame in self.frames):
            cycle = " -> ".join([*(f.function.name for f in self.frames), fn.name])
            raise self._error(
                f"{fn.name} calls itself ({cycle}): a graph is finite, so a function cannot "
                "be recursive",
                start,
                end,
                hints=["write the repetition as a loop: for t in range(n):"],
            )
        index = self.calls[fn.name] = self.calls.get(fn.name, 0) + 1
        label = " ".join(self.text[start:end].split())
        args = tuple(e[0] for e in given)
        k = self._open_group("call", fn.name, index, label, start, end, args)
        bound = dict(zip(fn.params, args))
        try:
            node = self._run(fn, bound, start, end, k)
        except CgraphError as e:  # met in the body as this call reads it: say which call
            if e.span is not None and not (start <= e.span.start < end):
                from ..core.errors import line_col

                line, col = line_col(self.text, start)
                e.message += f" in {label} called at {self.b.graph.source.filename}:{line}:{col}"
                e.args = (e.message,)
            raise
        finally:
            self.open.pop()
        self.groups[k][8], self.groups[k][10] = node, len(self.b.graph.ops)
        return node, start, end

    def _open_group(self, kind, name, index, label, start, end, args=(), step="") -> int:
        """Record a group (a call, or a loop's step as it runs) opening at the next node."""
        k = len(self.groups)
        parent = self.open[-1] if self.open else -1
        lo = len(self.b.graph.ops)
        self.groups.append([kind, name, index, parent, label, start, end, args, -1, lo, -1, step])
        self.open.append(k)
        return k

    def _close_step(self, loop: list) -> None:
        """Close the group of ``loop``'s step now ending: its last statement gives its value."""
        k = loop[3]
        if k >= 0:
            self.groups[k][8], self.groups[k][10] = self.output, len(self.b.graph.ops)
            self.open.remove(k)
            loop[3] = -1

    def _run(self, fn: Function, bound: dict, start: int, end: int, group: int = -1) -> int:
        """Read ``fn``'s body in a scope of its own; the node it returns."""
        saved = (self.scope, self.loops, self.steps, self.suffix, self.bare_span)
        self.scope, self.loops, self.steps, self.suffix, self.bare_span = bound, [], {}, "", None
        frame = Frame(fn, group, 0, set(bound.values()))
        self.frames.append(frame)
        try:
            self.run_body(*fn.body)
        finally:
            self.frames.pop()
            self.scope, self.loops, self.steps, self.suffix, self.bare_span = saved
        if frame.returned < 0:
            raise self._error(
                f"function '{fn.name}' has no `return`: its body ends with return EXPR",
                fn.start,
                fn.end,
            )
        return frame.returned

    def start(self, _statements) -> Graph:
        if self.output < 0:
            what = "has no statements" if not self.b.graph.ops else "computes nothing"
            raise self._error(
                f"the program {what}",
                0,
                0,
                hints=["write an expression, for example: g = (x + y) * z"],
            )
        graph = self.b.finish(self.output, self.output_label)
        graph.control = self.flow
        if self.groups:
            from ..core.groups import Group

            graph.groups = [Group(*f[:7], tuple(f[7]), *f[8:]) for f in self.groups]  # type: ignore[call-arg]
        return graph


def _is_subscript(c) -> bool:
    """Whether an index's child is a subscript (a number, a slice or a name), not a bracket
    or a comma."""
    return c.__class__ is float or c.__class__ is slice or (_is_token(c) and c[0] == "NAME")


def _is_token(c) -> bool:
    """Whether a rule's child is a token ``(kind, text, start, end)`` rather than what a
    callback made (an expression's ``(node, start, end)``, a number, a slice...)."""
    return c.__class__ is tuple and len(c) == 4 and c[0].__class__ is str


def _flat(rows: list):
    stack = [rows]
    while stack:
        for x in stack.pop():
            if x.__class__ is list:
                stack.append(x)
            else:
                yield x


def _to_array(rows: list):
    from ..core.arrays import np

    return np.array(rows, dtype=float)
