"""The short answer without a language model: typed candidates from the evidence, scored, compared or declined.

``Reader().read(analysis, result, evidence)`` is a classic QA reader over what retrieval already found:

1. **Sentences**: every sentence of the evidence shown (``Context.evidence``), with its retrieval score
   where the strategy scored it, and its neighbours: a sentence that opens by pointing back ("On that
   flight, STS-93, ...") reads on from the one before it, also across adjacent chunks of a document.
2. **Candidates**: spaCy's entities of the labels the answer type allows (``labels_for``), numbers and
   percentages (not the digits of a name such as "GPT-4"), codes ("STS-93") and names for free strings,
   places after "in/at/near" that NER missed; for "what kind of X" / "which X", the phrases X heads ("a quiet
   and relaxed environment", ``mmkg.generation.phrases``); nothing the question itself names.
3. **Scores**: a weighted sum (``WEIGHTS``) of the sentence's relevance, the share of the question's
   relation words around the candidate (or words that say it another way: "son of" for "father",
   "died" for "death", the two halves of a life-span parenthesis) and the distance to the nearest,
   whether the sentence is about a thing the question names or a page those sentences lead to, an
   apposition naming the asked-for kind, a graph triple whose predicate is the relation, and the
   chunk's rank; the same answer in other sentences adds a little (agreement across passages); an e-mail
   or web address that spells the name the question gives is its owner's (``owner``). A number in
   a table row ("Net income | 2015: 122,641 | 2014: 266,799", ``mmkg.ingest.pdf_tables``) is scored by what
   labels its cell: the question's words its row label and its own column header name (``cell``,
   ``mmkg.generation.cells``).
4. **Two hops**: when the question names a bridge ("the director of film X", "X's stepmother" = X's
   father's wife), the bridge person is read from X's own sentences first, then the answer from the
   bridge's page.
5. **Choice and yes/no**: each option's (or named thing's) own evidence, through its bridge when the
   question compares through one, gives it values of the compared type; the ordering word picks the
   winner, and "same" asks whether the two things share a likely value.
6. **Quantities** (``mmkg.generation.quantities``): a number is answered at the scale and precision the question
   asks ("Answer in millions"), from its own scale word or its statement's "(in thousands)" note; a value that a
   "respectively" sentence or a table column states for another year than the question names scores half; the
   day of a date is no quantity; a question asking for a total credits the number that sums the values stated
   right before it (``total_of``). **Arithmetic** (``mmkg.generation.arithmetic``): a difference, sum or change of
   two values is read as two number questions and computed, both values cited.
7. **Lookup by a code or a label** (``mmkg.generation.lookup``): "the market name for AR01" is what the one line
   that holds "AR01" gives for it ("1. Little Rock AR01"), "who produced the document" what follows the label
   "Produced by:", which no sentence states, and "what happens when you press and hold the down button" what
   the table row "Down button | Press and hold | Function: ..." gives. **Definitions**
   (``mmkg.generation.definition``): "how does the document define T" is the sentence the evidence gives T as a
   lead ("T. ...", "T: ...") or after a defining verb ("T is defined as ..."), "what does T stand for" the words
   whose initials spell T beside it.
8. **Abstention**: below ``min_confidence`` the answer is "Not answerable", with the best guess kept; so is the
   answer to a question that names something (a name, a year, a code) no evidence mentions (``absent_names``),
   and an answer read off another page of the document than the one the question points at ("the governor as
   mentioned on the last page", ``RetrievalResult.pointed_pages``). Where evidence from the pages pointed at
   was retrieved, the answer is read from it alone.

Every answer carries the sentences that support it (the span by character offsets), a confidence in
[0, 1] and the graph path from the question's entity to the answer (entity → relation → entity, each
edge with its sentence): from the result's triples where they connect, else from sentences naming both.

Dates, people and places as the evidence writes them (a life span's two dates, a parent in "son of A and B", a
nationality in "X is a Chinese American actor", the town of "Town, Region, Country") are read by
``mmkg.generation.dates``, ``mmkg.generation.people`` and ``mmkg.generation.places``.

Hand-written rather than a library: the maintained extractive QA readers are trained models (SQuAD-style
transformers) whose weights cannot be fetched here and would dwarf the retrieval's cost on a CPU; spaCy
(already a dependency) supplies the NER, and the rest is the scoring above.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import PurePath
from typing import Any

from rapidfuzz import process
from rapidfuzz.distance import OSA

from mmkg import numerals
from mmkg.enumerations import LEADING_MARK
from mmkg.generation.arithmetic import combine
from mmkg.generation.base import Evidence
from mmkg.generation.cells import asked_words, named_cells, table_cell
from mmkg.generation.counting import COMPLETE, asked_parts, asks_items, count_items, count_parts
from mmkg.generation.dates import DAY_BEFORE, MONTH, MONTH_NEXT, NEXT_MONTH, YEAR, date_key, lifespan_role, unglued
from mmkg.generation.definition import defined_term, definitions, expansions
from mmkg.generation.extractive import STOPWORDS, WORD
from mmkg.generation.lookup import codes, keyed_lines, labelled_lines, named_rows
from mmkg.generation.people import described, parent_role, same_person
from mmkg.generation.phrases import focus_phrases, tags
from mmkg.generation.places import PLACE_AFTER, inner_place, same_place, weighed_as_org
from mmkg.generation.quantities import (
    NUMBER,
    as_asked,
    asks_total,
    crowded,
    period_years,
    run_of,
    scale_note,
    stated_scale,
    total_of,
    year_of,
)
from mmkg.generation.question import (
    NATIONALITY_NOUNS,
    TYPE_LABELS,
    TYPE_ONLY,
    QuestionAnalysis,
    analyze,
    kin_words,
    labels_for,
    stem,
)
from mmkg.generation.superlative import best_row, ruled_tables, text_tables
from mmkg.ingest.pdf_tables import CELL_SEP
from mmkg.numerals import spelled_number
from mmkg.parts import PART, kind_of
from mmkg.retrieval.results import RetrievalResult

NOT_ANSWERABLE = "Not answerable"
#: the default abstention threshold on confidence: the best mean of 2Wiki dev EM (its first 140 questions) and
#: MMLongBench-Doc dev accuracy, re-chosen by the same rule after the two-hop and contact mechanisms: 0.357 at
#: 0.25, 0.353 at 0.20, 0.303 at 0, 0.297 at 0.50 (docs/results/answers.md, "Abstention threshold")
MIN_CONFIDENCE = 0.25
KEYED = 0.5  # a value read off the lines that a question's code or label keys (``lookup``, ``label``)
#: the methods whose answers are declined below ``min_confidence``; a choice, a yes/no, or a value read off a keyed
#: line, a label, a row or a definition is answered whatever its confidence
THRESHOLDED = frozenset({"span", "arithmetic", "parts", "list", "superlative"})
TABLE_NAMED = 0.25  # the share of a superlative question's words a table must name around it to answer it
ROW_WORDS = 2  # the question's words a table row's labels must name to answer with its value (``row``)
_KEYED_TYPES = frozenset({"string", "person", "place", "organization"})  # names, not numbers (cells answer those)
_KEYED_WH = frozenset({"what", "which", "who", "whom", "where"})  # "is market CA03 ...?" asks yes or no
WEIGHTS = {"sentence": 1.0, "relation": 1.0, "near": 0.8, "about": 0.6, "graph": 0.5, "rank": 0.3, "focus": 0.4,
           "inner": 0.4, "cell": 1.0, "parent": 1.0, "owner": 1.0, "total": 1.0}
# features only some candidates have: they count toward a candidate's most possible score (``_total``) only where
# the candidate has them
_OCCASIONAL = frozenset({"cell", "parent", "owner", "total"})
MAX_SENTENCES = 16  # sentences sent through NER per question (the latency budget)
PREVIOUS_DISCOUNT = 0.6  # a candidate's share of the words of the sentence before its own
SAME_VALUE_SHARE = 0.8  # "same nationality": values scored within this share of a thing's best count as its own
CONTINUATION = 0.9  # ... when the sentence opens by pointing back ("On that flight", "She", "This model")
ORG_AS_PLACE = 0.6  # an organization's score as the answer to "where"
BRIDGE_PAGE = 1.0  # a bridge person whose own page was retrieved
BRIDGE_WEIGHT = 0.5  # how much the bridge's own score adds to a two-hop answer's

_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])|\n\s*\n+")
# the noun a name stands in apposition to, with its determiner: "the orbiter Columbia", "that flight, STS-93"
_APPOSITION = re.compile(r"\b(the|a|an|this|that|these|those|her|his|its|their|our|first|second|last)\s+"
                         r"(?:[a-z][\w-]*\s+)?([a-z][\w-]+),?\s*$", re.IGNORECASE)  # fmt: skip
# a sentence that opens by pointing back at the one before: a pronoun, or a demonstrative within its first words
_CONTINUES = re.compile(r"^(?:(?:\w+\s+){0,2}(?:that|this|these|those|such)\b|(?:he|she|it|they|his|her|its|their)\b)",
                        re.IGNORECASE)  # fmt: skip
_IDENT = re.compile(r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b")
_END_STOP = re.compile(r"\b[^\W\d_]{4,}\.$")  # a full stop after a word of four letters or more, not "St."
_HYPHEN_NAME = re.compile(r"-[A-Z][\w'’]+")
_CONTACTS = {
    "phone": re.compile(r"(?<![\w-])\+?\(?\d[\d ().-]{5,}\d(?![\w-])"),
    "email": re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),
    "url": re.compile(r"\b(?:https?://|www\.)[^\s<>\"]+[\w/]|\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|edu|gov|io)(?:/[^\s<>\"]*)?\b"),
}
TABLE_UNLABELLED = 0.3  # "near" of a table cell whose column has no header
_NUMERIC = re.compile(rf"\d|\b(?:{numerals.WORD}|hundred|dozen)\b", re.IGNORECASE)
# nouns of a document's parts: "Page 5", "Figure 1" say where to look, and a page's number is rarely its text
_PART_NOUNS = frozenset({"page", "pages", "figure", "fig", "table", "slide", "section", "chapter", "appendix", "part"})
# focus nouns that head no answer's phrase: the value's type ("what year"), the document and its parts
_TYPE_ONLY_FOCUS = TYPE_ONLY | _PART_NOUNS | {"document", "report", "paper", "name"}
_NAME_WORD = re.compile(r"[^\W_]+(?:-\d+)?")  # "Jane's" -> Jane, s; "Age-Old" -> Age, Old; "P-26" and "GPT-4" whole
OTHER_YEAR = 0.5  # a number's score when the sentence or table states it for a year the question does not name
_TYPED_LABELS = frozenset({"PERSON", "DATE", "TIME", "GPE", "LOC", "NORP", "CARDINAL", "PERCENT", "MONEY", "QUANTITY",
                           "ORDINAL"})  # fmt: skip


@dataclass(frozen=True)
class Support:
    """A sentence that supports the answer, the answer's span in it, and where the sentence is in its evidence."""

    label: int  # the evidence number, as cited: [label]
    sentence: str
    start: int  # the answer's span in ``sentence`` (character offsets; -1 when the sentence does not spell it)
    end: int
    chunk_id: str = ""
    offset: int = -1  # where ``sentence`` starts in the evidence text shown


