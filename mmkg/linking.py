"""Query entity linking: which graph entities a text query names.

Dense similarity of a whole question to a passage is a weak seed for multi-hop questions ("Who
was born first, the director of X or the director of Y?"): the passages that answer them are the
ones *about* X and Y, and the graph already has a node for each. Linking the names in the query to
those nodes and seeding PPR there is what makes the graph beat flat retrieval on 2Wiki (see
benchmarks/RESULTS.md).

The linker uses the same canonical key as entity merging at indexing time, so it needs no model and
matches exactly what the graph can reach: leftmost-longest n-grams of the query whose key is an
entity node. To avoid linking common words that happen to be entities ("film", "river"), a span
must hold a capitalized token, and a capitalized stop word on its own ("Who", "The") does not
count. A span must also cover the whole name it sits in: "Harvard Mark" is not linked inside
"Harvard Mark II" (a different entity), so a partial name falls back to dense seeds. Titles with a
parenthetical ("David Bradley (director)") are also reachable under their plain name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mmkg.entities import canonical_key

MAX_SPAN_TOKENS = 8
_TOKEN = re.compile(r"\S+")
_INNER = re.compile(r"\w(?:.*\w)?", re.UNICODE)  # a token without its edge punctuation ("X?" -> "X")
_PARENTHETICAL = re.compile(r"^(.*?\S)\s*\([^()]*\)\s*$")
# Words capitalized because they open a question or sentence, not because they are names.
STOP_WORDS = frozenset(
    """a about after all also an and any are as at be before both but by can could did do does during each either
    for from had has have he her his how i if in into is it its many may me might more most much my neither no nor
    not of on one or our she should since so some such than that the their them then there these they this those
    through to under until was we were what when where whether which while who whom whose why will with would
    yes you your""".split()  # noqa: SIM905 - a word list reads better as words
)


@dataclass(frozen=True)
class Link:
    """One query span and the entity keys it names (more than one only through an ambiguous alias)."""

    span: str
    start: int  # character offsets in the query
    end: int
    keys: tuple[str, ...]


class EntityLinker:
    """Exact, canonical-key linking of query spans to entity keys."""

    def __init__(self, keys: Iterable[str], names: Iterable[str] = (), max_tokens: int = MAX_SPAN_TOKENS):
        self.keys = frozenset(k for k in keys if k)
        self.max_tokens = max_tokens
        aliases: dict[str, set[str]] = {}
        for name in names:
            m = _PARENTHETICAL.match(name)
            if not m:
                continue
            key, base = canonical_key(name), canonical_key(m.group(1))
            if key in self.keys and base and base not in self.keys:
                aliases.setdefault(base, set()).add(key)
        self.aliases = {base: tuple(sorted(ks)) for base, ks in aliases.items()}

    def __len__(self) -> int:
        return len(self.keys)

    def _resolve(self, key: str) -> tuple[str, ...]:
        if key in self.keys:
            return (key,)
        return self.aliases.get(key, ())

    def link(self, text: str) -> list[Link]:
        """Leftmost-longest spans of ``text`` that name an entity, in query order."""
        tokens = []
        for m in _TOKEN.finditer(text):
            inner = _INNER.search(m.group())  # "&" and other symbol-only tokens stay as they are
            s, e = (m.start() + inner.start(), m.start() + inner.end()) if inner else (m.start(), m.end())
            tokens.append((s, e, text[s:e]))
        out: list[Link] = []
        i = 0
        while i < len(tokens):
            for n in range(min(self.max_tokens, len(tokens) - i), 0, -1):
                span = tokens[i : i + n]
                if not _salient(span) or _continues(tokens, i - 1) or _continues(tokens, i + n):
                    continue
                keys = self._resolve(canonical_key(" ".join(t for _, _, t in span)))
                if keys:
                    start, end = span[0][0], span[-1][1]
                    out.append(Link(text[start:end], start, end, keys))
                    i += n
                    break
            else:
                i += 1
        return out


def _continues(tokens: list[tuple[int, int, str]], j: int) -> bool:
    """Token j would extend a name (capitalized, not a stop word): a span next to it is only part of a name."""
    if not 0 <= j < len(tokens):
        return False
    tok = tokens[j][2]
    return tok[:1].isupper() and tok.casefold() not in STOP_WORDS


def _salient(span: list[tuple[int, int, str]]) -> bool:
    """A name-like span: some token is capitalized (a lone capitalized stop word is not).

    Bare numbers ("page 10", "2008", "65+") are not linked: a number is shared by so many chunks
    that seeding it spreads the query's mass thin (MMLongBench-Doc dev page recall@5 0.617 -> 0.638
    without them, 2Wiki unchanged).
    """
    if len(span) == 1 and span[0][2].casefold() in STOP_WORDS:
        return False
    return any(tok[:1].isupper() for _, _, tok in span)
