"""What each granularity is embedded from.

Chunks carry their document title (an encyclopedic passage rarely repeats its subject's name),
sentences are embedded as they are (or, opt-in, pooled from their chunk's pass:
``encode_chunks_and_sentences``), images through their pixels (CLIP) or, with the text
encoder, through what can be read about them: OCR text, alt text, the entities grounded in them,
the document title and the text around them. Object crops likewise: the entity they ground and
the text read in them.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from mmkg.atomic import atomic_path
from mmkg.encoders import Encoder, ImageInput
from mmkg.sections import chunk_sections
from mmkg.settings import Settings

NEARBY_CHARS = 300


def chunk_texts(chunks: pl.DataFrame, documents: pl.DataFrame) -> list[str]:
    """What the encoder and BM25 read for each chunk: the document title, the section path the chunk sits in
    when ``Settings.chunk_sections`` is on (``mmkg.sections``; a page deep in "4.2 Results" says neither; off
    by default), then the chunk's text."""
    titles = dict(documents.select("doc_id", "title").iter_rows())
    paths = chunk_sections(chunks, documents) if Settings().chunk_sections else [""] * chunks.height
    out = []
    for (doc_id, text), section in zip(chunks.select("doc_id", "text").iter_rows(), paths, strict=True):
        title = titles.get(doc_id, "")
        lead = "\n".join(x for x in (title if not text.startswith(title) else "", section) if x)
        out.append(f"{lead}\n{text}" if lead else text)
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
    reused: int = 0  # vectors taken from the cache instead of the encoder


