"""PDF reader (pypdfium2): one text unit per page, embedded images, renders of image-only pages and of drawings.

The page's tables (``mmkg.ingest.pdf_tables``, over pdfplumber) follow its text, one row per paragraph with
its column headers, row label and caption ("Net income | 2015: $122,641 | 2014: $266,799"), so retrieval
and the reader see each cell with the labels that say what it is. The flattened cells stay in the page
text where pdfium put them; ``Limits.pdf_tables`` turns the rows off. pdfplumber parses only the pages
pdfium says may hold a table (``mmkg.ingest.pdf_table_pages``): its parse of every page was most of the
reading's time. Those pages go to worker processes as they are found (``mmkg.ingest.pdf_table_workers``,
``Limits.pdf_table_processes``), so pdfplumber reads them while pdfium reads the pages after them; the rows are
added to their pages when the file has been read.

Pages keep their 1-based number through ``page_starts``. An embedded image is placed at the text
offset of the nearest character on its page, so it attaches to the chunk it sits next to. A page
with (almost) no text layer, such as a scanned page or a slide exported as a picture, is rendered
whole so that OCR and image encoders downstream can still read it; a page whose charts or diagrams draw
their labels as outlines is rendered without its text objects (``mmkg.ingest.pdf_drawings``), for OCR to
read what its text layer lacks.
"""

from __future__ import annotations

import hashlib
import math
import time

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from mmkg.ingest.base import ImageRef, Limits, Rejected, Rejection, SourceDocument
from mmkg.ingest.pdf_drawings import outlined_glyphs, render_drawing
from mmkg.ingest.pdf_table_pages import may_hold_table
from mmkg.ingest.pdf_table_workers import TableRows
from mmkg.ingest.pdf_tables import page_tables

TABLE_BREAK = "\n\n"  # between a page's text and its table rows, and between rows: each row is a paragraph


def _may_hold_table(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> bool:
    """Whether pdfplumber should parse the page for tables (``mmkg.ingest.pdf_table_pages``); where pdfium
    cannot walk the page's objects, it is parsed anyway (and any failure there recorded by ``TableRows``)."""
    try:
        return may_hold_table(page, textpage)
    except (pdfium.PdfiumError, ValueError, OSError):
        return True


def _nearest_char(textpage: pdfium.PdfTextPage, n_chars: int, box: tuple[float, float, float, float]) -> int | None:
    """Index of the character closest to an image's bounding box (PDF units, y up)."""
    left, bottom, right, top = box
    best, best_d = None, math.inf
    for i in range(n_chars):
        cl, cb, cr, ct = textpage.get_charbox(i)
        if cr <= cl:  # generated characters (line breaks) have empty boxes
            continue
        cx, cy = (cl + cr) / 2, (cb + ct) / 2
        dx = max(left - cx, 0.0, cx - right)
        dy = max(bottom - cy, 0.0, cy - top)
        d = dx * dx + dy * dy
        if d < best_d:
            best, best_d = i, d
    return best


def _drawing(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, rel: str, page_no: int, offset: int, limits: Limits,
             images: list[ImageRef], rejections: list[Rejection]) -> int:  # fmt: skip
    """Render the page's drawings for OCR when they hold ``limits.min_outlined_glyphs`` glyph outlines
    (``mmkg.ingest.pdf_drawings``). A page pdfium cannot walk or render keeps its text and is recorded as
    rejected; the count of renders left out by the picture budget is returned."""
    try:
        if outlined_glyphs(page, limits.min_outlined_glyphs) < limits.min_outlined_glyphs:
            return 0
        if len(images) >= limits.max_images_per_document:
            return 1
        textpage.close()  # the render takes the page's text objects out
        pil = render_drawing(page, limits.page_render_scale)
    except (pdfium.PdfiumError, ValueError) as exc:
        rejections.append(Rejection(rel, f"page {page_no}: drawings not rendered for OCR ({exc}); its text is kept",
                                    f"{rel}#page={page_no}&drawing", stage="drawings"))  # fmt: skip
        return 0
    images.append(ImageRef(None, f"{rel}#page={page_no}&drawing", "drawing_render", offset, page_no, pil=pil))
    return 0


def read_pdf(data: bytes, rel: str, limits: Limits) -> tuple[SourceDocument, list[Rejection]]:
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise Rejected(f"cannot open PDF ({exc}); the file is corrupt, truncated or password-protected") from exc
    rejections: list[Rejection] = []
    texts: list[str] = []
    page_starts: list[int] = []
    images: list[ImageRef] = []
    offset = 0
    deadline = time.monotonic() + limits.max_file_seconds
    skipped_images = 0
    tables = TableRows(data, rel, limits.pdf_table_processes, rejections, page_tables) if limits.pdf_tables else None
    try:
        n_pages = len(pdf)
        if n_pages == 0:
            raise Rejected("PDF has no pages")
        if n_pages > limits.max_pages:
            rejections.append(
                Rejection(
                    rel,
                    f"PDF has {n_pages:,} pages; read the first {limits.max_pages:,} (budget MMKG_MAX_PAGES)",
                    stage="budget",
                )
            )
        for index in range(min(n_pages, limits.max_pages)):
            page_no = index + 1
            if index and time.monotonic() > deadline:
                rejections.append(
                    Rejection(
                        rel,
                        f"reading took over {limits.max_file_seconds:g} s; read pages 1-{index} of {n_pages:,} "
                        "(budget MMKG_MAX_FILE_SECONDS)",
                        stage="budget",
                    )
                )
                break
            page_starts.append(offset)
            try:
                page = pdf[index]
                textpage = page.get_textpage()
                raw = textpage.get_text_range()
                n_chars = textpage.count_chars()
            except pdfium.PdfiumError as exc:
                rejections.append(Rejection(rel, f"page {page_no}: cannot read text layer ({exc})", f"page {page_no}"))
                texts.append("")
                offset += 2
                continue
            norm = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
            text = norm.strip("\n ")
            lead = len(norm) - len(norm.lstrip("\n "))
            # asked before the drawing render below takes the page's text objects out
            if tables is not None and text and _may_hold_table(page, textpage):
                tables.add(index)
            for k, obj in enumerate(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3)):
                if len(images) >= limits.max_images_per_document:  # decoded pictures are held until stored
                    skipped_images += 1
                    continue
                source = f"{rel}#page={page_no}&image={k}"
                try:
                    pil = obj.get_bitmap(render=False).to_pil()
                except pdfium.PdfiumError:
                    try:
                        pil = obj.get_bitmap(render=True).to_pil()
                    except pdfium.PdfiumError as exc:
                        rejections.append(
                            Rejection(rel, f"page {page_no}: embedded image {k} cannot be decoded ({exc})", source)
                        )
                        continue
                if min(pil.size) < limits.min_image_side:
                    continue  # rules, bullets and spacer images are layout, not content
                char = _nearest_char(textpage, n_chars, obj.get_bounds()) if text else None
                local = None
                if char is not None:
                    local = char - raw[:char].count("\r\n") - raw[:char].count("\x00") - lead
                    local = min(max(local, 0), len(text))
                images.append(
                    ImageRef(
                        None, source, "embedded", offset + local if local is not None else offset, page_no, pil=pil
                    )
                )
            if len(text) < limits.min_page_chars and len(images) >= limits.max_images_per_document:
                skipped_images += 1
            elif len(text) < limits.min_page_chars:
                pil = page.render(scale=limits.page_render_scale).to_pil()
                images.append(ImageRef(None, f"{rel}#page={page_no}", "page_render", offset, page_no, pil=pil))
            elif limits.min_outlined_glyphs:
                skipped_images += _drawing(page, textpage, rel, page_no, offset, limits, images, rejections)
            texts.append(text)
            offset += len(text) + 2  # pages are joined by a blank line
            page.close()
        if tables is not None:
            _add_rows(tables.collect(deadline - time.monotonic()), texts, page_starts, images)
        if skipped_images:
            rejections.append(
                Rejection(
                    rel,
                    f"{skipped_images:,} more pictures after the first {limits.max_images_per_document:,} were not "
                    "decoded (budget MMKG_MAX_IMAGES_PER_DOCUMENT)",
                    stage="budget",
                )
            )
        title = _metadata_title(pdf) or next((ln.strip() for t in texts for ln in t.splitlines() if ln.strip()), "")
        outline = _outline(pdf, len(page_starts), rel, rejections)
    finally:
        pdf.close()
        if tables is not None:
            tables.close()
    doc = SourceDocument(
        source_path=rel,
        record_key="",
        kind="pdf",
        title=title[:200] or rel.rsplit("/", 1)[-1],
        text="\n\n".join(texts),
        content_sha256=hashlib.sha256(data).hexdigest(),
        n_bytes=len(data),
        page_starts=page_starts,
        images=images,
        outline=outline,
    )
    return doc, rejections


