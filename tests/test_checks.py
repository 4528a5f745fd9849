"""Asset checks: every check passes on the sample corpus and fails on a deliberately broken copy of it.

The sample corpus is materialized once with every check in the runs (as the ``index_partition`` and
``publish_index`` jobs do). Each broken-input test copies the built data folder, breaks one stored
table / matrix / graph / index, and runs only that check through Dagster against the copy.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from dagster import AssetCheckKey, AssetKey, AssetSelection, DagsterInstance, Definitions, define_asset_job, materialize
from indexing import GLOBAL, PARTITIONED

from assets import checks, text
from mmkg import schemas, validation
from mmkg.graph import Graph
from mmkg.incidence import Incidence
from mmkg.index.units import validate_publish_inputs
from mmkg.ingest import list_partitions
from mmkg.retrieval.smoke import self_check, smoke_retrieval
from pipelines.resources import default_resources

PARTITION_CHECKS = [c for c in checks.CHECKS if next(iter(c.check_specs)).partitions_def is not None]
GLOBAL_CHECKS = [c for c in checks.CHECKS if c not in PARTITION_CHECKS]
PARTITION = "space"


@dataclass
class Built:
    corpus: Path
    data: Path
    keys: list[str]
    instance: DagsterInstance
    evaluations: list  # every AssetCheckEvaluation of the build


def _instance(keys: list[str]) -> DagsterInstance:
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", keys)
    return instance


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    from conftest import SAMPLE_CORPUS

    data = tmp_path_factory.mktemp("data")
    keys = list_partitions(SAMPLE_CORPUS)
    instance = _instance(keys)
    resources = default_resources(SAMPLE_CORPUS, data)
    evaluations = []
    for key in keys:
        r = materialize(PARTITIONED + PARTITION_CHECKS, partition_key=key, instance=instance, resources=resources)
        assert r.success
        evaluations += r.get_asset_check_evaluations()
    r = materialize(
        PARTITIONED + GLOBAL + GLOBAL_CHECKS,
        instance=instance,
        resources=resources,
        selection=AssetSelection.assets(*GLOBAL),
    )
    assert r.success
    evaluations += r.get_asset_check_evaluations()
    return Built(SAMPLE_CORPUS, data, keys, instance, evaluations)


def run_checks(data: Path, corpus: Path, keys: list[str], selected: list, partition: str | None, instance=None):
    """Run only the given checks (no materialization) against the tables under ``data``."""
    defs = Definitions(
        assets=PARTITIONED + GLOBAL,
        asset_checks=checks.CHECKS,
        resources=default_resources(corpus, data),
        jobs=[define_asset_job("only_checks", selection=AssetSelection.checks(*selected))],
    )
    tags = {"dagster/partition": partition} if partition else {}
    return defs.resolve_job_def("only_checks").execute_in_process(
        instance=instance or _instance(keys), tags=tags, raise_on_error=False
    )


def copy_data(built: Built, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(built.data, data)
    return data


def table_path(data: Path, name: str, partition: str = PARTITION) -> Path:
    return data / "tables" / name / f"{partition}.parquet"


# -- breakers: each writes a broken version of what one check reads ----------------------------------


def drop_last_column(name: str) -> Callable[[Path], None]:
    def br(data: Path) -> None:
        path = table_path(data, name) if name != "entity_catalog" else data / "tables" / "entity_catalog.parquet"
        df = pl.read_parquet(path)
        # columns added to a table later read as nulls from older files (schemas.ADDED_COLUMNS): drop another
        late = schemas.ADDED_COLUMNS.get(name, ())
        df.drop([c for c in df.columns if c not in late][-1]).write_parquet(path)

    return br


def dangling_reference(child: str, column: str) -> Callable[[Path], None]:
    def br(data: Path) -> None:
        path = table_path(data, child)
        df = pl.read_parquet(path)
        if df.is_empty():  # one row that refers to nothing
            df = schemas.frame([{"partition": PARTITION, column: "no-such-id"}], schemas.TABLES[child])
        else:
            first = pl.int_range(pl.len()) == 0
            df = df.with_columns(pl.when(first).then(pl.lit("no-such-id")).otherwise(pl.col(column)).alias(column))
        df.write_parquet(path)

    return br


def stretch_first_vector(name: str) -> Callable[[Path], None]:
    def br(data: Path) -> None:
        path = table_path(data, name)
        df = pl.read_parquet(path)
        if df.is_empty():
            pytest.skip(f"{name} of {PARTITION} is empty")
        vecs = df["vector"].to_numpy().copy()
        vecs[0] *= 2.0
        df.with_columns(pl.Series("vector", vecs.astype(np.float32), dtype=df.schema["vector"])).write_parquet(path)

    return br


def reorder_smi_rows(data: Path) -> None:
    path = data / "incidence" / "incidence_matrices" / PARTITION / "m_smi.npz"
    inc = Incidence.load(path)
    Incidence(inc.matrix[::-1], inc.row_ids[::-1], inc.col_ids).save(path)


def edge_to_missing_node(data: Path) -> None:
    folder = data / "graph" / "graph"
    g = Graph.load(folder)
    a = g.adjacency.tocsr().copy()
    a.indices = a.indices.astype(np.int64)
    a.indices[0] = g.n  # one past the last node
    Graph(a, g.nodes).save(folder)


def drop_one_edge(data: Path) -> None:
    folder = data / "graph" / "graph"
    g = Graph.load(folder)
    coo = g.adjacency.tocoo()
    u, v = int(coo.row[0]), int(coo.col[0])
    keep = ~(((coo.row == u) & (coo.col == v)) | ((coo.row == v) & (coo.col == u)))
    a = sp.csr_array((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=coo.shape)
    Graph(a, g.nodes).save(folder)


def duplicate_a_chunk_vector(data: Path) -> None:
    """A second vector row for one chunk, in another partition's file: the index table would outgrow the graph."""
    src = pl.read_parquet(table_path(data, "chunk_vectors"))
    other = next(p for p in (data / "tables" / "chunk_vectors").glob("*.parquet") if p.stem != PARTITION)
    pl.concat([pl.read_parquet(other), src.head(1)]).write_parquet(other)


