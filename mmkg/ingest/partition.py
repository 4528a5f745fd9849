"""Reads one corpus partition (a folder of source files) into typed tables.

Nothing here raises for a bad file: each problem becomes a row of ``rejected`` naming the file
and the reason, and everything else in the partition is still read.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from mmkg import schemas
from mmkg.ids import content_id
from mmkg.ingest.asr import cached
from mmkg.ingest.base import ImageRef, Limits, Rejected, Rejection, SourceDocument, rel_posix
from mmkg.ingest.budget import apply_text_budgets
from mmkg.ingest.files import list_partitions, partition_files  # noqa: F401 - also imported from here
from mmkg.ingest.formats import FORMATS, Links, extensions, format_for
from mmkg.ingest.images import ImageStore, decode_and_store
from mmkg.ingest.media import MEDIA_EXT, SUBTITLE_EXT, read_media, sidecars
from mmkg.ingest.speech import SpeechProgress

IMAGE_EXT = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"}
#: the extensions of the built-in formats: pictures, media, subtitles and the documents of ``mmkg.ingest.formats``
SUPPORTED = frozenset(extensions() | IMAGE_EXT | MEDIA_EXT | SUBTITLE_EXT)


def supported_extensions() -> set[str]:
    """Every extension ingest reads now: ``SUPPORTED`` and the formats plugins registered since."""
    FORMATS.load_plugins()
    return set(SUPPORTED) | extensions()


if TYPE_CHECKING:
    from mmkg.ingest.asr import Transcriber

Progress = Callable[[int, int, str], None]


@dataclass
class IngestResult:
    documents: pl.DataFrame
    images: pl.DataFrame
    rejected: pl.DataFrame
    seconds: float
    n_files: int
    by_kind: dict[str, int] = field(default_factory=dict)
    media: list[dict] = field(default_factory=list)  # per media file: duration, frames, transcript source, seconds
    truncated: int = 0  # documents kept with a budget cut (their reasons are rows of stage "budget")


class _Reader:
    def __init__(
        self,
        corpus_root: Path,
        partition: str,
        store: ImageStore,
        limits: Limits,
        transcriber: Transcriber | None = None,
        speech_progress: SpeechProgress | None = None,
    ):
        self.root = corpus_root.resolve()
        self.transcriber = transcriber
        self.speech_progress = speech_progress
        self.media: list[dict] = []
        self.partition = partition
        self.store = store
        self.limits = limits
        self.docs: list[dict] = []
        self.images: list[dict] = []
        self.rejected: list[Rejection] = []
        self.chars = 0  # characters of the documents kept so far (the partition's budget)
        self.truncated = 0  # documents kept with a budget cut

    def reject(self, rel: str, reason: str, record_key: str = "", stage: str = "ingest") -> None:
        self.rejected.append(Rejection(rel, reason, record_key, stage))

    def check_size(self, path: Path) -> None:
        size = path.stat().st_size
        if size == 0:
            raise Rejected("file is empty (0 bytes)")
        if size > self.limits.max_file_bytes:
            raise Rejected(
                f"file is {size:,} bytes, over the limit of {self.limits.max_file_bytes:,} (MMKG_MAX_FILE_BYTES)"
            )

    def read_bytes(self, path: Path, max_bytes: int | None = None) -> bytes:
        self.check_size(path)
        if max_bytes is not None and (size := path.stat().st_size) > max_bytes:
            raise Rejected(
                f"file is {size:,} bytes; text and JSON files are parsed whole in memory and the limit is "
                f"{max_bytes:,} (MMKG_MAX_TEXT_FILE_BYTES): split it into smaller files"
            )
        return path.read_bytes()

    def resolve_link(self, doc: SourceDocument, target: Path | str, ref: ImageRef, line: int) -> ImageRef | None:
        where = f"image link '{ref.source}'" + (f" (line {line})" if line else "")
        if isinstance(target, str):
            self.reject(
                doc.source_path,
                f"{where} is a remote URL; remote images are not fetched, copy the file into the partition",
                doc.record_key,
            )
            return None
        resolved = target.resolve()
        if not resolved.is_relative_to(self.root):
            self.reject(doc.source_path, f"{where} points outside the corpus root {self.root}", doc.record_key)
            return None
        if not resolved.is_file():
            self.reject(doc.source_path, f"{where} not found at {rel_posix(resolved, self.root)}", doc.record_key)
            return None
        ref.source = rel_posix(resolved, self.root)
        return ref

    def add(self, doc: SourceDocument) -> bool:
        """Store ``doc`` within its budgets; False when the partition's budget leaves no room for it."""
        lim = self.limits
        reasons = apply_text_budgets(doc, lim)
        if len(doc.images) > lim.max_images_per_document:
            reasons.append(
                f"document has {len(doc.images):,} pictures; kept the first {lim.max_images_per_document:,} "
                "(budget MMKG_MAX_IMAGES_PER_DOCUMENT)"
            )
            doc.images = doc.images[: lim.max_images_per_document]
        if self.chars + len(doc.text) > lim.max_partition_chars:
            self.reject(
                doc.source_path,
                f"the partition already holds {self.chars:,} characters and this document has {len(doc.text):,}; "
                f"the partition budget is {lim.max_partition_chars:,} (MMKG_MAX_PARTITION_CHARS): "
                "move some files into another partition",
                doc.record_key,
            )
            return False
        for reason in reasons:
            self.reject(doc.source_path, reason, doc.record_key, stage="budget")
        self.truncated += bool(reasons)
        self.chars += len(doc.text)
        doc_id = content_id(self.partition, doc.source_path, doc.record_key, doc.content_sha256)
        self.docs.append(
            {
                "doc_id": doc_id,
                "partition": self.partition,
                "source_path": doc.source_path,
                "record_key": doc.record_key,
                "kind": doc.kind,
                "title": doc.title,
                "text": doc.text,
                "page_starts": doc.page_starts,
                "n_pages": len(doc.page_starts),
                "content_sha256": doc.content_sha256,
                "n_bytes": doc.n_bytes,
                "duration_s": doc.duration_s,
                "time_segments": doc.time_segments,
                "outline": doc.outline,
                "transcript_source": doc.transcript_source,
                "language": doc.language,
            }
        )
        for occurrence, ref in enumerate(doc.images):
            try:
                data = ref.data
                if data is None and ref.pil is None:
                    data = self.read_bytes(self.root / ref.source)
                stored = decode_and_store(data, self.store, self.limits, pil=ref.pil)  # type: ignore[arg-type]
            except Rejected as exc:
                self.reject(ref.source, str(exc), doc.record_key)
                continue
            except OSError as exc:
                self.reject(ref.source, f"cannot read image: {exc}", doc.record_key)
                continue
            except Exception as exc:  # a decoder's surprise costs this picture, never its document
                self.reject(ref.source, _unexpected(exc), doc.record_key)
                continue
            self.images.append(
                {
                    "image_id": stored.image_id,
                    "partition": self.partition,
                    "doc_id": doc_id,
                    "occurrence": occurrence,
                    "page": ref.page,
                    "char_offset": ref.char_offset,
                    "role": ref.role,
                    "source": ref.source,
                    "alt_text": ref.alt_text,
                    "blob_path": stored.blob_path,
                    "format": stored.format,
                    "mode": stored.mode,
                    "width": stored.width,
                    "height": stored.height,
                    "n_bytes": stored.n_bytes,
                    "phash": stored.phash,
                    "t_s": ref.t_s,
                }
            )
            ref.pil = None  # let renders be freed as soon as they are stored
        return True

    def read_file(self, path: Path, rel: str) -> list[tuple[SourceDocument, Links]]:
        ext = path.suffix.lower()
        if ext in MEDIA_EXT:  # streamed from the file, never read whole into memory
            self.check_size(path)
            try:
                told = self.speech_progress
                doc, problems, facts = read_media(
                    path, rel, self.root, self.limits, self.transcriber,
                    None if told is None else (lambda done, total: told(rel, done, total)),
                )  # fmt: skip
            except Rejected:
                raise
            except Exception as exc:  # a decoder surprise costs this file, never the partition
                raise Rejected(f"cannot read media ({type(exc).__name__}: {exc})") from exc
            self.rejected.extend(problems)
            self.truncated += any(p.stage == "budget" for p in problems)  # speech past MMKG_MAX_TRANSCRIBE_SECONDS
            self.media.append({"source_path": rel, **facts})
            return [(doc, [])]
        if ext in SUBTITLE_EXT:
            raise Rejected("subtitle file with no video or audio file of the same name beside it")
        fmt = format_for(ext)  # mmkg.ingest.formats: Markdown, text, records, PDF, and plugins' formats
        if fmt is None:
            raise Rejected(f"unsupported file type '{ext or path.name}'; supported: "
                           f"{', '.join(sorted(supported_extensions()))}")  # fmt: skip
        data = self.read_bytes(path, self.limits.max_text_file_bytes if fmt.text_like else None)
        docs, rejections = fmt(path, data, rel, self.limits)
        self.rejected.extend(rejections)
        return docs


