"""The model reads: a small instruction-tuned language model chooses the answer among spans of the evidence.

The reader's rules (``mmkg.generation.reader``) find typed candidates and score them by hand-set weights; they
fit the question shapes they were written for. Here a language model reads the question against the evidence's
best sentences and scores every candidate span, and a calibrated combination of its scores with the reader's
decides. The stages, each in its own module:

1. **candidates** (``reader`` and ``spans``): the reader's typed candidates, plus the named entities and noun
   phrases of the sentences most about the question (``Reader.ranked``);
2. **model score** (``mmkg.llm.likelihood``): the log-likelihood of "The answer is X." as the whole reply to the
   question after those sentences (one prompt, its key/value cache shared by all candidates), and of the same
   reply to the question alone;
3. **features** (``features`` below): the model's scores, absolute and relative to the other candidates, and
   against the reply without the evidence (how much the evidence, not the model's habits, supports it), the
   reader's score and rank for the same text, where the span is, what kind of span it is;
4. **calibration** (``mmkg.generation.calibration``): the probability each candidate is right, and the chosen
   one's confidence; below the threshold the answer is declined and shown as a best guess;
5. **faithfulness** (``mmkg.generation.support``): what is stated is a span of a cited sentence, or declined.

Only span answers are read so: the reader's comparisons, yes/no answers, counts, arithmetic and keyed lookups
stay its own (they held on questions kept from the team: choice 0.93, yes/no 0.72), with calibrated confidence.
Measured (docs/results/answers.md): at 135M parameters the model alone is far below the rules, and combined it
moves 2Wiki's best guess little; what the stages buy is fewer wrong answers stated, by the calibrated decline.
A decline because the question names something no evidence mentions, or points at a page not retrieved, stands.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import TYPE_CHECKING

from mmkg.generation.base import Evidence
from mmkg.generation.calibration import Calibration, RuleAnswer
from mmkg.generation.question import QuestionAnalysis, labels_for
from mmkg.generation.reader import Reader
from mmkg.generation.sentences import ranked
from mmkg.generation.short_answer import Candidate, ShortAnswer, Support, bare_title, below, decline, normalize
from mmkg.generation.spans import Span, spans

if TYPE_CHECKING:
    from mmkg.llm.likelihood import LikelihoodModel

SYSTEM = "Answer the question with a short phrase copied from the context."
#: how a candidate is put as the model's reply: a whole sentence, as the model answers when it writes (a bare span
#: followed by the end of the turn, and the span without it, chose the right candidate less often on dev)
REPLY = "The answer is {}."
CONTEXT_SENTENCES = 4  # the sentences most about the question, shown to the model
READER_CANDIDATES = 5  # the reader's best typed candidates, always among those scored (their sentences shown too)
MAX_CANDIDATES = 12
#: characters of one sentence shown to the model, around the spans scored in it (a table's page text can make a
#: "sentence" of thousands), and of the whole context: the prompt's cost, which the latency budget bounds
SENTENCE_CHARS = 320
CONTEXT_CHARS = 1600
TYPES = ("person", "place", "organization", "date", "number", "string")
#: the features of a candidate, in the order the calibration file names them
FEATURES = (
    "lp", "lp_mean", "lp_gap", "p_model", "model_top", "lp_prior", "pmi", "pmi_gap", "pmi_top",
    "reader_cand", "reader_score", "reader_top", "reader_conf", "coverage",
    "typed", "entity", "phrase", "sentence_rank", "is_title", "words",
    *(f"type_{t}" for t in TYPES),
)  # fmt: skip


@dataclass
class Option:
    """A candidate as the model and calibration see it."""

    span: Span
    features: dict[str, float]
    prob: float = 0.0


def _clip(sentence: str, spans: Sequence[tuple[int, int]]) -> str:
    """``sentence`` cut to ``SENTENCE_CHARS`` around the candidates' spans in it."""
    if len(sentence) <= SENTENCE_CHARS:
        return sentence
    first = min((a for a, _ in spans), default=0)
    start = max(0, min(first - SENTENCE_CHARS // 4, len(sentence) - SENTENCE_CHARS))
    return ("… " if start else "") + sentence[start:start + SENTENCE_CHARS] + " …"


def _context(question: str, sentences: Sequence[Support], titles: dict[int, str],
             spans: dict[int, list[tuple[int, int]]]) -> str:  # fmt: skip
    lines, used = [], 0
    for i, s in enumerate(sentences):
        title = bare_title(titles.get(s.label, ""))
        text = _clip(s.sentence, spans.get(i, []))
        line = f"{title}: {text}" if title and not s.sentence.startswith(title) else text
        if lines and used + len(line) > CONTEXT_CHARS:
            break
        lines.append(line)
        used += len(line)
    return "Context:\n" + "\n".join(lines) + f"\n\nQuestion: {question}"


def _title_text(title: str) -> str:
    title = bare_title(title)
    return PurePath(title).stem if title.lower().endswith(".pdf") else title


def stated_text(reading: ShortAnswer) -> str:
    """What the reader stated, or would have (its best guess when it declined)."""
    return reading.guess if reading.abstained and reading.guess else ("" if reading.abstained else reading.text)


class ModelReader:
    """Chooses a span answer with a language model (``LikelihoodModel``) and the calibration's combination."""

    def __init__(self, model: LikelihoodModel, calibration: Calibration | None, reader: Reader | None = None):
        self.model = model
        self.calibration = calibration
        self.reader = reader or Reader()

    @staticmethod
    def reads(reading: ShortAnswer) -> bool:
        """Whether the model reads this question: a span answer, stated or declined for low confidence or for
        want of a typed candidate; not one declined because the evidence lacks what the question names."""
        return reading.method == "span" and reading.declined_for in ("", "confidence")

    def options(self, q: QuestionAnalysis, reading: ShortAnswer, evidence: Sequence[Evidence],
                ) -> tuple[list[Support], list[Option]]:  # fmt: skip
        """The sentences shown to the model and every candidate with its features (the model's scores included)."""
        sentences = ranked(q, evidence, CONTEXT_SENTENCES)
        where = {(s.label, s.sentence): i for i, s in enumerate(sentences)}
        cands: list[Span] = []
        reader_scores: dict[str, float] = {}
        top_score = max((c.score for c in reading.candidates), default=0.0) or 1.0
        for c in reading.candidates[:READER_CANDIDATES]:
            key = normalize(c.text)
            if not key or key in reader_scores:
                continue
            if (c.evidence, c.sentence) not in where:
                where[(c.evidence, c.sentence)] = len(sentences)
                sentences.append(Support(c.evidence, c.sentence, -1, -1))
            reader_scores[key] = c.score / top_score
            cands.append(Span(c.text, where[(c.evidence, c.sentence)], c.start, c.end, c.label, "reader"))
        seen = set(reader_scores)
        for sp in spans(q.text, sentences, self.reader.model):
            if normalize(sp.text) not in seen and len(cands) < MAX_CANDIDATES:
                seen.add(normalize(sp.text))
                cands.append(sp)
        if not cands:
            return sentences, []
        titles = {e.label: e.title for e in evidence}
        replies = [REPLY.format(c.text) for c in cands]
        where_spans: dict[int, list[tuple[int, int]]] = {}
        for c in cands:
            where_spans.setdefault(c.sentence, []).append((c.start, c.end))
        scores = self.model.continuations(SYSTEM, _context(q.text, sentences, titles, where_spans), replies)
        # the same replies to the question alone: what the model would say without the evidence (a name it favours
        # for any "who" question), so the evidence's own support is the difference (pointwise mutual information)
        prior = self.model.continuations(SYSTEM, f"Question: {q.text}", replies)
        return sentences, features(q, reading, cands, [s.logprob for s in scores], [s.mean for s in scores],
                                   [p.logprob for p in prior], reader_scores,
                                   {_title_text(t) for t in titles.values()})  # fmt: skip

    def read(self, q: QuestionAnalysis, reading: ShortAnswer, evidence: Sequence[Evidence],
             ) -> tuple[ShortAnswer, list[Option]]:  # fmt: skip
        """The answer the model and the reader's features choose, with calibrated confidence, and the candidates
        scored (best first); ``reading`` itself when the model does not read this question or finds no candidate."""
        if not self.reads(reading) or self.calibration is None:
            return reading, []
        t0 = time.perf_counter()
        sentences, opts = self.options(q, reading, evidence)
        if not opts:
            return reading, []
        out = self.choose(reading, sentences, opts)
        out.latency_ms = round(reading.latency_ms + (time.perf_counter() - t0) * 1e3, 2)
        return out, opts

    def choose(self, reading: ShortAnswer, sentences: Sequence[Support], opts: list[Option]) -> ShortAnswer:
        """The most probable of ``opts`` (sorted so, in place) as the answer, declined below the threshold."""
        assert self.calibration is not None
        cal = self.calibration
        for o in opts:
            o.prob = cal.candidate.prob(o.features)
        opts.sort(key=lambda o: -o.prob)
        decision = cal.decide([o.prob for o in opts], RuleAnswer.of(reading))
        best = opts[decision.option or 0]
        confidence = decision.confidence
        shown = sentences[best.span.sentence]
        text = best.span.text
        if best.features["reader_top"] and stated_text(reading):
            text = stated_text(reading)  # the reader's form of the same answer ("1921" for "about 1921", a number
            # at the asked scale)
        support = [Support(shown.label, shown.sentence, best.span.start, best.span.end, shown.chunk_id,
                           shown.offset)]  # fmt: skip
        cands = [Candidate(o.span.text, o.span.label, round(o.prob, 4), sentences[o.span.sentence].label,
                           sentences[o.span.sentence].sentence, o.span.start, o.span.end,
                           {k: round(v, 3) for k, v in o.features.items() if v and not k.startswith("type_")})
                 for o in opts[:5]]  # fmt: skip
        prior = stated_text(reading)
        agreed = "the rule reader agreed" if best.features["reader_top"] else \
            f"the rule reader preferred {prior!r}" if prior else "the rule reader had no typed candidate"  # fmt: skip
        why = f"{self.model.name} chose it among {len(opts)} spans of the evidence; {agreed}"
        out = replace(reading, text=text, confidence=confidence, abstained=False, guess="", support=support,
                      candidates=cands, reason=why, declined_for="", model=self.model.name)  # fmt: skip
        if not decision.stated:
            decline(out, below(confidence, cal.threshold), keep_confidence=True)
        return out


_WORDS = re.compile(r"\w+")


def features(q: QuestionAnalysis, reading: ShortAnswer, cands: Sequence[Span], lp: Sequence[float],
             mean: Sequence[float], prior: Sequence[float], reader_scores: dict[str, float],
             titles: set[str]) -> list[Option]:  # fmt: skip
    """Each candidate's features (``FEATURES``): the model's log-likelihoods and their softmax over the candidates,
    the reader's score for the same text, where the span is and what kind it is, the question's answer type."""
    top = max(lp)
    z = sum(math.exp(v - top) for v in lp)
    stated = normalize(stated_text(reading))
    allowed = labels_for(q.answer_type, q.focus)
    title_keys = {normalize(t) for t in titles if t}
    best_model = max(range(len(lp)), key=lambda i: lp[i])
    pmi = [a - b for a, b in zip(lp, prior, strict=True)]
    best_pmi = max(range(len(pmi)), key=lambda i: pmi[i])
    out = []
    for i, c in enumerate(cands):
        key = normalize(c.text)
        f = {
            "lp": lp[i], "lp_mean": mean[i], "lp_gap": lp[i] - top,
            "p_model": math.exp(lp[i] - top) / z, "model_top": float(i == best_model),
            "lp_prior": prior[i], "pmi": pmi[i], "pmi_gap": pmi[i] - pmi[best_pmi], "pmi_top": float(i == best_pmi),
            "reader_cand": float(key in reader_scores), "reader_score": reader_scores.get(key, 0.0),
            "reader_top": float(bool(stated) and key == stated), "reader_conf": reading.confidence,
            "coverage": reading.coverage, "typed": float(c.source == "reader" or c.label in allowed),
            "entity": float(c.source == "entity"), "phrase": float(c.source == "phrase"),
            "sentence_rank": 1.0 / (1 + c.sentence), "is_title": float(key in title_keys),
            "words": math.log1p(len(_WORDS.findall(c.text))),
        }  # fmt: skip
        for t in TYPES:
            f[f"type_{t}"] = float(q.answer_type == t or (t == "string" and q.answer_type not in TYPES))
        out.append(Option(c, f))
    return out
