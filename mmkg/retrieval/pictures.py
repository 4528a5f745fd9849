"""The pictures of an index that a query picture is: the same bytes, or the same picture re-encoded.

Shared by the strategies that answer picture queries (MG2-RAG, MMGraphRAG, R2AG); moved out of the
reader, which is data access.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mmkg.index.reader import Index


def same_pictures(index: Index, image: str | Path, max_bits: int | None = None) -> list[tuple[str, int]]:
    """Pictures of ``index`` that are the query picture: ``(image_id, differing hash bits)``, closest first.

    The same bytes (the image id is their hash) is distance 0; otherwise the 64-bit perceptual
    hashes (``mmkg.ingest.images.perceptual_hash``) may differ in at most ``max_bits`` bits, which
    finds the picture re-encoded, resized, or embedded in a PDF.
    """
    from PIL import Image

    from mmkg.ids import bytes_id
    from mmkg.ingest.images import SAME_PICTURE_MAX_BITS, perceptual_hash

    max_bits = SAME_PICTURE_MAX_BITS if max_bits is None else max_bits
    data = Path(image).read_bytes()
    exact = bytes_id(data)
    images = index.images
    out: dict[str, int] = {}
    if exact in images["image_id"]:
        out[exact] = 0
    if "phash" in images.columns:
        with Image.open(io.BytesIO(data)) as img:
            query = perceptual_hash(img)
        if query:
            hashes = images["phash"].to_list()
            known = np.array([int(h, 16) if h else 0 for h in hashes], dtype=np.uint64)
            dist = np.bitwise_count(known ^ np.uint64(int(query, 16))).astype(np.int64)
            dist[[not h for h in hashes]] = 64
            for j in np.flatnonzero(dist <= max_bits):
                iid = images["image_id"][int(j)]
                out[iid] = min(out.get(iid, 64), int(dist[j]))
    return sorted(out.items(), key=lambda kv: (kv[1], kv[0]))
