"""Places as the evidence writes them: a place NER missed after "in/at/near", where a place sits in a "Town,
Region, Country" run, whether a "where" candidate is an organization or a town, and whether two nationality or
country values name one place ("italy" / "italian").
"""

from __future__ import annotations

import re
from itertools import pairwise

from mmkg.generation.extractive import WORD
from mmkg.generation.question import ORGANIZATION_NOUNS, QuestionAnalysis

# a capitalized name after "in"/"at"/"near" ("died in Siversky", "born in Port of Spain"): a place NER may miss
PLACE_AFTER = re.compile(r"\b(?:in|at|near)\s+((?:[A-Z][\w'’.-]*)(?:\s+(?:of|de|del|la|upon|on)\s+[A-Z][\w'’.-]*|"
                         r"\s+[A-Z][\w'’.-]*)*)")  # fmt: skip
QUALIFIED = re.compile(r"^,\s*(?:the\s+)?[A-Z]")
QUALIFIER = re.compile(r"\b[A-Z][\w.'’-]*,\s*$")


def weighed_as_org(q: QuestionAnalysis, text: str, name: str, label: str, end: int, places: set[int]) -> bool:
    """Whether a "where" candidate counts as an organization: NER's ORG, except a name a place qualifies ("in
    Sabaneta, Barinas" is a town), unless the question asks for an institution or the name says it is one
    ("King's College, Cambridge")."""
    return label == "ORG" and (q.institution or not placed(text, end, places) or institution_named(name))


def institution_named(name: str) -> bool:
    """Whether a name says it is an organization's: its last word, or a word before "of", is an organization noun
    ("King's College", "University of Leeds"; not "College Station" or "Studio City")."""
    words = WORD.findall(name.lower())
    return bool(words) and (words[-1] in ORGANIZATION_NOUNS or any(
        w in ORGANIZATION_NOUNS and nxt == "of" for w, nxt in pairwise(words)))  # fmt: skip


def placed(text: str, end: int, places: set[int]) -> bool:
    """Whether the name that ends at ``end`` is qualified by a place: a comma, then a span typed as a place
    ("Sabaneta, Barinas"), not a title ("Philip the Good, Duke of Burgundy")."""
    m = QUALIFIED.match(text[end:])
    return m is not None and end + m.end() - 1 in places


def inner_place(text: str, a: int, b: int) -> float:
    """Where a place sits in a "Town, Region, Country" run: 1 for the innermost (the town, qualified by what
    follows it), -1 for a container that qualifies the place before it, 0 for a place standing alone. "Where"
    asks for the most specific place the text gives."""
    if QUALIFIER.search(text[:a]):
        return -1.0
    return 1.0 if QUALIFIED.match(text[b:]) else 0.0


def same_place(a: str, b: str) -> bool:
    """Two normalized nationality or country values that name the same place: after at least four shared letters,
    each ends in what a country's name or its demonym ends in (``DEMONYM_ENDINGS``: "italy" / "italian",
    "britain" / "british", "japan" / "japanese"). Another word ("guinea" / "guinea bissau") or another ending
    ("austria" / "australia", "slovakia" / "slovenia", "slovak" / "slovene", "malay" / "malawi") is another place.
    Not caught: irregular pairs ("american" / "united states", "france" / "french", "norway" / "norwegian",
    "peru" / "peruvian"); taken for one place: "niger" / "nigeria", whose endings are a demonym's."""
    if not a or not b:
        return False
    if a == b:
        return True
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return shared >= 4 and a[shared:] in DEMONYM_ENDINGS and b[shared:] in DEMONYM_ENDINGS


#: what a country's name and its demonym end in after the letters they share ("germ-any" / "germ-an",
#: "brit-ain" / "brit-ish", "chin-a" / "chin-ese", "engl-and" / "engl-ish", "belgi-um" / "belgi-an")
DEMONYM_ENDINGS = frozenset({"", "a", "e", "i", "o", "y", "n", "an", "en", "er", "ey", "ia", "ic", "on", "um", "ian",
                             "ean", "ese", "ish", "ain", "and"})  # fmt: skip
