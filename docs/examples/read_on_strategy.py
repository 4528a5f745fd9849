"""A retrieval strategy in one file: BM25, and the chunk that reads on after each hit.

A passage often stops where its answer starts: "In July 1999 Collins became the first woman to command a
Space Shuttle mission." ends one chunk, "On that flight, STS-93, ..." opens the next. This strategy ranks
chunks by BM25 and lets each of the best hits lend a share of its score to the next chunk of its document
(reading order), so that chunk is retrieved too. Registered under ``readon`` when the module is imported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from mmkg.retrieval import evidence as ev
from mmkg.retrieval.base import Filters, Params, PresetStrategy, Query, param
from mmkg.retrieval.registry import register_strategy
from mmkg.retrieval.results import RetrievalResult

if TYPE_CHECKING:
    from mmkg.index import Index


@dataclass(frozen=True)
class ReadOnParams(Params):
    """Frozen and typed: ``--param hits=10`` and ``"params": {"share": 0.3}`` are checked against these fields."""

    hits: int = param(20, "BM25 hits that lend a share of their score to the chunk after them")
    share: float = param(0.5, "the share of a hit's score its next chunk gets (0: BM25 alone)")

    def __post_init__(self) -> None:
        if self.hits < 0:
            raise ValueError(f"hits must not be negative; got {self.hits}")
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"share must be within [0, 1]; got {self.share}")


@register_strategy
class ReadOn(PresetStrategy):
    name: ClassVar[str] = "readon"
    summary: ClassVar[str] = "BM25, plus the chunk after each of the best hits (a passage that reads on)"
    modalities: ClassVar[frozenset[str]] = frozenset({"text"})
    presets: ClassVar[dict[str, ReadOnParams]] = {"default": ReadOnParams(), "bm25": ReadOnParams(share=0.0)}
    default_preset: ClassVar[str] = "default"

    params: ReadOnParams

    def retrieve(self, index: Index, query: Query, k: int, filters: Filters = None) -> RetrievalResult:
        t0 = time.perf_counter()
        result = self.new_result(index, query)
        scores = index.lexical_scores(query.text or "").astype(np.float64)  # one per chunk, in graph row order
        mask = index.masks(filters)["chunks"]  # the chunks the filters allow (None: all)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        # the next chunk of each chunk's document, by graph row
        table = index.chunks.select("chunk_id", "doc_id", "chunk_index")
        rows = index.chunk_rows(table["chunk_id"].to_list())
        order = sorted(zip(table["doc_id"], table["chunk_index"], rows, strict=True))
        following = {r1: r2 for (d1, _, r1), (d2, _, r2) in pairwise(order) if d1 == d2}
        total = scores.copy()
        lent = 0
        for r in np.argsort(-scores, kind="stable")[: self.params.hits]:
            nxt = following.get(int(r))
            if scores[r] > 0 and nxt is not None and (mask is None or mask[nxt]):
                total[nxt] = max(total[nxt], self.params.share * scores[r])
                lent += total[nxt] > scores[nxt]
        ranked = [int(r) for r in np.argsort(-total, kind="stable")[:k] if total[r] > 0]
        result.chunks = ev.chunks(index, ranked, total.astype(np.float32))
        result.seeds = sum(1 for r in ranked if scores[r] > 0)
        result.notes.append(f"{lent} chunk(s) ranked up by the hit before them")
        result.timings_ms = {"total": round((time.perf_counter() - t0) * 1e3, 2)}
        return result
