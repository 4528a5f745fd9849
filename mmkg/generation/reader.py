"""The short answer without a language model: typed candidates from the evidence, scored, compared or declined.

``Reader().read(analysis, result, evidence)`` is a classic QA reader over what retrieval already found:

1. **Sentences** (``mmkg.generation.sentences``): every sentence of the evidence shown (``Context.evidence``),
   with its retrieval score where the strategy scored it, and its neighbours: a sentence that opens by pointing
   back ("On that flight, STS-93, ...") reads on from the one before it, also across adjacent chunks of a document.
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
7. **Answers read off the document's structure** (``mmkg.generation.document_answers``), by a code or a label
   (``mmkg.generation.lookup``): "the market name for AR01" is what the one line
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
from dataclasses import replace
from pathlib import PurePath
from typing import Any

from rapidfuzz import process
from rapidfuzz.distance import OSA

from mmkg import numerals
from mmkg.enumerations import LEADING_MARK
from mmkg.generation.arithmetic import combine
from mmkg.generation.base import Evidence
from mmkg.generation.cells import asked_words, named_cells, table_cell
from mmkg.generation.comparison import Comparison, titled_options
from mmkg.generation.counting import asked_parts
from mmkg.generation.dates import DAY_BEFORE, MONTH, MONTH_NEXT, NEXT_MONTH, YEAR, lifespan_role, unglued
from mmkg.generation.definition import defined_term
from mmkg.generation.document_answers import (
    count_labelled_parts,
    count_listed,
    defined,
    keyed,
    labelled,
    off_page,
    on_pointed_pages,
    row_value,
    superlative_row,
)
from mmkg.generation.extractive import STOPWORDS, WORD
from mmkg.generation.people import described, parent_role, same_person
from mmkg.generation.phrases import focus_phrases, tags
from mmkg.generation.places import PLACE_AFTER, inner_place, weighed_as_org
from mmkg.generation.quantities import (
    NUMBER,
    as_asked,
    asks_total,
    crowded,
    number_value,
    period_years,
    run_of,
    stated_scale,
    total_of,
    year_of,
)
from mmkg.generation.question import (
    NATIONALITY_NOUNS,
    TYPE_ONLY,
    QuestionAnalysis,
    analyze,
    kin_words,
    labels_for,
    stem,
)
from mmkg.generation.sentences import Sentence, contains, entities, read_sentences, word_stems
from mmkg.generation.short_answer import (
    NOT_ANSWERABLE,
    Candidate,
    PathStep,
    ShortAnswer,
    Support,
    bare_title,
    below,
    decline,
    normalize,
)
from mmkg.ingest.pdf_tables import CELL_SEP
from mmkg.numerals import spelled_number
from mmkg.retrieval.results import RetrievalResult

#: the default abstention threshold on confidence: the best mean of 2Wiki dev EM (its first 140 questions) and
#: MMLongBench-Doc dev accuracy, re-chosen by the same rule after the two-hop and contact mechanisms: 0.357 at
#: 0.25, 0.353 at 0.20, 0.303 at 0, 0.297 at 0.50 (docs/results/answers.md, "Abstention threshold")
MIN_CONFIDENCE = 0.25
#: the methods whose answers are declined below ``min_confidence``; a choice, a yes/no, or a value read off a keyed
#: line, a label, a row or a definition is answered whatever its confidence
THRESHOLDED = frozenset({"span", "arithmetic", "parts", "list", "superlative"})
_KEYED_TYPES = frozenset({"string", "person", "place", "organization"})  # names, not numbers (cells answer those)
_KEYED_WH = frozenset({"what", "which", "who", "whom", "where"})  # "is market CA03 ...?" asks yes or no
WEIGHTS = {"sentence": 1.0, "relation": 1.0, "near": 0.8, "about": 0.6, "graph": 0.5, "rank": 0.3, "focus": 0.4,
           "inner": 0.4, "cell": 1.0, "parent": 1.0, "owner": 1.0, "total": 1.0}
# features only some candidates have: they count toward a candidate's most possible score (``_total``) only where
# the candidate has them
_OCCASIONAL = frozenset({"cell", "parent", "owner", "total"})
MAX_SENTENCES = 16  # sentences sent through NER per question (the latency budget)
PREVIOUS_DISCOUNT = 0.6  # a candidate's share of the words of the sentence before its own
CONTINUATION = 0.9  # ... when the sentence opens by pointing back ("On that flight", "She", "This model")
ORG_AS_PLACE = 0.6  # an organization's score as the answer to "where"
BRIDGE_PAGE = 1.0  # a bridge person whose own page was retrieved
BRIDGE_WEIGHT = 0.5  # how much the bridge's own score adds to a two-hop answer's

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


def _model() -> str:
    from mmkg.settings import get_settings

    return get_settings().spacy_model


class Reader:
    """Reads a short answer out of a retrieval result's evidence; see the module docstring."""

    def __init__(self, min_confidence: float = MIN_CONFIDENCE, weights: dict[str, float] | None = None,
                 model: str | None = None):  # fmt: skip
        self.min_confidence = min_confidence
        self.weights = {**WEIGHTS, **(weights or {})}
        self.model = model or _model()


    def _bridge_titles(self, q: QuestionAnalysis, sentences: Sequence[Sentence]) -> set[str]:
        """Titles of evidence that the question's own sentences name: the pages a second hop lands on."""
        own = [s.text for s in sentences if s.about]
        titles = {s.title for s in sentences if s.title}
        return {t for t in titles if not any(contains(t, e) or contains(e, t) for e in q.entities)
                and any(contains(text, t) for text in own)}  # fmt: skip

    # -- candidates -----------------------------------------------------------------------------------------------
    def _spans(
        self, q: QuestionAnalysis, s: Sentence, labels: frozenset[str], value_type: str
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
                asked = word_stems(q.text) | {stem(q.focus)}
                spans += [sp for sp in focus_phrases(q.focus, s.text, tags([s.text], model)[0], plural)
                          if word_stems(sp[0]) - asked]  # fmt: skip
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

    def _features(self, q: QuestionAnalysis, s: Sentence, a: int, b: int, bridges: set[str],
                  relations: Sequence[tuple[set[str], str, str]]) -> dict[str, float]:  # fmt: skip
        rel, kin = set(q.relation), set(q.alternates)
        tokens = [(m.start(), stem(m.group(0))) for m in WORD.finditer(s.text)]
        here = {t for _, t in tokens}
        prev = word_stems(s.prev)

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
        about = s.about or (PREVIOUS_DISCOUNT if any(contains(s.prev, e) or contains(s.next, e)
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
            share = share_in(word_stems(f"{caption} {label} {header}"))
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
    def _focus(q: QuestionAnalysis, s: Sentence, a: int, words: set[str]) -> float:
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
        if det in ("this", "that", "these", "those") and want in word_stems(s.prev):
            return 1.0
        return 0.0

    def candidates(self, q: QuestionAnalysis, sentences: Sequence[Sentence], value_type: str,
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
        shown, evidence = evidence, on_pointed_pages(evidence, result)
        sentences = read_sentences(q, evidence)
        if not sentences:
            return ShortAnswer(NOT_ANSWERABLE, q.answer_type, 0.0, abstained=True, method="none",
                               reason="no evidence was retrieved")  # fmt: skip
        offsets = {(s.label, s.text): s for s in sentences}
        counted = asked_parts(q.text) if result is not None and result.parts else None
        choice = q.answer_type == "choice" and bool(q.options)
        if choice and len(q.options) > 2:
            q = replace(q, options=titled_options(q.options, sentences))
        if counted is not None and (parts := count_labelled_parts(q, counted, result, sentences)) is not None:
            ans = parts
        elif not choice and result is not None and result.lists and \
                (listed := count_listed(q, result, sentences)) is not None:  # fmt: skip
            ans = listed
        elif choice:
            ans = Comparison(self).choose(q, sentences, result)
        elif q.answer_type == "yes_no":
            ans = Comparison(self).yes_no(q, sentences, result)
        elif q.superlative and (winner := superlative_row(q, evidence, sentences)) is not None:
            ans = winner
        elif q.answer_type in _KEYED_TYPES and q.wh in _KEYED_WH and \
                (by_key := keyed(q, evidence, sentences) or labelled(q, evidence, sentences) or
                 row_value(q, evidence, sentences)):  # fmt: skip
            ans = by_key
        elif q.answer_type == "string" and (asked := defined_term(q.text)) is not None and \
                (definition := defined(asked, evidence, sentences)) is not None:  # fmt: skip
            ans = definition
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
        every = sentences if evidence is shown else read_sentences(q, shown)
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
        off = off_page(ans, evidence, result)
        if off:  # "the governor as mentioned on the last page", read on the first
            decline(ans, off)
        if not ans.abstained and ans.method in THRESHOLDED and ans.confidence < self.min_confidence:
            decline(ans, below(ans.confidence, self.min_confidence), keep_confidence=True)
        return ans


    def _coverage(self, q: QuestionAnalysis, sentences: Sequence[Sentence], absent: Sequence[str] = (),
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
            seen |= word_stems(s.text) | word_stems(s.title)
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

    def _bridges(self, q: QuestionAnalysis, sentences: Sequence[Sentence], result: RetrievalResult | None,
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

    def _title_spans(self, q: QuestionAnalysis, own: Sequence[Sentence], sentences: Sequence[Sentence],
                     result: RetrievalResult | None) -> list[Candidate]:  # fmt: skip
        """Pages of the evidence that the question's own sentences name ("directed by Tinnu Anand", with Tinnu
        Anand's page retrieved): bridge candidates whatever label NER gave the name, or none."""
        names = {bare_title(s.title) for s in sentences if s.title}
        names = {n for n in names if len(n) > 2 and not any(contains(n, e) or contains(e, n) for e in q.entities)}
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
        bridges = self._bridges(q, read_sentences(q, evidence), result)
        return bridges[0].text if bridges else ""

    def two_hops(self, q: QuestionAnalysis, sentences: Sequence[Sentence], result: RetrievalResult | None,
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
                    if _on_page(s, name) or (s.about < 1.0 and contains(s.text, name))]  # fmt: skip
            if not pool:
                continue
            sub = replace(q, entities=(name, *q.entities), relation=rel)
            for c in self.candidates(sub, pool, vtype, result):
                own = contains(name, c.text) or contains(c.text, name)
                if own or (vtype == "person" and same_person(name, c.text)):
                    continue  # the bridge is not its own father or birthplace, by any spelling of the name
                best.append((c.score + BRIDGE_WEIGHT * b.score / self._total(b), c, b))
        best.sort(key=lambda x: -x[0])
        cands = [replace(c, score=score, features={**c.features, "bridge": round(b.score, 3)}) for score, c, b in best]
        return cands, (best[0][2] if best else None)

    def _span(self, q: QuestionAnalysis, sentences: Sequence[Sentence], result: RetrievalResult | None) -> ShortAnswer:
        vtype = q.answer_type if q.answer_type in ("person", "place", "organization", "date", "number") else "string"
        bridge = None
        cands: list[Candidate] = []
        if q.bridge and q.hops == 2:
            cands, bridge = self.two_hops(q, sentences, result, vtype)
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
            sentences = read_sentences(sub, evidence)  # what each sentence is about: this value's own names
            one = self._span(sub, sentences, result)
            top = next((c for c in one.candidates if number_value(c.text) is not None), None)
            if one.abstained or top is None:
                return None
            stated = _candidate_scale(top, sentences)
            value = number_value(top.text)
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


    # -- the path -------------------------------------------------------------------------------------------------
    def _path(self, q: QuestionAnalysis, ans: ShortAnswer, sentences: Sequence[Sentence],
              result: RetrievalResult | None) -> list[PathStep]:  # fmt: skip
        """Question entity → (bridge →) answer, from the result's relations, else from sentences naming both."""
        if ans.abstained or ans.method == "none" or not ans.support:
            return []
        label_of = {s.chunk_id: s.label for s in sentences}
        target = ans.text if ans.method == "span" else ""
        rels = list(result.relations) if result is not None else []
        steps: list[PathStep] = []
        if target:
            to = [r for r in rels if contains(r.object, target) or contains(r.subject, target)]
            for r in to:
                other = r.subject if contains(r.object, target) else r.object
                if any(contains(other, e) or contains(e, other) for e in q.entities):
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
        entity = next((e for e in q.entities if contains(sup.sentence, e) or contains(home.title, e)), None)
        if entity is not None and target:
            return [PathStep(entity, "stated with", target, sup.sentence, sup.label, "mention")]
        if home.title and target:
            via = next((s for s in sentences if s.about and contains(s.text, home.title)), None)
            if via is not None:
                e = next((e for e in q.entities if contains(via.text, e) or contains(via.title, e)), q.entities[0])
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


def absent_names(q: QuestionAnalysis, sentences: Sequence[Sentence], also: str = "") -> list[str]:
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


def _full_name(text: str, sentences: Sequence[Sentence]) -> str:
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


def _on_page(s: Sentence, name: str) -> bool:
    """Whether a sentence is on the page of ``name`` (its title, without a qualifier, is the name)."""
    return bool(s.title) and normalize(bare_title(s.title)) == normalize(name)


def _relation_keys(result: RetrievalResult | None) -> list[tuple[set[str], str, str]]:
    """The result's relations as the candidate features match them: (the predicate's stems, the normalized
    subject, the normalized object)."""
    return [({stem(w) for w in WORD.findall(r.predicate)}, normalize(r.subject), normalize(r.object))
            for r in (result.relations if result is not None else [])]  # fmt: skip


def _touches(r: Any, names: Sequence[str]) -> bool:
    """Whether a relation's subject or object is (or contains) one of ``names``."""
    return any(contains(r.subject, n) or contains(r.object, n) for n in names)


_PERCENT_WORD = re.compile(r"\s+per\s*cent(?:age)?\s*$", re.IGNORECASE)


def _clean_number(c: Candidate, q: QuestionAnalysis, sentences: Sequence[Sentence]) -> str:
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
        value = number_value(num)
        if value is not None:
            return as_asked(value, _candidate_scale(c, sentences), q.scale, q.decimals)
    return num


def _candidate_scale(c: Candidate, sentences: Sequence[Sentence]) -> float | None:
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

