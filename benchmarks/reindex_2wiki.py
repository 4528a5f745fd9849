"""Benchmark: full 2Wiki build through the corpus sensor, then an incremental re-index after one edit.

    python benchmarks/reindex_2wiki.py                             # full corpus, 20 partitions (~20+ min CPU)
    python benchmarks/reindex_2wiki.py --limit 600 --partitions 4  # a quick slice

The corpus is split into partition folders of JSONL records ``{id, title, text}``. The full build is
the corpus sensor registering every folder and running ``index_partition`` for each, then the
publish sensor running ``publish_index``. One record of the first partition is then changed and the
same sensors re-index: only that partition's run and one publish. A further sensor tick and a
schedule evaluation must request nothing. Prints seconds for both, the ratio, and peak memory.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import PeakMemory
from text_assets import DEFAULT_CORPUS

console = Console()
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
MARKER = "Quillon Vantersby, a fictional cartographer, redrew this article's map in 2031."


def split_records(corpus: Path, root: Path, partitions: int, limit: int | None) -> tuple[list[str], int]:
    """Write ``root/partNN/records.jsonl`` (round-robin over the passages); returns the keys and passage count."""
    records = json.loads(corpus.read_text(encoding="utf-8"))
    if not isinstance(records, list) or not records:
        raise typer.BadParameter(f"{corpus}: expected a JSON list of {{title, text}} passages")
    records = records[:limit] if limit else records
    keys = [f"part{i:02d}" for i in range(partitions)]
    for i, key in enumerate(keys):
        (root / key).mkdir(parents=True)
        with (root / key / "records.jsonl").open("w", encoding="utf-8") as f:
            for j in range(i, len(records), partitions):
                rec = records[j]
                f.write(json.dumps({"id": f"w{j:05d}", "title": rec["title"], "text": rec["text"]}) + "\n")
    return keys, len(records)


def edit_one_record(path: Path) -> str:
    """Append a sentence to the first record of a JSONL file; returns its id."""
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["text"] = first["text"].rstrip() + " " + MARKER
    lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return first["id"]


def main(
    corpus: Annotated[Path, typer.Option(help="2Wiki corpus.json")] = DEFAULT_CORPUS,
    partitions: Annotated[int, typer.Option(help="Number of partition folders.")] = 20,
    limit: Annotated[int | None, typer.Option(help="Only the first N passages (a quick slice).")] = None,
    processes: Annotated[int, typer.Option(help="spaCy worker processes.")] = 2,
    work_dir: Annotated[Path | None, typer.Option(help="Output folder (default: temp).")] = None,
) -> None:
    import polars as pl
    from dagster import DagsterInstance

    from mmkg.index import Index
    from mmkg.retrieval import retrieve
    from pipelines.definitions import defs
    from pipelines.resources import default_resources
    from pipelines.schedules import LocalDaemon

    if not corpus.exists():
        raise typer.BadParameter(f"{corpus} not found; pass --corpus path/to/twowiki/corpus.json")
    if partitions < 1:
        raise typer.BadParameter("--partitions must be at least 1")
    work = Path(work_dir or tempfile.mkdtemp(prefix="mmkg-reindex-"))
    keys, n = split_records(corpus, work / "corpus", partitions, limit)
    (work / "dagster_home").mkdir(parents=True, exist_ok=True)
    instance = DagsterInstance.local_temp(str(work / "dagster_home"))
    resources = default_resources(work / "corpus", work / "data", n_process=processes)
    daemon = LocalDaemon(defs, instance, resources, QUIET)
    console.print(f"{n:,} passages in {len(keys)} partitions under {work}")

    with PeakMemory() as mem_full:
        t0 = time.perf_counter()
        sensed, published = daemon.refresh()
        full_s = time.perf_counter() - t0
    assert sensed.partitions == keys and len(published.runs) == 1, (sensed, published)
    v1 = Index.open(work / "data" / "index").version
    console.print(f"full build: {full_s:.1f}s, index {v1}")

    record_id = edit_one_record(work / "corpus" / keys[0] / "records.jsonl")
    with PeakMemory() as mem_incr:
        t0 = time.perf_counter()
        sensed, published = daemon.refresh()
        incr_s = time.perf_counter() - t0
    assert sensed.partitions == [keys[0]] and len(published.runs) == 1, (sensed, published)
    idx = Index.open(work / "data" / "index")
    hits = idx.chunks.filter(pl.col("text").str.contains(MARKER, literal=True))
    assert idx.version != v1 and hits.height == 1, "the edited record is not in the new index version"
    top = retrieve(idx, text=MARKER, k=3).chunks[0]
    console.print(
        f"edited record {record_id} ({keys[0]}): new version {idx.version}; "
        f"top hit for the new sentence is {'the edited record' if MARKER in top.text else repr(top.title)}"
    )
    steps = {**sensed.steps, **published.steps}
    slow = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(steps.items(), key=lambda kv: -kv[1])[:6])
    console.print(f"incremental steps: {slow}")

    # Nothing changed since: neither the sensors nor the schedule do any work.
    t0 = time.perf_counter()
    again = [*daemon.refresh(), daemon.schedule_tick()]
    idle_s = time.perf_counter() - t0
    assert all(not t.runs for t in again), [t.runs for t in again]

    t = Table(title=f"2Wiki re-index ({n:,} passages, {len(keys)} partitions)")
    for col in ("step", "seconds", "peak memory"):
        t.add_column(col, justify="right" if col != "step" else "left")
    gib = 2**30
    t.add_row("full build (sensor: all partitions + publish)", f"{full_s:.1f}", f"{mem_full.peak_bytes / gib:.2f} GiB")
    t.add_row("incremental (one record changed)", f"{incr_s:.1f}", f"{mem_incr.peak_bytes / gib:.2f} GiB")
    t.add_row("idle tick (sensors + schedule, nothing to do)", f"{idle_s:.2f}", "")
    console.print(t)
    ratio = incr_s / full_s
    verdict = "" if ratio <= 0.05 else "  [red]over target[/]"
    console.print(f"incremental / full = {ratio:.1%} (target ≤ 5%){verdict}")


if __name__ == "__main__":
    typer.run(main)
