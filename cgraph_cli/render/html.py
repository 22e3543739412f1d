"""Small HTML tables, for results that show themselves in Jupyter (``_repr_html_``).

>>> print(table(["name", "value"], [["x", "1"], ["<y>", "2"]], caption="2 values"))
<table>
<caption>2 values</caption>
<thead><tr><th>name</th><th>value</th></tr></thead>
<tbody>
<tr><td>x</td><td>1</td></tr>
<tr><td>&lt;y&gt;</td><td>2</td></tr>
</tbody>
</table>
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    """An HTML table of text cells (each escaped), under an optional caption."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows]
    return "\n".join(
        [
            "<table>",
            *([f"<caption>{escape(caption)}</caption>"] if caption else []),
            f"<thead><tr>{head}</tr></thead>",
            "<tbody>",
            *body,
            "</tbody>",
            "</table>",
        ]
    )


def xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (control characters, lone
    surrogates), each replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
