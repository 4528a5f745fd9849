"""How long the CLI's everyday commands take as whole processes, against `mmkg --version` in the same run.

A fresh `mmkg init` project is built once in a temporary folder; then each command runs ``--runs`` times,
interleaved with `mmkg --version` (A B A B ...), and the median wall time and the median of the pairwise ratios
are printed. The issue's targets (78, item 6): a query ≤ 1.5 s, an empty query refused in ≤ 0.5 s, and
`mmkg index build` with nothing to do ≤ 2× `mmkg index status`; issue 83: `mmkg ask` with the default span reader
≤ 2 s (SmolLM2 and the rule reader alone beside it).

    .venv/bin/python benchmarks/cli_latency.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MMKG = str(Path(sys.executable).parent / "mmkg")
COMMANDS = {
    "query": ["query", "Who commanded STS-93?", "--k", "3"],
    "empty query (refused)": ["query", "  "],
    "index status": ["index", "status"],
    "index build (nothing to do)": ["index", "build"],
    "index update (nothing to do)": ["index", "update"],
    "ask (span reader, default)": ["ask", "Who commanded STS-93?"],
    "ask (MMKG_READER_MODEL=smollm2)": ["ask", "Who commanded STS-93?", {"MMKG_READER_MODEL": "smollm2"}],
    "ask (MMKG_READER_MODEL=off)": ["ask", "Who commanded STS-93?", {"MMKG_READER_MODEL": "off"}],
}


def wall(args: list, cwd: Path, env: dict[str, str]) -> float:
    """Seconds ``mmkg ARGS`` takes as a whole process (a dict last in ``args`` adds to the environment)."""
    extra = args[-1] if args and isinstance(args[-1], dict) else {}
    argv = [a for a in args if not isinstance(a, dict)]
    t0 = time.perf_counter()
    subprocess.run([MMKG, *argv], cwd=cwd, env=env | extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)  # fmt: skip
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", default="", help="only the commands whose name holds this text (e.g. ask)")
    args = parser.parse_args()
    commands = {name: cmd for name, cmd in COMMANDS.items() if args.only in name}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MMKG_", "DAGSTER_"))}
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "kb"
        subprocess.run([MMKG, "init", str(project)], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([MMKG, "index", "build"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
        base = ["--version"]
        for args_ in (base, *commands.values()):  # one warm-up each (page cache, .pyc files)
            wall(args_, project, env)
        rows = []
        for name, cmd in commands.items():
            times, ratios = [], []
            for _ in range(args.runs):
                b = wall(base, project, env)
                a = wall(cmd, project, env)
                times.append(a)
                ratios.append(a / b)
            rows.append((name, statistics.median(times), min(times), max(times), statistics.median(ratios)))
        version = statistics.median(wall(base, project, env) for _ in range(args.runs))
    print(f"{'command':<30} {'median s':>9} {'min':>6} {'max':>6} {'× --version':>12}")
    print(f"{'mmkg --version':<30} {version:>9.2f}")
    for name, med, lo, hi, ratio in rows:
        print(f"{name:<30} {med:>9.2f} {lo:>6.2f} {hi:>6.2f} {ratio:>12.1f}")


if __name__ == "__main__":
    main()
