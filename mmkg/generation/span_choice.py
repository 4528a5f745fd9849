"""The span reader's choice: mmkg's span model and the rule reader's typed candidates, one calibrated decision.

For a one-hop question the rule reader answers with a span (not a count, a comparison, yes/no, arithmetic or a
keyed lookup, nor a two-hop question through a person: those stay its own, ``SpanChooser.reads``), the stages are:

1. **evidence**: the first ``PASSAGES`` chunk passages shown, in retrieval order;
2. **candidates**: the span model's best spans over them (``span_reader.SpanModel``), merged with the reader's
   typed candidates (``READER_CANDIDATES``), each in its sentence; the model scores the reader's candidates too
   (in the same pass), where they stand in the passages read;
3. **features** (``features``): the model's log-probability of the span, of "no answer" in its window and their gap,
   its rank; the reader's score and whether it is the reader's own answer; whether the span's entity label is one
   the question asks for, and whether its form cannot answer it (``contradicts``); whether it repeats the question;
   how much of the question its sentence holds; the passage's rank; whether it crosses a clause break, lies inside
   a better-scored span or holds one (the model's spans tend to run long);
4. **calibration** (``calibration.Calibration``, fitted by ``benchmarks/reader_fit.py --reader span`` into
   ``span_calibration.json``): the probability each candidate is right, the chosen one's confidence, declined below
   the threshold;
5. a span whose form contradicts a person, date or number question (a year for "who", a name for "when") is never
   chosen over one that does not; when all do, the best is the guess, declined.

Faithfulness (``support.enforce``) runs after, in ``reading.read``: every candidate is a span of a sentence shown.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from mmkg.generation.base import Evidence
from mmkg.generation.calibration import Calibration, Decision, RuleAnswer
from mmkg.generation.extractive import content_words
from mmkg.generation.model_reader import Option, stated_text
from mmkg.generation.question import QuestionAnalysis, labels_for
from mmkg.generation.reader import Reader
from mmkg.generation.sentences import entities
from mmkg.generation.short_answer import Candidate, ShortAnswer, Support, below, decline, normalize
from mmkg.generation.span_model import sentence_around
from mmkg.generation.span_reader import SpanModel
from mmkg.generation.spans import Span

CALIBRATION = Path(__file__).with_name("span_calibration.json")
PASSAGES = 6  # chunk passages the model reads, in retrieval order
MODEL_SPANS = 12  # the model's best spans kept as candidates (shorter forms of a long best span among them)
READER_CANDIDATES = 5
#: answer types whose form is checked: a span that cannot be of the type is never chosen over one that can
STRICT_TYPES = frozenset({"person", "date", "number"})
#: entity labels of values: a person is none of them
VALUE_LABELS = frozenset({"DATE", "TIME", "CARDINAL", "MONEY", "PERCENT", "QUANTITY", "ORDINAL"})
_NUMBER = re.compile(r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
                     r"fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen|half|single|double)\b",
                     re.I)  # fmt: skip
_DATE = re.compile(r"\d|\b(january|february|march|april|may|june|july|august|september|october|november|december|"
                   r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b|"
                   r"\b(mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(spring|summer|autumn|fall|winter|century|"
                   r"centuries|decade|today|yesterday|tomorrow|morning|afternoon|evening|night|noon|midnight|week|"
                   r"month|year)s?\b", re.I)  # fmt: skip
#: the features of a candidate, in the order the calibration file names them
FEATURES = (
    "sm_logp", "sm_p", "sm_null", "sm_gap", "sm_top", "sm_rank", "sm_share", "sm_found",
    "reader_cand", "reader_score", "reader_top", "reader_conf", "coverage",
    "typed", "mistyped", "in_question", "q_overlap", "passage_rank", "words", "punct", "inside_better",
    "contains_better",
)  # fmt: skip
#: a clause break inside a span: a comma, semicolon or colon before a space, a full stop before one, a bracket
_BREAK_INSIDE = re.compile(r"[,;:]\s|\.\s|[()]")


class SpanChooser:
    """Chooses a span answer with the span model and the calibration's combination of its scores and the rules'."""

    def __init__(self, model: SpanModel, calibration: Calibration | None, reader: Reader | None = None):
        self.model = model
        self.calibration = calibration
        self.reader = reader or Reader()

    @staticmethod
    def reads(reading: ShortAnswer, q: QuestionAnalysis | None = None) -> bool:
        """Whether the span model reads this question: a span answer, stated or declined for low confidence or for
        want of a typed candidate; not one declined because the evidence lacks what the question names, nor a
        two-hop question ("Where was the director of X born?"): the model reads one passage at a time, and the
        rule reader's bridge through the person the question leads to measurably wins those (2Wiki's two-hop
        questions, best guess 0.375 against 0.283), so its answer stands there, with its own calibrated map."""
        two_hops = q is not None and bool(q.bridge) and q.hops == 2
        return reading.method == "span" and reading.declined_for in ("", "confidence") and not two_hops

    def options(self, q: QuestionAnalysis, reading: ShortAnswer, evidence: Sequence[Evidence],
                ) -> tuple[list[Support], list[Option]]:  # fmt: skip
        """The sentences of the candidates and every candidate with its features."""
        passages = [e for e in evidence if e.kind == "chunk" and e.text.strip()][:PASSAGES]
        # the reader's typed candidates, where they stand in the passages read: the model scores them too
        targets, target_of = [], {}
        for c in reading.candidates[:READER_CANDIDATES]:
            for i, ev in enumerate(passages):
                at = ev.text.find(c.sentence) if ev.label == c.evidence and c.start >= 0 else -1
                if at >= 0:
                    target_of.setdefault(normalize(c.text), len(targets))
                    targets.append((i, at + c.start, at + c.end))
                    break
        hits, scored = self.model.read(q.text, [p.text for p in passages], MODEL_SPANS, targets) if passages \
            else ([], [])  # fmt: skip
        sentences: list[Support] = []
        where: dict[tuple[int, str], int] = {}

        def sentence_index(label: int, sentence: str, chunk_id: str = "", offset: int = -1) -> int:
            key = (label, sentence)
            if key not in where:
                where[key] = len(sentences)
                sentences.append(Support(label, sentence, -1, -1, chunk_id, offset))
            return where[key]

        cands: list[tuple[Span, dict[str, float]]] = []
        seen: dict[str, int] = {}
        for rank, h in enumerate(hits):
            key = normalize(h.text)
            if not key or key in seen:
                continue
            ev = passages[h.passage]
            sentence, at = sentence_around(ev.text, h.start, h.end)
            i = sentence_index(ev.label, sentence, ev.chunk_id, at)
            seen[key] = len(cands)
            cands.append((Span(h.text, i, h.start - at, h.end - at, "", "model"),
                          {"sm_logp": h.logp, "sm_null": math.exp(h.null_logp), "sm_gap": h.logp - h.null_logp,
                           "sm_rank": 1.0 / (1 + rank), "sm_top": float(rank == 0), "sm_found": 1.0,
                           "passage_rank": 1.0 / (1 + h.passage)}))  # fmt: skip
        floor = min((h.logp for h in hits), default=-20.0) - 1.0
        top_score = max((c.score for c in reading.candidates), default=0.0) or 1.0
        reader_scores: dict[str, float] = {}
        order = {e.label: n for n, e in enumerate(evidence)}
        for c in reading.candidates[:READER_CANDIDATES]:
            key = normalize(c.text)
            if not key or key in reader_scores:
                continue
            reader_scores[key] = c.score / top_score
            if key in seen:
                continue
            seen[key] = len(cands)
            i = sentence_index(c.evidence, c.sentence)
            got = scored[target_of[key]] if key in target_of else None
            model = {"sm_logp": got.logp, "sm_null": math.exp(got.null_logp), "sm_gap": got.logp - got.null_logp} \
                if got is not None else {"sm_logp": floor, "sm_null": 1.0, "sm_gap": floor}  # fmt: skip
            cands.append((Span(c.text, i, c.start, c.end, c.label, "reader"),
                          {**model, "sm_rank": 0.0, "sm_top": 0.0, "sm_found": 0.0,
                           "passage_rank": 1.0 / (1 + order.get(c.evidence, 9))}))  # fmt: skip
        if not cands:
            return sentences, []
        labelled = _labels(self.reader.model, sentences, cands)
        return sentences, features(q, reading, labelled, reader_scores, sentences)

    def read(self, q: QuestionAnalysis, reading: ShortAnswer, evidence: Sequence[Evidence],
             ) -> tuple[ShortAnswer, list[Option]]:  # fmt: skip
        """The answer chosen with calibrated confidence, and the candidates (best first); ``reading`` itself when
        the model does not read this question or finds no candidate."""
        if not self.reads(reading, q) or self.calibration is None:
            return reading, []
        t0 = time.perf_counter()
        sentences, opts = self.options(q, reading, evidence)
        if not opts:
            return reading, []
        out = self.choose(q, reading, sentences, opts)
        out.latency_ms = round(reading.latency_ms + (time.perf_counter() - t0) * 1e3, 2)
        return out, opts

    def choose(self, q: QuestionAnalysis, reading: ShortAnswer, sentences: Sequence[Support],
               opts: list[Option]) -> ShortAnswer:  # fmt: skip
        """The most probable of ``opts`` (sorted so, in place) as the answer, declined below the threshold or when
        its type contradicts the question's."""
        assert self.calibration is not None
        cal = self.calibration
        order, probs, decision, mistyped = policy(cal, q.answer_type, [o.features for o in opts],
                                                  RuleAnswer.of(reading))  # fmt: skip
        for o, p in zip(opts, probs, strict=True):
            o.prob = p
        opts[:] = [opts[i] for i in order]
        best = opts[decision.option or 0]
        shown = sentences[best.span.sentence]
        text = best.span.text
        if best.features["reader_top"] and stated_text(reading):
            text = stated_text(reading)  # the reader's form of the same answer (a number at the asked scale)
        support = [Support(shown.label, shown.sentence, best.span.start, best.span.end, shown.chunk_id,
                           shown.offset)]  # fmt: skip
        cands = [Candidate(o.span.text, o.span.label, round(o.prob, 4), sentences[o.span.sentence].label,
                           sentences[o.span.sentence].sentence, o.span.start, o.span.end,
                           {k: round(v, 3) for k, v in o.features.items() if v})
                 for o in opts[:5]]  # fmt: skip
        prior = stated_text(reading)
        agreed = "the rule reader agreed" if best.features["reader_top"] else \
            f"the rule reader preferred {prior!r}" if prior else "the rule reader had no typed candidate"  # fmt: skip
        source = "pointed at by the span model" if best.features["sm_found"] else "the rule reader's candidate"
        why = f"{source}, the most probable of {len(opts)} candidates; {agreed}"
        out = replace(reading, text=text, confidence=decision.confidence, abstained=False, guess="",
                      support=support, candidates=cands, reason=why, declined_for="",
                      model=self.model.name)  # fmt: skip
        if mistyped:
            decline(out, f"the question asks for a {q.answer_type} and {text!r} cannot be one",
                    keep_confidence=True)  # fmt: skip
        elif not decision.stated:
            decline(out, below(decision.confidence, cal.threshold), keep_confidence=True)
        return out


