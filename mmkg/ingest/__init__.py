"""Ingest: corpus partition folders to documents, images and rejected-file tables.

The names below are imported on first use, so that ``mmkg.ingest.fingerprint`` (what ``mmkg index
status`` reads) does not import the PDF, image and media readers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmkg.ingest.base import Limits, Rejected
    from mmkg.ingest.files import list_partitions
    from mmkg.ingest.images import ImageStore
    from mmkg.ingest.partition import SUPPORTED, IngestResult, ingest_partition

_WHERE = {
    "Limits": "mmkg.ingest.base",
    "Rejected": "mmkg.ingest.base",
    "ImageStore": "mmkg.ingest.images",
    "SUPPORTED": "mmkg.ingest.partition",
    "IngestResult": "mmkg.ingest.partition",
    "ingest_partition": "mmkg.ingest.partition",
    "list_partitions": "mmkg.ingest.files",
}
__all__ = ["SUPPORTED", "ImageStore", "IngestResult", "Limits", "Rejected", "ingest_partition", "list_partitions"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
