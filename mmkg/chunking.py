"""Sentence-aligned, token-bounded chunking.

Chunks never cross a page, never split a sentence (unless one sentence alone is over the token
bound), and keep document character offsets, so a chunk can always be cut back out of its
document and an image can be attached to the chunk whose span holds the image's position.
Pages are numbered from 1, like PDF page labels and ``documents.page_starts``; OCR text of
image-only pages (``page_text``) is chunked the same way, with ``text_source = "ocr"``.
Sentence boundaries for packing come from spaCy's rule-based sentencizer on paragraph blocks:
cheap, deterministic, and the same tokenizer the parser uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from mmkg import schemas
from mmkg.ids import content_id
from mmkg.spacy_import import Language, spacy
from mmkg.vision.page_text import SOURCE_OCR, extended_text

_BLOCK_BREAK = re.compile(r"\n[ \t]*\n\s*")


# What a "token" is for the chunk budget: a word (with inner hyphens, apostrophes or dots) or one
# punctuation mark. It tracks spaCy's tokenizer closely and costs a regex scan instead of a parse.
_TOKEN = re.compile(r"\w+(?:[-'’.]\w+)*|[^\w\s]")


def count_tokens(text: str) -> int:
    return sum(1 for _ in _TOKEN.finditer(text))


@lru_cache(maxsize=1)
def sentencizer() -> Language:
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    # Rule-based sentence splitting needs no parser memory; a paragraph block is as long as the document's
    # character budget allows (mmkg.ingest.budget), past spaCy's 1,000,000-character default for parsers.
    nlp.max_length = 100_000_000
    return nlp


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    n_tokens: int


def blocks(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Paragraph blocks of ``text[start:end]`` as (start, end) with surrounding space trimmed."""
    pos = start
    for m in _BLOCK_BREAK.finditer(text, start, end):
        yield from _trim(text, pos, m.start())
        pos = m.end()
    yield from _trim(text, pos, end)


def _trim(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    seg = text[start:end]
    stripped = seg.strip()
    if stripped:
        lead = len(seg) - len(seg.lstrip())
        yield start + lead, start + lead + len(stripped)


def page_ranges(text: str, page_starts: list[int]) -> list[tuple[int, int, int]]:
    """(page_number, start, end) for each page; pages are joined by a blank line in ``text``."""
    starts = list(page_starts) or [0]
    out = []
    for i, s in enumerate(starts):
        e = starts[i + 1] - 2 if i + 1 < len(starts) else len(text)
        out.append((i + 1, s, max(s, e)))
    return out


def _sentence_spans(text: str, block_spans: list[tuple[int, int]], max_tokens: int) -> list[Span]:
    spans: list[Span] = []
    texts = (text[s:e] for s, e in block_spans)
    for (bstart, _), doc in zip(block_spans, sentencizer().pipe(texts, batch_size=256), strict=True):
        for sent in doc.sents:
            start = bstart + sent.start_char
            toks = list(_TOKEN.finditer(text, start, bstart + sent.end_char))
            # A single over-long "sentence" (tables, lists without punctuation) is cut by tokens.
            for i in range(0, len(toks), max_tokens):
                piece = toks[i : i + max_tokens]
                spans.append(Span(piece[0].start(), piece[-1].end(), len(piece)))
    return spans


def page_chunks(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int, int]]:
    """(start, end, n_tokens) chunks of one page; a page within budget is one chunk, unsplit."""
    bl = list(blocks(text, start, end))
    if not bl:
        return []
    n = count_tokens(text[bl[0][0] : bl[-1][1]])
    if n <= max_tokens:
        return [(bl[0][0], bl[-1][1], n)]
    return pack(_sentence_spans(text, bl, max_tokens), max_tokens)


def pack(spans: list[Span], max_tokens: int) -> list[tuple[int, int, int]]:
    """Greedy packing of consecutive sentences into (start, end, n_tokens) chunks."""
    chunks: list[tuple[int, int, int]] = []
    cur: list[Span] = []
    n = 0
    for sp in spans:
        if cur and n + sp.n_tokens > max_tokens:
            chunks.append((cur[0].start, cur[-1].end, n))
            cur, n = [], 0
        cur.append(sp)
        n += sp.n_tokens
    if cur:
        chunks.append((cur[0].start, cur[-1].end, n))
    return chunks


#: kinds whose pages are numbered in chunks (PDF pages; time windows of video and audio, mmkg.ingest.media)
PAGED_KINDS = frozenset({"pdf", "video", "audio"})


def time_span(segments: list[dict], start: int, end: int) -> tuple[float | None, float | None]:
    """The time a chunk's characters ``[start, end)`` cover: from its first transcript segment to its last."""
    inside = [s for s in segments if s["char_start"] < end and s["char_end"] > start]
    if not inside:
        return None, None
    return min(s["t_start"] for s in inside), max(s["t_end"] for s in inside)


