"""Keeping the index fresh: fingerprints, the corpus sensor, the publish sensor and the re-index schedule.

The sensor tests use a real corpus folder and an ephemeral instance; the incremental tests build
the sample corpus through the sensors with real Dagster materializations, then change, remove and
re-add folders and check the materialization events and the published index versions.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import lancedb
import polars as pl
import pytest
from dagster import (
    AddDynamicPartitionsRequest,
    AssetKey,
    AssetRecordsFilter,
    DagsterInstance,
    DeleteDynamicPartitionsRequest,
    build_sensor_context,
    instance_for_test,
)

from mmkg.index import Index
from mmkg.ingest.fingerprint import corpus_fingerprints, diff_fingerprints, partition_fingerprint
from mmkg.retrieval import retrieve
from mmkg.tables import connect
from pipelines.definitions import defs
from pipelines.resources import default_resources
from pipelines.schedules import LocalDaemon
from pipelines.sensors import asset_keys, corpus_partition_sensor
from resources import CorpusResource

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- fingerprints (no Dagster) ---------------------------------------------------------------------


def test_fingerprint_follows_content_not_copies(tmp_path: Path):
    a = write(tmp_path / "c" / "p" / "a.md", "# A\n\nAda Lovelace wrote the first program.\n")
    write(tmp_path / "c" / "p" / "sub" / "b.txt", "Charles Babbage designed the Analytical Engine.\n")
    fp = partition_fingerprint(tmp_path / "c" / "p")
    assert fp == partition_fingerprint(tmp_path / "c" / "p")
    # a copy elsewhere (new mtimes) has the same content fingerprint, but not the same stat fingerprint
    shutil.copytree(tmp_path / "c" / "p", tmp_path / "c" / "q")
    assert partition_fingerprint(tmp_path / "c" / "q") == fp
    # hidden files are not read by ingest, so they do not count
    write(tmp_path / "c" / "p" / ".notes.md", "scratch")
    assert partition_fingerprint(tmp_path / "c" / "p") == fp
    # same size, different bytes: content mode sees it
    a.write_text(a.read_text(encoding="utf-8").replace("Ada", "Eve"), encoding="utf-8")
    assert partition_fingerprint(tmp_path / "c" / "p") != fp
    # a rename changes it too
    stat = partition_fingerprint(tmp_path / "c" / "p", "stat")
    a.rename(a.with_name("renamed.md"))
    assert partition_fingerprint(tmp_path / "c" / "p", "stat") != stat
    with pytest.raises(ValueError, match="fingerprint mode 'md5'"):
        partition_fingerprint(tmp_path / "c" / "p", "md5")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="missing"):
        partition_fingerprint(tmp_path / "c" / "missing")


def test_diff_fingerprints(tmp_path: Path):
    write(tmp_path / "a" / "x.md", "one")
    write(tmp_path / "b" / "x.md", "two")
    before = corpus_fingerprints(tmp_path)
    assert not diff_fingerprints(before, before)
    write(tmp_path / "b" / "x.md", "three")
    write(tmp_path / "c" / "x.md", "four")
    shutil.rmtree(tmp_path / "a")
    d = diff_fingerprints(before, corpus_fingerprints(tmp_path))
    assert (d.added, d.changed, d.removed) == (["c"], ["b"], ["a"])


# -- the corpus sensor on a real folder and an ephemeral instance -----------------------------------


def _tick(instance: DagsterInstance, corpus: Path, cursor: str | None):
    resources = {"corpus": CorpusResource(root=str(corpus))}
    with build_sensor_context(instance=instance, cursor=cursor, resources=resources, definitions=defs) as ctx:
        data = corpus_partition_sensor(ctx)  # the raw SensorResult (resolving needs an instance with a ref)
    requests = data.dynamic_partitions_requests
    adds = [k for r in requests if isinstance(r, AddDynamicPartitionsRequest) for k in r.partition_keys]
    deletes = [k for r in requests if isinstance(r, DeleteDynamicPartitionsRequest) for k in r.partition_keys]
    # what the daemon does with the requests
    if adds:
        instance.add_dynamic_partitions("corpus", adds)
    for k in deletes:
        instance.delete_dynamic_partition("corpus", k)
    runs = sorted(r.partition_key for r in data.run_requests)
    return runs, adds, deletes, data.cursor


def test_sensor_adds_changes_and_removes(tmp_path: Path):
    corpus = tmp_path / "corpus"
    write(corpus / "alpha" / "a.md", "# Alpha\n\nGrace Hopper worked at Harvard.\n")
    write(corpus / "beta" / "b.md", "# Beta\n\nEileen Collins commanded STS-93.\n")
    write(corpus / "_drafts" / "d.md", "not a partition")
    instance = DagsterInstance.ephemeral()

    runs, adds, deletes, cursor = _tick(instance, corpus, None)
    assert (runs, adds, deletes) == (["alpha", "beta"], ["alpha", "beta"], [])
    assert set(json.loads(cursor)) == {"alpha", "beta"}
    assert instance.get_dynamic_partitions("corpus") == ["alpha", "beta"]

    assert _tick(instance, corpus, cursor)[:3] == ([], [], [])  # unchanged corpus: nothing

    write(corpus / "gamma" / "g.jsonl", json.dumps({"id": "g1", "title": "Gamma", "text": "A new folder."}) + "\n")
    runs, adds, deletes, cursor = _tick(instance, corpus, cursor)
    assert (runs, adds, deletes) == (["gamma"], ["gamma"], [])

    write(corpus / "beta" / "b.md", "# Beta\n\nEileen Collins commanded STS-93 and STS-114.\n")
    runs, adds, deletes, cursor = _tick(instance, corpus, cursor)
    assert (runs, adds, deletes) == (["beta"], [], [])

    shutil.rmtree(corpus / "alpha")
    runs, adds, deletes, cursor = _tick(instance, corpus, cursor)
    assert (runs, adds, deletes) == ([], [], ["alpha"])
    assert instance.get_dynamic_partitions("corpus") == ["beta", "gamma"]
    assert set(json.loads(cursor)) == {"beta", "gamma"}

    assert _tick(instance, corpus, cursor)[:3] == ([], [], [])

    # the same folder name comes back: a new partition again
    write(corpus / "alpha" / "a.md", "# Alpha\n\nGrace Hopper worked at Harvard.\n")
    runs, adds, _, cursor = _tick(instance, corpus, cursor)
    assert (runs, adds) == (["alpha"], ["alpha"])


def test_sensor_without_cursor_asks_the_instance(tmp_path: Path):
    # registered by someone else and never materialized: the first tick runs them; a lost cursor is a fresh start
    corpus = tmp_path / "corpus"
    write(corpus / "alpha" / "a.md", "# Alpha\n\ntext\n")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", ["alpha"])
    assert _tick(instance, corpus, None)[:3] == (["alpha"], [], [])
    assert _tick(instance, corpus, "not json")[:3] == (["alpha"], [], [])


def test_sensor_names_a_missing_corpus_root(tmp_path: Path):
    with pytest.raises(Exception, match="does not exist"):
        _tick(DagsterInstance.ephemeral(), tmp_path / "nowhere", None)


def test_the_assets_before_documents_are_every_asset_upstream_of_it():
    """A partition is "incomplete" when an asset lacks a materialization since its last ``documents`` one; the assets
    its run writes before ``documents`` cannot have one, and are exactly ``BEFORE_DOCUMENTS``."""
    from dagster import AssetKey

    from pipelines.records import BEFORE_DOCUMENTS

    graph = defs.resolve_asset_graph()
    upstream, todo = set(), [AssetKey("documents")]
    while todo:
        for parent in graph.get(todo.pop()).parent_keys:
            if parent not in upstream:
                upstream.add(parent)
                todo.append(parent)
    assert upstream == set(BEFORE_DOCUMENTS)


# -- incremental re-indexing of the sample corpus through the sensors and the schedule -------------


@dataclass
class Env:
    corpus: Path
    data: Path
    instance: DagsterInstance
    daemon: LocalDaemon

    @property
    def index(self) -> Path:
        return self.data / "index"


def materialized_since(instance: DagsterInstance, after: int) -> set[tuple[str, str | None]]:
    """(asset, partition) of every materialization recorded after storage id ``after``."""
    partitioned, global_ = asset_keys()
    out = set()
    for key in (*partitioned, *global_):
        recs = instance.fetch_materializations(AssetRecordsFilter(asset_key=key, after_storage_id=after), limit=1000)
        out |= {(key.to_user_string(), r.partition_key) for r in recs.records}
    return out


def last_id(instance: DagsterInstance) -> int:
    return instance.event_log_storage.get_maximum_record_id() or 0


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    from conftest import SAMPLE_CORPUS

    corpus = tmp_path_factory.mktemp("corpus")
    shutil.copytree(SAMPLE_CORPUS, corpus, dirs_exist_ok=True)
    data = tmp_path_factory.mktemp("data")
    with instance_for_test() as instance:  # a real instance (with a ref) as the schedule context needs one
        daemon = LocalDaemon(defs, instance, default_resources(corpus, data), QUIET)
        sensed, published = daemon.refresh()  # the full build, through the sensors
        assert sensed.added == sensed.partitions == ["computing_history", "nature_and_objects", "space"]
        assert len(published.runs) == 1
        yield Env(corpus, data, instance, daemon)


def test_full_build_through_the_sensors_is_then_up_to_date(env: Env):
    idx = Index.open(env.index)
    assert set(idx.manifest.partitions) == {"computing_history", "nature_and_objects", "space"}
    before = last_id(env.instance)
    for tick in (*env.daemon.refresh(), env.daemon.schedule_tick(), env.daemon.schedule_tick()):
        assert tick.runs == [] and tick.added == [] and tick.removed == []
    assert materialized_since(env.instance, before) == set()  # no model work, not even a publish
    assert Index.open(env.index).version == idx.version
    # the asset page shows the latest materialization: one partition's rows, and the table's total beside them
    latest = env.instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey("chunks")), limit=1).records[0]
    meta = latest.asset_materialization.metadata
    rows = {p: pl.read_parquet(env.data / "tables" / "chunks" / f"{p}.parquet").height for p in idx.manifest.partitions}
    assert meta["partition"].value == latest.partition_key
    assert meta["dagster/row_count"].value == rows[latest.partition_key] < meta["rows_in_every_partition"].value
    assert meta["rows_in_every_partition"].value == sum(rows.values()) == idx.n_chunks
    latest = env.instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey("retrieval_index")),
                                                 limit=1).records[0]  # fmt: skip
    assert latest.asset_materialization.metadata["dagster/row_count"].value == idx.n_chunks


def test_changed_document_reindexes_only_its_partition(env: Env):
    old = Index.open(env.index)
    before = last_id(env.instance)
    doc = env.corpus / "space" / "eileen_collins.md"
    doc.write_text(
        doc.read_text(encoding="utf-8")
        + "\n\nZorbatron Kelvingrove, a lighthouse keeper from Tobermory, painted the STS-93 mission patch.\n",
        encoding="utf-8",
    )
    sensed, published = env.daemon.refresh()
    assert sensed.partitions == ["space"] and len(published.runs) == 1
    assert sensed.runs[0].tags["mmkg/trigger"] == published.runs[0].tags["mmkg/trigger"] == "sensor"
    done = materialized_since(env.instance, before)
    partitioned, global_ = asset_keys()
    assert {p for a, p in done if p is not None} == {"space"}
    assert {a for a, p in done if p == "space"} == {k.to_user_string() for k in partitioned}
    assert {a for a, p in done if p is None} == {k.to_user_string() for k in global_}

    # the unchanged sentences of the edited partition come from the vector cache, not the encoder ...
    recs = env.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("sentence_vectors"), after_storage_id=before), limit=1
    ).records
    meta = recs[0].asset_materialization.metadata
    assert 0 < meta["reused_from_cache"].value < meta["dagster/row_count"].value
    # ... and the unchanged chunks' parses from the parse cache, not spaCy
    recs = env.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("sentences"), after_storage_id=before), limit=1
    ).records
    meta = recs[0].asset_materialization.metadata
    n_chunks = pl.read_parquet(env.data / "tables" / "chunks" / "space.parquet").height
    assert 0 < meta["chunks_reused_from_cache"].value < n_chunks

    new = Index.open(env.index)
    assert new.version != old.version
    res = retrieve(new, text="Who painted the STS-93 mission patch? Zorbatron Kelvingrove", k=3)
    assert res.chunks[0].source_path == "space/eileen_collins.md"
    assert "Zorbatron Kelvingrove" in res.chunks[0].text
    assert not old.chunks.filter(pl.col("text").str.contains("Zorbatron")).height
    assert new.chunks.filter(pl.col("text").str.contains("Zorbatron")).height == 1
    # unchanged partitions keep their published ids
    assert {p: f for p, f in new.manifest.partitions.items() if p != "space"} == {
        p: f for p, f in old.manifest.partitions.items() if p != "space"
    }


def test_schedule_reindexes_stale_partitions_once(env: Env):
    doc = env.corpus / "computing_history" / "grace_hopper.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\n\nHopper kept a clock that ran counterclockwise.\n")
    before = last_id(env.instance)
    first = env.daemon.schedule_tick()  # requests the stale partition only: publish waits for it
    assert first.partitions == ["computing_history"] and len(first.runs) == 1
    assert first.runs[0].tags["mmkg/reason"] == "changed" and first.runs[0].tags["mmkg/trigger"] == "schedule"
    second = env.daemon.schedule_tick()  # no partition runs the second time; the index is published
    assert second.partitions == [] and len(second.runs) == 1
    assert set(second.runs[0].asset_selection) == set(asset_keys()[1])
    third = env.daemon.schedule_tick()
    assert third.runs == [] and third.skip == "the index is up to date"
    assert {p for _, p in materialized_since(env.instance, before)} == {"computing_history", None}
    # the corpus sensor's cursor still has the old fingerprint, but the instance says it is done: no second run
    assert [t.runs for t in env.daemon.refresh()] == [[], []]
    idx = Index.open(env.index)
    assert idx.chunks.filter(pl.col("text").str.contains("counterclockwise")).height == 1


def test_removed_partition_leaves_the_new_version_but_not_the_old(env: Env):
    old = Index.open(env.index)
    gone = "nature_and_objects"
    mentions = pl.read_parquet(env.data / "tables" / "entity_mentions" / "*.parquet")
    own = set(mentions.filter(pl.col("partition") == gone)["entity_key"])
    shared = set(mentions.filter(pl.col("partition") != gone)["entity_key"])
    old_entities = set(old.graph.nodes.filter(pl.col("kind") == "entity")["key"])
    only_gone = (own - shared) & old_entities
    kept_shared = own & shared & old_entities
    assert only_gone, "the removed partition should mention entities no other partition does"
    gone_chunks = set(old.chunks.filter(pl.col("partition") == gone)["chunk_id"])
    assert gone_chunks

    saved = env.data.parent / "saved_partition"
    shutil.move(env.corpus / gone, saved)
    before = last_id(env.instance)
    sensed, published = env.daemon.refresh()
    assert sensed.removed == [gone] and sensed.runs == []
    assert len(published.runs) == 1
    assert {p for _, p in materialized_since(env.instance, before)} == {None}  # only the global assets ran

    new = Index.open(env.index)
    assert gone not in new.manifest.partitions
    # its tables' files went with it: the SQL views and the Index view's rejected files show it no more
    assert not list((env.data / "tables").glob(f"*/{gone}.parquet"))
    assert not (env.data / "overlays" / gone).exists() and not list((env.data / "incidence").glob(f"*/{gone}"))
    assert gone not in {p for (p,) in connect(env.data).sql("SELECT DISTINCT partition FROM documents").fetchall()}
    nodes = new.graph.nodes
    assert not set(nodes["key"]) & gone_chunks
    new_entities = set(nodes.filter(pl.col("kind") == "entity")["key"])
    assert not new_entities & only_gone
    assert kept_shared <= new_entities
    for table in (new.chunks, new.sentences, new.images, new.objects):
        assert gone not in set(table["partition"])
    db = lancedb.connect(str(env.index / "lance"))
    for name, version in new.manifest.lance_versions.items():
        tbl = db.open_table(name)
        tbl.checkout(version)
        assert gone not in set(tbl.to_arrow().column("partition").to_pylist()), name
    with pytest.raises(ValueError, match=f"no partition '{gone}' in index version {new.version}; the index has 2: "):
        retrieve(new, text="Chelsea the cat", k=5, filters={"partition": gone})

    # a reader pinned to the old version still reads the removed partition
    pinned = Index.open(env.index, version=old.version)
    res = retrieve(pinned, text="Chelsea the cat", k=5, filters={"partition": gone})
    assert res.chunks and res.chunks[0].partition == gone

    # the folder comes back under the same name: a new partition, indexed and published again
    shutil.move(saved, env.corpus / gone)
    sensed, published = env.daemon.refresh()
    assert sensed.added == [gone] and sensed.partitions == [gone] and len(published.runs) == 1
    back = Index.open(env.index)
    assert back.manifest.partitions[gone] == old.manifest.partitions[gone]
    assert only_gone <= set(back.graph.nodes["key"])


def test_a_rollback_holds_until_the_corpus_changes(env: Env):
    """The sensors and the schedule do not undo `mmkg index rollback`: only a change to the corpus (or an explicit
    `mmkg index update`) publishes again."""
    from mmkg.index.manifest import list_versions, set_current

    newest = Index.open(env.index).version
    older = [v for v in list_versions(env.index) if v < newest][-1]
    set_current(env.index, older)
    before = last_id(env.instance)
    assert [t.runs for t in env.daemon.refresh()] == [[], []]
    tick = env.daemon.schedule_tick()
    assert tick.runs == [] and tick.skip.startswith(f"CURRENT was pointed at {older}, but the newest publish is")
    assert materialized_since(env.instance, before) == set() and Index.open(env.index).version == older
    doc = env.corpus / "space" / "eileen_collins.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\n\nCollins later flew STS-114.\n", encoding="utf-8")
    sensed, published = env.daemon.refresh()
    assert sensed.partitions == ["space"] and len(published.runs) == 1
    assert Index.open(env.index).version not in (older, newest)
