"""A page's best sentence as evidence for the page: the re-ranking step of MG2-RAG's ``page_sentence_weight``.

Long documents are read and judged by the page, but the graph ranks chunks, and a page's chunks split its text
where the layout does. A page whose one sentence says what the question asks can lose to a page whose whole
chunk resembles the question's words. This step scores each candidate chunk's page by the best cosine of any
sentence on that page with the question (the sentence vectors the build already stored), min-max scaled over the
candidates' pages, and adds ``weight`` times that, on the scale of the best chunk's score, to
every candidate chunk on the page. Chunks with no page (Markdown, transcripts, encyclopedia passages) are left as
they are, and a pool with no paged chunk is returned unchanged, so page-less corpora rank exactly as before.

It is the ``psi`` setting of ``benchmarks/page_scoring.py`` moved into retrieval, measured there and confirmed
with the eval harness (docs/results/mmlongbench.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from mmkg.index.derived import derived

if TYPE_CHECKING:
    from mmkg.index.reader import Index

POOL = 50  # candidate chunks re-ranked (at least k): the depth the page-recall evaluation reads


@dataclass(frozen=True)
class PageMaps:
    """Each chunk row's and each sentence row's page, as a code into ``docs`` (-1: no page)."""

    chunk_page: np.ndarray  # int64 per chunk row
    sentence_page: np.ndarray  # int64 per sentence row
    chunk_doc: np.ndarray  # the doc_id of each chunk row (object)


def page_maps(index: Index) -> PageMaps:
    """The page codes of one open index (built once per index, ``mmkg.index.derived``)."""
    return derived(index, "page_sentences.maps", lambda: _page_maps(index))


def _page_maps(index: Index) -> PageMaps:
    order = index.meta["chunks"].select(pl.col("id").alias("chunk_id"), "doc_id")
    located = order.join(index.chunks.select("chunk_id", "page"), on="chunk_id", how="left", maintain_order="left")
    key = pl.when(pl.col("page").is_not_null()).then(pl.col("doc_id") + "#" + pl.col("page").cast(pl.String))
    located = located.with_columns(key.alias("key"))
    codes = {k: i for i, k in enumerate(sorted(set(located["key"].drop_nulls().to_list())))}
    chunk_page = np.asarray([codes.get(k, -1) if k is not None else -1 for k in located["key"].to_list()], np.int64)
    chunk_row = {cid: i for i, cid in enumerate(located["chunk_id"].to_list())}
    sentence_chunk = dict(index.sentences.select("sentence_id", "chunk_id").iter_rows())
    sentence_page = np.asarray(
        [chunk_page[r] if (r := chunk_row.get(sentence_chunk.get(sid, ""), -1)) >= 0 else -1
         for sid in index.meta["sentences"]["id"].to_list()],
        np.int64,
    )  # fmt: skip
    return PageMaps(chunk_page, sentence_page, located["doc_id"].to_numpy())


def rerank(index: Index, chunk_scores: np.ndarray, q: np.ndarray, weight: float, k: int) -> np.ndarray:
    """``chunk_scores`` (per chunk row, -inf outside the filters) with the page-sentence bonus on the top
    ``max(k, POOL)`` candidates; the others are set below every candidate, so the top k come from the pool.

    Only the sentences of the candidates' pages are scored (at most ``POOL`` pages), so the cost does not grow
    with the corpus, in memory or on an ANN-searched sentence table."""
    if weight <= 0:
        return chunk_scores
    pool = np.argsort(-chunk_scores, kind="stable")[: max(k, POOL)]
    pool = pool[np.isfinite(chunk_scores[pool])]
    maps = page_maps(index)
    pages = maps.chunk_page[pool]
    if not pool.size or (pages < 0).all():
        return chunk_scores
    rows = np.flatnonzero(np.isin(maps.sentence_page, pages[pages >= 0]))
    cos = index.cosines_for_rows("sentences", q, rows)
    codes = maps.sentence_page[rows]
    keep = codes >= 0
    if not keep.any():
        return chunk_scores
    best = np.full(int(maps.chunk_page.max()) + 1, -np.inf)
    np.maximum.at(best, codes[keep], cos[keep].astype(np.float64))
    seen = np.isfinite(best)
    lo, hi = best[seen].min(), best[seen].max()
    scaled = np.zeros_like(best)
    scaled[seen] = (best[seen] - lo) / (hi - lo + 1e-9)
    top = float(chunk_scores[pool[0]]) or 1.0
    out = np.full_like(chunk_scores, -np.inf)
    bonus = np.where(pages >= 0, scaled[np.maximum(pages, 0)], 0.0)
    out[pool] = chunk_scores[pool] + weight * abs(top) * bonus
    return out
