"""Retrieval strategies on one index: the registry, the query object, mKG-RAG's stages, the CLI and eval names.

The mKG-RAG tests run on a small hand-written corpus built through the real Dagster assets: the
question names a painting; the painter's birthplace is on the painter's own page, which does not
name the painting, so that page is reached only through the painting's 1-hop neighbour (the painter,
linked by the triple ⟨Margit Holm, paint, The Blue Harbour⟩).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import ArtCorpus
from typer.testing import CliRunner

from mmkg.cli import app
from mmkg.eval.methods import make_methods, parse_methods
from mmkg.index import Index
from mmkg.retrieval import STRATEGIES, Query, describe, get_strategy, retrieve, search
from mmkg.retrieval.mkg import MKGParams

QUESTION = "Where was the painter of The Blue Harbour born?"


@pytest.fixture
def idx(art_index: Index) -> Index:
    return art_index


def _chunk(idx: Index, res, source: str):
    return next((c for c in res.chunks if c.source_path == source), None)


# -- registry, parameters, query --------------------------------------------------------------------


def test_registry_names_every_strategy_and_refuses_unknown_names():
    assert {"mg2", "mkg", "r2ag", "mmgraph"} <= set(STRATEGIES)
    with pytest.raises(ValueError, match=r"unknown strategy 'nope'.*'mg2'.*'mkg'"):
        get_strategy("nope")
    with pytest.raises(ValueError, match=r"unknown preset 'fast' for strategy mkg; choose one of \['paper'\]"):
        get_strategy("mkg:fast")
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['k_d'\].*known: \['doc_top_k', 'graph_top_k'"):
        get_strategy("mkg", k_d=3)
    with pytest.raises(ValueError, match=r"unknown retrieval parameter\(s\) \['alpah'\]"):
        get_strategy("mg2:default", alpah=0.3)
    with pytest.raises(ValueError, match="text_topk_<g> is one of"):
        get_strategy("mg2", text_topk_pages=3)


def test_parameters_are_strict_typed_and_documented():
    s = get_strategy("mkg", graph_top_k="3", neighbor_threshold="0.25")  # as the CLI passes them
    assert s.params == MKGParams(graph_top_k=3, neighbor_threshold=0.25)
    assert get_strategy("mg2:longdoc", alpha="0.6", text_topk_chunk="7").params.text_topk.chunk == 7
    with pytest.raises(ValueError, match=r"hops: two is not a whole number \(--param hops=VALUE\)"):
        get_strategy("mkg", hops="two")
    with pytest.raises(ValueError, match="graph_top_k must be at least 1"):
        MKGParams(graph_top_k=0)
    info = {s["name"]: s for s in describe()}
    mkg = {p["name"]: p for p in info["mkg"]["params"]}
    assert mkg["doc_top_k"]["default"] == 10 and mkg["graph_top_k"]["default"] == 10 and mkg["hops"]["default"] == 1
    assert all(p["doc"] for s in info.values() for p in s["params"])
    assert info["mg2"]["default_preset"] == "auto" and {"default", "longdoc"} <= set(info["mg2"]["presets"])


def test_query_object_and_modalities(idx: Index, tmp_path: Path):
    with pytest.raises(ValueError, match="a query needs text"):
        Query()
    picture = tmp_path / "a.png"
    picture.write_bytes(b"png")
    q = Query(text="x", image=str(picture))
    assert q.modalities == {"text", "image"} and isinstance(q.image, Path)
    with pytest.raises(ValueError, match=r"image query .*missing\.png is not a file"):
        Query(text="x", image=tmp_path / "missing.png")
    audio = tmp_path / "a.wav"
    audio.write_bytes(b"RIFF")
    for name in ("mg2", "mkg", "r2ag", "mmgraph"):
        with pytest.raises(ValueError, match=rf"strategy {name} does not answer \['audio'\] queries"):
            search(idx, Query(audio=audio), k=3, strategy=name)
    res = search(idx, Query(text=QUESTION), k=2, strategy="mkg")
    assert res.query_text == QUESTION and len(res.chunks) == 2


# -- mKG-RAG ------------------------------------------------------------------------------------------


def test_index_publishes_document_entity_and_relation_vectors(idx: Index):
    counts = idx.manifest.counts
    for name in ("documents", "document_entities", "relations"):
        assert idx.has_table(name)
    assert counts["documents"] == idx.documents.height == 5
    assert counts["document_entities"] == idx.payload("document_entities").height > 0
    assert counts["relations"] == idx.payload("relations").height > 0
    triples = {(r["subject_key"], r["predicate"], r["object_key"]) for r in idx.payload("relations").to_dicts()}
    assert ("margit holm", "paint", "blue harbour") in triples


def test_mkg_reaches_the_answer_only_through_a_one_hop_neighbour(idx: Index):
    one_hop = retrieve(idx, text=QUESTION, k=4, strategy="mkg", graph_top_k=1, hops=1)
    assert [e.name for e in one_hop.entities if e.hop == 0] == ["The Blue Harbour"]
    holm = next(e for e in one_hop.entities if e.name == "Margit Holm")
    assert holm.hop == 1 and holm.score >= 0.3
    assert any(r.subject == "Margit Holm" and r.predicate == "paint" and r.hop == 1 for r in one_hop.relations)
    answer = _chunk(idx, one_hop, "art/margit_holm.md")
    assert answer is not None and answer.score > 0 and answer.rank <= 2  # supported by the neighbour
    assert "born in Uppsala" in answer.text
    # without the expansion the painter's page has no support: it only trails by its cosine
    no_hop = retrieve(idx, text=QUESTION, k=4, strategy="mkg", graph_top_k=1, hops=0)
    assert [e.name for e in no_hop.entities] == ["The Blue Harbour"] and not no_hop.relations
    trailing = _chunk(idx, no_hop, "art/margit_holm.md")
    assert trailing is None or trailing.score == 0.0
    # a threshold no neighbour reaches keeps the expansion from adding anything
    strict = retrieve(idx, text=QUESTION, k=4, strategy="mkg", graph_top_k=1, hops=1, neighbor_threshold=0.99)
    assert [e.name for e in strict.entities] == ["The Blue Harbour"]


def test_mkg_k_d_and_k_g_bound_the_two_stages(idx: Index):
    one_doc = retrieve(idx, text=QUESTION, k=10, strategy="mkg", doc_top_k=1)
    assert {c.source_path for c in one_doc.chunks} == {"art/blue_harbour.md"}
    assert all(set(e.doc_ids) == {one_doc.chunks[0].doc_id} for e in one_doc.entities)
    for k_g in (1, 3, 5):
        res = retrieve(idx, text=QUESTION, k=5, strategy="mkg", graph_top_k=k_g, hops=0)
        assert res.seeds == k_g == len(res.entities) + len(res.relations)
        scores = sorted([e.score for e in res.entities] + [r.score for r in res.relations], reverse=True)
        assert scores == sorted(scores, reverse=True) and min(scores) > 0
    default = retrieve(idx, text=QUESTION, k=5, strategy="mkg")
    assert default.params == {"doc_top_k": 10, "graph_top_k": 10, "hops": 1, "neighbor_threshold": 0.3}
    assert default.strategy == "mkg" and default.preset == "paper"


def test_mkg_filters_apply_to_both_stages(idx: Index):
    res = retrieve(idx, text=QUESTION, k=5, strategy="mkg", filters={"partition": "other"})
    assert res.chunks and {c.partition for c in res.chunks} == {"other"}
    assert all(e.doc_ids == [res.chunks[0].doc_id] for e in res.entities)
    elsewhere = idx.documents.filter(pl.col("partition") != "other")["doc_id"][0]
    # both filters hold values the index has, but no document meets both
    empty = retrieve(idx, text=QUESTION, k=5, strategy="mkg", filters={"partition": "other", "doc_id": elsewhere})
    assert empty.chunks == [] and empty.notes == ["no document passed the filters"]
    with pytest.raises(ValueError, match="no partition"):
        retrieve(idx, text=QUESTION, k=5, strategy="mkg", filters={"partition": "space' OR 1=1 --"})


def test_mg2_results_carry_graph_evidence(idx: Index):
    res = retrieve(idx, text="Who painted The Blue Harbour?", k=3)
    assert res.strategy == "mg2" and res.preset == "auto/default"  # it names an entity: routed to default
    assert res.entities and res.entities[0].score >= res.entities[-1].score
    assert any(e.name == "The Blue Harbour" and e.hop == 0 for e in res.entities)  # the entity the query names
    top = {c.chunk_id for c in res.chunks}
    assert res.relations and all(r.chunk_id in top and r.sentence for r in res.relations)


# -- interfaces ---------------------------------------------------------------------------------------


def test_cli_lists_strategies_and_queries_with_one(art: ArtCorpus):
    runner = CliRunner()
    out = runner.invoke(app, ["strategies"])  # the overview: a few lines each (it printed 191)
    assert out.exit_code == 0, out.output
    assert len(out.output.splitlines()) <= 45 and all(f"mmkg strategies {n}" in out.output for n in STRATEGIES)
    out = runner.invoke(app, ["strategies", "mkg"])
    assert out.exit_code == 0, out.output
    for word in ("doc_top_k", "graph_top_k", "neighbor_threshold"):
        assert word in out.output
    # mg2's default preset, auto, picks default or longdoc per query: both presets' values are shown, not one
    out = runner.invoke(app, ["strategies", "mg2", "--json"])
    (mg2,) = json.loads(out.stdout)
    assert mg2["routes"] == {"auto": ["default", "longdoc"]}
    seed = next(p for p in mg2["params"] if p["name"] == "entity_seed_weight")
    assert seed["presets"]["default"] != seed["presets"]["longdoc"]
    out = runner.invoke(app, ["strategies", "mg2"], terminal_width=200)
    row = next(line for line in out.output.splitlines() if line.split()[:1] == ["entity_seed_weight"])
    assert row.split()[1:3] == [str(seed["presets"]["default"]), str(seed["presets"]["longdoc"])], row
    assert "auto picks default or longdoc" in " ".join(out.output.split())
    out = runner.invoke(app, ["strategies", "hipporag"])
    assert out.exit_code == 2 and "no strategy 'hipporag'" in out.output
    index = str(art.data / "index")
    out = runner.invoke(app, ["query", QUESTION, "--strategy", "mkg", "--param", "graph_top_k=1", "--json",
                              "--index", index])  # fmt: skip
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    assert got["strategy"] == "mkg" and got["params"]["graph_top_k"] == 1
    assert any(e["name"] == "Margit Holm" for e in got["entities"])
    for args, message in (
        (["--strategy", "nope"], "unknown strategy 'nope'"),
        (["--strategy", "mkg", "--param", "K_d=3"], "unknown parameter(s) ['K_d']"),
        (["--strategy", "mkg", "--param", "hops"], "write it as NAME=VALUE"),
    ):
        out = runner.invoke(app, ["query", QUESTION, *args, "--index", index])
        assert out.exit_code == 2 and message in out.output, out.output


def test_eval_method_names(idx: Index):
    assert parse_methods("bm25,mkg,mg2:longdoc,graph:default") == ["bm25", "mkg", "mg2:longdoc", "graph:default"]
    assert parse_methods("mkg:all") == ["mkg:paper"]
    with pytest.raises(ValueError, match="strategy in"):
        parse_methods("hipporag")
    with pytest.raises(ValueError, match="unknown preset 'x' for strategy mkg"):
        parse_methods("mkg:x")
    methods = make_methods(idx, ["mkg", "graph:default"])
    assert [m.name for m in methods] == ["mkg", "graph:default"]
    ranked = methods[0].search(QUESTION, depth=3)
    assert ranked and methods[0].explain()["entities"]
