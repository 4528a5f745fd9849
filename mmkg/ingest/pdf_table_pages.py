"""Which PDF pages may hold a table, told from pdfium's objects before pdfplumber parses the page.

``mmkg.ingest.pdf_tables`` reads tables from pdfplumber's words and drawn lines, and pdfplumber's parse of
a page (pdfminer interpreting its content stream in Python) is most of the ingest step's time: 55 of 64 s
on the dev PDFs, against 5 s for the table finders themselves. Most pages hold no table. This module asks
pdfium, which has already parsed the page for its text, two questions a table on the page must answer yes
to, and ``mmkg.ingest.pdf`` parses the page with pdfplumber only where one of them does:

- **a grid**: pdfplumber's own lines strategy (``pdfplumber.table.TableFinder``: snapping, joining,
  intersections, cells) run over the page's edges as pdfplumber would list them (lines, rectangles' sides,
  the level and plumb pieces of curves, pdfminer's reading of each path), but read from pdfium's path
  objects; a grid of a header and two rows by two columns, what ``ruled_tables`` keeps before it reads the
  cells' text, lets the page through;
- **aligned rows**: ``aligned_tables`` itself, run over words built from pdfium's characters the way
  pdfplumber builds them (characters on one line, split at spaces and at gaps wider than its
  ``x_tolerance``). Positions differ from pdfminer's by fractions of a point, so this is a test for the
  page, not the rows: the rows always come from pdfplumber.

A page that answers no to both is not parsed by pdfplumber; ``benchmarks/table_pages.py`` checks that on
a folder of PDFs the table rows are the same with and without this test, page for page, and times both.
Hand-written (the edges and words; the grid logic is pdfplumber's) because no library answers "could
this page hold a table" without the full parse it avoids.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from mmkg.ingest.pdf_tables import MIN_COLUMNS, MIN_ROWS, X_TOLERANCE, aligned_tables

Y_TOLERANCE = 3.0  # pdfplumber's default y_tolerance (pdf_tables leaves it): tops this close are one word's line
MAX_FORM_DEPTH = 8  # forms inside forms (a figure pasted from another PDF) read this deep
LEVEL = 0.01  # points: pdfminer calls a piece level or plumb on exact equality; pdfium's floats differ by this


def _subpaths(path: Any, matrix: tuple[float, ...], height: float) -> list[list[tuple[float, float]]]:
    """One path object's subpaths as pdfminer reads them: the end point of each segment (a Bezier curve's
    control points left out), a closed subpath ending where it began; in page points, y down."""
    a, b, c, d, e, f = matrix
    x, y = pdfium_c.FS_FLOAT(), pdfium_c.FS_FLOAT()
    out: list[list[tuple[float, float]]] = []
    bezier = 0
    for i in range(pdfium_c.FPDFPath_CountSegments(path)):
        seg = pdfium_c.FPDFPath_GetPathSegment(path, i)
        kind = pdfium_c.FPDFPathSegment_GetType(seg)
        if kind == pdfium_c.FPDF_SEGMENT_BEZIERTO:
            bezier += 1
            if bezier % 3:  # pdfium lists a curve as its two control points, then its end
                continue
        if not pdfium_c.FPDFPathSegment_GetPoint(seg, x, y):
            continue
        point = (a * x.value + c * y.value + e, height - (b * x.value + d * y.value + f))
        if kind == pdfium_c.FPDF_SEGMENT_MOVETO or not out:
            out.append([point])
        else:
            out[-1].append(point)
        if pdfium_c.FPDFPathSegment_GetClose(seg):
            out[-1].append(out[-1][0])
    return out


def _edge(p0: tuple[float, float], p1: tuple[float, float], orientation: str) -> dict[str, Any]:
    x0, x1, top, bottom = min(p0[0], p1[0]), max(p0[0], p1[0]), min(p0[1], p1[1]), max(p0[1], p1[1])
    return {"object_type": "curve_edge", "x0": x0, "x1": x1, "top": top, "bottom": bottom, "doctop": top,
            "width": x1 - x0, "height": bottom - top, "orientation": orientation}  # fmt: skip


def _paths(handles: list[Any], matrix: tuple[float, ...], depth: int = 0) -> Iterator[tuple[Any, tuple[float, ...]]]:
    """Each path object under ``handles`` with its matrix into page space: a form's objects are drawn
    through the form's matrix, which pdfium reports apart from theirs."""
    m = pdfium_c.FS_MATRIX()
    for h in handles:
        if not pdfium_c.FPDFPageObj_GetMatrix(h, m):
            continue
        a, b, c, d, e, f = matrix
        own = (m.a * a + m.b * c, m.a * b + m.b * d, m.c * a + m.d * c, m.c * b + m.d * d,
               m.e * a + m.f * c + e, m.e * b + m.f * d + f)  # fmt: skip
        kind = pdfium_c.FPDFPageObj_GetType(h)
        if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
            yield h, own
        elif kind == pdfium_c.FPDF_PAGEOBJ_FORM and depth < MAX_FORM_DEPTH:
            inner = [pdfium_c.FPDFFormObj_GetObject(h, i) for i in range(pdfium_c.FPDFFormObj_CountObjects(h))]
            yield from _paths(inner, own, depth + 1)


