"""Core benchmark: parse+build, forward+backward, memory, and CLI start-up.

Prints figures; asserts nothing (speed targets live here, not in timed tests).

    python bench/bench_core.py                  # 1e3 .. 1e6 nodes, deep chain and random DAG
    python bench/bench_core.py --max 1e5        # quicker
    python bench/bench_core.py --json out.json  # also write the figures as JSON

Comparisons run when their packages are installed (never dependencies of cgraph):
micrograd (pip install micrograd) and PyTorch (pip install torch==2.13.0).

Targets (issue 2): forward+backward <= 300 ns/node at 1e5 nodes and <= 1.5x that at 1e6;
(issue 28) the passes on the live random DAG at 1e5 <= 1.1x a bare tape loop over it;
parse+build >= 20,000 statements/s up to 1e5 statements; < 200 bytes/node;
`cgraph eval 'x + 1' x=2 --format json` <= 2x `python3 -c 'import click'`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import operator
import random
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgraph_cli import parse  # noqa: E402
from cgraph_cli.parse import driver as parser_module  # noqa: E402
from cgraph_cli.run.evaluate import compile_program, forward  # noqa: E402
from cgraph_cli.run.vjp import vjp  # noqa: E402


# --- programs -----------------------------------------------------------------------------------
def chain(nodes: int) -> tuple[str, dict]:
    """A deep chain: every statement reads the one before; 2 operation nodes a statement."""
    lines = ["v = x"] + ["v = v * a + b"] * max(1, (nodes - 3) // 2)
    # a = 1 keeps every adjoint at 1: no gradient underflows to 0 and gets skipped
    return "\n".join(lines), {"x": 0.5, "a": 1.0, "b": 0.001}


def dag(nodes: int, seed: int = 1) -> tuple[str, dict]:
    """A random DAG: each statement reads one or two random earlier values; 1 node a statement.
    sin and tanh keep values bounded (no overflow, no slow subnormals)."""
    rnd = random.Random(seed)
    lines = ["v0 = x", "v1 = y"]
    for i in range(2, max(3, nodes - 2)):
        a, b = rnd.randrange(i), rnd.randrange(i)
        kind = rnd.random()
        if kind < 0.3:
            lines.append(f"v{i} = v{a} + v{b}")
        elif kind < 0.5:
            lines.append(f"v{i} = v{a} - v{b}")
        elif kind < 0.7:
            lines.append(f"v{i} = v{a} * v{b}")
        elif kind < 0.85:
            lines.append(f"v{i} = sin(v{a})")
        else:
            lines.append(f"v{i} = tanh(v{a})")
    return "\n".join(lines), {"x": 0.7, "y": -0.3}


def dag_live(nodes: int, seed: int = 1) -> tuple[str, dict]:
    """A random DAG in which every node feeds the output: each statement reads the one
    before it and one or two random earlier values (in the plain random DAG above, almost
    no node reaches the output, so its reverse pass measures next to nothing)."""
    rnd = random.Random(seed)
    lines = ["v0 = x", "v1 = y"]
    for i in range(2, max(3, nodes - 2)):
        a = rnd.randrange(i - 1)
        kind = rnd.random()
        if kind < 0.35:
            lines.append(f"v{i} = v{i - 1} + v{a}")
        elif kind < 0.55:
            lines.append(f"v{i} = v{i - 1} - v{a}")
        elif kind < 0.75:
            lines.append(f"v{i} = v{i - 1} * 0.5 + v{a} * 0.5")
        elif kind < 0.9:
            lines.append(f"v{i} = sin(v{i - 1}) + v{a}")
        else:
            lines.append(f"v{i} = tanh(v{i - 1})")
    return "\n".join(lines), {"x": 0.7, "y": -0.3}


# --- measurements -------------------------------------------------------------------------------
def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def measure(kind: str, nodes: int, repeat: int) -> dict:
    text, bindings = {"chain": chain, "dag": dag, "dag-live": dag_live}[kind](nodes)
    statements = text.count("\n") + 1
    gc.collect()
    parse_s = best_of(lambda: parse(text), repeat)
    # the same parse with the cyclic collector left running (cgraph pauses it while building)
    with contextlib.ExitStack() as stack:
        stack.callback(setattr, parser_module, "gc_paused", parser_module.gc_paused)
        parser_module.gc_paused = contextlib.nullcontext
        parse_gc_s = best_of(lambda: parse(text), 1) if nodes <= 200_000 else float("nan")
    tracemalloc.start()
    graph = parse(text)
    ir_bytes = tracemalloc.get_traced_memory()[0]
    compile_program(graph)
    compiled_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    n = len(graph)
    first = time.perf_counter()
    values = forward(graph, bindings)
    vjp(graph, values)
    fresh = time.perf_counter()
    fwd = best_of(lambda: forward(graph, bindings), repeat)
    values = forward(graph, bindings)
    bwd = best_of(lambda: vjp(graph, values), repeat)
    gc.collect()
    return {
        "graph": kind,
        "nodes": n,
        "statements": statements,
        "parse_statements_per_s": statements / parse_s,
        "parse_statements_per_s_gc_on": statements / parse_gc_s,
        "fwd_ns_per_node": fwd / n * 1e9,
        "bwd_ns_per_node": bwd / n * 1e9,
        "fwd_bwd_ns_per_node": (fwd + bwd) / n * 1e9,
        "first_grad_ns_per_node": (fresh - first) / n * 1e9,
        "ir_bytes_per_node": ir_bytes / n,
        "with_program_bytes_per_node": compiled_bytes / n,
    }


def flat_loop_reference(nodes: int, repeat: int) -> float:
    """A bare opcode loop over the same kind of chain, forward and backward: the floor for
    plain Python (ns/node)."""
    mul_p = lambda x, y, o: (y, x)  # noqa: E731
    add_p = lambda x, y, o: (1.0, 1.0)  # noqa: E731
    values = [0.5, 0.5, 1.0]
    prog, prev = [], 0
    for _ in range(nodes // 2):
        values += [0.0, 0.0]
        m, s = len(values) - 2, len(values) - 1
        prog += [(m, operator.mul, mul_p, prev, 1), (s, operator.add, add_p, m, 2)]
        prev = s

    def run():
        v = list(values)
        for i, f, _, a, b in prog:
            v[i] = f(v[a], v[b])
        adj = [0.0] * len(v)
        adj[-1] = 1.0
        for i, _, p, a, b in reversed(prog):
            g = adj[i]
            pa, pb = p(v[a], v[b], v[i])
            adj[a] += pa * g
            adj[b] += pb * g

    return best_of(run, repeat) / len(values) * 1e9


def tape_loops(nodes: int, rounds: int) -> dict:
    """cgraph's passes (forward + reverse, from bindings) on the live random DAG against two
    bare tape loops over the same graph, node for node, with no checks: "inline" dispatches
    the op kinds inline (no call for + - *), the practical limit for a Python loop; "calls"
    calls a value and a partials function per node, as ``flat_loop_reference`` does. The
    three take turns, round by round, after their results are checked equal; the ratios
    are per round (ours / tape)."""
    text, bindings = dag_live(nodes)
    graph = parse(text)
    n = len(graph)
    template = [0.0] * n
    for name, node in graph.inputs.items():
        template[node] = bindings[name]
    for node, value in graph.consts.items():
        template[node] = value
    code = {"add": 0, "mul": 1, "sub": 2, "sin": 3, "tanh": 4}
    tape = [
        (i, code[op.name], args[0] + 0, (args[1] if len(args) > 1 else -1) + 0)
        for i, op, args in zip(range(n), graph.ops, graph.args)
        if args
    ]
    sin, cos, tanh = math.sin, math.cos, math.tanh

    def inline():
        v = list(template)
        for i, k, a, b in tape:
            if k == 0:
                v[i] = v[a] + v[b]
            elif k == 1:
                v[i] = v[a] * v[b]
            elif k == 2:
                v[i] = v[a] - v[b]
            elif k == 3:
                v[i] = sin(v[a])
            else:
                v[i] = tanh(v[a])
        adj = [0.0] * n
        adj[graph.output] = 1.0
        for i, k, a, b in reversed(tape):
            g = adj[i]
            if k == 0:
                adj[a] += g
                adj[b] += g
            elif k == 1:
                adj[a] += v[b] * g
                adj[b] += v[a] * g
            elif k == 2:
                adj[a] += g
                adj[b] -= g
            elif k == 3:
                adj[a] += cos(v[a]) * g
            else:
                o = v[i]
                adj[a] += (1.0 - o * o) * g
        return v, adj

    fs = [operator.add, operator.mul, operator.sub, sin, tanh]
    ps = [
        lambda x, y, o: (1.0, 1.0),
        lambda x, y, o: (y, x),
        lambda x, y, o: (1.0, -1.0),
        lambda x, o: cos(x),
        lambda x, o: 1.0 - o * o,
    ]
    calls_tape = [(i, fs[k], ps[k], a, b) for i, k, a, b in tape]

    def calls():
        v = list(template)
        for i, f, _, a, b in calls_tape:
            v[i] = f(v[a]) if b < 0 else f(v[a], v[b])
        adj = [0.0] * n
        adj[graph.output] = 1.0
        for i, _, p, a, b in reversed(calls_tape):
            g = adj[i]
            if b < 0:
                adj[a] += p(v[a], v[i]) * g
            else:
                pa, pb = p(v[a], v[b], v[i])
                adj[a] += pa * g
                adj[b] += pb * g
        return v, adj

    def ours():
        values = forward(graph, bindings)
        return values, vjp(graph, values)

    want = ours()
    inputs = list(graph.inputs.values())
    for fn in (inline, calls):
        v, adj = fn()
        assert v == want[0] and [adj[k] for k in inputs] == [want[1][k] for k in inputs]
    times: dict = {"ours": [], "inline": [], "calls": []}
    gc.collect()
    for _ in range(rounds):
        for name, fn in (("ours", ours), ("inline", inline), ("calls", calls)):
            with _collector_paused():  # for the tapes too: ours pauses it while it runs
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
    out: dict = {"nodes": n, "rounds": rounds}
    for name in ("inline", "calls"):
        ratios = sorted(a / b for a, b in zip(times["ours"], times[name]))
        out[f"ratio_to_{name}_tape"] = statistics.median(ratios)
        out[f"ratio_to_{name}_tape_range"] = (ratios[0], ratios[-1])
    for name, ts in times.items():
        out[f"{name}_ns_per_node"] = statistics.median(ts) / n * 1e9
    return out


@contextlib.contextmanager
def _collector_paused():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def micrograd_ns_per_node(nodes: int) -> float | None:
    try:
        from micrograd.engine import Value
    except ImportError:
        return None
    text, bindings = dag(nodes)
    env = {"x": Value(bindings["x"]), "y": Value(bindings["y"])}
    t = time.perf_counter()
    for line in text.splitlines():  # the same DAG, built with micrograd's operators
        name, expr = (s.strip() for s in line.split("="))
        parts = expr.replace("(", " ").replace(")", " ").split()
        if parts[0] in ("sin", "tanh"):
            # micrograd 0.1 has neither sin nor tanh: a unary op of the same cost stands in
            env[name] = env[parts[1]].relu() if parts[0] == "tanh" else env[parts[1]] * 0.5
        elif len(parts) == 1:
            env[name] = env[parts[0]]
        else:
            a, op, b = parts
            env[name] = {"+": operator.add, "-": operator.sub, "*": operator.mul}[op](
                env[a], env[b]
            )
    out = env[name]
    out.backward()
    return (time.perf_counter() - t) / nodes * 1e9


def torch_ns_per_node(nodes: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    text, bindings = chain(nodes)
    steps = text.count("\n")
    x, a, b = (torch.tensor(bindings[k], dtype=torch.float64, requires_grad=True) for k in "xab")
    t = time.perf_counter()
    v = x
    for _ in range(steps):
        v = v * a + b
    v.backward()
    return (time.perf_counter() - t) / (2 * steps + 3) * 1e9


def cli_start(runs: int) -> dict:
    # As after `pip install`, which byte-compiles: this machine sets PYTHONDONTWRITEBYTECODE.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "cgraph_cli")], check=True)
    exe = shutil.which("cgraph")
    cgraph = [exe] if exe else [sys.executable, "-m", "cgraph_cli"]

    def median(cmd):
        subprocess.run(cmd, capture_output=True)  # warm the caches
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=True)
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    ours = median(cgraph + ["eval", "x + 1", "x=2", "--format", "json"])
    click = median([sys.executable, "-c", "import click"])
    bare = median([sys.executable, "-c", "pass"])
    return {
        "cgraph_eval_ms": ours * 1e3,
        "import_click_ms": click * 1e3,
        "python_bare_ms": bare * 1e3,
        "ratio_to_click": ours / click,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--max", type=float, default=1e6, help="largest graph, in nodes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    sizes = [s for s in (1e3, 1e4, 1e5, 1e6) if s <= args.max]
    rows = []
    print(f"python {sys.version.split()[0]}, best of {args.repeat}\n")
    print(
        f"{'graph':6} {'nodes':>8} {'stmts/s':>9} {'(gc on)':>9} {'fwd':>6} {'bwd':>6} "
        f"{'fwd+bwd':>8} {'1st grad':>9} {'B/node':>7} {'+prog':>6}"
    )
    for size in sizes:
        for kind in ("chain", "dag", "dag-live"):
            r = measure(kind, int(size), args.repeat if size < 1e6 else 1)
            rows.append(r)
            print(
                f"{kind:6} {r['nodes']:>8} {r['parse_statements_per_s']:>9,.0f} "
                f"{r['parse_statements_per_s_gc_on']:>9,.0f} {r['fwd_ns_per_node']:>6.0f} "
                f"{r['bwd_ns_per_node']:>6.0f} {r['fwd_bwd_ns_per_node']:>8.0f} "
                f"{r['first_grad_ns_per_node']:>9.0f} {r['ir_bytes_per_node']:>7.0f} "
                f"{r['with_program_bytes_per_node']:>6.0f}"
            )
    print("\n(ns per node; B/node: the parsed graph; +prog: with its compiled program)")
    ref_n = int(min(1e5, args.max))
    extra = {"flat_loop_ns_per_node": flat_loop_reference(ref_n, args.repeat)}
    print(
        f"\nreference flat opcode loop, fwd+bwd at {ref_n} nodes: "
        f"{extra['flat_loop_ns_per_node']:.0f} ns/node"
    )
    tapes = tape_loops(ref_n, rounds=max(5, 3 * args.repeat))
    extra["tape_loops"] = tapes
    print(
        f"live random DAG, {tapes['nodes']} nodes, forward + backward against bare tape loops "
        f"over the same graph ({tapes['rounds']} rounds in turn; ns/node: ours "
        f"{tapes['ours_ns_per_node']:.0f}, inline tape {tapes['inline_ns_per_node']:.0f}, "
        f"tape of calls {tapes['calls_ns_per_node']:.0f}):\n"
        + "".join(
            f"  ours / {label}: median {tapes[f'ratio_to_{k}_tape']:.2f}, "
            f"{tapes[f'ratio_to_{k}_tape_range'][0]:.2f} to "
            f"{tapes[f'ratio_to_{k}_tape_range'][1]:.2f}\n"
            for k, label in (("inline", "inline tape"), ("calls", "tape of calls"))
        ),
        end="",
    )
    mg = micrograd_ns_per_node(min(ref_n, 10_000))
    th = torch_ns_per_node(min(ref_n, 100_000))
    extra["micrograd_ns_per_node"], extra["torch_ns_per_node"] = mg, th
    print(
        "micrograd (same DAG, 1e4 nodes):", "not installed" if mg is None else f"{mg:.0f} ns/node"
    )
    print(
        "PyTorch eager autograd (scalar chain):",
        "not installed" if th is None else f"{th:.0f} ns/node",
    )
    start = cli_start(runs=10)
    extra.update(start)
    print(
        f"\nCLI start: cgraph eval 'x + 1' x=2 --format json  {start['cgraph_eval_ms']:.0f} ms; "
        f"python3 -c 'import click' {start['import_click_ms']:.0f} ms "
        f"(ratio {start['ratio_to_click']:.2f}); bare python {start['python_bare_ms']:.0f} ms"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, **extra}, indent=2))


if __name__ == "__main__":
    main()
