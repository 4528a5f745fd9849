"""Noun phrases headed by the noun a question asks about: the answer a "what kind of X" question wants.

"What kind of *environment* should the user stay in?" is answered by "a quiet and relaxed environment", "What
type of *court* is noted on the cover?" by "SUPERIOR COURT", "Which *program* has the longest ..." by "Leaders
in Education Programme": a phrase whose head is the question's focus noun and whose modifiers say which one.
Such a phrase is no named entity, so the reader's entity spans miss it.

``focus_phrases`` finds them by part of speech: each occurrence of the focus noun (``heads``), with the
adjectives, nouns, proper nouns and numbers before it ("quiet and relaxed", "SUPERIOR"), and inside a capitalized
name its connecting words ("Leaders *in* Education Programme"). A bare head ("the environment") names no
particular one and is no candidate. spaCy's tagger (already loaded for the reader's entities) supplies the
parts of speech; the walk over them is hand-written, being a few lines over tags spaCy gives (its
``noun_chunks`` need the dependency parser, three times the tagger's cost, and stop at "in").
"""

from __future__ import annotations

from collections.abc import Sequence

#: parts of speech that modify a head noun before it
MODIFIERS = frozenset({"ADJ", "NOUN", "PROPN", "NUM"})
#: connecting words kept inside a capitalized name ("Leaders in Education Programme", "Health and Safety Act")
_NAME_LINKS = frozenset({"in", "of", "for", "and", "&", "on"})
MAX_WORDS = 6  # words of a phrase, its head included
_CACHE: dict[tuple[str, str], tuple[tuple[int, int, str, str], ...]] = {}
_CACHE_MAX = 4096  # sentences (a tagged sentence of a table's page text runs to tens of kB)
_TAGGER = frozenset({"tok2vec", "tagger", "attribute_ruler"})


def tags(sentences: Sequence[str], model: str) -> list[tuple[tuple[int, int, str, str], ...]]:
    """(start, end, part of speech, fine tag) of each token of each sentence, in one batch through the tagger only;
    sentences seen before come from a bounded cache."""
    from mmkg.nlp import pipe_cached

    return pipe_cached(sentences, model, _CACHE, _CACHE_MAX, _TAGGER,
                       lambda doc: tuple((t.idx, t.idx + len(t.text), t.pos_, t.tag_) for t in doc))  # fmt: skip


def heads(word: str, focus: str) -> bool:
    """Whether ``word`` is the focus noun, in the singular or plural or a spelling a letter or two longer
    ("programme" for "program"); not any word sharing its first letters ("progress", "courtyard")."""
    w, f = word.lower(), focus.lower()
    forms = {w, w[:-1] if w.endswith("s") else w, w[:-2] if w.endswith("es") else w}
    return any(x == f or (x.startswith(f) and len(x) - len(f) <= 2) for x in forms)


def _capitalized(word: str) -> bool:
    return word[:1].isupper()


def _marker(word: str) -> bool:
    """A list item's marker ("a.", "(b)", "•"), no modifier."""
    return not any(ch.isalnum() for ch in word) or (len(word) <= 2 and word.endswith((".", ")")))


def _previous(tokens: Sequence[tuple[int, int, str, str]], j: int) -> tuple[int, int, str, str] | None:
    """The token before ``tokens[j]``, line breaks skipped."""
    k = j - 1
    while k >= 0 and tokens[k][2] == "SPACE":
        k -= 1
    return tokens[k] if k >= 0 else None


def focus_phrases(focus: str, text: str, tokens: Sequence[tuple[int, int, str, str]],
                  plural: bool = False) -> list[tuple[str, str, int, int]]:  # fmt: skip
    """``(phrase, "FOCUS", start, end)`` of each phrase of ``text`` headed by a word of ``focus``'s stem with at
    least one modifier before it; ``tokens`` are ``tags`` of ``text``. Unless the question asks in the ``plural``
    ("which colours"), a plural head ("different colours", "flagship programmes") speaks of several and answers
    no "which one"."""
    out = []
    for i, (a, b, pos, tag) in enumerate(tokens):
        if pos not in ("NOUN", "PROPN") or not heads(text[a:b], focus) or (tag in ("NNS", "NNPS") and not plural):
            continue
        start = i
        j = i - 1
        words = 1
        while j >= 0 and words < MAX_WORDS:
            ja, jb, jpos, _ = tokens[j]
            word = text[ja:jb]
            if jpos == "SPACE":  # a line break inside the phrase ("Leaders in Education\nProgramme")
                j -= 1
                continue
            before = _previous(tokens, j)
            if (jpos in MODIFIERS and not _marker(word)) or (jpos == "PUNCT" and word == "-"):
                start = j
            elif (jpos in ("ADP", "CCONJ") and word.lower() in _NAME_LINKS and before is not None
                  and _capitalized(text[before[0] : before[1]]) and _capitalized(text[a:b])):  # fmt: skip
                pass  # inside a name: kept if a modifier lies before it
            elif jpos == "CCONJ" and before is not None and before[2] == "ADJ" and tokens[start][2] == "ADJ":
                pass  # "quiet and relaxed": two modifiers joined
            else:
                break
            words += 1
            j -= 1
        while start < i and tokens[start][2] not in MODIFIERS:
            start += 1  # a phrase opens with a modifier, not with a hyphen or a linking word
        if start == i:
            continue
        phrase_start = tokens[start][0]
        out.append((" ".join(text[phrase_start:b].split()), "FOCUS", phrase_start, b))
    return out

