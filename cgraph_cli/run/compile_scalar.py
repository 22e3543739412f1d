"""The reverse pass of a program of numbers as Python lines, written straight from the op
table's float rules (no derivative graph, no shape inference, no optimizer): for
:func:`cgraph_cli.run.compile.compile_module`'s ``--target python``.

Each operation node, from the output down, passes its adjoint back to each argument that
needs one, its partial fused into the line (``g_1 = g * math.cos(v)``); the adjoints add up
in the order cgraph's interpreter adds them (:func:`cgraph_cli.run.vjp.vjp`), from the same
rule texts (:class:`~cgraph_cli.core.interpret.Source`), so the gradients are the
interpreter's to the bit. An adjoint lives in a temporary freed once its node has passed it
on; each input's gradient accumulates in its own variable as the pass goes. Constants and
arguments through which no input asked for is reached get no adjoint.

>>> from cgraph_cli import parse
>>> plan = reverse_plan(parse("y = sin(x) * x"), 2, ["x"])
>>> [(i, a, text) for i, a, text in plan.steps]
[(2, 1, '\\x01A1\\x01'), (2, 0, '\\x01A0\\x01'), (1, 0, '(math.cos(\\x01A0\\x01))')]
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..core.interpret import Source
from ..core.ir import Graph
from ..core.ops import INPUT
from .batch import absorbs

_SOURCE = Source()
_ARGS = tuple(f"\x01A{k}\x01" for k in range(8))
_OUT = "\x01O\x01"
_SLOT = re.compile("\x01(A\\d+|O)\x01")
_TEMPLATES: dict[tuple[str, int], str | float | None] = {}


class ReversePlan(NamedTuple):
    """What the reverse pass computes: ``steps``, ``(node, argument, partial)`` in the
    interpreter's order (the partial a template over the node's arguments and result, or a
    float); ``read``, the forward nodes whose values the partials read (they must stay in
    their variables); ``targets``, each input asked for by node."""

    steps: list[tuple[int, int, str | float]]
    read: set[int]
    targets: dict[int, str]
    out: int


def _template(op, k: int) -> str | float | None:
    """The partial of ``op`` with respect to its argument ``k`` as text over placeholders
    (a float when it is a constant), once per op and argument; None: no partial."""
    key = (op.name, k)
    if key not in _TEMPLATES:
        rule = op.partials[k] if op.partials else None
        if rule is None:
            _TEMPLATES[key] = None
        else:
            part = rule(_SOURCE, *_ARGS[: op.arity], _OUT)
            _TEMPLATES[key] = part if isinstance(part, str) else float(part)
    return _TEMPLATES[key]


def reverse_plan(graph: Graph, out: int, wrt: list[str]) -> ReversePlan | None:
    """The reverse pass of ``graph`` from node ``out`` to the inputs ``wrt``; None where it
    needs the derivative program instead (an op with a vector rule or no float rule, a
    derivative with respect to a named value rather than an input)."""
    ops, all_args = graph.ops, graph.args
    targets: dict[int, str] = {}
    for w in wrt:
        node = graph.inputs.get(w)
        if node is None:
            return None
        targets[node] = w
    # Which nodes lead to an input asked for, through ops that have derivatives.
    wanted = [False] * len(ops)
    for i, op in enumerate(ops):
        if op is INPUT:
            wanted[i] = i in targets
        elif op.arity and op.differentiable:
            wanted[i] = any(wanted[a] for a in all_args[i])
    has = [False] * len(ops)
    has[out] = True
    steps: list[tuple[int, int, str | float]] = []
    read: set[int] = set()
    for i in range(out, -1, -1):
        op = ops[i]
        if not has[i] or not op.arity or not op.differentiable:
            continue
        if op.vjp is not None or op.py is None or op.arity > len(_ARGS):
            return None
        args = all_args[i]
        for k, a in enumerate(args):
            if not wanted[a]:
                continue
            part = _template(op, k)
            if part is None:
                continue
            if isinstance(part, str):
                for slot in _SLOT.findall(part):
                    read.add(i if slot == "O" else args[int(slot[1:])])
            steps.append((i, a, part))
            has[a] = True
    return ReversePlan(steps, read, targets, out)


def _atom(text: str) -> str:
    """``text`` without its outer parentheses where they hold one name or call."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    inner = text[1:-1]
    head = re.match(r"[A-Za-z_][\w.]*", inner)
    if head is None:
        return text
    rest = inner[head.end() :]
    if not rest:
        return inner
    if not rest.startswith("("):
        return text
    depth = 0
    for k, c in enumerate(rest):
        depth += c == "("
        depth -= c == ")"
        if depth == 0:
            return inner if k == len(rest) - 1 else text
    return text


