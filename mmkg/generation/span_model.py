"""The ``span-model`` backend: a local extractive question-answering model (SQuAD-style) reads the answer's span.

A classic reader without a language model that writes: a BERT-, RoBERTa- or DeBERTa-family encoder with a span
head (``AutoModelForQuestionAnswering``, e.g. a SQuAD 2.0 checkpoint written by ``save_pretrained``) scores
every start and end token of each evidence passage for the question, and the best span over all passages is
the short answer. Nothing is downloaded: the model is a local folder (or an id already in the Hugging Face
cache), given as ``--model``.

How it divides the work with the model-free reader (``reader.Reader``), which has already read the evidence
when a backend runs:

- what the reader computed or read off a structure stands: a count, a sum or difference, a table's winning row,
  a value read off a label, a keyed line or a row, a definition, a list, a choice among the question's options,
  yes or no; and a yes/no or choice question the reader declined stays declined. A span model cannot compute,
  compare or say yes;
- otherwise (the reader picked a span by its features, or declined) the model reads each passage shown
  (``Evidence`` of kind ``chunk``), in windows of ``max_length`` tokens that overlap by ``stride``, and its best
  span anywhere becomes the answer: cited by the passage's number, highlighted in its sentence by character
  offsets, with the model's probability (start × end, each a softmax over the window's passage tokens and the
  no-answer token, so it does not depend on the padding or the question) as the confidence;
- the model declines ("Not answerable") when its no-answer score (the start and end logits of the [CLS] token,
  which SQuAD 2.0 models are trained to raise when a passage does not answer) beats the best span's score by
  more than ``null_threshold``, taking the most answerable window's no-answer score, as the post-processing
  of transformers' SQuAD example (``run_qa``) does. A SQuAD 1.1 model never learned to decline: give it a large
  ``null_threshold``.

One model and tokenizer serve every thread of ``mmkg serve``: a lock keeps one reading at a time, since a fast
tokenizer's truncation settings change with each call.

The span-selection loop (best start ≤ end within ``max_answer_tokens``, context tokens only) is the standard
one of the SQuAD readers; it is written here, not taken from transformers' ``question-answering`` pipeline,
because the pipeline returns one answer per passage without the no-answer score of each window that declining
across passages needs, nor the window it came from.
"""

from __future__ import annotations

import inspect
import re
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmkg.generation.base import Evidence, Generation, GenerationError, GenerationRequest, approx_tokens
from mmkg.generation.extractive import render_reading
from mmkg.generation.short_answer import NOT_ANSWERABLE, Candidate, ShortAnswer, Support

#: the reader's methods whose answers stand: computed, compared or read off a structure, which a span model
#: cannot do
STRUCTURED = frozenset({"arithmetic", "parts", "list", "lookup", "label", "row", "definition", "superlative",
                        "choice", "yes_no"})  # fmt: skip
METHOD = "span-model"
_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")  # where one sentence of a passage ends and the next begins


@dataclass(frozen=True)
class SpanHit:
    """One span the model points at: its text, where it is, and its scores."""

    text: str
    evidence: Evidence
    start: int  # character offsets in ``evidence.text``
    end: int
    score: float  # start logit + end logit
    probability: float  # softmax of the start × of the end, within its window


def sentence_around(text: str, start: int, end: int) -> tuple[str, int]:
    """The sentence of ``text`` holding the characters ``start:end`` (more than one when the span crosses a
    sentence's end), and where it starts in ``text``."""
    a, b = 0, len(text)
    for m in _BREAK.finditer(text):
        if m.end() <= start:
            a = m.end()
        elif m.start() >= end:
            b = m.start()
            break
    return text[a:b], a


