"""Golden cases: tests/cases/*.cg hold a program, its bindings, and the expected IR, values,
gradients and reprinted source. One parametrized test checks them all.

Update after an intended change, then review the diff:
    python -m pytest tests/test_golden.py --update-golden
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph_cli import grad, parse, to_source, validate
from cgraph_cli.core.numfmt import plain_value

CASES = sorted((Path(__file__).parent / "cases").glob("*.cg"))
MARK = "# ==="


def sections(graph, bindings) -> dict[str, str]:
    result = grad(graph, bindings)
    return {
        "ir": "\n".join(str(node) for node in graph),
        "values": "\n".join(f"{k} = {plain_value(v)}" for k, v in result.named.items()),
        "gradients": "\n".join(f"{k} = {plain_value(v)}" for k, v in result.gradients.items()),
        "source": to_source(graph).rstrip("\n"),
    }


def split(text: str) -> tuple[str, dict[str, str]]:
    program, _, rest = text.partition(f"\n{MARK} ")
    found = {}
    for chunk in (f"{MARK} " + rest).split(f"\n{MARK} ") if rest else []:
        head, _, body = chunk.removeprefix(f"{MARK} ").partition("\n")
        found[head.strip(" =")] = "\n".join(line.removeprefix("# ") for line in body.splitlines())
    return program + "\n", found


def bindings_of(program: str) -> dict[str, str]:
    """``# bindings: x=3 W=[[1,2],[3,4]]``: values as the command line gives them."""
    for line in program.splitlines():
        if line.startswith("# bindings:"):
            return dict(b.split("=", 1) for b in line.split(":", 1)[1].split())
    return {}


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_golden_case(path, update_golden):
    program, expected = split(path.read_text())
    graph = validate(parse(program, path.name))
    actual = sections(graph, bindings_of(program))
    if update_golden:
        body = "".join(
            f"{MARK} {name} ===\n" + "".join(f"# {line}\n" for line in text.splitlines())
            for name, text in actual.items()
        )
        path.write_text(program + body)
        return
    assert expected == actual


def test_there_are_golden_cases():
    assert len(CASES) >= 5
