"""Explicit references in a question: "on page 5", "the cover page", "Figure 1", "Appendix C".

Questions about a long document often say where to look. A dense or BM25 match cannot follow such a
pointer: "page 5" is not a word of page 5, and tokenizers drop the "1" of "Figure 1". This module reads
the pointer and finds the chunks it points at, for a seed channel of graph retrieval
(``reference_weight`` of ``mmkg.retrieval.mg2``):

- **Pages**: "page 5", "p. 5", "pages 3 and 4", "slide 2", "page two", "the second page", "the cover
  page", "the last page", "the second last page". Page numbers are resolved twice, because a reader means
  the number printed on the page as often as the PDF's page index: a report whose cover and contents
  come first prints "1" on its fourth sheet. Both readings are kept.
- **Printed page numbers** are read off each page's first and last line (``printed_labels``), and kept
  only when they follow the page order (label = a·page + b, a = 1, or a = 2 for two-page spreads, with
  the same b on at least three pages), so a number that merely ends a table row is not a page label.
- **Named parts**: "Figure 1", "Fig. 2", "Table 3", "Appendix C", "Exhibit P-10", "Section 2.1",
  "Chapter 4", "Annex B", "Note 7": chunks that state the same label. A chunk where the label opens a
  line (a caption or heading: where the part is defined) weighs twice one that mentions it.

Page references are resolved only when the query is scoped to a few documents (``SCOPED_DOCS`` of
``mg2``): across a corpus "page 5" names no page. Named parts are looked up within the scope, or the
whole corpus.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from mmkg import numerals
from mmkg.index.derived import derived
from mmkg.parts import mentions

if TYPE_CHECKING:
    from mmkg.index.reader import Index
    from mmkg.retrieval.results import RetrievalResult

_NTH = "zeroth first second third fourth fifth sixth seventh eighth ninth tenth"
_ORDINALS = {w: i for i, w in enumerate(_NTH.split()) if i}
_NUM = rf"(\d{{1,4}}|{numerals.SPELLED})"
# "page 5", "p. 5", "pp. 3-4", "pages 3 and 4", "slide 2", "page two"
_PAGE_NUM = re.compile(rf"\b(?:pages?|pp?\.|slides?)\s*{_NUM}((?:\s*(?:,|and|&|-|–|to)\s*{_NUM})*)\b", re.IGNORECASE)
_MORE_NUMS = re.compile(_NUM, re.IGNORECASE)
# "the second page", "the cover page", "the last page", "the second last page", "the page at the second last"
_FROM_END = r"(?:second|2nd)[\s-]+(?:to[\s-]+)?last|penultimate|last|final"
_ORDINAL_PAGE = re.compile(
    rf"\b(cover|front|title|{_FROM_END}|" + "|".join(_ORDINALS) + r"|1st|2nd|3rd|\d{1,3}th)\s+(?:page|slide)\b",
    re.IGNORECASE,
)
_PAGE_AT = re.compile(rf"\b(?:page|slide)\s+(?:at|on)\s+the\s+({_FROM_END}|first)\b", re.IGNORECASE)
# "Figure 1", "Fig. 2b", "Table 3", "Appendix C", "Exhibit P-10", "Section 2.1": mmkg.parts.PART, the parts table's
MAX_REFS = 8  # pages, and named parts, kept per question
_EDGE_INT = re.compile(r"^\W*(\d{1,4})\b|\b(\d{1,4})\W*$")


@dataclass(frozen=True)
class PageRef:
    """A page the question points at: ``number`` counted from the start (``from_end`` False) or the end.

    ``printed`` is True when the number may be the one printed on the page ("page 5"), False when it
    can only be the position ("the second page", "the last page").
    """

    number: int
    from_end: bool = False
    printed: bool = True


@dataclass(frozen=True)
class References:
    pages: tuple[PageRef, ...] = ()
    parts: tuple[tuple[str, str], ...] = ()  # ("figure", "1"), ("appendix", "C")

    def __bool__(self) -> bool:
        return bool(self.pages or self.parts)


def _number(token: str) -> int | None:
    token = token.lower()
    if token.isdigit():
        return int(token)
    return numerals.spelled_number(token)


def _ordinal(token: str) -> PageRef | None:
    t = re.sub(r"[\s-]+", " ", token.lower())
    if t in ("cover", "front", "title"):
        return PageRef(1, printed=False)
    if t in ("last", "final"):
        return PageRef(1, from_end=True, printed=False)
    if t in ("penultimate",) or t.startswith(("second ", "2nd ")):
        return PageRef(2, from_end=True, printed=False)
    if t in _ORDINALS:
        return PageRef(_ORDINALS[t], printed=False)
    if m := re.fullmatch(r"(\d{1,3})(?:st|nd|rd|th)", t):
        return PageRef(int(m.group(1)), printed=False)
    return None


def parse(text: str) -> References:
    """The pages and named parts a question points at, in the order it names them."""
    pages: list[PageRef] = []
    for m in _PAGE_NUM.finditer(text):
        first = _number(m.group(1))
        nums = [first] + [_number(x) for x in _MORE_NUMS.findall(m.group(2) or "")]
        if re.search(r"\d\s*(?:-|–|to)\s*\d", m.group(0)) and len(nums) == 2 and None not in nums:
            lo, hi = nums
            nums = list(range(lo, hi + 1)) if 0 < hi - lo <= 20 else nums  # "pages 3-5"
        pages += [PageRef(n) for n in nums if n is not None and n >= 1]
    for m in _ORDINAL_PAGE.finditer(text):
        if ref := _ordinal(m.group(1)):
            pages.append(ref)
    for m in _PAGE_AT.finditer(text):
        if ref := _ordinal(m.group(1)):
            pages.append(ref)
    # "table 3" in "a table 3 times larger" is rare; a lone small letter ("note a") is not a label (mentions skips it)
    parts = [(kind, label.upper()) for kind, label, _, _ in mentions(text)]
    # a question points at a few places; one that names dozens points at none (and must not cost a scan each)
    return References(tuple(dict.fromkeys(pages))[:MAX_REFS], tuple(dict.fromkeys(parts))[:MAX_REFS])


def _edge_numbers(page_text: str) -> set[int]:
    """Integers that open or close the page's first or last non-empty line."""
    lines = [ln for ln in page_text.splitlines() if ln.strip()]
    out: set[int] = set()
    for line in {lines[0], lines[-1]} if lines else ():
        for m in _EDGE_INT.finditer(line.strip()):
            out.add(int(m.group(1) or m.group(2)))
    return out


