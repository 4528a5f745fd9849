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
    cache: dict[str, pl.DataFrame] = derived(index, "document_parts.rows", dict)
    if doc_id not in cache:
        chunks = index.chunks.filter(pl.col("doc_id") == doc_id)
        cache[doc_id] = part_table(chunks, index.documents.filter(pl.col("doc_id") == doc_id))
    return cache[doc_id]