@dataclass(frozen=True)
class PathStep:
    """One edge of the graph path from the question's entity to the answer."""

    subject: str
    predicate: str
    object: str
    sentence: str
    label: int | None = None  # the evidence number of the edge's sentence, when it was shown
    source: str = "relation"  # relation: a triple of the graph; mention: both named in one sentence


@dataclass(frozen=True)
class Candidate:
    text: str
    label: str  # the NER label, or NUMBER / IDENT / TITLE for spans found by pattern
    score: float
    evidence: int
    sentence: str
    start: int
    end: int
    features: dict[str, float] = field(default_factory=dict, compare=False)


@dataclass
class ShortAnswer:
    """The reader's answer: short text, confidence, support, path, and the candidates it chose among."""

    text: str
    answer_type: str
    confidence: float
    abstained: bool = False
    guess: str = ""  # the best candidate when the reader declined to answer
    method: str = ""  # span | choice | yes_no | arithmetic | parts | list | lookup | label | row | definition |
    # superlative | none
    support: list[Support] = field(default_factory=list)
    path: list[PathStep] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    reason: str = ""  # in words: why this answer (or why none)
    latency_ms: float = 0.0  # question analysis and reading
    coverage: float = 1.0  # share of the question's own words the evidence holds (span answers scale by it)
    declined_for: str = ""  # why it declined: "confidence", or what the evidence lacks (a name, the page pointed at)
    model: str = ""  # the language model that chose the answer among the candidates, when one read them

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Sentence:
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
    about: float = 0.0
    pre: float = 0.0
    ents: tuple[tuple[str, str, int, int], ...] | None = None  # the build's entity spans here; None: run NER
    scale: float | None = None  # the scale its chunk's statement note gives bare numbers ("(in thousands)")


def normalize(text: str) -> str:
    """SQuAD-style normalization: lower case, no punctuation, no articles, single spaces."""
    text = re.sub(r"[^\w\s]", " ", text.lower())
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


# ... and the abbreviations of a biography's dates: "(b. 1353 – d. 1426)", "c. 1352", "fl. 1420", "r. 1399"
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


def _stems(text: str) -> set[str]:
    return {stem(w) for w in WORD.findall(text) if len(w) > 1}


def _contains(haystack: str, needle: str) -> bool:
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


def _model() -> str:
    from mmkg.settings import get_settings

    return get_settings().spacy_model


# how an ordered comparison names its winner: (min, max) for numbers, and for dates
_ORDER_WORDS = (("smallest", "largest"), ("earliest", "latest"))
# a negation before a word: "not allowed", "never sold", "cannot be bought", "isn't open"
_NEGATION = frozenset({"not", "no", "never", "cannot", "without", "nor", "neither"})
_IN_YEAR = re.compile(r"\s+(?:in|on|at|of|for|during)\s+\d{4}$")  # "Sealink in 2019" as a title run took it
_NUMERIC_NAME = re.compile(r"[\d.,%$ ]+")


def _negated(text: str, words: set[str]) -> bool:
    """Whether a negation stands within three words before one of ``words`` (stems) in ``text``."""
    tokens = [t.lower() for t in WORD.findall(text)]
    return any(stem(t) in words and any(w in _NEGATION or w.endswith("n't") for w in tokens[max(0, i - 3) : i])
               for i, t in enumerate(tokens))  # fmt: skip


def _nearness(sentence: str, a: int, b: int, name: str) -> float:
    """How near the span ``sentence[a:b]`` stands to the nearest mention of ``name`` in it: 1 beside it, 0 when
    the sentence does not name it (the scale of ``near``: 1 / (1 + characters / 15))."""
    gaps = [a - m.end() if m.end() <= a else m.start() - b if m.start() >= b else 0
            for m in re.finditer(re.escape(name), sentence, re.IGNORECASE)]  # fmt: skip
    return 1.0 / (1.0 + min(gaps) / 15.0) if gaps else 0.0


def _number_value(text: str) -> float | None:
    m = NUMBER.search(text.replace("\u2212", "-"))
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", "").replace("$", "").rstrip("%"))
    except ValueError:
        return None


