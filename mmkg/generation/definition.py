"""Definitions: what a document says a term means, and what an acronym stands for.

"How does this document define the law of good gestalt?" is answered by the sentence the document gives the term:
"Law of good Gestalt. Elements of objects tend to be perceptually grouped together if they form a pattern that
is regular, simple, and orderly." Glossaries, slide decks, guides and reports state a definition in a few
shapes, and the span reader, which scores entities and numbers by the words around them, reads none of them:

- the term as a lead, then the definition: "Law of good Gestalt. Elements ...", "Churn rate: the share of
  ...", "Churn rate – the share ...", or the term on a line of its own above it;
- the term as a sentence's subject with a defining verb: "Churn rate is defined as ...", "... refers to ...",
  "... means ...", "... is the share of ...";
- an acronym beside its expansion: "gross domestic product (GDP)", "GDP (gross domestic product)".

``defined_term`` reads the term a question asks to define ("how does X define T", "how is T defined", "the
definition of T", "what does T mean / stand for / refer to", "what is meant by T"); ``definitions`` finds the
evidence's definitions of it, in evidence order; ``expansions`` the spelled-out forms of an acronym, whose
words' initials spell it.

Hand-written: the shapes are English defining phrasing, the same for any corpus; no maintained library extracts
definitions without a trained model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

# "how does the report define T", "how do the authors define T", "define T"
_DEFINE = re.compile(r"^(?:how\s+(?:does|do|did)\s+.+?\s+|please\s+)?define\s+(?P<t>.+?)\s*[?.]?$", re.IGNORECASE)
# "how is T defined", "how are T defined in the guide"
_DEFINED = re.compile(r"^how\s+(?:is|are|was|were)\s+(?P<t>.+?)\s+defined\b", re.IGNORECASE)
# "what is the definition of T", "according to the report, what is the definition of T", "give the definition of
# T" (the question opens with it: "Under which definition of poverty were ...?" asks something else)
_DEFINITION = re.compile(r"^(?:[^,?]*,\s*)?(?:what\s+(?:is|was|are|were)|what's|give|state|provide)\s+"
                         r"(?:(?:the|a|an)\s+)?(?:\w+\s+)?definition\s+of\s+(?P<t>.+?)\s*[?.]?$",
                         re.IGNORECASE)  # fmt: skip
# "what do you / we / the authors mean by T", before "what does T mean", which would take "you" for the term
_MEAN_BY = re.compile(r"^what\s+(?:does|do|did)\s+\S+(?:\s+\S+)?\s+mean\s+by\s+(?P<t>.+?)\s*[?.]?$", re.IGNORECASE)
# "what does T mean / stand for / refer to", "what is meant by T"
_MEAN = re.compile(r"^what\s+(?:does|do|did)\s+(?P<t>.+?)\s+(?P<verb>mean|stand\s+for|refer\s+to)\b"
                   r"|^what\s+is\s+meant\s+by\s+(?P<t2>.+?)\s*[?.]?$", re.IGNORECASE)  # fmt: skip
# a term that is only these words is none: "What does the mean score ...", "What do you mean by ..."
_NO_TERM = frozenset({"you", "we", "they", "he", "she", "it", "i", "the", "a", "an", "this", "that", "these",
                      "those", "authors", "author", "writer", "report", "document", "paper", "people", "one"})
# what may trail the term in the question: where the definition is ("in this document", "according to the
# report") or who gives it ("by the authors")
_TRAIL = re.compile(r"\s+(?:in|within|on|according\s+to|by|from|as\s+used\s+in|as\s+per|for)\s+(?:the|this|these|"
                    r"its|their|our|that)\b.*$|\s+(?:in|on)\s+(?:page|slide|section|chapter)\s+\S+.*$",
                    re.IGNORECASE)  # fmt: skip
_LEADING = re.compile(r"^(?:the|a|an)\s+(?:(?:term|word|phrase|concept|notion|acronym|abbreviation)\s+(?:of\s+)?)?",
                      re.IGNORECASE)  # fmt: skip
_QUOTES = "\"'`“”‘’"
# after the term: a lead's separator, or a defining verb
_LEAD_SEP = re.compile(r"^\s*(?:\([^)]{1,40}\)\s*)?(?:[.:]|\s[-–—]|[-–—]\s)\s*")
_VERB = re.compile(r"^\s*(?:\([^)]{1,40}\)\s*)?,?\s*(?:is|are|was|were)\s+(?:defined|described)\s+as\s+"
                   r"|^\s*(?:\([^)]{1,40}\)\s*)?,?\s*(?:refers?|relates?)\s+to\s+"
                   r"|^\s*(?:\([^)]{1,40}\)\s*)?,?\s*(?:means|denotes|describes|represents)\s+"
                   r"|^\s*(?:\([^)]{1,40}\)\s*)?,?\s*(?:is|are)\s+(?=(?:the|a|an|when|how|where)\s)",
                   re.IGNORECASE)  # fmt: skip
# a sentence ends at ". ", "! ", "? " before a capital or a digit, or at the end of the text
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])|\n\s*\n")
_MIN_WORDS = 3  # "Closure." is a heading, not a definition
_MAX_WORDS = 60  # longer is a paragraph, not a definition


@dataclass(frozen=True)
class Definition:
    """One definition of a term in one evidence item."""

    term: str  # the term as the evidence writes it
    text: str  # the definition
    label: int  # the evidence item's number
    shape: str  # "lead" (the term, then its definition), "verb" (the term is/means/refers to it) or "expansion"


def defined_term(question: str) -> tuple[str, str] | None:
    """``(term, kind)`` of a question that asks what a term means: kind "expand" for "what does T stand for",
    else "define". None for any other question."""
    text = " ".join(question.split()).strip()
    for pattern in (_DEFINED, _DEFINITION, _MEAN_BY, _MEAN, _DEFINE):
        m = pattern.search(text)
        if m is None:
            continue
        term = next(g for g in (m.groupdict().get("t"), m.groupdict().get("t2")) if g)
        kind = "expand" if "stand" in (m.groupdict().get("verb") or "").lower() else "define"
        term = _clean_term(term)
        if term:
            return term, kind
    return None


def _clean_term(term: str) -> str:
    """The term without what trails it ("in this report"), an article or "the term" before it and its quotes; a
    quoted term is taken as quoted ("return on the investment"); "" for no term (pronouns, more than 8 words)."""
    quoted = re.search(r"[\"“‘'`]([^\"”’'`]{2,80})[\"”’'`]", term)
    term = quoted.group(1) if quoted is not None else _TRAIL.sub("", term.strip())
    term = _LEADING.sub("", term.strip()).strip().strip(_QUOTES + " ?.,").strip()
    words = term.lower().split()
    if not re.search(r"[^\W\d_]", term) or len(words) > 8 or all(w in _NO_TERM for w in words):
        return ""
    return term


def definitions(term: str, evidence: Iterable[tuple[int, str]]) -> list[Definition]:
    """The evidence's definitions of ``term`` (``(label, text)`` items, in their order): where the term opens a
    line or a sentence and a lead's separator or a defining verb follows it. The definition is the rest of that
    sentence after a verb, or the sentence that follows a lead; one of fewer than three or more than sixty words
    is no definition."""
    words = [re.escape(w) for w in term.split()]
    if not words:
        return []
    spelled = r"\s+".join(words)
    # the term opens the text, a line or a sentence (after a bullet or a colon too), an article allowed before it
    at_term = re.compile(rf"(?:^|(?<=[\n.!?:;•▪●]\s)|(?<=\n)|(?<=[.!?]\s{{2}}))\s*(?:(?:the|a|an)\s+)?"
                         rf"(?P<term>{spelled})(?!\w)", re.IGNORECASE)  # fmt: skip
    found: list[Definition] = []
    for label, text in evidence:
        for m in at_term.finditer(text):
            after = text[m.end() :]
            verb = _VERB.match(after)
            if verb is not None:
                body, shape = _sentence(after[verb.end() :]), "verb"
            else:
                lead = _LEAD_SEP.match(after)
                if lead is None and not re.match(r"[ \t]*\n", after):
                    continue  # the term inside a sentence about something else
                body, shape = _sentence(after[lead.end() :] if lead else after.lstrip()), "lead"
            if _MIN_WORDS <= len(body.split()) <= _MAX_WORDS and body[:1].isalnum():
                found.append(Definition(" ".join(m["term"].split()), body, label, shape))
    return found


def _sentence(text: str) -> str:
    """The first sentence of ``text``, its lines joined."""
    m = _SENTENCE_END.search(text)
    first = text[: m.start()] if m else text
    return " ".join(first.split()).strip()


def expansions(acronym: str, evidence: Iterable[tuple[int, str]]) -> list[Definition]:
    """The spelled-out forms of ``acronym`` in the evidence: "gross domestic product (GDP)" or "GDP (gross
    domestic product)", the words' initials (small words such as "of" and "and" may be skipped) spelling it."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z&.]{1,9}", acronym) or not any(ch.isupper() for ch in acronym):
        return []
    letters = re.sub(r"[^A-Za-z]", "", acronym).lower()
    found: list[Definition] = []
    before = re.compile(rf"(?P<words>(?:[\w-]+[ \t]+){{{len(letters) - 1},{2 * len(letters) + 2}}}[\w-]+)[ \t]*"
                        rf"\(\s*{re.escape(acronym)}\s*\)")  # fmt: skip
    after = re.compile(rf"(?<!\w){re.escape(acronym)}\s*\((?P<words>[^()]{{3,120}})\)")
    for label, text in evidence:
        for m in before.finditer(text):
            words = m["words"].split()
            for start in range(len(words)):  # the shortest tail of the words whose initials spell it
                tail = words[len(words) - 1 - start :]
                if _spells(tail, letters):
                    found.append(Definition(acronym, " ".join(tail), label, "expansion"))
                    break
        for m in after.finditer(text):
            words = m["words"].split()
            if _spells(words, letters):
                found.append(Definition(acronym, " ".join(words), label, "expansion"))
    return found


_SMALL = frozenset({"of", "and", "for", "the", "in", "on", "to", "&", "a", "an"})


def _spells(words: list[str], letters: str) -> bool:
    """Whether the words' initials spell ``letters``, small words allowed to be skipped; the first and last word
    must each give a letter."""
    if not words or words[0].lower() in _SMALL or words[-1].lower() in _SMALL:
        return False

    @cache
    def match(i: int, j: int) -> bool:
        if i == len(words):
            return j == len(letters)
        w = words[i].lower()
        if j < len(letters) and w[:1] == letters[j] and match(i + 1, j + 1):
            return True
        return w in _SMALL and match(i + 1, j)

    return match(0, 0)
