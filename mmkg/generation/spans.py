"""Candidate answers beyond the reader's typed ones: the named entities and noun phrases of the best sentences.

The reader proposes candidates of the type the question's parse asks for, so a question whose type the parse
misses, or a gold answer no entity recogniser marks ("the Space Telescope Science Institute" as the answer to
"which institute", "Relay 70 of Panel F"), has no right candidate. The model reads these spans too
(``mmkg.generation.model_reader``); every one of them is a span of a sentence shown, so any answer chosen among
them is supported by construction.

The phrases are maximal runs of adjectives, nouns, proper nouns and numbers from spaCy's tagger (already loaded
for the reader), joined through "of", "and" or "-" inside a capitalized name ("Relay 70 of Panel F", "Leaders in
Education Programme"): a walk over the tags spaCy gives rather than ``noun_chunks``, which need the dependency
parser (three times the tagger's cost) and stop at "of".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mmkg.generation.extractive import STOPWORDS, WORD
from mmkg.generation.phrases import tags
from mmkg.generation.sentences import entities
from mmkg.generation.short_answer import Support, normalize

PHRASE_POS = frozenset({"ADJ", "NOUN", "PROPN", "NUM"})
_LINKS = frozenset({"of", "and", "&", "-", "in", "for", "de", "von", "van", "der"})  # inside a capitalized name
MAX_WORDS = 8
_EDGE = " ,.;:!?\"'“”‘’()[]"


@dataclass(frozen=True)
class Span:
    """A candidate answer: its text, where it is (the sentence's position among those shown and its offsets),
    and what proposed it (an NER label, PHRASE, or the reader's own label)."""

    text: str
    sentence: int  # index into the sentences shown
    start: int
    end: int
    label: str
    source: str  # reader | entity | phrase


def _phrases(sentence: str, toks: Sequence[tuple[int, int, str, str]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(toks):
        if toks[i][2] not in PHRASE_POS:
            i += 1
            continue
        j = i
        while j + 1 < len(toks):
            nxt = toks[j + 1]
            if nxt[2] in PHRASE_POS:
                j += 1
                continue
            # "Relay 70 of Panel F": a link word between a capitalized/number token and a capitalized one
            link = sentence[nxt[0]:nxt[1]].lower() in _LINKS
            if link and j + 2 < len(toks) and toks[j + 2][2] in ("PROPN", "NUM") and toks[j][2] in ("PROPN", "NUM"):
                j += 2
                continue
            break
        out.append((toks[i][0], toks[j][1]))
        i = j + 1
    return out


def _named_by_question(text: str, question_words: set[str]) -> bool:
    words = {w.lower() for w in WORD.findall(text)} - STOPWORDS
    return not words or words <= question_words


def spans(question: str, sentences: Sequence[Support], model: str, limit: int = 24) -> list[Span]:
    """Entities and noun phrases of ``sentences`` (best first), one per distinct text, none that only repeats
    the question's own words, at most ``limit``."""
    qwords = {w.lower() for w in WORD.findall(question)}
    texts = [s.sentence for s in sentences]
    ents = entities(texts, model)
    tagged = tags(texts, model)
    seen: set[str] = set()
    out: list[Span] = []
    for i, (s, es, ts) in enumerate(zip(texts, ents, tagged, strict=True)):
        found = [(a, b, label, "entity") for _, label, a, b in es]
        found += [(a, b, "PHRASE", "phrase") for a, b in _phrases(s, ts)]
        for a, b, label, source in found:
            while a < b and s[a] in _EDGE:
                a += 1
            while b > a and s[b - 1] in _EDGE:
                b -= 1
            text = s[a:b]
            key = normalize(text)
            if not key or key in seen or len(key.split()) > MAX_WORDS or _named_by_question(text, qwords):
                continue
            seen.add(key)
            out.append(Span(text, i, a, b, label, source))
    return out[:limit]
