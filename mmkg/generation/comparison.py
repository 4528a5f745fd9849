"""Choice and yes/no questions, answered by comparison: each option's (or named thing's) own evidence gives it
values of the compared type, and the ordering word the question uses picks the winner.

"Which film came out first, A or B?" reads each film's date from its own sentences (through its bridge when the
question compares through one: "whose director was born first"), and the earlier wins; "Are A and B of the same
nationality?" asks whether the two things share a likely value; "Did A carry a larger share than B?" is a choice
between the two, answered yes when the first wins; a statement to check ("Is the museum open on Mondays?") is
yes when the best sentence about it holds the question's words, unless it names another year or negates them.
The values come from the rule reader's typed candidates (``reader.Reader.candidates``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from mmkg.generation.dates import YEAR, date_key
from mmkg.generation.extractive import WORD
from mmkg.generation.places import same_place
from mmkg.generation.quantities import number_value
from mmkg.generation.question import QuestionAnalysis, stem
from mmkg.generation.sentences import Sentence, contains, word_stems
from mmkg.generation.short_answer import Candidate, ShortAnswer, Support, bare_title, normalize
from mmkg.retrieval.results import RetrievalResult

if TYPE_CHECKING:
    from mmkg.generation.reader import Reader

SAME_VALUE_SHARE = 0.8  # "same nationality": values scored within this share of a thing's best count as its own

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


class Comparison:
    """Choice and yes/no questions answered by comparing the values each option's own evidence gives."""

    def __init__(self, reader: Reader):
        self.reader = reader

    def _option_sentences(self, option: str, sentences: Sequence[Sentence]) -> list[Sentence]:
        """The sentences about ``option``: its own page's (or those naming it), and the pages they name."""
        own = [s for s in sentences if contains(s.title, option) or contains(option, s.title) if s.title]
        own = own or [s for s in sentences if contains(s.text, option)]
        # the second hop: pages the option's own sentences name ("directed by Li Yang" -> Li Yang's page)
        named = {s.title for s in sentences if s.title and any(contains(o.text, s.title) for o in own)}
        hop = [s for s in sentences if s.title in named and s not in own]
        return own + hop

    def _value(self, q: QuestionAnalysis, option: str, sentences: Sequence[Sentence], vtype: str,
               result: RetrievalResult | None) -> Candidate | None:  # fmt: skip
        """The best value of type ``vtype`` for one option, from its own evidence (or its bridge's)."""
        values = self._values(q, option, sentences, vtype, result)
        return values[0] if values else None

    def _values(self, q: QuestionAnalysis, option: str, sentences: Sequence[Sentence], vtype: str,
                result: RetrievalResult | None) -> list[Candidate]:  # fmt: skip
        """An option's candidate values, best first."""
        if q.bridge and q.hops == 2:  # the value of the person the option leads to (the film's director)
            marked = [replace(s, about=1.0 if _names(s, option) else 0.0) for s in sentences]
            sub = replace(q, entities=(option,), answer_type=vtype, value_type=vtype, options=(), order="",
                          same=False)  # fmt: skip
            cands, _ = self.reader.two_hops(sub, marked, result, vtype)
            cands = [c for c in cands if _valid(c, vtype)]
            if cands:
                return cands
        pool = self._option_sentences(option, sentences)
        if not pool:
            return []
        sub = QuestionAnalysis(q.text, vtype, q.wh, q.focus, vtype, q.relation, q.relation_words,
                               (*(e for e in q.entities if e != option and e not in q.options), option))  # fmt: skip
        pool = [replace(s, about=1.0 if contains(s.text, option) or contains(s.title, option) else 0.5) for s in pool]
        cands = [c for c in self.reader.candidates(sub, pool, vtype, result) if _valid(c, vtype)]
        # a sentence that gives several options' values ("Sealink carried 21%, and Baltic Star 11%"): each
        # option's is the value nearest its own mention, as ``near`` measures nearness to the asked words
        near = {id(c): _nearness(c.sentence, c.start, c.end, option) for c in cands}
        return sorted(cands, key=lambda c: -(c.score + self.reader.weights["near"] * near[id(c)]))

    def _ranked(self, q: QuestionAnalysis, options: Sequence[str], sentences: Sequence[Sentence],
                result: RetrievalResult | None, vtype: str,
                ) -> tuple[dict[str, Candidate], str | None, str]:  # fmt: skip
        """Each option's value read from its own evidence, the option whose value wins the order the question asks
        (None when fewer than two values can be ordered, or the best two tie), and what the values are, for a
        reason: "Nordline: 46%; Sealink: 21%"."""
        values = {o: self._value(q, o, sentences, vtype, result) for o in options}
        found = {o: v for o, v in values.items() if v is not None}
        desc = "; ".join(f"{o}: {v.text}" for o, v in found.items())
        key = (lambda v: date_key(v.text)) if vtype == "date" else (lambda v: number_value(v.text))
        keyed = [(o, k) for o, v in found.items() if (k := key(v)) is not None]
        ranked = sorted(keyed, key=lambda ok: ok[1], reverse=q.order == "max")
        if not q.order or len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
            return found, None, desc
        return found, ranked[0][0], desc

    def choose(
        self, q: QuestionAnalysis, sentences: Sequence[Sentence], result: RetrievalResult | None
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

    def yes_no(
        self, q: QuestionAnalysis, sentences: Sequence[Sentence], result: RetrievalResult | None
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
        share = len(rel & word_stems(best.text)) / len(rel) if rel else 0.0
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

    def _compared(self, q: QuestionAnalysis, sentences: Sequence[Sentence], result: RetrievalResult | None,
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


def _valid(c: Candidate, vtype: str) -> bool:
    """Whether a candidate can be compared as a ``vtype``: a date with a year, a number that parses."""
    if vtype == "date":
        return date_key(c.text) is not None
    if vtype == "number":
        return number_value(c.text) is not None
    return True


def _shared_value(a: str, b: str) -> bool:
    """Whether two nationality or country values share a place by ``same_place`` (its four-letter prefix test
    included), on the whole value or on the capitalized last part of a hyphened compound, which says where
    someone is of ("Czech-American" is American too; the "born" of "German-born" is no place)."""

    def forms(value: str) -> set[str]:
        last = re.split(r"\s*-\s*", value)[-1]
        return {f for f in (normalize(value), normalize(last) if last[:1].isupper() else "") if f}

    return any(x == y or same_place(x, y) for x in forms(a) for y in forms(b))


def titled_options(options: tuple[str, ...], sentences: Sequence[Sentence]) -> tuple[str, ...]:
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


def _names(s: Sentence, name: str) -> bool:
    """Whether a sentence is on ``name``'s own page or names it."""
    return contains(s.title, name) or contains(name, s.title) or contains(s.text, name)
