"""Graph -> program text that parses back to the same graph.

The statements are written in program order; the nodes a statement created are written inline
with the fewest parentheses the precedence rules need, and earlier nodes by a name that still
refers to them. Strings are built in node order, so depth costs no recursion.

>>> from cgraph_cli import parse
>>> print(to_source(parse("input x = 1\\np = x+y\\ng = -p^2 * (z - 1)")), end="")
input x = 1
p = x + y
g = -p ^ 2 * (z - 1)
"""

from __future__ import annotations

from ..core.numfmt import format_number, is_tensor, nested
from ..core.ops import (
    CONST,
    INFIX,
    INPUT,
    POSTFIX,
    PREC_ATOM,
    PREC_COMPARE,
    PREC_SELECT,
    PREC_UNARY,
    PREFIX,
    OpSpec,
)
from ..core.walks import GraphLike, fresh, last_readers, show_subscript

Text = tuple[str, int]  # source text and its precedence (how tightly it binds)


def _definition(graph, name: str) -> str:
    """A function's definition as the program wrote it, and a blank line."""
    _, start, end = graph.functions[name]
    return graph.source.text[start:end] + "\n"


def _headings(graph):
    """For a derivative program of a program with functions (``memo["headings"]``: each
    statement's call, by the statement's name): a function that writes a comment naming the
    call (``# ∂ layer(h, W2, b2)``) where the statements move into another call's code; None
    for any other graph."""
    headings = graph.memo.get("headings")
    if not headings:
        return None
    last = [""]

    def heading(name: str, lines: list[str]) -> None:
        label = headings.get(name, "")
        if label != last[0]:
            lines.append(f"# {label}" if label else "# the program")
            last[0] = label

    return heading


