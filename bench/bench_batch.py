"""Batch evaluation over rows of data (``--rows``) against the practical limit, the one-row
loop it replaces, and JAX.

    python bench/bench_batch.py                    # 1e6 rows; files of 2e5, 2e6, 6e6 rows
    python bench/bench_batch.py --quick            # 1e5 rows; files of 2e4, 2e5, 6e5 rows
    python bench/bench_batch.py --formats parquet  # the file part for Parquet only
    some-venv-with-jax/bin/python bench/bench_batch.py   # with the JAX column

Rows per second of `cgraph_cli.jobs.rows.run_rows` (chunks of CHUNK_ROWS rows, eval and grad) on
samples/neuron.cg (per-row columns x1, x2; weights w1, w2, b shared) and on a random scalar
program of 100 operations (+, -, *, sin, cos, tanh, exp over three per-row columns and two
shared weights, values kept well inside every domain so that no row fails), against:

  numpy   the same computation written by hand in NumPy over whole columns: the value and,
          for grad, the gradient for every input per row, as run_rows gives them. This is the
          practical limit; the goal is cgraph within 2x of it (the ratio column). "np chunks"
          is the same code over cgraph's chunks: at 1e6 rows, columns of 8 MB leave the cache
          and whole columns can be the slower of the two.
  engine  the compiled module alone (cgraph_cli.run.engine) over the same chunks, its results
          dropped: what run_rows adds around it (binding columns, sorting out failed rows, the
          table) is the gap. On long programs, the allocator's handling of a hundred fresh
          chunk-sized arrays a chunk can make it no faster than run_rows (noise, not a gain).
  loop    cgraph's library one row at a time (api.evaluate / api.grad in a Python loop), timed
          on a few thousand rows and extrapolated: what a user wrote before rows mode.
  jax     jax.jit(jax.vmap(jax.value_and_grad(f))) (jax.vmap(f) for eval) in float64, when
          JAX imports in this interpreter (it is never a dependency of cgraph).

Then --reduce mean (grad of the shared weights, averaged over the rows) on the neuron, and
files larger than a chunk: a CSV and a Parquet file of x1, x2 (written by RowWriter in a
temporary folder) streamed through read_chunks, run_rows (eval) and a RowWriter, in a fresh
process each, for the rows per second including the I/O (split into reading, computing and
writing) and the peak memory it takes (growth of the peak RSS; tracemalloc's peak, which sees
NumPy's buffers; pyarrow's pool peak), at three file sizes (1/10, 1 and 3 times --file-rows):
the same growth at the two larger shows that memory is bounded (by the chunk and the
reader's buffers), not by the file; growth with the file shows that it is not. Without
pyarrow (the `data` extra) the file is an .npz, which cgraph reads whole.

Timings are the best of --runs (default 3; quick calls repeated up to half a second). Prints
figures; asserts nothing about them.

    python bench/bench_batch.py --turns 9          # cgraph and by hand in turns, 9 rounds

With --turns, only the comparisons timed in turns, round by round (CPU time of the thread, the
median and range of the per-round ratios): run_rows against NumPy by hand over whole columns
(eval, grad, grad --reduce mean), and a CSV and a Parquet file of --rows rows through cgraph
(read_chunks, run_rows, RowWriter, as `cgraph eval|grad --rows FILE -o OUT` runs) against
pyarrow reading the file whole, NumPy and pyarrow writing the results, by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgraph_cli import parse  # noqa: E402
from cgraph_cli.app import api  # noqa: E402
from cgraph_cli.jobs.rows import CHUNK_ROWS, run_rows  # noqa: E402
from cgraph_cli.run.engine import engine  # noqa: E402

NEURON = (ROOT / "samples" / "neuron.cg").read_text()


def best(fn, runs: int, budget: float = 0.5) -> float:
    """The best of at least ``runs`` timings of one call of ``fn``; calls that are quick are
    repeated until they have taken ``budget`` seconds (at most 30 calls), against noise."""
    times: list[float] = []
    while len(times) < runs or (sum(times) < budget and len(times) < 30):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def chunks(columns: dict, n: int, size: int = CHUNK_ROWS):
    """``(file, first row, columns)`` triples of ``size`` rows, slicing whole columns."""
    for start in range(0, n, size):
        yield "bench", start, {k: v[start : start + size] for k, v in columns.items()}


# --- the programs: cgraph text, NumPy by hand, JAX -------------------------------------------
class Program:
    """A benchmark program: its text, its per-row columns and shared inputs, and the same
    computation by hand (``eval_np(**inputs) -> value``, ``grad_np(**inputs) -> (value,
    {input: gradient per row})``) and as a function of scalars for JAX (``scalar(xp)``)."""

    def __init__(self, name, text, per_row, shared, eval_np, grad_np, scalar):
        self.name, self.text, self.per_row, self.shared = name, text, per_row, shared
        self.eval_np, self.grad_np, self.scalar = eval_np, grad_np, scalar
        self.graph = parse(text)


def neuron() -> Program:
    def eval_np(x1, x2, w1, w2, b):
        return np.tanh(x1 * w1 + x2 * w2 + b)

    def grad_np(x1, x2, w1, w2, b):
        o = np.tanh(x1 * w1 + x2 * w2 + b)
        d = 1.0 - o * o
        return o, {"x1": d * w1, "x2": d * w2, "w1": d * x1, "w2": d * x2, "b": d}

    def scalar(xp):
        return lambda x1, x2, w1, w2, b: xp.tanh(x1 * w1 + x2 * w2 + b)

    shared = {"w1": -3.0, "w2": 1.0, "b": 6.8813735870195432}
    return Program("neuron", NEURON, ["x1", "x2"], shared, eval_np, grad_np, scalar)


def random_ops(count: int, seed: int = 0) -> tuple[list[str], list[str], list[tuple]]:
    """``count`` operations, each reading the one before (so every one is live) and a random
    earlier value; a bound on each value's magnitude picks only operations that keep it under
    8 (exp only of values under 2), so no row overflows or leaves a domain."""
    rng = random.Random(seed)
    per_row, shared = ["x1", "x2", "x3"], ["w1", "w2"]
    bound = {name: 1.0 for name in per_row + shared}
    ops, prev = [], "x1"
    for k in range(count):
        other = rng.choice([name for name in bound if name != prev])  # no t - t = 0 to fold
        choices = []
        if bound[prev] + bound[other] <= 8:
            choices += [("+", bound[prev] + bound[other]), ("-", bound[prev] + bound[other])]
        if bound[prev] * bound[other] <= 8:
            choices += [("*", bound[prev] * bound[other])] * 2
        choices += [("sin", 1.0), ("cos", 1.0), ("tanh", 1.0)]
        if bound[prev] <= 2:
            choices += [("exp", float(np.exp(bound[prev])))]
        op, b = rng.choice(choices)
        target = f"t{k}"
        ops.append((target, op, prev, other if op in "+-*" else None))
        bound[target] = b
        prev = target
    return per_row, shared, ops


def random_program(count: int = 100) -> Program:
    per_row, shared, ops = random_ops(count)
    weights = {"w1": 0.7, "w2": -0.4}
    lines = ["input x1 = 0.5, x2 = -0.25, x3 = 0.125", "input w1 = 0.7, w2 = -0.4"]
    for target, op, a, b in ops:
        lines.append(f"{target} = {a} {op} {b}" if b else f"{target} = {op}({a})")
    text = "\n".join(lines) + "\n"
    inputs = per_row + shared
    signature = ", ".join(inputs)

    forward = []
    for target, op, a, b in ops:
        forward.append(f"    {target} = {a} {op} {b}" if b else f"    {target} = xp.{op}({a})")

    # The reverse pass as a person writes it: one adjoint per value, in reverse, each
    # dropped once spent.
    backward, seen = [f"    g_{ops[-1][0]} = xp.ones_like({ops[-1][0]})"], {ops[-1][0]}

    def add(name: str, term: str) -> None:
        backward.append(
            f"    g_{name} = g_{name} + {term}" if name in seen else f"    g_{name} = {term}"
        )
        seen.add(name)

    for target, op, a, b in reversed(ops):
        g = f"g_{target}"
        if op == "+":
            add(a, g)
            add(b, g)
        elif op == "-":
            add(a, g)
            add(b, f"-{g}")
        elif op == "*":
            add(a, f"{g} * {b}")
            add(b, f"{g} * {a}")
        elif op == "sin":
            add(a, f"{g} * xp.cos({a})")
        elif op == "cos":
            add(a, f"-{g} * xp.sin({a})")
        elif op == "tanh":
            add(a, f"{g} * (1.0 - {target} * {target})")
        elif op == "exp":
            add(a, f"{g} * {target}")
        backward.append(f"    del {g}")  # spent: its memory goes back while still in cache
    grads = ", ".join(
        f"{n!r}: g_{n}" if n in seen else f"{n!r}: xp.zeros_like({ops[-1][0]})" for n in inputs
    )
    last = ops[-1][0]
    source = "\n".join(
        [f"def eval_np({signature}):", *forward, f"    return {last}", ""]
        + [f"def grad_np({signature}):", *forward, *backward, f"    return {last}, {{{grads}}}"]
    )
    namespace: dict = {"xp": np}
    exec(compile(source, "<by hand>", "exec"), namespace)

    def scalar(xp):
        ns: dict = {"xp": xp}
        exec(compile(source, "<by hand>", "exec"), ns)
        return ns["eval_np"]

    name = f"random program of {count} operations"
    return Program(name, text, per_row, weights, namespace["eval_np"], namespace["grad_np"], scalar)


# --- the contenders --------------------------------------------------------------------------
def row_columns(program: Program, n: int) -> dict:
    rng = np.random.default_rng(1)
    return {c: rng.uniform(-1.0, 1.0, n) for c in program.per_row}


def cgraph_run(program: Program, columns: dict, n: int, mode: str, reduce=None):
    return run_rows(
        program.graph, chunks(columns, n), mode=mode, bindings=program.shared, reduce=reduce
    )


def engine_run(program: Program, columns: dict, n: int, mode: str) -> None:
    one_row = {c: 0.0 for c in program.per_row}
    run = engine(
        program.graph,
        wrt=list(program.graph.inputs) if mode == "grad" else None,
        bindings={**program.shared, **one_row},
    )
    for _, _, cols in chunks(columns, n):
        inputs = {**program.shared, **cols}
        if mode == "eval":
            run.evaluate_rows(inputs, len(cols[program.per_row[0]]))
        else:
            run.grad_rows(inputs, len(cols[program.per_row[0]]))


def loop_rate(program: Program, columns: dict, rows: int, mode: str) -> float:
    """Rows per second of the library called once per row, on ``rows`` rows."""
    cells = {c: columns[c][:rows].tolist() for c in program.per_row}
    call = api.evaluate if mode == "eval" else api.grad
    t = time.perf_counter()
    for r in range(rows):
        bindings = {**program.shared, **{c: cells[c][r] for c in program.per_row}}
        result = call(program.graph, bindings)
        result.gradients if mode == "grad" else result.value  # noqa: B018
    return rows / (time.perf_counter() - t)


def jax_functions(program: Program):
    """(eval, grad, reduce-mean grad) under jax.jit, or None when JAX does not import."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    f = program.scalar(jnp)
    k = len(program.per_row)
    names = program.per_row + list(program.shared)
    axes = (0,) * k + (None,) * len(program.shared)
    argnums = tuple(range(len(names)))
    ev = jax.jit(jax.vmap(f, in_axes=axes))
    gr = jax.jit(jax.vmap(jax.value_and_grad(f, argnums=argnums), in_axes=axes))

    def mean(*args):
        return jnp.mean(jax.vmap(f, in_axes=axes)(*args))

    red = jax.jit(jax.value_and_grad(mean, argnums=tuple(range(k, len(names)))))

    def call(fn):
        def run(columns):
            args = [columns[c] for c in program.per_row] + list(program.shared.values())
            return jax.block_until_ready(fn(*args))

        return run

    return call(ev), call(gr), call(red)