def chunk_documents(
    documents: pl.DataFrame,
    images: pl.DataFrame,
    max_tokens: int = 200,
    page_text: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Chunks of every document, each with the ids of the images that sit inside it.

    ``page_text`` (OCR of image-only PDF pages, ``mmkg.vision.page_text``) adds chunks for those
    pages with ``text_source = "ocr"``; their offsets address the OCR text appended after the
    document text. Chunks are numbered in page order, so an OCR page sits between its neighbours.
    """
    ocr: dict[str, list[dict]] = {}
    if page_text is not None:
        for row in page_text.sort("doc_id", "char_start").iter_rows(named=True):
            ocr.setdefault(row["doc_id"], []).append(row)
    rows: list[dict] = []
    has_time = "time_segments" in documents.columns
    cols = ["doc_id", "partition", "kind", "text", "page_starts", *(["time_segments"] if has_time else [])]
    for doc in documents.select(cols).iter_rows(named=True):
        text = doc["text"]
        segments = (doc.get("time_segments") or []) if has_time else []
        pieces: list[tuple[int | None, int, int, int, str]] = []  # page, start, end, n_tokens, source
        for page, pstart, pend in page_ranges(text, doc["page_starts"]):
            for start, end, n_tokens in page_chunks(text, pstart, pend, max_tokens):
                pieces.append((page if doc["kind"] in PAGED_KINDS else None, start, end, n_tokens, "document"))
        pages = ocr.pop(doc["doc_id"], [])
        if pages:
            text = extended_text(text, [(p["char_start"], p["text"]) for p in pages])
            for p in pages:
                pstart = p["char_start"]
                for start, end, n_tokens in page_chunks(text, pstart, pstart + len(p["text"]), max_tokens):
                    pieces.append((p["page"], start, end, n_tokens, SOURCE_OCR))
            pieces.sort(key=lambda x: (x[0] if x[0] is not None else 0, x[1]))
        for index, (page, start, end, n_tokens, source) in enumerate(pieces):
            chunk_text = text[start:end]
            t_start, t_end = time_span(segments, start, end)
            rows.append(
                {
                    "chunk_id": content_id(doc["doc_id"], start, chunk_text),
                    "partition": doc["partition"],
                    "doc_id": doc["doc_id"],
                    "chunk_index": index,
                    "page": page,
                    "char_start": start,
                    "char_end": end,
                    "n_tokens": n_tokens,
                    "text": chunk_text,
                    "image_ids": [],
                    "text_source": source,
                    "t_start": t_start,
                    "t_end": t_end,
                }
            )
    if ocr:
        raise ValueError(f"page_text rows for unknown document(s) {sorted(ocr)[:5]}; re-materialize page_text")
    return attach_images(schemas.frame(rows, schemas.CHUNKS), images)


#: a video frame attaches to the transcript chunk spoken within this many seconds of it (else to none)
FRAME_TIME_TOLERANCE_S = 5.0


def _chunk_at_time(chunks: list[dict], t: float) -> dict | None:
    """The chunk whose time span holds ``t``, else the nearest one within ``FRAME_TIME_TOLERANCE_S``."""
    if not chunks:
        return None

    def gap(c: dict) -> float:
        return 0.0 if c["t_start"] <= t <= c["t_end"] else min(abs(t - c["t_start"]), abs(t - c["t_end"]))

    best = min(chunks, key=lambda c: (gap(c), c["t_start"]))
    return best if gap(best) <= FRAME_TIME_TOLERANCE_S else None


def attach_images(chunks: pl.DataFrame, images: pl.DataFrame) -> pl.DataFrame:
    """Give each image to the chunk whose span holds its offset (same page), else the nearest one.

    A video frame goes to the transcript chunk of its shot (page) spoken at its time, else the nearest
    one within ``FRAME_TIME_TOLERANCE_S``: the contextual link between what is seen and what is said.
    Images without a chunk on their page (standalone images, image-only PDF pages, frames of silent
    shots) stay unattached.
    """
    if images.is_empty() or chunks.is_empty():
        return chunks
    by_doc: dict[str, list[dict]] = {}
    cols = ["chunk_id", "doc_id", "page", "char_start", "char_end"]
    timed = "t_start" in chunks.columns and "t_s" in images.columns
    for c in chunks.select(cols + (["t_start", "t_end"] if timed else [])).iter_rows(named=True):
        by_doc.setdefault(c["doc_id"], []).append(c)
    attached: dict[str, list[str]] = {}
    for img in images.sort("doc_id", "occurrence").iter_rows(named=True):
        if timed and img["t_s"] is not None:
            shot = [
                c for c in by_doc.get(img["doc_id"], [])
                if c["t_start"] is not None and (img["page"] is None or c["page"] == img["page"])
            ]  # fmt: skip
            best_t = _chunk_at_time(shot, img["t_s"])
            if best_t is not None:
                ids = attached.setdefault(best_t["chunk_id"], [])
                if img["image_id"] not in ids:
                    ids.append(img["image_id"])
            continue
        candidates = [c for c in by_doc.get(img["doc_id"], []) if img["page"] is None or c["page"] == img["page"]]
        if not candidates:
            continue
        off = img["char_offset"] if img["char_offset"] is not None else candidates[0]["char_start"]

        def distance(c: dict, off: int = off) -> int:
            return (
                0
                if c["char_start"] <= off <= c["char_end"]
                else min(abs(off - c["char_start"]), abs(off - c["char_end"]))
            )

        best = min(candidates, key=distance)
        ids = attached.setdefault(best["chunk_id"], [])
        if img["image_id"] not in ids:
            ids.append(img["image_id"])
    if not attached:
        return chunks
    link = pl.DataFrame(
        {"chunk_id": list(attached), "_images": list(attached.values())},
        schema={"chunk_id": pl.String, "_images": pl.List(pl.String)},
    )
    return (
        chunks.join(link, on="chunk_id", how="left")
        .with_columns(pl.coalesce("_images", "image_ids").alias("image_ids"))
        .drop("_images")
    )