def policy(cal: Calibration, answer_type: str, features: Sequence[Mapping[str, float]], rule: RuleAnswer,
           ) -> tuple[list[int], list[float], Decision, bool]:  # fmt: skip
    """The choice among candidates with ``features``, as ``mmkg ask`` makes it and ``benchmarks/reader_fit.py``
    fits it: each one's probability, their order (for a person, date or number question the spans whose form can
    answer it first, ``contradicts``: a year is no answer to "who"; then the most probable), the calibration's
    decision over that order, and whether the chosen one contradicts the question's type (every candidate did:
    declined)."""
    probs = [cal.candidate.prob(f) for f in features]
    strict = answer_type in STRICT_TYPES
    order = sorted(range(len(features)), key=lambda i: (bool(strict and features[i]["mistyped"]), -probs[i]))
    eligible = [probs[i] for i in order if not (strict and features[i]["mistyped"])]
    decision = cal.decide(eligible or [probs[i] for i in order], rule)
    best = order[decision.option or 0]
    return order, probs, decision, bool(strict and features[best]["mistyped"])


def contradicts(answer_type: str, text: str, label: str) -> bool:
    """Whether a span cannot answer a question of ``answer_type`` by its form: a person is no number, date or
    amount (by the entity label or a digit); a date holds a digit, a month, a day of the week or a season; a number
    holds a digit or a number word. Judged by form rather than by the entity label alone: spaCy's small model labels
    invented names as places or organizations ("Ines Okafor" LOC), and trusting that declined right answers."""
    if answer_type == "person":
        return label in VALUE_LABELS or any(ch.isdigit() for ch in text)
    if answer_type == "date":
        return not _DATE.search(text)
    if answer_type == "number":
        return not _NUMBER.search(text)
    return False