def check(program: Program, columns: dict) -> None:
    """cgraph's rows and the hand-written NumPy agree (the figures compare like with like)."""
    m = 1000
    few = {c: v[:m] for c, v in columns.items()}
    result = cgraph_run(program, few, m, "grad")
    table = result.tables[0]
    value, grads = program.grad_np(**few, **program.shared)
    out = program.graph.display_name(program.graph.output)
    assert result.errors == 0, result.tables[0]["error"][:3]
    assert np.allclose(table[out], value, rtol=1e-9, atol=1e-12)
    for name, g in grads.items():
        column = [k for k in table if k.startswith("d") and k.endswith("_d" + name)][0]
        assert np.allclose(table[column], g, rtol=1e-9, atol=1e-12), name
    assert np.allclose(program.eval_np(**few, **program.shared), value)


def rate(seconds: float, n: int) -> str:
    return f"{n / seconds:>11,.0f}" if seconds else f"{'-':>11}"


def ratio(mine: float, theirs: float) -> str:
    return f"{mine / theirs:>6.2f}" if theirs else f"{'-':>6}"


def by_chunks(fn, columns: dict, shared: dict, n: int):
    """``fn`` by hand over the same chunks cgraph gets, results kept as run_rows keeps its
    tables: each chunk's arrays stay in cache, as whole columns of 1e6 rows do not."""
    return [fn(**cols, **shared) for _, _, cols in chunks(columns, n)]