def edges(page: pdfium.PdfPage) -> list[dict[str, Any]]:
    """The page's edges as pdfplumber's ``Page.edges`` lists them (lines, rectangles' sides, curves' level
    and plumb pieces), read from pdfium's path objects, forms' included."""
    height = page.get_height()
    top_level = [pdfium_c.FPDFPage_GetObject(page.raw, i) for i in range(pdfium_c.FPDFPage_CountObjects(page.raw))]
    out = []
    for path, matrix in _paths(top_level, (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)):
        for points in _subpaths(path, matrix, height):
            if len(points) == 2 or (len(points) == 3 and points[2] == points[0]):
                # a line ("m l" or "m l h"): pdfplumber calls one that is not level a vertical edge
                level = abs(points[0][1] - points[1][1]) <= LEVEL
                out.append(_edge(points[0], points[1], "h" if level else "v"))
                continue
            for p0, p1 in itertools.pairwise(points):
                if abs(p0[0] - p1[0]) <= LEVEL:
                    out.append(_edge(p0, p1, "v"))
                elif abs(p0[1] - p1[1]) <= LEVEL:
                    out.append(_edge(p0, p1, "h"))
    return out


def grids(page: pdfium.PdfPage) -> list[Any]:
    """The tables pdfplumber's lines strategy finds over pdfium's edges (``pdfplumber.table.Table``: cells and
    bbox; no text, which stays with pdfplumber's own parse)."""
    from pdfplumber.table import TableFinder  # imported with pdfplumber itself, when a PDF's tables are read

    found = edges(page)
    if not found:
        return []
    return TableFinder(SimpleNamespace(edges=found, bbox=(0, 0, page.get_width(), page.get_height()))).tables


def ruled_grid(page: pdfium.PdfPage) -> bool:
    """Whether the page has a grid of at least a header and ``MIN_ROWS`` rows by ``MIN_COLUMNS`` columns (what
    ``ruled_tables`` keeps, before it reads the cells' text)."""
    return any(len(t.rows) >= MIN_ROWS + 1 and len(t.columns) >= MIN_COLUMNS for t in grids(page))


def words(textpage: pdfium.PdfTextPage, page_height: float) -> list[dict[str, Any]]:
    """The page's words as pdfplumber writes them (text, x0, x1, top, bottom; y down from the page's top),
    from pdfium's characters and their loose boxes (the font's ascent and descent, the glyph's advance).

    Runs once on every PDF page without a ruled grid (``may_hold_table``), so the loop keeps the word being built
    as a list and pdfium's functions bound to locals: on the 43 dev and validation PDFs it gives the same words,
    page for page, as the earlier version that built a dict per character, in 0.63x its time.
    """
    raw = textpage.raw
    get_unicode, loose_box = pdfium_c.FPDFText_GetUnicode, pdfium_c.FPDFText_GetLooseCharBox
    char_box = pdfium_c.FPDFText_GetCharBox
    left, bottom, right, top = (pdfium_c.c_double() for _ in range(4))
    box = pdfium_c.FS_RECTF()
    built: list[list[Any]] = []  # [text, x0, x1, top, bottom] per word
    word: list[Any] = []
    prev_x0 = prev_x1 = prev_top = 0.0
    placed = False  # the last character was read and placed (False after a space or an unplaced character)
    for i in range(pdfium_c.FPDFText_CountChars(raw)):
        ch = chr(get_unicode(raw, i) or 32)
        if ch.isspace() or not ch.isprintable():
            placed = False
            continue
        if loose_box(raw, i, box):
            x0, x1, y_top, y_bottom = box.left, box.right, page_height - box.top, page_height - box.bottom
        elif char_box(raw, i, left, right, bottom, top):
            x0, x1, y_top, y_bottom = left.value, right.value, page_height - top.value, page_height - bottom.value
        else:
            placed = False
            continue
        # pdfplumber's test for a new word: a space, a step back, a gap past the tolerance, another line
        if not placed or x0 < prev_x0 or x0 > prev_x1 + X_TOLERANCE or abs(y_top - prev_top) > Y_TOLERANCE:
            word = [ch, x0, x1, y_top, y_bottom]
            built.append(word)
        else:
            word[0] += ch
            if x1 > word[2]:  # comparisons rather than max/min calls: this line runs for most characters
                word[2] = x1
            if y_top < word[3]:
                word[3] = y_top
            if y_bottom > word[4]:
                word[4] = y_bottom
        prev_x0, prev_x1, prev_top, placed = x0, x1, y_top, True
    return [{"text": w[0], "x0": w[1], "x1": w[2], "top": w[3], "bottom": w[4]} for w in built]


def may_hold_table(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> bool:
    """Whether pdfplumber could find a table on the page: a grid of edges, or aligned rows (module docstring)."""
    return ruled_grid(page) or bool(aligned_tables(words(textpage, page.get_height())))
