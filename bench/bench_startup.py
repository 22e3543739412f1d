"""Start-up benchmark: how long `cgraph eval 'x + 1' x=2 --format json` takes, against
`python -c 'import click'` and a bare `python -c pass`, and what it imports.

CI scripts call cgraph many times, so every command pays its start-up. Run with::

    .venv/bin/python bench/bench_startup.py            # median of 20 runs of each
    .venv/bin/python bench/bench_startup.py --runs 50 --top 20 --check 1.3
    .venv/bin/python bench/bench_startup.py --baseline /tmp/before   # before/after figures

It prints the median times, the ratio to `import click` (the target: at most 1.3), the
`-X importtime` entries with the largest cumulative times for the eval command (each the
median over several runs), and the modules the command imports that `import click` does not.
``--check RATIO`` exits 1 when the ratio of wall times is above RATIO. CPU times are printed\ntoo: on a machine shared with other work they vary less than wall times.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ["eval", "x + 1", "x=2", "--format", "json"]


def cgraph_command() -> list[str]:
    """The installed entry point next to this Python (as a user runs it), else ``-m``."""
    exe = Path(sys.executable).parent / "cgraph"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("cgraph")
    return [found] if found else [sys.executable, "-m", "cgraph_cli"]


def byte_compile(root: Path) -> None:
    """As after `pip install`, which byte-compiles: some machines set PYTHONDONTWRITEBYTECODE,
    and an editable install would otherwise compile the package on every run."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "cgraph_cli")], check=True)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def medians(
    commands: dict[str, tuple[list[str], dict[str, str]]], runs: int
) -> dict[str, tuple[float, float]]:
    """Median wall time and median CPU time (user + system) of each command (argv, extra
    environment), in seconds. The commands take turns, so a busy moment of the machine is
    spread over all of them; CPU time varies less than wall time on a machine shared with
    other work."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for cmd, extra in commands.values():  # warm the file caches
        subprocess.run(cmd, capture_output=True, check=True, env={**env, **extra})
    for _ in range(runs):
        for name, (cmd, extra) in commands.items():
            c, t = _cpu(), time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=True, env={**env, **extra})
            wall[name].append(time.perf_counter() - t)
            cpu[name].append(_cpu() - c)
    return {
        name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in commands
    }


def import_times(argv: list[str], runs: int) -> dict[str, tuple[float, float]]:
    """``-X importtime`` of ``argv``: module -> (median self µs, median cumulative µs)."""
    seen: dict[str, list[tuple[int, int]]] = {}
    for _ in range(runs):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, check=True
        ).stderr
        for line in err.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, cumulative, name = line[len("import time:") :].split("|")
            seen.setdefault(name.strip(), []).append((int(own), int(cumulative)))
    return {
        name: (statistics.median(o for o, _ in v), statistics.median(c for _, c in v))
        for name, v in seen.items()
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=20, help="runs of each command (default 20)")
    ap.add_argument("--top", type=int, default=15, help="importtime entries shown (default 15)")
    ap.add_argument("--check", type=float, metavar="RATIO", help="exit 1 above this ratio")
    ap.add_argument(
        "--baseline",
        metavar="DIR",
        help="also time the cgraph_cli package of DIR (a checkout of another commit: "
        "git worktree add, or git archive COMMIT | tar -x -C DIR), in turns with the others",
    )
    args = ap.parse_args()

    byte_compile(ROOT)
    cgraph = cgraph_command()
    commands = {
        "cgraph": (cgraph + COMMAND, {}),
        "click": ([sys.executable, "-c", "import click"], {}),
        "bare": ([sys.executable, "-c", "pass"], {}),
    }
    labels = {
        "cgraph": "cgraph eval 'x + 1' x=2 --format json",
        "click": "python -c 'import click'",
        "bare": "python -c pass",
    }
    if args.baseline:  # the same command, importing cgraph_cli from another checkout
        byte_compile(Path(args.baseline))
        commands["baseline"] = (cgraph + COMMAND, {"PYTHONPATH": str(Path(args.baseline))})
        labels["baseline"] = f"  the same, from {args.baseline}"
    times = medians(commands, args.runs)
    print(f"start-up, median of {args.runs} runs each:   wall       CPU    ratio to import click")
    for name, label in labels.items():
        wall, cpu = times[name]
        ratios = f"{wall / times['click'][0]:.2f}  (CPU {cpu / times['click'][1]:.2f})"
        print(f"  {label:<38} {wall * 1e3:6.1f} ms {cpu * 1e3:6.1f} ms  {ratios}")
    ratio = times["cgraph"][0] / times["click"][0]

    script = cgraph[-1] if cgraph[0] != sys.executable else "-m cgraph_cli"
    ours = import_times([*script.split(), *COMMAND], runs=5)
    theirs = import_times(["-c", "import click"], runs=1)
    print(f"\n-X importtime of the eval command, top {args.top} by cumulative time (median of 5):")
    print(f"  {'cumulative':>10}  {'self':>8}  module")
    for name, (own, cumulative) in sorted(ours.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"  {cumulative / 1e3:8.1f}ms  {own / 1e3:6.1f}ms  {name}")
    extra = sorted(set(ours) - set(theirs), key=lambda n: -ours[n][0])
    total = sum(ours[n][0] for n in extra) / 1e3
    print(f"\nimported beyond `import click`: {len(extra)} modules, {total:.1f} ms of own time:")
    print("  " + ", ".join(f"{n} {ours[n][0] / 1e3:.1f}" for n in extra[:40]))
    if args.check is not None and ratio > args.check:
        print(f"\nratio {ratio:.2f} is above {args.check}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
