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
    pdf_tables: bool = True  # a PDF page's tables, one row per line with its headers, follow its text (pdf_tables.py)
    pdf_table_processes: int = 2  # worker processes that read those tables beside pdfium (0: the reading process)
    # a PDF page with a text layer whose drawings hold this many glyph-shaped paths (a chart or a diagram with its
    # labels as outlines) is rendered without its text for OCR (pdf_drawings.py); 0 turns it off
    min_outlined_glyphs: int = 20
    # time-based media (mmkg.ingest.media)
    max_media_seconds: float = 4 * 3600.0  # longer video or audio files are rejected
    frame_interval_s: float = 10.0  # a video frame at least this often ...
    max_frames_per_minute: int = 12  # ... plus scene changes, at most this many frames per minute in all
    scene_threshold: float = 0.12  # mean absolute change of a 16x16 colour thumbnail (0..1) that marks a cut
    media_window_s: float = 30.0  # a media "page": transcript and frames of this many seconds
    media_decode_seconds: float = 300.0  # wall-clock budget to decode one file's frames; the rest is skipped
    # budgets (mmkg.ingest.budget): work over one is cut and recorded as a rejected_files row of stage "budget"
    max_text_file_bytes: int = 64 * 1024 * 1024  # Markdown, text, JSON: parsed whole in memory, larger is rejected
    max_document_chars: int = 4_000_000  # text after this many characters is dropped (about 2,000 dense pages)
    max_sentence_chars: int = 5_000  # a stretch without a sentence end or line break keeps this many characters
    max_sentences_per_document: int = 30_000  # text after this many sentence ends is dropped
    max_pages: int = 2_000  # PDF pages after this many are not read
    max_images_per_document: int = 2_000  # pictures after this many in one document are not decoded
    max_file_seconds: float = 600.0  # reading one file (pages, records) stops after this many seconds
    max_transcribe_seconds: float = 2 * 3600.0  # speech recognition stops after this much of one recording's audio
    max_partition_chars: int = 200_000_000  # documents after this many characters in one partition are rejected

    @property
    def speech_seconds(self) -> float:
        """Seconds of one recording that speech recognition reads: the speech budget, or the media limit when that
        is lower (the speech step and ingest both stop there)."""
        return min(self.max_media_seconds, self.max_transcribe_seconds)


@dataclass
class ImageRef:
    """An image a document refers to, before it is decoded and stored."""

    data: bytes | None  # raw bytes (files, PDF streams) or None when ``pil`` is given
    source: str
    role: str  # embedded | linked | standalone | page_render | drawing_render | video_frame
    char_offset: int | None = None
    page: int | None = None
    alt_text: str = ""
    pil: object | None = None  # a PIL image produced by a renderer or decoder
    t_s: float | None = None  # video frames: seconds into the video


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
    duration_s: float | None = None  # video and audio
    time_segments: list[dict] | None = None  # transcript segments: char_start, char_end, t_start, t_end
    outline: list[dict] | None = None  # PDF bookmarks or Markdown headings: level (1 is the top), title, page
    transcript_source: str | None = None  # media: the subtitle sidecar read, or asr:<model>; None without one
    language: str | None = None  # media: the transcript's language (detected, or a sidecar's tag)


@dataclass
class Rejection:
    source_path: str
    reason: str
    record_key: str = ""
    stage: str = "ingest"


def rel_posix(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
