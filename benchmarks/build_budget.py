"""Cold builds of a baseline revision and of this checkout, in alternating pairs: wall and CPU seconds, and ratios.

    python benchmarks/build_budget.py --pdfs ../shared/datasets/mmlongbench-dev/documents \\
        --baseline 13a3772 --pairs 2 --work /tmp/budget

A budget such as issue 40's "build time within +15 %" cannot be read off one pair of builds on a shared 2-core
machine: a step that does the same work in both builds (OCR of the same pictures) moves by ±14 % between them.
This runs the baseline (a detached git worktree of ``--baseline`` under ``<work>/tree-<rev>``) and the candidate
(this checkout, or ``--candidate REV``) one after the other, ``--pairs`` times, the baseline first in the first
pair and the order swapped in each next one, so a machine that slows or warms over the run favours neither. Each
build is ``mmkg index build --cold --force`` of one corpus (one partition per PDF, under ``<work>/corpus``) into
a fresh data root, in a child process run from its own tree.

Per build it records the wall seconds, the CPU seconds of the child and every process it waited for (parser and
table workers included; ``resource.RUSAGE_CHILDREN``) and the load average before it starts, and per pair the
ratios candidate / baseline; then the mean and median ratios, and each step's mean difference (Dagster's step
durations, ``build_steps.step_seconds``). CPU seconds are the steadier figure: another process on the machine
lengthens the wall time of a build more than the work it does. ``--out`` keeps every figure as JSON. Nothing else
should run meanwhile: a load average above the cores at a build's start is printed beside it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.build_steps import step_seconds  # noqa: E402
from benchmarks.mmlb_build import pdf_corpus  # noqa: E402


def _tree(rev: str, work: Path) -> Path:
    """A detached worktree of ``rev`` under ``work`` (made once; reused when it is already at ``rev``)."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"], check=True,
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    tree = work / f"tree-{sha[:10]}"
    if not (tree / ".git").exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(tree), sha],
                       check=True, capture_output=True)  # fmt: skip
    return tree


def build_once(tree: Path, corpus: Path, data_root: Path) -> dict[str, Any]:
    """One cold build of ``corpus`` into a fresh ``data_root`` by the code of ``tree``: wall and CPU seconds, the
    load average before it, and the seconds of each Dagster step."""
    shutil.rmtree(data_root, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "YOLO_OFFLINE": "1"}
    cmd = [sys.executable, "-c", "from mmkg.cli import app; app()", "index", "build", "--corpus", str(corpus),
           "--data-root", str(data_root), "--cold", "--force"]  # fmt: skip
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise SystemExit(f"the build by {tree} failed (exit {done.returncode}):\n{tail}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "load_before": load, "steps": step_seconds(data_root)}


def main(
    pdfs: Annotated[Path, typer.Option(help="Folder of PDFs: one corpus partition per PDF.")],
    baseline: Annotated[str, typer.Option(help="The git revision measured against.")],
    work: Annotated[Path, typer.Option(help="Folder for the worktrees, the corpus and the data roots.")],
    candidate: Annotated[str | None, typer.Option(help="A git revision (default: this checkout as it is).")] = None,
    pairs: Annotated[int, typer.Option(min=1, help="Pairs of builds; the order swaps in each next pair.")] = 2,
    out: Annotated[Path | None, typer.Option(help="Write every figure here as JSON.")] = None,
    most: Annotated[int, typer.Option(help="Steps listed by their mean difference.")] = 8,
) -> None:
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus"
    pdf_corpus(pdfs, corpus)
    trees = {"baseline": _tree(baseline, work), "candidate": _tree(candidate, work) if candidate else ROOT}
    console = Console(width=max(140, shutil.get_terminal_size().columns))  # the table whole in a log file too
    cores = os.cpu_count() or 1
    rows: list[dict] = []
    for i in range(pairs):
        order = ("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline")
        row: dict = {"pair": i + 1, "order": f"{order[0]} first"}
        for side in order:
            console.print(f"pair {i + 1}: {side} build ({trees[side]})", highlight=False)
            row[side] = build_once(trees[side], corpus, work / f"data-{side}")
            if row[side]["load_before"] > cores:
                load = row[side]["load_before"]
                console.print(f"  load average {load:.1f} on {cores} cores at the start: another process shares "
                              "the machine, the figures are doubtful", style="yellow")  # fmt: skip
        for key in ("wall_s", "cpu_s"):
            row[f"{key}_ratio"] = row["candidate"][key] / row["baseline"][key]
        rows.append(row)

    table = Table(title=f"cold builds of {corpus}: {baseline} (baseline) → {candidate or 'this checkout'}")
    for col in ("pair", "order", "baseline wall s", "candidate wall s", "wall ratio", "baseline CPU s",
                "candidate CPU s", "CPU ratio"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("pair", "order") else "right")
    for r in rows:
        b, c = r["baseline"], r["candidate"]
        table.add_row(str(r["pair"]), r["order"], f"{b['wall_s']:.1f}", f"{c['wall_s']:.1f}",
                      f"{r['wall_s_ratio']:.3f}", f"{b['cpu_s']:.1f}", f"{c['cpu_s']:.1f}",
                      f"{r['cpu_s_ratio']:.3f}")  # fmt: skip
    stats = (("mean", statistics.fmean), ("median", statistics.median))
    summary = {f"{stat}_{key}": fn([r[f"{key}_ratio"] for r in rows])
               for stat, fn in stats for key in ("wall_s", "cpu_s")}  # fmt: skip
    table.add_row("mean", "", "", "", f"{summary['mean_wall_s']:.3f}", "", "", f"{summary['mean_cpu_s']:.3f}")
    table.add_row("median", "", "", "", f"{summary['median_wall_s']:.3f}", "", "", f"{summary['median_cpu_s']:.3f}")
    console.print(table)

    steps = {k for r in rows for side in ("baseline", "candidate") for k in r[side]["steps"]}
    means = {k: [statistics.fmean(r[side]["steps"].get(k, 0.0) for r in rows) for side in ("baseline", "candidate")]
             for k in steps}  # fmt: skip
    by_step = Table(title="steps by their mean difference, candidate − baseline (wall seconds)")
    for col in ("step", "baseline s", "candidate s", "difference"):
        by_step.add_column(col, justify="left" if col == "step" else "right")
    for k, (mean_b, mean_c) in sorted(means.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0]))[:most]:
        by_step.add_row(k, f"{mean_b:.1f}", f"{mean_c:.1f}", f"{mean_c - mean_b:+.1f}")
    console.print(by_step)
    if out is not None:
        out.write_text(json.dumps({"baseline": baseline, "candidate": candidate, "corpus": str(corpus),
                                   "pairs": rows, "summary": summary}, indent=2), encoding="utf-8")  # fmt: skip


if __name__ == "__main__":
    typer.run(main)
