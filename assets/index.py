"""Graph and index groups: the global graph from every partition, then the published index."""

import time

import numpy as np
import polars as pl
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    Failure,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)

from assets._metadata import OWNERS, degree_plot, preview, rounded
from assets.checks import failed_blocking_checks
from assets.partitions import corpus_partitions
from mmkg.graph import Graph, build_graph
from mmkg.index.gc import collect
from mmkg.index.manifest import EncoderSpec
from mmkg.index.publish import payload_tables, publish_index
from mmkg.index.units import validate_publish_inputs
from mmkg.partition_files import remove_unregistered
from mmkg.partitioned import Partitioned, PartitionedParquet
from mmkg.retrieval.smoke import own_vector_probes
from resources import StorageResource
from resources.encoder import EncoderResource


@asset(
    ins={n: AssetIn() for n in ("chunks", "entity_mentions", "relations", "images", "objects")},
    group_name="graph",
    io_manager_key="graph_io",
    owners=OWNERS,
    kinds={"scipy", "polars"},
    description="The multi-granularity multimodal graph over all partitions: chunk, image and entity nodes; "
    "contextual, semantic and grounding (σ-weighted) edges; symmetric CSR.",
)
def graph(
    context: AssetExecutionContext,
    chunks: pl.DataFrame,
    entity_mentions: pl.DataFrame,
    relations: pl.DataFrame,
    images: pl.DataFrame,
    objects: pl.DataFrame,
):
    g = build_graph(chunks, entity_mentions, relations, images, objects)
    degree = np.diff(g.adjacency.indptr)
    hubs = g.nodes.with_columns(pl.Series("degree", degree)).filter(pl.col("kind") == "entity")
    hubs = hubs.sort("degree", descending=True).head(10)
    return Output(
        g,
        metadata={
            **{k: int(v) for k, v in g.counts().items()},
            "isolated_nodes": int((degree == 0).sum()),
            "mean_degree": MetadataValue.float(rounded(float(degree.mean())) if len(degree) else 0.0),
            "top_entities_by_degree": preview(hubs, ["key", "degree"], n=10),
            "degree_distribution": degree_plot(degree, g.nodes["kind"].to_numpy()),
        },
    )


#: vectors reach the publish as their partitions' files, read a batch at a time (``mmkg.partitioned``)
ON_DISK = {"partitioned": True}


