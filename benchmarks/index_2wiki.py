"""Benchmark: build the full 2Wiki index through Dagster, compare with a dense-only index, time queries.

    python benchmarks/index_2wiki.py --corpus ../shared/datasets/twowiki/corpus.json --processes 2

Prints seconds per stage; the cost of embeddings + graph + index against a dense-only index of the
same passages (chunk embeddings + one LanceDB table) measured in the same run; and retrieve()
latency p50/p95 over the dev questions after the models are loaded.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import PeakMemory
from text_assets import DEFAULT_CORPUS, split_corpus

console = Console()


def main(
    corpus: Annotated[Path, typer.Option(help="2Wiki corpus.json")] = DEFAULT_CORPUS,
    questions: Annotated[Path | None, typer.Option(help="questions_dev.json (default: beside the corpus)")] = None,
    partitions: Annotated[int, typer.Option(help="Split the corpus into this many partitions.")] = 1,
    processes: Annotated[int, typer.Option(help="spaCy worker processes.")] = 2,
    repeats: Annotated[int, typer.Option(help="Times each question is asked for the latency figures.")] = 5,
    work_dir: Annotated[Path | None, typer.Option(help="Output folder (default: temp).")] = None,
    latency_only: Annotated[
        bool, typer.Option(help="Only time queries against the index already in --work-dir.")
    ] = False,
) -> None:
    import lancedb
    import polars as pl
    from dagster import DagsterEventType, DagsterInstance, materialize

    from assets import embeddings, graph_inputs, index, ingest, text, vision
    from mmkg.embedding import chunk_texts
    from pipelines.resources import default_resources

    work = Path(work_dir or tempfile.mkdtemp(prefix="mmkg-2wiki-"))
    if latency_only:
        if work_dir is None:
            raise typer.BadParameter("--latency-only needs --work-dir of an earlier run")
        return latency(corpus, questions, work, repeats, None)
    keys, n = split_corpus(corpus, work / "corpus", partitions)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", keys)
    resources = default_resources(work / "corpus", work / "data", n_process=processes)
    partitioned = [
        ingest.ingest, text.chunks, text.parse, text.entities, vision.ground_images, graph_inputs.build_nodes,
        embeddings.embed,
    ]  # fmt: skip
    global_ = [text.entity_catalog, index.graph, index.retrieval_index]
    steps: dict[str, float] = {}

    def record(result) -> None:
        assert result.success
        for ev in result.all_events:
            if ev.event_type == DagsterEventType.STEP_SUCCESS:
                steps[ev.step_key] = steps.get(ev.step_key, 0.0) + ev.event_specific_data.duration_ms / 1000

    with PeakMemory() as mem:
        t0 = time.perf_counter()
        for key in keys:
            record(materialize(partitioned, partition_key=key, instance=instance, resources=resources))
        record(materialize(partitioned + global_, instance=instance, resources=resources, selection=global_))
        build = time.perf_counter() - t0

        # dense-only baseline in the same run: embed the same chunk texts, one LanceDB table
        tables = work / "data" / "tables"
        chunks = pl.read_parquet(tables / "chunks" / "*.parquet")
        docs = pl.read_parquet(tables / "documents" / "*.parquet")
        enc = resources["encoder"].get()
        t1 = time.perf_counter()
        vecs = enc.encode_text(chunk_texts(chunks, docs), 64)
        db = lancedb.connect(str(work / "dense"))
        db.create_table(
            "chunks",
            chunks.select("chunk_id")
            .with_columns(pl.Series("vector", vecs, dtype=pl.Array(pl.Float32, vecs.shape[1])))
            .to_arrow(),
            mode="overwrite",
        )
        dense = time.perf_counter() - t1

    t = Table(title=f"2Wiki index build: {n:,} passages, {partitions} partition(s)")
    t.add_column("step")
    t.add_column("seconds", justify="right")
    for step, sec in steps.items():
        t.add_row(step, f"{sec:.1f}")
    t.add_row("[bold]wall clock", f"[bold]{build:.1f}")
    console.print(t)
    graph_cost = (
        steps.get("embed", 0) + steps.get("graph", 0) + steps.get("retrieval_index", 0) + steps.get("build_nodes", 0)
    )
    console.print(
        f"embeddings + graph + index: {graph_cost:.1f} s; dense-only index (chunk vectors + LanceDB): {dense:.1f} s"
    )
    console.print(f"ratio: {graph_cost / dense:.2f}x (target <= 3x)")
    console.print(f"peak memory: {mem.peak_bytes / 2**30:.2f} GiB")

    latency(corpus, questions, work, repeats, enc)


def latency(corpus: Path, questions: Path | None, work: Path, repeats: int, encoder) -> None:
    from mmkg.index import Index
    from mmkg.retrieval import retrieve

    qpath = questions or corpus.parent / "questions_dev.json"
    qs = [q["question"] for q in json.loads(qpath.read_text(encoding="utf-8"))]
    idx = Index.open(work / "data" / "index", encoder=encoder)
    retrieve(idx, text=qs[0])  # warm-up: model, caches, evidence lookups
    timings = [retrieve(idx, text=q, k=10).timings_ms for _ in range(repeats) for q in qs]
    total = np.array([t["total"] for t in timings])
    parts = {k: float(np.median([t[k] for t in timings])) for k in timings[0] if k != "total"}
    console.print(
        f"retrieve(): {len(total)} calls, p50 {np.percentile(total, 50):.1f} ms, p95 {np.percentile(total, 95):.1f} ms "
        f"on {idx.graph.n:,} nodes; medians: " + ", ".join(f"{k} {v:.1f} ms" for k, v in parts.items())
    )
    console.print(f"index: {idx.info()['counts']}, work dir {work}")


if __name__ == "__main__":
    typer.run(main)