class _Adjoints:
    """The variables holding adjoints while the lines are written: a node's adjoint is a
    variable of its own, one it shares (``g`` passed on unchanged by ``+``), a forward value,
    a literal, or an expression its one reader inlines (``g * a`` in ``g * a * cos(v)``); a
    temporary goes back to the pool when no node holds it any more."""

    def __init__(self, fresh) -> None:
        self.fresh = fresh  # a new variable, from a name
        self.of: dict[int, str] = {}
        self.refs: dict[int, str] = {}  # the temporary each node's adjoint reads
        self.holders: dict[str, int] = {}
        self.pool: list[str] = []

    def take(self) -> str:
        var = self.pool.pop() if self.pool else self.fresh("g")
        self.holders[var] = 0
        return var

    def hold(self, node: int, text: str, var: str | None = None) -> None:
        """Node ``node``'s adjoint is ``text``, which reads temporary ``var`` (default: it
        is ``text``)."""
        self.of[node] = text
        var = text if var is None else var
        if var in self.holders:
            self.holders[var] += 1
            self.refs[node] = var

    def drop(self, node: int) -> None:
        self.of.pop(node, None)
        var = self.refs.pop(node, None)
        if var is not None:
            self.holders[var] -= 1
            if not self.holders[var]:
                del self.holders[var]
                self.pool.append(var)


def reverse_lines(plan: ReversePlan, graph: Graph, names: list[str], fresh, comment, base: str):
    """The reverse pass's lines, those of its copy that checks every value, and each input's
    gradient (a variable or ``0.0``), from ``plan``; ``names``: each forward node's variable
    or literal; ``fresh(name)``: a new variable; ``comment(i)``: node i's comment; ``base``:
    the output's name, for ``d<base>_d<input>``. An adjoint made by one contribution and
    read by one step is written into its reader's line (the same floats: ``g * a * cos(v)``
    is ``(g * a) * cos(v)``), but for the checked copy, which must stop at its node: there
    it has a line and a variable of its own (``h``). An adjoint's first line that cannot
    raise joins its next contribution where it can (:class:`_Joins`)."""
    from ..passes.derivatives import derivative_name

    adj = _Adjoints(fresh)
    own = {a: fresh(derivative_name(base, (w,))) for a, w in plan.targets.items()}
    ins: dict[int, int] = {}
    outs: dict[int, int] = {}
    for i, a, _ in plan.steps:
        ins[a] = ins.get(a, 0) + 1
        outs[i] = outs.get(i, 0) + 1
    spare: dict[int, str] = {}  # a written-in adjoint's variable in the checked copy
    alias: dict[int, str] = {}  # an input's gradient that is a forward value or a number
    pool: list[str] = []
    started: set[int] = set()
    lines: list[str | None] = []
    checked: list[str] = []
    joins = _Joins()
    adj.of[plan.out] = "1.0"
    if plan.out in own:  # the output is an input itself: its gradient is 1
        alias[plan.out] = "1.0"
        started.add(plan.out)
    current = -1
    for i, a, part in plan.steps:
        if i != current:
            if current >= 0:
                adj.drop(current)
            current = i
        g = adj.of[i]
        joins.read(g)
        c = _contribution(g, part, names, graph.args[i], i)
        plain, held = c, g
        if i in spare:  # its one step: the checked copy reads its variable
            held = spare[i]
            plain = _contribution(held, part, names, graph.args[i], i)
            pool.append(spare.pop(i))
        if isinstance(part, str) and not _literal(held):
            # The checked copy passes nothing back through a node whose adjoint is 0, as
            # the interpreter does (its partial may not be finite there: sqrt's at 0).
            plain = f"({plain} if {held} else 0.0)"
        note = comment(i)
        if a in own:  # an input's gradient, accumulated where it is made
            if a not in started and (_literal(c) or c.isidentifier() and c not in adj.holders):
                alias[a] = c  # a forward value or a number, so far: no line yet
                started.add(a)
                continue
            if a in alias:
                line = f"    {own[a]} = {alias.pop(a)} + {{}}{note}"
            else:
                line = f"    {own[a]} {'+=' if a in started else '='} {{}}{note}"
            started.add(a)
        elif a not in adj.of:
            if c.isidentifier() or _literal(c):
                # Passed on as it is (x + y), or a forward value (x * y): no line. A forward
                # variable the partials read is never reassigned (compile_module keeps it).
                adj.hold(a, c)
                continue
            if ins[a] == 1 and outs.get(a) == 1 and _inlined(c, g):
                adj.hold(a, c, g)  # read once, by a's one step: written into its line
                spare[a] = pool.pop() if pool else fresh("h")
                checked.append(f"    {spare[a]} = {plain}{note}")
                continue
            var = adj.take()
            line = f"    {var} = {{}}{note}"
            adj.hold(a, var)
            joins.first(var, len(lines), c)
        else:
            old = adj.of[a]
            if adj.holders.get(old) == 1:
                line = f"    {old} += {{}}{note}"
                first = joins.joined(old)
                joins.last[old] = len(lines)
                if first is not None:  # its first line moves here, joined to this one
                    lines[first[0]] = None
                    lines.append(f"    {old} = {first[1]} + {_operand(c)}{note}")
                    checked.append(line.replace("{}", plain, 1))
                    continue
            else:
                joins.read(old)
                adj.drop(a)
                var = adj.take()
                line = f"    {var} = {old} + {{}}{note}"
                adj.hold(a, var)
                joins.first(var, len(lines), f"{old} + {c}")
        lines.append(line.replace("{}", c, 1))
        checked.append(line.replace("{}", plain, 1))
    gradients = {
        w: alias.get(a, own[a]) if a in started else "0.0" for a, w in plan.targets.items()
    }
    return [line for line in lines if line is not None], checked, gradients


