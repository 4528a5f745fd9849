"""A query's vectors in an index's space: the text, the picture (through what OCR reads in it), and their mix.

The index (``mmkg.index.Index``) embeds what it is given with the encoder it was built with; reading
a query picture (OCR, for the text encoder, as at indexing) and mixing a query's modalities are
retrieval's, here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mmkg.index.units import GRANULARITIES
from mmkg.query import Filters, Query
from mmkg.retrieval.query_media import ocr_lines

if TYPE_CHECKING:
    from mmkg.index.reader import Index

def picture_texts(index: Index, image: str | Path) -> list[str]:
    """What the index's encoder reads in a query picture: its OCR lines for the text encoder, nothing for CLIP."""
    if index.manifest.encoder.backend != "text":
        return []
    return ocr_lines(image)  # one OCR engine per process (mmkg.retrieval.query_media)


def image_vector(index: Index, image: str | Path) -> np.ndarray:
    """The query picture's vector; with the text encoder, through what can be read from it (as at indexing)."""
    return index.encode_image(image, picture_texts(index, image))


def query_vector(index: Index, query: Query) -> np.ndarray:
    """One vector for a text and/or image query: the normalized sum of its modalities' vectors."""
    parts = []
    if query.text is not None:
        parts.append(index.encode_text(query.text))
    if query.image is not None:
        parts.append(image_vector(index, query.image))
    if not parts:
        raise ValueError("this strategy answers text and image queries")
    v = np.sum(parts, axis=0)
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def dense_search(index: Index, text: str, k: int = 10, level: str = "chunks",
                 filters: Filters = None) -> list[tuple[str, float]]:  # fmt: skip
    """Plain dense search at one granularity, no graph: the baseline the graph retrieval is measured against.

    Returns ``(id, cosine)`` best first, over the same vectors and filters the strategies use.
    """
    if level not in GRANULARITIES:
        raise ValueError(f"unknown level {level!r}; choose one of {list(GRANULARITIES)}")
    with index.single_blas_thread():
        mask = index.masks(filters)[level]
        q = index.encode_text(text)
        scores = index.dense_scores(level, q, k, mask)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = [int(i) for i in np.argsort(-scores, kind="stable")[:k] if np.isfinite(scores[i])]
    ids = index.meta[level]["id"]
    return [(ids[i], float(scores[i])) for i in top]
