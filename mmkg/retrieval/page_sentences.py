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
    """Each chunk row's page as a code (-1: no page), and the sentence rows of each page code, grouped: the
    rows of page ``c`` are ``sentence_rows[offsets[c]:offsets[c + 1]]``."""

    chunk_page: np.ndarray  # int64 per chunk row
    sentence_rows: np.ndarray  # int64 sentence rows, ordered by their page code (page-less sentences left out)
    offsets: np.ndarray  # int64, one more than the number of page codes


def page_maps(index: Index) -> PageMaps:
    """The page codes of one open index (built once per index, ``mmkg.index.derived``)."""
    return derived(index, "page_sentences.maps", lambda: _page_maps(index))


def _page_maps(index: Index) -> PageMaps:
    chunks = (
        index.meta["chunks"].select(pl.col("id").alias("chunk_id"), "doc_id")
        .join(index.chunks.select("chunk_id", "page"), on="chunk_id", how="left", maintain_order="left")
        .with_columns(pl.when(pl.col("page").is_not_null()).then(pl.struct("doc_id", "page")).alias("key"))
        .with_columns(pl.col("key").rank("dense").cast(pl.Int64).sub(1).fill_null(-1).alias("code"))
    )  # fmt: skip
    codes = chunks.select("chunk_id", "code")
    sentences = (
        index.meta["sentences"].select(pl.col("id").alias("sentence_id")).with_row_index("row")
        .join(index.sentences.select("sentence_id", "chunk_id"), on="sentence_id", how="left", maintain_order="left")
        .join(codes, on="chunk_id", how="left", maintain_order="left")
        .filter(pl.col("code") >= 0)
        .sort("code", "row")
    )  # fmt: skip
    n_codes = int(chunks["code"].max()) + 1 if chunks.height else 0  # codes are -1 (no page) and 0..n_codes - 1
    counts = np.bincount(sentences["code"].to_numpy(), minlength=n_codes)
    return PageMaps(
        chunk_page=chunks["code"].to_numpy().astype(np.int64),
        sentence_rows=sentences["row"].to_numpy().astype(np.int64),
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
    )


def rerank(
    index: Index, chunk_scores: np.ndarray, order: np.ndarray, q: np.ndarray, weight: float, k: int
) -> tuple[list[int], np.ndarray]:
    """The top k chunk rows after the page-sentence bonus, best first, and ``chunk_scores`` with the bonus added.

    ``chunk_scores`` is per chunk row (-inf outside the filters) and ``order`` its stable descending argsort, which
    the caller has already made: the candidates are its first ``max(k, POOL)`` finite rows, and only they get a
    bonus and may be returned. Ties keep the row order, as a stable sort of the new scores would.

    Only the sentences of the candidates' pages are scored (at most ``POOL`` pages), so the cost does not grow
    with the corpus, in memory or on an ANN-searched sentence table."""
    pool = order[: max(k, POOL)]
    pool = pool[np.isfinite(chunk_scores[pool])]
    if weight <= 0:
        return pool[:k].tolist(), chunk_scores
    maps = page_maps(index)
    pages = maps.chunk_page[pool]
    codes = np.unique(pages[pages >= 0])
    starts, ends = maps.offsets[codes], maps.offsets[codes + 1]
    said = ends > starts  # pages with a sentence (a picture-only page has none)
    codes, starts, ends = codes[said], starts[said], ends[said]
    if not codes.size:
        return pool[:k].tolist(), chunk_scores  # no candidate has a page: a page-less corpus ranks as before
    rows = np.concatenate([maps.sentence_rows[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)])
    cos = index.cosines_for_rows("sentences", q, rows).astype(np.float64)
    best = np.maximum.reduceat(cos, np.concatenate([[0], np.cumsum(ends - starts)[:-1]]))
    scaled = dict(zip(codes.tolist(), ((best - best.min()) / (best.max() - best.min() + 1e-9)).tolist(), strict=True))
    bonus = np.asarray([scaled.get(c, 0.0) for c in pages.tolist()])
    top = float(chunk_scores[pool[0]]) or 1.0
    out = chunk_scores.copy()
    out[pool] = chunk_scores[pool] + weight * abs(top) * bonus
    return pool[np.lexsort((pool, -out[pool]))][:k].tolist(), out
