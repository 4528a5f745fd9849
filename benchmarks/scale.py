"""Benchmark: how publish, open and query costs grow with the corpus, from 10k chunks up.

    python benchmarks/scale.py --data-root /tmp/b2/data --sizes 10000,30000,100000,300000

**The synthetic corpus.** A real build's partition tables (the 2Wiki build of
``benchmarks/build_2wiki.py``: 6,875 chunks, 22k sentences, 41k entities) are tiled ``k`` times to
reach each size. Every id (document, chunk, sentence, mention, entity-in-document, relation) gets
the copy's number in hexadecimal, and the partition ``-c<copy>``, so copies are distinct documents.
Entity keys get the suffix of ``copy mod m`` with ``m = round(k ** 0.65)``: the entity vocabulary
grows as Heaps' law says it does in real text (about n^0.65), so a frequent entity is shared by
many copies and the long tail of the source corpus repeats, instead of k disconnected graphs (no
sharing) or one graph whose hubs grow k-fold (full sharing). Vectors are the source vectors plus
Gaussian noise (σ 0.02 per dimension, then unit length), so no two copies tie. What does not scale
this way: document titles repeat (the second hop's own-page lookup sees k pages per title).

The tiled vectors are written as one Parquet file per partition, as the pipeline stores them, and the
publish reads them from there (``mmkg.partitioned``), as the ``retrieval_index`` asset does.

**What is measured, per size, in a fresh process:** the global steps of a publish (``build_graph``,
``payload_tables`` and ``publish_index``: LanceDB tables, BM25, checksums, the new version's own
self-check), their peak memory, the index's size on disk, ``Index.open`` time and the resident
memory it adds, and ``retrieve`` latency p50/p95 with the default strategy over the 2Wiki dev
questions (its PPR part too). Per-partition steps (parse, embed) are linear in the chunks by
construction (each partition is built alone) and are reported from the build's own figures.
The growth exponent between consecutive sizes is the log-log slope (1.0 linear; 1.1 for n log n
over this range).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from memory import PeakMemory

console = Console()
HEAPS = 0.65
NOISE = 0.02
ID_COLUMNS = ("doc_id", "chunk_id", "sentence_id", "mention_id", "unit_id", "relation_id", "link_id")
LIST_ID_COLUMNS = ("chunk_ids", "sentence_ids")
KEY_COLUMNS = ("entity_key", "subject_key", "object_key")
DEFAULT_QUESTIONS = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "twowiki" / "questions_dev.json"


def tile(frames: dict, copies: int, seed: int = 0, vectors_dir: Path | None = None) -> dict:
    """Each table repeated ``copies`` times with suffixed ids and Heaps-law entity sharing (module docstring).

    With ``vectors_dir``, tables with vectors are written there as one Parquet file per partition, as the
    pipeline stores them, and returned as ``PartitionedParquet`` (what the ``retrieval_index`` asset gets):
    the tiled vectors are never in memory whole.
    """
    import numpy as np
    import polars as pl

    from mmkg.partitioned import PartitionedParquet

    rng = np.random.default_rng(seed)
    vocab = max(1, round(copies**HEAPS))
    out = {}
    for name, df in frames.items():
        if df is None:
            out[name] = None
            continue
        parts = []
        for c in range(copies):
            suffix = f"{c:04x}"  # ids stay hexadecimal content-hash look-alikes (the ANN filter checks that)
            part = df.with_columns(
                *(pl.col(col) + suffix for col in ID_COLUMNS if col in df.columns),
                *(pl.col(col).list.eval(pl.element() + suffix) for col in LIST_ID_COLUMNS if col in df.columns),
                *([pl.col("partition") + f"-c{c}"] if "partition" in df.columns else []),
                *(pl.col(col) + f"~{c % vocab}" for col in KEY_COLUMNS if col in df.columns),
            )
            if "vector" in df.columns and df.height:
                vecs = df["vector"].to_numpy().reshape(df.height, -1)
                noisy = vecs + rng.normal(0.0, NOISE, vecs.shape).astype(np.float32)
                noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
                dim = vecs.shape[1]
                part = part.with_columns(pl.Series("vector", noisy.astype(np.float32), dtype=pl.Array(pl.Float32, dim)))
            if vectors_dir is not None and "vector" in df.columns and df.height:
                folder = vectors_dir / name
                folder.mkdir(parents=True, exist_ok=True)
                for (key,), rows in part.partition_by("partition", as_dict=True).items():
                    rows.write_parquet(folder / f"{key}.parquet")
                continue
            parts.append(part)
        if vectors_dir is not None and "vector" in df.columns and df.height:
            paths = sorted((vectors_dir / name).glob("*.parquet"))
            out[name] = PartitionedParquet(name, {p.stem: p for p in paths})
        else:
            tiled = pl.concat(parts, how="vertical_relaxed")
            # partition by partition, as the pipeline loads them (and as the vectors' files are read): the
            # publish then writes LanceDB rows in the graph's order, as a real first publish does
            out[name] = tiled.sort("partition", maintain_order=True) if "partition" in tiled.columns else tiled
    return out


def one(data: Path, size: int, work: Path, questions: Path, repeats: int, ppr_engine: str = "auto") -> dict:
    """Publish, open and query one tiled size; run in its own process (see ``main``)."""
    import polars as pl
    from publish_worker import TABLES, text_encoder_spec

    from mmkg.graph import build_graph
    from mmkg.index.publish import payload_tables, publish_index
    from mmkg.retrieval.smoke import own_vector_probes

    partitions = sorted(p.stem for p in (data / "tables" / "chunks").glob("*.parquet"))
    source = {n: pl.concat([pl.read_parquet(data / "tables" / n / f"{p}.parquet") for p in partitions],
                           how="vertical_relaxed") for n in TABLES}  # fmt: skip
    copies = max(1, math.ceil(size / source["chunks"].height))
    tables = work / f"tables-{size}"
    shutil.rmtree(tables, ignore_errors=True)
    t0 = time.perf_counter()
    t = tile(source, copies, vectors_dir=tables)
    tile_s = time.perf_counter() - t0
    del source
    root = work / f"index-{size}"
    figures: dict = {"size": size, "copies": copies, "chunks": t["chunks"].height, "sentences": t["sentences"].height,
                     "entity_vocabulary_copies": max(1, round(copies**HEAPS)), "tile_s": tile_s}  # fmt: skip
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        graph = build_graph(t["chunks"], t["entity_mentions"], t["relations"], t["images"], t["objects"])
        figures["build_graph_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        payload = payload_tables(t["documents"], t["chunks"], t["sentences"], t["images"], t["objects"],
                                 t["document_entities"], t["relations"], t["cross_modal_links"])  # fmt: skip
        vectors = {"chunks": t["chunk_vectors"], "sentences": t["sentence_vectors"], "images": t["image_vectors"],
                   "objects": t["object_vectors"], "document_entities": t["document_entity_vectors"],
                   "relations": t["relation_vectors"]}  # fmt: skip
        figures["payload_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        publish_index(root, text_encoder_spec(), graph, vectors, payload, t["entity_mentions"], probe=own_vector_probes)
        figures["publish_s"] = time.perf_counter() - t0
    figures["graph_nodes"], figures["graph_edges"] = graph.n, int(graph.adjacency.nnz // 2)
    figures["global_build_peak_gib"] = mem.peak_bytes / 2**30
    del graph, payload, vectors, t
    figures["disk_mib"] = sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 2**20
    shutil.rmtree(tables, ignore_errors=True)

    # the reader in a fresh process: its resident memory is the index's, not the tiled tables' left-overs
    cmd = [sys.executable, __file__, "--data-root", str(data), "--work-dir", str(work), "--questions", str(questions),
           "--repeats", str(repeats), "--read-size", str(size), "--ppr-engine", ppr_engine]  # fmt: skip
    reader = subprocess.run(cmd, capture_output=True, text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    figures.update(json.loads(reader.stdout.strip().splitlines()[-1]))
    return figures


def read(root: Path, questions: Path, repeats: int, ppr_engine: str = "auto") -> dict:
    """Open the index and time the default strategy over the questions; memory is this process's growth."""
    import numpy as np
    import psutil

    from mmkg.index import Index
    from mmkg.retrieval import retrieve

    proc = psutil.Process()
    before = proc.memory_info().rss
    t0 = time.perf_counter()
    idx = Index.open(root, ppr_engine=ppr_engine)
    figures = {"open_s": time.perf_counter() - t0, "ppr_engine": idx.engine_for(None, 0.5)}
    qs = [q["question"] for q in json.loads(questions.read_text(encoding="utf-8"))]
    retrieve(idx, text=qs[0])  # warm-up: the encoder's first batch, lazy lookups
    runs = [retrieve(idx, text=q, k=10).timings_ms for _ in range(repeats) for q in qs]
    figures["reader_rss_gib"] = (proc.memory_info().rss - before) / 2**30
    total = np.array([r["total"] for r in runs])
    figures["query_p50_ms"], figures["query_p95_ms"] = float(np.percentile(total, 50)), float(np.percentile(total, 95))
    ppr = [r["ppr"] for r in runs if "ppr" in r]
    figures["ppr_p50_ms"] = float(np.median(ppr)) if ppr else float("nan")
    return figures


