"""The evidence as sentences: split, linked to their neighbours, scored for how much they are about the question,
and their entity spans (the build's, else spaCy's NER).

The first stage of reading: the rule reader's candidates come from these sentences, and the model reader is shown
the best of them (``ranked``). A sentence that opens by pointing back ("On that flight, STS-93, ...") reads on from
the one before it, also across adjacent chunks of a document shown as evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mmkg.generation.base import Evidence
from mmkg.generation.extractive import WORD
from mmkg.generation.quantities import scale_note
from mmkg.generation.question import QuestionAnalysis, stem
from mmkg.generation.short_answer import Support, normalize

_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])|\n\s*\n+")


@dataclass
class Sentence:
    """One sentence of the evidence as the reader reads it: where it is, its neighbours, how much it is about the
    question (``pre``), and the entity spans in it."""

    text: str
    label: int  # evidence number
    rank: int  # 0-based position of its evidence
    chunk_id: str
    title: str
    offset: int  # start in the evidence text
    retrieval: float
    prev: str = ""  # the sentence before it (in its chunk, or the end of the document's previous chunk shown)
    next: str = ""  # the sentence after it, likewise
    prev_pre: float = 0.0  # the relevance of the sentence before it
    prev_label: int = 0  # the evidence number of the sentence before it
    about: float = 0.0  # 1 when it (or its page's title) names a thing the question names
    pre: float = 0.0  # how much it is about the question: retrieval score, the question's words, ``about``, rank
    ents: tuple[tuple[str, str, int, int], ...] | None = None  # the build's entity spans here; None: run NER
    scale: float | None = None  # the scale its chunk's statement note gives bare numbers ("(in thousands)")


# an initial or a short title ("St.", "Dr."), and the abbreviations of a biography's dates: "(b. 1353 – d. 1426)",
# "c. 1352", "fl. 1420", "r. 1399"
_ABBREVIATION = re.compile(r"\b[A-Z][a-z]?\.$|\b(?:St|Mt|Jr|Sr|Dr|Mr|Mrs|Ms|Co|Ft|No|Vol|Gen|Col|Lt|Rev)\.$"
                           r"|(?:^|[\s(;,])(?:b|d|c|ca|fl|r|m|bap)\.$")


def split_sentences(text: str) -> list[str]:
    """Sentences of an evidence text: at a full stop before a capital, or a blank line; not after an
    abbreviation or an initial ("St. Louis", "Dr. Ruth", "J. R. R. Tolkien", "U.S. Army", "b. 1353")."""
    out: list[str] = []
    for part in _SPLIT.split(text):
        if out and _ABBREVIATION.search(out[-1]) and not out[-1].endswith("\n"):
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    return out


def word_stems(text: str) -> set[str]:
    """The stems of ``text``'s words of two letters or more."""
    return {stem(w) for w in WORD.findall(text) if len(w) > 1}


def contains(haystack: str, needle: str) -> bool:
    """Whether ``haystack`` holds ``needle`` as whole words, both normalized (case, punctuation, articles)."""
    n = normalize(needle)
    return bool(n) and f" {n} " in f" {normalize(haystack)} "


@lru_cache(maxsize=1)
def _ner_pipeline(model: str) -> Any:
    from mmkg.nlp import load_pipeline

    return load_pipeline(model)


_NER_CACHE: dict[tuple[str, str], tuple[tuple[str, str, int, int], ...]] = {}


_NER_CACHE_MAX = 20_000


def entities(sentences: Sequence[str], model: str) -> list[tuple[tuple[str, str, int, int], ...]]:
    """(text, label, start, end) of spaCy's entities in each sentence, in one batch; sentences seen before come
    from a bounded cache. Only the token vectors and NER run (tagger, parser and lemmatizer are skipped)."""
    from mmkg.nlp import pipe_cached

    return pipe_cached(sentences, model, _NER_CACHE, _NER_CACHE_MAX, frozenset({"tok2vec", "ner"}),
                       lambda doc: tuple((e.text, e.label_, e.start_char, e.end_char) for e in doc.ents),
                       _ner_pipeline)  # fmt: skip


