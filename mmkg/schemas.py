"""Declared schemas of every table the pipeline writes.

Each table is a polars frame with exactly these columns and dtypes; ``conform`` enforces that
before anything is written, so a reader (DuckDB, polars, pyarrow) can rely on the layout.
What each column means is declared below the tables, in ``DESCRIPTIONS`` (shown in the Dagster UI).
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
OUTLINE_ENTRY = pl.Struct({"level": I32, "title": Str, "page": I32})

DOCUMENTS = pl.Schema(
    {
        "doc_id": Str,
        "partition": Str,
        "source_path": Str,
        "record_key": Str,
        "kind": Str,
        "title": Str,
        "text": Str,
        "page_starts": pl.List(I32),
        "n_pages": I32,
        "content_sha256": Str,
        "n_bytes": I64,
        "duration_s": pl.Float32,
        "time_segments": pl.List(TIME_SEGMENT),
        "outline": pl.List(OUTLINE_ENTRY),
        "transcript_source": Str,
        "language": Str,
    }
)

IMAGES = pl.Schema(
    {
        "image_id": Str,
        "partition": Str,
        "doc_id": Str,
        "occurrence": I32,
        "page": I32,
        "char_offset": I32,
        "role": Str,
        "source": Str,
        "alt_text": Str,
        "blob_path": Str,
        "format": Str,
        "mode": Str,
        "width": I32,
        "height": I32,
        "n_bytes": I64,
        "phash": Str,
        "t_s": pl.Float32,
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
        "chunk_index": I32,
        "page": I32,
        "char_start": I32,
        "char_end": I32,
        "n_tokens": I32,
        "text": Str,
        "image_ids": pl.List(Str),
        "text_source": Str,
        "t_start": pl.Float32,
        "t_end": pl.Float32,
    }
)

SENTENCES = pl.Schema(
    {
        "sentence_id": Str,
        "partition": Str,
        "doc_id": Str,
        "chunk_id": Str,
        "sent_index": I32,
        "char_start": I32,
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
        "char_start": I32,
        "char_end": I32,
        "source": Str,
        "relational": pl.Boolean,
    }
)

ENTITIES = pl.Schema(
    {
        "entity_key": Str,
        "name": Str,
        "label": Str,
        "labels": pl.List(Str),
        "relational": pl.Boolean,
        "n_mentions": I32,
        "n_chunks": I32,
        "n_docs": I32,
    }
)

PARTITION_ENTITIES = pl.Schema({"partition": Str, **ENTITIES})

DOCUMENT_ENTITIES = pl.Schema(
    {
        "unit_id": Str,
        "partition": Str,
        "doc_id": Str,
        "entity_key": Str,
        "name": Str,
        "label": Str,
        "n_mentions": I32,
        "chunk_ids": pl.List(Str),
        "sentence_ids": pl.List(Str),
        "context": Str,
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
        "object_key": Str,
        "rule": Str,
        "negated": pl.Boolean,
    }
)

F32 = pl.Float32

PAGE_TEXT = pl.Schema(
    {
        "doc_id": Str,
        "partition": Str,
        "page": I32,
        "image_id": Str,
        "source": Str,
        "char_start": I32,
        "text": Str,
        "n_lines": I32,
        "mean_score": F32,
        "n_table_rows": I32,
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
        "quad": pl.List(F32),
    }
)

OBJECTS = pl.Schema(
    {
        "object_id": Str,
        "partition": Str,
        "image_id": Str,
        "doc_id": Str,
        "chunk_id": Str,
        "entity_key": Str,
        "entity_name": Str,
        "backend": Str,
        "label": Str,
        "x0": F32,
        "y0": F32,
        "x1": F32,
        "y1": F32,
        "polygons": pl.List(pl.List(F32)),
        "score": F32,
        "crop_id": Str,
        "crop_path": Str,
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
        "short_answer": Str,
        "answer_type": Str,
        "confidence": F32,
        "citations": pl.List(CITATION),
        "backend": Str,
        "model": Str,
        "task": Str,
        "strategy": Str,
        "extractive": pl.Boolean,
        "prompt_tokens": I32,
        "completion_tokens": I32,
        "retrieve_ms": F32,
        "generate_ms": F32,
        "invalid_citations": I32,
        "index_version": Str,
        "error": Str,
    }
)

CROSS_MODAL_LINKS = pl.Schema(
    {
        "link_id": Str,
        "partition": Str,
        "image_id": Str,
        "doc_id": Str,
        "chunk_id": Str,
        "image_entity": Str,
        "kind": Str,
        "entity_key": Str,
        "entity_name": Str,
        "score": F32,
        "cluster": I32,
        "cluster_size": I32,
        "method": Str,
        "description": Str,
        "x0": F32,
        "y0": F32,
        "x1": F32,
        "y1": F32,
    }
)

SECTIONS = pl.Schema(
    {
        "section_id": Str,
        "partition": Str,
        "doc_id": Str,
        "ordinal": I32,
        "level": I32,
        "title": Str,
        "path": Str,
        "parent_id": Str,
        "page": I32,
        "source": Str,
        "chunk_ids": pl.List(Str),
    }
)

PARTS = pl.Schema(
    {
        "part_id": Str,
        "partition": Str,
        "doc_id": Str,
        "kind": Str,
        "label": Str,
        "caption": Str,
        "page": I32,
        "chunk_id": Str,
        "pages": pl.List(I32),
        "n_mentions": I32,
    }
)

#: one recording of a partition that speech recognition read (a file without subtitles); ``mmkg.ingest.speech``
TRANSCRIPTS = pl.Schema(
    {
        "partition": Str,
        "source_path": Str,
        "transcript_source": Str,
        "language": Str,
        "audio_s": pl.Float32,
        "segments": I32,
        "characters": I64,
        "seconds": pl.Float32,
        "cached": pl.Boolean,
        "problem": Str,
    }
)

TABLES: dict[str, pl.Schema] = {
    "transcripts": TRANSCRIPTS,
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
    "sections": SECTIONS,
    "parts": PARTS,
    "image_text": IMAGE_TEXT,
    "objects": OBJECTS,
    "grounding_failures": GROUNDING_FAILURES,
    "multimodal_nodes": MULTIMODAL_NODES,
    "cross_modal_links": CROSS_MODAL_LINKS,
    "answers": ANSWERS,
}

#: what a column means wherever it appears, unless its table says otherwise (``_TABLE_DESCRIPTIONS``)
_COMMON: dict[str, str] = {
    "partition": "corpus partition: the top-level folder of the corpus the row came from",
    "doc_id": "the document (documents.doc_id): content id of partition, path, record key and content",
    "chunk_id": "the chunk (chunks.chunk_id)",
    "sentence_id": "the sentence (sentences.sentence_id)",
    "image_id": "the image (images.image_id): content address of its stored bytes",
    "entity_key": "canonical key under which mentions of one entity merge (casefolded, no article or possessive)",
    "source_path": "relative to the corpus root, POSIX separators",
    "record_key": 'record id inside a JSON/JSONL file; "" for single-document files',
    "text": "the text",
    "label": "spaCy entity label (PERSON, ORG, GPE, ...; TITLE for a document title)",
    "name": "most frequent surface form",
    "labels": "every label seen, most frequent first",
    "relational": "can be a graph node: its label is not a number or quantity (ORDINAL, CARDINAL, PERCENT, QUANTITY)",
    "n_mentions": "mentions of the entity",
    "n_chunks": "chunks that mention the entity",
    "n_docs": "documents that mention the entity",
    "n_bytes": "size in bytes",
    "char_start": "document offsets: start in documents.text",
    "char_end": "document offsets: end (exclusive) in documents.text",
    "page": "1-based PDF page; null for unpaged documents",
    "score": "confidence, 0..1",
    "x0": "left of the box, pixels",
    "y0": "top of the box, pixels",
    "x1": "right of the box, pixels",
    "y1": "bottom of the box, pixels",
    "backend": "what read or detected it: ocr | ultralytics",
    "reason": "why, in words",
}

_TABLE_DESCRIPTIONS: dict[str, dict[str, str]] = {
    "transcripts": {
        "source_path": "the recording (a video or audio file without a subtitle sidecar), relative to the corpus root",
        "transcript_source": "asr:<model>: the speech recognition model that read it",
        "language": "the language the model heard (ISO 639-1); null when it heard no speech or does not say",
        "audio_s": "seconds of audio transcribed (at most the speech budget, MMKG_MAX_TRANSCRIBE_SECONDS)",
        "segments": "timed segments of speech heard",
        "characters": "characters of the transcript",
        "seconds": "wall-clock seconds this step spent on the file (decoding and recognition; near 0 when cached)",
        "cached": "whether the transcript came from the cache of earlier transcripts (same audio, same model)",
        "problem": "why the file has no transcript (no speech heard, the model failed); null when it has one",
    },
    "documents": {
        "doc_id": "content id of partition, path, record key and content",
        "kind": "markdown | text | json | pdf | image | video | audio",
        "title": "the document's title (heading, record title or file name)",
        "text": "the whole text layer; a media document's transcript",
        "page_starts": "char offset where each page starts; [0] for unpaged text",
        "n_pages": "pages (PDF pages; time windows of a video or audio file)",
        "content_sha256": "SHA-256 of the content; media: of the file and its subtitle sidecar "
        "(the transcript is content)",
        "n_bytes": "size of the file or record, bytes",
        "duration_s": 'time-based media (video, audio; a "page" is a time window of it): length in seconds; '
        "null for other kinds",
        "time_segments": "transcript segments: where each sits in the text (char_start, char_end) and in time "
        "(t_start, t_end, seconds)",
        "outline": "the outline the file states: a PDF's bookmarks, a Markdown file's headings; each heading's level "
        "(1 is the top), title and 1-based page; empty where the file has none, null for other kinds",
        "transcript_source": "media: where the transcript came from, the subtitle sidecar's path or asr:<model>; "
        "null when the file has no transcript and for other kinds",
        "language": "media: the transcript's language, as speech recognition detected it (ISO 639-1) or as a "
        "sidecar's name tags it (talk.en.srt); null when unknown and for other kinds",
    },
    "images": {
        "image_id": "content address of the stored bytes",
        "occurrence": "n-th image of the document",
        "page": "1-based page for PDFs, null otherwise",
        "char_offset": "where in the document text the image sits; null when unknown",
        "role": "embedded | linked | standalone | page_render | drawing_render | video_frame",
        "source": "file path (and object index for PDFs) the image came from",
        "alt_text": "alternative text or caption the document gives the image",
        "blob_path": "where the bytes are stored, relative to the data root",
        "format": "image format (PNG, JPEG, ...)",
        "mode": "pixel mode (RGB, L, ...)",
        "width": "pixels",
        "height": "pixels",
        "n_bytes": "size of the stored bytes",
        "phash": '64-bit perceptual hash, 16 hex digits ("" for a flat image): finds the same picture re-encoded',
        "t_s": "video frames: the time in the video, seconds; null otherwise",
    },
    "rejected_files": {
        "stage": "ingest (not read) | budget (cut to the limits) | repaired | transcript | frames | tables | outline "
        "(a PDF's tables or bookmarks not read; its text kept)",
        "reason": "why the file or record was rejected, cut or repaired",
    },
    "chunks": {
        "chunk_id": "content id of document, offset and text",
        "chunk_index": "position in the document, in page order (OCR pages interleaved)",
        "page": "1-based PDF page (as in MMLongBench evidence pages); null for unpaged documents",
        "char_start": "document offsets; OCR text lies past the text layer (see page_text)",
        "n_tokens": "tokens of the chunk, as the chunker counts them",
        "text": "the chunk's text",
        "image_ids": "images attached to the chunk: those whose place in the document lies in or nearest its span",
        "text_source": "document (the text layer / file text) | ocr (page_text of an image-only page)",
        "t_start": "media transcripts: the start of the time span the chunk's segments cover, seconds; null otherwise",
        "t_end": "media transcripts: the end of that time span, seconds; null otherwise",
    },
    "sentences": {
        "sentence_id": "id of the sentence",
        "sent_index": "position inside the chunk",
        "text": "the sentence's text",
    },
    "entity_mentions": {
        "mention_id": "id of the mention",
        "text": "the mention's surface form",
        "char_start": "document offsets; null for title mentions",
        "source": "ner | title",
        "relational": "its label can be a graph node (not ORDINAL, CARDINAL, PERCENT or QUANTITY)",
    },
    "entities": {
        "label": "most frequent label",
    },
    "document_entities": {
        "unit_id": "content id of (document, entity key)",
        "name": "the document's most frequent surface form",
        "label": "the document's most frequent label",
        "n_mentions": "mentions of the entity in the document",
        "chunk_ids": "the chunks of the document that mention it, in document order",
        "sentence_ids": "the sentences that mention it (title mentions have none)",
        "context": "the first of those sentences, joined (at most CONTEXT_CHARS): what it is said to be",
    },
    "entity_catalog": {
        "label": "most frequent label",
        "partitions": "the partitions that mention the entity",
    },
    "relations": {
        "relation_id": "id of the triple",
        "subject": "the subject's surface form",
        "subject_key": "the subject's entity key",
        "predicate": "the predicate, built from the verb or preposition that links them",
        "object": "the object's surface form",
        "object_key": "the object's entity key; null when the object is not a named entity (appositive noun)",
        "rule": "the dependency rule that found it: svo, verb_prep, passive, appos, noun_prep, attr_prep, "
        "appos_prep, appos_loc",
        "negated": "the sentence negates it",
    },
    "page_text": {
        "page": "1-based PDF page, like documents.page_starts and chunks.page",
        "image_id": "the page render the text was read from",
        "source": "ocr",
        "char_start": 'offset in documents.text + "\\n\\n" + OCR pages (mmkg.vision.page_text)',
        "text": "OCR lines in reading order: rows by newline, paragraphs by a blank line; then the rows of the "
        "page's tables, one paragraph each, with their labels and column headers",
        "n_lines": "OCR lines read on the page",
        "mean_score": "mean OCR confidence of those lines, 0..1",
        "n_table_rows": "table rows found on the page and added after its text (0: no table)",
    },
    "sections": {
        "section_id": "content id of the document, the heading's ordinal and its title",
        "ordinal": "the heading's position among its document's headings (0 first), in reading order",
        "level": "1 is the top; a subheading's level is above its parent's",
        "title": "the heading as the outline or the page states it",
        "path": 'the titles from the top heading down to this one, joined by " > "',
        "parent_id": "the enclosing heading (sections.section_id in the same document); null at the top",
        "page": "1-based page where the heading opens (null for unpaged text)",
        "source": "outline (documents.outline: a PDF's bookmarks, a Markdown file's headings) | text (headings "
        "read off the lines)",
        "chunk_ids": "the chunks that begin under this heading (chunks.chunk_id), in document order",
    },
    "parts": {
        "part_id": "content id of the document, the kind and the label",
        "kind": "figure | table | appendix | exhibit | section | chapter | annex | schedule | note | chart",
        "label": 'the label as first written ("3", "P-10", "C", "2b")',
        "caption": "the first line the label opens (its caption or heading); empty when no line does",
        "page": "1-based page of that line, else of the first mention (null for unpaged text)",
        "chunk_id": "the chunk of that line, else of the first mention (chunks.chunk_id)",
        "pages": "every page that names the part, ascending",
        "n_mentions": "how many times the document's chunks name it, its caption included",
    },
    "image_text": {
        "line_index": "position of the line in the image, in reading order",
        "text": "the OCR line's text",
        "score": "OCR confidence, 0..1",
        "quad": "4 corners, flat x,y pairs, clockwise from top-left",
    },
    "objects": {
        "object_id": "content id of image, backend, entity and box",
        "chunk_id": "the chunk whose entity prompted the object; null for unattached images",
        "entity_key": "the entity the object grounds",
        "entity_name": "that entity's name",
        "label": "matched OCR text or detector class",
        "polygons": "mask outlines in pixels, flat x,y pairs",
        "score": "grounding score σ: how surely the region shows the entity, 0..1 (kept above the threshold τ)",
        "crop_id": "content address of the cropped picture",
        "crop_path": "the crop, relative to the data root",
    },
    "grounding_failures": {
        "source": "the image's source (images.source)",
        "reason": "why the backend could not process the image",
    },
    "multimodal_nodes": {
        "n_sentences": "sentences that mention the entity",
        "n_objects": "objects grounded for the entity",
        "n_images": "images those objects are in",
        "backends": "the backends that grounded them",
        "multimodal": "it has at least one grounded object",
    },
    "cross_modal_links": {
        "link_id": "content id of image, document, kind and image entity",
        "chunk_id": "the chunk that shows the picture",
        "image_entity": "the image-side entity's text",
        "kind": "ocr | label | caption | global",
        "entity_key": "the linked text entity; null when unaligned or new",
        "entity_name": "the linked text entity's name",
        "score": "cosine of the image entity to the linked (or nearest) text entity",
        "cluster": "the spectral cluster it was aligned within (-1: none)",
        "cluster_size": "entities in that cluster",
        "method": "spectral | global | new | unaligned",
        "description": "enriched description (unaligned and new entities)",
        "x0": "the region that shows it (OCR line, object box), left; null for caption and global",
        "y0": "that region's top; null for caption and global",
        "x1": "that region's right; null for caption and global",
        "y1": "that region's bottom; null for caption and global",
    },
    "answers": {
        "question_id": "id of the question in the questions file",
        "question": "the question asked",
        "answer": "the answer, with [n] citation marks",
        "short_answer": 'the answer alone ("STS-93", "Not answerable"), without citation marks',
        "answer_type": "what the question asks for: person, place, date, number, yes_no, choice, ...",
        "confidence": "the reader's confidence in the short answer, 0..1",
        "citations": "the evidence cited: label [n], chunk, document, path, page, images",
        "backend": "generation backend",
        "model": "generation model",
        "task": "the prompt task (template) the answer was written with",
        "strategy": "retrieval strategy",
        "extractive": "copied from the evidence, not written by a model",
        "prompt_tokens": "tokens in the prompt",
        "completion_tokens": "tokens generated",
        "retrieve_ms": "retrieval time, milliseconds",
        "generate_ms": "generation time, milliseconds",
        "invalid_citations": "markers that named no evidence shown (dropped)",
        "index_version": "the index version that answered",
        "error": 'why this question has no answer ("" when it has one)',
    },
}


def _describe(table: str) -> dict[str, str]:
    own = _TABLE_DESCRIPTIONS.get(table, {})
    return {c: own[c] if c in own else _COMMON[c] for c in TABLES[table] if c in own or c in _COMMON}


#: every declared table's column descriptions, in column order: shown in the Dagster UI's Columns tab
DESCRIPTIONS: dict[str, dict[str, str]] = {table: _describe(table) for table in TABLES}

#: the columns of the vector tables (``assets/embeddings.py``) that their unit tables do not describe
VECTOR_DESCRIPTIONS: dict[str, str] = {"vector": "ℓ2-normalized embedding of the unit (float32), in the index's space"}

#: tables written once for the whole index (all others are written per corpus partition)
GLOBAL_TABLES = ("entity_catalog", "answers")


#: columns added after a table was first declared: tables written before them get nulls on read instead of an error
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "documents": ("duration_s", "time_segments", "outline", "transcript_source", "language"),
    "images": ("t_s",),
    "chunks": ("t_start", "t_end"),
    "page_text": ("n_table_rows",),
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
