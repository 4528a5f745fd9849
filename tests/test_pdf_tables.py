"""Tables as tables: rows of real PDFs keep their column headers, row labels and caption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pdfplumber
import pytest

from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from mmkg.ingest.pdf_tables import page_tables, render
from tests.conftest import SHARED

NETFLIX = SHARED / "datasets/mmlongbench-dev/documents/NETFLIX_2015_10K.pdf"
STEPBACK = SHARED / "datasets/mmlongbench-dev/documents/STEPBACK.pdf"


def statement_figure(texts: list[tuple[float, float, str, str, int]], rows: list[tuple[float, str, tuple[str, ...]]],
                     columns: tuple[float, ...], top: float, step: float) -> Any:  # fmt: skip
    """A page of a statement drawn like a 10-K's, no borders: ``texts`` as (x, y, text, alignment, size), then
    one line per row ``(x, label, values)`` from ``top`` down by ``step``, each value right-aligned at its
    ``columns`` x (figure coordinates). The caller saves and closes the figure."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(8.5, 11))
    for x, y, text, ha, size in texts:
        fig.text(x, y, text, fontsize=size, ha=ha)
    for i, (x, label, values) in enumerate(rows):
        y = top - step * i
        fig.text(x, y, label, fontsize=10)
        for cx, value in zip(columns, values, strict=True):
            fig.text(cx, y, value, fontsize=10, ha="right")
    return fig


def write_table_pdf(path: Path) -> Path:
    """A statement drawn like a 10-K's (no borders, numbers right-aligned under year headers), a caption above
    it, prose below, and a ruled table (cell borders) on a second page."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    rows = [(0.08, "Revenues", ("6,779,511", "5,504,656")), (0.08, "Cost of revenues", ("4,591,476", "3,752,760")),
            (0.08, "Net income", ("122,641", "266,799")),
            (0.08, "Interest expense", ("(132,716)", "(50,219)"))]  # fmt: skip
    texts = [(0.08, 0.95, "Table 4: Consolidated statements of operations (in thousands)", "left", 11),
             (0.70, 0.91, "2015", "right", 10), (0.88, 0.91, "2014", "right", 10),
             (0.08, 0.6, "Revenues grew in 2015 as streaming memberships grew. The statement above is audited.", "left",
              10)]  # fmt: skip
    with PdfPages(path) as pdf:
        fig = statement_figure(texts, rows, (0.72, 0.90), top=0.88, step=0.025)
        pdf.savefig(fig)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(8.5, 11))
        ax.axis("off")
        ax.text(0.0, 0.95, "Table 5: Battery life by mode", fontsize=11, transform=ax.transAxes)
        table = ax.table(cellText=[["Mode", "Hours"], ["Typical use", "14"], ["GPS on", "7"], ["Standby", "30"]],
                         loc="upper left", bbox=(0.0, 0.6, 0.6, 0.3))  # fmt: skip
        table.set_fontsize(10)
        ax.text(0.0, 0.5, "Battery life depends on how the watch is used.", fontsize=10, transform=ax.transAxes)
        pdf.savefig(fig)
        plt.close(fig)
    return path


def write_highlights_pdf(path: Path) -> Path:
    """A 10-K's "performance highlights": year headers, then the statement's units note on a line of its own
    between them and the rows, a footnote marker set against a row's label, and a change column whose
    negative values are written "(1)%"."""
    import matplotlib.pyplot as plt

    rows = [(0.08, "Ferry crossings (1)", ("74,762", "57,391", "30 %")),
            (0.08, "Average fare per crossing", ("$ 8.15", "$ 8.20", "(1)%")),
            (0.08, "Ticket revenue", ("$ 6,779,511", "$ 5,504,656", "23 %"))]  # fmt: skip
    texts = [(0.08, 0.95, "The following represents our consolidated performance highlights:", "left", 10),
             (0.62, 0.92, "2019", "right", 10), (0.76, 0.92, "2018", "right", 10),
             (0.92, 0.92, "2019 vs. 2018", "right", 10),
             (0.50, 0.90, "(in thousands, except fares and percentages)", "center", 10)]  # fmt: skip
    fig = statement_figure(texts, rows, (0.62, 0.76, 0.92), top=0.87, step=0.025)
    fig.savefig(path)
    plt.close(fig)
    return path


def test_headers_above_a_units_note_and_a_labels_footnote_marker(tmp_path: Path) -> None:
    with pdfplumber.open(write_highlights_pdf(tmp_path / "highlights.pdf")) as pdf:
        tables = page_tables(pdf.pages[0])
    assert len(tables) == 1
    t = tables[0]
    assert t.headers == ["2019", "2018", "2019 vs. 2018"]  # read over the units note, not stopped by it
    assert t.unit == "(in thousands, except fares and percentages)"
    assert [label for label, _ in t.rows] == ["Ferry crossings", "Average fare per crossing", "Ticket revenue"]
    assert render(t) == [
        "(in thousands, except fares and percentages) | Ferry crossings | 2019: 74,762 | 2018: 57,391 | "
        "2019 vs. 2018: 30%",
        "(in thousands, except fares and percentages) | Average fare per crossing | 2019: $8.15 | 2018: $8.20 | "
        "2019 vs. 2018: (1)%",
        "(in thousands, except fares and percentages) | Ticket revenue | 2019: $6,779,511 | 2018: $5,504,656 | "
        "2019 vs. 2018: 23%",
    ]


def write_balance_pdf(path: Path) -> Path:
    """A balance sheet as 10-Ks set it: years under a title spanning them, a centred "ASSETS" and a heading
    "Current assets:" between the years and the first row, rows under the heading set in, with dot leaders,
    and a row back at the heading's indent after them."""
    import matplotlib.pyplot as plt

    texts = [(0.5, 0.95, "CONSOLIDATED BALANCE SHEETS", "center", 10), (0.80, 0.92, "December 31,", "center", 10),
             (0.72, 0.90, "2018", "right", 10), (0.90, 0.90, "2019", "right", 10),
             (0.35, 0.88, "ASSETS", "center", 10), (0.05, 0.86, "Current assets:", "left", 10)]  # fmt: skip
    rows = [(0.08, "Cash and cash equivalents ........", ("1,204", "1,388")), (0.08, "Fuel inventories", ("88", "97")),
            (0.12, "Total current assets", ("1,292", "1,485")), (0.05, "Ships, net", ("4,310", "4,552"))]  # fmt: skip
    fig = statement_figure(texts, rows, (0.72, 0.90), top=0.84, step=0.02)
    fig.savefig(path)
    plt.close(fig)
    return path