class Reader:
    """Reads a short answer out of a retrieval result's evidence; see the module docstring."""

    def __init__(self, min_confidence: float = MIN_CONFIDENCE, weights: dict[str, float] | None = None,
                 model: str | None = None):  # fmt: skip
        self.min_confidence = min_confidence
        self.weights = {**WEIGHTS, **(weights or {})}
        self.model = model or _model()

    # -- sentences ------------------------------------------------------------------------------------------------
    def _sentences(self, q: QuestionAnalysis, evidence: Sequence[Evidence]) -> list[_Sentence]:
        wanted = _stems(q.text) - {stem(w) for w in ("what", "which", "who", "when", "where", "how")}
        chunks = [e for e in evidence if e.kind == "chunk"]
        per_chunk: list[list[_Sentence]] = []
        for rank, ev in enumerate(chunks):
            scored = {t.strip()[:60]: s for t, s in ev.sentences}
            finder = _mention_finder(ev.mentions) if ev.mentions is not None else None
            note = scale_note(ev.text)
            pos = 0
            mine: list[_Sentence] = []
            for part in split_sentences(ev.text):
                part = part.strip()
                if not part:
                    continue
                off = ev.text.find(part, pos)
                pos = off + len(part) if off >= 0 else pos
                s = _Sentence(part, ev.label, rank, ev.chunk_id, ev.title, off, float(scored.get(part[:60], 0.0)),
                              ents=_find_mentions(finder, part) if ev.mentions is not None else None,
                              scale=note)  # fmt: skip
                words = _stems(part)
                overlap = len(words & wanted) / len(wanted) if wanted else 0.0
                s.about = 1.0 if any(_contains(part, e) or _contains(ev.title, e) for e in q.entities) else 0.0
                s.pre = max(s.retrieval, 0.0) + overlap + 0.5 * s.about + 0.3 / (1 + rank)
                if mine:
                    _follow(mine[-1], s)
                mine.append(s)
            per_chunk.append(mine)
        # a chunk that continues another shown chunk of its document reads on from that chunk's last sentence
        shown = {(e.doc_id, e.chunk_index): mine for e, mine in zip(chunks, per_chunk, strict=True)
                 if e.chunk_index is not None and mine}  # fmt: skip
        for e, mine in zip(chunks, per_chunk, strict=True):
            before = shown.get((e.doc_id, e.chunk_index - 1)) if e.chunk_index is not None else None
            if mine and before:
                _follow(before[-1], mine[0])
        return [s for mine in per_chunk for s in mine]

    def ranked(self, q: QuestionAnalysis, evidence: Sequence[Evidence], limit: int = 4) -> list[Support]:
        """The ``limit`` sentences of the evidence most about the question (retrieval score, the question's words,
        the things it names, the chunk's rank), best first: what a model reading the evidence is shown."""
        sentences = sorted(self._sentences(q, evidence), key=lambda s: -s.pre)[:limit]
        return [Support(s.label, s.text, -1, -1, s.chunk_id, s.offset) for s in sentences]

    def _bridge_titles(self, q: QuestionAnalysis, sentences: Sequence[_Sentence]) -> set[str]:
        """Titles of evidence that the question's own sentences name: the pages a second hop lands on."""
        own = [s.text for s in sentences if s.about]
        titles = {s.title for s in sentences if s.title}
        return {t for t in titles if not any(_contains(t, e) or _contains(e, t) for e in q.entities)
                and any(_contains(text, t) for text in own)}  # fmt: skip

    # -- candidates -----------------------------------------------------------------------------------------------
    def _spans(
        self, q: QuestionAnalysis, s: _Sentence, labels: frozenset[str], value_type: str
    ) -> list[tuple[str, str, int, int]]:
        model = self.model
        ents = list(s.ents) if s.ents is not None else list(entities([s.text], model)[0])
        spans: list[tuple[str, str, int, int]] = []
        if value_type == "number":
            covered: set[int] = set()
            for text, label, a, b in ents:
                if label in ("DATE", "TIME") and (MONTH.search(text) or YEAR.search(text) or ":" in text):
                    covered |= set(range(a, b))  # "December 31, 2017", "10:30": a day or an hour is no quantity
                elif label in labels and len(NUMBER.findall(text)) < 2:  # "$ 650,788 $ 472,321": one per value
                    spans.append((text, label, a, b))
                    covered |= set(range(a, b))
            spans = [sp for sp in spans if _NUMERIC.search(sp[0])]  # "millions", "thousands": no value
            for m in NUMBER.finditer(s.text):
                if (m.start() not in covered and not YEAR.fullmatch(m.group(0))
                        and not MONTH_NEXT.search(s.text[: m.start()]) and not NEXT_MONTH.match(s.text[m.end() :])):
                    spans.append((m.group(0), "NUMBER", m.start(), m.end()))
        elif labels:
            spans = [e for e in ents if e[1] in labels]
            if value_type == "date":
                # two dates glued where a dash was lost: two spans
                spans = _outermost([piece for sp in spans for piece in unglued(s.text, sp)])
                # "2 February 1881" that NER cut to "February 1881" (a dash before it)
                spans = [(s.text[m.start() : b], lab, m.start(), b)
                         if lab == "DATE" and (m := DAY_BEFORE.search(s.text[:a])) else (t, lab, a, b)
                         for t, lab, a, b in spans]  # fmt: skip
                covered = {i for _, _, a, b in spans for i in range(a, b)}
                spans += [(m.group(0), "DATE", m.start(), m.end()) for m in YEAR.finditer(s.text)
                          if m.start() not in covered]  # fmt: skip
            if value_type == "place":  # "died in Siversky", "born in Port of Spain": places NER missed or split
                spans = [sp for sp in spans if not any(m.start(1) <= sp[2] and sp[3] <= m.end(1) and
                                                         (sp[2], sp[3]) != (m.start(1), m.end(1))
                                                         for m in PLACE_AFTER.finditer(s.text))]  # fmt: skip
                covered = {i for _, _, a, b in spans for i in range(a, b)}
                spans += [(m.group(1), "PLACE", m.start(1), m.end(1)) for m in PLACE_AFTER.finditer(s.text)
                          if m.start(1) not in covered]  # fmt: skip
            if value_type == "person":  # "Sergio Mimica-Gezzan" that NER cut at the hyphen
                spans = [(s.text[a : a + len(t) + len(m.group(0))], lab, a, b + len(m.group(0)))
                         if (m := _HYPHEN_NAME.match(s.text[b:])) else (t, lab, a, b)
                         for t, lab, a, b in spans]  # fmt: skip
        elif q.pattern:  # a phone number, an e-mail address, a web address: the string of that shape
            spans = [(m.group(0), q.pattern.upper(), m.start(), m.end()) for m in _CONTACTS[q.pattern].finditer(s.text)]
        else:  # a free string: entities of no typed class, identifiers, title-case names
            spans = [e for e in ents if e[1] not in _TYPED_LABELS]
            covered = {i for _, _, a, b in spans for i in range(a, b)}  # a code NER typed as a number still counts
            spans += [(m.group(0), "IDENT", m.start(), m.end()) for m in _IDENT.finditer(s.text)
                      if m.start() not in covered]  # fmt: skip
            spans += named_cells(q.text, s.text)
            if _asks_kind(q):  # "what kind of environment": "a quiet and relaxed environment"
                # "which colours": the question says the focus noun in the plural ("program's" is no plural)
                plural = not any(re.sub(r"['’]s$", "", w.lower()) == q.focus for w in WORD.findall(q.text))
                # a phrase whose modifiers restate the question ("a Space Shuttle mission") says no more than it
                asked = _stems(q.text) | {stem(q.focus)}
                spans += [sp for sp in focus_phrases(q.focus, s.text, tags([s.text], model)[0], plural)
                          if _stems(sp[0]) - asked]  # fmt: skip
        qn = f" {normalize(q.text)} "
        keep = []
        for text, label, a, b in spans:
            if _END_STOP.search(text):  # "Sweden." at the end of a sentence: the full stop is no part of the name
                text, b = text[:-1], b - 1
            bare = text.rstrip(",;: ")  # "Glen Cove," as NER cut it from "Glen Cove, Long Island"
            text, b = bare, b - (len(text) - len(bare))
            if lead := LEADING_MARK.match(text):  # "• Power", "\x99 Switch": a list's bullet is no part of it
                text, a = text[lead.end() :], a + lead.end()
            n = normalize(text)
            if not n or (f" {n} " in qn and q.answer_type != "choice"):
                continue  # the question's own words are not its answer
            keep.append((text.strip(), label, a, b))
        return keep

    def _features(self, q: QuestionAnalysis, s: _Sentence, a: int, b: int, bridges: set[str],
                  relations: Sequence[tuple[set[str], str, str]]) -> dict[str, float]:  # fmt: skip
        rel, kin = set(q.relation), set(q.alternates)
        tokens = [(m.start(), stem(m.group(0))) for m in WORD.finditer(s.text)]
        here = {t for _, t in tokens}
        prev = _stems(s.prev)

        def share_in(words: set[str]) -> float:  # a kinship stated from the other side counts as one word
            return min(1.0, (len(rel & words) + bool(kin & words)) / len(rel)) if rel else 0.0

        lifespan = lifespan_role(s.text, a, b)
        if lifespan:  # "Li Yang (1959 – 2012)": a biography's first date is the birth, the second the death
            tokens = [*tokens, *((max(a - 1, 0), stem(w)) for w in lifespan)]  # said right before the date
            here = here | {stem(w) for w in lifespan}
        continues = bool(s.prev) and bool(_CONTINUES.match(s.text))
        carry = CONTINUATION if continues else PREVIOUS_DISCOUNT
        share = max(share_in(here), carry * share_in(prev))
        if continues:  # the sentence reads on from the one before: measure distances across both
            shift = len(s.prev) + 1
            tokens = [(m.start(), stem(m.group(0))) for m in WORD.finditer(s.prev)] + [
                (pos + shift, t) for pos, t in tokens]
            a, b = a + shift, b + shift
        ra, rb = a, b
        run = run_of(s.text, a - shift, b - shift) if continues else run_of(s.text, a, b)
        if run is not None:  # "... was $4.9 billion, $6.4 billion, and $8.8 billion for 2015, 2016, and 2017"
            ra, rb = (run[0] + shift, run[1] + shift) if continues else run
        dist = min((abs(pos - ra) if pos < ra else abs(pos - rb) for pos, t in tokens
                    if (t in rel or t in kin) and not ra <= pos < rb), default=None)  # fmt: skip
        near = 1.0 / (1.0 + dist / 15.0) if dist is not None else 0.0
        relevance = max(s.pre, carry * s.prev_pre) if continues else s.pre
        about = s.about or (PREVIOUS_DISCOUNT if any(_contains(s.prev, e) or _contains(s.next, e)
                                                     for e in q.entities) else 0.0)  # fmt: skip
        if not about and s.title in bridges:
            about = 0.8
        cand = normalize(s.text[a - shift : b - shift] if continues else s.text[a:b])
        graph = 1.0 if any(pred & rel and (cand in subj or cand in obj) for pred, subj, obj in relations) else 0.0
        focus = self._focus(q, s, a - shift if continues else a, here | prev)
        cell = None if continues else table_cell(s.text, a, b)
        cover = 0.0
        if cell is not None:  # a table cell: what labels it is its row's label and its own column's header
            caption, label, header = cell
            share = share_in(_stems(f"{caption} {label} {header}"))
            asked = asked_words(q.text)
            head = asked_words(header)
            near = len(head & asked) / len(head) if head else TABLE_UNLABELLED
            # the share of the question's words that the row's own label and the column's header name (the
            # caption names the table, the same for every row)
            cover = len(asked & asked_words(f"{label} {header}")) / len(asked) if asked else 0.0
            # ... and how much of the row's label the question asks: "PaLM-2L" is the row "PaLM-2L", not the row
            # "PaLM-2L + RAG", which holds every word asked too
            row = asked_words(label)
            cover *= 0.5 + 0.5 * (len(row & asked) / len(row)) if row else 1.0
        features = {"sentence": min(relevance, 2.0) / 2.0, "relation": share, "near": near, "about": about,
                    "graph": graph, "rank": 1.0 / (1 + s.rank), "focus": focus}  # fmt: skip
        parent = "fathe" if "fathe" in rel else "mothe" if "mothe" in rel else ""
        if parent and (role := parent_role(s.text, a - shift, b - shift) if continues else parent_role(s.text, a, b)):
            features["parent"] = 1.0 if stem(role) == parent else -1.0  # the father asked, the mother named
        if cell is not None:  # the row and the column say what the question asks: the table states the answer
            features["cell"] = cover * near
        return features

    @staticmethod
    def _focus(q: QuestionAnalysis, s: _Sentence, a: int, words: set[str]) -> float:
        """Whether the candidate is named as a thing of the kind asked for ("Which *mission* ...").

        An apposition names the kind: "her first mission, STS-63" (a mission), "the orbiter Columbia" (an
        orbiter, not a mission). A demonstrative points back: "On that flight, STS-93" is the thing the
        sentence before spoke of, so it is a mission when that sentence speaks of one. Without an
        apposition the kind word nearby counts half.
        """
        if not q.focus:
            return 0.0
        want = stem(q.focus)
        m = _APPOSITION.search(s.text[:a])
        if m is None:
            return 0.5 if want in words else 0.0
        det, noun = m.group(1).lower(), m.group(2)
        if stem(noun) == want:
            return 1.0
        if det in ("this", "that", "these", "those") and want in _stems(s.prev):
            return 1.0
        return 0.0

    def candidates(self, q: QuestionAnalysis, sentences: Sequence[_Sentence], value_type: str,
                   result: RetrievalResult | None = None, limit: int = MAX_SENTENCES) -> list[Candidate]:  # fmt: skip
        """Typed candidates from the best ``limit`` sentences, one per distinct answer, best first."""
        labels = labels_for(value_type, q.focus)
        pool = sorted(sentences, key=lambda s: -s.pre)[:limit]
        bridges = self._bridge_titles(q, sentences)
        relations = _relation_keys(result)
        # one batch through NER for sentences without the build's spans; _spans reads the cache
        entities([s.text for s in pool if s.ents is None], self.model)
        if value_type == "string" and _asks_kind(q):
            tags([s.text for s in pool], self.model)
        asked_periods = period_years(q.text) if q.years else set()
        total = value_type == "number" and asks_total(q.text)
        best: dict[str, Candidate] = {}
        seen: dict[str, set[str]] = {}
        for s in pool:
            row = value_type == "number" and CELL_SEP in s.text
            spans = self._spans(q, s, labels, value_type)
            # where a place starts, for "where": does a place qualify the name before it ("Sabaneta, Barinas")?
            places = {a for _, label, a, _ in spans if value_type == "place" and label in ("GPE", "LOC", "PLACE")}
            for text, label, a, b in spans:
                if row and table_cell(s.text, a, b) is None:
                    continue  # a number in a row's labels or a column header ("2015:") is no cell's value
                f = self._features(q, s, a, b, bridges, relations)
                if label == "FOCUS":
                    f["focus"] = 1.0  # its head is the noun asked about: it names a thing of the asked kind
                if q.pattern in ("email", "url") and _owned(text, (*q.entities, *q.relation_words)):
                    f["owner"] = 1.0  # "the email of Laurent Nahmiash": lnahmiash@..., not a colleague's
                if value_type == "number" and not row and crowded(s.text):
                    f["near"] = min(f["near"], TABLE_UNLABELLED)  # a table as page text: nearness says nothing
                if total and total_of(s.text, a, b):
                    f["total"] = 1.0  # "the total amount": the sum of the values stated right before it
                if value_type == "place" and q.focus not in NATIONALITY_NOUNS:
                    f["inner"] = inner_place(s.text, a, b)
                elif value_type == "place" and described(s.text, a, b, label):
                    f["relation"] = 1.0  # the sentence says what its subject is, and this is the subject's country
                score = sum(self.weights[k] * v for k, v in f.items())
                if value_type == "number" and q.years and _other_year(s.text, a, b, q.years, asked_periods):
                    score *= OTHER_YEAR  # the value a sentence or a table states for another year than the asked
                    f = {**f, "other_year": 1.0}
                if value_type == "place" and weighed_as_org(q, s.text, text, label, b, places) != q.institution:
                    # an institution answers "where" less often than a place does, unless the question's verb is
                    # one done at an institution ("Where does X work?"): then a town is the weaker answer
                    score *= ORG_AS_PLACE
                key = normalize(text)
                seen.setdefault(key, set()).add(s.text)
                if key not in best or score > best[key].score:
                    best[key] = Candidate(text, label, score, s.label, s.text, a, b, f)
        out = []
        for key, c in best.items():
            extra = 0.15 * math.log1p(len(seen[key]) - 1)
            out.append(Candidate(c.text, c.label, c.score + extra, c.evidence, c.sentence, c.start, c.end,
                                 {**c.features, "agreement": extra}))  # fmt: skip
        out.sort(key=lambda c: (-c.score, c.evidence, c.start))
        return out

    # -- the answer -----------------------------------------------------------------------------------------------
    def read(self, q: QuestionAnalysis, result: RetrievalResult | None, evidence: Sequence[Evidence]) -> ShortAnswer:
        shown, evidence = evidence, _on_pointed_pages(evidence, result)
        sentences = self._sentences(q, evidence)
        if not sentences:
            return ShortAnswer(NOT_ANSWERABLE, q.answer_type, 0.0, abstained=True, method="none",
                               reason="no evidence was retrieved")  # fmt: skip
        offsets = {(s.label, s.text): s for s in sentences}
        counted = asked_parts(q.text) if result is not None and result.parts else None
        choice = q.answer_type == "choice" and bool(q.options)
        if choice and len(q.options) > 2:
            q = replace(q, options=_titled_options(q.options, sentences))
        if counted is not None and (parts := self._parts(q, counted, result, sentences)) is not None:
            ans = parts
        elif not choice and result is not None and result.lists and \
                (listed := self._listed(q, result, sentences)) is not None:  # fmt: skip
            ans = listed
        elif choice:
            ans = self._choice(q, sentences, result)
        elif q.answer_type == "yes_no":
            ans = self._yes_no(q, sentences, result)
        elif q.superlative and (winner := self._superlative(q, evidence, sentences)) is not None:
            ans = winner
        elif q.answer_type in _KEYED_TYPES and q.wh in _KEYED_WH and \
                (keyed := self._keyed(q, evidence, sentences) or self._labelled(q, evidence, sentences) or
                 self._row(q, evidence, sentences)):  # fmt: skip
            ans = keyed
        elif q.answer_type == "string" and (asked := defined_term(q.text)) is not None and \
                (defined := self._defined(asked, evidence, sentences)) is not None:  # fmt: skip
            ans = defined
        else:
            ans = (self._arithmetic(q, evidence, result) if q.arithmetic is not None else None) or self._span(
                q, sentences, result)
            if q.arithmetic is not None and ans.method != "arithmetic" and not ans.abstained:
                # a difference or a sum answered by one value read off the evidence is wrong by construction
                decline(ans, f"the question asks for the {q.arithmetic.kind} of two values and the evidence gave one")
        ans.support = [
            Support(sp.label, sp.sentence, sp.start, sp.end, offsets[(sp.label, sp.sentence)].chunk_id,
                    offsets[(sp.label, sp.sentence)].offset) if (sp.label, sp.sentence) in offsets else sp
            for sp in ans.support
        ]  # fmt: skip
        ans.path = self._path(q, ans, sentences, result)
        # what the question names is looked for in all the evidence shown, not only on the pages it points at
        every = sentences if evidence is shown else self._sentences(q, shown)
        # a document's file name names its subject too ("NETFLIX_2015_10K.pdf" says "we" throughout)
        files = " ".join(PurePath(e.source_path).stem for e in shown if getattr(e, "source_path", None))
        absent = absent_names(q, every, files)
        ans.coverage, missing = self._coverage(q, every, absent)
        if ans.method == "arithmetic" and q.arithmetic is not None:  # "higher", "sum": the operation's own words
            subs = [analyze(sq, self.model) for sq in q.arithmetic.questions]
            ans.coverage, missing = min((self._coverage(sub, every, absent_names(sub, every, files))
                                         for sub in subs), key=lambda c: c[0])  # fmt: skip
        if ans.method in ("span", "arithmetic") and not ans.abstained:
            # a question about something the evidence never mentions is rarely answered by it
            ans.confidence = round(ans.confidence * ans.coverage, 3)
            if missing:
                ans.reason += f"; the evidence never mentions {', '.join(missing[:4])}"
        if not ans.abstained and absent and \
                ans.method in ("span", "arithmetic", "parts", "list", "label", "row", "definition",
                               "superlative"):  # fmt: skip
            # "What score did LLaVa + Step-Back achieve?" where no evidence names LLaVa
            decline(ans, f"the question names {', '.join(absent[:4])}, which no evidence mentions")
        off = self._off_page(ans, evidence, result)
        if off:  # "the governor as mentioned on the last page", read on the first
            decline(ans, off)
        if not ans.abstained and ans.method in THRESHOLDED and ans.confidence < self.min_confidence:
            decline(ans, below(ans.confidence, self.min_confidence), keep_confidence=True)
        return ans

    @staticmethod
    def _keyed(q: QuestionAnalysis, evidence: Sequence[Evidence], sentences: Sequence[_Sentence]) -> ShortAnswer | None:
        """What the one line keyed by the question's code gives for it (``mmkg.generation.lookup``): "1. Little
        Rock AR01" for "the market name for AR01". None when no line holds a code, or lines give it different
        values."""
        if len(codes(q.text)) != 1:
            return None  # "from P-1 to P-26": a range, or two things named, is no key
        lines = keyed_lines(q.text, _chunk_items(evidence))
        values = {normalize(k.value) for k in lines}
        if len(values) != 1:
            return None
        k = lines[0]
        _, support = _value_support(sentences, k.label, k.value, k.line)
        times = f", {len(lines)} times" if len(lines) > 1 else ""
        return ShortAnswer(k.value, q.answer_type, KEYED, method="lookup", support=support,
                           reason=f"the one line of the evidence that holds {k.code}{times}: {k.line!r}")  # fmt: skip

    @staticmethod
    def _labelled(q: QuestionAnalysis, evidence: Sequence[Evidence], sentences: Sequence[_Sentence],
                  ) -> ShortAnswer | None:  # fmt: skip
        """The value the evidence gives under a label the question asks for (``mmkg.generation.lookup``):
        "Produced by: Florida Department of Health" for "who produced the document?". A what/which question
        must name the noun it asks for and the label must hold it ("source" in "Source: eMarketer"); a who
        question's label holds its verb. Only items that state the years the question names count. None when no
        line opens with such a label, or lines give it different values."""
        head = q.focus.lower()[:5] if q.focus else ""
        if not head and q.wh not in ("who", "whom"):
            return None
        asked = set(q.relation) | ({head} if head else set())
        # the value is read off one item: the years the question names ("revised on May 2016") must be there
        items = [(e.label, e.text) for e in evidence if e.kind == "chunk" and all(str(y) in e.text for y in q.years)]
        lines = labelled_lines(asked, head, items)
        if len({normalize(k.value) for k in lines}) != 1:
            return None
        k = lines[0]
        s, support = _value_support(sentences, k.label, k.value)
        answer_type = q.answer_type
        if s is not None:  # "who produced it?": an organization, where the build's entity spans say so
            at = support[0].start
            answer_type = next((t for _, label, a, b in s.ents or () if (a, b) == (at, at + len(k.value))
                                for t, labels in TYPE_LABELS.items() if label in labels), answer_type)  # fmt: skip
        times = f", {len(lines)} times" if len(lines) > 1 else ""
        return ShortAnswer(k.value, answer_type, KEYED, method="label", support=support,
                           reason=f"the evidence gives it under the label {k.key!r}{times}: {k.line!r}")  # fmt: skip

    @staticmethod
    def _row(q: QuestionAnalysis, evidence: Sequence[Evidence], sentences: Sequence[_Sentence]) -> ShortAnswer | None:
        """The value of the table row whose labels name the question's words (``mmkg.generation.lookup``): "Down
        button | Press and hold | Function: Wake up the voice assistant." for "What will happen when you press and
        hold the down button?". The row must name at least two of the question's words and half of them; rows
        that name as many (with as few other words) but give other values answer nothing. Confidence: ``KEYED``
        times the share of the question's words the row names."""
        rows = named_rows(q.text, _chunk_items(evidence))
        asked = asked_words(q.text)
        if not rows or rows[0].named < ROW_WORDS or rows[0].named < len(asked) / 2:
            return None
        best = rows[0]
        tied = {normalize(r.value) for r in rows if (r.named, r.extra) == (best.named, best.extra)}
        if len(tied) > 1:
            return None
        share = best.named / len(asked)
        header = f" under {best.header!r}" if best.header else ""
        return ShortAnswer(best.value, q.answer_type, round(KEYED * share, 3), method="row",
                           support=_spelled_support(sentences, best.label, best.value),
                           reason=f"the table row whose labels name {best.named} of the question's {len(asked)} "
                                  f"words gives it{header}: {best.line[:160]!r}")  # fmt: skip

    @staticmethod
    def _superlative(q: QuestionAnalysis, evidence: Sequence[Evidence], sentences: Sequence[_Sentence],
                     ) -> ShortAnswer | None:  # fmt: skip
        """The label of the table row whose value wins the question's superlative (``mmkg.generation.superlative``):
        "Leaders in Education Programme" (7 months) for "Which program has the longest time period?". The table
        must name at least ``TABLE_NAMED`` of the question's words around it. Confidence: ``KEYED`` times one half
        plus half that share."""
        items = _chunk_items(evidence)
        tables = [t for label, text in items for t in (*ruled_tables(label, text), *text_tables(label, text))]
        win = best_row(q.text, q.superlative, tables, q.entities)
        if win is None or win.named < TABLE_NAMED:
            return None
        row = win.row
        support = _spelled_support(sentences, win.table.evidence, row.label) or \
            _spelled_support(sentences, win.table.evidence, row.line)  # fmt: skip
        unit = {"%": "%", "days": " days"}.get(row.kind, "")
        word = _ORDER_WORDS[0][q.superlative == "max"]
        measure = f"{win.column} value" if win.column and win.column != "total" else (win.column or "value")
        return ShortAnswer(row.label, q.answer_type, round(KEYED * (0.5 + 0.5 * win.named), 3), method="superlative",
                           support=support,
                           reason=f"the row of a table in [{win.table.evidence}] with the {word} {measure} "
                                  f"({_fmt(win.value)}{unit}, the next {_fmt(win.runner_up)}{unit}): "
                                  f"{row.line[:160]!r}",
                           )  # fmt: skip

    @staticmethod
    def _defined(asked: tuple[str, str], evidence: Sequence[Evidence], sentences: Sequence[_Sentence],
                 ) -> ShortAnswer | None:  # fmt: skip
        """The evidence's definition of the term a question asks about (``mmkg.generation.definition``): the
        first in evidence order, an acronym's spelled-out form first when it asks what the acronym stands for. A
        term defined differently in other items is answered with less confidence. None when no item defines it."""
        term, kind = asked
        items = _chunk_items(evidence)
        found = (expansions(term, items) if kind == "expand" else []) or definitions(term, items)
        if not found:
            return None
        d = found[0]
        others = {normalize(x.text) for x in found} - {normalize(d.text)}
        support = _spelled_support(sentences, d.label, d.text)
        times = f", {len(found)} times" if len(found) > 1 else ""
        disagree = f"; {len(others)} other definition(s) differ" if others else ""
        how = {"lead": "opens", "verb": "is the subject of", "expansion": "is spelled out in"}[d.shape]
        return ShortAnswer(d.text, "string", KEYED * (0.8 if others else 1.0), method="definition", support=support,
                           reason=f"the evidence defines {d.term!r} ([{d.label}]{times}): the term {how} the "
                                  f"definition{disagree}")  # fmt: skip

    @staticmethod
    def _off_page(ans: ShortAnswer, evidence: Sequence[Evidence], result: RetrievalResult | None) -> str:
        """Why an answer read off one sentence cannot answer a question that points at other pages of the same
        document ("on the last page", "page 14"), or "" when it can: the question says where the answer is."""
        pointed = result.pointed_pages if result is not None else {}
        if not pointed or ans.abstained or not ans.support or \
                ans.method not in ("span", "arithmetic", "lookup", "label", "row", "definition"):  # fmt: skip
            return ""
        home = next((e for e in evidence if e.label == ans.support[0].label), None)
        if home is None or home.page is None or home.doc_id not in pointed or home.page in pointed[home.doc_id]:
            return ""
        pages = ", ".join(str(p) for p in pointed[home.doc_id])
        return f"the question points at page(s) {pages} and the answer was read on page {home.page}"

    @staticmethod
    def _parts(q: QuestionAnalysis, counted: tuple[str, bool], result: RetrievalResult,
               sentences: Sequence[_Sentence]) -> ShortAnswer | None:  # fmt: skip
        """How many parts of the asked kind the top document labels (``mmkg.generation.counting``), each part
        listed with its page; the caption lines the evidence shows support it. None when it labels none."""
        kind, mentioned = counted
        n, confidence, rows = count_parts(kind, mentioned, result.parts)
        if not n:
            return None
        support = []
        for p in rows:
            head = " ".join(str(p["caption"] or "").split()[:6])
            s = next((s for s in sentences
                      if s.chunk_id == p["chunk_id"] and head and head in " ".join(s.text.split())), None)  # fmt: skip
            label = str(p["label"]).upper()
            m = next((m for m in PART.finditer(s.text) if kind_of(m.group(1)) == kind
                      and m.group(2).upper() == label), None) if s is not None else None  # fmt: skip
            if s is not None and m is not None:  # the label as the sentence writes it: "Appendix A", "Fig. 2"
                support.append(Support(s.label, s.text, m.start(), m.end(), s.chunk_id, s.offset))
        listed = ", ".join(f"{p['label']} (p. {p['page']})" if p["page"] else str(p["label"]) for p in rows[:12])
        listed += ", ..." if len(rows) > 12 else ""
        title = next((c.title for c in result.chunks if c.doc_id == rows[0]["doc_id"] and c.title), "")
        what = "names" if mentioned else "opens a line with (a caption, a heading, a contents entry)"
        gaps = "" if confidence == COMPLETE else "; the labels leave gaps, so some may be missed"
        doc = f"the document {title!r}" if title else "the document"
        return ShortAnswer(str(n), q.answer_type, confidence, method="parts", support=support[:3],
                           reason=f"{doc} {what} {n} {kind} label(s): {listed}{gaps}")  # fmt: skip

    @staticmethod
    def _listed(q: QuestionAnalysis, result: RetrievalResult, sentences: Sequence[_Sentence]) -> ShortAnswer | None:
        """How many items the list that best fits a "how many" question sets out (``counting.count_items``), with
        the evidence sentences that show its heading and items as support. None when no list's heading fits."""
        if not asks_items(q.text):
            return None
        got = count_items(q.text, result.lists)
        if got is None:
            return None
        n, confidence, chosen, share = got
        support = []
        for line in (chosen.heading, *chosen.items):
            s = next((s for s in sentences if line and line in s.text), None)
            if s is not None and all(sp.sentence != s.text for sp in support):
                at = s.text.index(line)
                support.append(Support(s.label, s.text, at, at + len(line), s.chunk_id, s.offset))
        pages = f"p. {chosen.pages[0]}" if len(chosen.pages) == 1 else \
            f"pp. {chosen.pages[0]}-{chosen.pages[-1]}" if chosen.pages else "the document"
        return ShortAnswer(str(n), q.answer_type, confidence, method="list", support=support[:3],
                           reason=f"the {chosen.style} list under {chosen.heading!r} ({pages}) sets out {n} item(s), "
                                  f"and its heading holds {share:.0%} of the question's words")  # fmt: skip

    def _coverage(self, q: QuestionAnalysis, sentences: Sequence[_Sentence], absent: Sequence[str] = (),
                  ) -> tuple[float, list[str]]:  # fmt: skip
        """The share of the question's own words (relation words and the words of its names) that the evidence
        holds anywhere, and the words it lacks. A name's word is held unless ``absent`` (what :func:`absent_names`
        found missing) holds it: misspelt by a slip ("Netfilx"), or in the documents' file names, it is there."""
        words = {stem(w): w for w in q.relation_words}
        for name in q.entities:
            words.update({stem(w): w for w in WORD.findall(name) if len(w) > 2 and w.lower() not in STOPWORDS})
        if not words:
            return 1.0, []
        seen: set[str] = set()
        for s in sentences:
            seen |= _stems(s.text) | _stems(s.title)
        missing = [w for st, w in words.items() if st not in seen]
        if missing:
            held = set(name_words(q)) - set(absent)
            missing = [w for w in missing if w not in held]
        return round(1.0 - len(missing) / len(words), 3), missing

    def _total(self, c: Candidate) -> float:
        """The most a candidate could have scored: a table cell's weight counts only for table cells, a parent's
        role only for a candidate a sentence names as a parent."""
        return sum(w for k, w in self.weights.items() if k not in _OCCASIONAL or k in c.features)

    def _confidence(self, cands: Sequence[Candidate]) -> float:
        top = cands[0].score / self._total(cands[0])
        margin = (cands[0].score - cands[1].score) / cands[0].score if len(cands) > 1 and cands[0].score > 0 else 1.0
        return round(max(0.0, min(1.0, top * (0.7 + 0.3 * margin))), 3)

    def _bridges(self, q: QuestionAnalysis, sentences: Sequence[_Sentence], result: RetrievalResult | None,
                 ) -> list[Candidate]:  # fmt: skip
        """The people the named thing's own sentences name in the bridge role ("directed by Li Yang" for the
        director of film X), best first; a person whose own page was retrieved ranks higher."""
        own = [s for s in sentences if s.about >= 1.0]
        if not own:
            return []
        sub = replace(q, answer_type="person", value_type="person", relation=(stem(q.bridge),), focus="",
                      alternates=tuple(stem(w) for w in kin_words(q.bridge)))  # fmt: skip
        titles = {normalize(bare_title(s.title)) for s in sentences if s.title}
        cands = self.candidates(sub, own, "person", result) + self._title_spans(sub, own, sentences, result)
        out: dict[str, Candidate] = {}
        for c in cands:
            page = 1.0 if normalize(c.text) in titles else 0.0
            c = replace(c, score=c.score + BRIDGE_PAGE * page, features={**c.features, "page": page})
            key = normalize(c.text)
            if key not in out or c.score > out[key].score:
                out[key] = c
        return sorted(out.values(), key=lambda c: -c.score)

    def _title_spans(self, q: QuestionAnalysis, own: Sequence[_Sentence], sentences: Sequence[_Sentence],
                     result: RetrievalResult | None) -> list[Candidate]:  # fmt: skip
        """Pages of the evidence that the question's own sentences name ("directed by Tinnu Anand", with Tinnu
        Anand's page retrieved): bridge candidates whatever label NER gave the name, or none."""
        names = {bare_title(s.title) for s in sentences if s.title}
        names = {n for n in names if len(n) > 2 and not any(_contains(n, e) or _contains(e, n) for e in q.entities)}
        relations = _relation_keys(result)
        bridges = self._bridge_titles(q, sentences)
        out = []
        for s in own:
            for name in names:
                at = s.text.find(name)
                if at < 0:
                    continue
                f = self._features(q, s, at, at + len(name), bridges, relations)
                score = sum(self.weights[k] * v for k, v in f.items())
                out.append(Candidate(name, "TITLE", score, s.label, s.text, at, at + len(name), f))
        return out

    def bridge_name(self, q: QuestionAnalysis, result: RetrievalResult | None, evidence: Sequence[Evidence]) -> str:
        """The bridge person of a two-hop question as the evidence names it ("" when none is read)."""
        if not q.bridge:
            return ""
        bridges = self._bridges(q, self._sentences(q, evidence), result)
        return bridges[0].text if bridges else ""

    def _two_hops(self, q: QuestionAnalysis, sentences: Sequence[_Sentence], result: RetrievalResult | None,
                  vtype: str) -> tuple[list[Candidate], Candidate | None]:  # fmt: skip
        """Candidates read from the bridge's own page: the answer is something of the person the named thing
        leads to (the director's birthplace, the director's father)."""
        bridges = self._bridges(q, sentences, result)[:2]
        best: list[tuple[float, Candidate, Candidate]] = []
        rel = q.second_hop_relation
        for b in bridges:
            name = b.text
            # the bridge's own page (its sentences say "He was born in ..." and may name the question's thing
            # too), and other sentences that name the bridge without being about the question's thing
            pool = [replace(s, about=1.0) for s in sentences
                    if _on_page(s, name) or (s.about < 1.0 and _contains(s.text, name))]  # fmt: skip
            if not pool:
                continue
            sub = replace(q, entities=(name, *q.entities), relation=rel)
            for c in self.candidates(sub, pool, vtype, result):
                own = _contains(name, c.text) or _contains(c.text, name)
                if own or (vtype == "person" and same_person(name, c.text)):
                    continue  # the bridge is not its own father or birthplace, by any spelling of the name
                best.append((c.score + BRIDGE_WEIGHT * b.score / self._total(b), c, b))
        best.sort(key=lambda x: -x[0])
        cands = [replace(c, score=score, features={**c.features, "bridge": round(b.score, 3)}) for score, c, b in best]
        return cands, (best[0][2] if best else None)

    def _span(self, q: QuestionAnalysis, sentences: Sequence[_Sentence], result: RetrievalResult | None) -> ShortAnswer:
        vtype = q.answer_type if q.answer_type in ("person", "place", "organization", "date", "number") else "string"
        bridge = None
        cands: list[Candidate] = []
        if q.bridge and q.hops == 2:
            cands, bridge = self._two_hops(q, sentences, result, vtype)
        elif q.bridge and vtype == "person":
            cands = self._bridges(q, sentences, result)
        if not cands:
            cands = self.candidates(q, sentences, vtype, result)
        if q.unit == "%":
            pct = [c for c in cands if c.text.endswith("%") or c.label == "PERCENT"]
            cands = pct + [c for c in cands if c not in pct] if pct else cands
        if q.count:
            ints = [c for c in cands if re.fullmatch(r"\d+", c.text.replace(",", "")) or c.label == "CARDINAL"]
            cands = ints or cands
        if not cands:
            return ShortAnswer(NOT_ANSWERABLE, q.answer_type, 0.0, abstained=True, method="span",
                               reason=f"no {vtype} in the evidence")  # fmt: skip
        top = cands[0]
        text = top.text
        if vtype == "number":
            text = _clean_number(top, q, sentences)
        elif vtype in ("person", "organization", "place"):
            text = _full_name(text, sentences)
        elif vtype == "date" and q.focus == "year" and (year := YEAR.search(text)):
            text = year.group(0)  # "what year" asks for the year: not "about 1954", "the summer of 1954"
        conf = self._confidence(cands)
        support = [Support(top.evidence, top.sentence, top.start, top.end)]
        home = next((x for x in sentences if x.label == top.evidence and x.text == top.sentence), None)
        if home is not None and home.prev and _CONTINUES.match(home.text) and top.features.get("relation", 0) > 0:
            # "On that flight, STS-93, ...": the sentence it reads on from says what the question asks
            support.append(Support(home.prev_label or home.label, home.prev, -1, -1))
        via = ""
        if bridge is not None:
            support.append(Support(bridge.evidence, bridge.sentence, bridge.start, bridge.end))
            via = f" of {bridge.text}, the {q.bridge} the question names,"
        return ShortAnswer(
            text, q.answer_type, conf, method="span", support=support, candidates=list(cands[:5]),
            reason=f"the evidence's best-scored candidate{via} for a question that asks for a {vtype}",
        )  # fmt: skip

    def _arithmetic(self, q: QuestionAnalysis, evidence: Sequence[Evidence], result: RetrievalResult | None,
                    ) -> ShortAnswer | None:  # fmt: skip
        """A difference, sum or change of two values (``mmkg.generation.arithmetic``): each read as the answer to
        its own number question, in the units its text states ("$3.0 billion", a statement "in thousands"),
        then combined; None when either value is not read (``read`` then declines the question, keeping the one
        value it reads as the guess)."""
        op = q.arithmetic
        assert op is not None
        read: list[tuple[Candidate, float, float | None, bool, ShortAnswer]] = []
        for question in op.questions:
            sub = replace(analyze(question, self.model), answer_type="number", count=False, scale=None,
                          decimals=None)  # fmt: skip
            sentences = self._sentences(sub, evidence)  # what each sentence is about: this value's own names
            one = self._span(sub, sentences, result)
            top = next((c for c in one.candidates if _number_value(c.text) is not None), None)
            if one.abstained or top is None:
                return None
            stated = _candidate_scale(top, sentences)
            value = _number_value(top.text)
            assert value is not None
            read.append((top, value * (stated or 1.0), stated, top.text.strip().endswith("%"), one))
        (a, va, sa, pa, one_a), (b, vb, sb, pb, one_b) = read
        if a.sentence == b.sentence and (a.start, a.end) == (b.start, b.end):
            return None  # both questions read the same number: the evidence tells them apart nowhere
        value = combine(op, (va, vb))
        if value is None:
            return None
        percent = q.unit == "%" or (pa and pb) or op.percent_change
        scale = None if op.percent_change else (q.scale or (sa if sa == sb else None))
        if scale:
            value /= scale
        places = q.decimals if q.decimals is not None else (
            2 if op.percent_change else max(_places(a.text), _places(b.text)))  # fmt: skip
        text = f"{value:.{places}f}" + ("%" if percent and not q.count else "")
        conf = round(min(one_a.confidence, one_b.confidence), 3)
        sign = {"sum": "+", "difference": "-", "change": "to"}[op.kind]
        return ShortAnswer(
            text, q.answer_type, conf, method="arithmetic",
            support=[Support(a.evidence, a.sentence, a.start, a.end), Support(b.evidence, b.sentence, b.start, b.end)],
            candidates=[a, b],
            reason=f"{op.kind} of two values read from the evidence: {a.text.strip()} [{a.evidence}] {sign} "
                   f"{b.text.strip()} [{b.evidence}] (for {op.questions[0]!r} and {op.questions[1]!r})",
        )  # fmt: skip

    def _option_sentences(self, option: str, sentences: Sequence[_Sentence]) -> list[_Sentence]:
        own = [s for s in sentences if _contains(s.title, option) or _contains(option, s.title) if s.title]
        own = own or [s for s in sentences if _contains(s.text, option)]
        # the second hop: pages the option's own sentences name ("directed by Li Yang" -> Li Yang's page)
        named = {s.title for s in sentences if s.title and any(_contains(o.text, s.title) for o in own)}
        hop = [s for s in sentences if s.title in named and s not in own]
        return own + hop

    def _value(self, q: QuestionAnalysis, option: str, sentences: Sequence[_Sentence], vtype: str,
               result: RetrievalResult | None) -> Candidate | None:  # fmt: skip
        """The best value of type ``vtype`` for one option, from its own evidence (or its bridge's)."""
        values = self._values(q, option, sentences, vtype, result)
        return values[0] if values else None

    def _values(self, q: QuestionAnalysis, option: str, sentences: Sequence[_Sentence], vtype: str,
                result: RetrievalResult | None) -> list[Candidate]:  # fmt: skip
        """An option's candidate values, best first."""
        if q.bridge and q.hops == 2:  # the value of the person the option leads to (the film's director)
            marked = [replace(s, about=1.0 if _names(s, option) else 0.0) for s in sentences]
            sub = replace(q, entities=(option,), answer_type=vtype, value_type=vtype, options=(), order="",
                          same=False)  # fmt: skip
            cands, _ = self._two_hops(sub, marked, result, vtype)
            cands = [c for c in cands if _valid(c, vtype)]
            if cands:
                return cands
        pool = self._option_sentences(option, sentences)
        if not pool:
            return []
        sub = QuestionAnalysis(q.text, vtype, q.wh, q.focus, vtype, q.relation, q.relation_words,
                               (*(e for e in q.entities if e != option and e not in q.options), option))  # fmt: skip
        pool = [replace(s, about=1.0 if _contains(s.text, option) or _contains(s.title, option) else 0.5) for s in pool]
        cands = [c for c in self.candidates(sub, pool, vtype, result) if _valid(c, vtype)]
        # a sentence that gives several options' values ("Sealink carried 21%, and Baltic Star 11%"): each
        # option's is the value nearest its own mention, as ``near`` measures nearness to the asked words
        near = {id(c): _nearness(c.sentence, c.start, c.end, option) for c in cands}
        return sorted(cands, key=lambda c: -(c.score + self.weights["near"] * near[id(c)]))

    def _ranked(self, q: QuestionAnalysis, options: Sequence[str], sentences: Sequence[_Sentence],
                result: RetrievalResult | None, vtype: str,
                ) -> tuple[dict[str, Candidate], str | None, str]:  # fmt: skip
        """Each option's value read from its own evidence, the option whose value wins the order the question asks
        (None when fewer than two values can be ordered, or the best two tie), and what the values are, for a
        reason: "Nordline: 46%; Sealink: 21%"."""
        values = {o: self._value(q, o, sentences, vtype, result) for o in options}
        found = {o: v for o, v in values.items() if v is not None}
        desc = "; ".join(f"{o}: {v.text}" for o, v in found.items())
        key = (lambda v: date_key(v.text)) if vtype == "date" else (lambda v: _number_value(v.text))
        keyed = [(o, k) for o, v in found.items() if (k := key(v)) is not None]
        ranked = sorted(keyed, key=lambda ok: ok[1], reverse=q.order == "max")
        if not q.order or len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
            return found, None, desc
        return found, ranked[0][0], desc

    def _choice(
        self, q: QuestionAnalysis, sentences: Sequence[_Sentence], result: RetrievalResult | None
    ) -> ShortAnswer:
        vtype = q.value_type or ("date" if q.order else "string")
        found, best, desc = self._ranked(q, q.options, sentences, result, vtype)
        support = [Support(v.evidence, v.sentence, v.start, v.end) for v in found.values()]
        if best is not None:
            return ShortAnswer(best, "choice", 0.8, method="choice", support=support,
                               reason=f"{_ORDER_WORDS[vtype == 'date'][q.order == 'max']} {vtype} wins ({desc})")
        # no comparison possible: the option whose evidence best matches the question
        support_of = {o: max((s.pre for s in self._option_sentences(o, sentences)), default=0.0) for o in q.options}
        best = max(q.options, key=lambda o: (support_of[o], -q.options.index(o)))
        return ShortAnswer(best, "choice", 0.3 if found else 0.2, method="choice", support=support,
                           reason=f"values found for {len(found)} of {len(q.options)} options; "
                                  "the option with the most relevant evidence")  # fmt: skip

    def _yes_no(
        self, q: QuestionAnalysis, sentences: Sequence[_Sentence], result: RetrievalResult | None
    ) -> ShortAnswer:
        things = [e for e in q.entities][:2]
        if q.same and len(things) >= 2:
            vtype = q.value_type or "place"
            # each thing's likely values (a person is often both "Cuban" and "American"; a film "British"
            # and "English"): the same when any value of one is a value of the other
            lists = {t: self._values(q, t, sentences, vtype, result) for t in things}
            likely = {t: [c for c in cs if c.score >= SAME_VALUE_SHARE * max(c.score for c in cs)][:3]
                      for t, cs in lists.items() if cs}  # fmt: skip
            if len(likely) == 2:
                (ta, va), (tb, vb) = likely.items()
                pair = next(((x, y) for x in va for y in vb if _shared_value(x.text, y.text)), None)
                shown = pair or (va[0], vb[0])
                support = [Support(v.evidence, v.sentence, v.start, v.end) for v in shown]
                desc = f"{ta}: {', '.join(v.text for v in va)}; {tb}: {', '.join(v.text for v in vb)}"
                return ShortAnswer("yes" if pair else "no", "yes_no", 0.75 if pair else 0.6, method="yes_no",
                                   support=support,
                                   reason=f"{'a shared' if pair else 'no shared'} {q.focus or vtype} ({desc})")
            found = {t: cs[0] for t, cs in lists.items() if cs}
            support = [Support(v.evidence, v.sentence, v.start, v.end) for v in found.values()]
            return ShortAnswer("no", "yes_no", 0.3, method="yes_no", support=support,
                               reason=f"a value for {len(found)} of 2; answered no")  # fmt: skip
        if q.order and (compared := self._compared(q, sentences, result)) is not None:
            return compared
        # a statement to check: does the best sentence about the named thing hold the question's words?
        best = max(sentences, key=lambda s: s.pre)
        rel = set(q.relation)
        share = len(rel & _stems(best.text)) / len(rel) if rel else 0.0
        yes = share >= 0.5
        reason = f"{share:.0%} of the question's words are in the best sentence"
        said = {int(y) for y in YEAR.findall(best.text)}
        if yes and q.years and said and not q.years & said:  # "... in 2015?" where the sentence says 2017
            years = ", ".join(map(str, sorted(said)))
            yes, reason = False, f"{reason}, but it says {years}, not {', '.join(map(str, sorted(q.years)))}"
        elif yes and _negated(best.text, rel) != _negated(q.text, rel):  # "Are pets allowed?" "Pets are not allowed."
            yes, reason = False, f"{reason}, and one of the two negates them"
        return ShortAnswer("yes" if yes else "no", "yes_no", round(0.3 + 0.4 * abs(share - 0.5), 3), method="yes_no",
                           support=[Support(best.label, best.text, -1, -1)], reason=reason)  # fmt: skip

    def _compared(self, q: QuestionAnalysis, sentences: Sequence[_Sentence], result: RetrievalResult | None,
                  ) -> ShortAnswer | None:  # fmt: skip
        """ "Did A carry a larger share than B?", "Was A born before B?": yes when the first thing named wins the
        comparison the question orders, as a choice between the two would; None without two things to compare
        or a value for each."""
        things = sorted({_IN_YEAR.sub("", e) for e in q.entities if not _NUMERIC_NAME.fullmatch(e)},
                        key=lambda e: (q.text.find(e), -len(e)))  # fmt: skip
        if len(things) != 2 or any(q.text.find(t) < 0 for t in things):
            return None
        vtype = q.value_type or "date"
        found, winner, desc = self._ranked(q, things, sentences, result, vtype)
        if winner is None:
            return None
        first = things[0]
        support = [Support(v.evidence, v.sentence, v.start, v.end) for v in found.values()]
        return ShortAnswer("yes" if winner == first else "no", "yes_no", 0.7, method="yes_no", support=support,
                           reason=f"{first} {'has' if winner == first else 'does not have'} the "
                                  f"{_ORDER_WORDS[vtype == 'date'][q.order == 'max']} {vtype} ({desc})")  # fmt: skip

    # -- the path -------------------------------------------------------------------------------------------------
    def _path(self, q: QuestionAnalysis, ans: ShortAnswer, sentences: Sequence[_Sentence],
              result: RetrievalResult | None) -> list[PathStep]:  # fmt: skip
        """Question entity → (bridge →) answer, from the result's relations, else from sentences naming both."""
        if ans.abstained or ans.method == "none" or not ans.support:
            return []
        label_of = {s.chunk_id: s.label for s in sentences}
        target = ans.text if ans.method == "span" else ""
        rels = list(result.relations) if result is not None else []
        steps: list[PathStep] = []
        if target:
            to = [r for r in rels if _contains(r.object, target) or _contains(r.subject, target)]
            for r in to:
                other = r.subject if _contains(r.object, target) else r.object
                if any(_contains(other, e) or _contains(e, other) for e in q.entities):
                    return [PathStep(r.subject, r.predicate, r.object, r.sentence, label_of.get(r.chunk_id))]
                first = next((x for x in rels if x is not r and _touches(x, [other]) and _touches(x, q.entities)), None)
                if first is not None:
                    return [PathStep(first.subject, first.predicate, first.object, first.sentence,
                                     label_of.get(first.chunk_id)),
                            PathStep(r.subject, r.predicate, r.object, r.sentence, label_of.get(r.chunk_id))]
        # from sentences: the question's entity, the page the answer's sentence is on, the answer
        sup = ans.support[0]
        home = next((s for s in sentences if s.label == sup.label), None)
        if home is None or not q.entities:
            return steps
        entity = next((e for e in q.entities if _contains(sup.sentence, e) or _contains(home.title, e)), None)
        if entity is not None and target:
            return [PathStep(entity, "stated with", target, sup.sentence, sup.label, "mention")]
        if home.title and target:
            via = next((s for s in sentences if s.about and _contains(s.text, home.title)), None)
            if via is not None:
                e = next((e for e in q.entities if _contains(via.text, e) or _contains(via.title, e)), q.entities[0])
                return [PathStep(e, "mentions", home.title, via.text, via.label, "mention"),
                        PathStep(home.title, "stated with", target, sup.sentence, sup.label, "mention")]  # fmt: skip
        return steps