def link_without_entity(data: Path) -> None:
    """An aligned cross-modal link that names no text entity."""
    path = table_path(data, "cross_modal_links")
    df = pl.read_parquet(path)
    if df.is_empty():
        pytest.skip(f"cross_modal_links of {PARTITION} is empty")
    first = pl.int_range(pl.len()) == 0
    df.with_columns(
        pl.when(first).then(pl.lit("spectral")).otherwise(pl.col("method")).alias("method"),
        pl.when(first).then(None).otherwise(pl.col("entity_key")).alias("entity_key"),
    ).write_parquet(path)


def misnest_heading(data: Path) -> None:
    """A heading at level 0: levels are 1-based, and a subheading's is above its parent's."""
    path = table_path(data, "sections")
    df = pl.read_parquet(path)
    assert not df.is_empty()  # the sample's Markdown documents open with a "# Title" heading
    first = pl.int_range(pl.len()) == 0
    df.with_columns(pl.when(first).then(0).otherwise(pl.col("level")).cast(pl.Int32).alias("level")).write_parquet(path)


def point_current_at_missing_version(data: Path) -> None:
    (data / "index" / "CURRENT").write_text("v-missing\n")


BREAKERS: dict[tuple[str, str], tuple[Callable[[Path], None], str]] = {
    **{(t, "schema"): (drop_last_column(t), "missing column") for t in checks.PARTITIONED_TABLES},
    **{
        (child, f"{col}_in_{parent}"): (dangling_reference(child, col), "reference a missing")
        for child, col, parent, _, _ in validation.REFERENCES
    },
    **{(t, "finite_unit_norm"): (stretch_first_vector(t), "not unit-norm") for t in validation.VECTOR_TABLES},
    ("incidence_matrices", "ids_line_up"): (reorder_smi_rows, "different order"),
    ("cross_modal_links", "links_consistent"): (link_without_entity, "aligned link(s) without an entity_key"),
    ("sections", "headings_nest"): (misnest_heading, "a page or level below 1"),
    ("entity_catalog", "schema"): (drop_last_column("entity_catalog"), "missing column"),
    ("graph", "well_formed"): (edge_to_missing_node, "edge to a missing node"),
    ("graph", "counts_match_partitions"): (drop_one_edge, "partitions add up to"),
    ("graph", "vectors_match_nodes"): (duplicate_a_chunk_vector, "more than one vector row"),
    ("retrieval_index", "smoke_retrieval"): (point_current_at_missing_version, "cannot open the index"),
}


def test_every_check_has_a_breaker():
    keys = {(s.asset_key.to_user_string(), s.name) for c in checks.CHECKS for s in c.check_specs}
    assert keys == set(BREAKERS)


