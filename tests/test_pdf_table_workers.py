"""PDF table pages read in worker processes give the document the reading process would, and a broken or slow
pool loses no text."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest

from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from mmkg.ingest.pdf_table_workers import TableRows, read_batch, shutdown_table_workers, table_pool
from tests.conftest import SHARED
from tests.test_pdf_tables import write_table_pdf

DEV = SHARED / "datasets/mmlongbench-dev/documents"


@pytest.fixture(scope="module", autouse=True)
def _stop_workers():
    yield
    shutdown_table_workers()


def write_mixed_pdf(tmp_path: Path) -> Path:
    """The statement page, a page of prose with a picture, then the ruled table's page: the picture's offset
    sits after the first page's rows, so the rows added after the reading must move it."""
    import matplotlib.pyplot as plt

    tables = write_table_pdf(tmp_path / "statements.pdf")
    fig = plt.figure(figsize=(8.5, 11))
    fig.text(0.08, 0.9, "The plant in Reno opened in 2016 and ships batteries to the assembly line.", fontsize=10)
    fig.figimage(np.random.default_rng(3).integers(0, 255, (120, 160, 3), dtype=np.uint8), xo=100, yo=300)
    fig.text(0.08, 0.2, "Its output doubled in 2017 as a second line opened beside the first.", fontsize=10)
    fig.savefig(tmp_path / "picture.pdf")
    plt.close(fig)
    out = pdfium.PdfDocument.new()
    src, pic = pdfium.PdfDocument(tables), pdfium.PdfDocument(tmp_path / "picture.pdf")
    out.import_pages(src, [0])
    out.import_pages(pic, [0])
    out.import_pages(src, [1])
    path = tmp_path / "mixed.pdf"
    out.save(path)
    for pdf in (out, src, pic):
        pdf.close()
    return path


def _shape(doc) -> tuple:
    return doc.text, doc.page_starts, [(i.source, i.char_offset, i.page) for i in doc.images]


def test_workers_give_the_document_the_reading_process_gives(tmp_path: Path) -> None:
    data = write_mixed_pdf(tmp_path).read_bytes()
    here, rejected_here = read_pdf(data, "mixed.pdf", Limits(pdf_table_processes=0))
    there, rejected_there = read_pdf(data, "mixed.pdf", Limits(pdf_table_processes=2))
    assert rejected_here == rejected_there == []
    assert _shape(there) == _shape(here)
    assert "| Net income | 2015: 122,641 | 2014: 266,799" in there.text[: there.page_starts[1]]
    assert "Table 5: Battery life by mode | GPS on | Hours: 7" in there.text[there.page_starts[2] :]
    (picture,) = there.images
    assert picture.page == 2 and there.page_starts[1] <= picture.char_offset < there.page_starts[2]
    assert there.text[there.page_starts[1] :].startswith("The plant in Reno")


@pytest.mark.skipif(not DEV.exists(), reason="../shared/datasets is not present")
def test_a_real_paper_reads_the_same_in_workers() -> None:
    """STEPBACK: aligned and ruled tables on many pages, figures between them."""
    data = (DEV / "STEPBACK.pdf").read_bytes()
    here, _ = read_pdf(data, "STEPBACK.pdf", Limits(pdf_table_processes=0))
    there, _ = read_pdf(data, "STEPBACK.pdf", Limits(pdf_table_processes=2))
    assert _shape(there) == _shape(here) and here.text.count(" | ") > 50


def test_a_worker_killed_mid_file_costs_time_not_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = write_mixed_pdf(tmp_path).read_bytes()
    here, _ = read_pdf(data, "mixed.pdf", Limits(pdf_table_processes=0))
    shutdown_table_workers()  # cold workers: the batch below cannot be done before they are killed
    rejections: list = []
    rows = TableRows(data, "mixed.pdf", 2, rejections)
    for index in (0, 2):  # a full batch goes to the workers at once
        rows.add(index)
    pool = table_pool(2)
    for proc in list(pool._processes.values()):  # killed from outside, as the OOM killer would
        proc.kill()
        proc.join()
    with caplog.at_level(logging.WARNING, logger="mmkg.ingest.pdf_table_workers"):
        found = rows.collect()
    rows.close()
    assert "a table worker died" in caplog.text and "reading pages of mixed.pdf here" in caplog.text
    assert rejections == [] and sorted(found) == [0, 2]
    assert all(here.text.count(row) == 1 for page in found.values() for row in page)
    again, rejected = read_pdf(data, "mixed.pdf", Limits(pdf_table_processes=2))  # a new pool for the next file
    assert rejected == [] and _shape(again) == _shape(here) and table_pool(2) is not pool


def test_pages_the_time_budget_leaves_unread_are_recorded(tmp_path: Path) -> None:
    rejections: list = []
    rows = TableRows(write_table_pdf(tmp_path / "statements.pdf").read_bytes(), "statements.pdf", 2, rejections)
    rows.add(0)
    rows.add(1)
    assert rows.collect(timeout=0.0) == {}
    rows.close()
    (late,) = rejections
    assert late.stage == "budget" and "tables of 2 page(s) not read (1, 2)" in late.reason


def test_a_file_pdfminer_cannot_open_says_so() -> None:
    found = read_batch("broken", b"%PDF-1.4\nnot a pdf at all", [0])
    assert isinstance(found, str) and found
    rejections: list = []
    rows = TableRows(b"%PDF-1.4\nnot a pdf at all", "broken.pdf", 0, rejections)
    rows.add(0)
    rows.add(1)
    assert rows.collect() == {} and len(rejections) == 1
    assert rejections[0].reason.startswith("tables not read: pdfplumber cannot open the file")