HEADER = (
    f"  {'mode':<18} {'cgraph':>11} {'engine':>11} {'numpy':>11} {'ratio':>6}"
    f" {'np chunks':>11} {'ratio':>6} {'loop*':>9} {'x loop':>7} {'jax':>11} {'ratio':>6}"
)


def throughput(program: Program, n: int, runs: int, loop_rows: int, use_jax: bool) -> None:
    columns = row_columns(program, n)
    check(program, columns)
    whole = {**columns, **program.shared}
    cgraph_run(program, columns, min(n, 1000), "grad")  # compiles the engines: not timed
    cgraph_run(program, columns, min(n, 1000), "eval")
    jx = jax_functions(program) if use_jax else None
    graph = program.graph
    ops = len(graph.ops) - len(graph.inputs)
    print(
        f"{program.name} ({len(graph.inputs)} inputs, {ops} operations; per-row columns "
        f"{', '.join(program.per_row)}): {n:,} rows, rows/s, best of {runs} or more"
    )
    print(HEADER)
    for mode in ("eval", "grad"):
        t_cg = best(lambda m=mode: cgraph_run(program, columns, n, m), runs)
        t_en = best(lambda m=mode: engine_run(program, columns, n, m), runs)
        hand = program.eval_np if mode == "eval" else program.grad_np
        t_np = best(lambda h=hand: h(**whole), runs)
        t_nc = best(lambda h=hand: by_chunks(h, columns, program.shared, n), runs)
        loop = loop_rate(program, columns, loop_rows, mode)
        t_jx = 0.0
        if jx is not None:
            fn = jx[0] if mode == "eval" else jx[1]
            fn(columns)  # compiles: not timed
            t_jx = best(lambda f=fn: f(columns), runs)
        print(
            f"  {mode:<18} {rate(t_cg, n)} {rate(t_en, n)} {rate(t_np, n)} {ratio(t_cg, t_np)}"
            f" {rate(t_nc, n)} {ratio(t_cg, t_nc)} {loop:>9,.0f} {n / t_cg / loop:>7,.0f}"
            f" {rate(t_jx, n)} {ratio(t_cg, t_jx)}"
        )
    if program.name == "neuron":
        reduce_mean(program, columns, n, runs, jx)
    print(
        f"  (ratio: cgraph's time over the column to its left; numpy: by hand over whole"
        f" columns, np chunks: the same over chunks of {CHUNK_ROWS:,} rows; engine: the"
        f" compiled module alone over the chunks; * loop: api.evaluate/api.grad once per row,"
        f" timed on {loop_rows:,} rows and extrapolated; x loop: cgraph's rate over the loop's)"
    )
    print()