class _Joins:
    """The adjoint lines that wait to join their variable's next contribution
    (``g_1 = g * b + g * a * _math_cos(v)``, one line and the same floats in the same order,
    rather than ``g_1 = g * b`` and then ``g_1 += ...``). A first line waits while its
    expression cannot raise: sums, products and negations of variables and numbers, which
    on floats give inf rather than an error (found at the end), so it may move to a later
    line that keeps that line's comment. It waits no more once its variable is read (passed
    on to another node, whose steps read it), and it does not move past a line that assigns
    a variable it reads."""

    def __init__(self) -> None:
        self.waiting: dict[str, tuple[int, str]] = {}  # variable: (its first line, expression)
        self.last: dict[str, int] = {}  # the line each adjoint's variable was last assigned on

    def first(self, var: str, at: int, c: str) -> None:
        """Line ``at`` is ``var = c``, a new value of ``var``."""
        self.last[var] = at
        if _cannot_raise(c):
            self.waiting[var] = (at, c)
        else:
            self.waiting.pop(var, None)

    def read(self, text: str) -> None:
        """An adjoint's text is read: the variables in it wait no more."""
        if text.isidentifier():
            self.waiting.pop(text, None)
        elif not _literal(text):
            for v in _VARIABLE.findall(text):
                self.waiting.pop(v, None)

    def joined(self, var: str) -> tuple[int, str] | None:
        """``var``'s waiting first line and its expression, if it may move to the line
        written next (no variable it reads assigned since); it waits no more."""
        found = self.waiting.pop(var, None)
        if found is None:
            return None
        at, c = found
        last = self.last
        return None if any(last.get(v, -1) > at for v in _VARIABLE.findall(c)) else found


def _operand(c: str) -> str:
    """``c`` as the right operand of ``+``, parenthesized unless it is a product or a
    negation (the same floats: ``e + (h + k)`` is not ``(e + h) + k``)."""
    return c if " " not in c.replace(" * ", "") else f"({c})"


def _inlined(c: str, g: str) -> bool:
    """Whether contribution ``c`` (made from adjoint ``g``) may be written into the line
    that reads it: a product that cannot raise (an error must name its own node's line),
    of an adjoint that is not itself written into another."""
    return (g.isidentifier() or _literal(g)) and _cannot_raise(c)


def _cannot_raise(c: str) -> bool:
    """Whether expression ``c`` is sums, products and negations of variables and numbers:
    on floats it cannot raise (an overflow gives inf, found at the end), so it may be
    written into, or moved to, a line that keeps another node's comment."""
    return "(" not in c and "/" not in c and "**" not in c


_FORMATS: dict[tuple[str, int], str] = {}