def to_source(graph: GraphLike) -> str:
    """Program text for ``graph``, statement by statement; it parses back to the same graph.

    >>> from cgraph_cli import parse
    >>> print(to_source(parse("g = (x+y)*  z")), end="")
    g = (x + y) * z
    """
    if getattr(getattr(graph, "control", None), "loops", None):
        from ..core.errors import UsageError

        raise UsageError(
            "to_source writes straight-line programs and their if/else, not loops: a loop's "
            "body is one block of the static graph, read again at every step",
            hints=["a parsed program's own text: graph.source.text; or run_graph(graph, b)"],
        )
    exprs: list[Text] = [("", PREC_ATOM)] * len(graph.ops)
    scope: dict[str, int] = {}  # name -> node it refers to at this point of the program
    names_of: dict[int, list[str]] = {}  # node -> the names given to it, first first

    def ref(node: int, last: bool = False) -> Text:
        """The first name still in scope for ``node`` (the last one for a statement that
        only aliases it: ``b = a`` is written as the program wrote it), else its expression."""
        names = names_of.get(node, ())
        for name in reversed(names) if last else names:
            if scope.get(name) == node:
                return name, PREC_ATOM
        return exprs[node]

    lines = [_definition(graph, name) for name in getattr(graph, "functions", {})]
    done = 0  # nodes written so far
    last, says = _last_reads(graph)
    taken = {*graph.stmt_names, *graph.inputs}
    # Names given more than once: a text written inline that says one goes stale when the
    # name is given again, and is written again (`mentions`: per node, which it says).
    counts: dict[str, int] = {}
    for _, name, _, _ in graph.statements():
        counts[name] = counts.get(name, 0) + 1
    rebound = {n for n, c in counts.items() if c > 1 or (n in graph.inputs and c > 0)}
    mentions: list[frozenset] = [frozenset()] * len(graph.ops)
    saying: dict[str, dict[int, None]] = {}  # name -> nodes whose text says it (since given)
    kept: dict[str, int] = {}  # where the numbering of kept names (t_0, t_1...) got to
    own_stale: set[int] = set()  # nodes whose text says the name they took (t = t * 2)
    read_last = _last_readers(graph) if rebound else []

    calls = {  # a program's own calls (a derived program has no functions: it is inlined)
        grp.output: grp
        for grp in getattr(graph, "groups", ())
        if grp.parent < 0 and grp.kind == "call" and getattr(graph, "functions", None)
    }

    # Where no text is ever written again (no name given twice, none taken from an input, no
    # call written as a call), the text of a node written into its last reader is let go: a
    # sum of 4,000 terms written inline keeps its own text, not all 4,000 partial sums' (the
    # gradient of x * ... * x, 4,000 factors: 129 MB at once here, now 2).
    let_go = None
    if not rebound and not last and not calls:
        let_go = last_readers(graph)
        for _, _, node, _ in graph.statements():
            let_go[node] = -1  # a statement's own text: read when its line is written

    def write(i: int) -> None:
        exprs[i] = _node_text(graph, i, ref, exprs)
        if let_go is not None:
            for a in graph.args[i]:
                if let_go[a] == i:
                    exprs[a] = _GONE
        grp = calls.get(i)
        if grp is not None and grp.lo <= i:  # a call of a function, written as the call
            exprs[i] = f"{grp.name}({', '.join(ref(a)[0] for a in grp.args)})", PREC_ATOM
        if rebound:
            said: set = set()
            for a in graph.args[i]:
                text = ref(a)[0]
                said |= {text} & rebound if scope.get(text) == a else mentions[a]
            if graph.ops[i] is INPUT and graph.labels[i] in rebound:
                said.add(graph.labels[i])
            mentions[i] = frozenset(said)
            for n in said:
                saying.setdefault(n, {})[i] = None

    heading = _headings(graph)
    for kind, name, node, end in graph.statements():
        if heading is not None:
            heading(name, lines)
        for i in range(done, end):
            write(i)
            label = graph.labels[i]
            if graph.ops[i] is INPUT and label is not None:  # an input's own name is its first
                if scope.get(label, i) == i:  # unless a statement gave it away already
                    scope[label] = i
                names_of.setdefault(i, [label])
        shadowed = graph.inputs.get(name)
        shadows = (
            kind == "="
            and shadowed is not None
            and shadowed != node
            and scope.get(name, shadowed) == shadowed
        )
        rewrite: list[int] = []
        if shadows and shadowed is not None:
            if last.get(shadowed, -1) >= end and not any(
                scope.get(n) == shadowed for n in names_of.get(shadowed, ()) if n != name
            ):
                # The input is read after this statement gives its name to another value:
                # keep a name for it first (x_0 = x), so that later statements can say it.
                alias = fresh(f"{name}_0", taken)
                lines.append(f"{alias} = {name}")
                scope[alias] = shadowed
                names_of.setdefault(shadowed, [name]).append(alias)
                rebound.add(alias)  # texts saying it are followed: see the input's name below
            rewrite = [j for j in range(end) if shadowed in says[j]]  # texts saying the input
        text = exprs[node][0] if node >= done else ref(node, last=True)[0]
        done = end
        given = scope.get(name, -1)  # the value the name leaves, if any
        if (
            given >= 0
            and given != node
            and graph.ops[given] is INPUT
            and last.get(given, -1) >= end
            and not any(scope.get(n) == given for n in names_of.get(given, ()) if n != name)
        ):  # an input's last name in scope (x = z, then z and x both given again), read later
            alias = fresh(f"{graph.labels[given]}_0", taken)
            lines.append(f"{alias} = {name}")
            scope[alias] = given
            names_of.setdefault(given, []).append(alias)
            rebound.add(alias)
        pending: dict[int, None] = {}
        needed = False
        if given >= 0 and given != node and graph.ops[given].arity:
            if name in rebound:
                pending = saying.pop(name, {})
            needed = any(read_last[j] >= end for j in pending if j != node)
            needed |= given in own_stale and read_last[given] >= end
            if node in pending and not needed:  # it says the name it takes: good while it has it
                own_stale.add(node)
                pending = {}
        elif given >= 0 and given != node and name in rebound:
            pending = saying.pop(name, {})
        if needed:
            # A text still to be read says the name for the value it leaves: keep a name for
            # that value first (t_0 = t) and write those texts again with it, all of them in
            # order (a stale text is written from its arguments' texts). Once they say a name
            # that is never given again, each is written again at most once per name.
            if not any(scope.get(n) == given for n in names_of.get(given, ()) if n != name):
                alias = fresh(name, taken, first=0, counts=kept)
                lines.append(f"{alias} = {name}")
                scope[alias] = given
                names_of.setdefault(given, [name]).append(alias)
            rewrite = sorted({*rewrite, *pending})
        elif pending:  # texts saying the name: written again, in order (a text read later
            # is written from its arguments' texts, which say the name too)
            rewrite = sorted({*rewrite, *pending})
        if kind == "input":
            default = graph.defaults.get(name)
            lines.append(f"input {name}" + ("" if default is None else f" = {literal(default)}"))
        elif kind == "bare":
            lines.append(text)
        else:
            lines.append(f"{name} = {text}")
        scope[name] = node
        names_of.setdefault(node, []).append(name)
        if graph.ops[node] is INPUT and graph.labels[node] == name:
            # An input given its own name back (y = y_0): texts still to be read that say
            # it by the name that kept it meanwhile say its own name again, as the program
            # read back will (so that writing it again changes nothing).
            for n in names_of[node]:
                if n != name:
                    rewrite = sorted({*rewrite, *saying.pop(n, {})})
        for j in rewrite:
            if graph.ops[j] is not INPUT:
                write(j)
    return "\n".join(lines) + "\n"


