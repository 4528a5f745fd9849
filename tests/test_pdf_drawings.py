"""Charts and diagrams a PDF draws with their labels as outlines (mmkg/ingest/pdf_drawings.py): such a page has a
text layer, so it was never rendered for OCR, and the words of its drawings reached no channel. Now it is rendered
without its text objects, OCRed by the real RapidOCR engine (``mmkg.vision.page_text``), and the lines follow the
page's own text as chunks of that page.

Inputs: a PDF written here with matplotlib whose chart labels are glyph outlines (each character a path, as
design tools export them), and a real Pew Research Center report of MMLongBench-Doc's validation set whose
charts are drawn so (skipped where ``../shared`` is absent)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from mmkg import schemas
from mmkg.chunking import chunk_documents
from mmkg.ids import bytes_id
from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from mmkg.ingest.pdf_drawings import outlined_glyphs
from mmkg.vision.ocr import OcrEngine
from mmkg.vision.page_text import ocr_pages

VAL = Path(__file__).resolve().parents[2] / "shared/datasets/mmlongbench-val/documents"
PEW = VAL / "PP_2021.04.22_voting-access_REPORT.pdf"
PARAGRAPH = "The ferry company carried more cyclists than ever before.\nFares rose in the spring."


def _outlined(ax, x: float, y: float, text: str, size: float = 16) -> None:
    """``text`` drawn as one path per character, as a design tool exports outlined type."""
    from matplotlib.patches import PathPatch
    from matplotlib.textpath import TextPath

    for ch in text:
        if ch == " ":
            x += size * 0.35
            continue
        path = TextPath((x, y), ch, size=size)
        ax.add_patch(PathPatch(path, color="black", lw=0))
        x += path.get_extents().width + size * 0.12


def chart_pdf(path: Path) -> Path:
    """Page 1: a paragraph (real text) over a bar chart whose labels are outlines. Page 2: text only."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    with PdfPages(path, metadata={"CreationDate": None}) as pdf:
        fig = plt.figure(figsize=(6, 8))
        fig.text(0.08, 0.95, PARAGRAPH, fontsize=11, va="top")
        ax = fig.add_axes((0.1, 0.1, 0.8, 0.6))
        ax.set_xlim(0, 400)
        ax.set_ylim(0, 300)
        ax.axis("off")
        for i, (label, value) in enumerate([("Morning boats", 42), ("Evening boats", 17)]):
            y = 220 - i * 90
            ax.add_patch(plt.Rectangle((170, y - 5), value * 4, 30, color="tab:blue"))
            _outlined(ax, 10, y, label)
            _outlined(ax, 180 + value * 4, y, str(value))
        pdf.savefig(fig)
        plt.close(fig)
        fig = plt.figure(figsize=(6, 8))
        fig.text(0.08, 0.9, "Timetable notes\nBoats leave every hour from the pier.", fontsize=11, va="top")
        pdf.savefig(fig)
        plt.close(fig)
    return path


def test_a_page_whose_chart_labels_are_outlines_is_rendered_without_its_text(tmp_path: Path):
    data = chart_pdf(tmp_path / "ferry.pdf").read_bytes()
    doc, rejections = read_pdf(data, "ferry.pdf", Limits())
    assert not rejections
    assert "cyclists" in doc.text and "Morning" not in doc.text  # the labels are no text
    (render,) = [img for img in doc.images if img.role == "drawing_render"]
    assert render.page == 1 and render.source == "ferry.pdf#page=1&drawing"
    words = " ".join(line.text for line in OcrEngine().read(render.pil))
    assert "Morning" in words and "Evening" in words and "42" in words
    assert "cyclists" not in words and "ferry" not in words  # the text layer is not read twice
    off, _ = read_pdf(data, "ferry.pdf", Limits(min_outlined_glyphs=0))
    assert [img.role for img in off.images] == [] and off.text == doc.text


def test_a_page_whose_drawings_cannot_be_rendered_keeps_its_text_and_is_recorded(tmp_path: Path, monkeypatch):
    import pypdfium2 as pdfium

    import mmkg.ingest.pdf as pdf_reader

    def broken(page, scale):
        raise pdfium.PdfiumError("Failed to remove pageobject.")

    monkeypatch.setattr(pdf_reader, "render_drawing", broken)
    data = chart_pdf(tmp_path / "ferry.pdf").read_bytes()
    doc, rejections = read_pdf(data, "ferry.pdf", Limits())
    assert "cyclists" in doc.text and "Timetable" in doc.text  # both pages' text is kept
    assert [img.role for img in doc.images] == []
    (rejected,) = rejections
    assert rejected.stage == "drawings" and rejected.reason.startswith("page 1: drawings not rendered for OCR")
    assert rejected.record_key == "ferry.pdf#page=1&drawing"