def reduce_mean(program: Program, columns: dict, n: int, runs: int, jx) -> None:
    whole = {**columns, **program.shared}

    def by_hand():
        value, grads = program.grad_np(**whole)
        return value.mean(), {w: grads[w].mean() for w in program.shared}

    def by_hand_chunks():
        value, sums = 0.0, dict.fromkeys(program.shared, 0.0)
        for _, _, cols in chunks(columns, n):
            v, grads = program.grad_np(**cols, **program.shared)
            value += v.sum()
            for w in sums:
                sums[w] += grads[w].sum()
        return value / n, {w: g / n for w, g in sums.items()}

    t_cg = best(lambda: cgraph_run(program, columns, n, "grad", reduce="mean"), runs)
    t_np = best(by_hand, runs)
    t_nc = best(by_hand_chunks, runs)
    got = cgraph_run(program, columns, n, "grad", reduce="mean")
    for want in (by_hand(), by_hand_chunks()):
        assert np.isclose(got.value, want[0]) and all(
            np.isclose(got.gradients[w], want[1][w]) for w in program.shared
        )
    t_jx = 0.0
    if jx is not None:
        jx[2](columns)
        t_jx = best(lambda: jx[2](columns), runs)
    print(
        f"  {'grad --reduce mean':<18} {rate(t_cg, n)} {'':>11} {rate(t_np, n)}"
        f" {ratio(t_cg, t_np)} {rate(t_nc, n)} {ratio(t_cg, t_nc)} {'':>17}"
        f" {rate(t_jx, n)} {ratio(t_cg, t_jx)}"
    )
    print(
        "  (--reduce mean: the mean of the value and of the gradients of the shared w1, w2, b;"
        " by hand: the per-row grad, then the means; jax: the grad of the mean)"
    )


