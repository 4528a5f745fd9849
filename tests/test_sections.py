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
from mmkg.sections import chunk_sections, heading_level, outline_sections, sections
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


# ---------------------------------------------------------------- the PDF's own outline


def write_outlined_pdf(path: Path, pages: list[list[str]], outline: list[tuple[int, str, int]]) -> Path:
    """A PDF written object by object: ``pages`` of text lines (Helvetica) and bookmarks ``(level, title, page)``
    in reading order, nested by level, as a typesetter writes them (no PDF writer here writes outlines)."""
    objects: dict[int, bytes] = {}
    n_pages = len(pages)
    page_ids = [3 + 2 * i for i in range(n_pages)]
    font, root_outline = 3 + 2 * n_pages, 4 + 2 * n_pages
    first_item = root_outline + 1
    objects[1] = f"<< /Type /Catalog /Pages 2 0 R /Outlines {root_outline} 0 R >>".encode()
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] /Count {n_pages} >>".encode()
    for pid, lines in zip(page_ids, pages, strict=True):
        ops = "BT /F1 12 Tf 72 720 Td " + " 0 -18 Td ".join(f"({ln}) Tj" for ln in lines) + " ET"
        objects[pid] = (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {pid + 1} 0 R "
                        f"/Resources << /Font << /F1 {font} 0 R >> >> >>").encode()  # fmt: skip
        objects[pid + 1] = f"<< /Length {len(ops)} >>\nstream\n{ops}\nendstream".encode()
    objects[font] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    # the outline tree: each item's parent is the nearest item before it of a lower level
    parents, stack = [], [(0, root_outline)]
    for i, (level, _, _) in enumerate(outline):
        while stack[-1][0] >= level:
            stack.pop()
        parents.append(stack[-1][1])
        stack.append((level, first_item + i))
    ids = [first_item + i for i in range(len(outline))]
    kids = {p: [i for i, q in zip(ids, parents, strict=True) if q == p] for p in [root_outline, *ids]}
    for oid, (_, title, page), parent in zip(ids, outline, parents, strict=True):
        sib = kids[parent]
        at = sib.index(oid)
        links = (f" /Prev {sib[at - 1]} 0 R" if at else "") + (f" /Next {sib[at + 1]} 0 R" if at + 1 < len(sib) else "")
        if kids[oid]:
            links += f" /First {kids[oid][0]} 0 R /Last {kids[oid][-1]} 0 R /Count {len(kids[oid])}"
        objects[oid] = (f"<< /Title ({title}) /Parent {parent} 0 R /Dest [{page_ids[page - 1]} 0 R /Fit]"
                        f"{links} >>").encode()  # fmt: skip
    top = kids[root_outline]
    objects[root_outline] = f"<< /Type /Outlines /First {top[0]} 0 R /Last {top[-1]} 0 R /Count {len(top)} >>".encode()
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for oid in sorted(objects):
        offsets[oid] = len(out)
        out += f"{oid} 0 obj\n".encode() + objects[oid] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offsets[i]:010d} 00000 n \n".encode() for i in range(1, size))
    out += f"trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


OUTLINED_PAGES = [
    ["Harbour Crane Study", "Introduction", "The port runs four cranes on the east quay."],
    ["The cranes were bought in 1998.", "Maintenance", "Each crane is serviced every six weeks."],
    ["The yard crew keeps spare cables in the north shed.", "Spare parts", "Cables are ordered twice a year."],
    ["Results", "Lifts rose by a tenth after the new schedule."],
]
OUTLINE = [(1, "Introduction", 1), (1, "Maintenance", 2), (2, "Spare parts", 3), (1, "Results", 4)]


def test_the_pdf_outline_is_read_at_ingest(tmp_path: Path) -> None:
    path = write_outlined_pdf(tmp_path / "cranes.pdf", OUTLINED_PAGES, OUTLINE)
    doc, rejections = read_pdf(path.read_bytes(), "cranes.pdf", Limits())
    assert not rejections
    assert doc.outline == [{"level": lv, "title": t, "page": p} for lv, t, p in OUTLINE]
    assert "spare cables in the north shed" in doc.text
    # a PDF without bookmarks has an empty outline, and the column takes both
    plain, _ = read_pdf(write_pdf(tmp_path / "plain.pdf", ["One page."]).read_bytes(), "plain.pdf", Limits())
    assert plain.outline == []
    frame = schemas.frame([{"doc_id": "d", "outline": doc.outline}, {"doc_id": "e", "outline": []}],
                          {"doc_id": schemas.DOCUMENTS["doc_id"], "outline": schemas.DOCUMENTS["outline"]})  # fmt: skip
    assert frame["outline"].to_list()[0][2] == {"level": 2, "title": "Spare parts", "page": 3}
    # pages cut by the page budget take their headings with them
    short, _ = read_pdf(path.read_bytes(), "cranes.pdf", Limits(max_pages=2))
    assert [h["title"] for h in short.outline] == ["Introduction", "Maintenance"]


def test_sections_come_from_the_outline_where_the_pdf_has_one(tmp_path: Path) -> None:
    path = write_outlined_pdf(tmp_path / "cranes.pdf", OUTLINED_PAGES, OUTLINE)
    doc, _ = read_pdf(path.read_bytes(), "cranes.pdf", Limits())
    documents = schemas.frame(
        [{"doc_id": "d1", "partition": "p", "source_path": "cranes.pdf", "record_key": "", "kind": "pdf",
          "title": "Crane study", "text": doc.text, "page_starts": doc.page_starts, "n_pages": 4,
          "content_sha256": "x", "n_bytes": 1, "outline": doc.outline}],
        schemas.DOCUMENTS,
    )  # fmt: skip
    chunks = chunk_documents(documents, schemas.empty(schemas.IMAGES), max_tokens=12)
    by_text = dict(zip(chunks["text"].to_list(), chunk_sections(chunks, documents), strict=True))

    def section(words: str) -> str:
        return next(p for t, p in by_text.items() if words in t)
    # the heading opens where its page's line says it, not at the page's top: the first line of page 2 is still
    # the introduction's; a page that never names its section (page 3's first line) gets it from the outline;
    # a chunk that opens with its heading does not say it twice, and keeps the headings above it
    assert section("quay.") == "Introduction"
    assert section("bought in 1998") == "Introduction"
    assert section("serviced every six weeks") == ""
    assert section("north shed") == "Maintenance"
    assert section("ordered twice a year") == "Maintenance"
    assert section("rose by a tenth") == ""
    # the text's own rules read none of these plain-word headings
    assert set(sections(chunks["text"].to_list())) == {""}
    # without the outline (an older table, another kind of file), the rules are what is left
    assert set(chunk_sections(chunks, documents.with_columns(pl.lit(None).alias("outline")))) == {""}
    # a bookmark whose title its page never prints opens at the page's start
    renamed = [*doc.outline[:3], {"level": 1, "title": "Findings", "page": 4}]
    assert outline_sections([(4, doc.page_starts[3], "Results\nLifts rose")], doc.text, doc.page_starts, renamed) == [
        "Findings"
    ]
