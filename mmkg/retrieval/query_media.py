"""A query's media, prepared for strategies, and the models that takes, loaded once per process.

- Pictures: a query picture is read with one OCR engine (``ocr_lines``: the text encoder's surrogate text for
  the picture, R2AG's query elements, M3KG's visual grounding of the query all read the same lines).
- Video: ``video_frames`` samples F frames uniformly and writes them as pictures a grounder can read.
- Sound: ``transcript`` is what an audio query (or a video query's sound track) says, through the configured
  Whisper model; ``has_audio`` whether a video has a sound track at all.
- Grounders and the language models of strategies' steps come from ``shared`` by a key that names them
  and their model.

Loading OCR costs about half a second, a detector, a Whisper model or a language model seconds: a per-query
or per-strategy copy (R2AG made a new OCR engine for every picture query) pays that again and again. The
media readers themselves are ingest's (``mmkg.ingest.media``, ``mmkg.ingest.asr``): a query's video is read
exactly as a corpus video is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_SHARED: dict[tuple, Any] = {}
_LOCK = threading.RLock()  # re-entrant: a model may be made of another shared one (a grounder of the OCR engine)


def shared(key: tuple, make: Callable[[], T]) -> T:
    """``make()`` once per process for ``key`` (a model's kind and name: ``("llm", "openai", "qwen")``)."""
    with _LOCK:
        if key not in _SHARED:
            _SHARED[key] = make()
        return _SHARED[key]


def ocr_engine() -> Any:
    """The process's OCR engine for query pictures (``mmkg.vision.ocr.OcrEngine``, loaded on first use)."""
    from mmkg.vision.ocr import OcrEngine

    return shared(("ocr-engine",), OcrEngine)


def ocr_lines(image: str | Path) -> list[str]:
    """The lines of text read in a query picture, in reading order."""
    return [line.text for line in ocr_engine().read_path(Path(image))]


def video_frames(video: Path, n: int, folder: Path) -> list[tuple[float, Path]]:
    """``n`` frames sampled uniformly from a video query, written as PNG files into ``folder``: (time in
    seconds, file). A video that cannot be read is a ``ValueError`` naming it."""
    from mmkg.ingest.base import Rejected
    from mmkg.ingest.media import uniform_frames

    try:
        sampled = uniform_frames(video, max(1, n))
    except Rejected as exc:
        raise ValueError(f"video query {video}: {exc}") from exc
    out = []
    for i, (t, img) in enumerate(sampled):
        path = folder / f"frame-{i}-{t:.2f}.png"
        img.save(path)
        out.append((t, path))
    return out


def has_audio(path: Path) -> bool:
    """Whether a video (or audio file) query has a sound track to transcribe."""
    from mmkg.ingest.base import Limits, Rejected
    from mmkg.ingest.media import probe

    try:
        return probe(path, Limits()).has_audio
    except Rejected:
        return False


#: the longest stretch of a query's sound that is transcribed, seconds
MAX_QUERY_AUDIO_S = 600.0


def transcript(media: Path, model: str) -> str:
    """What an audio query or a video query's sound track says, through the Whisper ``model`` (loaded once per
    process by ingest's own cache, ``load_transcriber``, which the build shares); "" when nothing is heard."""
    from mmkg.ingest.asr import load_transcriber
    from mmkg.ingest.media import SAMPLE_RATE, read_audio

    transcriber = load_transcriber(model)
    if transcriber is None:
        raise ValueError("no ASR model is configured: set asr_model or MMKG_ASR_MODEL to a local Whisper model")
    segments = transcriber.transcribe(read_audio(media, MAX_QUERY_AUDIO_S), SAMPLE_RATE)
    return " ".join(s.text for s in segments).strip()
