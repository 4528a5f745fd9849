"""Shared types of the ingest readers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class Rejected(Exception):
    """A source (file, record or image) that cannot be used; the message says why and how to fix it."""


@dataclass(frozen=True)
class Limits:
    """Guards applied to every source file and image."""

    max_image_pixels: int = 40_000_000
    min_image_side: int = 8
    max_file_bytes: int = 512 * 1024 * 1024
    page_render_scale: float = 2.0  # ~144 dpi renders for PDF pages without a text layer
    min_page_chars: int = 20  # a PDF page with less text than this is rendered as an image


@dataclass
class ImageRef:
    """An image a document refers to, before it is decoded and stored."""

    data: bytes | None  # raw bytes (files, PDF streams) or None when ``pil`` is given
    source: str
    role: str  # embedded | linked | standalone | page_render
    char_offset: int | None = None
    page: int | None = None
    alt_text: str = ""
    pil: object | None = None  # a PIL image produced by a renderer or decoder


@dataclass
class SourceDocument:
    """One document as a reader produced it: text with page boundaries plus image references."""

    source_path: str
    record_key: str
    kind: str
    title: str
    text: str
    content_sha256: str
    n_bytes: int
    page_starts: list[int] = field(default_factory=lambda: [0])
    images: list[ImageRef] = field(default_factory=list)


@dataclass
class Rejection:
    source_path: str
    reason: str
    record_key: str = ""
    stage: str = "ingest"


def rel_posix(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
