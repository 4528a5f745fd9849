"""Which PDF pages need pdfplumber for a ruled table, and can pdfium's drawn lines tell them apart cheaply?

    python benchmarks/ruled_pages.py ../shared/datasets/mmlongbench-dev/documents
    python benchmarks/ruled_pages.py ../shared/datasets/mmlongbench-val/documents

The build reads every page twice: pdfium for its text, then pdfplumber for its tables
(``mmkg.ingest.pdf_tables.page_tables``), and pdfplumber's parsing of the page's objects is most of the
ingest step's time. This counts, per page: whether ``ruled_tables`` (the finder that needs pdfplumber's
lines and rectangles) finds a table there, and how many of pdfium's path objects look like rules (thin
and longer than 10 points; a rectangle counts half, it can be a cell). Printed: the pages; those with a
ruled table; for each threshold of rule-like paths, how many pages reach it and how many of the ruled-table
pages among them; and the seconds of the pdfium check against pdfplumber's words and ruled tables. Nothing
in the build changes.
"""

from __future__ import annotations

import io
import logging
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

THRESHOLDS = (1, 2, 3, 4, 6)


def rule_like_paths(page: object) -> float:
    """Path objects of a pdfium page that look like table rules: thin lines, and (half each) rectangles."""
    import pypdfium2.raw as raw

    n = 0.0
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=3):  # type: ignore[attr-defined]
        left, bottom, right, top = obj.get_bounds()
        width, height = right - left, top - bottom
        if min(width, height) < 3 and max(width, height) > 10:
            n += 1
        elif width > 10 and height > 5:
            n += 0.5
    return n


def main(documents: Annotated[Path, typer.Argument(help="A folder of PDFs.")]) -> None:
    import pdfplumber
    import pypdfium2 as pdfium

    from mmkg.ingest.pdf_tables import X_TOLERANCE, _lines, ruled_tables

    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    pages = ruled = 0
    reached, covered = Counter(), Counter()
    t_pdfium = t_plumber = 0.0
    for path in sorted(documents.glob("*.pdf")):
        data = path.read_bytes()
        pdf, plumber = pdfium.PdfDocument(data), pdfplumber.open(io.BytesIO(data))
        for i in range(len(pdf)):
            start = time.perf_counter()
            rules = rule_like_paths(pdf[i])
            t_pdfium += time.perf_counter() - start
            start = time.perf_counter()
            page = plumber.pages[i]
            words = page.extract_words(x_tolerance=X_TOLERANCE)
            has_ruled = bool(words) and bool(ruled_tables(page, _lines(words)))
            page.close()
            t_plumber += time.perf_counter() - start
            pages += 1
            ruled += has_ruled
            for k in THRESHOLDS:
                reached[k] += rules >= k
                covered[k] += has_ruled and rules >= k
        plumber.close()
        pdf.close()
    print(f"{documents}: {pages} pages, {ruled} with a ruled table")
    for k in THRESHOLDS:
        print(f"  >= {k} rule-like paths: {reached[k]} pages ({reached[k] / pages:.0%}), "
              f"{covered[k]} of the {ruled} ruled-table pages")  # fmt: skip
    print(f"  seconds: pdfium's paths {t_pdfium:.1f}, pdfplumber's words and ruled tables {t_plumber:.1f}")


if __name__ == "__main__":
    typer.run(main)