def printed_labels(pages: dict[int, str], min_support: int = 3) -> dict[int, set[int]]:
    """``{printed page number: {page indices}}`` for the page numbers a document prints on its pages.

    ``pages`` maps each 1-based page index to its text. A number at the start or end of a page's first or
    last line is a candidate; candidates are kept when they follow the page order: label = a·page + b with
    a = 1 (one printed page per sheet) or a = 2 (two-page spreads, which also print label - 1), and the same
    b found on at least ``min_support`` pages. Documents that print no page numbers give ``{}``.
    """
    candidates = {p: _edge_numbers(t) for p, t in pages.items()}
    best: tuple[int, int, int] | None = None  # (support, a, b)
    for a in (1, 2):
        offsets = Counter(label - a * p for p, labels in candidates.items() for label in labels)
        if offsets:
            b, support = offsets.most_common(1)[0]
            if support >= min_support and (best is None or support > best[0]):
                best = (support, a, b)
    if best is None:
        return {}
    _, a, b = best
    out: dict[int, set[int]] = {}
    for p, labels in candidates.items():
        if a * p + b in labels:
            for label in [a * p + b - 1, a * p + b] if a == 2 else [a * p + b]:
                out.setdefault(label, set()).add(p)
    return out


def _doc_pages(index: Index, doc_id: str) -> tuple[dict[int, str], dict[int, set[int]]]:
    """A document's page texts (from its chunks, in order) and printed labels, cached per open index."""
    cache: dict[str, tuple[dict[int, str], dict[int, set[int]]]] = derived(index, "references.pages", dict)
    if doc_id not in cache:
        rows = (
            index.chunks.filter((pl.col("doc_id") == doc_id) & pl.col("page").is_not_null())
            .sort("page", "chunk_index")
            .group_by("page", maintain_order=True)
            .agg(pl.col("text").str.join("\n"))
        )
        pages = dict(zip(rows["page"].to_list(), rows["text"].to_list(), strict=True))
        cache[doc_id] = (pages, printed_labels(pages))
    return cache[doc_id]


