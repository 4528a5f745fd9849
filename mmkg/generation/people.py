"""People as biographies write them: one person's name in two spellings, a parent named in a "son of A and B"
sentence, and a nationality stated by what a sentence says someone is ("X is a Chinese American actor").

The reader (``mmkg.generation.reader``) scores a candidate by these for the relations 2Wiki-style questions ask
("father", "mother", "nationality"); each is a pattern over the sentence, stated in its docstring with the
examples it was written from.
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Indel

ROMAN = re.compile(r"[ivxlcdm]+")  # a regnal number, in lower case


def same_person(a: str, b: str) -> bool:
    """Whether two names are one person's, spelled two ways as pages write them ("Leopoldo Torres Nilsson" and
    "Leopoldo Torre Nilsson", "Yuen Wo-ping" and "Yuen Woo-ping"): as many words, the first one the same, each
    other word alike (the same, or at four letters or more nearly so), and some word spelled differently. A
    name one word longer is another person ("John Adams", "John Quincy Adams"); so is a name whose short
    words or regnal numbers differ ("Henry II", "Henry III"; "Louis XVII", "Louis XVIII")."""
    x, y = person_words(a), person_words(b)
    if len(x) < 2 or len(x) != len(y) or x == y or x[0] != y[0]:
        return False
    return all(u == v or (min(len(u), len(v)) >= 4 and not ROMAN.fullmatch(u) and not ROMAN.fullmatch(v)
                          and Indel.normalized_similarity(u, v) >= 0.8)
               for u, v in zip(x[1:], y[1:], strict=True))  # fmt: skip


def person_words(name: str) -> list[str]:
    """A name's words in lower case, hyphened parts kept together ("Wo-ping")."""
    return [w for w in (re.sub(r"[^\w-]", "", t).lower() for t in name.split()) if w]


CHILD_OF = re.compile(r"\b(?:son|daughter|child|children|sons|daughters|heir)\s+of\s+", re.IGNORECASE)

SPOUSE_BEFORE = re.compile(r"\b(?i:his|her)\s+(?i:(wife|husband))\s*,?\s*(?:[A-Z][\w.]*\s+)?$")

TITLE_WORDS = re.compile(r"^(?:the\s+)?(?:[A-Z][\w.]*\s+){0,2}$")  # "King ", "the Emperor ": a title before a parent

SECOND_PARENT = re.compile(r"\band\s+(?:(?:his\s+)?wife,?\s+)?(?:the\s+)?(?:[A-Z][\w.]*\s+){0,2}$")


def parent_role(text: str, a: int, b: int) -> str:
    """ "father" or "mother" when a sentence names the person at ``text[a:b]`` as one of two parents: "the
    daughter of Henry II, Duke of Brabant, and Marie of Hohenstaufen" names the father first and the mother
    second (the convention of biographies), "... and his wife Adelaide" a mother. "" when it says neither: a
    sentence that names no child of anyone ("She married her husband John") names no parent."""
    window = text[max(0, a - 200) : a]
    hits = list(CHILD_OF.finditer(window))
    if not hits:
        return ""
    spouse = SPOUSE_BEFORE.search(text[max(0, a - 40) : a])
    if spouse:  # "daughter of Prince Arthur, ..., and his wife Princess Louise": the other parent
        return "mother" if spouse.group(1).lower() == "wife" else "father"
    if len(hits) != 1:  # "daughter of Prince Arthur, third son of Queen Victoria": a grandparent
        return ""
    between = window[hits[0].end() :]
    if ";" in between or ". " in between:
        return ""
    if TITLE_WORDS.match(between):  # the first parent named: the father, when a second follows
        return "father" if re.match(r"[^.;]{0,120}?\band\s", text[b:]) else ""
    return "mother" if SECOND_PARENT.search(between) else ""


# "is a Chinese American actor", "is a 1935 British crime film", "is a director from Denmark": the copular
# description of a page's subject, where a nationality word or a country says what the subject is
DESCRIPTION = re.compile(
    r"\b(?:is|was|are|were)\s+(?:an?|the)\s+(?:\d{4}\s+)?"
    r"(?:(?:[A-Z][\w'’-]*\s+)*|[^.;]{0,60}?\bfrom\s+)$"
)

# "American singer and songwriter Alicia Keys": an occupation before a name (no preposition: "German forces in
# France" says nothing of anyone's nationality)
TITLED = re.compile(
    r"^\s+(?:(?!(?:in|of|at|on|from|to|with|by|for|against|into|the|a|an)\b)[a-z][\w-]*,?\s+){1,3}"
    r"[A-Z]"
)


def described(text: str, a: int, b: int, label: str) -> bool:
    """Whether a nationality word or country at ``text[a:b]`` qualifies what a sentence says someone is: "X is a
    Chinese American actor" or "a song by American singer Alicia Keys" states a nationality without the word."""
    if label == "NORP" and TITLED.match(text[b:]):
        return True
    return bool(DESCRIPTION.search(text[:a])) and (
        bool(re.match(r"\s+[A-Za-z]", text[b:])) or text[:a].rstrip().endswith("from")
    )