# --- a file larger than a chunk ----------------------------------------------------------------
def write_input(path: str, fmt: str, n: int) -> None:
    from cgraph_cli.data.datawriter import RowWriter

    rng = np.random.default_rng(n)
    writer = RowWriter(path, fmt)
    for start in range(0, n, CHUNK_ROWS):
        m = min(CHUNK_ROWS, n - start)
        writer.write({"x1": rng.uniform(-1, 1, m), "x2": rng.uniform(-1, 1, m)})
    writer.close()


def file_child(path: str, fmt: str, out: str, runs_text: str) -> None:
    """In a fresh process: stream ``path`` through run_rows (eval) into ``out``, and print the
    figures as JSON: the peak memory of the first run, the times of the best of ``runs_text``."""
    runs = max(1, int(runs_text))
    import tracemalloc

    from cgraph_cli.data.datafiles import pyarrow, read_chunks
    from cgraph_cli.data.datawriter import RowWriter

    def maxrss() -> int:
        """The peak RSS in bytes: Linux's VmHWM, which clear_refs resets (getrusage's
        ru_maxrss also keeps the peak of the process that forked this one), else getrusage."""
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return r if sys.platform == "darwin" else r * 1024

    def reset_peak() -> bool:
        """Set the peak RSS to the current RSS (Linux: clear_refs), so that the peak the
        imports left does not hide the run's."""
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    graph = parse(NEURON)
    if fmt != "npz":
        pyarrow(fmt)
        import pyarrow.csv  # noqa: F401
        import pyarrow.parquet  # noqa: F401

    def once(path=path, out=out):
        spent = {"read": 0.0, "write": 0.0}
        source = read_chunks([path], fmt, CHUNK_ROWS)

        def timed_chunks():
            while True:
                t = time.perf_counter()
                try:
                    chunk = next(source)
                except StopIteration:
                    spent["read"] += time.perf_counter() - t
                    return
                spent["read"] += time.perf_counter() - t
                yield chunk

        writer = RowWriter(out, fmt)

        def write(table):
            t = time.perf_counter()
            writer.write(table)
            spent["write"] += time.perf_counter() - t

        t = time.perf_counter()
        result = run_rows(graph, timed_chunks(), mode="eval", write=write)
        t_close = time.perf_counter()
        writer.close()
        spent["write"] += time.perf_counter() - t_close
        spent["total"] = time.perf_counter() - t
        return result, spent

    # A tiny file the same way first: the imports on the way (pyarrow's to_numpy imports
    # pandas when installed) and the compile are not the run's memory.
    tiny = os.path.join(os.path.dirname(out), f"tiny.{fmt}")
    write_input(tiny, fmt, 8)
    once(tiny, tiny + ".out")
    before, reset = maxrss(), reset_peak()
    if reset:  # the peak is now the current RSS: growth from here is the run's own
        before = maxrss()
    result, spent = once()
    after = maxrss()
    for _ in range(runs - 1):  # the first run pays for pyarrow's threads and fresh pages
        again = once()[1]
        spent = again if again["total"] < spent["total"] else spent
    tracemalloc.start()
    once()
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    pool = None
    if fmt != "npz":
        import pyarrow as pa

        pool = pa.default_memory_pool().max_memory()
    figures = {
        "rows": result.rows,
        "errors": result.errors,
        "rss_before": before,
        "peak_reset": reset,
        "rss_growth": after - before,
        "traced_peak": traced,
        "arrow_pool_peak": pool,
        **spent,
    }
    print(json.dumps(figures))