def resolve_pages(index: Index, refs: Iterable[PageRef], doc_ids: Iterable[str]) -> dict[str, set[int]]:
    """``{doc_id: {page indices}}`` that the page references point at in each document."""
    out: dict[str, set[int]] = {}
    refs = list(refs)
    for doc in doc_ids:
        pages, labels = _doc_pages(index, doc)
        if not pages:
            continue
        last = max(pages)
        found: set[int] = set()
        for ref in refs:
            position = last + 1 - ref.number if ref.from_end else ref.number
            if position in pages:
                found.add(position)
            if ref.printed:
                found |= labels.get(ref.number, set())
        if found:
            out[doc] = found
    return out


def pointed_pages(index: Index, text: str, result: RetrievalResult) -> dict[str, list[int]]:
    """The pages a question points at ("the last page", "page fourteen") in the result's top document, both
    readings of a number kept; {} when it points at none, or the result has no chunk."""
    refs = parse(text)
    if not refs.pages or not result.chunks:
        return {}
    doc = result.chunks[0].doc_id
    return {d: sorted(p) for d, p in resolve_pages(index, refs.pages, [doc]).items()}


def _part_pattern(kind: str, label: str) -> re.Pattern[str]:
    kind_re = r"fig(?:ure|\.)" if kind == "figure" else re.escape(kind)
    return re.compile(rf"(^|\n)?[ \t]*\b{kind_re}\s*{re.escape(label)}(?![\w.]\d)(?!\w)", re.IGNORECASE)


def reference_seeds(
    index: Index, text: str, allowed_docs: set[str] | None, chunk_mask: np.ndarray | None, max_docs: int
) -> tuple[np.ndarray | None, References]:
    """Seed mass on the chunks the question's references point at, in the graph's node order.

    Each reference gets an equal share. A page's share is split evenly over its chunks; a named part's over
    the chunks that state it, a line that opens with it (its caption or heading) weighing 2, a mention 1.
    Page references count only when ``allowed_docs`` holds at most ``max_docs`` documents.
    """
    refs = parse(text)
    if not refs:
        return None, refs
    chunks = index.chunks
    seeds = np.zeros(index.graph.n, dtype=np.float64)
    pos = index.positions["chunks"]
    groups: list[dict[int, float]] = []
    if refs.pages and allowed_docs is not None and len(allowed_docs) <= max_docs:
        for doc, pages in resolve_pages(index, refs.pages, sorted(allowed_docs)).items():
            sel = chunks.filter((pl.col("doc_id") == doc) & pl.col("page").is_in(sorted(pages)))
            for page in pages:
                ids = sel.filter(pl.col("page") == page)["chunk_id"].to_list()
                groups.append({pos[c]: 1.0 for c in ids if c in pos})
    if refs.parts:
        scope = chunks if allowed_docs is None else chunks.filter(pl.col("doc_id").is_in(sorted(allowed_docs)))
        for kind, label in refs.parts:
            pattern = _part_pattern(kind, label)
            # a vectorized prefilter (Rust regex: no look-arounds), then the exact pattern on the few that pass
            kind_re = r"fig(?:ure|\.)" if kind == "figure" else re.escape(kind)
            near = scope.filter(pl.col("text").str.contains(rf"(?i)\b{kind_re}\s*{re.escape(label)}"))
            ids, texts = near["chunk_id"].to_list(), near["text"].to_list()
            group: dict[int, float] = {}
            for cid, chunk_text in zip(ids, texts, strict=True):
                hits = [m.group(1) is not None for m in pattern.finditer(chunk_text)]
                if hits and cid in pos:
                    group[pos[cid]] = 2.0 if any(hits) else 1.0
            groups.append(group)
    for group in groups:
        if chunk_mask is not None:
            group = {node: w for node, w in group.items() if chunk_mask[node]}
        total = sum(group.values())
        for node, w in group.items():
            seeds[node] += w / total
    return (seeds if seeds.sum() > 0 else None), refs
