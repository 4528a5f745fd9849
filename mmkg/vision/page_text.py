"""Page text from OCR for PDF pages without a text layer (scanned pages, slides exported as pictures), and for the
drawings of text-layer pages whose labels are outlines (``mmkg.ingest.pdf_drawings``).

Ingest renders such a page whole (``images`` role ``page_render``; a drawing's page without its text objects,
role ``drawing_render``, whose OCR text follows the page's own); this module reads the render
with the same ``OcrEngine`` and ``OcrCache`` that grounding uses, so every image content is OCRed
once, and lays the lines out in reading order so the page text can be chunked, parsed, embedded
and searched like a text-layer page.

Offsets: a document's OCR page texts are appended after its text layer, each preceded by a blank
line, in page order: ``documents.text + "\\n\\n" + page_1_ocr + "\\n\\n" + page_2_ocr ...``.
``char_start`` of a page-text row is its offset in that extended text, so chunk, sentence and
mention offsets of OCR text stay document offsets (unique, ordered) and never collide with
text-layer offsets (those are all < ``len(documents.text)``). ``extended_text`` rebuilds it.

Tables on such a page (a slide's table, a scanned statement) are read as tables: the OCR boxes, converted
to the page's points, go through the same aligned-table finder as a text-layer page's words
(``mmkg.ingest.pdf_tables``), and each row is added after the page's reading-order text with its column
headers ("TELEVISION | 2012: 130 | ... | CAGR: 14.7%"), as ``mmkg.ingest.pdf`` does for text-layer pages.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from mmkg import schemas
from mmkg.ingest.base import Limits
from mmkg.ingest.pdf_tables import aligned_tables, render
from mmkg.vision.base import Box, OcrLine

log = logging.getLogger(__name__)

PAGE_BREAK = "\n\n"
SOURCE_OCR = "ocr"
#: the images OCR reads as page text: renders of image-only pages, and of drawings whose labels are outlines
#: (a page with a text layer: its OCR text follows that page's own, ``mmkg.ingest.pdf_drawings``)
RENDER_ROLES = ("page_render", "drawing_render")

# reading order: a gap between columns must be this many median line heights wide to split them
COLUMN_GAP = 1.5
# a vertical gap over this many median line heights starts a new paragraph
PARAGRAPH_GAP = 0.9


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return min(a1, b1) - max(a0, b0)


def _gaps(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Empty intervals between the union of ``spans`` (sorted), as (gap_start, gap_end)."""
    out: list[tuple[float, float]] = []
    spans = sorted(spans)
    end = spans[0][1]
    for s, e in spans[1:]:
        if s > end:
            out.append((end, s))
        end = max(end, e)
    return out


