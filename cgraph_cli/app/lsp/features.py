"""The texts the server shows, from the op table and an analysis: a function's signature, a
hover, the completion list. Nothing here knows LSP either.

>>> signature("sin"), signature("sum")
('sin(x)', 'sum(x[, axis])')
"""

from __future__ import annotations

from typing import NamedTuple

from ...core.ops import FUNCTIONS, OpSpec
from ...parse import tables
from .analysis import Analysis, Values, summary
from .index import Site

KEYWORDS = tuple(word for word in tables.STRINGS if word.isalpha())
_ARGS = "xyzw"


class Signature(NamedTuple):
    """A callable's form, ``sum(x[, axis])``, and where each parameter is in it."""

    label: str
    params: tuple[tuple[int, int], ...]


def _form(name: str, required: list[str], optional: tuple[str, ...] = ()) -> Signature:
    label, places = f"{name}(", []
    for k, param in enumerate((*required, *optional)):
        label += (", " if k else "") if k < len(required) else "[, " if k else "["
        places.append((len(label), len(label) + len(param)))
        label += param + ("]" if k >= len(required) else "")
    return Signature(label + ")", tuple(places))


def _op_form(name: str, op: OpSpec) -> Signature:
    args = [_ARGS[k] if op.arity <= len(_ARGS) else f"x{k + 1}" for k in range(op.arity)]
    return _form(name, args + list(op.params[: op.required]), op.params[op.required :])


def signatures(name: str, analysis: Analysis | None = None) -> list[Signature]:
    """``name``'s forms: a ``def`` of the program's (from its text, so also while it does not
    parse), else each arity the op table's function takes; none for neither.

    >>> [(s.label, s.params) for s in signatures("sum")]
    [('sum(x[, axis])', ((4, 5), (8, 12)))]
    """
    defined = analysis.index.functions if analysis is not None else {}
    if name in defined:
        return [_form(name, list(defined[name]))]
    ops = FUNCTIONS.get(name, {})
    return [_op_form(name, op) for _arity, op in sorted(ops.items())]


def signature(name: str, analysis: Analysis | None = None) -> str | None:
    """``name``'s signature: an op's from the table (each arity it takes, ``; ``-separated),
    or a function of the program's ``def``; None for neither.

    >>> signature("max"), signature("nope")
    ('max(x); max(x, y)', None)
    """
    forms = signatures(name, analysis)
    if analysis is not None and name in analysis.index.functions:
        return f"def {forms[0].label}"
    return "; ".join(form.label for form in forms) or None


def hover(analysis: Analysis, values: Values | None, site: Site) -> str | None:
    """Markdown for the name under the cursor: a function's signature (and what its value
    needs), a call's value and its op's local derivatives; a name's value (whole for a small
    tensor), shape, gradient, and the local derivatives of the op that made it, as ``cgraph
    explain`` prints them.

    >>> a = Analysis("input x = 2\\ny = x * x")
    >>> print(hover(a, a.evaluate(), a.index.sites[1]))  # y
    **y** = 4
    <BLANKLINE>
    shape: () (a number)
    <BLANKLINE>
    ∂y/∂y = 1
    <BLANKLINE>
    ```text
    Through *: ∂y/∂(operand 1) = x = 2, ∂y/∂(operand 2) = x = 2
    ```
    """
    if site.kind == "call" or site.kind == "function":
        form = signature(site.name, analysis)
        if form is None:
            return None
        ops = FUNCTIONS.get(site.name, {})
        needs = [op.domain for op in ops.values() if op.domain]
        if values is not None and site.start in values.calls:
            needs.append(f"this call: {summary(values.calls[site.start])}")
        rule = values.rule(site.start) if values is not None else None
        needs += [f"```text\n{rule}\n```"] if rule else []
        return "\n\n".join([f"```cgraph\n{form}\n```", *needs])
    definition = site if site.kind in ("input", "value") else None
    if definition is None and site.kind == "read":
        definition = analysis.index.definition(site.name, site.start)
    known = values.of(definition) if values is not None else None
    if values is None or known is None:
        return f"**{site.name}** ({site.kind})"
    value, gradient = known
    shape = tuple(getattr(value, "shape", ()))
    lines = [
        f"**{site.name}** = {summary(value)}",
        f"shape: {shape}" + (" (a number)" if not shape else ""),
    ]
    if gradient is not None:
        lines.append(f"∂{values.output}/∂{site.name} = {summary(gradient)}")
    rule = values.rule(definition) if definition is not None else None
    lines += [f"```text\n{rule}\n```"] if rule else []
    return "\n\n".join(lines)


class Completion(NamedTuple):
    label: str
    kind: str  # function, variable, keyword
    detail: str


def completions(analysis: Analysis, offset: int) -> list[Completion]:
    """Functions with their signatures, the names defined above ``offset``, and keywords.

    >>> items = completions(Analysis("input x = 1\\ny = x"), 12)
    >>> [c for c in items if c.label in ("sin", "x", "input")]
    [Completion(label='sin', kind='function', detail='sin(x)'), Completion(label='x', kind='variable', detail='input'), Completion(label='input', kind='keyword', detail='keyword')]
    """
    found = [Completion(name, "function", signature(name) or "") for name in sorted(FUNCTIONS)]
    for site in analysis.index.names_before(offset):
        if site.kind == "function":
            found.append(Completion(site.name, "function", signature(site.name, analysis) or ""))
        else:
            found.append(Completion(site.name, "variable", site.kind))
    found += [Completion(word, "keyword", "keyword") for word in KEYWORDS]
    return found
