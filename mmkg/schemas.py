"""Declared schemas of every table the pipeline writes.

Each table is a polars frame with exactly these columns and dtypes; ``conform`` enforces that
before anything is written, so a reader (DuckDB, polars, pyarrow) can rely on the layout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

Str = pl.String
I32 = pl.Int32
I64 = pl.Int64

#: one transcript segment of a media document: its characters in ``documents.text`` and its time in seconds
TIME_SEGMENT = pl.Struct({"char_start": I32, "char_end": I32, "t_start": pl.Float32, "t_end": pl.Float32})

DOCUMENTS = pl.Schema(
    {
        "doc_id": Str,
        "partition": Str,
        "source_path": Str,  # relative to the corpus root, POSIX separators
        "record_key": Str,  # record id inside a JSON/JSONL file; "" for single-document files
        "kind": Str,  # markdown | text | json | pdf | image | video | audio
        "title": Str,
        "text": Str,
        "page_starts": pl.List(I32),  # char offset where each page starts; [0] for unpaged text
        "n_pages": I32,
        "content_sha256": Str,  # media: of the file and its subtitle sidecar (the transcript is content)
        "n_bytes": I64,
        # time-based media (video, audio): a "page" is a time window of the media (mmkg.ingest.media)
        "duration_s": pl.Float32,  # null for other kinds
        "time_segments": pl.List(TIME_SEGMENT),  # transcript segments: where each sits in the text and in time
    }
)

IMAGES = pl.Schema(
    {
        "image_id": Str,  # content address of the stored bytes
        "partition": Str,
        "doc_id": Str,
        "occurrence": I32,  # n-th image of the document
        "page": I32,  # 1-based page for PDFs, null otherwise
        "char_offset": I32,  # where in the document text the image sits; null when unknown
        "role": Str,  # embedded | linked | standalone | page_render | video_frame
        "source": Str,  # file path (and object index for PDFs) the image came from
        "alt_text": Str,
        "blob_path": Str,  # relative to the data root
        "format": Str,
        "mode": Str,
        "width": I32,
        "height": I32,
        "n_bytes": I64,
        "phash": Str,  # 64-bit perceptual hash, 16 hex digits ("" for a flat image): finds the same picture re-encoded
        "t_s": pl.Float32,  # video frames: the time in the video, seconds; null otherwise
    }
)

REJECTED = pl.Schema(
    {
        "partition": Str,
        "source_path": Str,
        "record_key": Str,
        "stage": Str,
        "reason": Str,
    }
)

CHUNKS = pl.Schema(
    {
        "chunk_id": Str,
        "partition": Str,
        "doc_id": Str,
        "chunk_index": I32,  # position in the document, in page order (OCR pages interleaved)
        "page": I32,  # 1-based PDF page (as in MMLongBench evidence pages); null for unpaged documents
        "char_start": I32,  # document offsets; OCR text lies past the text layer (see PAGE_TEXT)
        "char_end": I32,
        "n_tokens": I32,
        "text": Str,
        "image_ids": pl.List(Str),
        "text_source": Str,  # document (the text layer / file text) | ocr (page_text of an image-only page)
        "t_start": pl.Float32,  # media transcripts: the time span the chunk's segments cover, seconds; null otherwise
        "t_end": pl.Float32,
    }
)

SENTENCES = pl.Schema(
    {
        "sentence_id": Str,
        "partition": Str,
        "doc_id": Str,
        "chunk_id": Str,
        "sent_index": I32,  # position inside the chunk
        "char_start": I32,  # document offsets
        "char_end": I32,
        "text": Str,
    }
)

MENTIONS = pl.Schema(
    {
        "mention_id": Str,
        "partition": Str,
        "doc_id": Str,
        "chunk_id": Str,
        "sentence_id": Str,
        "text": Str,
        "label": Str,
        "entity_key": Str,
        "char_start": I32,  # document offsets; null for title mentions
        "char_end": I32,
        "source": Str,  # ner | title
        "relational": pl.Boolean,
    }
)

ENTITIES = pl.Schema(
    {
        "entity_key": Str,
        "name": Str,  # most frequent surface form
        "label": Str,  # most frequent label
        "labels": pl.List(Str),  # every label seen, most frequent first
        "relational": pl.Boolean,
        "n_mentions": I32,
        "n_chunks": I32,
        "n_docs": I32,
    }
)

PARTITION_ENTITIES = pl.Schema({"partition": Str, **ENTITIES})

DOCUMENT_ENTITIES = pl.Schema(
    {
        "unit_id": Str,  # content id of (document, entity key)
        "partition": Str,
        "doc_id": Str,
        "entity_key": Str,
        "name": Str,  # the document's most frequent surface form
        "label": Str,
        "n_mentions": I32,
        "chunk_ids": pl.List(Str),  # the chunks of the document that mention it, in document order
        "sentence_ids": pl.List(Str),  # the sentences that mention it (title mentions have none)
        "context": Str,  # the first of those sentences, joined (at most CONTEXT_CHARS): what it is said to be
    }
)

ENTITY_CATALOG = pl.Schema(
    {
        **ENTITIES,
        "partitions": pl.List(Str),
    }
)

RELATIONS = pl.Schema(
    {
        "relation_id": Str,
        "partition": Str,
        "doc_id": Str,
        "chunk_id": Str,
        "sentence_id": Str,
        "subject": Str,
        "subject_key": Str,
        "predicate": Str,
        "object": Str,
        "object_key": Str,  # null when the object is not a named entity (appositive noun)
        "rule": Str,
        "negated": pl.Boolean,
    }
)

F32 = pl.Float32

PAGE_TEXT = pl.Schema(
    {
        "doc_id": Str,
        "partition": Str,
        "page": I32,  # 1-based PDF page, like documents.page_starts and chunks.page
        "image_id": Str,  # the page render the text was read from
        "source": Str,  # ocr
        "char_start": I32,  # offset in documents.text + "\n\n" + OCR pages (mmkg.vision.page_text)
        "text": Str,  # OCR lines in reading order: rows by newline, paragraphs by a blank line
        "n_lines": I32,
        "mean_score": F32,
    }
)

IMAGE_TEXT = pl.Schema(
    {
        "image_id": Str,
        "partition": Str,
        "line_index": I32,
        "text": Str,
        "score": F32,
        "x0": F32,
        "y0": F32,
        "x1": F32,
        "y1": F32,
        "quad": pl.List(F32),  # 4 corners, flat x,y pairs, clockwise from top-left
    }
)

OBJECTS = pl.Schema(
    {
        "object_id": Str,
        "partition": Str,
        "image_id": Str,
        "doc_id": Str,
        "chunk_id": Str,  # the chunk whose entity prompted the object; null for unattached images
        "entity_key": Str,
        "entity_name": Str,
        "backend": Str,  # ocr | ultralytics
        "label": Str,  # matched OCR text or detector class
        "x0": F32,
        "y0": F32,
        "x1": F32,
        "y1": F32,
        "polygons": pl.List(pl.List(F32)),  # mask outlines in pixels, flat x,y pairs
        "score": F32,  # sigma
        "crop_id": Str,
        "crop_path": Str,  # relative to the data root
    }
)

GROUNDING_FAILURES = pl.Schema(
    {
        "partition": Str,
        "image_id": Str,
        "source": Str,
        "backend": Str,
        "reason": Str,
    }
)

MULTIMODAL_NODES = pl.Schema(
    {
        "partition": Str,
        "entity_key": Str,
        "name": Str,
        "label": Str,
        "n_sentences": I32,
        "n_objects": I32,
        "n_images": I32,
        "backends": pl.List(Str),
        "multimodal": pl.Boolean,
    }
)

CITATION = pl.Struct(
    {
        "label": I32,  # the evidence number the answer cites, [label]
        "chunk_id": Str,
        "doc_id": Str,
        "source_path": Str,
        "page": I32,
        "image_ids": pl.List(Str),
    }
)

ANSWERS = pl.Schema(
    {
        "question_id": Str,
        "question": Str,
        "answer": Str,
        "short_answer": Str,  # the answer alone ("STS-93", "Not answerable"), without citation marks
        "answer_type": Str,  # what the question asks for: person, place, date, number, yes_no, choice, ...
        "confidence": F32,  # the reader's confidence in the short answer, 0..1
        "citations": pl.List(CITATION),
        "backend": Str,
        "model": Str,
        "task": Str,
        "strategy": Str,
        "extractive": pl.Boolean,  # copied from the evidence, not written by a model
        "prompt_tokens": I32,
        "completion_tokens": I32,
        "retrieve_ms": F32,
        "generate_ms": F32,
        "invalid_citations": I32,  # markers that named no evidence shown (dropped)
        "index_version": Str,
        "error": Str,  # why this question has no answer ("" when it has one)
    }
)

CROSS_MODAL_LINKS = pl.Schema(
    {
        "link_id": Str,
        "partition": Str,
        "image_id": Str,
        "doc_id": Str,
        "chunk_id": Str,  # the chunk that shows the picture
        "image_entity": Str,  # the image-side entity's text
        "kind": Str,  # ocr | label | caption | global
        "entity_key": Str,  # the linked text entity; null when unaligned or new
        "entity_name": Str,
        "score": F32,  # cosine of the image entity to the linked (or nearest) text entity
        "cluster": I32,  # the spectral cluster it was aligned within (-1: none)
        "cluster_size": I32,
        "method": Str,  # spectral | global | new | unaligned
        "description": Str,  # enriched description (unaligned and new entities)
        "x0": F32,  # the region that shows it (OCR line, object box); null for caption and global
        "y0": F32,
        "x1": F32,
        "y1": F32,
    }
)

TABLES: dict[str, pl.Schema] = {
    "documents": DOCUMENTS,
    "images": IMAGES,
    "rejected_files": REJECTED,
    "chunks": CHUNKS,
    "sentences": SENTENCES,
    "entity_mentions": MENTIONS,
    "entities": PARTITION_ENTITIES,
    "document_entities": DOCUMENT_ENTITIES,
    "entity_catalog": ENTITY_CATALOG,
    "relations": RELATIONS,
    "page_text": PAGE_TEXT,
    "image_text": IMAGE_TEXT,
    "objects": OBJECTS,
    "grounding_failures": GROUNDING_FAILURES,
    "multimodal_nodes": MULTIMODAL_NODES,
    "cross_modal_links": CROSS_MODAL_LINKS,
    "answers": ANSWERS,
}

#: tables written once for the whole index (all others are written per corpus partition)
GLOBAL_TABLES = ("entity_catalog", "answers")


#: columns added after a table was first declared: tables written before them get nulls on read instead of an error
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "documents": ("duration_s", "time_segments"),
    "images": ("t_s",),
    "chunks": ("t_start", "t_end"),
}


class SchemaError(ValueError):
    """A frame does not match its declared table schema."""


def with_added_columns(df: pl.DataFrame, table: str) -> pl.DataFrame:
    """``df`` with the columns added to ``table`` after it was written (``ADDED_COLUMNS``) as nulls.

    Nothing else changes, so a schema check still sees any other difference; a filled frame's columns
    follow the declared order (undeclared ones after), so it concatenates with newer files.
    """
    schema = TABLES[table]
    late = [c for c in ADDED_COLUMNS.get(table, ()) if c not in df.columns]
    if not late:
        return df
    df = df.with_columns(pl.lit(None, dtype=schema[c]).alias(c) for c in late)
    return df.select([c for c in schema if c in df.columns] + [c for c in df.columns if c not in schema])


def conform(df: pl.DataFrame, schema: Mapping[str, Any], table: str = "table") -> pl.DataFrame:
    """Select and cast ``df`` to ``schema``; name every missing or uncastable column."""
    if table in ADDED_COLUMNS:
        df = with_added_columns(df, table)
    missing = [c for c in schema if c not in df.columns]
    if missing:
        raise SchemaError(f"{table}: missing column(s) {missing}; expected {list(schema)}")
    try:
        return df.select([pl.col(c).cast(t, strict=True) for c, t in schema.items()])
    except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError) as exc:
        raise SchemaError(f"{table}: cannot cast to declared schema: {exc}") from exc


def frame(rows: Iterable[Mapping[str, Any]], schema: Mapping[str, Any]) -> pl.DataFrame:
    """Build a frame of declared schema from row dicts (empty input gives an empty typed frame)."""
    return pl.DataFrame(list(rows), schema=pl.Schema(schema), orient="row")


def empty(schema: Mapping[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(schema=pl.Schema(schema))
