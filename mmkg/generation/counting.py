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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

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
