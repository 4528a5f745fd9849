"""Benchmark: a cold build of 2Wiki through the real Dagster path, against a dense-only index of the same chunks.

    python benchmarks/build_2wiki.py --partitions 20 --processes 2 --work-dir /tmp/b2

The build is what ``mmkg index build --cold`` runs (``pipelines.build.build_index``: the
``index_partition`` job once per partition, then ``publish_index``), with every model cache cleared
first. In the same run, on the same machine and with the same encoder, a dense-only index of the same
chunks is built: every chunk text through the encoder and one LanceDB table. Printed: seconds per
step (summed over partitions), the step's share of the wall clock, wall clock, peak memory of the
process tree, the two ratios the issue asks for (whole build / dense-only and the graph's own steps /
dense-only) and the encoder's runtime. ``--runtime`` picks the text encoder runtime for both builds
(MMKG_TEXT_RUNTIME), so a before/after pair is two runs of this command.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import PeakMemory
from text_assets import DEFAULT_CORPUS, split_corpus

console = Console()
GRAPH_STEPS = ("parse", "entities", "build_nodes", "embed", "entity_catalog", "graph", "retrieval_index")


def main(
    corpus: Annotated[Path, typer.Option(help="2Wiki corpus.json")] = DEFAULT_CORPUS,
    partitions: Annotated[int, typer.Option(help="Split the corpus into this many partitions.")] = 20,
    only: Annotated[int, typer.Option(help="Build only the first N partitions (0: all) for a quick profile.")] = 0,
    processes: Annotated[int, typer.Option(help="spaCy worker processes (MMKG_SPACY_PROCESSES).")] = 2,
    runtime: Annotated[str, typer.Option(help="Text encoder runtime (MMKG_TEXT_RUNTIME): torch, onnx-int8...")] = "",
    work_dir: Annotated[Path, typer.Option(help="Output folder; emptied first.")] = Path("/tmp/mmkg-build-2wiki"),
    out: Annotated[Path | None, typer.Option(help="Write the figures as JSON here too.")] = None,
) -> None:
    if runtime:
        os.environ["MMKG_TEXT_RUNTIME"] = runtime
    import lancedb
    import polars as pl

    from mmkg.embedding import chunk_texts
    from pipelines.build import build_index
    from resources.encoder import EncoderResource

    shutil.rmtree(work_dir, ignore_errors=True)
    keys, _ = split_corpus(corpus, work_dir / "corpus", partitions)
    keys = keys[:only] if only else keys
    with PeakMemory() as mem:
        report = build_index(work_dir / "corpus", work_dir / "data", partitions=keys, processes=processes, cold=True)

        # dense-only baseline, same run, same encoder: every chunk text embedded, one LanceDB table
        tables = work_dir / "data" / "tables"
        chunks = pl.read_parquet(tables / "chunks" / "*.parquet")
        docs = pl.read_parquet(tables / "documents" / "*.parquet")
        t0 = time.perf_counter()
        encoder = EncoderResource().get()  # the model the build loaded (one per process)
        vecs = encoder.encode_text(chunk_texts(chunks, docs), 64)
        lancedb.connect(str(work_dir / "dense")).create_table(
            "chunks",
            chunks.select("chunk_id")
            .with_columns(pl.Series("vector", vecs, dtype=pl.Array(pl.Float32, vecs.shape[1])))
            .to_arrow(),
            mode="overwrite",
        )
        dense = time.perf_counter() - t0

    t = Table(title=f"Cold 2Wiki build: {report.documents:,} passages, {len(keys)} partition(s), "
                    f"{report.chunks:,} chunks, encoder {encoder.info.id()}")  # fmt: skip
    t.add_column("step")
    t.add_column("seconds", justify="right")
    t.add_column("share of wall", justify="right")
    for step, sec in sorted(report.steps.items(), key=lambda kv: -kv[1]):
        t.add_row(step, f"{sec:.1f}", f"{sec / report.wall_s:.0%}")
    steps_total = sum(report.steps.values())
    t.add_row("(outside steps: Dagster runs, checks' I/O)", f"{report.wall_s - steps_total:.1f}",
              f"{(report.wall_s - steps_total) / report.wall_s:.0%}")  # fmt: skip
    t.add_row("[bold]wall clock", f"[bold]{report.wall_s:.1f}", "")
    console.print(t)
    graph_own = sum(report.steps.get(s, 0.0) for s in ("embed", "build_nodes", "graph", "retrieval_index"))
    figures = {
        "partitions": len(keys),
        "passages": report.documents,
        "chunks": report.chunks,
        "encoder": encoder.info.id(),
        "runtime": getattr(encoder, "runtime", "torch"),
        "wall_s": round(report.wall_s, 1),
        "steps_s": {k: round(v, 1) for k, v in report.steps.items()},
        "dense_only_s": round(dense, 1),
        "ratio_build_to_dense": round(report.wall_s / dense, 2),
        "ratio_embed_graph_index_to_dense": round(graph_own / dense, 2),
        "peak_gib": round(mem.peak_bytes / 2**30, 2),
    }
    console.print(
        f"dense-only index of the same chunks: {dense:.1f} s; whole build / dense-only "
        f"{figures['ratio_build_to_dense']}x; embeddings + graph + index / dense-only "
        f"{figures['ratio_embed_graph_index_to_dense']}x"
    )
    console.print(f"peak memory (process tree): {figures['peak_gib']} GiB")
    if out:
        out.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    typer.run(main)
