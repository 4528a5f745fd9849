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
from mmkg.sections import chunk_sections, heading_level, section_table, sections, walk_outline
from mmkg.validation import check_sections
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
    walk = walk_outline([(4, doc.page_starts[3], "Results\nLifts rose")], doc.text, doc.page_starts, renamed)
    assert walk.paths == ["Findings"]


def test_the_sections_table_lists_each_heading_with_its_parent_page_and_chunks(tmp_path: Path) -> None:
    path = write_outlined_pdf(tmp_path / "cranes.pdf", OUTLINED_PAGES, OUTLINE)
    doc, _ = read_pdf(path.read_bytes(), "cranes.pdf", Limits())
    rows = [
        {"doc_id": "d1", "partition": "p", "source_path": "cranes.pdf", "record_key": "", "kind": "pdf",
         "title": "Crane study", "text": doc.text, "page_starts": doc.page_starts, "n_pages": 4,
         "content_sha256": "x", "n_bytes": 1, "outline": doc.outline},
        {"doc_id": "d2", "partition": "p", "source_path": "notes.md", "record_key": "", "kind": "markdown",
         "title": "Notes", "text": "# Notes\n\nSome words.\n\n## Sensors\n\nEach crane has a load cell.",
         "page_starts": [0], "n_pages": 1, "content_sha256": "y", "n_bytes": 1, "outline": None},
    ]  # fmt: skip
    documents = schemas.frame(rows, schemas.DOCUMENTS)
    chunks = chunk_documents(documents, schemas.empty(schemas.IMAGES), max_tokens=12)
    table = section_table(chunks, documents)
    assert table.schema == schemas.SECTIONS
    pdf = table.filter(pl.col("doc_id") == "d1").sort("ordinal")
    assert pdf.select("title", "level", "page", "source").rows() == [
        ("Introduction", 1, 1, "outline"), ("Maintenance", 1, 2, "outline"), ("Spare parts", 2, 3, "outline"),
        ("Results", 1, 4, "outline"),
    ]  # fmt: skip
    ids = dict(zip(pdf["title"], pdf["section_id"], strict=True))
    assert pdf.filter(pl.col("title") == "Spare parts")["parent_id"][0] == ids["Maintenance"]
    assert pdf.filter(pl.col("title") == "Spare parts")["path"][0] == "Maintenance > Spare parts"
    text_of = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
    under = {t: [text_of[c] for c in cs] for t, cs in zip(pdf["title"], pdf["chunk_ids"], strict=True)}
    assert any("north shed" in t for t in under["Maintenance"])  # page 3's first chunk never names it
    assert any("ordered twice a year" in t for t in under["Spare parts"])
    assert not any("north shed" in t for t in under["Spare parts"])
    md = table.filter(pl.col("doc_id") == "d2").sort("ordinal")
    assert md.select("title", "level", "path", "source").rows() == [
        ("Notes", 1, "Notes", "text"), ("Sensors", 2, "Notes > Sensors", "text")
    ]  # fmt: skip
    # every chunk of a document with headings is under one, and the table passes its own check
    assert sum(table["chunk_ids"].list.len()) == chunks.height - 1  # the cranes' title line precedes its outline
    assert check_sections(table, chunks, "p").passed
    # and the check names what breaks: a subheading at its parent's level, a chunk of another document
    flat = table.with_columns(pl.when(pl.col("title") == "Spare parts").then(1).otherwise(pl.col("level"))
                              .cast(pl.Int32).alias("level"))  # fmt: skip
    assert "of no lower level" in check_sections(flat, chunks, "p").description
    moved = [{**r, "chunk_ids": pdf["chunk_ids"][0].to_list()} if r["title"] == "Sensors" else r
             for r in table.to_dicts()]  # fmt: skip
    other = schemas.frame(moved, schemas.SECTIONS)
    assert "of another document" in check_sections(other, chunks, "p").description


def test_a_markdown_file_states_its_outline_in_its_headings(tmp_path: Path) -> None:
    from mmkg.ingest.text import read_markdown

    md = tmp_path / "cranes.md"
    md.write_text("# Crane study\n\nThe port runs four cranes.\n\n## Maintenance\n\nEach crane is serviced every six "
                  "weeks.\n\n### Spare *parts*\n\nCables are ordered twice a year.\n")  # fmt: skip
    doc, _ = read_markdown(md, md.read_bytes(), "cranes.md")
    assert doc.outline == [{"level": 1, "title": "Crane study", "page": 1},
                           {"level": 2, "title": "Maintenance", "page": 1},
                           {"level": 3, "title": "Spare parts", "page": 1}]  # fmt: skip
    assert "# " not in doc.text  # the text is rendered: the heading marks are gone, the outline keeps them
    documents = schemas.frame(
        [{"doc_id": "d1", "partition": "p", "source_path": "cranes.md", "record_key": "", "kind": "markdown",
          "title": doc.title, "text": doc.text, "page_starts": [0], "n_pages": 1, "content_sha256": "x", "n_bytes": 1,
          "outline": doc.outline}],
        schemas.DOCUMENTS,
    )  # fmt: skip
    chunks = chunk_documents(documents, schemas.empty(schemas.IMAGES), max_tokens=8)
    table = section_table(chunks, documents)
    assert table.select("path", "page", "source").rows() == [
        ("Crane study", None, "outline"), ("Crane study > Maintenance", None, "outline"),
        ("Crane study > Maintenance > Spare parts", None, "outline"),
    ]  # fmt: skip
    paths = dict(zip(chunks["text"], chunk_sections(chunks, documents), strict=True))
    assert paths["Cables are ordered twice a year."] == "Crane study > Maintenance > Spare parts"
    assert check_sections(table, chunks, "p").passed