def _rows(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Lines grouped into visual rows (vertical overlap of at least half the smaller height)."""
    rows: list[list[OcrLine]] = []
    for ln in sorted(lines, key=lambda x: (x.box[1], x.box[0])):
        b = ln.box
        if rows:
            r = rows[-1]
            top, bottom = min(x.box[1] for x in r), max(x.box[3] for x in r)
            if _overlap(top, bottom, b[1], b[3]) >= 0.5 * min(bottom - top, b[3] - b[1]):
                r.append(ln)
                continue
        rows.append([ln])
    return [sorted(r, key=lambda x: x.box[0]) for r in rows]


def _xy_cut(lines: list[OcrLine], unit: float) -> list[list[OcrLine]]:
    """Recursive XY-cut: split at the widest whitespace band, columns before rows when wide enough.

    Returns blocks (lists of lines) in reading order: top to bottom, and left column before right.
    """
    if len(lines) <= 1:
        return [lines]
    boxes = [ln.box for ln in lines]
    xgaps = _gaps([(b[0], b[2]) for b in boxes])
    ygaps = _gaps([(b[1], b[3]) for b in boxes])
    xbest = max(xgaps, key=lambda g: g[1] - g[0], default=None)
    ybest = max(ygaps, key=lambda g: g[1] - g[0], default=None)
    if ybest is None:
        return [lines]  # one visual row: its boxes are joined left to right, never split into columns
    xwidth = xbest[1] - xbest[0] if xbest else 0.0
    ywidth = ybest[1] - ybest[0]
    # a column split needs a wide vertical band; it wins over a row split only when wider
    if xbest and xwidth >= COLUMN_GAP * unit and xwidth >= ywidth:
        cut, axis = (xbest[0] + xbest[1]) / 2, 0
    else:
        cut, axis = (ybest[0] + ybest[1]) / 2, 1
    first = [ln for ln in lines if (ln.box[0] + ln.box[2] if axis == 0 else ln.box[1] + ln.box[3]) / 2 < cut]
    second = [ln for ln in lines if (ln.box[0] + ln.box[2] if axis == 0 else ln.box[1] + ln.box[3]) / 2 >= cut]
    if not first or not second:
        return [lines]
    return _xy_cut(first, unit) + _xy_cut(second, unit)


def _bounds(block: list[OcrLine]) -> Box:
    return (
        min(ln.box[0] for ln in block),
        min(ln.box[1] for ln in block),
        max(ln.box[2] for ln in block),
        max(ln.box[3] for ln in block),
    )


def reading_order_text(lines: Sequence[OcrLine]) -> str:
    """Page text in reading order: rows joined by newlines, paragraphs by a blank line.

    Columns separated by a wide gap are read one after the other (XY-cut); within a block, boxes
    on the same visual row are joined left to right by a space. A new paragraph starts at a
    column change or where the vertical gap exceeds ``PARAGRAPH_GAP`` median line heights, so the
    chunker's paragraph blocks follow the page's layout.
    """
    lines = [ln for ln in lines if ln.text.strip()]
    if not lines:
        return ""
    unit = statistics.median(max(ln.box[3] - ln.box[1], 1.0) for ln in lines)
    paragraphs: list[list[str]] = []
    prev: Box | None = None
    for block in _xy_cut(lines, unit):
        b = _bounds(block)
        same_column = prev is not None and _overlap(prev[0], prev[2], b[0], b[2]) > 0
        if prev is None or not same_column or b[1] - prev[3] > PARAGRAPH_GAP * unit:
            paragraphs.append([])
        paragraphs[-1].extend(" ".join(ln.text.strip() for ln in row) for row in _rows(block))
        prev = b
    return PAGE_BREAK.join("\n".join(p) for p in paragraphs if p)


def ocr_words(lines: Sequence[OcrLine], scale: float) -> list[dict[str, float | str]]:
    """OCR lines as the word boxes ``mmkg.ingest.pdf_tables`` reads (pdfplumber's keys, in page points, y down).

    A render at ``scale`` pixels per point is scaled back to points, where the finder's gaps and tolerances
    are set. OCR gives one box per run of text, not per word: a line's words are placed by their share of its
    characters. Every word takes its line's vertical centre and the page's median line height, so the boxes
    of one visual row (a label and the numbers beside it, which OCR reads with different heights) share a top.
    """
    lines = [ln for ln in lines if ln.text.strip()]
    if not lines:
        return []
    height = statistics.median(max(ln.box[3] - ln.box[1], 1.0) for ln in lines)
    out: list[dict[str, float | str]] = []
    for ln in lines:
        x0, y0, x1, y1 = ln.box
        text, pos = ln.text, 0
        per_char = (x1 - x0) / max(len(text), 1)
        centre = (y0 + y1) / 2
        for word in text.split():
            at = text.find(word, pos)
            pos = at + len(word)
            out.append({"text": word, "x0": (x0 + per_char * at) / scale, "x1": (x0 + per_char * pos) / scale,
                        "top": (centre - height / 2) / scale, "bottom": (centre + height / 2) / scale})  # fmt: skip
    return out


def ocr_table_rows(lines: Sequence[OcrLine], scale: float = Limits.page_render_scale) -> list[str]:
    """The rows of the tables on an OCRed page, each with its label and column headers (module docstring)."""
    return [row for table in aligned_tables(ocr_words(lines, scale)) for row in render(table)]


def extended_text(doc_text: str, page_texts: Sequence[tuple[int, str]]) -> str:
    """The document text with its OCR page texts appended, given (char_start, text) in order."""
    out = doc_text
    for start, text in page_texts:
        if start != len(out) + len(PAGE_BREAK):
            raise ValueError(
                f"page_text char_start {start} does not follow the document text (expected {len(out) + 2}); "
                "re-materialize page_text after documents"
            )
        out += PAGE_BREAK + text
    return out


def ocr_pages(
    documents: pl.DataFrame,
    images: pl.DataFrame,
    read: Callable[[str, Path], list[OcrLine]],
    path_for: Callable[[str], Path],
    failed: Callable[[dict, Exception], None] | None = None,
    tables: bool = True,
    scale: float = Limits.page_render_scale,
) -> pl.DataFrame:
    """``PAGE_TEXT`` rows: the OCR text of every rendered PDF page (image-only, or a drawing's render), in reading
    order, then the rows of its tables with their headers (``tables``; the renders were made at ``scale`` pixels
    per point).

    ``read(image_id, path)`` returns OCR lines (use ``OcrEngine.read_cached`` with the shared cache);
    ``path_for(blob_path)`` maps a stored blob to its file. A page whose render cannot be read is
    reported to ``failed`` (or raised when none is given) and left out; a page with no legible text
    gets no row.
    """
    renders = images.filter(pl.col("role").is_in(RENDER_ROLES)).sort("doc_id", "page", "occurrence")
    lengths = dict(documents.select("doc_id", pl.col("text").str.len_chars()).iter_rows())
    rows: list[dict] = []
    ends: dict[str, int] = {}
    for img in renders.unique(["doc_id", "page"], keep="first", maintain_order=True).iter_rows(named=True):
        doc_id = img["doc_id"]
        if doc_id not in lengths:
            raise ValueError(f"page render {img['source']} belongs to unknown document {doc_id}")
        try:
            lines = read(img["image_id"], path_for(img["blob_path"]))
        except Exception as exc:
            if failed is None:
                raise
            failed(img, exc)
            continue
        text = reading_order_text(lines)
        if not text:
            continue
        try:
            table_rows = ocr_table_rows(lines, scale) if tables else []
        except (ValueError, ArithmeticError, IndexError, KeyError, TypeError) as exc:  # the page's text is kept
            log.warning("page %s of %s: tables not read (%s: %s)", img["page"], img["source"], type(exc).__name__, exc)
            table_rows = []
        if table_rows:
            text = PAGE_BREAK.join([text, *table_rows])
        start = ends.get(doc_id, lengths[doc_id]) + len(PAGE_BREAK)
        ends[doc_id] = start + len(text)
        rows.append(
            {
                "doc_id": doc_id,
                "partition": img["partition"],
                "page": img["page"],
                "image_id": img["image_id"],
                "source": SOURCE_OCR,
                "char_start": start,
                "text": text,
                "n_lines": len(lines),
                "mean_score": statistics.fmean(ln.score for ln in lines),
                "n_table_rows": len(table_rows),
            }
        )
    return schemas.frame(rows, schemas.PAGE_TEXT)
