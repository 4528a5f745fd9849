"""Smoke queries over a whole index version: does a reader find what the version holds?

``self_check`` is what a publish runs on a new version before ``CURRENT`` moves (the probe its caller
passes to ``mmkg.index.publish.publish_index``): counts, then a few chunks queried with their own stored
vectors, no encoder needed. ``smoke_retrieval`` is the asset check over the published index: a few
chunks queried with their own text, through the default strategy.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from mmkg.retrieval.engine import retrieve
from mmkg.retrieval.mg2 import MG2, get_preset
from mmkg.validation import CheckResult, found_rank, smoke_probes

if TYPE_CHECKING:
    from mmkg.index.reader import Index


def own_vector_probes(index: Index, probes: int = 3, k: int = 5) -> list[str]:
    """The longest chunk of up to ``probes`` partitions, queried with its own stored vector, must rank in the top
    ``k`` of the dense chunk channel (or a chunk with its very text: a passage the corpus holds more than ``k``
    times), and MG2-RAG's whole pipeline (dense seeds, propagation, evidence) must answer that query with chunks
    the version holds. Returns what is wrong (empty: nothing).

    The dense rank is what a version whose vectors and ids disagree fails. MG2-RAG's own ranking of the chunk is
    not required: its propagation may lift neighbours above the seed, more so with an encoder whose cosines
    spread less (all-mpnet-base-v2 put 5 of 14 MMLongBench-Doc dev probes out of the top 5, and a validation
    publish failed this check), which says nothing about whether the version was written whole.

    The publish's smoke query (``mmkg.index.publish.Probe``); needs no encoder.
    """
    problems = []
    chosen = smoke_probes(index.chunks).head(probes).select("chunk_id", "text")
    mg2 = MG2(get_preset("default"), preset="self_check")
    ids = list(index.positions["chunks"])
    text_of = dict(zip(index.chunks["chunk_id"].to_list(), index.chunks["text"].to_list(), strict=True))
    with index.single_blas_thread():
        for cid, text in chosen.iter_rows():
            q = index.stored_vector("chunks", cid)
            scores = index.dense_scores("chunks", q, k, None)
            top = [ids[i] for i in np.argsort(-scores, kind="stable")[:k] if np.isfinite(scores[i])]
            if cid not in top and text not in {text_of.get(t) for t in top}:
                problems.append(f"chunk {cid} is not in the top {k} of the dense channel for its own vector")
            res = mg2.run(index, None, None, k, None, qt=q)
            if not res.chunks or any(c.chunk_id not in text_of for c in res.chunks):
                problems.append(f"MG2-RAG answered chunk {cid}'s own vector with no chunk or unknown ones")
    return problems


def self_check(index: Index, probes: int = 3, k: int = 5) -> list[str]:
    """What is wrong with an open version as a reader sees it (empty: nothing). Needs no encoder.

    Row counts per table and node counts per kind must be what the manifest says
    (``Index.count_problems``), and ``own_vector_probes`` must find its chunks: what a publish checks.
    """
    return index.count_problems() + own_vector_probes(index, probes, k)


def smoke_retrieval(
    index: Index, k: int = 5, per_partition: int = 1, max_chars: int = 500, partitions: Collection[str] | None = None
) -> CheckResult:
    """Query the opened index with a few chunks' own text; each must come back in the top ``k``.

    The index's ``chunks`` payload supplies the probes (``mmkg.validation.smoke_probes``); ``partitions``
    limits the probes to those partitions (``smoke_partitions``), all by default.
    """
    probes = smoke_probes(index.chunks, per_partition)
    if partitions is not None:
        probes = probes.filter(pl.col("partition").is_in(list(partitions)))
    if probes.is_empty() and index.chunks.is_empty():
        return CheckResult("smoke_retrieval", False, "the index holds no chunks")
    problems, ranks = [], []
    for chunk_id, partition, text in probes.iter_rows():
        res = retrieve(index, text=text[:max_chars], k=k)
        got = [c.chunk_id for c in res.chunks]
        if (rank := found_rank(chunk_id, text, res.chunks)) is not None:
            ranks.append(rank)
        else:
            top = got[0] if got else "nothing"
            problems.append(f"chunk {chunk_id} ({partition}) not in the top {k} for its own text (top: {top})")
    ok = f"{len(ranks)} chunk(s) found by their own text in version {index.version} (ranks {ranks})" + (
        f"; partitions probed: {', '.join(sorted(set(probes['partition'])))}" if partitions is not None else ""
    )
    metadata = {"version": index.version, "probes": probes.height, "found": len(ranks),
                "mean_rank": float(np.mean(ranks)) if ranks else 0.0}  # fmt: skip
    return CheckResult("smoke_retrieval", not problems, "; ".join(problems) if problems else ok, metadata)
