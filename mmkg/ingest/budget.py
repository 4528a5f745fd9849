"""Budgets that keep a document's cost proportional to its useful content.

A reader produces a ``SourceDocument``; before it is stored, ``apply_text_budgets`` cuts what is
over budget and says so. Three cuts, cheapest first, each with a reason the caller records as a
``rejected_files`` row of stage ``budget`` (the document itself is kept):

- **characters** (``max_document_chars``): text after the cap is dropped, at a word boundary;
- **run-on text** (``max_sentence_chars``): a stretch with no sentence end and no line break
  longer than the cap (a megabyte of words without punctuation) keeps its first part. Every
  later stage pays for such a stretch (the parser, entity linking, sentence vectors) while it
  holds no sentence a reader would quote. Tables and lists survive: their lines end in breaks;
- **sentences** (``max_sentences_per_document``): text after the N-th sentence end is dropped,
  so "a. a. a. ..." cannot ask for hundreds of thousands of sentence vectors.

A cut removes character spans, so every offset that points into the text moves with it: page
starts, picture positions and transcript segments are remapped by ``remove_spans``. The rules are
regexes over the text, not a parse: they run before anything expensive and cost one scan.
"""

from __future__ import annotations

import bisect
import itertools
import re

from mmkg.ingest.base import Limits, SourceDocument

# A sentence end (terminal punctuation, then closing quotes or brackets, then space or the end) or a line break.
_BREAK = re.compile(r"[.!?。！？]+[\"'”’)\]]*(?=\s|\Z)|\n")
_SENTENCE_END = re.compile(r"[.!?。！？]+[\"'”’)\]]*(?=\s|\Z)|\n[ \t]*\n")


def _word_cut(text: str, start: int, limit: int) -> int:
    """An offset near ``start + limit`` (not after it) that does not split a word, when there is one."""
    end = start + limit
    back = text.rfind(" ", start + limit // 2, end + 1)
    return back if back > start else end


def remove_spans(doc: SourceDocument, spans: list[tuple[int, int]]) -> None:
    """Drop ``spans`` (sorted, disjoint ``[start, end)``) from ``doc.text`` and move every offset with them."""
    if not spans:
        return
    starts = [s for s, _ in spans]
    removed_before = [0]
    for s, e in spans:
        removed_before.append(removed_before[-1] + (e - s))

    def moved(offset: int) -> int:
        i = bisect.bisect_right(starts, offset) - 1
        if i < 0:
            return offset
        s, e = spans[i]
        if offset < e:  # inside a removed span: to where it was
            return s - removed_before[i]
        return offset - removed_before[i + 1]

    text = doc.text
    pieces, pos = [], 0
    for s, e in spans:
        pieces.append(text[pos:s])
        pos = e
    pieces.append(text[pos:])
    doc.text = "".join(pieces)
    doc.page_starts = [moved(p) for p in doc.page_starts]
    for ref in doc.images:
        if ref.char_offset is not None:
            ref.char_offset = moved(ref.char_offset)
    if doc.time_segments:
        for seg in doc.time_segments:
            seg["char_start"], seg["char_end"] = moved(seg["char_start"]), moved(seg["char_end"])
        doc.time_segments = [seg for seg in doc.time_segments if seg["char_end"] > seg["char_start"]]


def _cut_tail(doc: SourceDocument, cut: int) -> int:
    """Drop the text from ``cut`` on, the pages that start there and the pictures placed there; pictures dropped."""
    remove_spans(doc, [(cut, len(doc.text))])
    doc.page_starts = [p for i, p in enumerate(doc.page_starts) if i == 0 or p < cut]
    last_page = len(doc.page_starts)
    if doc.outline:  # headings of pages no longer kept
        doc.outline = [h for h in doc.outline if h["page"] <= last_page]
    kept = [
        ref
        for ref in doc.images
        if (ref.char_offset is None or ref.char_offset < cut) and (ref.page is None or ref.page <= last_page)
    ]
    dropped = len(doc.images) - len(kept)
    doc.images = kept
    return dropped


def _pictures(n: int) -> str:
    return f" and {n:,} picture(s) placed after it" if n else ""


def _run_on_spans(text: str, max_chars: int) -> tuple[list[tuple[int, int]], int]:
    """Spans to drop from stretches without a break longer than ``max_chars``, and the longest stretch."""
    spans: list[tuple[int, int]] = []
    longest = 0
    prev = 0
    for m in itertools.chain(_BREAK.finditer(text), [None]):
        end = m.start() if m is not None else len(text)
        length = end - prev
        longest = max(longest, length)
        if length > max_chars:
            spans.append((_word_cut(text, prev, max_chars), end))
        prev = m.end() if m is not None else end
    return spans, longest


def apply_text_budgets(doc: SourceDocument, limits: Limits) -> list[str]:
    """Cut ``doc`` down to its budgets in place; one reason per cut (empty when nothing was cut)."""
    reasons: list[str] = []
    n = len(doc.text)
    if n > limits.max_document_chars:
        cut = _word_cut(doc.text, 0, limits.max_document_chars)
        pictures = _cut_tail(doc, cut)
        reasons.append(
            f"document has {n:,} characters; kept the first {cut:,}, dropped the rest{_pictures(pictures)} "
            f"(budget {limits.max_document_chars:,}, MMKG_MAX_DOCUMENT_CHARS)"
        )
    spans, longest = _run_on_spans(doc.text, limits.max_sentence_chars)
    if spans:
        dropped = sum(e - s for s, e in spans)
        remove_spans(doc, spans)
        reasons.append(
            f"{len(spans):,} run-on stretch(es) without a sentence end or line break, the longest "
            f"{longest:,} characters; kept the first {limits.max_sentence_chars:,} characters of each and dropped "
            f"{dropped:,} (budget MMKG_MAX_SENTENCE_CHARS)"
        )
    for ends, m in enumerate(_SENTENCE_END.finditer(doc.text), start=1):
        if ends == limits.max_sentences_per_document:
            cut = m.end()
            if doc.text[cut:].strip():
                total = ends + sum(1 for _ in _SENTENCE_END.finditer(doc.text, cut))
                pictures = _cut_tail(doc, cut)
                reasons.append(
                    f"document has about {total:,} sentences; kept the first {ends:,}, dropped the rest"
                    f"{_pictures(pictures)} (budget MMKG_MAX_SENTENCES_PER_DOCUMENT)"
                )
            break
    return reasons
