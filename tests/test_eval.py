"""The evaluation harness: metrics on hand-made cases, dataset loaders, and real end-to-end runs.

End to end: the sample corpus with its hand-written questions through ``mmkg eval sample`` (Dagster
build, BM25 / dense / graph on one index, report files, re-use of the build), and two generated
PDFs in the MMLongBench-Doc format (page units, retrieval filtered by document).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLE_CORPUS, SHARED, write_pdf
from typer.testing import CliRunner

from mmkg.cli import app
from mmkg.eval import DatasetError, MMLongBench, TwoWiki, compare, load_sample, make_methods, parse_methods, run_eval
from mmkg.eval.metrics import (
    grouped_means,
    latency_summary,
    mean_metrics,
    perfect_at_k,
    question_metrics,
    recall_at_k,
    reciprocal_rank,
    units_by_best_chunk,
)

TWOWIKI = SHARED / "datasets" / "twowiki"
MMLB = SHARED / "datasets" / "mmlongbench-dev"
needs_shared = pytest.mark.skipif(not (SHARED / "datasets").is_dir(), reason="../shared/datasets is not present")


# -- metrics -----------------------------------------------------------------------------------------


def test_units_rank_at_their_best_chunk():
    assert units_by_best_chunk(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_recall_perfect_and_reciprocal_rank_on_hand_made_rankings():
    ranked = ["x", "a", "y", "b", "z"]
    rel = ["a", "b"]
    assert recall_at_k(ranked, rel, 1) == 0.0
    assert recall_at_k(ranked, rel, 2) == 0.5
    assert recall_at_k(ranked, rel, 4) == 1.0
    assert perfect_at_k(ranked, rel, 2) == 0.0
    assert perfect_at_k(ranked, rel, 4) == 1.0
    assert reciprocal_rank(ranked, rel) == 0.5
    assert reciprocal_rank(["x", "y"], rel) == 0.0
    assert recall_at_k(ranked, ["a", "a", "q"], 5) == 0.5  # duplicates count once; a missing unit stays missing
    assert recall_at_k([], rel, 10) == 0.0  # a method that found nothing
    with pytest.raises(ValueError, match="without relevant units"):
        recall_at_k(ranked, [], 3)
    with pytest.raises(ValueError, match="k must be"):
        perfect_at_k(ranked, rel, 0)


def test_question_and_mean_metrics():
    q1 = question_metrics(["a", "b"], ["a"], [1, 2])
    q2 = question_metrics(["c", "b"], ["b", "d"], [1, 2])
    assert q1 == {"recall@1": 1.0, "recall@2": 1.0, "perfect@1": 1.0, "perfect@2": 1.0, "rr": 1.0}
    assert q2 == {"recall@1": 0.0, "recall@2": 0.5, "perfect@1": 0.0, "perfect@2": 0.0, "rr": 0.5}
    m = mean_metrics([q1, q2])
    assert m["recall@2"] == 0.75 and m["mrr"] == 0.75 and m["perfect@2"] == 0.5
    g = grouped_means([q1, q2], [["table"], ["table", "chart"]], keep=lambda k: k.startswith("recall@"))
    assert g["table"]["recall@2"] == 0.75 and g["table"]["n"] == 2
    assert g["chart"] == {"recall@1": 0.0, "recall@2": 0.5, "n": 1}
    lat = latency_summary([10.0, 20.0, 30.0, 40.0])
    assert lat["p50_ms"] == 25.0 and lat["n"] == 4 and 38 < lat["p95_ms"] <= 40


def test_method_names_are_parsed_and_checked():
    assert parse_methods("bm25, dense,graph") == ["bm25", "dense", "graph:default"]
    assert "graph:scienceqa" in parse_methods("graph:all")
    with pytest.raises(ValueError, match="unknown method 'graph:nope'"):
        parse_methods("graph:nope")
    with pytest.raises(ValueError, match="no methods"):
        parse_methods(" , ")


# -- loaders -----------------------------------------------------------------------------------------


@needs_shared
def test_twowiki_loader_and_partitioned_corpus(tmp_path: Path):
    tw = TwoWiki.load(TWOWIKI / "corpus.json", TWOWIKI / "questions_dev.json")
    assert len(tw.passages) == 6119 and len(tw.dataset.questions) == 40
    q = tw.dataset.questions[0]
    assert q.answerable and 2 <= len(q.relevant) <= 4 and q.doc is None
    assert tw.dataset.unit_of(q.relevant[0], "part00/corpus.json", None) == q.relevant[0]

    tw.passages = tw.passages[:50]  # a small slice to write
    keys = tw.write_corpus(tmp_path, partitions=3)
    assert keys == ["part00", "part01", "part02"]
    parts = [json.loads((tmp_path / k / "corpus.json").read_text(encoding="utf-8")) for k in keys]
    assert [len(p) for p in parts] == [17, 17, 16]
    assert parts[1][0] == tw.passages[1]  # round robin
    stamp = (tmp_path / "part00" / "corpus.json").stat().st_mtime_ns
    tw.write_corpus(tmp_path, partitions=3)  # unchanged content is not rewritten
    assert (tmp_path / "part00" / "corpus.json").stat().st_mtime_ns == stamp
    with pytest.raises(DatasetError, match="part02"):
        tw.write_corpus(tmp_path, partitions=2)  # an old split's folder would be indexed too


@needs_shared
def test_mmlongbench_loader_pages_sources_and_partitions(tmp_path: Path):
    mb = MMLongBench.load(MMLB / "documents", MMLB / "questions_dev.json")
    ds = mb.dataset
    assert len(mb.documents) == 14 and len(ds.questions) == 134
    assert sum(q.answerable for q in ds.questions) == 105  # 29 have evidence_pages "[]"
    q = next(q for q in ds.questions if q.id == "mmlb-0013")
    assert q.relevant == ("0e94b4197b10096b1f4c699701570fbf.pdf#2",) and q.sources == ("text",)
    assert {s for q in ds.questions for s in q.sources} == {"text", "table", "chart", "figure", "layout"}
    assert (
        ds.unit_of("any", "0e94b4197b10096b1f4c699701570fbf/0e94b4197b10096b1f4c699701570fbf.pdf", 2) == q.relevant[0]
    )
    assert ds.doc_partitions["2023.acl-long.386.pdf"] == "2023.acl-long.386"

    small = "379f44022bb27aa53efd5d322c7b57bf.pdf"
    mb.documents = {small: mb.documents[small]}
    assert mb.write_corpus(tmp_path) == ["379f44022bb27aa53efd5d322c7b57bf"]
    copy = tmp_path / "379f44022bb27aa53efd5d322c7b57bf" / small
    assert copy.is_file() and not copy.is_symlink()
    assert copy.read_bytes() == (MMLB / "documents" / small).read_bytes()


def test_bad_question_files_name_the_file_and_problem(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    write_pdf(docs / "a.pdf", ["One page."])
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps([{"id": "q1", "doc_id": "a.pdf", "question": "?", "evidence_pages": "[1,",
                                "evidence_sources": "[]"}]))  # fmt: skip
    with pytest.raises(DatasetError, match=r"q\.json: question q1: evidence_pages .* is not a list"):
        MMLongBench.load(docs, bad)
    bad.write_text(json.dumps([{"id": "q1", "doc_id": "a.pdf", "question": "?", "evidence_pages": "[1]",
                                "evidence_sources": "['Sound']"}]))  # fmt: skip
    with pytest.raises(DatasetError, match=r"unknown evidence source\(s\) \['Sound'\]"):
        MMLongBench.load(docs, bad)
    bad.write_text(json.dumps([{"id": "q1", "doc_id": "b.pdf", "question": "?", "evidence_pages": "[1]",
                                "evidence_sources": "[]"}]))  # fmt: skip
    with pytest.raises(DatasetError, match=r"refers to b\.pdf"):
        MMLongBench.load(docs, bad)
    bad.write_text(json.dumps([{"id": "q1", "question": "?"}]))
    with pytest.raises(DatasetError, match=r"q\.json: item 0 lacks \['supporting_titles'\]"):
        load_sample(bad)
    bad.write_text("{not json")
    with pytest.raises(DatasetError, match="not valid UTF-8 JSON"):
        load_sample(bad)


def test_sample_questions_name_real_documents():
    ds = load_sample(SAMPLE_CORPUS / "questions.json")
    assert len(ds.questions) >= 8
    text = " ".join(p.read_text(encoding="utf-8") for p in SAMPLE_CORPUS.rglob("*.md"))
    text += (SAMPLE_CORPUS / "nature_and_objects" / "image_catalog.jsonl").read_text(encoding="utf-8")
    for q in ds.questions:
        for title in q.relevant:
            assert title in text or title == "From the Harvard Mark I to COBOL", title  # the PDF's metadata title


# -- end to end ----------------------------------------------------------------------------------------


def test_eval_sample_end_to_end_through_the_cli(tmp_path: Path):
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    data, out = tmp_path / "data", tmp_path / "out"
    args = ["eval", "sample", "--corpus", str(corpus), "--data-root", str(data), "--out", str(out),
            "--methods", "bm25,dense,graph:default,graph:scienceqa", "--k", "1,5,10"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    run = json.loads((out / "results.json").read_text(encoding="utf-8"))
    report = (out / "report.md").read_text(encoding="utf-8")
    methods = ["bm25", "dense", "graph:default", "graph:scienceqa"]
    assert run["methods"] == methods and run["scopes"] == ["corpus"] and run["n_scored"] == 10
    for name in methods:
        assert f"| {name} |" in report
        m = run["summary"]["corpus"][name]
        assert set(m) == {"recall@1", "recall@5", "recall@10", "perfect@1", "perfect@5", "perfect@10", "mrr"}
        assert m["recall@5"] >= 0.7, (name, m)  # a tiny corpus: the supporting documents rank near the top
        assert run["latency"][name]["n"] == 10 and run["latency"][name]["p95_ms"] >= run["latency"][name]["p50_ms"]
    q1 = next(q for q in run["questions"] if q["id"] == "sample-01")
    for name in ("dense", "graph:default"):
        assert q1["results"]["corpus"][name]["ranked"][0] == "Eileen Collins, Space Shuttle Pilot and Commander"
    build = run["build"]
    assert not build["reused"] and build["documents"] >= 14 and build["peak_bytes"] > 0
    assert {"ingest", "chunks", "embed"} <= set(build["steps"]) and build["wall_s"] > 0
    assert "build stage" in report and "p50 ms" in report
    assert build["cold"] and "Cold build" in report  # --rebuild times the full cost, not cache hits
    # the head-to-head table counts every question once per (graph, baseline) pair
    assert "## Question by question: perfect@10" in report
    assert report.count("| graph:default | bm25 |") == 1
    # graph results say what the query linked to: sample-01 names the Space Shuttle
    q1 = next(q for q in run["questions"] if q["id"] == "sample-01")
    assert "space shuttle" in q1["results"]["corpus"]["graph:default"]["why"]["linked_entities"]
    assert q1["results"]["corpus"]["graph:scienceqa"]["why"]["linked_entities"] == []

    # same corpus files: the published index is re-used, and the scores are the same question by question
    res = CliRunner().invoke(
        app, [*args[:-4], "--reuse", "--methods", "dense", "--k", "1,5,10", "--out", str(out / "b")]
    )
    assert res.exit_code == 0, res.output
    again = json.loads((out / "b" / "results.json").read_text(encoding="utf-8"))
    assert again["build"]["reused"] and again["index"]["version"] == run["index"]["version"]
    assert compare(run, again, "recall@5") == []
    changed = json.loads(json.dumps(again))
    changed["questions"][0]["results"]["corpus"]["dense"]["metrics"]["recall@5"] = -1.0
    diffs = compare(run, changed, "recall@5")
    assert [(d["id"], d["method"], d["b"]) for d in diffs] == [("sample-01", "dense", -1.0)]


def test_page_retrieval_within_document_and_across_the_corpus(tmp_path: Path):
    """MMLongBench-Doc format on two generated PDFs: page units, document filters, evidence-source breakdown.

    Built in the same process as the sample eval, in another data root: each data root has its own
    Dagster instance, so the sample's partitions do not leak into this publish.
    """
    from mmkg.index import Index
    from pipelines.build import build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    write_pdf(docs / "volcanoes.pdf", [
        "Mount Etna is an active stratovolcano on the east coast of Sicily, Italy.",
        "Table 2 lists eruptions: Etna erupted in 1669 and destroyed part of Catania.",
    ])  # fmt: skip
    write_pdf(docs / "glaciers.pdf", [
        "The Aletsch Glacier is the largest glacier in the Alps, in the canton of Valais.",
        "Chart 1 shows the Aletsch Glacier retreating by about 3 kilometres since 1870.",
    ])  # fmt: skip
    questions = [
        {"id": "m1", "doc_id": "volcanoes.pdf", "question": "Which city did the 1669 eruption of Etna destroy part of?",
         "evidence_pages": "[2]", "evidence_sources": "['Table']"},
        {"id": "m2", "doc_id": "glaciers.pdf", "question": "How far has the Aletsch Glacier retreated since 1870?",
         "evidence_pages": "[2]", "evidence_sources": "['Chart', 'Pure-text (Plain-text)']"},
        {"id": "m3", "doc_id": "glaciers.pdf", "question": "Who owns the glacier?", "evidence_pages": "[]",
         "evidence_sources": "[]"},
    ]  # fmt: skip
    qpath = tmp_path / "questions.json"
    qpath.write_text(json.dumps(questions), encoding="utf-8")
    mb = MMLongBench.load(docs, qpath)
    corpus, data = tmp_path / "corpus", tmp_path / "data"
    corpus.mkdir()
    assert mb.write_corpus(corpus) == ["glaciers", "volcanoes"]
    stale = data / "cache" / "parse" / "stale-pipeline" / "glaciers" / "chunks.parquet"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"left by an older build")
    report = build_index(corpus, data, cold=True)
    assert report.documents == 2 and report.pages == 4 and not report.reused
    assert report.cold and not stale.exists()  # a cold build starts without the model caches ...
    assert list((data / "cache" / "parse").glob("*/glaciers/chunks.parquet"))  # ... and leaves them filled
    assert build_index(corpus, data).reused

    idx = Index.open(data / "index")
    run = run_eval(idx, mb.dataset, make_methods(idx, ["bm25", "dense", "graph:default"]), ks=[1, 2, 4], depth=10)
    assert run.scopes == ["corpus", "document"] and run.n_scored == 2 and run.unreachable == []
    skipped = next(q for q in run.questions if q["id"] == "m3")
    assert not skipped["answerable"] and skipped["results"] == {}
    for name in run.methods:
        assert run.summary["document"][name]["recall@2"] == 1.0, name  # two pages per document
        assert run.summary["corpus"][name]["recall@4"] == 1.0, name  # four pages in all
    m1 = next(q for q in run.questions if q["id"] == "m1")["results"]
    assert all(u.startswith("volcanoes.pdf#") for u in m1["document"]["dense"]["ranked"])  # filtered to its document
    assert m1["document"]["bm25"]["ranked"][0] == "volcanoes.pdf#2"
    assert {u.split("#")[0] for u in m1["corpus"]["dense"]["ranked"]} == {"volcanoes.pdf", "glaciers.pdf"}
    assert set(run.by_source["document"]["dense"]) == {"table", "chart", "text"}
    assert run.by_source["document"]["bm25"]["chart"]["n"] == 1
    written, md = run.write(tmp_path / "out")
    assert "within the question's own document" in md.read_text(encoding="utf-8")
    assert json.loads(written.read_text(encoding="utf-8"))["n_questions"] == 3


def test_eval_reports_a_missing_corpus_file_clearly(tmp_path: Path):
    res = CliRunner().invoke(app, ["eval", "twowiki", "--corpus", str(tmp_path / "nope.json")])
    assert res.exit_code == 2 and "nope.json: file not found" in " ".join(res.output.split())
