"""The speech step: Whisper reads a partition's recordings that have no subtitles, before ingest, on its own.

Speech recognition is the costly part of ingesting media (about a third of a recording's length on two CPU cores)
and the part an accelerator speeds up. As a step of its own (the ``transcripts`` asset, in the Dagster pool ``gpu``
like grounding and embedding) it can run where the GPU is, one at a time per pool slot, and show its progress and
cost apart from reading files. Its transcripts go into the data root's transcript cache (by the audio's content hash
and the model, ``mmkg.ingest.asr.CachedTranscriber``), where ingest finds them: ingest never transcribes a file
twice, and still transcribes one itself when this step did not run (a file added in between, a subset run).

The step decides as ingest does (``mmkg.ingest.media.transcript``): a readable subtitle sidecar wins and such a file
is left out; a file that cannot be opened is left to ingest, which records why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from mmkg import schemas
from mmkg.ingest.asr import cached
from mmkg.ingest.base import Limits, Rejected, rel_posix
from mmkg.ingest.files import partition_files
from mmkg.ingest.media import MEDIA_EXT, probe, transcript

if TYPE_CHECKING:
    from mmkg.ingest.asr import Transcriber

#: told how far recognition of one file has come: (file, seconds transcribed, seconds of the recording)
SpeechProgress = Callable[[str, float, float], None]


def has_recordings(corpus_root: Path | str, partition: str) -> bool:
    """Whether ``corpus_root/partition`` holds a video or audio file: only then is a speech model worth loading
    (about a second, in every process that runs the speech or the ingest step)."""
    folder = Path(corpus_root) / partition
    return folder.is_dir() and any(p.suffix.lower() in MEDIA_EXT for p in partition_files(folder))


def transcribe_partition(
    corpus_root: Path | str,
    partition: str,
    data_root: Path | str,
    transcriber: Transcriber | None,
    limits: Limits | None = None,
    progress: SpeechProgress | None = None,
) -> pl.DataFrame:
    """One ``transcripts`` row per recording of ``corpus_root/partition`` that speech recognition read (see the
    module's docstring); an empty table when ``transcriber`` is None or the partition holds no such file."""
    limits = limits or Limits()
    root = Path(corpus_root).resolve()
    rows: list[dict] = []
    if transcriber is None:
        return schemas.frame(rows, schemas.TRANSCRIPTS)
    asr = cached(transcriber, Path(data_root))
    for path in partition_files(root / partition):
        if path.suffix.lower() not in MEDIA_EXT or not path.resolve().is_relative_to(root):
            continue
        rel = rel_posix(path.resolve(), root)
        t0 = time.perf_counter()
        try:
            info = probe(path, limits)
        except Rejected:
            continue  # ingest rejects it, with the reason
        hits = asr.hits
        told = None if progress is None else (lambda done, total, rel=rel: progress(rel, done, total))
        tr = transcript(path, rel, root, info, limits, asr, told)
        problem = next((p.reason for p in tr.problems if p.source_path == rel), None)
        if not tr.source.startswith("asr:") and problem is None:
            continue  # subtitles (a broken sidecar's problem is the sidecar's), or no audio: nothing was recognized
        rows.append({
            "partition": partition, "source_path": rel, "transcript_source": tr.source or f"asr:{asr.name}",
            "language": tr.language or None, "audio_s": round(min(info.duration, limits.speech_seconds), 3),
            "segments": len(tr.segments), "characters": sum(len(s.text) for s in tr.segments),
            "seconds": round(time.perf_counter() - t0, 3), "cached": asr.hits > hits, "problem": problem,
        })  # fmt: skip
    return schemas.frame(rows, schemas.TRANSCRIPTS)
