"""pdfium tells which PDF pages may hold a table, so pdfplumber parses only those, and no row is lost."""

from __future__ import annotations

from pathlib import Path

import pdfplumber
import pypdfium2 as pdfium
import pytest

import mmkg.ingest.pdf as pdf_mod
from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from mmkg.ingest.pdf_table_pages import edges, grids, may_hold_table, ruled_grid, words
from mmkg.ingest.pdf_tables import _lines, page_tables, render
from tests.conftest import SHARED
from tests.test_pdf_tables import write_manual_pdf, write_table_pdf

DEV = SHARED / "datasets/mmlongbench-dev/documents"


def write_prose_pdf(path: Path) -> Path:
    """A page of prose as reports set it: a rule under the running head, a boxed note, dates and figures in
    the sentences ("In 2015 revenue grew 23%"), a page number; no table."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig = plt.figure(figsize=(8.5, 11))
    fig.text(0.08, 0.95, "Annual report 2015", fontsize=9)
    fig.add_artist(plt.Line2D([0.08, 0.92], [0.94, 0.94], color="black", linewidth=0.8))
    lines = ["In 2015 revenue grew 23% to 6,779 million, and streaming memberships reached 74 million.",
             "Costs rose 22% in 2015 against 2014, mostly from content amortization of 3,405 million.",
             "We expect 2016 to bring 5 more markets and 130 countries in all by the end of the year."]  # fmt: skip
    for i, line in enumerate(lines):
        fig.text(0.08, 0.88 - 0.03 * i, line, fontsize=10)
    fig.add_artist(Rectangle((0.08, 0.60), 0.84, 0.12, fill=False, linewidth=0.8))
    fig.text(0.10, 0.68, "Note: figures for 2014 are restated; see note 3 on page 41.", fontsize=10)
    fig.text(0.50, 0.04, "12", fontsize=9, ha="center")
    fig.savefig(path)
    plt.close(fig)
    return path


def _pages(path: Path) -> list[tuple[pdfium.PdfPage, pdfium.PdfTextPage]]:
    pdf = pdfium.PdfDocument(path.read_bytes())
    pages = [pdf[i] for i in range(len(pdf))]
    return [(page, page.get_textpage()) for page in pages]


def write_pasted_table_pdf(source: Path, path: Path) -> Path:
    """A page that draws another PDF's page, holding a ruled table, as a form scaled to half size and moved:
    a figure pasted from another document, as papers paste theirs."""
    import pypdfium2.raw as pdfium_c

    src = pdfium.PdfDocument(source.read_bytes())
    dest = pdfium.PdfDocument.new()
    xobject = pdfium_c.FPDF_NewXObjectFromPage(dest.raw, src.raw, 1)  # page 2: the ruled table
    form = pdfium_c.FPDF_NewFormObjectFromXObject(xobject)
    pdfium_c.FPDFPageObj_Transform(form, 0.5, 0, 0, 0.5, 100, 300)
    page = dest.new_page(612, 792)
    pdfium_c.FPDFPage_InsertObject(page.raw, form)
    pdfium_c.FPDFPage_GenerateContent(page.raw)
    pdfium_c.FPDF_CloseXObject(xobject)
    dest.save(str(path))
    return path


def test_pages_with_aligned_or_ruled_tables_are_let_through_and_prose_is_not(tmp_path: Path) -> None:
    statement, ruled = _pages(write_table_pdf(tmp_path / "statements.pdf"))
    (manual,) = _pages(write_manual_pdf(tmp_path / "manual.pdf"))
    (prose,) = _pages(write_prose_pdf(tmp_path / "prose.pdf"))
    assert may_hold_table(*statement) and not ruled_grid(statement[0])  # aligned rows, no borders
    assert ruled_grid(ruled[0]) and ruled_grid(manual[0])  # cell borders
    assert not may_hold_table(*prose)
    # the prose page has edges (the rule, the box's sides) and numbers, but neither a grid nor aligned rows
    assert {e["orientation"] for e in edges(prose[0])} == {"h", "v"}
    assert any(w["text"] == "2015" for w in words(prose[1], prose[0].get_height()))


def test_a_ruled_table_inside_a_form_is_found_where_pdfplumber_finds_it(tmp_path: Path) -> None:
    """A form's paths are drawn through the form's matrix: without it the pasted table's lines land elsewhere
    (two validation papers lost their ruled tables that way before the matrices were composed)."""
    path = write_pasted_table_pdf(write_table_pdf(tmp_path / "statements.pdf"), tmp_path / "pasted.pdf")
    ((page, textpage),) = _pages(path)
    assert ruled_grid(page) and may_hold_table(page, textpage)
    with pdfplumber.open(path) as pdf:
        theirs = [t.bbox for t in pdf.pages[0].find_tables()]
        rows = [line for t in page_tables(pdf.pages[0]) for line in render(t)]
    assert "Table 5: Battery life by mode | GPS on | Hours: 7" in rows
    ours = [t.bbox for t in grids(page)]
    assert len(ours) == len(theirs) == 1
    assert ours[0] == pytest.approx(theirs[0], abs=1.0)  # x0, top, x1, bottom on the page, not in the form


def test_pdfium_words_are_pdfplumbers_words_on_the_same_lines(tmp_path: Path) -> None:
    """The words the aligned test reads: pdfplumber's words, at its x positions, grouped into the same lines
    (the tops differ by the font's ascent, pdfium's loose box against pdfminer's, the same along a line)."""
    path = write_table_pdf(tmp_path / "statements.pdf")
    page, textpage = _pages(path)[0]
    ours = words(textpage, page.get_height())
    with pdfplumber.open(path) as pdf:
        theirs = pdf.pages[0].extract_words(x_tolerance=1.5)

    def key(w: dict) -> tuple:
        return w["text"], w["x0"]

    pairs = list(zip(sorted(ours, key=key), sorted(theirs, key=key), strict=True))
    assert all(a["text"] == b["text"] for a, b in pairs)
    assert max(abs(a[k] - b[k]) for a, b in pairs for k in ("x0", "x1")) < 0.5
    assert [[w["text"] for w in line] for line in _lines(ours)] == [
        [w["text"] for w in line] for line in _lines(theirs)
    ]


def test_read_pdf_parses_only_the_pages_let_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def spy(page: object) -> list:
        seen.append(page.page_number)  # type: ignore[attr-defined]
        return page_tables(page)

    monkeypatch.setattr(pdf_mod, "page_tables", spy)
    here = Limits(pdf_table_processes=0)  # the spy sees pages read in this process only
    prose = write_prose_pdf(tmp_path / "prose.pdf")
    doc, rejected = read_pdf(prose.read_bytes(), "prose.pdf", here)
    assert seen == [] and rejected == [] and "streaming memberships reached 74 million" in doc.text
    doc, _ = read_pdf(write_table_pdf(tmp_path / "statements.pdf").read_bytes(), "statements.pdf", here)
    assert seen == [1, 2] and "| Net income | 2015: 122,641 | 2014: 266,799" in doc.text


def test_a_page_pdfium_cannot_walk_is_parsed_anyway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(page: object, textpage: object) -> bool:
        raise pdfium.PdfiumError("cannot load path segment")

    monkeypatch.setattr(pdf_mod, "may_hold_table", broken)
    doc, rejected = read_pdf(write_table_pdf(tmp_path / "statements.pdf").read_bytes(), "statements.pdf", Limits())
    assert rejected == [] and "\n\nTable 5: Battery life by mode | GPS on | Hours: 7" in doc.text


@pytest.mark.skipif(not DEV.exists(), reason="../shared/datasets is not present")
@pytest.mark.parametrize("name", ["ISEP_student_handbook_2020.pdf", "STEPBACK.pdf"])
def test_real_documents_lose_no_table_page(name: str) -> None:
    """A handbook of ruled grids and a paper of aligned and ruled tables: every page pdfplumber finds rows on
    is let through, and pages without tables are left out."""
    path = DEV / name
    left_out = 0
    with pdfplumber.open(path) as plumber:
        for i, (page, textpage) in enumerate(_pages(path)):
            through = may_hold_table(page, textpage)
            left_out += not through
            if not through:
                assert not [line for t in page_tables(plumber.pages[i]) for line in render(t)], f"page {i + 1}"
    assert left_out >= 8
