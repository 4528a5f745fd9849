"""Benchmark: reads of an ANN-searched LanceDB table by id and by document, without and with B-tree key indexes.

    .venv/bin/python benchmarks/key_indexes.py --rows 150000

Tables of ``publish.ANN_MIN_ROWS`` rows or more are searched through LanceDB instead of from vectors held in
memory, and three reader paths filter them by a key column:

- ``Index.cosines_for_rows`` reads some rows' vectors by ``id IN (...)`` (the bridge's second hop, the page
  sentences of ``longdoc``);
- ``Index.dense_scores`` with a mask searches the ANN index prefiltered by ``doc_id IN (...)`` (a query within
  some documents);
- ``Index.cosines_for_docs`` scans the vectors of some documents by ``doc_id IN (...)`` (mKG-RAG's second
  stage).

One synthetic table (random unit vectors, ids and document ids as hex hashes, 60 rows a document, an IVF_PQ
index as ``publish`` builds it) is written as an older mmkg wrote it (string columns as LargeUtf8, no key index),
then copied, ANN index included, and the copy upgraded by ``publish._key_indexes`` (the key columns altered to
Utf8, a B-tree on each), which is what the next publish does to such a table. The three reader methods run
unchanged against each (on a stand-in that holds only the table, its ids and their rows), alternating tables so
drift in the machine's speed falls on both; p50 and p95 per path and the ratio, in the same run, are printed.
Each path's results are checked equal between the two tables.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated

import lancedb
import numpy as np
import polars as pl
import pyarrow as pa
import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mmkg.index.publish import _key_indexes
from mmkg.index.reader import Index


def _table(rows: int, dim: int, per_doc: int, seed: int) -> tuple[pa.Table, np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((rows, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"{v:016x}{i:016x}" for i, v in enumerate(rng.integers(0, 2**62, rows))]
    large = pa.large_string()
    return pa.table({
        "id": pa.array(ids, large),
        "partition": pa.array([f"p{i // 10_000}" for i in range(rows)], large),
        "doc_id": pa.array([f"{i // per_doc:024x}" for i in range(rows)], large),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), dim),
    }), vecs  # fmt: skip


def _ms(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1e3, ordered[int(0.95 * (len(ordered) - 1))] * 1e3


def main(
    rows: Annotated[int, typer.Option(help="Rows in the table (publish indexes tables of 100,000 or more).")] = 150_000,
    dim: Annotated[int, typer.Option(help="Vector width (MiniLM: 384).")] = 384,
    per_doc: Annotated[int, typer.Option(help="Rows per document.")] = 60,
    queries: Annotated[int, typer.Option(help="Reads timed per path and table.")] = 40,
    work_dir: Annotated[Path, typer.Option(help="Where the two tables are written (removed first).")] = Path(
        "/tmp/mmkg-key-indexes"
    ),
) -> None:
    shutil.rmtree(work_dir, ignore_errors=True)
    db = lancedb.connect(str(work_dir))
    data, vecs = _table(rows, dim, per_doc, seed=0)
    meta = pl.from_arrow(data.select(["id", "doc_id"]))
    positions = {key: i for i, key in enumerate(meta["id"].to_list())}
    tbl = db.create_table("before", data)
    t0 = time.perf_counter()
    tbl.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_PQ",
                     num_partitions=max(1, int(rows**0.5)), num_sub_vectors=max(1, dim // 16))  # fmt: skip
    ann_s = time.perf_counter() - t0
    # the same table files, ANN index included, so that both searches probe the same partitions
    shutil.copytree(work_dir / "before.lance", work_dir / "after.lance")
    after = db.open_table("after")
    t0 = time.perf_counter()
    _key_indexes(after)
    print(f"ANN index {ann_s:.1f} s; key indexes (alter to Utf8, two B-trees) {time.perf_counter() - t0:.2f} s")
    # the reader methods read only these attributes of an open Index for a table searched through LanceDB
    readers = {name: SimpleNamespace(tables={"chunks": t}, meta={"chunks": meta}, positions={"chunks": positions})
               for name, t in (("before", tbl), ("after", after))}  # fmt: skip
    rng = np.random.default_rng(1)
    n_docs = rows // per_doc
    paths = {
        "40 rows by id (cosines_for_rows)": lambda r, q, pick: Index.cosines_for_rows(r, "chunks", q, pick[0]),
        "top 10 within 3 documents (dense_scores)": lambda r, q, pick: Index.dense_scores(r, "chunks", q, 10, pick[1]),
        "3 documents' vectors (cosines_for_docs)": lambda r, q, pick: Index.cosines_for_docs(r, "chunks", q, pick[2])[
            1
        ],
    }
    picks = []
    for _ in range(queries):
        docs = rng.choice(n_docs, 3, replace=False)
        mask = np.zeros(rows, dtype=bool)
        for d in docs:
            mask[d * per_doc : (d + 1) * per_doc] = True
        picks.append((np.sort(rng.choice(rows, 40, replace=False)), mask, [f"{d:024x}" for d in docs]))
    print(f"{rows:,} rows of {dim} dimensions, {per_doc} rows a document, {queries} reads per path and table")
    print(f"{'path':44} {'before p50/p95 ms':>18} {'after p50/p95 ms':>18} {'p50 ratio':>10}")
    for label, call in paths.items():
        times: dict[str, list[float]] = {"before": [], "after": []}
        for i, pick in enumerate(picks):
            q = vecs[rng.integers(rows)]
            got = {}
            for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
                t0 = time.perf_counter()
                got[name] = np.asarray(call(readers[name], q, pick))
                times[name].append(time.perf_counter() - t0)
            if not np.allclose(got["before"], got["after"], atol=1e-5):
                raise SystemExit(f"{label}: the two tables give different results")
        (b50, b95), (a50, a95) = _ms(times["before"]), _ms(times["after"])
        print(f"{label:44} {b50:>8.1f} / {b95:<7.1f} {a50:>8.1f} / {a95:<7.1f} {b50 / a50:>10.2f}")


if __name__ == "__main__":
    typer.run(main)