def test_rows_set_in_under_a_heading_carry_it_and_the_years_above_it(tmp_path: Path) -> None:
    with pdfplumber.open(write_balance_pdf(tmp_path / "balance.pdf")) as pdf:
        tables = page_tables(pdf.pages[0])
    assert len(tables) == 1
    assert tables[0].headers == ["2018", "2019"]  # read above "ASSETS" and "Current assets:", over no column
    assert render(tables[0]) == [
        "Current assets — Cash and cash equivalents | 2018: 1,204 | 2019: 1,388",  # no dot leaders
        "Current assets — Fuel inventories | 2018: 88 | 2019: 97",
        "Current assets — Total current assets | 2018: 1,292 | 2019: 1,485",
        "Ships, net | 2018: 4,310 | 2019: 4,552",  # back at the heading's indent: the heading is closed
    ]


def write_manual_pdf(path: Path) -> Path:
    """A device manual's page: two ruled tables of what each press of a button does, each under a short title
    line ("Up button", "Down button"), with the same row labels in both, and a sentence before them."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 11))
    ax.axis("off")
    ax.text(0.0, 0.97, "The kettle has two buttons on its handle.", fontsize=10, transform=ax.transAxes)
    for top, title, once, hold in ((0.90, "Up button", "Raise the temperature by five degrees", "Start boiling"),
                                   (0.55, "Down button", "Lower the temperature by five degrees",
                                    "Keep the water warm for an hour")):  # fmt: skip
        ax.text(0.0, top + 0.005, title, fontsize=10, transform=ax.transAxes)
        table = ax.table(cellText=[["Operation", "Function"], ["Press once", once], ["Press and hold", hold]],
                         loc="upper left", bbox=(0.0, top - 0.2, 0.9, 0.2))  # fmt: skip
        table.set_fontsize(10)
    fig.savefig(path)
    plt.close(fig)
    return path


def test_a_ruled_tables_title_line_is_its_caption(tmp_path: Path) -> None:
    """The same row labels in two tables ("Press and hold") are told apart by each table's title line."""
    pdf_path = write_manual_pdf(tmp_path / "manual.pdf")
    with pdfplumber.open(pdf_path) as pdf:
        tables = page_tables(pdf.pages[0])
    assert [(t.finder, t.caption) for t in tables] == [("ruled", "Up button"), ("ruled", "Down button")]
    assert render(tables[0])[1] == "Up button | Press and hold | Function: Start boiling"
    assert render(tables[1])[1] == "Down button | Press and hold | Function: Keep the water warm for an hour"
    doc, _ = read_pdf(pdf_path.read_bytes(), "manual.pdf", Limits())
    assert "\n\nDown button | Press and hold | Function: Keep the water warm for an hour" in doc.text
    # the sentence above the first title is no title: it ends a sentence and is too far from either table
    assert not any(t.caption.startswith("The kettle") for t in tables)


@pytest.fixture
def table_pdf(tmp_path: Path) -> Path:
    return write_table_pdf(tmp_path / "statements.pdf")