def test_a_drawing_render_over_the_picture_budget_is_counted_as_skipped(tmp_path: Path):
    data = chart_pdf(tmp_path / "ferry.pdf").read_bytes()
    doc, rejections = read_pdf(data, "ferry.pdf", Limits(max_images_per_document=0))
    assert doc.images == [] and [r.stage for r in rejections] == ["budget"]
    assert rejections[0].reason.startswith("1 more pictures")


def test_a_page_of_text_or_of_real_text_labels_counts_no_outlined_glyphs(tmp_path: Path):
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(chart_pdf(tmp_path / "ferry.pdf"))
    try:
        assert outlined_glyphs(pdf[0]) >= Limits().min_outlined_glyphs
        assert outlined_glyphs(pdf[1]) == 0
    finally:
        pdf.close()


def _ocr_chunks(doc, tmp_path: Path):
    """The document's chunks with its drawing renders OCRed, as the page_text and chunks assets make them."""
    renders = {img.page: img.pil for img in doc.images if img.role == "drawing_render"}
    docs = schemas.frame(
        [{"doc_id": "d", "partition": "p", "source_path": doc.source_path, "record_key": "", "kind": "pdf",
          "title": doc.title, "text": doc.text, "page_starts": doc.page_starts, "n_pages": len(doc.page_starts),
          "content_sha256": doc.content_sha256, "n_bytes": doc.n_bytes}],
        schemas.DOCUMENTS,
    )  # fmt: skip
    images = schemas.frame(
        [{"image_id": bytes_id(pil.tobytes()), "partition": "p", "doc_id": "d", "occurrence": p, "page": p,
          "char_offset": doc.page_starts[p - 1], "role": "drawing_render", "source": f"{doc.source_path}#page={p}",
          "blob_path": str(p)} for p, pil in renders.items()],
        schemas.IMAGES,
    )  # fmt: skip
    engine = OcrEngine()
    pages = ocr_pages(docs, images, lambda image_id, path: engine.read(renders[int(str(path))]), Path)
    return pages, chunk_documents(docs, images, 200, page_text=pages)


def test_the_drawing_s_words_follow_its_page_s_text_as_chunks_of_that_page(tmp_path: Path):
    doc, _ = read_pdf(chart_pdf(tmp_path / "ferry.pdf").read_bytes(), "ferry.pdf", Limits())
    pages, chunks = _ocr_chunks(doc, tmp_path)
    assert pages["page"].to_list() == [1] and pages["source"].to_list() == ["ocr"]
    page1 = chunks.filter(pl.col("page") == 1).sort("chunk_index")
    assert page1["text_source"].to_list()[0] == "document" and page1["text_source"].to_list()[-1] == "ocr"
    assert "Morning" in page1["text"][-1] and "cyclists" in page1["text"][0]
    # the OCR chunk sits between page 1's text and page 2's
    order = chunks.sort("chunk_index")["page"].to_list()
    assert order == sorted(order)


@pytest.mark.skipif(not PEW.exists(), reason=f"{PEW} not available")
def test_a_pew_report_s_vector_charts_become_text_and_rows(tmp_path: Path):
    doc, rejections = read_pdf(PEW.read_bytes(), PEW.name, Limits())
    assert not rejections
    drawn = sorted(img.page for img in doc.images if img.role == "drawing_render")
    assert 9 in drawn and len(drawn) <= 10  # the report's chart pages, not its 24 pages
    page9 = doc.text[doc.page_starts[8] : doc.page_starts[9]]
    assert "Rep/Lean Rep" not in page9  # the chart's labels are outlines: the text layer lacks them
    doc.images = [img for img in doc.images if img.page == 9]
    pages, _ = _ocr_chunks(doc, tmp_path)
    text = pages["text"][0]
    # "% who favor ...": strongly and in all, for each group, read off the chart
    assert "Rep/Lean Rep" in text and "Dem/Lean Dem" in text
    assert any(row.startswith("Rep/Lean Rep |") for row in text.split("\n\n"))
    assert "sizable partisan divides" not in text  # the page's paragraphs are not read twice
