"""Seconds per build step of two data roots, side by side: where a build got slower (or faster).

    python benchmarks/build_steps.py /tmp/s19/b_old /tmp/s19/b_new

Reads each data root's own Dagster instance (``<data root>/dagster_home``, where ``mmkg index build`` and
``mmkg eval ... --data-root`` record their runs) and sums each step's duration over every run there (one
``index_partition`` run per partition, then ``publish_index``). Prints the steps by the second root's time,
with the difference and the ratio, then the totals. Both roots should hold one cold build each of the same
corpus on the same machine, made one after the other with nothing else running: step times are wall-clock
times of a shared machine.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def step_seconds(data_root: Path) -> dict[str, float]:
    """Each step key's summed duration (seconds) over every run of the data root's instance."""
    from pipelines.build import dagster_instance

    if not (data_root / "dagster_home").is_dir():
        raise typer.BadParameter(f"{data_root} has no dagster_home: build an index there first")
    instance = dagster_instance(data_root)
    out: dict[str, float] = defaultdict(float)
    for run in instance.get_runs():
        for step in instance.get_run_step_stats(run.run_id):
            if step.start_time is not None and step.end_time is not None:
                out[step.step_key] += step.end_time - step.start_time
    return dict(out)


def main(
    before: Annotated[Path, typer.Argument(help="The data root of the baseline build.")],
    after: Annotated[Path, typer.Argument(help="The data root of the build compared with it.")],
    most: Annotated[int, typer.Option(help="Steps listed (the slowest of the second build first).")] = 12,
) -> None:
    a, b = step_seconds(before), step_seconds(after)
    table = Table(title=f"step seconds: {before} → {after}")
    for col in ("step", "before s", "after s", "after − before", "ratio"):
        table.add_column(col, justify="left" if col == "step" else "right")
    for key in sorted(set(a) | set(b), key=lambda k: -b.get(k, 0.0))[:most]:
        x, y = a.get(key, 0.0), b.get(key, 0.0)
        table.add_row(key, f"{x:.1f}", f"{y:.1f}", f"{y - x:+.1f}", f"{y / x:.2f}" if x else "new")
    x, y = sum(a.values()), sum(b.values())
    table.add_row("all steps", f"{x:.1f}", f"{y:.1f}", f"{y - x:+.1f}", f"{y / x:.2f}" if x else "")
    Console().print(table)


if __name__ == "__main__":
    typer.run(main)