def _format(part: str, arity: int) -> str:
    """A partial's template (:func:`_template`) as a format string over the arguments and
    then the result, its outer parentheses dropped where they hold one call; ``math.f``
    read from the local variable ``_math_f`` the module binds."""
    found = _FORMATS.get((part, arity))
    if found is None:
        text = _atom(part).replace("{", "{{").replace("}", "}}").replace("math.", "_math_")
        found = _SLOT.sub(lambda m: f"{{{arity if m[1] == 'O' else int(m[1][1:])}}}", text)
        _FORMATS[part, arity] = found
    return found


def _literal(text: str) -> bool:
    return text == "1.0" or text == "-1.0"


def _contribution(g: str, part, names: list[str], args, i: int) -> str:
    """``g`` times the partial, as the interpreter computes it (its partial, then times
    ``g``): a partial of 1 passes ``g`` on, -1 negates it, an adjoint of 1 is the partial."""
    if isinstance(part, float):
        if _literal(g):
            return repr(part * float(g))
        if part == 1.0:
            return g
        if part == -1.0:
            return f"-{g}" if g.isidentifier() else f"-({g})"
        return f"{g} * {part!r}"

    texts = [names[a] for a in args]
    texts.append(names[i])
    text = _format(part, len(args)).format(*[f"({t})" if t[0] == "-" else t for t in texts])
    if g == "-1.0":
        return f"-{text}" if text.isidentifier() else f"-({text})"
    return text if g == "1.0" else f"{g} * {text}"


#: The value rules that cannot raise on floats (an overflow gives inf, found at the end): a
#: temporary made by one of them may be written into the line that reads it.
_SAFE = {"{0} + {1}", "{0} - {1}", "{0} * {1}", "-{0}"}
_VARIABLE = re.compile(r"(?<![\w.])[^\W\d]\w*")
_DEPTH = 4  # temporaries written into one another, at most (Python's parser nests parentheses)


def fuse_forward(lines: list[str], records, graph: Graph, keep: set[int]) -> list[str]:
    """The forward ``lines`` (of :meth:`~cgraph_cli.run.compile_emit._Emitter.body`, whose
    ``records`` say which node each line computes, into which variable, by which
    expression) with each temporary that one later line reads, made by ``+``, ``-``, ``*``
    or negation, written into that line in parentheses: ``v_1 = (t * a) + (b * v)``, the
    same operations in the same order, at the level of the program's expressions. Not a
    value the reverse pass reads (``keep``), nor one whose variables are assigned again
    before its reader."""
    reads = [0] * len(graph.ops)
    for args in graph.args:
        for a in args:
            reads[a] += 1
    named = set(graph.named_nodes().values()) | {graph.output}
    fast: list[str | None] = list(lines)
    where: dict[int, tuple[int, str, str]] = {}  # node -> its line, variable, expression now
    pending: dict[int, tuple[str, frozenset, int]] = {}  # node -> (expression, reads, depth)
    readers: dict[str, set[int]] = {}  # variable -> pending nodes whose expression reads it
    reader = [-1] * len(graph.ops)
    for i, args in enumerate(graph.args):
        for a in args:
            reader[a] = i
    for i, at, var, expr in records:
        comment = lines[at][len(var) + len(expr) + 7 :]  # "    {var} = {expr}{comment}"
        depth = 0
        for a in dict.fromkeys(graph.args[i]):
            if a not in pending:
                continue
            text, _, d = pending.pop(a)
            spots = [m for m in _VARIABLE.finditer(expr) if m[0] == where[a][1]]
            if len(spots) != 1:
                continue
            expr = f"{expr[: spots[0].start()]}({text}){expr[spots[0].end() :]}"
            depth = max(depth, d + 1)
            fast[where[a][0]] = None
        for p in readers.pop(var, ()):  # assigned again: their expressions would read it
            pending.pop(p, None)
        where[i] = (at, var, expr)
        fast[at] = f"    {var} = {expr}{comment}"
        op = graph.ops[i]
        if (
            op.py in _SAFE
            and reads[i] == 1
            and i not in keep
            and i not in named
            and graph.labels[i] is None
            and depth < _DEPTH
            and not absorbs(graph.ops[reader[i]])  # its arguments are checked by name
            and not _stopped(lines, at, var)
        ):
            used = frozenset(_VARIABLE.findall(expr))
            pending[i] = (expr, used, depth)
            for v in used:
                readers.setdefault(v, set()).add(i)
    return [line for line in fast if line is not None]


def _stopped(lines: list[str], at: int, var: str) -> bool:
    """Whether the line after line ``at`` checks ``var`` by name (a value no result reads)."""
    return at + 1 < len(lines) and lines[at + 1].startswith(f"    if {var} - {var} ")