def _add_rows(rows: dict[int, list[str]], texts: list[str], page_starts: list[int], images: list[ImageRef]) -> None:
    """Each page's table rows after its text (``TABLE_BREAK`` apart), and the pages' starts and the pictures'
    offsets moved by the rows of the pages before them."""
    shift = 0
    moved = []
    for i, text in enumerate(texts):
        page_starts[i] += shift
        moved.append(shift)
        if rows.get(i):
            texts[i] = TABLE_BREAK.join([text, *rows[i]])
            shift += len(texts[i]) - len(text)
    for image in images:
        if image.page is not None and image.char_offset is not None and 0 < image.page <= len(moved):
            image.char_offset += moved[image.page - 1]


#: outline entries kept per PDF (a 10-K's bookmarks run to a few hundred; a malformed one can loop)
MAX_OUTLINE = 2000


def _outline(pdf: pdfium.PdfDocument, n_pages: int, rel: str, rejections: list[Rejection]) -> list[dict]:
    """The PDF's bookmarks as ``{level, title, page}`` (level 1 is the top), for the pages read; an entry that
    points at no page of them is left out. An outline pdfium cannot walk is recorded, and the text kept."""
    out: list[dict] = []
    try:
        for item in pdf.get_toc(max_depth=6):
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            title = " ".join((item.get_title() or "").split())
            if title and index is not None and 0 <= index < n_pages:
                out.append({"level": item.level + 1, "title": title[:200], "page": index + 1})
            if len(out) >= MAX_OUTLINE:
                break
    except (pdfium.PdfiumError, ValueError, RuntimeError) as exc:
        rejections.append(Rejection(rel, f"outline not read ({type(exc).__name__}: {exc})", stage="outline"))
    return out


def _metadata_title(pdf: pdfium.PdfDocument) -> str:
    try:
        return (pdf.get_metadata_dict().get("Title") or "").strip()
    except pdfium.PdfiumError:
        return ""
