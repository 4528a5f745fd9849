from __future__ import annotations

import polars as pl
import pytest

from mmkg import schemas
from mmkg.entities import canonical_key, is_relational, merge_mentions


@pytest.mark.parametrize(
    ("surface", "key"),
    [
        ("The Louvre's", "louvre"),
        ("Apple Inc.", "apple inc"),
        ("  New   York  City ", "new york city"),
        ("Théâtre du Châtelet", "theatre du chatelet"),
        ("U.S.", "us"),
        ("Jean-Paul Sartre", "jean-paul sartre"),
        ("Jean-Paul – Sartre", "jean-paul sartre"),
        ('"Mona Lisa"', "mona lisa"),
        ("St. Maurice's Abbey", "st maurice abbey"),
        ("AT&T", "at&t"),
        ("Charles' house", "charles house"),
        ("ＮＡＳＡ", "nasa"),  # full-width forms
        ("the Beatles", "beatles"),
        ("Theodore Roosevelt", "theodore roosevelt"),  # "the" inside a word is not an article
    ],
)
def test_canonical_key(surface: str, key: str):
    assert canonical_key(surface) == key


def test_relational_labels():
    assert not any(is_relational(lbl) for lbl in ("ORDINAL", "CARDINAL", "PERCENT", "QUANTITY"))
    assert all(is_relational(lbl) for lbl in ("PERSON", "ORG", "GPE", "DATE", "TITLE"))


def mention(key: str, text: str, label: str, chunk: str, doc: str) -> dict:
    return {
        "mention_id": f"{chunk}-{text}-{label}",
        "partition": "p",
        "doc_id": doc,
        "chunk_id": chunk,
        "sentence_id": chunk,
        "text": text,
        "label": label,
        "entity_key": key,
        "char_start": 0,
        "char_end": 1,
        "source": "title" if label == "TITLE" else "ner",
        "relational": is_relational(label),
    }


def test_merge_mentions_by_key():
    m = schemas.frame(
        [
            mention("grace hopper", "Grace Hopper", "PERSON", "c1", "d1"),
            mention("grace hopper", "Grace Hopper", "PERSON", "c2", "d1"),
            mention("grace hopper", "grace hopper", "ORG", "c3", "d2"),
            mention("grace hopper", "Grace Hopper", "TITLE", "c1", "d1"),
            mention("two", "two", "CARDINAL", "c1", "d1"),
            mention("moon", "Moon", "TITLE", "c4", "d3"),
        ],
        schemas.MENTIONS,
    )
    out = merge_mentions(m)
    assert out.columns == list(schemas.ENTITIES)
    rows = {r["entity_key"]: r for r in out.iter_rows(named=True)}
    gh = rows["grace hopper"]
    assert (gh["name"], gh["label"], gh["labels"]) == ("Grace Hopper", "PERSON", ["PERSON", "ORG"])
    assert (gh["n_mentions"], gh["n_chunks"], gh["n_docs"]) == (4, 3, 2)
    assert not rows["two"]["relational"]
    # an entity only ever seen as a title keeps the TITLE label
    assert rows["moon"]["label"] == "TITLE" and rows["moon"]["relational"]


def test_merge_empty():
    assert merge_mentions(schemas.empty(schemas.MENTIONS)).schema == pl.Schema(schemas.ENTITIES)
