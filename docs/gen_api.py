"""Write docs/api.md, the reference of cgraph's Python API, from the docstrings of the names
``cgraph_cli`` exports (its ``__all__``). Their examples run as doctests in the test suite, so
the reference shows what the code does. ``make docs`` runs this; a test fails when docs/api.md
is out of date::

    python docs/gen_api.py            # rewrite docs/api.md
    python docs/gen_api.py --check    # exit 1 when docs/api.md is out of date
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from pathlib import Path

import cgraph_cli

TARGET = Path(__file__).resolve().parent / "api.md"

#: Every public name once, in the order a reader meets them.
SECTIONS = [
    ("Running programs", ["parse", "evaluate", "grad", "Evaluation", "Gradients"]),
    ("Conditionals and loops", ["run_graph"]),
    ("Diagrams", ["diagram", "Diagram", "page", "slides"]),
    ("Checks", ["check", "CheckReport", "gradcheck", "GradcheckReport"]),
    ("Explanations", ["explain", "Explanation"]),
    ("Derivatives", ["derivative_program", "tangent_program", "hessian", "jacobian"]),
    ("Optimizing and compiling", ["optimize", "Optimized", "compile_module", "engine"]),
    ("Rows of data files", ["run_rows", "RowsResult", "read_chunks", "RowWriter"]),
    ("Training", ["train", "TrainResult"]),
    ("Models from other frameworks", ["load_onnx"]),
    (
        "The graph and its passes",
        ["Graph", "Node", "validate", "forward", "vjp", "jvp", "to_source", "Span"],
    ),
    (
        "Errors",
        ["CgraphError", "UsageError", "ParseError", "EvalError", "BindingError", "DomainError"],
    ),
    ("Types", ["Value"]),
]

INTRO = """\
# Python API

`import cgraph_cli` gives the library behind the `cgraph` command. Each command has its call,
which takes a program (text, or a `Graph` from `parse`) and bindings (numbers, nested lists or
NumPy arrays, by input name), and returns a result that prints readably and, in Jupyter, shows
itself: a diagram as SVG (drawn by Graphviz's `dot` where it is installed, else by the bundled
graphviz-pure), checks as tables, an explanation as Markdown with LaTeX. Errors are
`CgraphError`s, carrying the place in the program and hints, as the command prints them.

The package is typed (`py.typed`): values are `float | numpy.ndarray` (`Value`).

This file is generated from the docstrings by `make docs` (`docs/gen_api.py`); their examples
run as doctests in the test suite.
"""

SHOWN_IN_JUPYTER = {
    "_repr_svg_": "In Jupyter it shows itself as SVG.",
    "_repr_html_": "In Jupyter it shows itself as an HTML table.",
    "_repr_markdown_": "In Jupyter it shows itself as Markdown, formulas in LaTeX.",
}

VALUE = """\
`Value = float | numpy.ndarray`: what a node holds, a binding gives and a gradient is: a number,
or a NumPy array of float64 (a tensor). Scalar programs compute on Python floats and never
import NumPy. (A type alias, for annotations: `from cgraph_cli import Value`.)
"""


def markdown(doc: str) -> str:
    """A docstring as Markdown: ``code`` and :role:`name` as `code`, examples fenced."""
    out: list[str] = []
    lines = doc.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.lstrip().startswith(">>>"):
            block = []
            while k < len(lines) and lines[k].strip():
                block.append(lines[k])
                k += 1
            out += ["```pycon", *block, "```"]
            continue
        out.append(_inline(line.rstrip(":") + ":" if line.endswith("::") else line))
        k += 1
    return "\n".join(out).strip() + "\n"


def _inline(text: str) -> str:
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def signature(fn) -> str:
    """``(a: int, b: str = 'x')`` with the annotations as written (no quotes)."""
    parts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.annotation is not p.empty:
            text += f": {p.annotation}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        parts.append(text)
    ret = inspect.signature(fn).return_annotation
    arrow = "" if ret is inspect.Signature.empty else f" -> {ret}"
    return f"({', '.join(parts)}){arrow}"


def _fields(cls) -> list[tuple[str, str]]:
    """A class's fields: a dataclass's, or the annotated slots of it and its bases."""
    if dataclasses.is_dataclass(cls):
        return [(f.name, str(f.type)) for f in dataclasses.fields(cls)]
    out = []
    for klass in reversed(cls.__mro__):
        notes = vars(klass).get("__annotations__", {})
        out += [
            (n, notes[n]) for n in vars(klass).get("__slots__", ()) if n in notes and n[0] != "_"
        ]
    return out


def _members(cls) -> list[str]:
    """A class's own fields, properties and methods with docstrings, and how Jupyter shows it."""
    out = []
    fields = _fields(cls)
    if fields:
        out += ["Fields: " + ", ".join(f"`{n}: {t}`" for n, t in fields) + ".", ""]
    for name, member in vars(cls).items():
        if name in SHOWN_IN_JUPYTER:
            out += [SHOWN_IN_JUPYTER[name], ""]
            continue
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            doc = inspect.getdoc(member)
            head = f"#### `{cls.__name__}.{name}` (property)"
        elif inspect.isfunction(member):
            doc = inspect.getdoc(member)
            head = f"#### `{cls.__name__}.{name}{signature(member)}`"
        else:
            continue
        out += [head, ""]
        if doc:
            out += [markdown(doc)]
    return out


def entry(name: str) -> list[str]:
    obj = getattr(cgraph_cli, name)
    if name == "Value":
        return [f"### `{name}`", "", VALUE]
    if inspect.isclass(obj):
        base = obj.__bases__[0]
        parent = "" if base is object or base.__name__.startswith("_") else f"({base.__name__})"
        head = f"### class `{name}{parent}`"
        return [head, "", markdown(inspect.getdoc(obj) or ""), *_members(obj)]
    return [f"### `{name}{signature(obj)}`", "", markdown(inspect.getdoc(obj) or "")]


def render() -> str:
    """The text of docs/api.md."""
    out = [INTRO]
    out += ["## Contents", ""]
    for title, names in SECTIONS:
        out.append(f"- {title}: " + ", ".join(f"`{n}`" for n in names))
    out.append("")
    for title, names in SECTIONS:
        out += [f"## {title}", ""]
        for name in names:
            out += entry(name)
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print("docs/api.md is out of date: run `make docs`", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
