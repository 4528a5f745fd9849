"""Vector drawings whose words are outlines: a chart or a diagram a PDF draws with its labels as shapes.

Survey reports, brochures and manuals often draw their charts and diagrams as vector paths, labels and values
included ("Rep/Lean Rep 81 93 37 68 14 38", "Headphone jack", "USB 2.0 port"): the glyphs are outlines, not
text, so the page's text layer holds the paragraphs around the chart and none of what it says. A page with a
text layer is not rendered for OCR (``mmkg.ingest.pdf`` renders only pages with almost no text), so these
words reached no channel.

``outlined_glyphs`` counts the page's path objects shaped like glyphs: at most ``GLYPH_MAX_SIDE`` points
wide and tall, drawn with at least ``GLYPH_MIN_SEGMENTS`` segments (a letter's or a digit's curves; a table's
ruled cell or a chart's bar has four or five). A page with ``Limits.min_outlined_glyphs`` of them or more is
rendered by ``render_drawing`` with its text objects taken out first, so OCR reads only what the text layer
lacks, never the paragraphs twice. The render is an ``images`` row of role ``drawing_render``; the
``page_text`` asset OCRs it like a ``page_render`` and adds its lines, and its tables' rows with their headers,
after the page's own text (``mmkg.vision.page_text``).

Counted on the 43 dev and validation PDFs (1,289 validation pages): markers of a line chart (small circles)
count as glyphs too, so some renders find little to read; the OCR calls they cost are reported by the
``page_text`` asset. Hand-written: pdfium exposes the path objects; no maintained library says which paths are
letters.
"""

from __future__ import annotations

from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

GLYPH_MAX_SIDE = 14.0  # points: a glyph of up to about 18-point type
GLYPH_MIN_SEGMENTS = 10  # path segments of a glyph's outline (a rectangle has 4 or 5)
_DEPTH = 3  # form XObjects nested this deep are searched


def outlined_glyphs(page: pdfium.PdfPage, enough: int | None = None) -> int:
    """How many path objects on ``page`` are shaped like glyphs (small, with the curves of a letter); the count
    stops at ``enough`` when given (the threshold: no need to walk the rest of the page)."""
    n = 0
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=_DEPTH):
        left, bottom, right, top = obj.get_bounds()
        if right - left > GLYPH_MAX_SIDE or top - bottom > GLYPH_MAX_SIDE:
            continue
        if pdfium_c.FPDFPath_CountSegments(obj.raw) >= GLYPH_MIN_SEGMENTS:
            n += 1
            if enough is not None and n >= enough:
                break
    return n


def render_drawing(page: pdfium.PdfPage, scale: float) -> Any:
    """A render of ``page`` (a PIL image, ``scale`` pixels per point) without its text objects: what OCR should
    read is what the text layer does not already hold (text in form XObjects too). The page is changed in memory
    only: call this last, after its text and pictures were read and its text page closed, and close it after."""
    for obj in list(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_TEXT], max_depth=_DEPTH)):
        page.remove_obj(obj)
    return page.render(scale=scale).to_pil()