def _last_reads(graph: GraphLike) -> tuple[dict[int, int], list[frozenset]]:
    """For each input whose name a statement gives to another value: the last node whose
    text may say the input's name (it reads the input, or an expression written inline that
    does); a statement that only names the input reads it at the end of its nodes."""
    inputs = graph.inputs
    taken = {
        inputs[name]
        for kind, name, node, _ in graph.statements()
        if kind == "=" and name in inputs and node != inputs[name]
    }
    last: dict[int, int] = {}
    says: list[frozenset] = []  # per node: the inputs of `taken` its text may say
    if not taken:
        return last, says
    empty: frozenset = frozenset()
    for i, args in enumerate(graph.args):
        here = empty.union(*(says[a] for a in args)) if args else empty
        if i in taken:
            here = frozenset((i,))
        for a in args:
            for j in says[a]:
                last[j] = i
        says.append(here)
    for kind, _, node, end in graph.statements():
        if kind != "input":
            for j in says[node]:
                last[j] = max(last.get(j, -1), end)
    return last, says


def _last_readers(graph: GraphLike) -> list[int]:
    """For each node, the last node that reads it, or the end of the last statement that
    names it without making it (``b = a``; -1: nothing reads it)."""
    last = last_readers(graph)
    start = 0
    for _, _, node, end in graph.statements():
        if node < start:
            last[node] = max(last[node], end)
        start = end
    return last


def expression(graph: GraphLike, node: int, limit: int = 24) -> str:
    """Node ``node``'s expression as program text, other named nodes by their names; past
    ``limit`` nodes deep, an argument is written ``…`` (a report line stays short however deep
    the graph is). Without recursion.

    >>> from cgraph_cli import parse
    >>> g = parse("p = x + y; g = p * sin(z) ^ 2")
    >>> expression(g, g.output), expression(g, 2)
    ('p * sin(z) ^ 2', 'x + y')
    """
    texts = _Unwritten()
    order: list[int] = []
    stack = [node]
    while stack and len(order) < limit:
        i = stack.pop()
        if i in texts:
            continue
        texts[i] = ("…", PREC_ATOM)  # until written below
        order.append(i)
        if i == node or graph.labels[i] is None or graph.ops[i] is CONST:
            stack.extend(graph.args[i])
    for i in sorted(order):  # node numbers are a topological order
        label = graph.labels[i]
        if i != node and label is not None and graph.ops[i] is not CONST:
            texts[i] = (label, PREC_ATOM)
        else:
            texts[i] = _node_text(graph, i, texts.__getitem__, texts)
    return texts[node][0]


_GONE: Text = ("", PREC_ATOM)  # a text let go (see to_source)


