"""A document's labelled parts ("Figure 3", "Appendix C"), read from the open index's chunks.

The build writes the ``parts`` table (``mmkg.parts.part_table``) for SQL and the UI; a question that counts a
document's parts ("How many appendices does the report have?") needs the same rows for one document of the open
index version, whatever build wrote it. They are derived from the version's own chunks, once per document and
open index (``mmkg.index.derived``), with the one label pattern of ``mmkg.parts``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from mmkg.index.derived import derived
from mmkg.parts import part_table

if TYPE_CHECKING:
    from mmkg.index.reader import Index


def document_parts(index: Index, doc_id: str) -> pl.DataFrame:
    """The ``PARTS`` rows of one document of ``index`` (empty when it labels no part or is not in the index)."""

    def make() -> pl.DataFrame:
        chunks = index.chunks.filter(pl.col("doc_id") == doc_id)
        return part_table(chunks, index.documents.filter(pl.col("doc_id") == doc_id))

    return derived(index, f"document_parts.{doc_id}", make)  # once per document, under the index's lock
