"""The compiled module's text around the lines the emitter writes (:mod:`.compile_emit`): its
head (the program as comments, imports, inputs and defaults), ``forward`` and ``grad`` with their
argument conversion and guards, and the helpers they call, copied in."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from ..core import runtime
from ..core.errors import visible
from .batch import DEST, PER_ROW, ROWS, SEEN, WATCHED, WORK
from .compile_checks import (
    _EXACT,
    _EXACT_ROWS,
    _JOINED,
    _checked_source,
    _guarded,
    arg_function,
    checked_function,
    finite_lines,
)
from .compile_names import _with_callees

if TYPE_CHECKING:
    from .compile_emit import Shape, _Emitter


#: A module's exception, between two blank lines: the lines of its class.
DOMAIN_ERROR = [
    "",
    "",
    "class DomainError(ArithmeticError):",
    '    """A value the program cannot compute (log(-1), 1/0, an overflow...)."""',
    "",
    "",
]


def module_text(
    em: _Emitter, graph, name, forward_body, names, grad_body, value, gradients, output
) -> str:
    """The module's source: ``forward_body`` and ``grad_body`` (``em``'s lines of ``graph``
    and of its derivative program, None without one; ``value``: then why not), ``names``
    each node's variable, ``gradients`` each input's, ``output`` the output's name."""
    numpy = em.target == "numpy"
    inputs = list(graph.inputs)
    variables = [em.variables[n] for n in inputs]
    args = ", ".join(variables)
    signature = f"*, {args}" if args else ""
    named = {
        n: names[node]
        for n, node in graph.named_nodes().items()
        if em.names is None or n in em.names
    }
    head = [
        f'"""A cgraph program compiled by cgraph (target {em.target}): the forward pass',
        "(forward) and the forward and reverse passes (grad) as straight-line code. It needs",
        'no cgraph to run."""',
        "",
        # The program as comments: whatever it holds stays a comment (splitlines breaks at
        # every character Python ends a line at, and more).
        f"# The program{(' ' + visible(_one_line(name))) if name else ''}:",
        *("#     " + visible(line) for line in graph.source.text.strip().splitlines()),
        "",
        "import numpy as np" if numpy else "import math",
        *(["import math"] if numpy and em.exact_rule else []),
        *([] if em.rows else ["import sys"]),
        "",
        f"INPUTS = {tuple(inputs)!r}",
        f"DEFAULTS = {em._defaults(graph)}",
        *(
            [
                f"SHAPES = {em.row_shapes(graph)!r}",
                "_FLOAT = np.dtype(float)",
                "_ARRAY = np.ndarray",
            ]
            + ([f"CHECKED = {em.to_check!r}"] if em.rows else [])
            if numpy
            else []
        ),
        *DOMAIN_ERROR,
    ]
    helpers = [inspect.getsource(getattr(runtime, h)) + "\n" for h in _with_callees(em.helpers)]
    # What each function returns, by name: how, and the shape when known.
    out: dict[str, tuple[str, Shape]] = {n: (v, None) for n, v in named.items()}
    if numpy and not em.rows:  # rows mode: cgraph broadcasts what it keeps
        out = {n: em.returned("forward", n, v) for n, v in named.items()}
    values = ", ".join(f"{n!r}: {v}" for n, (v, _) in out.items())
    results: dict[str, tuple[str, Shape]] = {n: (v, None) for n, v in gradients.items()}
    if numpy:  # a gradient that is 0 everywhere may be written as the number 0
        results = {n: em.gradient(n, v) for n, v in gradients.items()}
    grads = ", ".join(f"{n!r}: {v}" for n, (v, _) in results.items())
    if numpy and grad_body is not None:
        if em.rows:
            value, shape = f"_plain({value}{', rows' if em.vector else ''})", None
        else:
            value, shape = em.returned("grad", "", value)
        results = {"": ("value", shape), **results}
    if variables == inputs:  # every input a plain keyword argument
        convert = [f"    {a} = _arg({a}, {a!r})" for a in variables]
    else:  # a name Python or the module keeps (lambda, math, grad...): by keyword only
        signature = "**inputs"
        convert = ["    _expect(inputs, INPUTS)"] + [
            f"    {v} = _arg(inputs[{n!r}], {n!r})" for v, n in zip(variables, inputs)
        ]
    start = [f"    {WATCHED[em.vector]} = {'[]' if em.vector else '0.0'}"] if em.rows else []
    if em.kinks:
        start.append("    _kinks = []")
    if em.vector:  # rows of numbers broadcast through the code
        start.append(f"    rows = _rows({', '.join(variables)})")
        if em.work:
            start.append("    _out, _pool = _buffers(rows)")
    elif numpy and inputs:  # rows of tensors: one row at a time
        shapes = em.row_shapes(graph)
        batched = " or ".join(  # _arg made a number a float, and anything else an array
            f"{v}.__class__ is not float"
            if not shapes[n]
            else f"({v}.__class__ is np.ndarray and {v}.ndim > {len(shapes[n])})"
            for v, n in zip(variables, inputs)
        )
        given = ", ".join(f"{n!r}: {v}" for v, n in zip(variables, inputs))
        per_row = [f"    if {batched}:", f"        return _per_row({{fn}}, {{{{{given}}}}})"]
        other = " or ".join(  # compiled for these shapes (sizes folded in): others refused
            f"np.shape({v}) != {shapes[n]!r}" for v, n in zip(variables, inputs)
        )
        per_row += [f"    if {other}:", f"        _other_shapes({{{{{given}}}}})"]
        if em.strict:  # cgraph's own engine: no row by row; other shapes: the long way
            refused = "raise TypeError('inputs of other shapes than compiled for')"
            per_row = [f"    if {batched} or {other}:", f"        {refused}"]
        if signature == "**inputs":
            start += per_row
        else:  # inputs that are one row's floats already need neither _arg nor _per_row
            ready = " and ".join(
                f"{v}.__class__ is float"
                if not shapes[n]
                else f"{v}.__class__ is _ARRAY and {v}.dtype is _FLOAT"
                f" and {v}.shape == {shapes[n]!r}"
                for v, n in zip(variables, inputs)
            )
            indented = ["    " + line for line in convert + per_row]
            start = [f"    if not ({ready}):", *indented, *start]
            convert = []
    if em.rows:  # the arrays the caller gives for results (see DEST), before any input
        signature = ", ".join(["_into=None, /", *([signature] if signature else [])])
    again = [f"    {v} = _arg(inputs[{n!r}], {n!r})" for v, n in zip(variables, inputs)]
    if em.vector:  # (its answer has the shape of the rows)
        again.append(f"    rows = _rows({', '.join(variables)})")
    checked = (
        []
        if em.rows
        else checked_function(em, "forward", again, em.checked_forward or forward_body)
    )
    if grad_body is not None and not em.rows:
        answer = f"{value}, {{{grads}}}"
        checked += checked_function(em, "grad", again, em.checked_grad or grad_body, answer)
    # grad's last lines: where a result is not finite, the checked copy's answer or error
    finished = (
        []
        if em.rows or grad_body is None
        else finite_lines(em, "grad", "{'': value, **grads}", results)
    )
    forward = [
        f"def forward({signature}):",
        '    """Every named value of the program, by name."""',
        *convert,
        *(line.format(fn="forward") for line in start),
        *em.bindings(forward_body),
        *_guarded(
            forward_body,
            numpy,
            [
                f"    out = {{{values}}}",
                *(['    out[" kinks"] = _kinks'] if em.kinks else []),
                *([] if em.rows else finite_lines(em, "forward", "out", out)),
            ],
            # NumPy's domain errors are values that are not finite, which the fast lines find
            # at the end: the checked copy names the first, as the interpreter stops at it
            # (Python's raise where the interpreter's do; an overflow of * or + is found at
            # the end there, after an error that follows it, as in the interpreter).
            "forward" if numpy and not em.rows or em.deferred_by.get("forward") else "",
        ),
        *(["    _POOLS.append(_pool)"] if em.work else []),
        f"    return out, {WATCHED[em.vector]}" if em.rows else "    return out",
        "",
        "",
        f"def grad({signature}):",
        *(
            [
                f'    """The value of {output} and its gradient with respect to each input."""',
                *convert,
                *(line.format(fn="grad") for line in start),
                *em.bindings(grad_body),
                *_guarded(
                    grad_body,
                    numpy,
                    [f"    value = {value}", f"    grads = {{{grads}}}", *finished],
                    "" if em.rows else "grad",
                ),
                *(["    _POOLS.append(_pool)"] if em.work else []),
                *(
                    [f"    return value, grads, {WATCHED[em.vector]}"]
                    if em.rows
                    else []
                    if finished and finished[-1].startswith("    return ")
                    else ["    return value, grads"]
                ),
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
    checks = [  # (a rows module raises nothing: the engine checks what it keeps)
        "def _finite(values, fn):",
        '    """Raise DomainError if an input or a result is not finite (as cgraph\'s'
        ' interpreter does)."""',
        *(
            []
            if em.rows or not numpy
            else [
                "    given = sys._getframe(1).f_locals",
                "    for n in INPUTS:  # (an input that needed no _arg: said as _arg says it)",
                "        _arg(given['inputs'][n] if 'inputs' in given else given[n], n)",
            ]
        ),
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
            if em.rows
            else [  # the call's inputs, run again checking each value: at which node
                "    found = _again(fn, sys._getframe(1).f_locals)",
                "    if found is not None:  # grad's checked copy ran to the end: its answer",
                "        return found",
            ]
        ),
        "    for name, v in values.items():",
        f"        if not {check}:",
        "            what = f' (d{name})' if fn is grad and name else (f' ({name})' if name else '')",
        "            raise DomainError(f'{fn.__name__}: a result is not finite{what}')",
        "",
        "",
    ]
    finite = [
        *([] if em.rows else checks),
        *(
            []
            if em.rows
            else [
                "def _again(fn, given=None):",
                '    """fn\'s checked copy run on the inputs of its call (the caller\'s): it',
                "    stops at the first value that is not finite, or at the error, naming its node;",
                '    grad\'s gives back its value and gradients where it runs to the end."""',
                "    if given is None:",
                "        given = sys._getframe(1).f_locals",
                "    if not _CHECKED:  # compiled on first need, and where its lines are",
                "        exec(compile(_CHECKED_SOURCE, '<checked>', 'exec'), globals())",
                "        for k, line in enumerate(_CHECKED_SOURCE.split('\\n')):",
                "            if '  #' ' line ' in line:  # (split: this line is none of them)",
                "                _CHECKED_WHERE[k + 1] = line.split('  # ', 1)[1]",
                "    return _CHECKED[fn.__name__](",
                "        given['inputs'] if 'inputs' in given else {n: given[n] for n in INPUTS}",
                "    )",
                "",
                "",
                "def _rerun(fn, error):",
                '    """fn\'s checked copy, on the error of its call: its answer where it runs to',
                "    the end (it passes nothing back through a node whose gradient is 0, as the",
                '    interpreter does), else the error it stops at, or this one naming its line."""',
                "    found = _again(fn, sys._getframe(1).f_locals)",
                "    if found is None:",
                "        raise _domain(error) from None",
                "    return found",
                "",
                "",
            ]
        ),
        *((_EXACT_ROWS if em.rows else _EXACT) if em.exact_rule else []),
        *(
            []
            if em.rows
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
        if em.rows
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
                *(ROWS if em.vector else PER_ROW),
                *(SEEN if em.vector and em.rows else []),
                *(WORK if em.work else []),
                *(DEST if em.dest else []),
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
        *arg_function(numpy, finite=not em.rows),
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


def _one_line(text: str) -> str:
    return " ".join(text.split())