def _owned(contact: str, names: Sequence[str]) -> bool:
    """Whether an e-mail address or web address spells a word the question gives for its owner (its user or site
    part: "lnahmiash@..." for "Laurent Nahmiash", in a question NER may find no name in when it is lower case)."""
    handle = contact.lower().split("@")[0] if "@" in contact else contact.lower()
    words = {w.lower() for name in names for w in WORD.findall(name) if len(w) >= 4}
    return any(w in handle for w in words)


def _asks_kind(q: QuestionAnalysis) -> bool:
    """A free-string question with a focus noun that can head its answer ("what kind of environment", "which
    program", "what is the court ..."): not a value's type ("what year"), the document or its parts."""
    return q.answer_type == "string" and bool(q.focus) and q.focus not in _TYPE_ONLY_FOCUS


def name_words(q: QuestionAnalysis) -> list[str]:
    """The words of the question's names that must be found in the evidence: a capitalized word, the digits of a
    word that holds a year ("2022" of "FY2022"), or a code whole ("AR03", "P-26"). The numbers of a document's
    parts ("Page 5", "Figure 1") are where to look, not what is named."""
    words: dict[str, str] = {}
    for name in q.entities:
        for w in _NAME_WORD.findall(name):
            if w.lower() in STOPWORDS or w.lower() in _PART_NOUNS or len(w) < 2:
                continue
            if any(ch.isdigit() for ch in w):
                digits = "".join(re.findall(r"\d+", w))
                # "FY2022", "P-26" and a year the question names; not "2" or "65+"
                if (len(digits) >= 2 and not re.fullmatch(r"[\d,.%+]+", w)) or YEAR.fullmatch(w):
                    words.setdefault(w, w)
            elif w[:1].isupper() and len(w) > 2:
                words.setdefault(w, w)
    return list(words)


