"""A document's numbered and bulleted lists (``mmkg.enumerations``), read from the open index's chunks.

A question that counts what a list sets out ("How many steps are required to replace the grille?") needs the
lists of the document its evidence comes from, in reading order across chunk and page boundaries. They are
derived from the open version's own chunks, once per document and open index (``mmkg.index.derived``), and
``evidence_lists`` keeps those on the evidence's pages, best first (all of a document without pages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from mmkg.enumerations import Enumeration, document_lines, enumerations
from mmkg.index.derived import derived

if TYPE_CHECKING:
    from mmkg.index.reader import Index
    from mmkg.retrieval.results import RetrievalResult


def document_lists(index: Index, doc_id: str) -> list[Enumeration]:
    """The lists of one document of ``index`` in reading order (empty when it sets out none or is not there)."""

    def make() -> list[Enumeration]:
        chunks = index.chunks.filter(pl.col("doc_id") == doc_id)
        order = next((c for c in ("chunk_index", "char_start") if c in chunks.columns), None)
        rows = (chunks.sort(order) if order else chunks).select("page", "text").iter_rows()
        return enumerations(document_lines(rows))

    return derived(index, f"document_lists.{doc_id}", make)  # once per document, under the index's lock


def evidence_lists(index: Index, result: RetrievalResult) -> list[Enumeration]:
    """The lists of the top document that run over a page its retrieved chunks come from, ordered by the best
    rank of those pages. A document without pages (Markdown, plain text) keeps all its lists, those whose
    heading or first item a retrieved chunk shows first, in the order of those chunks' ranks."""
    if not result.chunks:
        return []
    doc_id = result.chunks[0].doc_id
    rank: dict[int, int] = {}
    for c in result.chunks:
        if c.doc_id == doc_id and c.page is not None:
            rank.setdefault(c.page, len(rank))
    lists = document_lists(index, doc_id)
    if not rank:
        texts = [c.text for c in result.chunks if c.doc_id == doc_id]

        def shown(e: Enumeration) -> int:
            lines = [line for line in (e.heading, e.items[0] if e.items else "") if line]
            return next((i for i, t in enumerate(texts) if any(line in t for line in lines)), len(texts))

        return sorted(lists, key=shown)
    found = [e for e in lists if any(p in rank for p in e.pages)]
    return sorted(found, key=lambda e: min(rank.get(p, len(rank)) for p in e.pages))
