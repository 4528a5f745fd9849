"""What keeping the Dagster instance in PostgreSQL costs a build, against the SQLite default, in the same run.

Two `mmkg init` projects (the sample partition) are built once each; then `mmkg index build --force` runs
``--runs`` times on each, alternating, and the median wall time of the command and of its partition run (the
"✓ partition space in …" line) are printed with the ratio PostgreSQL / SQLite.

    .venv/bin/python benchmarks/instance_storage.py --postgres-url postgresql+psycopg2://USER@HOST:PORT/DB [--runs 3]

The database should be empty (a fresh one: the runs of both projects would otherwise mix in one instance).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MMKG = str(Path(sys.executable).parent / "mmkg")
PARTITION = re.compile(r"✓ partition \S+ in (?:(\d+):)?(\d+(?:\.\d+)?)")


def build(project: Path, env: dict[str, str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    out = subprocess.run([MMKG, "index", "build", "--force"], cwd=project, env={**env, "COLUMNS": "200"},
                         capture_output=True, text=True, check=True)  # fmt: skip
    wall = time.perf_counter() - t0
    m = PARTITION.search(out.stdout)
    if m is None:
        raise RuntimeError(f"no partition time in:\n{out.stdout}")
    return wall, int(m.group(1) or 0) * 60 + float(m.group(2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres-url", required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MMKG_", "DAGSTER_"))}
    envs = {"sqlite": base, "postgres": {**base, "MMKG_DAGSTER_POSTGRES_URL": args.postgres_url}}
    with tempfile.TemporaryDirectory() as tmp:
        projects = {}
        for name, env in envs.items():
            subprocess.run([MMKG, "init", name], cwd=tmp, env=env, check=True, capture_output=True)
            projects[name] = Path(tmp) / name
            build(projects[name], env)  # the first build fills the caches both then reuse alike
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
        for _ in range(args.runs):
            for name, env in envs.items():
                times[name].append(build(projects[name], env))
    print(f"{'instance':<10} {'command s':>10} {'partition run s':>16}")
    med = {}
    for name, rows in times.items():
        med[name] = (statistics.median(w for w, _ in rows), statistics.median(p for _, p in rows))
        print(f"{name:<10} {med[name][0]:>10.1f} {med[name][1]:>16.1f}")
    print(f"{'pg/sqlite':<10} {med['postgres'][0] / med['sqlite'][0]:>10.2f} "
          f"{med['postgres'][1] / med['sqlite'][1]:>16.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