def absent_names(q: QuestionAnalysis, sentences: Sequence[_Sentence], also: str = "") -> list[str]:
    """The words of the question's names that no evidence sentence or title (nor ``also``: the documents' file
    names) holds, even misspelt by a letter or two ("Neflix", "Netfilx" for Netflix: two neighbouring letters
    swapped are one slip, as optimal string alignment counts them, not two as Levenshtein's).
    :func:`name_words` says which words of the names count."""
    words = name_words(q)
    if not words:
        return []
    text = " ".join(f"{s.title} {s.text}" for s in sentences) + " " + also
    vocab = {t.lower() for t in _NAME_WORD.findall(text)}
    stems = {stem(v) for v in vocab}
    out = []
    for w in words:
        if any(ch.isdigit() for ch in w):
            digits = re.findall(r"\d+", w)
            if any(len(d) == 4 for d in digits):  # "FY2022": the evidence may write "fiscal 2022" or "2022"
                if all(d in text for d in digits):
                    continue
            elif re.search(rf"(?<![^\W_]){re.escape(w)}(?![^\W_])", text, re.IGNORECASE):
                continue  # a code ("AR03", "P-26") is there whole, or not at all: "AR01" is no "AR03"
        else:
            low = w.lower()
            if low in vocab or stem(low) in stems:
                continue
            limit = 1 if len(low) < 8 else 2
            if len(low) >= 5 and process.extractOne(low, vocab, scorer=OSA.distance,
                                                    score_cutoff=limit) is not None:  # fmt: skip
                continue
        out.append(w)
    return out