class _Unwritten(dict):
    """Texts by node; a node not written (past the depth limit) reads as ``…``."""

    def __missing__(self, node: int) -> Text:
        return ("…", PREC_ATOM)


def _node_text(graph: GraphLike, i: int, ref, exprs) -> Text:
    op = graph.ops[i]
    if op is INPUT:
        return graph.labels[i] or "", PREC_ATOM  # an input always has its name
    if op is CONST:
        value = graph.consts[i]
        if is_tensor(value):
            return literal(value), PREC_ATOM
        return format_number(value), PREC_UNARY if value < 0 else PREC_ATOM
    args = [ref(a) for a in graph.args[i]]
    if op.name == "where" and _is_conditional(graph, i):  # a if c else b, as written
        (a, pa), (c, pc), (b, _) = args[1], args[0], args[2]
        a, c = (f"({t})" if p <= PREC_SELECT else t for t, p in ((a, pa), (c, pc)))
        return f"{a} if {c} else {b}", PREC_SELECT
    first = graph.args[i][0]
    if op.style == PREFIX and graph.ops[first] is CONST and args[0] == exprs[first]:
        args = [(f"({args[0][0]})", PREC_ATOM)]  # -3 would read back as one constant
    return combine(op, args, params=graph.params.get(i, ()))


def _is_conditional(graph: GraphLike, i: int) -> bool:
    """Whether select node ``i`` is the program's ``a if c else b`` (the static graph's
    conditional, or a compiled one's, marked) rather than ``where(c, a, b)``."""
    control = getattr(graph, "control", None)
    return i in getattr(control, "conds", ()) or graph.params.get(i) == ("if",)


def literal(value) -> str:
    """A number or an array as program text: ``-3``, ``[[1, 2], [3, 4]]``."""
    return nested(value) if is_tensor(value) else format_number(value)


def _param(value, what: str = "") -> str:
    if what == "indices":  # place(g, [4], 1:3): the index as written in brackets, without them
        return ", ".join(show_subscript(k) for k in value)
    return "[" + ", ".join(map(str, value)) + "]" if isinstance(value, tuple) else str(value)


def combine(op: OpSpec, args: list[Text], symbol: str | None = None, params: tuple = ()) -> Text:
    """The text of ``op`` applied to argument texts, parenthesized as the grammar needs.
    ``symbol`` replaces the operator's source symbol (``op.glyph`` for display); ``params`` are
    the numbers written after a call's arguments (``sum(x, 0)``) or an index's subscripts.

    >>> from cgraph_cli.core.ops import OPS
    >>> combine(OPS["sub"], [("a", 5), ("b - c", 1)])
    ('a - (b - c)', 1)
    >>> combine(OPS["index"], [("a + b", 1)], params=((0, slice(1, None)),))
    ('(a + b)[0, 1:]', 5)
    """
    if op.style == POSTFIX:
        ((arg, ap),) = args
        items = ", ".join(show_subscript(k) for k in params[0])
        return (arg if ap >= PREC_ATOM else f"({arg})") + f"[{items}]", PREC_ATOM
    if op.style == INFIX:
        (left, lp), (right, rp) = args
        p = op.precedence
        # Parenthesize whatever the parser would group differently: an equal precedence on the
        # right of a left-associative op, or on the left of a right-associative one.
        if lp < p or (lp == p and (op.right_assoc or p == PREC_COMPARE)):
            left = f"({left})"  # comparisons do not chain: (a < b) < c
        if (rp < p or (rp == p and not op.right_assoc)) and not (
            op.right_assoc and rp == PREC_UNARY
        ):
            right = f"({right})"  # but 2 ^ -1 needs none
        return f"{left} {symbol or op.symbol} {right}", p
    if op.style == PREFIX:
        ((arg, ap),) = args
        p = op.precedence  # -x, and not x
        return (symbol or op.symbol) + (arg if ap >= p else f"({arg})"), p
    texts = [a for a, _ in args] + [_param(p, w) for p, w in zip(params, op.params)]
    return f"{op.symbol}({', '.join(texts)})", PREC_ATOM
