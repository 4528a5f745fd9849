"""The second hop without an LLM, and the preset router, on the hand-written art corpus (real parses, a real index)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DOCS, ArtCorpus, build_index

from mmkg.index import Index
from mmkg.retrieval import retrieve
from mmkg.retrieval.bridge import bridge_seeds, maps, mention_context, relation_text, title_keys
from mmkg.retrieval.mg2 import MG2, PRESETS, route
from mmkg.retrieval.registry import get_strategy

QUESTION = "Where was the painter of The Blue Harbour born?"  # The Blue Harbour -> Margit Holm -> Uppsala


def test_pieces():
    assert title_keys("David Bradley (director)") == ("david bradley director", "david bradley")
    assert title_keys("") == ()
    assert mention_context("Set in Durham, it was directed by Stephen Daldry and music by Stephen Warbeck.",
                           "Stephen Warbeck") == "by Stephen Daldry and music by Stephen Warbeck"  # fmt: skip
    assert mention_context("No mention here.", "Nobody") == "No mention here."


def test_the_second_hop_lands_on_the_page_of_the_entity_the_first_passage_names(art: ArtCorpus):
    index = Index.open(art.data / "index")
    links = index.link(QUESTION)
    assert [k for link in links for k in link.keys] == ["blue harbour"]
    assert relation_text(QUESTION, links) == "Where was the painter of born?"
    p = PRESETS["default"]
    first = index.ppr(np.full(index.graph.n, 1.0 / index.graph.n), p.alpha)  # any round one reaches its page
    seeds, bridges = bridge_seeds(index, first, QUESTION, None, 2, 2, 0.05)
    assert seeds is not None and bridges[0] == "margit holm"  # the sentence "Margit Holm painted The Blue Harbour"
    m = maps(index)
    page = m.pages["margit holm"]
    titles = index.chunks["title"].to_list()
    assert {titles[int(r)] for r in page} == {"Margit Holm"}
    assert seeds[page].sum() > 0.5  # most of the mass sits on her own page, not on her node
    assert abs(seeds.sum() - 1.0) < 1e-9

    result = MG2(p, preset="default").run(index, QUESTION, None, 3)
    assert [c.source_path for c in result.chunks[:2]] == ["art/blue_harbour.md", "art/margit_holm.md"]
    assert [(e.entity_key, e.hop) for e in result.entities[:2]] == [("blue harbour", 0), ("margit holm", 1)]
    assert "bridge" in result.timings_ms
    off = MG2(p.override(bridge_weight=0.0), preset="x").run(index, QUESTION, None, 3)
    assert "bridge" not in off.timings_ms  # the paper's single round
    # filtered to one document, the second hop may not leave it
    only = MG2(p, preset="default").run(index, QUESTION, None, 3, {"source_path": "art/blue_harbour.md"})
    assert {c.source_path for c in only.chunks} == {"art/blue_harbour.md"}


def test_auto_routes_by_scope_and_linked_entities(art: ArtCorpus):
    index = Index.open(art.data / "index")
    assert route(index, QUESTION, None) == "default"  # names an entity of the graph, whole corpus
    assert route(index, "which watercolour shows a windmill", None) == "longdoc"  # names none
    # names an entity, but no document is titled by it: nothing for the second hop to walk to
    assert [k for link in index.link("Who was born in Uppsala?") for k in link.keys] == ["uppsala"]
    assert route(index, "Who was born in Uppsala?", None) == "longdoc"
    assert route(index, QUESTION, {"source_path": "art/blue_harbour.md"}) == "longdoc"  # within a document
    auto = get_strategy("mg2")  # the default strategy and preset of mmkg query
    assert auto.preset == "auto" and auto.routed
    result = retrieve(index, text=QUESTION, k=2)
    assert result.preset == "auto/default"
    plain = retrieve(index, text=QUESTION, k=2, strategy="mg2:default")
    assert [c.chunk_id for c in result.chunks] == [c.chunk_id for c in plain.chunks]
    assert not get_strategy("mg2:auto", alpha=0.3).routed  # overrides apply to default's parameters, unrouted


def test_bridge_pages_are_weighed_by_their_cosines_on_an_ann_indexed_chunk_table(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
):
    """The entity's own page in two chunks: the one that speaks to the question's relation gets more of the seed.
    On a chunk table searched through LanceDB's ANN index (vectors not in memory) the cosines are read by id, so
    the seeds are those of the exact index, not spread evenly."""
    import mmkg.index.publish as publish

    files = {**DOCS, "art/margit_holm.md": (
        "# Margit Holm\n\n## Exhibitions\n\n" + "Margit Holm showed forty watercolours of harbours and mills at "
        "galleries in Gothenburg, Oslo and Copenhagen, and the critics praised her light. " * 10
        + "\n\n## Early life\n\nMargit Holm was born in Uppsala in 1890, where her father kept a bookshop.\n"
    )}  # fmt: skip
    exact = build_index(tmp_path_factory, "bridge-exact", files)
    monkeypatch.setattr(publish, "ANN_MIN_ROWS", 1)
    ann = build_index(tmp_path_factory, "bridge-ann", files)
    assert "chunks" in ann.tables and "chunks" not in exact.tables
    page = maps(exact).pages["margit holm"]
    assert page.size == 2 and np.array_equal(maps(ann).pages["margit holm"], page)
    p = PRESETS["default"]
    seeds = {}
    for name, index in (("exact", exact), ("ann", ann)):
        first = index.ppr(np.full(index.graph.n, 1.0 / index.graph.n), p.alpha)
        seeds[name], bridges = bridge_seeds(index, first, QUESTION, None, 2, 2, 0.05)
        assert bridges[0] == "margit holm"
    texts = exact.chunks["text"].to_list()
    born = next(int(r) for r in page if "born in Uppsala" in texts[int(r)])
    other = next(int(r) for r in page if int(r) != born)
    assert seeds["exact"][born] > 2 * seeds["exact"][other]  # the birth section speaks to "where ... born"
    assert seeds["ann"] == pytest.approx(seeds["exact"], abs=1e-6)
