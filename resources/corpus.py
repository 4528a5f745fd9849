from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from mmkg.ingest import Limits, list_partitions
from mmkg.ingest.fingerprint import corpus_fingerprints, partition_fingerprint
from mmkg.settings import get_settings

_S = get_settings()


class CorpusResource(ConfigurableResource):
    """The corpus root (one sub-folder per partition) and the limits applied to its files."""

    root: str = Field(default=str(_S.corpus_root), description="Corpus root folder (MMKG_CORPUS_ROOT).")
    max_image_pixels: int = Field(default=_S.max_image_pixels, description="Reject images with more pixels.")
    min_image_side: int = Field(default=_S.min_image_side, description="Reject images with a shorter side.")
    max_file_bytes: int = Field(default=_S.max_file_bytes, description="Reject larger source files.")
    max_media_seconds: float = Field(default=_S.max_media_seconds, description="Reject longer video and audio.")
    media_decode_seconds: float = Field(
        default=_S.media_decode_seconds, description="Wall-clock budget to sample one video's frames."
    )
    frame_interval_s: float = Field(default=_S.frame_interval_s, description="A video frame at least this often (s).")
    max_frames_per_minute: int = Field(default=_S.max_frames_per_minute, description="Video frames a minute, at most.")
    # budgets (mmkg.ingest.budget): what is over one is cut and recorded as a rejected_files row of stage "budget"
    max_text_file_bytes: int = Field(default=_S.max_text_file_bytes, description="Reject larger Markdown/text/JSON.")
    max_document_chars: int = Field(default=_S.max_document_chars, description="Characters kept per document.")
    max_sentence_chars: int = Field(
        default=_S.max_sentence_chars, description="Characters kept of text with no sentence end or line break."
    )
    max_sentences_per_document: int = Field(
        default=_S.max_sentences_per_document, description="Sentences kept per document."
    )
    max_pages: int = Field(default=_S.max_pages, description="PDF pages read per file.")
    pdf_tables: bool = Field(default=_S.pdf_tables, description="Add PDF table rows with their headers to page text.")
    pdf_table_processes: int = Field(
        default=_S.pdf_table_processes, ge=0, description="Worker processes reading PDF tables (0: in the step)."
    )
    min_outlined_glyphs: int = Field(
        default=_S.min_outlined_glyphs, ge=0,
        description="OCR a PDF page's drawings with this many outlined glyphs (0: off).",
    )
    max_images_per_document: int = Field(default=_S.max_images_per_document, description="Pictures kept per document.")
    max_file_seconds: float = Field(default=_S.max_file_seconds, description="Seconds spent reading one PDF or JSON.")
    max_partition_chars: int = Field(default=_S.max_partition_chars, description="Characters kept per partition.")
    max_transcribe_seconds: float = Field(
        default=_S.max_transcribe_seconds, description="Seconds of one recording's audio that Whisper transcribes."
    )
    asr_model: str = Field(
        default=_S.asr_model,
        description="Whisper model that transcribes media without subtitles (MMKG_ASR_MODEL): empty, the installed "
        "Whisper base; a CTranslate2 or transformers Whisper folder; off: such media is ingested with frames only.",
    )
    asr_device: str = Field(default="cpu", description="Device of the ASR model: cpu, cuda or cuda:N.")
    fingerprint_mode: Literal["content", "stat"] = Field(
        default="content",
        description="How a partition's fingerprint is taken: file bytes (content) or size + mtime (stat, cheaper).",
    )

    @property
    def path(self) -> Path:
        return Path(self.root)

    def limits(self) -> Limits:
        """The ``Limits`` of every field this resource configures (the rest keep their defaults)."""
        return Limits(**{f.name: getattr(self, f.name) for f in fields(Limits) if f.name in type(self).model_fields})

    def transcriber(self, partition: str):
        """The ASR backend for the partition's media without subtitles: None when ``asr_model`` is off, nothing is
        installed, or the partition holds no recording (loading the model costs about a second per process)."""
        from mmkg.ingest.asr import load_transcriber
        from mmkg.ingest.speech import has_recordings

        return load_transcriber(self.asr_model, self.asr_device) if has_recordings(self.path, partition) else None

    def partitions(self) -> list[str]:
        return list_partitions(self.path)

    def fingerprint(self, partition: str) -> str:
        """The partition folder's current fingerprint (what the ingest asset records and the sensor compares)."""
        return partition_fingerprint(self.path / partition, self.fingerprint_mode)

    def fingerprints(self) -> dict[str, str]:
        return corpus_fingerprints(self.path, self.fingerprint_mode)
