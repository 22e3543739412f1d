"""What the driver's compiled statement plans do themselves instead of calling the reader
(:meth:`cgraph_cli.parse.driver.Driver._compile`): the lines of Python for the callbacks most
statements make most calls to. Each does exactly what its callback would, or calls it; a
test holds compiled plans to the recorded actions replayed (tests/test_scanner.py).
"""

from __future__ import annotations

from ..core.ir import ASSIGNMENT
from .reader import Reader

#: The names a plan's code binds first (from :func:`bound`, made once a parse): the graph's
#: lists and their appends are the same objects for the whole parse. (Not the scope: a
#: call's body is read in a scope of its own, which a plan then reads from the reader.)
BOUND = "ops, labels, gnames, add_op, add_args, add_label, add_start, add_end, " + (
    "add_kind, add_name, add_nodes"
)


def bound(reader: Reader) -> tuple:
    """What the names of :data:`BOUND` stand for in a parse by ``reader``.

    >>> from cgraph_cli.core.errors import Source
    >>> reader = Reader()
    >>> reader.begin(Source("y = x"))
    >>> len(bound(reader)) == len(BOUND.split(", "))
    True
    """
    g = reader.b.graph
    return (
        *(g.ops, g.labels, g.names),
        *(g.ops.append, g.args.append, g.labels.append, g.starts.append, g.ends.append),
        *(g.stmt_kinds.append, g.stmt_names.append, g.stmt_nodes.extend),
    )


#: A plan's line reading what the inlined callbacks check of the reader, at its start (what
#: :func:`state` gives, inline) and again after each callback it calls (:data:`REFRESH`):
#: nothing else changes it.
STATE = (
    "flat = R.flow is None; plain = R.bare_span is None and not "
    "(R.functions or R.frames or R.suffix or R.pending); scope = R.scope; get = scope.get"
)
REFRESH = "flat, plain = state(R); scope = R.scope; get = scope.get"
#: The callbacks that change nothing :data:`STATE` reads (they read names and build nodes;
#: a conditional, a call and the statements' callbacks may): no :data:`REFRESH` after them.
_KEEPING = {
    *(Reader.number, Reader.name, Reader.logical_not, Reader.array, Reader.literal),
    *(Reader.slice, Reader.index, Reader.neg, Reader.pos, Reader.group),
}


def keeps_state(callback) -> bool:
    """Whether ``callback`` (a reader's bound method) leaves what :data:`STATE` reads as it
    was: the expressions' callbacks but a conditional's and a call's.

    >>> reader = Reader()
    >>> keeps_state(reader.number), keeps_state(reader.mul), keeps_state(reader.call)
    (True, True, False)
    """
    func = getattr(callback, "__func__", None)
    return func in _KEEPING or getattr(func, "op", None) is not None


def state(reader: Reader) -> tuple[bool, bool]:
    """Whether a name read needs no more than the scope (no static graph's loops to record it
    in), and whether an assignment needs no more than its bookkeeping (not in a function,
    nor a loop's run, nor after a bare expression or a conditional of the run not yet
    decided).

    >>> from cgraph_cli.core.errors import Source
    >>> reader = Reader()
    >>> reader.begin(Source("y = x"))
    >>> state(reader)
    (True, True)
    >>> reader.pending[3] = ()
    >>> exec(STATE, names := {"R": reader}); (names["flat"], names["plain"]) == state(reader)
    True
    """
    flat = reader.flow is None
    return flat, reader.bare_span is None and not (
        reader.functions or reader.frames or reader.suffix or reader.pending
    )


def inlined(callback, a: int, children: list[str], k: int, names: dict):
    """What ``callback`` does to ``children`` (the plan's variables), as lines of a plan
    (which reads :data:`STATE` first),
    and where they leave the result, for the callbacks most statements make most calls to: a name already in scope (as :meth:`Reader.name` finds it: any other goes to
    the callback), a binary operator (all that ``reader._binary`` does), and an assignment
    where the reader has nothing else to check (as :meth:`Reader.assign`). An expression's
    node, start and end are left in three variables (``@k``), not a tuple. None for the
    others: the plan calls them. Names made here end in ``k`` (the body's length), so they
    never meet another's."""
    func = getattr(callback, "__func__", None)
    if func is Reader.name:  # the scope's names are NFC and passed the reader's checks, so
        (t,) = children  # a name found as written is the one the callback would find (but a
        # static graph's loops record each read: Static.read, there the callback's to do)
        return f"@{k}", [
            f"x{k} = {t}[1]; n{k} = get(x{k}) if flat else None",
            f"if n{k} is None: n{k}, s{k}, e{k} = c{a}([{t}])",
            f"else: s{k} = {t}[2]; e{k} = {t}[3]",
        ]
    if func is Reader.assign:  # NAME = expr, outside functions, loops' runs, conditionals of
        # the run not yet decided and after a bare
        tok, _, e = children  # expression: the reader's statement bookkeeping, inlined
        names["ASSIGNMENT"] = ASSIGNMENT
        return f"r{k}", [
            f"x{k} = {tok}[1]; n{k} = {part(e, 0)}; r{k} = None",
            f"if not plain or not x{k}.isascii():",
            f"    c{a}([{', '.join(map(whole, children))}]); {REFRESH}",
            "else:",
            f"    scope[x{k}] = n{k}",
            f"    if labels[n{k}] is None: labels[n{k}] = x{k}",
            f"    gnames[x{k}] = n{k}; add_kind(ASSIGNMENT)",
            f"    add_name(x{k}); add_nodes((n{k}, len(ops)))",
            f"    R.output = n{k}; R.output_label = x{k}",
        ]
    op = getattr(func, "op", None)
    if op is not None and len(children) == 3:
        names[f"op{a}"] = op
        left, _, right = children
        return f"@{k}", [
            f"n{k} = len(ops); s{k} = {part(left, 1)}; e{k} = {part(right, 2)}",
            f"add_op(op{a}); add_args(({part(left, 0)}, {part(right, 0)}))",
            f"add_label(None); add_start(s{k}); add_end(e{k})",
        ]
    return None


def whole(entry: str) -> str:
    """A plan's stack entry as one value: an expression's ``(node, start, end)``."""
    return f"(n{entry[1:]}, s{entry[1:]}, e{entry[1:]})" if entry[0] == "@" else entry


def part(entry: str, j: int) -> str:
    """Part ``j`` of a plan's stack entry (an expression's node, start or end)."""
    return f"{'nse'[j]}{entry[1:]}" if entry[0] == "@" else f"{entry}[{j}]"