def test_aligned_table_rows_keep_headers_label_and_caption(table_pdf: Path) -> None:
    with pdfplumber.open(table_pdf) as pdf:
        tables = page_tables(pdf.pages[0])
    assert [t.finder for t in tables] == ["aligned"]
    t = tables[0]
    assert t.headers == ["2015", "2014"]
    assert t.caption.startswith("Table 4: Consolidated statements of operations")
    assert [label for label, _ in t.rows] == ["Revenues", "Cost of revenues", "Net income", "Interest expense"]
    lines = render(t)
    assert lines[2].endswith("| Net income | 2015: 122,641 | 2014: 266,799")
    assert lines[3].endswith("| Interest expense | 2015: (132,716) | 2014: (50,219)")
    assert all(line.startswith("Table 4: Consolidated statements of operations") for line in lines)


def test_ruled_table_first_row_is_the_header(table_pdf: Path) -> None:
    with pdfplumber.open(table_pdf) as pdf:
        tables = page_tables(pdf.pages[1])
    ruled = [t for t in tables if t.finder == "ruled"]
    assert len(ruled) == 1
    assert ruled[0].headers == ["Hours"]
    assert render(ruled[0]) == ["Table 5: Battery life by mode | Typical use | Hours: 14",
                                "Table 5: Battery life by mode | GPS on | Hours: 7",
                                "Table 5: Battery life by mode | Standby | Hours: 30"]  # fmt: skip


def test_pdf_page_text_carries_its_rows_after_the_text(table_pdf: Path) -> None:
    data = table_pdf.read_bytes()
    doc, rejected = read_pdf(data, "statements.pdf", Limits())
    assert rejected == []
    first = doc.text[: doc.page_starts[1]]
    assert "Revenues grew in 2015" in first  # the page's own text first, unchanged
    assert first.index("Revenues grew in 2015") < first.index("| Net income | 2015: 122,641 | 2014: 266,799")
    assert "\n\nTable 5: Battery life by mode | GPS on | Hours: 7" in doc.text[doc.page_starts[1] :]
    plain, _ = read_pdf(data, "statements.pdf", Limits(pdf_tables=False))
    assert "|" not in plain.text and "Revenues grew in 2015" in plain.text


def test_damaged_file_for_tables_is_recorded_not_lost(table_pdf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page whose tables cannot be read keeps its text, and the reason is recorded against the file."""
    import mmkg.ingest.pdf as pdf_mod

    def broken(page):
        raise ValueError("unexpected token in content stream")

    monkeypatch.setattr(pdf_mod, "page_tables", broken)  # in this process: no table workers
    doc, rejected = read_pdf(table_pdf.read_bytes(), "statements.pdf", Limits(pdf_table_processes=0))
    assert "Revenues grew in 2015" in doc.text and "|" not in doc.text
    assert [r.stage for r in rejected] == ["tables", "tables"]
    assert "page 1: tables not read (ValueError: unexpected token" in rejected[0].reason


@pytest.mark.skipif(not NETFLIX.exists(), reason="../shared/datasets is not present")
def test_real_10k_statement_and_paper_table() -> None:
    with pdfplumber.open(NETFLIX) as pdf:
        lines = [line for t in page_tables(pdf.pages[39]) for line in render(t)]
    assert "Technology and development | 2015: 650,788 | 2014: 472,321 | 2013: 378,769" in lines
    with pdfplumber.open(NETFLIX) as pdf:  # the "Other Data" statement: years above "(in thousands)"
        lines = [line for t in page_tables(pdf.pages[17]) for line in render(t)]
    assert "(in thousands) | Global streaming memberships | 2015: 74,762 | 2014: 57,391 | 2013: 44,350 | " \
           "2012: 33,267 | 2011: 23,529" in lines
    with pdfplumber.open(STEPBACK) as pdf:
        lines = [line for t in page_tables(pdf.pages[4]) for line in render(t)]
    assert any(line.endswith("| PaLM-2L + Step-Back (ours) | MMLU Physics: 73.2% (1.9%) | MMLU Chemistry: 81.8% (1.4%)")
               for line in lines)  # fmt: skip


@pytest.mark.parametrize(("question", "expected"), [
    ("What was the cost of revenues in 2014?", "3752760"),
    ("What were the revenues in 2015?", "6779511"),
    ("How much was the interest expense in 2014?", "50219"),
])  # fmt: skip
def test_the_reader_answers_from_the_cell_under_the_asked_column(table_pdf: Path, question: str, expected: str) -> None:
    """The cell is picked by its row label and its own column's header, not by the nearest number."""
    from mmkg.generation.base import Evidence
    from mmkg.generation.question import analyze
    from mmkg.generation.reader import Reader

    doc, _ = read_pdf(table_pdf.read_bytes(), "statements.pdf", Limits())
    page = doc.text[: doc.page_starts[1]].strip()
    ev = [Evidence(label=1, kind="chunk", text=page, chunk_id="c0", doc_id="d", title="Statements",
                   source_path="statements.pdf", chunk_index=0)]  # fmt: skip
    ans = Reader(min_confidence=0.0).read(analyze(question), None, ev)
    assert ans.text == expected, ans.candidates[:3]
    assert " | " in ans.support[0].sentence  # the row, with its headers, is the cited sentence
