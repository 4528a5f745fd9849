"""Benchmark: materialize the text assets for the 2WikiMultihopQA corpus through Dagster.

Prints passages/s, seconds per stage (Dagster step durations) and peak memory of the whole
process tree (parser workers included).

    python benchmarks/text_assets.py --corpus ../shared/datasets/twowiki/corpus.json --processes 2
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

console = Console()
DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "twowiki" / "corpus.json"


def split_corpus(corpus: Path, root: Path, partitions: int) -> tuple[list[str], int]:
    records = json.loads(corpus.read_text(encoding="utf-8"))
    keys = [f"part{i:02d}" for i in range(partitions)]
    for i, key in enumerate(keys):
        (root / key).mkdir(parents=True)
        part = records[i::partitions]
        (root / key / "corpus.json").write_text(json.dumps(part, ensure_ascii=False), encoding="utf-8")
    return keys, len(records)


def main(
    corpus: Annotated[Path, typer.Option(help="2Wiki corpus.json")] = DEFAULT_CORPUS,
    partitions: Annotated[int, typer.Option(help="Split the corpus into this many partitions.")] = 1,
    processes: Annotated[int, typer.Option(help="spaCy worker processes.")] = 2,
    work_dir: Annotated[Path | None, typer.Option(help="Where to write the corpus and tables (default: temp).")] = None,
) -> None:
    from dagster import DagsterEventType, DagsterInstance, materialize

    from assets import ingest, text
    from pipelines.resources import default_resources

    if not corpus.exists():
        raise typer.BadParameter(f"{corpus} not found; pass --corpus path/to/twowiki/corpus.json")
    work = Path(work_dir or tempfile.mkdtemp(prefix="mmkg-bench-"))
    keys, n_passages = split_corpus(corpus, work / "corpus", partitions)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", keys)
    resources = default_resources(work / "corpus", work / "data", n_process=processes)
    stage_seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    with PeakMemory() as mem:
        for key in keys:
            result = materialize(
                [ingest.ingest, text.chunks, text.parse, text.entities],
                partition_key=key,
                instance=instance,
                resources=resources,
            )
            assert result.success
            for ev in result.all_events:
                if ev.event_type == DagsterEventType.STEP_SUCCESS:
                    step = ev.step_key
                    stage_seconds[step] = stage_seconds.get(step, 0.0) + ev.event_specific_data.duration_ms / 1000
    wall = time.perf_counter() - t0

    import polars as pl

    tables = work / "data" / "tables"
    t = Table(
        title=f"2Wiki text assets: {n_passages:,} passages, {partitions} partition(s), {processes} parser process(es)"
    )
    t.add_column("stage")
    t.add_column("seconds", justify="right")
    for step, sec in stage_seconds.items():
        t.add_row(step, f"{sec:.1f}")
    t.add_row("[bold]wall clock (incl. Dagster)", f"[bold]{wall:.1f}")
    console.print(t)
    rows = {
        name: pl.scan_parquet(tables / name / "*.parquet").select(pl.len()).collect().item()
        for name in ["documents", "chunks", "sentences", "entity_mentions", "entities", "relations", "rejected_files"]
    }
    console.print("rows: " + ", ".join(f"{k}={v:,}" for k, v in rows.items()))
    console.print(f"passages/s: {n_passages / wall:.1f}")
    console.print(f"peak memory (process tree RSS): {mem.peak_bytes / 2**30:.2f} GiB")
    console.print(f"work dir: {work}")


if __name__ == "__main__":
    typer.run(main)
