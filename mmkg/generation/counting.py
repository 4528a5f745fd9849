"""Counting a document's labelled parts: "How many appendices appear in the document?"

A count over a whole document is out of reach of a reader that sees eight chunks: the answer is how many
distinct parts the document labels, and the parts table (``mmkg.parts``, one row per label with the line that
defines it) holds exactly that. ``asked_parts`` reads such a question: "how many" followed directly by a kind of
part in the plural ("figures", "tables", "appendices", "exhibits", ...). A kind with a word before it ("how many
*pie* charts", "how many *green* bars") counts what pictures show, not labels, and a question that names a page
or a part after it ("... in Appendix C", "... on the first page", "... in the appendix") counts inside it:
neither is read here. Nor is whether "tables" means the document's tables: the answer names the document and
its parts, for a person to check. ``count_parts``
answers with the number of parts of that kind the document defines (a caption or heading line opens with the
label), or, when the question asks what is *mentioned* or *referred to*, every label the text names.

The confidence says whether the labels run without a gap from the first (1, or A): "Appendix A ... E" all
defined is likely the whole set; "Figure 2, 5, 9" says some were missed.

Counting a list's items: "How many steps are required to replace the grille?" Any other "how many" question may
be answered by the length of a list the document sets out (``mmkg.enumerations``: "To replace the grille: 1. ...
2. ... 3. ..."). ``count_items`` takes the list whose heading (and the line above it) holds the largest share of
the question's content words, at least ``LIST_MATCH`` of them, among the lists on the evidence's pages; its
confidence is that share, scaled by ``LIST_CONFIDENCE``, and halved when another list that matches as well
counts differently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mmkg.enumerations import Enumeration
from mmkg.generation.extractive import content_words
from mmkg.parts import KINDS, mentions

#: confidence of a count whose labels run 1..n (or A..) without a gap, and of one with gaps (below the reader's
#: default threshold, 0.25: declined, the count kept as its guess)
COMPLETE, GAPPED = 0.6, 0.2
_KINDS = [k for k in KINDS.split("|") if not k.endswith(".")]


def _plurals(kind: str) -> set[str]:
    """A kind's plural forms ("figure" -> figures; "annex" -> annexes; "appendix" -> appendixes, appendices)."""
    if not kind.endswith("x"):
        return {kind + "s"}
    return {kind + "es", kind[:-1] + "ces"} if kind.endswith("ix") else {kind + "es"}


PLURALS = {form: kind for kind in _KINDS for form in _plurals(kind)}
_HOW_MANY = re.compile(r"\bhow\s+many\s+([a-z]+)\b(.*)", re.IGNORECASE | re.DOTALL)
# a question scoped to part of the document: "on page 5", "on the first page", "in the appendix", "in Chapter Two"
_SCOPED = re.compile(r"\b(?:pages?|slides?|p\.\s*\d|appendix|appendices|sections?|chapters?|annex(?:es)?|"
                     r"exhibits?|schedules?)\b", re.IGNORECASE)
_MENTIONED = re.compile(r"\b(?:mention|cite|refer|name)", re.IGNORECASE)


def asked_parts(question: str) -> tuple[str, bool] | None:
    """``(kind, mentioned)`` when ``question`` asks how many parts of one kind its document has; else None."""
    m = _HOW_MANY.search(question)
    if m is None or (kind := PLURALS.get(m.group(1).lower())) is None:
        return None
    rest = m.group(2)
    if next(mentions(rest), None) is not None or _SCOPED.search(rest):
        return None  # "... in Appendix C", "... on page 5", "... in the appendix": a count inside one part or page
    return kind, bool(_MENTIONED.search(rest))


def _order(label: str) -> int | None:
    """A label's place in its sequence: "3" -> 3, "C" -> 3; None for "2.1", "P-10", "4b"."""
    if label.isdecimal():
        return int(label)
    if len(label) == 1 and label.isalpha():
        return ord(label.upper()) - ord("A") + 1
    return None


def count_parts(kind: str, mentioned: bool, parts: Iterable[Mapping[str, Any]]) -> tuple[int, float, list[Mapping]]:
    """``(count, confidence, the parts counted in label order)`` of the document's parts of ``kind``: those it defines,
    or every one it names when ``mentioned``."""
    rows = [p for p in parts if p["kind"] == kind and (mentioned or p["caption"])]
    rows.sort(key=lambda p: (_order(str(p["label"])) or 10**6, str(p["label"])))  # in label order: A, B, C
    orders = [o for p in rows if (o := _order(str(p["label"]))) is not None]
    complete = bool(rows) and len(orders) == len(rows) and orders == list(range(1, len(rows) + 1))
    return len(rows), (COMPLETE if complete else GAPPED) if rows else 0.0, rows


#: the share of a question's content words a list's heading must hold for its length to answer "how many"
LIST_MATCH = 0.5
#: a list answer's confidence per unit of that share (a heading holding every word: 0.7)
LIST_CONFIDENCE = 0.7
_ASKS_COUNT = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
_NUMBER_WORD = re.compile(r"(?<![\w.])\d+(?![\w.])")


def asks_items(question: str) -> bool:
    """Whether ``question`` asks how many of something, other than a count of labelled parts."""
    return bool(_ASKS_COUNT.search(question)) and asked_parts(question) is None


def _words(text: str) -> set[str]:
    """Content words and numbers: "UNIT 8" above a list is what "in unit 8" asks, not unit 7's list."""
    return content_words(text) | set(_NUMBER_WORD.findall(text))


def count_items(question: str, lists: Sequence[Enumeration]) -> tuple[int, float, Enumeration, float] | None:
    """``(count, confidence, the list counted, its heading's share of the question's words)`` of the list that
    best answers a "how many" question, or None when no list's heading holds ``LIST_MATCH`` of its words.
    ``lists`` come best first (the evidence's order): of lists that match equally, the first is taken."""
    asked = _words(_ASKS_COUNT.sub(" ", question))
    if not asked:
        return None
    best: tuple[float, Enumeration] | None = None
    rivals: list[Enumeration] = []
    for e in lists:
        share = len(asked & _words(f"{e.heading} {e.context}")) / len(asked)
        if share < LIST_MATCH:
            continue
        if best is None or share > best[0]:
            best, rivals = (share, e), []
        elif share == best[0]:
            rivals.append(e)
    if best is None:
        return None
    share, chosen = best
    confidence = share * LIST_CONFIDENCE
    if any(len(r.items) != len(chosen.items) for r in rivals):
        confidence /= 2  # another list fits the question as well and counts differently
    return len(chosen.items), round(confidence, 3), chosen, share