def _labels(model: str, sentences: Sequence[Support], cands: list[tuple[Span, dict[str, float]]],
            ) -> list[tuple[Span, dict[str, float]]]:  # fmt: skip
    """The candidates with the NER label of the entity each one is (or lies inside), or ""."""
    ents = entities([s.sentence for s in sentences], model)
    out = []
    for span, f in cands:
        label = span.label
        if not label or span.source == "model":
            label = ""
            for _text, lab, a, b in ents[span.sentence]:
                if (a <= span.start and span.end <= b) or (span.start <= a and b <= span.end and (b - a) * 2 >= (
                        span.end - span.start)):  # fmt: skip
                    label = lab
                    break
        out.append((replace(span, label=label), f))
    return out


def features(q: QuestionAnalysis, reading: ShortAnswer, cands: Sequence[tuple[Span, dict[str, float]]],
             reader_scores: dict[str, float], sentences: Sequence[Support]) -> list[Option]:  # fmt: skip
    """Each candidate's features (``FEATURES``), from the model's scores already in ``cands`` and the rest."""
    stated = normalize(stated_text(reading))
    allowed = labels_for(q.answer_type, q.focus)
    asked = content_words(q.text)
    top = max(f["sm_logp"] for _, f in cands)
    z = sum(math.exp(f["sm_logp"] - top) for _, f in cands)
    keys = [normalize(span.text) for span, _ in cands]
    out = []
    for i, (span, f) in enumerate(cands):
        key = keys[i]
        words = content_words(span.text)
        better = [keys[j] for j, (_, g) in enumerate(cands) if j != i and g["sm_logp"] > f["sm_logp"] and keys[j]]
        said = content_words(sentences[span.sentence].sentence)
        row = {
            **f, "sm_p": math.exp(f["sm_logp"]), "sm_share": math.exp(f["sm_logp"] - top) / z,
            "reader_cand": float(key in reader_scores), "reader_score": reader_scores.get(key, 0.0),
            "reader_top": float(bool(stated) and key == stated), "reader_conf": reading.confidence,
            "coverage": reading.coverage,
            # the reader's candidates are of the asked type by construction
            "typed": float(span.source == "reader" or (bool(allowed) and span.label in allowed)),
            "mistyped": float(span.source != "reader" and contradicts(q.answer_type, span.text, span.label)),
            "in_question": float(bool(words) and words <= asked),
            "q_overlap": len(asked & said) / max(len(asked), 1),
            "words": math.log1p(len(span.text.split())),
            # the model's long spans run past the answer ("Elspeth Marrow in the fishing village of ..."): whether
            # this one crosses a clause break, lies inside a better-scored span, or holds one
            "punct": float(bool(_BREAK_INSIDE.search(span.text))),
            "inside_better": float(any(key != b and f" {key} " in f" {b} " for b in better)),
            "contains_better": float(any(key != b and f" {b} " in f" {key} " for b in better)),
        }  # fmt: skip
        out.append(Option(span, row))
    return out