def slope(a: float, b: float, na: int, nb: int) -> float:
    return math.log(b / a) / math.log(nb / na) if a > 0 and b > 0 and nb != na else float("nan")


def main(
    data_root: Annotated[Path, typer.Option(help="Data root of a built corpus (benchmarks/build_2wiki.py's data).")],
    sizes: Annotated[str, typer.Option(help="Comma-separated chunk counts.")] = "10000,30000,100000",
    work_dir: Annotated[Path, typer.Option(help="Where the tiled indexes are written.")] = Path("/tmp/mmkg-scale"),
    questions: Annotated[Path, typer.Option(help="Questions to time (2Wiki dev).")] = DEFAULT_QUESTIONS,
    repeats: Annotated[int, typer.Option(help="Times each question is asked.")] = 2,
    build_json: Annotated[Path | None, typer.Option(help="build_2wiki.py --out JSON: per-chunk build costs.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the figures as JSON here too.")] = None,
    ppr_engine: Annotated[str, typer.Option(help="The reader's PPR engine (auto, local, scipy, cg).")] = "auto",
    keep: Annotated[bool, typer.Option(help="Keep each size's index (work-dir/index-SIZE) for later runs.")] = False,
    one_size: Annotated[int, typer.Option(hidden=True)] = 0,
    read_size: Annotated[int, typer.Option(hidden=True)] = 0,
) -> None:
    if read_size:  # the reader's process of one size
        print(json.dumps(read(work_dir / f"index-{read_size}", questions, repeats, ppr_engine)))
        return
    if one_size:  # the child process of one size
        print(json.dumps(one(data_root, one_size, work_dir, questions, repeats, ppr_engine)))
        return
    rows = []
    for size in [int(s) for s in sizes.split(",")]:
        shutil.rmtree(work_dir / f"index-{size}", ignore_errors=True)
        work_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, __file__, "--data-root", str(data_root), "--work-dir", str(work_dir),
               "--questions", str(questions), "--repeats", str(repeats), "--one-size", str(size),
               "--ppr-engine", ppr_engine]  # fmt: skip
        t0 = time.perf_counter()
        with PeakMemory() as mem:
            proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        if proc.returncode != 0:
            console.print(f"[red]size {size} failed (exit {proc.returncode}):[/red] {proc.stderr.strip()[-2000:]}")
            rows.append({"size": size, "failed": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]})
            break
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        figures["process_peak_gib"] = mem.peak_bytes / 2**30
        figures["wall_s"] = time.perf_counter() - t0
        rows.append(figures)
        if not keep:
            shutil.rmtree(work_dir / f"index-{size}", ignore_errors=True)
        console.print(figures)

    done = [r for r in rows if "failed" not in r]
    metrics = ["build_graph_s", "payload_s", "publish_s", "global_build_peak_gib", "disk_mib", "open_s",
               "reader_rss_gib", "query_p50_ms", "query_p95_ms", "ppr_p50_ms"]  # fmt: skip
    table = Table(title="Cost by corpus size (tiled 2Wiki build; growth = log-log slope to the previous size)")
    table.add_column("metric")
    for r in done:
        table.add_column(f"{r['chunks']:,} chunks", justify="right")
    table.add_column("growth", justify="right")
    for m in ["graph_nodes", "graph_edges", *metrics]:
        cells = [f"{r[m]:,.2f}" if isinstance(r[m], float) else f"{r[m]:,}" for r in done]
        growth = " / ".join(f"{slope(a[m], b[m], a['chunks'], b['chunks']):.2f}" for a, b in itertools.pairwise(done))
        table.add_row(m, *cells, growth)
    console.print(table)
    if build_json and build_json.exists():
        build = json.loads(build_json.read_text())
        per_chunk = {k: v / build["chunks"] for k, v in build["steps_s"].items() if k in ("parse", "embed")}
        console.print(
            "per-partition steps, linear in chunks (from the build): "
            + ", ".join(
                f"{k} {v * 1000:.1f} ms/chunk → {v * 1_000_000 / 3600:.1f} h per 1M chunks"
                for k, v in per_chunk.items()
            )
        )
    if out:
        out.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    typer.run(main)
