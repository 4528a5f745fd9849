"""Sections: the headings a chunk sits under reach what the encoder and BM25 read, from real PDFs and chunks."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from mmkg import schemas
from mmkg.chunking import chunk_documents
from mmkg.embedding import chunk_texts
from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from mmkg.sections import heading_level, sections
from tests.conftest import write_pdf


@pytest.mark.parametrize(("line", "level"), [
    ("4 Experimental Setup", 1), ("4.2 RESULTS", 2), ("1.1 Wearing the watch", 2), ("## Results", 2),
    ("Item 7.", 1), ("Item 7. Management's Discussion and Analysis", 1), ("PART II", 1), ("Appendix C", 1),
    ("CONSOLIDATED STATEMENTS OF OPERATIONS", 2),
    ("Press and hold the Down button.", None),  # a sentence
    ("Table 1 illustrates model performance across", None),  # a wrapped line of prose
    ("2015 2014 2013", None), ("1 Samsung 24%", None),  # numbers, a table row
    ("Item 16. Form 10-K Summary 76", None), ("Appendix A: Participants..........4", None),  # contents lines
    ("Net income | 2015: 122,641 | 2014: 266,799", None),
])  # fmt: skip
def test_heading_lines(line: str, level: int | None) -> None:
    assert heading_level(line) == level


def test_a_chunk_carries_the_headings_open_where_it_starts() -> None:
    texts = [
        "RESEARCH NOTES\n1 Introduction\nWe study harbour cranes.\n2 Method\nWe count lifts.",
        "More about counting lifts on this page.\nRESEARCH NOTES",
        "2.1 Sensors\nEach crane has a load cell.",
        "The load cells were calibrated weekly.\nRESEARCH NOTES",
        "3 Results\nLifts rose by a tenth.\nRESEARCH NOTES",
    ]
    # the running header on every page is no heading; the heading a chunk opens with is not repeated
    assert sections(texts) == ["", "2 Method", "2 Method", "2 Method > 2.1 Sensors", ""]


def test_pdf_chunks_are_embedded_and_searched_with_their_section(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pages = [
        "Harbour Crane Study\n1 Introduction\nThe port runs four cranes on the east quay.",
        "2 Maintenance schedule\nEach crane is serviced every six weeks by the yard crew.",
        "The yard crew keeps spare cables in the north shed and logs every repair.",
    ]
    monkeypatch.setenv("MMKG_CHUNK_SECTIONS", "true")  # a corpus opts in (off by default)
    path = write_pdf(tmp_path / "cranes.pdf", pages)
    doc, _ = read_pdf(path.read_bytes(), "cranes.pdf", Limits())
    documents = pl.DataFrame({"doc_id": ["d1"], "partition": ["p"], "kind": ["pdf"], "title": ["Crane study"],
                              "text": [doc.text], "page_starts": [doc.page_starts]})  # fmt: skip
    chunks = chunk_documents(documents, pl.DataFrame(schema=schemas.IMAGES), max_tokens=200)
    texts = chunk_texts(chunks, documents)
    third = next(t for t, page in zip(texts, chunks["page"].to_list(), strict=True) if page == 3)
    # page 3 never names its section; what the encoder and BM25 read does
    assert third.startswith("Crane study\n2 Maintenance schedule\nThe yard crew keeps spare cables")
    # the chunk's own text, which answers quote, is unchanged
    assert chunks.filter(pl.col("page") == 3)["text"][0].startswith("The yard crew keeps spare cables")
    records = documents.with_columns(pl.lit("json").alias("kind"))
    plain = chunk_texts(chunks, records)  # records and transcripts have no sections
    assert plain[texts.index(third)].startswith("Crane study\nThe yard crew keeps spare cables")
    monkeypatch.delenv("MMKG_CHUNK_SECTIONS")  # the default: no sections
    assert chunk_texts(chunks, documents)[texts.index(third)].startswith("Crane study\nThe yard crew keeps")
