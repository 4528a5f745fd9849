"""OCR page text for the ``chunks`` step: image-only PDF pages read once, through the shared OCR cache.

Kept apart from ``assets/text.py`` so the text group stays about chunking and parsing; the
``page_text`` table itself is an output of the ``chunks`` multi-asset, so every job or test that
materializes ``chunks`` gets OCR pages without listing another asset.
"""

from __future__ import annotations

import logging
import statistics
from pathlib import Path

import polars as pl

from mmkg import schemas
from mmkg.ingest.base import Limits
from mmkg.vision.page_text import RENDER_ROLES, ocr_pages
from resources import GroundingResource, StorageResource


def read_page_text(
    documents: pl.DataFrame,
    images: pl.DataFrame,
    grounding: GroundingResource,
    storage: StorageResource,
    log: logging.Logger,
    limits: Limits,
) -> tuple[pl.DataFrame, dict]:
    """``page_text`` rows and run metadata; the engine and cache are those ``ground_images`` uses. A page's
    table rows are added as a text-layer page's are, by the corpus's ``limits`` (``pdf_tables``, the render scale
    ingest used)."""
    renders = images.filter(pl.col("role").is_in(RENDER_ROLES))
    if renders.is_empty():
        return schemas.empty(schemas.PAGE_TEXT), {"page_renders": 0, "drawing_renders": 0, "ocr_calls": 0,
                                                  "ocr_failures": 0}  # fmt: skip
    ocr = grounding.ocr_grounder(storage.path)
    engine, cache = ocr.engine, ocr.cache
    failures: list[str] = []
    done = [0]

    def read(image_id: str, path: Path):
        lines = engine.read_cached(image_id, path, cache)
        done[0] += 1
        if done[0] % 10 == 0 or done[0] == renders.height:
            log.info(f"OCR page text {done[0]}/{renders.height} renders ({engine.calls} read, rest cached)")
        return lines

    def failed(img: dict, exc: Exception) -> None:
        msg = f"page {img['page']} of {img['source']}: OCR failed ({type(exc).__name__}: {exc})"
        log.warning(msg)
        failures.append(msg)

    store = storage.image_store()
    pages = ocr_pages(documents, images, read, store.path_for, failed, tables=limits.pdf_tables,
                      scale=limits.page_render_scale)  # fmt: skip
    stats = {
        "page_renders": renders.filter(pl.col("role") == "page_render").height,
        "drawing_renders": renders.filter(pl.col("role") == "drawing_render").height,  # pages with a text layer
        "pages_with_text": pages.height,
        "ocr_calls": engine.calls,  # 0 on a re-run: every render came from the cache
        "ocr_failures": len(failures),
        "ocr_table_rows": int(pages["n_table_rows"].sum()) if pages.height else 0,  # added with their headers
        "mean_line_score": round(statistics.fmean(pages["mean_score"]), 3) if pages.height else 0.0,
    }
    return pages, stats