@asset(
    ins={
        "graph": AssetIn(),
        "chunk_vectors": AssetIn(metadata=ON_DISK),
        "sentence_vectors": AssetIn(metadata=ON_DISK),
        "image_vectors": AssetIn(metadata=ON_DISK),
        "object_vectors": AssetIn(metadata=ON_DISK),
        "documents": AssetIn(),
        "chunks": AssetIn(),
        "sentences": AssetIn(),
        "images": AssetIn(),
        "objects": AssetIn(),
        "entity_mentions": AssetIn(),
        "document_entities": AssetIn(),
        "relations": AssetIn(),
        "document_entity_vectors": AssetIn(metadata=ON_DISK),
        "relation_vectors": AssetIn(metadata=ON_DISK),
        "cross_modal_links": AssetIn(),
    },
    group_name="index",
    owners=OWNERS,
    kinds={"lancedb", "parquet"},
    description="Publishes a versioned retrieval index (LanceDB vectors, graph, incidence matrices, payload, "
    "manifest written last) under <data_root>/index; readers pin a version with mmkg.Index.open. Refuses to publish "
    "when its inputs fail validation or a blocking check on an upstream partition last failed.",
)
def retrieval_index(
    context: AssetExecutionContext,
    encoder: EncoderResource,
    storage: StorageResource,
    graph: Graph,
    chunk_vectors: PartitionedParquet,
    sentence_vectors: PartitionedParquet,
    image_vectors: PartitionedParquet,
    object_vectors: PartitionedParquet,
    documents: pl.DataFrame,
    chunks: pl.DataFrame,
    sentences: pl.DataFrame,
    images: pl.DataFrame,
    objects: pl.DataFrame,
    entity_mentions: pl.DataFrame,
    document_entities: pl.DataFrame,
    relations: pl.DataFrame,
    document_entity_vectors: PartitionedParquet,
    relation_vectors: PartitionedParquet,
    cross_modal_links: pl.DataFrame,
) -> MaterializeResult:
    info = encoder.get(storage.path / "index").info
    _refuse_broken_inputs(
        context,
        graph,
        {
            "documents": documents, "chunks": chunks, "sentences": sentences, "images": images, "objects": objects,
            "entity_mentions": entity_mentions, "chunk_vectors": chunk_vectors, "sentence_vectors": sentence_vectors,
            "image_vectors": image_vectors, "object_vectors": object_vectors, "document_entities": document_entities,
            "relations": relations, "document_entity_vectors": document_entity_vectors,
            "relation_vectors": relation_vectors, "cross_modal_links": cross_modal_links,
        },
        info.id(),
    )  # fmt: skip
    spec = EncoderSpec.from_info(info)
    payload = payload_tables(
        documents, chunks, sentences, images, objects, document_entities, relations, cross_modal_links
    )
    vectors = {
        "chunks": chunk_vectors,
        "sentences": sentence_vectors,
        "images": image_vectors,
        "objects": object_vectors,
        "document_entities": document_entity_vectors,
        "relations": relation_vectors,
    }
    result = publish_index(storage.path / "index", spec, graph, vectors, payload, entity_mentions, log=context.log.info,
                           probe=own_vector_probes)  # fmt: skip
    if result.reused:
        context.log.info(f"nothing changed since {result.version}: kept it")
    else:
        context.log.info(f"published {result.version} (changed: {result.changed}, removed: {result.removed})")
    registered = context.instance.get_dynamic_partitions(corpus_partitions.name)
    dropped = remove_unregistered(storage.path, registered) if registered else {}
    if dropped:  # the files of partitions whose folders left the corpus: the SQL views show them no more
        context.log.info(f"removed the files of partitions no longer in the corpus: {', '.join(sorted(dropped))}")
    retention: dict = {}
    if storage.keep_versions and not result.reused:
        gc = collect(storage.path / "index", keep=storage.keep_versions, wait=True)
        if gc.removed:
            context.log.info(f"retention (keep {storage.keep_versions}): removed {', '.join(gc.removed)}")
        retention = {"versions_removed": len(gc.removed), "lance_files_pruned": gc.lance_files_removed,
                     "bytes_freed": gc.bytes_freed}  # fmt: skip
    return MaterializeResult(
        metadata={
            "version": result.version,
            # the asset page's "Row count": the published index's chunks, every partition (not the last partition's)
            "dagster/row_count": MetadataValue.int(int(result.manifest.counts.get("chunks", 0))),
            "row_count_of": "chunks in the published index, all partitions",
            "reused_previous": result.reused,
            "changed_partitions": MetadataValue.json(result.changed),
            "removed_partitions": MetadataValue.json(result.removed),
            "encoder": spec.id,
            **{k: int(v) for k, v in result.manifest.counts.items()},
            "path": MetadataValue.path(str(storage.path / "index")),
            "partition_files_removed": MetadataValue.json(sorted(dropped)),
            **retention,
        }
    )


def recorded_encoders(instance: DagsterInstance, partitions: list[str]) -> dict[str, str]:
    """The encoder id each partition's latest ``chunk_vectors`` materialization recorded (``embed``'s metadata)."""
    key = AssetKey("chunk_vectors")
    ids = instance.get_latest_storage_id_by_partition(key, DagsterEventType.ASSET_MATERIALIZATION, set(partitions))
    if not ids:
        return {}
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, storage_ids=list(ids.values())), limit=len(ids)
    ).records
    return {
        r.asset_materialization.partition: str(r.asset_materialization.metadata["encoder"].value)
        for r in records
        if r.asset_materialization is not None
        and r.asset_materialization.partition
        and "encoder" in r.asset_materialization.metadata
    }


def _refuse_broken_inputs(
    context: AssetExecutionContext, graph: Graph, tables: dict[str, pl.DataFrame | Partitioned], encoder_id: str
) -> None:
    """Never publish a broken index: re-validate the inputs, honour failed blocking checks upstream, and
    refuse vectors of partitions embedded by another encoder than the one this publish records."""
    t0 = time.perf_counter()
    failures = [f"{f.label()}: {f.description}" for f in validate_publish_inputs(tables, graph)]
    partitions = context.instance.get_dynamic_partitions(corpus_partitions.name)
    failures += [f"{c}: latest evaluation failed" for c in failed_blocking_checks(context.instance, partitions)]
    other = {p: e for p, e in recorded_encoders(context.instance, partitions).items() if e != encoder_id}
    if other:
        shown = ", ".join(f"{p} ({e})" for p, e in sorted(other.items())[:5])
        failures.append(
            f"vectors of {len(other)} partition(s) were made by another encoder than this publish's {encoder_id}: "
            f"{shown}; re-run those partitions with the same encoder (`mmkg index build --force`), or set the "
            "encoder resource (MMKG_TEXT_RUNTIME) back to the one they were made with"
        )
    context.log.info(f"validated {len(partitions)} partitions' inputs in {time.perf_counter() - t0:.2f}s")
    if failures:
        raise Failure(
            description=f"refusing to publish the index: {len(failures)} check(s) failed\n- " + "\n- ".join(failures),
            metadata={"failed_checks": MetadataValue.md("\n".join(f"- {f}" for f in failures))},
        )
