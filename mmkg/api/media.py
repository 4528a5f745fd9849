"""Which file the page's player plays for a recording of the index: ``GET /media/{doc_id}``.

A video or audio document's transcript chunks carry the seconds they cover; the page plays the recording from the
cited second. The recording is the corpus file itself (the index keeps no copy of media), so it is found under the
server's corpus root by the document's ``source_path``, only for documents of kind ``video`` or ``audio``, only
inside the root, and only while its size is the one the index was built from: a recording edited since would play
the wrong moment. Starlette's ``FileResponse`` answers HTTP range requests, which the browser's player seeks with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmkg.ingest.media import MEDIA_EXT


class MediaUnavailable(LookupError):
    """The recording cannot be played; ``status`` is the HTTP status and the message says why and what to do."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def recording(index: Any, doc_id: str, corpus_root: Path | None) -> Path:
    """The corpus file of the video or audio document ``doc_id`` of ``index``; raises ``MediaUnavailable``."""
    import polars as pl

    rows = index.documents.filter(pl.col("doc_id") == doc_id)
    if rows.is_empty():
        raise MediaUnavailable(404, f"no document {doc_id!r} in index version {index.version}")
    doc = rows.row(0, named=True)
    if doc["kind"] not in ("video", "audio"):
        raise MediaUnavailable(404, f"document {doc['source_path']} is a {doc['kind']} document, not a recording")
    if corpus_root is None:
        raise MediaUnavailable(
            404, "this server has no corpus root, so it cannot play recordings: start it in the project, or with "
                 "mmkg serve --corpus PATH",
        )  # fmt: skip
    root = Path(corpus_root).resolve()
    path = (root / doc["source_path"]).resolve()
    if not path.is_relative_to(root) or path.suffix.lower() not in MEDIA_EXT:
        raise MediaUnavailable(404, f"{doc['source_path']} is not a recording inside the corpus root")
    if not path.is_file():
        raise MediaUnavailable(
            404, f"{doc['source_path']} is no longer in the corpus (index version {index.version} still cites it)"
        )
    size = doc.get("n_bytes")
    if size is not None and path.stat().st_size != size:
        raise MediaUnavailable(
            409, f"{doc['source_path']} changed since index version {index.version} was built, so its cited moments "
                 "may be wrong; re-index it (mmkg index update) to play it",
        )  # fmt: skip
    return path