def test_partition_checks_run_in_one_step_per_asset_step():
    """Each check step reads the tables one asset step wrote; every partition check has its own spec."""
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    for step, tables in checks.CHECKED_BY_STEP.items():
        assert {graph.get(AssetKey(t)).assets_def.node_def.name for t in tables} == {step}
    checked = {s.asset_key.to_user_string() for c in PARTITION_CHECKS for s in c.check_specs}
    assert checked == {t for tables in checks.CHECKED_BY_STEP.values() for t in tables}
    assert len(PARTITION_CHECKS) == len(checks.CHECKED_BY_STEP)
    specs = [s for c in PARTITION_CHECKS for s in c.check_specs]
    assert len(specs) == len({s.key for s in specs}) == 44 and all(s.blocking for s in specs)


def test_every_check_passes_on_the_sample_corpus(built: Built):
    ran = {(e.asset_key.to_user_string(), e.check_name, e.partition) for e in built.evaluations}
    failed = [(e.asset_key.to_user_string(), e.check_name, e.partition, e.description) for e in built.evaluations
              if not e.passed]  # fmt: skip
    assert not failed
    for asset, name in BREAKERS:
        partitions = [None] if asset in ("entity_catalog", "graph", "retrieval_index") else built.keys
        for p in partitions:
            assert (asset, name, p) in ran, (asset, name, p)


def _spec_def(asset: str, name: str):
    key = AssetCheckKey(AssetKey(asset), name)
    return next(c for c in checks.CHECKS if key in {s.key for s in c.check_specs}), key


@pytest.mark.parametrize("asset,name", sorted(BREAKERS), ids=lambda v: v)
def test_check_fails_on_broken_input(built: Built, tmp_path: Path, asset: str, name: str):
    breaker, expected = BREAKERS[(asset, name)]
    data = copy_data(built, tmp_path)
    check_def, key = _spec_def(asset, name)
    partition = PARTITION if check_def in PARTITION_CHECKS else None
    breaker(data)  # the same check passed on this data before (test_every_check_passes_on_the_sample_corpus)
    result = run_checks(data, built.corpus, built.keys, [key], partition)
    [evaluation] = result.get_asset_check_evaluations()
    assert not evaluation.passed
    assert expected in (evaluation.description or ""), evaluation.description


# -- blocking in the same run, and refusing to publish ------------------------------------------------


def test_blocking_check_stops_downstream_assets_in_the_run(built: Built, tmp_path: Path, monkeypatch):
    real = text.chunk_documents

    def orphan_chunks(*args, **kwargs):  # chunks that point at a document that does not exist
        out = real(*args, **kwargs)
        return out.with_columns(pl.lit("no-such-doc").alias("doc_id"))

    monkeypatch.setattr(text, "chunk_documents", orphan_chunks)
    data = copy_data(built, tmp_path)
    result = materialize(
        PARTITIONED + PARTITION_CHECKS,
        partition_key=PARTITION,
        instance=_instance(built.keys),
        resources=default_resources(built.corpus, data),
        raise_on_error=False,
    )
    assert not result.success
    failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
    assert [(e.asset_key.to_user_string(), e.check_name) for e in failed] == [("chunks", "doc_id_in_documents")]
    assert "no-such-doc" in failed[0].description
    done = {m.asset_key.to_user_string() for m in result.get_asset_materialization_events() if m.asset_key}
    assert "chunks" in done and "sentences" not in done and "chunk_vectors" not in done


def publish(data: Path, corpus: Path, instance: DagsterInstance):
    return materialize(
        PARTITIONED + GLOBAL + GLOBAL_CHECKS,
        instance=instance,
        resources=default_resources(corpus, data),
        selection=AssetSelection.assets(*GLOBAL),
        raise_on_error=False,
    )


def _publish_failure(result) -> str:
    [step] = [e for e in result.all_events if e.is_step_failure and e.step_key == "retrieval_index"]
    return step.event_specific_data.error.message


def test_publish_refuses_inputs_that_fail_validation(built: Built, tmp_path: Path):
    data = copy_data(built, tmp_path)
    current = (data / "index" / "CURRENT").read_text()
    stretch_first_vector("chunk_vectors")(data)
    result = publish(data, built.corpus, _instance(built.keys))
    assert not result.success
    message = _publish_failure(result)
    assert "refusing to publish" in message and "vectors [space]" in message and "not unit-norm" in message
    assert (data / "index" / "CURRENT").read_text() == current


def test_publish_refuses_while_a_blocking_partition_check_last_failed(built: Built, tmp_path: Path):
    """The table is repaired by hand but the check was not re-run: the instance still says it failed."""
    data = copy_data(built, tmp_path)
    instance = _instance(built.keys)
    path = table_path(data, "sentences")
    good = path.read_bytes()
    dangling_reference("sentences", "chunk_id")(data)
    key = AssetCheckKey(AssetKey("sentences"), "chunk_id_in_chunks")
    assert not run_checks(data, built.corpus, built.keys, [key], PARTITION, instance).success
    assert checks.failed_blocking_checks(instance, built.keys) == ["sentences:chunk_id_in_chunks [space]"]
    path.write_bytes(good)
    result = publish(data, built.corpus, instance)
    assert not result.success
    assert "sentences:chunk_id_in_chunks [space]: latest evaluation failed" in _publish_failure(result)
    # re-running the check on the repaired table clears it
    assert run_checks(data, built.corpus, built.keys, [key], PARTITION, instance).success
    assert checks.failed_blocking_checks(instance, built.keys) == []