def file_run(rows: int, fmt: str, runs: int) -> None:
    sizes = sorted({max(rows // 10, 1), rows, 3 * rows})
    print(
        f"a {fmt.upper()} file of x1, x2 through read_chunks + run_rows (eval, neuron) + RowWriter,"
        f" chunks of {CHUNK_ROWS:,} rows, one fresh process per file; best of {runs}"
    )
    if fmt == "npz":
        print("  (pyarrow does not import here: .npz, which cgraph reads whole, not streamed)")
    print(
        f"  {'rows':>10} {'file MB':>8} {'rows/s':>11} {'read':>6} {'compute':>8} {'write':>6}"
        f" {'RSS +MB':>8} {'traced MB':>10} {'arrow MB':>9} {'RSS/file':>9}"
    )
    reset = False
    with tempfile.TemporaryDirectory(prefix="cgraph-bench-") as tmp:
        for n in sizes:
            path = os.path.join(tmp, f"in-{n}.{fmt}")
            out = os.path.join(tmp, f"out-{n}.{fmt}")
            write_input(path, fmt, n)
            size = os.path.getsize(path)
            done = subprocess.run(
                [sys.executable, __file__, "--file-child", path, fmt, out, str(runs)],
                capture_output=True,
                text=True,
                check=True,
            )
            f = json.loads(done.stdout.strip().splitlines()[-1])
            reset = f["peak_reset"]
            total = f["total"]
            compute = total - f["read"] - f["write"]
            mb = 1 / 2**20
            arrow = "-" if f["arrow_pool_peak"] is None else f"{f['arrow_pool_peak'] * mb:.1f}"
            print(
                f"  {f['rows']:>10,} {size * mb:>8.1f} {f['rows'] / total:>11,.0f}"
                f" {f['read'] / total:>6.0%} {compute / total:>8.0%} {f['write'] / total:>6.0%}"
                f" {f['rss_growth'] * mb:>8.1f} {f['traced_peak'] * mb:>10.1f} {arrow:>9}"
                f" {f['rss_growth'] / size:>9.2f}"
            )
    one_chunk = CHUNK_ROWS * 8 * (2 + 1)
    since = (
        "the RSS after imports (peak reset through /proc/self/clear_refs)"
        if reset
        else "the peak after imports (which may hide a smaller run: not resettable here)"
    )
    print(
        f"  (read/compute/write: shares of the time; RSS +MB: the run's peak RSS over {since};"
        f" traced: tracemalloc's peak (NumPy's buffers, Python objects); arrow: pyarrow's pool"
        f" peak; RSS/file: RSS +MB over the file's size. One chunk of x1, x2 and o as float64"
        f" is {one_chunk / 2**20:.1f} MB)"
    )


# --- in turns: per-round ratios against NumPy by hand, in process and through files --------
def _spread(ratios: list[float]) -> str:
    import statistics

    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def turns(program: Program, n: int, rounds: int) -> None:
    """cgraph's run_rows and NumPy by hand over whole columns, timed in turns round by round
    (CPU time of this thread: the other processes of a loaded machine weigh less), for eval,
    grad and grad --reduce mean: the median and range of the per-round ratios."""
    columns = row_columns(program, n)
    check(program, columns)
    whole = {**columns, **program.shared}
    for mode in ("eval", "grad"):
        cgraph_run(program, columns, min(n, 1000), mode)  # compiles: not timed

    def mean_by_hand():
        value, grads = program.grad_np(**whole)
        return value.mean(), {w: grads[w].mean() for w in program.shared}

    contenders = {
        "eval": (lambda: cgraph_run(program, columns, n, "eval"), lambda: program.eval_np(**whole)),
        "grad": (lambda: cgraph_run(program, columns, n, "grad"), lambda: program.grad_np(**whole)),
        "grad --reduce mean": (
            lambda: cgraph_run(program, columns, n, "grad", reduce="mean"),
            mean_by_hand,
        ),
    }
    for mode in ("eval", "grad"):  # each chunk's table handed on and dropped, as -o FILE does
        contenders[f"{mode}, streamed"] = (
            lambda m=mode: run_rows(
                program.graph,
                chunks(columns, n),
                mode=m,
                bindings=program.shared,
                write=lambda table: None,
            ),  # fmt: skip
            contenders[mode][1],
        )
    if program.name != "neuron":
        del contenders["grad --reduce mean"]
    print(f"{program.name}, {n:,} rows, chunks of {CHUNK_ROWS:,}: {rounds} rounds in turns")
    print(f"  {'mode':<20} {'cgraph ms':>10} {'numpy ms':>9}  ratio: median (range)")
    for mode, (mine, theirs) in contenders.items():
        ratios, a, b = [], [], []
        for _ in range(rounds):
            a.append(cpu(mine))
            b.append(cpu(theirs))
            ratios.append(a[-1] / b[-1])
        print(f"  {mode:<20} {sorted(a)[rounds // 2] * 1e3:>10.1f} {sorted(b)[rounds // 2] * 1e3:>9.1f}"
              f"  {_spread(ratios)}")  # fmt: skip
    print()


def cpu(fn) -> float:
    """The CPU time of this thread that ``fn()`` takes."""
    t = time.thread_time()
    fn()
    return time.thread_time() - t


def wall(fn) -> float:
    """The wall time ``fn()`` takes."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def by_hand_file(path: str, fmt: str, out: str, mode: str) -> None:
    """The neuron over a file by hand: pyarrow reads it whole, NumPy computes over whole
    columns, pyarrow writes the value (and, for grad, the gradients)."""
    import pyarrow as pa
    import pyarrow.csv as pc
    import pyarrow.parquet as pq

    table = pc.read_csv(path) if fmt == "csv" else pq.read_table(path)
    p = neuron()
    x1, x2 = (table[c].to_numpy() for c in ("x1", "x2"))
    if mode == "eval":
        columns = {"o": p.eval_np(x1, x2, **p.shared)}
    else:
        value, grads = p.grad_np(x1, x2, **p.shared)
        columns = {"o": value, **{f"do_d{k}": v for k, v in grads.items()}}
    result = pa.table(columns)
    if fmt == "csv":
        pc.write_csv(result, out)
    else:  # numbers without dictionary encoding, as cgraph writes them (8x faster)
        pq.write_table(result, out, use_dictionary=False)


def cgraph_file(path: str, fmt: str, out: str, mode: str) -> None:
    """The same through cgraph, as ``cgraph eval|grad --rows FILE -o OUT`` runs it:
    read_chunks, run_rows a chunk at a time, RowWriter (with the error column)."""
    from cgraph_cli.data.datafiles import read_chunks
    from cgraph_cli.data.datawriter import RowWriter
    from cgraph_cli.data.outputs import forget_all
    from cgraph_cli.jobs.rows import number_columns

    p = neuron()
    writer = RowWriter(out, fmt)
    numbers = number_columns(p.graph)  # the inputs read as numbers, as the command does
    chunks = read_chunks([path], fmt, CHUNK_ROWS, numbers=numbers)
    run_rows(p.graph, chunks, mode=mode, bindings=p.shared, write=writer.write)
    writer.close()
    forget_all()  # the files this "command" read: the next one's (a deleted file's inode
    # may come back as a new output's, which cgraph would refuse to overwrite)


def end_to_end(fmt: str, n: int, rounds: int) -> None:
    """A file of ``n`` rows of x1, x2 through cgraph and by hand (pyarrow + NumPy), in turns:
    the per-round ratios, after checking that both wrote the same values."""
    import pyarrow.csv as pc
    import pyarrow.parquet as pq

    read = pc.read_csv if fmt == "csv" else pq.read_table
    print(f"end to end, a {fmt.upper()} file of {n:,} rows, neuron: {rounds} rounds in turns")
    print(f"  {'mode':<6} {'cgraph ms':>10} {'by hand ms':>11}  ratio: median (range)")
    with tempfile.TemporaryDirectory(prefix="cgraph-bench-") as tmp:
        path = os.path.join(tmp, f"in.{fmt}")
        write_input(path, fmt, n)
        mine, theirs = os.path.join(tmp, f"mine.{fmt}"), os.path.join(tmp, f"theirs.{fmt}")
        for mode in ("eval", "grad"):
            cgraph_file(path, fmt, mine, mode)
            by_hand_file(path, fmt, theirs, mode)
            a_table, b_table = read(mine), read(theirs)
            for c in b_table.column_names:
                assert np.allclose(a_table[c].to_numpy(), b_table[c].to_numpy(), rtol=1e-12), c
            del a_table, b_table  # (a Parquet file read stays open: cgraph won't overwrite it)
            ratios, a, b = [], [], []
            for _ in range(rounds):
                a.append(wall(lambda m=mode: cgraph_file(path, fmt, mine, m)))
                b.append(wall(lambda m=mode: by_hand_file(path, fmt, theirs, m)))
                ratios.append(a[-1] / b[-1])
            print(f"  {mode:<6} {sorted(a)[rounds // 2] * 1e3:>10.1f} {sorted(b)[rounds // 2] * 1e3:>11.1f}"
                  f"  {_spread(ratios)}")  # fmt: skip
    print(
        "  (wall time: pyarrow's threads read and write on both sides; cgraph also writes the"
        " error column, empty)"
    )
    print()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="1e5 rows, files of 2e4, 2e5, 6e5 rows")
    ap.add_argument("--rows", type=int, help="rows per throughput run (default 1e6)")
    ap.add_argument("--file-rows", type=int, help="rows of the middle file (default 2e6)")
    ap.add_argument(
        "--formats", default="csv,parquet", help="file formats to stream (csv, parquet, npz)"
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-jax", action="store_true", help="leave JAX out even if it imports")
    ap.add_argument("--file-child", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument(
        "--turns",
        type=int,
        metavar="ROUNDS",
        help="only the comparisons in turns: cgraph and NumPy by hand, in process and through"
        " CSV and Parquet files (pyarrow + NumPy by hand), median and range of per-round ratios",
    )
    args = ap.parse_args()
    if args.file_child:
        file_child(*args.file_child)
        return
    if args.turns:
        n = args.rows or (100_000 if args.quick else 1_000_000)
        turns(neuron(), n, args.turns)
        turns(random_program(100), n, args.turns)
        for fmt in args.formats.split(","):
            if fmt != "npz":
                end_to_end(fmt, n, args.turns)
        return
    n = args.rows or (100_000 if args.quick else 1_000_000)
    file_rows = args.file_rows or (200_000 if args.quick else 2_000_000)
    loop_rows = 500 if args.quick else 2_000
    try:
        import jax

        jax_note = f"jax {jax.__version__} (float64, CPU)"
    except ImportError:
        jax_note = "no jax in this interpreter: its column is left empty"
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {jax_note}\n")
    use_jax = not args.no_jax
    throughput(neuron(), n, args.runs, loop_rows, use_jax)
    throughput(random_program(100), n, args.runs, loop_rows, use_jax)
    formats = args.formats.split(",")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        formats = ["npz"]
    for k, fmt in enumerate(formats):
        if k:
            print()
        file_run(file_rows, fmt, args.runs)


if __name__ == "__main__":
    main()
