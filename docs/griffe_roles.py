"""A griffe extension for the API reference (docs/api.md, built by mkdocstrings): the docstrings'
Sphinx roles (``:func:`cgraph_cli.grad```, ``:class:`Graph```) and double backquotes read as
Markdown's code spans, so that the page shows ``grad`` where ``help()`` shows the role."""

from __future__ import annotations

import re

try:  # the docs extra: mkdocstrings and griffe (the suite runs markdown's example without)
    import griffe
except ImportError:  # pragma: no cover
    griffe = None

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):`~?([^`]+)`")


def markdown(text: str) -> str:
    r"""``text`` with each role as a code span of its target's last name, ````x```` as ```x```,
    and each example (a paragraph of ``>>>`` lines and their output) fenced as Python's
    console (``::`` before it dropped: Markdown has no literal blocks).

    >>> markdown("see :func:`~cgraph_cli.run.control.run_graph` and ``x + 1``")
    'see `run_graph` and `x + 1`'
    >>> markdown("Runs it::\n\n    >>> f(x=2.0)\n    4.0")
    'Runs it:\n\n```pycon\n>>> f(x=2.0)\n4.0\n```'
    """
    paragraphs = []
    for paragraph in text.split("\n\n"):
        lines = paragraph.split("\n")
        if lines[0].lstrip().startswith(">>>"):
            indent = len(lines[0]) - len(lines[0].lstrip())
            code = "\n".join(line[indent:] for line in lines)
            paragraphs.append(f"```pycon\n{code}\n```")
            continue
        paragraph = _ROLE.sub(lambda m: f"`{m[1].rsplit('.', 1)[-1]}`", paragraph)
        paragraph = re.sub(r"``([^`]+)``", r"`\1`", paragraph)
        paragraphs.append(re.sub(r"::$", ":", paragraph))
    return "\n\n".join(paragraphs)


if griffe is not None:

    class Roles(griffe.Extension):
        """Rewrite each docstring as :func:`markdown` says, as griffe loads the package."""

        def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
            if obj.docstring is not None:
                obj.docstring.value = markdown(obj.docstring.value)
