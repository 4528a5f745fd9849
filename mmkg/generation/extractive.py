"""The offline default backend: no model; the reader's short answer with the sentence that supports it.

With a reading in the request (``answer``/``prepare`` always add one), the answer is the reader's short
answer ("STS-93", "1921", "yes", or "Not answerable") followed by the supporting sentence and its
citation, so a person can check it. Without one (a request built by hand), or when the reader has no
supporting sentence, it falls back to the sentence picker below.

Each sentence of the evidence is scored by its retrieval score (cosine to the question, from the
strategy's result; a sentence with none counts 0) plus the share of the question's content words it
contains; the best one (and a
second when it adds words of the question the first lacks) is the answer, cited by the evidence
number it came from and labelled as extractive, so nobody mistakes it for a written answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mmkg.generation.base import Generation, GenerationRequest, approx_tokens

if TYPE_CHECKING:  # the reader imports this module's stop words: its answer type is for annotations only
    from mmkg.generation.short_answer import ShortAnswer

#: a word as the readers count them: letters and digits, with apostrophes and hyphens inside ("Jane's", "Wo-ping")
WORD = re.compile(r"[\w'-]+", re.UNICODE)
MIN_WORDS = 4
PREFIX = "Extractive answer (copied from the evidence, no language model): "


def _stopwords() -> frozenset[str]:
    from mmkg.spacy_import import STOP_WORDS  # spaCy's English list, already a dependency

    return frozenset(STOP_WORDS)


STOPWORDS = _stopwords()


def content_words(text: str) -> set[str]:
    """Lower-cased words that are not stop words, cut to 5 characters so "deployed" meets "deploy" and
    "missions" meets "mission" (a crude stem: enough to count shared words, no stemmer to load)."""
    return {w.lower()[:5] for w in WORD.findall(text) if w.lower() not in STOPWORDS and len(w) > 1}


def render_reading(reading: ShortAnswer) -> tuple[str, list[int]]:
    """A reading as an answer a person can check, and the evidence numbers it cites: the short answer with its
    citations and the sentence that supports it, or "Not answerable" with the best guess and the reason."""
    labels = list(dict.fromkeys(s.label for s in reading.support))
    cites = "".join(f" [{n}]" for n in labels)
    if reading.abstained:
        guess = f" (best guess: {reading.guess}{cites})" if reading.guess else ""
        return f"{reading.text}{guess}. {reading.reason}.", labels if reading.guess else []
    if not reading.support:
        return reading.text, []
    quote = reading.support[0].sentence
    return f"{reading.text}{cites}\n\nSupporting evidence: \"{quote}\" [{reading.support[0].label}]", labels


class ExtractiveGenerator:
    """Answers with the best evidence sentence(s); needs no model and never invents text."""

    name = "extractive"
    model = "none"
    extractive = True  # the answer is copied out of the evidence, never written

    def __init__(self, max_sentences: int = 2):
        self.max_sentences = max_sentences

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    def _pick(self, request: GenerationRequest) -> list[tuple[str, int]]:
        wanted = content_words(request.question)
        scored = []
        for ev in request.evidence:
            if ev.kind != "chunk":
                continue
            # every sentence shown, scored by retrieval where the strategy scored it (0 where it did not)
            candidates = {t.strip()[:60]: (t.strip(), sc) for t, sc in ev.sentences}
            for part in (p.strip() for p in re.split(r"(?<=[.!?])\s+", ev.text)):
                if part:
                    candidates.setdefault(part[:60], (part, 0.0))
            for text, score in candidates.values():
                if text[:60] not in ev.text:
                    continue  # a sentence the budget cut out of the context is not evidence that was shown
                if len(WORD.findall(text)) < MIN_WORDS:
                    continue  # headings and fragments are no answer
                words = content_words(text)
                overlap = len(words & wanted) / len(wanted) if wanted else 0.0
                scored.append((score + overlap, -ev.label, text, ev.label, words))
        scored.sort(reverse=True)
        picked: list[tuple[str, int]] = []
        covered: set[str] = set()
        for _, _, text, label, words in scored:
            if not picked or (words & wanted) - covered:
                picked.append((text, label))
                covered |= words & wanted
            if len(picked) >= self.max_sentences:
                break
        return picked

    def generate(self, request: GenerationRequest) -> Generation:
        t0 = time.perf_counter()
        reading = request.reading
        if reading is not None and (reading.support or reading.abstained):
            text, labels = render_reading(reading)
            return Generation(
                text=text, backend=self.name, model=self.model, prompt_tokens=approx_tokens(request.user),
                completion_tokens=approx_tokens(text), latency_ms=(time.perf_counter() - t0) * 1e3, extractive=True,
                used=labels,
            )  # fmt: skip
        picked = self._pick(request)
        if not picked:
            text = PREFIX + "the evidence holds no sentence to answer with."
        else:
            text = PREFIX + " ".join(f"{s} [{label}]" for s, label in picked)
        return Generation(
            text=text, backend=self.name, model=self.model, prompt_tokens=approx_tokens(request.user),
            completion_tokens=approx_tokens(text), latency_ms=(time.perf_counter() - t0) * 1e3, extractive=True,
            used=[label for _, label in picked],
        )  # fmt: skip

    def stream(self, request: GenerationRequest) -> Iterator[str]:
        yield self.generate(request).text
