"""A document's named parts (mmkg/parts.py): each figure, table, appendix or exhibit once, with its caption line
and every page that names it, read off a real PDF's text layer."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from mmkg import schemas
from mmkg.chunking import chunk_documents
from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from mmkg.parts import mentions, part_table
from mmkg.retrieval.references import parse
from tests.conftest import write_pdf

PAGES = [
    "Harbour Crane Study\nThe port runs four cranes (see Table 2 and Fig. 1b).\nFigure 1b: The east quay at dawn.",
    "Table 2: Lifts per crane and year\nLifts rose by a tenth after the new schedule, as Figure 1B shows.",
    "The yard crew keeps spare cables (Appendix C lists them) and logs every repair in table 2's format.",
]


def test_a_label_that_opens_a_line_defines_its_part() -> None:
    found = list(mentions("Figure 3: Revenue by segment\nAs Fig. 3 shows, and Exhibit P-10 says."))
    assert [(k, lab, d) for k, lab, _, d in found] == [("figure", "3", True), ("figure", "3", False),
                                                       ("exhibit", "P-10", False)]  # fmt: skip
    # a question's references are read with the same pattern
    assert parse("What does Fig. 3 show?").parts == (("figure", "3"),)
    # a lone small letter is no label ("see note a", "a table b")
    assert list(mentions("see note a and table b")) == []


def test_the_parts_table_lists_each_part_once_with_its_caption_and_pages(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "cranes.pdf", PAGES)
    doc, _ = read_pdf(path.read_bytes(), "cranes.pdf", Limits())
    documents = schemas.frame(
        [{"doc_id": "d1", "partition": "p", "source_path": "cranes.pdf", "record_key": "", "kind": "pdf",
          "title": "Crane study", "text": doc.text, "page_starts": doc.page_starts, "n_pages": 3,
          "content_sha256": "x", "n_bytes": 1}],
        schemas.DOCUMENTS,
    )  # fmt: skip
    chunks = chunk_documents(documents, schemas.empty(schemas.IMAGES), max_tokens=200)
    parts = part_table(chunks, documents)
    assert parts.schema == schemas.PARTS
    rows = {(r["kind"], r["label"]): r for r in parts.iter_rows(named=True)}
    # "Table 2" is named on page 1 and defined (captioned) on page 2; "table 2's" on page 3 names it too
    table = rows[("table", "2")]
    assert table["caption"] == "Table 2: Lifts per crane and year" and table["page"] == 2
    assert table["pages"] == [1, 2, 3] and table["n_mentions"] == 3
    page_two = chunks.filter(pl.col("page") == 2)["chunk_id"].to_list()
    assert table["chunk_id"] in page_two
    # "Fig. 1b" and "Figure 1B" are one part, its label as first written
    figure = rows[("figure", "1b")]
    assert figure["caption"] == "Figure 1b: The east quay at dawn." and figure["pages"] == [1, 2]
    # a part only mentioned has no caption; it sits where it is first named
    appendix = rows[("appendix", "C")]
    assert appendix["caption"] == "" and appendix["page"] == 3 and appendix["n_mentions"] == 1
    assert parts.height == 3 and parts["part_id"].n_unique() == 3
