"""Integration: materialize the bundled sample corpus with Dagster and check the Parquet outputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from assets import ingest, text
from mmkg import schemas
from mmkg.ingest import list_partitions
from pipelines.definitions import defs
from pipelines.resources import default_resources

PARTITIONED = [ingest.ingest, text.chunks, text.parse, text.entities]


@dataclass
class Built:
    data: Path
    keys: list[str]
    instance: DagsterInstance
    resources: dict
    results: dict


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    from conftest import SAMPLE_CORPUS

    data = tmp_path_factory.mktemp("data")
    instance = DagsterInstance.ephemeral()
    keys = list_partitions(SAMPLE_CORPUS)
    instance.add_dynamic_partitions("corpus", keys)
    resources = default_resources(SAMPLE_CORPUS, data)
    results = {key: materialize(PARTITIONED, partition_key=key, instance=instance, resources=resources) for key in keys}
    return Built(data, keys, instance, resources, results)


def table(data: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(data / "tables" / name / "*.parquet")


def test_every_partition_materializes(built):
    assert built.keys == ["computing_history", "nature_and_objects", "space"]
    for key in built.keys:
        assert built.results[key].success
        for name in schemas.TABLES:
            if name == "entity_catalog":
                continue
            path = built.data / "tables" / name / f"{key}.parquet"
            assert path.exists(), path
            assert pl.read_parquet_schema(path) == dict(schemas.TABLES[name]), name


def test_counts_are_plausible(built):
    docs = table(built.data, "documents")
    by_kind = dict(docs.group_by("kind").len().iter_rows())
    assert by_kind["markdown"] == 9 and by_kind["pdf"] == 1 and by_kind["json"] == 4 and by_kind["image"] == 1
    assert table(built.data, "rejected_files").is_empty()
    images = table(built.data, "images")
    assert set(images["role"]) == {"linked", "embedded", "standalone"}
    assert images.filter(pl.col("role") == "embedded")["page"].to_list() == [1]
    chunks = table(built.data, "chunks")
    assert chunks["n_tokens"].max() <= 200
    # every document with text has chunks; linked/embedded images sit in a chunk
    assert set(docs.filter(pl.col("text") != "")["doc_id"]) == set(chunks["doc_id"])
    attached = set(chunks["image_ids"].explode().drop_nulls())
    assert attached == set(images.filter(pl.col("role") != "standalone")["image_id"])
    mentions = table(built.data, "entity_mentions")
    assert {"PERSON", "ORG", "GPE", "TITLE"} <= set(mentions["label"])
    rel = table(built.data, "relations")
    assert rel.height >= 30
    assert ("Grace Hopper", "work_at", "Harvard University") in set(rel.select("subject", "predicate", "object").rows())


def test_referential_integrity(built):
    con = duckdb.connect()
    tables = built.data / "tables"

    def q(sql: str) -> int:
        return con.execute(sql.replace("T/", f"{tables}/")).fetchone()[0]

    def orphans(child: str, parent: str, key: str) -> int:
        return q(f"select count(*) from 'T/{child}/*.parquet' anti join 'T/{parent}/*.parquet' using ({key})")

    assert orphans("sentences", "chunks", "chunk_id") == 0
    assert orphans("chunks", "documents", "doc_id") == 0
    assert orphans("entity_mentions", "sentences", "sentence_id") == 0
    assert orphans("relations", "sentences", "sentence_id") == 0
    assert orphans("images", "documents", "doc_id") == 0
    # sentences lie inside their chunk, and their text is the document text at their offsets
    bad = q(
        """select count(*) from 'T/sentences/*.parquet' s join 'T/chunks/*.parquet' c using (chunk_id)
           join 'T/documents/*.parquet' d on d.doc_id = s.doc_id
           where s.char_start < c.char_start or s.char_end > c.char_end
              or substr(d.text, s.char_start + 1, s.char_end - s.char_start) != s.text"""
    )
    assert bad == 0
    # every NER mention's text is the document text at its offsets
    assert (
        q(
            """select count(*) from 'T/entity_mentions/*.parquet' m join 'T/documents/*.parquet' d using (doc_id)
           where m.source = 'ner' and substr(d.text, m.char_start + 1, m.char_end - m.char_start) != m.text"""
        )
        == 0
    )
    # every chunk of a document carries its title as a mention
    assert (
        q(
            """select count(*) from 'T/chunks/*.parquet' c anti join
           (select chunk_id from 'T/entity_mentions/*.parquet' where source = 'title') t using (chunk_id)"""
        )
        == 0
    )
    # image blobs exist, stored once
    images = table(built.data, "images")
    for blob in images["blob_path"].unique():
        assert (built.data / blob).is_file()


def test_entity_catalog_merges_partitions(built):
    result = defs.resolve_job_def("build_catalog").execute_in_process(
        instance=built.instance, resources=built.resources
    )
    assert result.success
    catalog = pl.read_parquet(built.data / "tables" / "entity_catalog.parquet")
    per_partition = table(built.data, "entities")
    assert catalog["entity_key"].is_unique().all()
    assert set(catalog["entity_key"]) == set(per_partition["entity_key"])
    assert catalog["n_mentions"].sum() == table(built.data, "entity_mentions").height
    hopper = catalog.filter(pl.col("entity_key") == "grace hopper").row(0, named=True)
    assert hopper["label"] == "PERSON" and hopper["n_docs"] >= 3
    nasa = catalog.filter(pl.col("entity_key") == "nasa").row(0, named=True)
    assert nasa["relational"]
    shared = catalog.filter(pl.col("partitions").list.len() > 1)
    assert shared.height > 0


def test_rematerializing_is_idempotent(built):
    before = pl.read_parquet(built.data / "tables" / "chunks" / "space.parquet")
    assert materialize(PARTITIONED, partition_key="space", instance=built.instance, resources=built.resources).success
    after = pl.read_parquet(built.data / "tables" / "chunks" / "space.parquet")
    assert before.equals(after)


def test_materialization_metadata_is_reported(built):
    from dagster import AssetKey

    event = built.instance.get_latest_materialization_event(AssetKey("relations"))
    meta = event.asset_materialization.metadata
    assert meta["row_count"].value > 0
    assert "| subject |" in meta["preview"].value
    assert "by_rule" in meta
    docs = built.instance.get_latest_materialization_event(AssetKey("documents")).asset_materialization.metadata
    assert docs["seconds"].value > 0 and docs["files_read"].value > 0
