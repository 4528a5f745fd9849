"""A query's vectors in an index's space: the text, the picture (through what OCR reads in it), and their mix.

The index (``mmkg.index.Index``) embeds what it is given with the encoder it was built with; reading
a query picture (OCR, for the text encoder, as at indexing) and mixing a query's modalities are
retrieval's, here.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mmkg.query import Query

if TYPE_CHECKING:
    from mmkg.index.reader import Index

#: one OCR engine per open index, made on first use: loading its models costs more than reading a picture
_OCR: weakref.WeakKeyDictionary[Index, Any] = weakref.WeakKeyDictionary()


def picture_texts(index: Index, image: str | Path) -> list[str]:
    """What the index's encoder reads in a query picture: its OCR lines for the text encoder, nothing for CLIP."""
    if index.manifest.encoder.backend != "text":
        return []
    engine = _OCR.get(index)
    if engine is None:
        from mmkg.vision.ocr import OcrEngine

        engine = _OCR[index] = OcrEngine()
    return [line.text for line in engine.read_path(Path(image))]


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