def _outermost(spans: list[tuple[str, str, int, int]]) -> list[tuple[str, str, int, int]]:
    """The spans that lie inside no other one ("January 2010" goes where "11 January 2010" is), each once."""
    out = []
    for sp in dict.fromkeys(spans):
        if not any((o[2], o[3]) != (sp[2], sp[3]) and o[2] <= sp[2] and sp[3] <= o[3] for o in spans):
            out.append(sp)
    return out


def _titled_options(options: tuple[str, ...], sentences: Sequence[_Sentence]) -> tuple[str, ...]:
    """The options with a comma inside a title put back together: "Which film has the director born first, Jára
    Cimrman Lying, Sleeping or Mr. Ace?" reads as three options until an evidence page is titled "Jára Cimrman
    Lying, Sleeping"; adjacent options whose join by a comma is such a title are one option."""
    titles = {normalize(bare_title(s.title)) for s in sentences if s.title}
    out: list[str] = []
    for option in options:
        if out and normalize(f"{out[-1]}, {option}") in titles:
            out[-1] = f"{out[-1]}, {option}"
        else:
            out.append(option)
    return tuple(out)


def _full_name(text: str, sentences: Sequence[_Sentence]) -> str:
    """A name as the corpus's own page about it writes it: "John of Luxembourg" is answered as "John of
    Luxembourg, Lord of Beauvoir" when a page of the evidence has that title (its qualifier in parentheses
    dropped). Only a title that opens with the whole name counts, and only one: two such pages leave the
    name as the text wrote it."""
    key = normalize(text)
    if not key:
        return text
    full = {bare_title(s.title) for s in sentences if s.title}
    hits = [t for t in full if normalize(t).startswith(key + " ") and t[len(text):len(text) + 1] in (",", " ")]
    return hits[0] if len(hits) == 1 else text


