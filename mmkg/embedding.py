"""What each granularity is embedded from.

Chunks carry their document title (an encyclopedic passage rarely repeats its subject's name),
sentences are embedded as they are, images through their pixels (CLIP) or, with the text
encoder, through what can be read about them: OCR text, alt text, the entities grounded in them,
the document title and the text around them. Object crops likewise: the entity they ground and
the text read in them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from mmkg.encoders import Encoder, ImageInput

NEARBY_CHARS = 300


def chunk_texts(chunks: pl.DataFrame, documents: pl.DataFrame) -> list[str]:
    titles = dict(documents.select("doc_id", "title").iter_rows())
    out = []
    for doc_id, text in chunks.select("doc_id", "text").iter_rows():
        title = titles.get(doc_id, "")
        out.append(text if not title or text.startswith(title) else f"{title}\n{text}")
    return out


def image_inputs(
    images: pl.DataFrame,
    image_text: pl.DataFrame,
    objects: pl.DataFrame,
    chunks: pl.DataFrame,
    documents: pl.DataFrame,
    data_root: Path,
) -> tuple[list[str], list[ImageInput]]:
    """One input per distinct image: its blob plus the texts that describe it, most specific first."""
    first = images.unique("image_id", keep="first", maintain_order=True)
    ocr = dict(
        image_text.sort("image_id", "line_index")
        .group_by("image_id", maintain_order=True)
        .agg(pl.col("text"))
        .iter_rows()
    )
    grounded = dict(objects.group_by("image_id").agg(pl.col("entity_name").unique().sort()).iter_rows())
    titles = dict(documents.select("doc_id", "title").iter_rows())
    nearby: dict[str, str] = {}
    for text, ids in chunks.select("text", "image_ids").iter_rows():
        for image_id in ids or []:
            nearby.setdefault(image_id, text[:NEARBY_CHARS])
    ids, inputs = [], []
    for img in first.iter_rows(named=True):
        iid = img["image_id"]
        texts = [
            " ".join(ocr.get(iid, [])),
            img["alt_text"] or "",
            ", ".join(grounded.get(iid, [])),
            titles.get(img["doc_id"], ""),
            nearby.get(iid, ""),
        ]
        ids.append(iid)
        inputs.append(ImageInput(path=data_root / img["blob_path"], pil=None, texts=[t for t in texts if t.strip()]))
    return ids, inputs


def object_inputs(objects: pl.DataFrame, data_root: Path) -> list[ImageInput]:
    return [
        ImageInput(path=data_root / crop, pil=None, texts=[t for t in (name, label) if t])
        for name, label, crop in objects.select("entity_name", "label", "crop_path").iter_rows()
    ]


@dataclass
class Embedded:
    frame: pl.DataFrame
    seconds: float


def vectors_frame(ids: list[str], meta: pl.DataFrame, id_col: str, vecs: np.ndarray, dim: int) -> pl.DataFrame:
    """(id, partition, doc_id, vector) in the order of ``ids``; ``meta`` gives partition and doc_id per id."""
    base = pl.DataFrame({id_col: ids}, schema={id_col: pl.String})
    base = base.join(
        meta.select(id_col, "partition", "doc_id").unique(id_col, keep="first"),
        on=id_col,
        how="left",
        maintain_order="left",
    )
    return base.with_columns(pl.Series("vector", vecs.astype(np.float32), dtype=pl.Array(pl.Float32, dim)))


def embed_all(
    encoder: Encoder,
    documents: pl.DataFrame,
    chunks: pl.DataFrame,
    sentences: pl.DataFrame,
    images: pl.DataFrame,
    image_text: pl.DataFrame,
    objects: pl.DataFrame,
    data_root: Path,
    batch_size: int = 64,
) -> dict[str, Embedded]:
    dim = encoder.info.dim

    def timed(ids: list[str], meta: pl.DataFrame, id_col: str, encode: Callable[[], np.ndarray]) -> Embedded:
        t = time.perf_counter()
        vecs = encode() if ids else np.zeros((0, dim), np.float32)
        return Embedded(vectors_frame(ids, meta, id_col, vecs, dim), time.perf_counter() - t)

    image_ids, image_in = image_inputs(images, image_text, objects, chunks, documents, data_root)
    return {
        "chunks": timed(
            chunks["chunk_id"].to_list(),
            chunks,
            "chunk_id",
            lambda: encoder.encode_text(chunk_texts(chunks, documents), batch_size),
        ),
        "sentences": timed(
            sentences["sentence_id"].to_list(),
            sentences,
            "sentence_id",
            lambda: encoder.encode_text(sentences["text"].to_list(), batch_size),
        ),
        "images": timed(image_ids, images, "image_id", lambda: encoder.encode_images(image_in, batch_size)),
        "objects": timed(
            objects["object_id"].to_list(),
            objects,
            "object_id",
            lambda: encoder.encode_images(object_inputs(objects, data_root), batch_size),
        ),
    }
