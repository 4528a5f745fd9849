"""Query entity linking: spans of a question resolved to the graph's entity keys."""

from __future__ import annotations

import pytest

from mmkg.entities import canonical_key
from mmkg.linking import EntityLinker

KEYS = [
    canonical_key(s)
    for s in [
        "Titanic", "James Cameron", "Harvard Mark II", "1947", "film", "River Thames",
        "David Bradley (director)", "David Bradley (American actor)", "Simon & Garfunkel", "Who",
    ]
]  # fmt: skip
NAMES = ["David Bradley (director)", "David Bradley (American actor)", "Harvard Mark II"]


@pytest.fixture(scope="module")
def linker() -> EntityLinker:
    return EntityLinker(KEYS, NAMES)


def spans(linker: EntityLinker, text: str) -> list[str]:
    return [link.span for link in linker.link(text)]


def test_longest_span_wins_and_offsets_point_into_the_query(linker: EntityLinker):
    q = "Who found a moth in the Harvard Mark II relay in 1947?"
    links = linker.link(q)
    # the key drops a leading article, so the longest span starts at "the"; a bare number is not a name
    assert [link.span for link in links] == ["the Harvard Mark II"]
    assert all(q[link.start : link.end] == link.span for link in links)
    assert links[0].keys == ("harvard mark ii",)


def test_lowercase_words_numbers_and_capitalized_stop_words_are_not_names(linker: EntityLinker):
    # "film" and "Who" are entity keys here, but neither is name-like in the question
    assert spans(linker, "Who directed the film Titanic?") == ["Titanic"]
    assert spans(linker, "which film did james cameron direct") == []
    assert spans(linker, "Titanic or James Cameron, which came first?") == ["Titanic", "James Cameron"]
    assert spans(linker, "What happened in 1947?") == []


def test_parenthesized_titles_are_reachable_by_their_plain_name(linker: EntityLinker):
    (link,) = linker.link("When was David Bradley born?")
    assert link.span == "David Bradley"
    assert link.keys == ("david bradley american actor", "david bradley director")


def test_symbols_and_punctuation_follow_the_canonical_key(linker: EntityLinker):
    assert [link.keys for link in linker.link("Did Simon & Garfunkel play near the River Thames's banks?")] == [
        ("simon & garfunkel",),
        ("river thames",),
    ]


def test_a_span_covers_the_whole_name_it_sits_in():
    linker = EntityLinker([canonical_key(s) for s in ["Harvard Mark", "Harvard", "Thames", "River Thames"]])
    assert [link.span for link in linker.link("Who found a moth in the Harvard Mark II relay?")] == []
    assert [link.span for link in linker.link("Was the Harvard Mark in use in 1950?")] == ["the Harvard Mark"]
    assert [link.span for link in linker.link("Which bridges cross the River Thames?")] == ["the River Thames"]
    assert [link.span for link in linker.link("Which bridges cross the Lower Thames?")] == []


def test_nothing_to_link(linker: EntityLinker):
    assert linker.link("") == []
    assert linker.link("What is the capital of Atlantis?") == []
    assert len(EntityLinker([])) == 0