def _follow(before: _Sentence, after: _Sentence) -> None:
    """Link two sentences that are read one after the other."""
    before.next = after.text
    after.prev, after.prev_pre, after.prev_label = before.text, before.pre, before.label


def _valid(c: Candidate, vtype: str) -> bool:
    """Whether a candidate can be compared as a ``vtype``: a date with a year, a number that parses."""
    if vtype == "date":
        return date_key(c.text) is not None
    if vtype == "number":
        return _number_value(c.text) is not None
    return True


def _value_support(sentences: Sequence[_Sentence], label: int, value: str, *first: str,
                   ) -> tuple[_Sentence | None, list[Support]]:  # fmt: skip
    """The sentence of evidence item ``label`` that holds one of ``first`` (tried in order; the sentence splitter
    may cut a keyed line at "2.") or else ``value``, and the support marking ``value`` in it (start -1 when that
    sentence does not spell it); (None, []) when no sentence of the item holds them."""
    mine = [s for s in sentences if s.label == label]
    s = next((s for text in (*first, value) for s in mine if text in s.text), None)
    if s is None:
        return None, []
    at = s.text.find(value)
    return s, [Support(s.label, s.text, at, at + len(value) if at >= 0 else -1)]


def _chunk_items(evidence: Sequence[Evidence]) -> list[tuple[int, str]]:
    """``(label, text)`` of the evidence's chunks: what the lookups (``mmkg.generation.lookup``) and definitions
    read line by line."""
    return [(e.label, e.text) for e in evidence if e.kind == "chunk"]


