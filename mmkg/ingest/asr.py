"""Speech to timed text for media without subtitles: Whisper through transformers, from a local model.

The model is configuration (``MMKG_ASR_MODEL``: a local folder saved with ``save_pretrained``, or a
model id already in the Hugging Face cache); nothing is downloaded at run time. Without one, media
files are ingested without a transcript and the reason is recorded (``mmkg.ingest.media``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

import numpy as np

from mmkg.ingest.media import Segment


class Transcriber(Protocol):
    name: str  # recorded as the transcript's source (asr:<name>)

    def transcribe(self, audio: np.ndarray, sample_rate: int) -> list[Segment]:
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

    def transcribe(self, audio: np.ndarray, sample_rate: int) -> list[Segment]:
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
        return sorted(segments, key=lambda s: (s.start, s.end))


@lru_cache(maxsize=2)
def load_transcriber(model: str, device: str = "cpu") -> Transcriber | None:
    """The configured transcriber, loaded once per process; ``""`` means none."""
    return WhisperTranscriber(model, device) if model else None