def test_materialization_metadata_has_plots_owners_and_kinds(built: Built):
    def meta(asset: str) -> dict:
        return built.instance.get_latest_materialization_event(AssetKey(asset)).asset_materialization.metadata

    assert meta("graph")["degree_distribution"].value.startswith("![degree distribution](data:image/png;base64,")
    assert "data:image/png;base64," in meta("entity_catalog")["label_distribution"].value
    assert "data:image/png;base64," in meta("entities")["label_distribution"].value
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.owners == ["team:mmkg"] and node.kinds and node.description, key
    assert {graph.get(k).group_name for k in graph.get_all_asset_keys()} == {
        "ingest", "text", "vision", "embeddings", "graph", "index", "generation"
    }  # fmt: skip
    assert len(list(graph.asset_check_keys)) == len(BREAKERS)


# -- the pure functions, on the real sample tables ---------------------------------------------------


@pytest.fixture(scope="module")
def space(built: Built) -> dict[str, pl.DataFrame]:
    names = [*validation.PRIMARY_KEYS, *validation.VECTOR_TABLES]
    return {n: pl.read_parquet(p) for n in names if (p := table_path(built.data, n)).exists()}


def test_partition_tables_pass(space):
    results = validation.check_partition_tables(space, PARTITION)
    assert results and all(results), [r.description for r in results if not r]


def test_schema_names_each_problem(space):
    chunks = space["chunks"]
    r = validation.check_schema(chunks.with_columns(pl.col("n_tokens").cast(pl.Int64)), "chunks", PARTITION)
    assert not r and "n_tokens" in r.description and "Int64" in r.description
    r = validation.check_schema(pl.concat([chunks, chunks.head(1)]), "chunks", PARTITION)
    assert not r and "1 duplicated key(s) ['chunk_id']" in r.description
    r = validation.check_schema(chunks.with_columns(pl.lit(None, pl.String).alias("chunk_id")), "chunks")
    assert not r and "null key" in r.description
    r = validation.check_schema(chunks, "chunks", "nature_and_objects")
    assert not r and "'space'" in r.description
    r = validation.check_schema(chunks.with_columns(pl.lit(1).alias("extra")), "chunks")
    assert not r and "undeclared column(s) ['extra']" in r.description


def test_vectors_catch_nan_and_missing_rows(space):
    v = space["sentence_vectors"]
    vecs = v["vector"].to_numpy().copy()
    vecs[1, 3] = np.nan
    broken = v.with_columns(pl.Series("vector", vecs, dtype=v.schema["vector"]))
    r = validation.check_vectors(broken, "sentence_vectors", space["sentences"]["sentence_id"])
    assert not r and "NaN/inf" in r.description and v["sentence_id"][1] in r.description
    r = validation.check_vectors(v.slice(1), "sentence_vectors", space["sentences"]["sentence_id"])
    assert not r and "1 sentences row(s) have no vector" in r.description
    assert validation.check_vectors(v, "sentence_vectors", space["sentences"]["sentence_id"])


def test_graph_checks_on_the_real_graph(built: Built):
    g = Graph.load(built.data / "graph" / "graph")
    tables = {n: pl.read_parquet(built.data / "tables" / n / "*.parquet")
              for n in ("chunks", "entity_mentions", "relations", "images", "objects")}  # fmt: skip
    r = validation.check_graph_counts(g, *tables.values())
    assert r, r.description
    assert r.metadata["expected_chunk_nodes"] == tables["chunks"].height
    # a partition's chunks missing from the graph is named by partition
    fewer = tables["chunks"].filter(pl.col("partition") != "space")
    r = validation.check_graph_counts(g, fewer, *list(tables.values())[1:])
    assert not r and "chunk_nodes" in r.description and "partition space" in r.description
    assert validation.check_graph_structure(g)
    # an asymmetric adjacency (a one-way edge)
    a = g.adjacency.tocsr().copy()
    a.data[0] *= 2
    r = validation.check_graph_structure(Graph(a, g.nodes))
    assert not r and "not symmetric" in r.description