class VectorCache:
    """Text vectors from the previous run of a partition, keyed by encoder and exact input text.

    Re-embedding a partition after one record changed then costs that record, not the partition:
    the rest are looked up. One file per (encoder, granularity, partition) holding exactly that
    partition's current vectors, so the cache grows with the corpus, not with its edits (a removed
    partition's file stays behind; the folder is safe to delete at any time). The key is the input
    text itself (hashed), so a changed title, chunking or text can never reuse a stale vector.
    """

    def __init__(self, root: Path, encoder_id: str):
        self.folder = root / hashlib.blake2b(encoder_id.encode(), digest_size=8).hexdigest()

    @staticmethod
    def key(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()

    def _path(self, granularity: str, partition: str) -> Path:
        return self.folder / granularity / f"{partition}.parquet"

    def load(self, granularity: str, partition: str, dim: int) -> dict[str, np.ndarray]:
        path = self._path(granularity, partition)
        if not path.exists():
            return {}
        try:
            df = pl.read_parquet(path)
            vecs = df["vector"].to_numpy().reshape(df.height, -1)
        except Exception:  # an unreadable cache is only a cache: embed again
            return {}
        if vecs.shape[1] != dim:
            return {}
        return dict(zip(df["key"].to_list(), vecs.astype(np.float32), strict=True))

    def save(self, granularity: str, partition: str, keys: list[str], vecs: np.ndarray) -> None:
        df = pl.DataFrame({"key": keys}, schema={"key": pl.String}).with_columns(
            pl.Series("vector", vecs.astype(np.float32), dtype=pl.Array(pl.Float32, vecs.shape[1]))
        )
        with atomic_path(self._path(granularity, partition)) as tmp:
            df.unique("key", keep="first").write_parquet(tmp)


def encode_distinct(encoder: Encoder, texts: list[str], batch_size: int) -> np.ndarray:
    """``encoder.encode_text`` with each distinct text encoded once, rows in the order of ``texts``.

    Boilerplate sentences ("All rights reserved.", a page footer) repeat across pages and documents,
    and a file of one repeated line would otherwise cost one forward pass per line.
    """
    first: dict[str, int] = {}
    index = [first.setdefault(t, len(first)) for t in texts]
    if len(first) == len(texts):
        return encoder.encode_text(texts, batch_size)
    vecs = encoder.encode_text(list(first), batch_size)
    return vecs[np.asarray(index, dtype=np.int64)] if len(texts) else vecs


def encode_cached(
    encoder: Encoder,
    texts: list[str],
    batch_size: int,
    cache: VectorCache | None,
    granularity: str,
    partition: str | None,
) -> tuple[np.ndarray, int]:
    """``encoder.encode_text`` for the texts the cache lacks; returns all vectors and how many were reused."""
    dim = encoder.info.dim
    if cache is None or partition is None:
        return encode_distinct(encoder, texts, batch_size), 0
    keys = [VectorCache.key(t) for t in texts]
    known = cache.load(granularity, partition, dim)
    missing = sorted({i for i, k in enumerate(keys) if k not in known})
    fresh = encode_distinct(encoder, [texts[i] for i in missing], batch_size) if missing else np.zeros((0, dim))
    out = np.zeros((len(texts), dim), np.float32)
    for row, i in enumerate(missing):
        out[i] = fresh[row]
        known[keys[i]] = out[i]
    for i, k in enumerate(keys):
        out[i] = known[k]
    try:
        cache.save(granularity, partition, keys, out)
    except OSError as exc:  # a cache that cannot be written only costs the next run time
        warnings.warn(f"vector cache not written under {cache.folder}: {exc}", stacklevel=2)
    return out, len(texts) - len(missing)


def sentence_spans(chunks: pl.DataFrame, texts: list[str], sentences: pl.DataFrame) -> list[list[tuple[int, int]]]:
    """Each chunk's sentences as character spans of its embedded text (``chunk_texts``: the title may lead),
    in ``sentences`` row order within each chunk."""
    start = dict(zip(chunks["chunk_id"].to_list(), chunks["char_start"].to_list(), strict=True))
    shift = {cid: len(t) - len(c) for cid, t, c in zip(chunks["chunk_id"].to_list(), texts, chunks["text"].to_list(),
                                                       strict=True)}  # fmt: skip
    spans: dict[str, list[tuple[int, int]]] = {cid: [] for cid in start}
    for cid, lo, hi in sentences.select("chunk_id", "char_start", "char_end").iter_rows():
        if cid in spans:
            off = shift[cid] - start[cid]
            spans[cid].append((lo + off, hi + off))
    return [spans[cid] for cid in chunks["chunk_id"].to_list()]


def encode_chunks_and_sentences(
    encoder: Encoder,
    chunks: pl.DataFrame,
    documents: pl.DataFrame,
    sentences: pl.DataFrame,
    batch_size: int,
    cache: VectorCache | None,
    partition: str | None,
) -> tuple[tuple[np.ndarray, int], tuple[np.ndarray, int], float]:
    """Chunk vectors and sentence vectors from one forward pass per chunk (``encode_with_spans``).

    A sentence's vector is its tokens' mean within its chunk's pass; sentences the pass truncated
    away are embedded alone. With a cache, a chunk whose vector and sentence vectors are all cached
    (keyed by the chunk's text and the sentence's span in it) costs nothing. Returns (chunk vectors,
    reused), (sentence vectors in ``sentences`` order, reused) and the seconds spent on lone sentences.
    """
    dim = encoder.info.dim
    texts = chunk_texts(chunks, documents)
    spans = sentence_spans(chunks, texts, sentences)
    chunk_keys = [VectorCache.key(t) for t in texts]
    span_keys = [[VectorCache.key(f"{key}|{lo}:{hi}") for lo, hi in chunk_spans]
                 for key, chunk_spans in zip(chunk_keys, spans, strict=True)]  # fmt: skip
    known_chunks = cache.load("chunks", partition, dim) if cache and partition else {}
    known_spans = cache.load("sentences_in_chunks", partition, dim) if cache and partition else {}
    todo = [i for i, key in enumerate(chunk_keys)
            if key not in known_chunks or any(k not in known_spans for k in span_keys[i])]  # fmt: skip
    lone: list[tuple[str, str]] = []  # (span key, sentence text) of sentences the pass truncated away
    if todo:
        vecs, span_vecs = encoder.encode_with_spans([texts[i] for i in todo], [spans[i] for i in todo], batch_size)
        flat = iter(span_vecs)
        chunk_text = chunks["text"].to_list()
        for row, i in enumerate(todo):
            known_chunks[chunk_keys[i]] = vecs[row]
            for key, (lo, hi) in zip(span_keys[i], spans[i], strict=True):
                vec = next(flat)
                if vec is None:
                    lone.append((key, texts[i][lo:hi] or chunk_text[i]))
                else:
                    known_spans[key] = vec
    t0 = time.perf_counter()
    if lone:
        for (key, _), vec in zip(lone, encode_distinct(encoder, [t for _, t in lone], batch_size), strict=True):
            known_spans[key] = vec
    lone_s = time.perf_counter() - t0
    chunk_out = np.stack([known_chunks[k] for k in chunk_keys]) if chunk_keys else np.zeros((0, dim), np.float32)
    # sentences in table order: look each up by its chunk and position among the chunk's sentences
    position: dict[str, int] = {}
    row_of = {cid: i for i, cid in enumerate(chunks["chunk_id"].to_list())}
    sentence_out = np.zeros((sentences.height, dim), np.float32)
    for n, cid in enumerate(sentences["chunk_id"].to_list()):
        j = position.get(cid, 0)
        position[cid] = j + 1
        sentence_out[n] = known_spans[span_keys[row_of[cid]][j]]
    if cache and partition:
        try:
            cache.save("chunks", partition, chunk_keys, chunk_out)
            cache.save("sentences_in_chunks", partition, [k for keys in span_keys for k in keys],
                       np.stack([known_spans[k] for keys in span_keys for k in keys]) if sentences.height
                       else np.zeros((0, dim), np.float32))  # fmt: skip
        except OSError as exc:  # a cache that cannot be written only costs the next run time
            warnings.warn(f"vector cache not written under {cache.folder}: {exc}", stacklevel=2)
    reused_chunks = len(chunk_keys) - len(todo)
    reused_sentences = sentences.height - sum(len(spans[i]) for i in todo)
    return (chunk_out, reused_chunks), (sentence_out, reused_sentences), lone_s


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


def relation_texts(relations: pl.DataFrame) -> list[str]:
    """A triple as text: "subject predicate object", with "not" before a negated predicate."""
    return [
        " ".join(p for p in (subj, "not" if neg else "", pred, obj) if p)
        for subj, pred, obj, neg in relations.select("subject", "predicate", "object", "negated").iter_rows()
    ]


def compose_entity_vectors(
    units: pl.DataFrame, name_vectors: np.ndarray, sentence_ids: list[str], sentence_vectors: np.ndarray
) -> np.ndarray:
    """Entity-in-document vectors: ℓ2-normalized sum of the name's vector and the mean vector of the sentences
    of that document that mention it (the name alone when only the title names it).

    mKG-RAG embeds an entity's name with the description an LLM wrote; the sentences that mention the
    entity are what that description is written from, and their vectors are already computed, so
    only the (short) names cost an encoder pass.
    """
    row = {sid: i for i, sid in enumerate(sentence_ids)}
    out = np.array(name_vectors, dtype=np.float32, copy=True)
    for i, sids in enumerate(units["sentence_ids"].to_list()):
        rows = [row[s] for s in sids or [] if s in row]
        if rows:
            context = sentence_vectors[rows].mean(axis=0)
            norm = float(np.linalg.norm(context))
            if norm > 0:
                out[i] = out[i] + context / norm
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-12)


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
    cache: VectorCache | None = None,
    partition: str | None = None,
    document_entities: pl.DataFrame | None = None,
    relations: pl.DataFrame | None = None,
    sentences_from_chunks: bool = False,
) -> dict[str, Embedded]:
    """Vectors of every granularity; with a ``cache`` and ``partition``, unchanged texts are not re-encoded.

    With ``document_entities`` and ``relations`` (what mKG-RAG and R2AG search), their vectors too:
    entities from their name and the sentences that mention them (``compose_entity_vectors``), triples
    from their text (``relation_texts``).
    """
    dim = encoder.info.dim

    def timed(
        ids: list[str], meta: pl.DataFrame, id_col: str, encode: Callable[[], tuple[np.ndarray, int]]
    ) -> Embedded:
        t = time.perf_counter()
        vecs, reused = encode() if ids else (np.zeros((0, dim), np.float32), 0)
        return Embedded(vectors_frame(ids, meta, id_col, vecs, dim), time.perf_counter() - t, reused)

    image_ids, image_in = image_inputs(images, image_text, objects, chunks, documents, data_root)
    if sentences_from_chunks and hasattr(encoder, "encode_with_spans") and chunks.height:
        t = time.perf_counter()
        (chunk_vecs, chunks_reused), (sentence_vecs, sentences_reused), lone_s = encode_chunks_and_sentences(
            encoder, chunks, documents, sentences, batch_size, cache, partition
        )
        pass_s = time.perf_counter() - t - lone_s
        text_out = {
            "chunks": Embedded(vectors_frame(chunks["chunk_id"].to_list(), chunks, "chunk_id", chunk_vecs, dim),
                               pass_s, chunks_reused),
            "sentences": Embedded(vectors_frame(sentences["sentence_id"].to_list(), sentences, "sentence_id",
                                                sentence_vecs, dim), lone_s, sentences_reused),
        }  # fmt: skip
    else:
        text_out = {
            "chunks": timed(
                chunks["chunk_id"].to_list(),
                chunks,
                "chunk_id",
                lambda: encode_cached(encoder, chunk_texts(chunks, documents), batch_size, cache, "chunks", partition),
            ),
            "sentences": timed(
                sentences["sentence_id"].to_list(),
                sentences,
                "sentence_id",
                lambda: encode_cached(encoder, sentences["text"].to_list(), batch_size, cache, "sentences",
                                      partition),
            ),
        }  # fmt: skip
    out = {
        **text_out,
        "images": timed(image_ids, images, "image_id", lambda: (encoder.encode_images(image_in, batch_size), 0)),
        "objects": timed(
            objects["object_id"].to_list(),
            objects,
            "object_id",
            lambda: (encoder.encode_images(object_inputs(objects, data_root), batch_size), 0),
        ),
    }
    if document_entities is not None:
        sent = out["sentences"].frame
        sent_vecs = sent["vector"].to_numpy().reshape(sent.height, dim) if sent.height else np.zeros((0, dim))
        units = document_entities

        def entity_vectors() -> tuple[np.ndarray, int]:
            names, reused = encode_cached(encoder, units["name"].to_list(), batch_size, cache, "entity_names",
                                          partition)  # fmt: skip
            return compose_entity_vectors(units, names, sent["sentence_id"].to_list(), sent_vecs), reused

        out["document_entities"] = timed(units["unit_id"].to_list(), units, "unit_id", entity_vectors)
    if relations is not None:
        out["relations"] = timed(
            relations["relation_id"].to_list(),
            relations,
            "relation_id",
            lambda: encode_cached(encoder, relation_texts(relations), batch_size, cache, "relations", partition),
        )
    return out
