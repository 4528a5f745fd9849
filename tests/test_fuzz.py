"""The fuzz harness's small copy: a hostile corpus through the real Dagster assets, then a published index.

Two partitions of 74 planted files each (good, bad, odd-but-valid, over budget, hidden, plus links and
symlinks to canary files outside the root). No partition may fail, every good file must become a
document, every bad one a rejection with a reason, every cut a recorded reason, no canary may reach a
table, and the index built from what is left must open and answer. The large copy (12 partitions, the
1 MB run-on file, time and memory per partition) is ``benchmarks/fuzz_corpus.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize
from indexing import PARTITIONED, publish

from mmkg.eval.fuzz import CUT, REJECTED, check, make_corpus
from mmkg.index import Index
from mmkg.ingest import Limits
from mmkg.retrieval import retrieve
from pipelines.resources import default_resources
from resources import CorpusResource

LIMITS = Limits(max_sentences_per_document=1000, max_pages=3)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("fuzz")
    corpus = make_corpus(
        base / "corpus", partitions=2, run_on_chars=60_000, tiny_sentences=3000, pdf_pages=5, limits=LIMITS
    )
    resources = default_resources(corpus.root, base / "data")
    resources["corpus"] = CorpusResource(root=str(corpus.root), max_sentences_per_document=1000, max_pages=3)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", corpus.partitions)
    failed = [
        key
        for key in corpus.partitions
        if not materialize(
            PARTITIONED, partition_key=key, instance=instance, resources=resources, raise_on_error=False
        ).success
    ]
    return corpus, base / "data", failed, instance, resources


def test_no_partition_fails_and_every_file_is_accounted_for(built):
    corpus, data, failed, _, _ = built
    assert failed == []
    report = check(corpus, data, failed)
    wrong = [(o.planted.path, o.planted.expect, o.outcome, o.detail) for o in report.wrong]
    assert wrong == []
    summary = report.summary()
    assert summary["files"] == len(corpus.planted) >= 140
    assert summary["good_lost"] == summary["bad_not_rejected"] == summary["canary_leaks"] == 0
    expected = corpus.counts()
    assert expected[REJECTED] >= 70 and expected[CUT] == 6  # run-on, tiny sentences and the long PDF, twice


def test_the_checker_notices_a_lost_file_and_a_leak(built, tmp_path: Path):
    """The checker is only worth its passes if it fails: drop a good document and plant the canary."""
    import polars as pl

    corpus, data, _, _, _ = built
    copy = tmp_path / "data"
    for name in ("documents", "rejected_files"):
        (copy / "tables" / name).mkdir(parents=True)
        for key in corpus.partitions:
            df = pl.read_parquet(data / "tables" / name / f"{key}.parquet")
            if name == "documents":
                df = df.filter(pl.col("source_path") != f"{key}/notes.md")
                df = df.with_columns(pl.col("title").str.replace("^", corpus.canary + " "))
            df.write_parquet(copy / "tables" / name / f"{key}.parquet")
    report = check(corpus, copy, failed_partitions=["fuzz01"])
    assert {o.planted.path for o in report.good_lost} >= {"fuzz00/notes.md"}
    assert any(o.planted.partition == "fuzz01" and o.outcome == "lost" for o in report.outcomes)
    assert report.leaks == [f"tables/documents/{k}.parquet:title" for k in corpus.partitions]
    assert not report.passed


def test_the_index_built_from_what_is_left_opens_and_answers(built):
    corpus, data, _, instance, resources = built
    publish(instance, resources)
    index = Index.open(data / "index")
    result = retrieve(index, text="Who founded the Orion Institute?", k=5)
    assert result.chunks and all(corpus.canary not in c.text for c in result.chunks)
    assert {c.partition for c in result.chunks} <= set(corpus.partitions)