def ingest_partition(
    corpus_root: Path | str,
    partition: str,
    store: ImageStore,
    limits: Limits | None = None,
    progress: Progress | None = None,
    transcriber: Transcriber | None = None,
    speech_progress: SpeechProgress | None = None,
) -> IngestResult:
    """Read every file of ``corpus_root/partition``; bad files are rejected, never fatal.

    ``transcriber`` (``mmkg.ingest.asr``) writes transcripts of media files that have no subtitle sidecar;
    ``speech_progress`` follows it through each recording (``progress`` is told of each file as it starts).
    """
    t0 = time.perf_counter()
    root = Path(corpus_root)
    pdir = root / partition
    if not pdir.is_dir():
        raise FileNotFoundError(
            f"partition folder {pdir} does not exist; partitions are the sub-folders of the corpus root {root}"
        )
    if transcriber is not None:
        transcriber = cached(transcriber, store.data_root)
    reader = _Reader(root, partition, store, limits or Limits(), transcriber, speech_progress)
    files = partition_files(pdir)
    media_files = {p.resolve() for p in files if p.suffix.lower() in MEDIA_EXT}
    # subtitle sidecars are read with their media file, not as documents of their own
    sidecar_files = {s.resolve() for m in media_files for s in sidecars(m)}
    image_files: list[tuple[Path, str]] = []
    linked: set[str] = set()
    by_kind: dict[str, int] = {}
    for i, path in enumerate(files):
        shown = _printable(rel_posix(path, root))
        if shown != rel_posix(path, root):
            reader.reject(shown, "file name is not valid UTF-8 (shown with \\x escapes); rename the file")
            continue
        rel = rel_posix(path.resolve(), reader.root) if path.resolve().is_relative_to(reader.root) else None
        if rel is None:
            reader.reject(shown, f"symbolic link points outside the corpus root {reader.root}")
            continue
        if progress:
            progress(i, len(files), rel)
        if path.suffix.lower() in IMAGE_EXT:
            image_files.append((path, rel))
            continue
        if path.resolve() in sidecar_files:
            continue
        try:
            read = reader.read_file(path, rel)
        except Rejected as exc:
            reader.reject(rel, str(exc))
            continue
        except Exception as exc:  # a reader's surprise costs this file, never the partition
            reader.reject(rel, _unexpected(exc))
            continue
        for doc, links in read:
            try:
                for target, ref, line in links:
                    if (resolved := reader.resolve_link(doc, target, ref, line)) is not None:
                        doc.images.append(resolved)
                        linked.add(resolved.source)
                added = reader.add(doc)
            except Exception as exc:
                reader.reject(rel, _unexpected(exc), doc.record_key)
                continue
            if added:
                by_kind[doc.kind] = by_kind.get(doc.kind, 0) + 1
    # An image file no document links to is a document of its own.
    for path, rel in image_files:
        if rel in linked:
            continue
        try:
            data = reader.read_bytes(path)
        except Rejected as exc:
            reader.reject(rel, str(exc))
            continue
        doc = SourceDocument(
            source_path=rel,
            record_key="",
            kind="image",
            title=path.stem.replace("_", " ").replace("-", " "),
            text="",
            content_sha256=hashlib.sha256(data).hexdigest(),
            n_bytes=len(data),
            images=[ImageRef(data, rel, "standalone")],
        )
        n_before = len(reader.images)
        if not reader.add(doc):
            continue
        if len(reader.images) == n_before:
            reader.docs.pop()  # the image itself was rejected: no empty document for it
        else:
            by_kind["image"] = by_kind.get("image", 0) + 1
    rejected = schemas.frame(
        (
            {
                "partition": partition,
                "source_path": r.source_path,
                "record_key": r.record_key,
                "stage": r.stage,
                "reason": r.reason,
            }
            for r in reader.rejected
        ),
        schemas.REJECTED,
    )
    return IngestResult(
        documents=schemas.frame(reader.docs, schemas.DOCUMENTS),
        images=schemas.frame(reader.images, schemas.IMAGES),
        rejected=rejected,
        seconds=time.perf_counter() - t0,
        n_files=len(files),
        by_kind=by_kind,
        media=reader.media,
        truncated=reader.truncated,
    )


def _printable(name: str) -> str:
    """``name`` with undecodable bytes (surrogate escapes from the file system) shown as ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _unexpected(exc: Exception) -> str:
    text = str(exc).encode("utf-8", "replace").decode("utf-8")[:300]
    return (
        f"cannot read ({type(exc).__name__}: {text}); the file is kept out and the rest of the partition is read. "
        "Please report this file: mmkg should have given a clearer reason"
    )
