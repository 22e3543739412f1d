"""Rendering benchmark: how long diagrams take, from the seed example to 2,000 nodes.

    python bench/bench_render.py            # prints figures; asserts nothing

Times the DOT build (cgraph) and the layout + drawing (each renderer installed), for PNG and
SVG. Above cgraph's MAX_NODES the CLI asks for --force or --focus; this script forces.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_core import chain  # noqa: E402

from cgraph_cli import parse  # noqa: E402
from cgraph_cli.app.diagrams import diagram_of  # noqa: E402
from cgraph_cli.render import image  # noqa: E402


def local_dag(nodes: int, seed: int = 1) -> tuple[str, dict]:
    """A random DAG whose every node leads to the output: each statement reads two of the
    last eight values, so the diagram has all of them (a random DAG over all earlier nodes
    would leave most of them off the path to the output)."""
    import random

    rnd = random.Random(seed)
    lines = ["v0 = x", "v1 = y"]
    for i in range(2, nodes):
        a, b = i - 1, i - rnd.randint(2, min(8, i))
        lines.append(f"v{i} = {rnd.choice(['sin', 'tanh'])}(v{a}) {rnd.choice('+-*')} v{b}")
    return "\n".join(lines), {"x": 0.5, "y": -0.25}


def timed(fn):
    t = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t


def main() -> None:
    programs = {"seed": ((ROOT / "samples" / "seed.cg").read_text(), {})}
    for n in (100, 500, 2000):
        programs[f"chain{n}"] = chain(n)
        programs[f"dag{n}"] = local_dag(n // 2)  # two nodes a statement
    renderers = [r for r in (image.locate("dot"), image.locate("graphviz-pure")) if r]
    print(
        f"{'program':10} {'nodes':>6} {'DOT build':>10}  "
        + "  ".join(f"{r.name + ' ' + fmt:>18}" for r in renderers for fmt in ("png", "svg"))
    )
    for name, (text, bindings) in programs.items():
        graph = parse(text)
        diagram, build = timed(lambda: diagram_of(graph, bindings, force=True))  # noqa: B023
        cells = []
        for r in renderers:
            for fmt in ("png", "svg"):
                _, took = timed(lambda: image.render(diagram.source, fmt, r, 96))  # noqa: B023
                cells.append(f"{took:>17.2f}s")
        print(f"{name:10} {diagram.nodes:>6} {build * 1e3:>8.1f}ms  " + "  ".join(cells))


if __name__ == "__main__":
    main()