@lru_cache(maxsize=4096)
def _mention_finder(mentions: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    """One pattern matching any of a chunk's entity spans as whole words (longest first), and each span's label;
    compiled once per chunk (the compile costs about a millisecond, the matching microseconds)."""
    labels: dict[str, str] = {}
    for text, label in mentions:
        if text.strip():
            labels.setdefault(text.strip(), label)
    if not labels:
        return None, labels
    alts = "|".join(re.escape(t) for t in sorted(labels, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alts})(?!\w)"), labels


def _find_mentions(finder: tuple[re.Pattern[str] | None, dict[str, str]] | None,
                   sentence: str) -> tuple[tuple[str, str, int, int], ...]:  # fmt: skip
    """(text, label, start, end) of the chunk's entity spans in ``sentence``, as spaCy's ``doc.ents`` gives them."""
    if finder is None or finder[0] is None:
        return ()
    pattern, labels = finder
    return tuple((m.group(0), labels[m.group(0)], m.start(), m.end()) for m in pattern.finditer(sentence))


def follow(before: Sentence, after: Sentence) -> None:
    """Link two sentences that are read one after the other."""
    before.next = after.text
    after.prev, after.prev_pre, after.prev_label = before.text, before.pre, before.label


def read_sentences(q: QuestionAnalysis, evidence: Sequence[Evidence]) -> list[Sentence]:
    """Every sentence of the evidence's chunks, in evidence order, scored for how much it is about ``q`` and linked
    to the sentences before and after it (across a document's adjacent chunks when both are shown)."""
    wanted = word_stems(q.text) - {stem(w) for w in ("what", "which", "who", "when", "where", "how")}
    chunks = [e for e in evidence if e.kind == "chunk"]
    per_chunk: list[list[Sentence]] = []
    for rank, ev in enumerate(chunks):
        scored = {t.strip()[:60]: s for t, s in ev.sentences}
        finder = _mention_finder(ev.mentions) if ev.mentions is not None else None
        note = scale_note(ev.text)
        pos = 0
        mine: list[Sentence] = []
        for part in split_sentences(ev.text):
            part = part.strip()
            if not part:
                continue
            off = ev.text.find(part, pos)
            pos = off + len(part) if off >= 0 else pos
            s = Sentence(part, ev.label, rank, ev.chunk_id, ev.title, off, float(scored.get(part[:60], 0.0)),
                          ents=_find_mentions(finder, part) if ev.mentions is not None else None,
                          scale=note)  # fmt: skip
            words = word_stems(part)
            overlap = len(words & wanted) / len(wanted) if wanted else 0.0
            s.about = 1.0 if any(contains(part, e) or contains(ev.title, e) for e in q.entities) else 0.0
            s.pre = max(s.retrieval, 0.0) + overlap + 0.5 * s.about + 0.3 / (1 + rank)
            if mine:
                follow(mine[-1], s)
            mine.append(s)
        per_chunk.append(mine)
    # a chunk that continues another shown chunk of its document reads on from that chunk's last sentence
    shown = {(e.doc_id, e.chunk_index): mine for e, mine in zip(chunks, per_chunk, strict=True)
             if e.chunk_index is not None and mine}  # fmt: skip
    for e, mine in zip(chunks, per_chunk, strict=True):
        before = shown.get((e.doc_id, e.chunk_index - 1)) if e.chunk_index is not None else None
        if mine and before:
            follow(before[-1], mine[0])
    return [s for mine in per_chunk for s in mine]


def ranked(q: QuestionAnalysis, evidence: Sequence[Evidence], limit: int = 4) -> list[Support]:
    """The ``limit`` sentences of the evidence most about the question (retrieval score, the question's words,
    the things it names, the chunk's rank), best first: what a model reading the evidence is shown."""
    sentences = sorted(read_sentences(q, evidence), key=lambda s: -s.pre)[:limit]
    return [Support(s.label, s.text, -1, -1, s.chunk_id, s.offset) for s in sentences]