class SpanModelGenerator:
    """A local extractive QA model: the best span over the evidence passages is the short answer."""

    name = METHOD
    extractive = True  # the answer is copied out of the evidence, never written

    def __init__(self, model: str, device: str = "cpu", max_length: int = 384, stride: int = 128,
                 max_answer_tokens: int = 30, null_threshold: float = 0.0, batch_size: int = 16):  # fmt: skip
        try:
            from transformers import AutoModelForQuestionAnswering, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - transformers is a dependency
            raise GenerationError("the span-model backend needs transformers: pip install transformers") from exc
        where = f"{model!r}" if not Path(model).exists() else str(Path(model))
        try:
            self.tokenizer: Any = AutoTokenizer.from_pretrained(model, local_files_only=True)
            self.qa: Any = AutoModelForQuestionAnswering.from_pretrained(model, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise GenerationError(
                f"cannot load an extractive question-answering model from {where} ({exc}); give a folder that "
                "save_pretrained wrote for a model with a span head (a SQuAD checkpoint: BertForQuestionAnswering, "
                "RobertaForQuestionAnswering, ...), or an id already in the Hugging Face cache"
            ) from exc
        if not self.tokenizer.is_fast:
            raise GenerationError(f"the tokenizer of {where} is not a fast tokenizer (no tokenizer.json): the "
                                  "span model maps tokens to characters by a fast tokenizer's offsets")  # fmt: skip
        if stride >= max_length // 2:
            raise GenerationError(f"stride {stride} must be under half of max_length {max_length}")
        # what the model and its tokenizer can read (RoBERTa's 514 positions hold 512 tokens: the tokenizer says so)
        limits = [getattr(self.qa.config, "max_position_embeddings", 0), getattr(self.tokenizer, "model_max_length", 0)]
        self.max_length = min([max_length, *(n for n in limits if isinstance(n, int) and 0 < n < 1_000_000)])
        self.stride = min(stride, self.max_length // 2 - 1)  # a model that reads fewer positions overlaps less
        self.qa = self.qa.to(device).eval()
        # the inputs its forward takes: a BERT tokenizer gives token_type_ids, which DistilBERT's model refuses
        self.inputs = set(inspect.signature(self.qa.forward).parameters) & set(self.tokenizer.model_input_names)
        self.device = device
        self._lock = threading.Lock()
        self.max_answer_tokens = max_answer_tokens
        self.null_threshold = null_threshold
        self.batch_size = batch_size
        self.model = Path(model).name or model

    def count_tokens(self, text: str) -> int:
        with self._lock:  # the tokenizer is shared with a reading in another thread
            return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def spans(self, question: str, evidence: Sequence[Evidence], top: int = 5) -> tuple[list[SpanHit], float]:
        """The model's ``top`` spans over the chunk passages of ``evidence``, best first, and the lowest
        no-answer score of any window (the most answerable window's)."""
        with self._lock:
            return self._spans(question, evidence, top)

    def _spans(self, question: str, evidence: Sequence[Evidence], top: int) -> tuple[list[SpanHit], float]:
        import torch

        passages = [ev for ev in evidence if ev.kind == "chunk" and ev.text.strip()]
        if not passages or not question.strip():
            return [], float("inf")
        asked = self.tokenizer(question, add_special_tokens=False)["input_ids"]
        if len(asked) > self.max_length // 2:  # the passage keeps at least half of each window
            asked = asked[: self.max_length // 2]
            question = self.tokenizer.decode(asked)
        # the overlap fits in what the question and the special tokens ([CLS], [SEP]s) leave of a window
        room = self.max_length - len(asked) - self.tokenizer.num_special_tokens_to_add(pair=True)
        stride = min(self.stride, room // 2)
        pad_right = self.tokenizer.padding_side == "right"
        enc = self.tokenizer(
            [question] * len(passages) if pad_right else [p.text for p in passages],
            [p.text for p in passages] if pad_right else [question] * len(passages),
            truncation="only_second" if pad_right else "only_first", max_length=self.max_length, stride=stride,
            return_overflowing_tokens=True, return_offsets_mapping=True, padding="longest", return_tensors="pt",
        )  # fmt: skip
        windows = enc.pop("overflow_to_sample_mapping").tolist()
        offsets = enc.pop("offset_mapping").tolist()
        inputs = {k: v for k, v in enc.items() if k in self.inputs}
        starts, ends = [], []
        with torch.no_grad():
            for i in range(0, len(windows), self.batch_size):
                out = self.qa(**{k: v[i : i + self.batch_size].to(self.device) for k, v in inputs.items()})
                starts.append(out.start_logits.float().cpu())
                ends.append(out.end_logits.float().cpu())
        start_logits, end_logits = torch.cat(starts), torch.cat(ends)
        context = 1 if pad_right else 0  # the sequence id of the passage's tokens
        # the spans a window may hold: end after start and at most max_answer_tokens on (every window is padded to
        # the same length)
        n = start_logits.shape[1]
        allowed = torch.ones(n, n, dtype=torch.bool).triu().logical_and(
            torch.ones(n, n, dtype=torch.bool).tril(self.max_answer_tokens - 1))
        hits: list[SpanHit] = []
        null = float("inf")
        for w, p in enumerate(windows):
            seq = enc.sequence_ids(w)
            in_context = [i for i, s in enumerate(seq) if s == context]
            if not in_context:
                continue
            s_log, e_log = start_logits[w], end_logits[w]
            ids = enc["input_ids"][w].tolist()
            # where SQuAD 2.0 models point when a passage does not answer: [CLS] or <s> (first, or last in XLNet)
            cls = ids.index(self.tokenizer.cls_token_id) if self.tokenizer.cls_token_id in ids else 0
            null = min(null, float(s_log[cls] + e_log[cls]))
            mask = torch.full_like(s_log, float("-inf"))
            mask[in_context] = 0.0
            keep = mask.clone()
            keep[cls] = 0.0  # the probabilities: over the passage's tokens and the no-answer token only
            s_prob, e_prob = torch.softmax(s_log + keep, 0), torch.softmax(e_log + keep, 0)
            # every start and end in the passage that ``allowed`` allows
            pair = (s_log + mask)[:, None] + (e_log + mask)[None, :]
            pair = pair.masked_fill(~allowed, float("-inf"))
            flat = pair.flatten()
            k = min(top, int(torch.isfinite(flat).sum()))
            if k == 0:
                continue
            for score, at in zip(*torch.topk(flat, k), strict=True):
                a, b = divmod(int(at), n)
                ev = passages[p]
                char_a, char_b = offsets[w][a][0], offsets[w][b][1]
                text = ev.text[char_a:char_b].strip()
                if text:
                    lead = len(ev.text[char_a:char_b]) - len(ev.text[char_a:char_b].lstrip())
                    hits.append(SpanHit(text, ev, char_a + lead, char_a + lead + len(text), float(score),
                                        float(s_prob[a] * e_prob[b])))  # fmt: skip
        best: dict[tuple[int, int, int], SpanHit] = {}
        for h in hits:  # a span two overlapping windows both found counts once, with its better score
            key = (h.evidence.label, h.start, h.end)
            if key not in best or h.score > best[key].score:
                best[key] = h
        return sorted(best.values(), key=lambda h: -h.score)[:top], null

    def read(self, request: GenerationRequest) -> ShortAnswer:
        """The short answer: the reader's, when it computed it or read it off a structure; else the model's
        best span over the evidence, or "Not answerable" when the model's no-answer score wins."""
        t0 = time.perf_counter()
        reading = request.reading
        answer_type = reading.answer_type if reading is not None else ""
        if reading is not None and reading.method in STRUCTURED and not reading.abstained:
            return reading
        if reading is not None and reading.abstained and answer_type in ("yes_no", "choice"):
            return reading  # a span is no yes, no and no option: the reader's decline stands
        hits, null = self.spans(request.question, request.evidence)
        # the reader's time and the model's: the reading (a backend's "generate" is only the writing up)
        ms = round((time.perf_counter() - t0) * 1e3 + (reading.latency_ms if reading is not None else 0.0), 2)
        candidates = [Candidate(h.text, "SPAN", round(h.score, 4), h.evidence.label,
                                *self._sentence(h)) for h in hits]  # fmt: skip
        if not hits:
            return ShortAnswer(NOT_ANSWERABLE, answer_type, 0.0, abstained=True, method=METHOD, latency_ms=ms,
                               reason="the model found no span in the passages shown")  # fmt: skip
        best, first = hits[0], candidates[0]  # the best span, and it in its sentence
        support = Support(best.evidence.label, first.sentence, first.start, first.end, best.evidence.chunk_id,
                          best.start - first.start)  # fmt: skip
        if null - best.score > self.null_threshold:  # declined; the best span stays as the guess, cited
            why = f"the model's no-answer score {null:.2f} beats its best span's {best.score:.2f}"
            return ShortAnswer(NOT_ANSWERABLE, answer_type, 0.0, abstained=True, guess=best.text, method=METHOD,
                               support=[support], candidates=candidates, reason=why, latency_ms=ms)  # fmt: skip
        return ShortAnswer(best.text, answer_type, round(best.probability, 4), method=METHOD, support=[support],
                           candidates=candidates, latency_ms=ms,
                           reason=f"the span {self.model} scores best of the {len(hits)} it points at "
                                  f"(start + end logit {best.score:.2f}, no-answer {null:.2f})")  # fmt: skip

    @staticmethod
    def _sentence(hit: SpanHit) -> tuple[str, int, int]:
        """The sentence holding a span, and the span's offsets in it."""
        sentence, at = sentence_around(hit.evidence.text, hit.start, hit.end)
        return sentence, hit.start - at, hit.end - at

    def generate(self, request: GenerationRequest) -> Generation:
        reading = self.read(request)  # timed as the reading
        t0 = time.perf_counter()
        text, labels = render_reading(reading)
        return Generation(
            text=text, backend=self.name, model=self.model, prompt_tokens=approx_tokens(request.user),
            completion_tokens=approx_tokens(text), latency_ms=(time.perf_counter() - t0) * 1e3, extractive=True,
            used=labels, reading=reading,
        )  # fmt: skip

    def stream(self, request: GenerationRequest) -> Iterator[str]:
        yield self.generate(request).text