def _on_pointed_pages(evidence: Sequence[Evidence], result: RetrievalResult | None) -> Sequence[Evidence]:
    """The evidence on the pages the question points at ("on page 14", "the cover page"), when any is there: the
    answer is read from them alone, rather than read elsewhere and declined (``Reader._off_page``); all of it
    when none is, or the question points nowhere."""
    pointed = result.pointed_pages if result is not None else {}
    if not pointed:
        return evidence
    there = [e for e in evidence if e.doc_id in pointed and e.page in pointed[e.doc_id]]
    return there or evidence


def _spelled_support(sentences: Sequence[_Sentence], label: int, value: str) -> list[Support]:
    """The support marking ``value`` in a sentence of evidence item ``label`` whatever the line breaks inside it
    (a definition is read with its lines joined): the whole value, else its first six words to the sentence's end
    (the sentence splitter may cut it); [] when no sentence of the item holds it."""
    words = value.split()
    for n in (len(words), min(6, len(words))):
        pattern = re.compile(r"\s+".join(re.escape(w) for w in words[:n]))
        for s in sentences:
            m = pattern.search(s.text) if s.label == label else None
            if m is not None:
                return [Support(s.label, s.text, m.start(), m.end() if n == len(words) else len(s.text))]
    return []


def _fmt(value: float) -> str:
    return f"{round(value, 2):g}"


def below(confidence: float, threshold: float) -> str:
    """"confidence 0.29 is below 0.36", with a third decimal where two would print the same number twice ("0.359
    is below 0.364", not "0.36 is below 0.36")."""
    digits = 2 if f"{confidence:.2f}" != f"{threshold:.2f}" else 3
    return f"confidence {confidence:.{digits}f} is below {threshold:.{digits}f}"


def decline(ans: ShortAnswer, why: str, keep_confidence: bool = False) -> None:
    """Turns ``ans`` into "Not answerable" in place, saying why; its text stays as the best guess, with the reason
    that made it the best, so a person can still check the guess ("declined: confidence 0.09 is below 0.25 (best
    guess 'Edmonton': the best-scored place of Jocelyn Lovell, the husband the question names, ...)")."""
    guess, because = ans.text, ans.reason
    ans.guess, ans.text, ans.abstained = guess, NOT_ANSWERABLE, True
    ans.declined_for = "confidence" if keep_confidence else why
    if not keep_confidence:
        ans.confidence = 0.0
    ans.reason = f"declined: {why} (best guess {guess!r}: {because})" if because else \
        f"declined: {why} (best guess {guess!r})"


def bare_title(title: str) -> str:
    """A page title without its parenthesized qualifier: "James Young (director)" -> "James Young"."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip()


def _on_page(s: _Sentence, name: str) -> bool:
    """Whether a sentence is on the page of ``name`` (its title, without a qualifier, is the name)."""
    return bool(s.title) and normalize(bare_title(s.title)) == normalize(name)


def _names(s: _Sentence, name: str) -> bool:
    """Whether a sentence is on ``name``'s own page or names it."""
    return _contains(s.title, name) or _contains(name, s.title) or _contains(s.text, name)


def _relation_keys(result: RetrievalResult | None) -> list[tuple[set[str], str, str]]:
    """The result's relations as the candidate features match them: (the predicate's stems, the normalized
    subject, the normalized object)."""
    return [({stem(w) for w in WORD.findall(r.predicate)}, normalize(r.subject), normalize(r.object))
            for r in (result.relations if result is not None else [])]  # fmt: skip


def _touches(r: Any, names: Sequence[str]) -> bool:
    """Whether a relation's subject or object is (or contains) one of ``names``."""
    return any(_contains(r.subject, n) or _contains(r.object, n) for n in names)


def _shared_value(a: str, b: str) -> bool:
    """Whether two nationality or country values share a place by ``same_place`` (its four-letter prefix test
    included), on the whole value or on the capitalized last part of a hyphened compound, which says where
    someone is of ("Czech-American" is American too; the "born" of "German-born" is no place)."""

    def forms(value: str) -> set[str]:
        last = re.split(r"\s*-\s*", value)[-1]
        return {f for f in (normalize(value), normalize(last) if last[:1].isupper() else "") if f}

    return any(x == y or same_place(x, y) for x in forms(a) for y in forms(b))


_PERCENT_WORD = re.compile(r"\s+per\s*cent(?:age)?\s*$", re.IGNORECASE)


def _clean_number(c: Candidate, q: QuestionAnalysis, sentences: Sequence[_Sentence]) -> str:
    """A number candidate as an answer: in digits, no thousands commas or currency sign; a percentage keeps its %
    when one is asked; at the scale and precision the question asks (``mmkg.generation.quantities``), from the
    candidate's own scale (``_candidate_scale``)."""
    m = NUMBER.search(c.text)
    if not m:  # "ten", "Twenty-five", "Ten percent": the value, as a number is written in an answer
        words, percent = _PERCENT_WORD.subn("", c.text)
        spelled = spelled_number(words)
        return c.text if spelled is None else f"{spelled}{'%' if percent and not q.count else ''}"
    num = m.group(0).replace(",", "").replace("$", "")
    if q.count:
        return num.rstrip("%")
    if (q.scale is not None or q.decimals is not None) and not num.endswith("%"):
        value = _number_value(num)
        if value is not None:
            return as_asked(value, _candidate_scale(c, sentences), q.scale, q.decimals)
    return num


def _candidate_scale(c: Candidate, sentences: Sequence[_Sentence]) -> float | None:
    """The scale a number candidate is written at: a scale word in or after it ("$3.0 billion"), else the
    statement note of its chunk ("(in thousands)"); None for a plain number."""
    m = NUMBER.search(c.text)
    own = stated_scale(c.text, m.end()) if m else None
    note = next((x.scale for x in sentences if x.label == c.evidence and x.text == c.sentence), None)
    return own or stated_scale(c.sentence, c.end, note)


def _places(text: str) -> int:
    """The decimal places a number is written with ("57.4%" -> 1)."""
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def _other_year(text: str, a: int, b: int, years: frozenset[int], periods: set[int]) -> bool:
    """Whether the number at ``text[a:b]`` is stated for a year the question does not name: paired with one by
    a "respectively" run, in a table column headed by other years, or in a text whose period (``period_years``)
    is none of the question's own ``periods``."""
    year = year_of(text, a, b)
    if year is not None:
        return year not in years
    cell = table_cell(text, a, b)
    if cell is not None:
        heads = {int(y) for y in YEAR.findall(cell[2])}
        return bool(heads) and not heads & years
    # the period a text states its values for: "Year ended December 31, 2014 as compared to ... 2013" above "a
    # $70.6 million increase in personnel-related costs" is no answer for 2015
    if not periods:
        return False
    named = period_years(text[:a]) | period_years(text[b:])
    return bool(named) and not named & periods