def test_smoke_retrieval_on_the_published_index(built: Built):
    from mmkg.index import Index

    idx = Index.open(built.data / "index")
    r = smoke_retrieval(idx)
    assert r and r.metadata["probes"] == len(built.keys) and r.metadata["found"] == len(built.keys)


def test_a_passage_copied_into_many_partitions_passes_the_smoke_checks(tmp_path: Path):
    """Seven partitions hold the same notice, each partition's longest chunk: the copies tie, any one answers."""
    from indexing import build

    from mmkg.index import Index

    corpus, data = tmp_path / "corpus", tmp_path / "data"
    notice = (
        "# Licence notice\n\nThis material may be copied, shared and adapted for any purpose, provided that the "
        "source is credited and changes are marked. It comes with no warranty of any kind.\n"
    )
    for i in range(7):
        (corpus / f"p{i}").mkdir(parents=True)
        (corpus / f"p{i}" / "NOTICE.md").write_text(notice)
        (corpus / f"p{i}" / "note.md").write_text(f"# Note {i}\n\nA short note, number {i}.\n")
    build(corpus, data, DagsterInstance.ephemeral())  # the publish's own self-check and the blocking checks pass
    idx = Index.open(data / "index")
    assert idx.chunks.filter(pl.col("text").str.contains("Licence notice")).height == 7
    r = smoke_retrieval(idx)
    assert r and r.metadata["probes"] == 7 and r.metadata["found"] == 7, r.description
    assert self_check(idx, probes=7) == []


def test_smoke_probes_changed_partitions_and_a_rotating_few():
    parts = [f"p{i:02d}" for i in range(20)]
    assert validation.smoke_partitions(parts, None, "v1") == parts  # a first publish probes every partition
    one = validation.smoke_partitions(parts, {"p07"}, "v2")
    assert "p07" in one and len(one) == 4 and one == sorted(one)
    assert validation.smoke_partitions(parts, {"p07"}, "v2") == one  # the same version probes the same ones
    # other versions probe other unchanged partitions: over successive publishes every partition comes round
    seen = set().union(*(validation.smoke_partitions(parts, {"p07"}, f"v{i}") for i in range(40)))
    assert seen == set(parts)
    assert validation.smoke_partitions(parts, set(parts), "v3") == parts
    assert validation.smoke_partitions(["a"], set(), "v4") == ["a"]


def test_changed_partitions_compares_with_the_version_before(built: Built, tmp_path: Path):

    from mmkg.index.manifest import Manifest, changed_partitions, current_version

    root = tmp_path / "index"
    shutil.copytree(built.data / "index", root)
    first = current_version(root)
    assert changed_partitions(root, first) is None  # nothing published before it
    later = "v29991231T000000000000-00000000"  # sorts after any real version
    shutil.copytree(root / "versions" / first, root / "versions" / later)
    manifest = Manifest.read(root / "versions" / later)
    edited = built.keys[0]
    partitions = dict(manifest.partitions) | {edited: "another fingerprint", "added": "new"}
    manifest.model_copy(update={"version": later, "partitions": partitions}).write(root / "versions" / later)
    assert changed_partitions(root, later) == {edited, "added"}
    assert changed_partitions(root, first) is None


def test_validate_publish_inputs_names_check_and_partition(space):
    broken = dict(space)
    broken["sentences"] = space["sentences"].with_columns(pl.lit("gone").alias("chunk_id"))
    failures = validate_publish_inputs(broken)
    assert [f.label() for f in failures] == ["references [space]"]
    with pytest.raises(validation.ValidationError, match=r"references \[space\]: sentences.chunk_id"):
        validation.raise_for_failures(failures, "publish")


def test_the_publish_probe_fails_a_version_whose_vectors_and_ids_disagree(built: Built):
    """The publish's own-vector probe: each probed chunk's stored vector finds it first in the dense channel, and
    MG2-RAG answers with chunks the version holds. A search matrix whose rows sit one off the ids the table
    stores them under (what a mis-joined publish leaves) fails it, naming the chunk."""
    import numpy as np

    from mmkg.index import Index
    from mmkg.retrieval.smoke import own_vector_probes

    idx = Index.open(built.data / "index", encoder=False)
    assert own_vector_probes(idx, probes=5) == []
    stored = {cid: idx.stored_vector("chunks", cid).copy() for cid in idx.positions["chunks"]}
    idx.stored_vector = lambda name, cid: stored[cid]  # the table as written ...
    idx.vectors["chunks"] = np.roll(idx.vectors["chunks"], 1, axis=0)  # ... and a search matrix one row off
    problems = own_vector_probes(idx, probes=5)
    assert problems and all("top 5 of the dense channel for its own vector" in p for p in problems)
