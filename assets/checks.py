"""Asset checks on every stage: schemas, referential integrity, embeddings, graph counts, a smoke retrieval.

Thin wrappers around ``mmkg.validation``. Partitioned assets' checks run per partition in the same
run as the partition (``index_partition``); the blocking ones stop downstream assets of that run when
they fail. ``retrieval_index`` asks the instance for the latest evaluations of these blocking checks
(``failed_blocking_checks``) and refuses to publish while one of them fails.
"""

import warnings
from collections.abc import Sequence

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetIn,
    DagsterInstance,
    PreviewWarning,
    asset_check,
)

from assets.partitions import corpus_partitions
from mmkg import validation
from mmkg.graph import Graph
from mmkg.incidence import Incidence
from mmkg.index.units import ID_COLUMN, SHARED, VECTOR_ASSET
from resources import StorageResource
from resources.encoder import EncoderResource

# partitioned checks are a preview feature of Dagster 1.13; we rely on them knowingly
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=PreviewWarning)

PARTITIONED_TABLES = (
    "documents",
    "images",
    "rejected_files",
    "page_text",
    "chunks",
    "sentences",
    "entity_mentions",
    "relations",
    "entities",
    "document_entities",
    "image_text",
    "objects",
    "grounding_failures",
    "multimodal_nodes",
    "cross_modal_links",
)


#: the unit tables the index's vectors are checked against
UNIT_SOURCES = ("sentences", "images", "objects", "document_entities", "relations")


def _result(r: validation.CheckResult) -> AssetCheckResult:
    return AssetCheckResult(
        passed=r.passed, severity=AssetCheckSeverity.ERROR, description=r.description, metadata=dict(r.metadata)
    )


def _schema_check(table: str) -> AssetChecksDefinition:
    @asset_check(
        asset=table,
        name="schema",
        blocking=True,
        partitions_def=corpus_partitions,
        description=f"{table} has exactly its declared columns and dtypes (mmkg/schemas.py), a unique non-null "
        "key and only rows of its own partition.",
    )
    def _check(context: AssetCheckExecutionContext, df: pl.DataFrame) -> AssetCheckResult:
        return _result(validation.check_schema(df, table, context.partition_key))

    return _check


def _reference_check(child: str, column: str, parent: str, parent_column: str, nullable: bool) -> AssetChecksDefinition:
    @asset_check(
        asset=child,
        name=f"{column}_in_{parent}",
        blocking=True,
        partitions_def=corpus_partitions,
        additional_ins={"parent_df": AssetIn(parent)},
        description=f"Every {child}.{column} names a row of {parent} in the same partition"
        + (" (null allowed)." if nullable else "."),
    )
    def _check(context: AssetCheckExecutionContext, df: pl.DataFrame, parent_df: pl.DataFrame) -> AssetCheckResult:
        r = validation.check_references(df, parent_df, child, column, parent, parent_column, nullable)
        return _result(r)

    return _check


def _vector_check(table: str) -> AssetChecksDefinition:
    id_col, source = validation.VECTOR_TABLES[table]

    @asset_check(
        asset=table,
        name="finite_unit_norm",
        blocking=True,
        partitions_def=corpus_partitions,
        additional_ins={"source_df": AssetIn(source)},
        description=f"One finite, ℓ2-normalized vector per {source} row ({id_col}), all of one dimension.",
    )
    def _check(context: AssetCheckExecutionContext, df: pl.DataFrame, source_df: pl.DataFrame) -> AssetCheckResult:
        return _result(validation.check_vectors(df, table, source_df[id_col].unique().to_list()))

    return _check


@asset_check(
    asset="incidence_matrices",
    name="ids_line_up",
    blocking=True,
    partitions_def=corpus_partitions,
    additional_ins={n: AssetIn(n) for n in ("sentences", "objects", "multimodal_nodes")},
    description="M_SMI rows are the partition's sentences, M_OMI rows its objects (same order), the columns of "
    "both its multimodal_nodes; every entry is 1.",
)
def incidence_ids_line_up(
    context: AssetCheckExecutionContext,
    matrices: dict[str, Incidence],
    sentences: pl.DataFrame,
    objects: pl.DataFrame,
    multimodal_nodes: pl.DataFrame,
) -> AssetCheckResult:
    cols = multimodal_nodes["entity_key"].to_list()
    results = [
        validation.check_incidence(matrices["m_smi"], "M_SMI", "sentences", sentences["sentence_id"].to_list(), cols,
                                   context.partition_key),
        validation.check_incidence(matrices["m_omi"], "M_OMI", "objects", objects["object_id"].to_list(), cols,
                                   context.partition_key),
    ]  # fmt: skip
    bad = [r for r in results if not r.passed]
    return AssetCheckResult(
        passed=not bad,
        description="; ".join(r.description for r in (bad or results)),
        metadata={"m_smi_nnz": results[0].metadata.get("nnz", 0), "m_omi_nnz": results[1].metadata.get("nnz", 0)},
    )


@asset_check(
    asset="entity_catalog",
    name="schema",
    blocking=True,
    description="entity_catalog has its declared columns and dtypes and one row per canonical entity key.",
)
def entity_catalog_schema(entity_catalog: pl.DataFrame) -> AssetCheckResult:
    return _result(validation.check_schema(entity_catalog, "entity_catalog"))


@asset_check(
    asset="graph",
    name="well_formed",
    blocking=True,
    description="Node table numbered 0..n-1, unique keys per kind, no edge to a missing node, symmetric "
    "adjacency, no self-loop, finite positive weights.",
)
def graph_well_formed(graph: Graph) -> AssetCheckResult:
    return _result(validation.check_graph_structure(graph))


@asset_check(
    asset="graph",
    name="counts_match_partitions",
    blocking=True,
    additional_ins={n: AssetIn(n) for n in ("chunks", "entity_mentions", "relations", "images", "objects")},
    description="Chunk/image/entity node counts and edge counts per kind equal what the partition tables add up "
    "to (computed independently of build_graph); every node key exists in a partition table.",
)
def graph_counts_match_partitions(
    graph: Graph,
    chunks: pl.DataFrame,
    entity_mentions: pl.DataFrame,
    relations: pl.DataFrame,
    images: pl.DataFrame,
    objects: pl.DataFrame,
) -> AssetCheckResult:
    return _result(validation.check_graph_counts(graph, chunks, entity_mentions, relations, images, objects))


@asset_check(
    asset="graph",
    name="vectors_match_nodes",
    blocking=True,
    # ids only where nothing is averaged: the vectors of a 2Wiki build are 0.7 s of this check's reading
    additional_ins={
        n: AssetIn(n, metadata={"columns": [ID_COLUMN[kind], "partition", "doc_id"]} if kind not in SHARED else {})
        for kind, n in VECTOR_ASSET.items()
    }
    | {n: AssetIn(n) for n in UNIT_SOURCES},
    description="One vector per unit in every index table once pictures and objects shown by several documents or "
    "partitions are collapsed to one unit per content id, as the publish does: chunk and image vectors equal the "
    "graph's chunk and image nodes; sentence, object, document-entity and relation vectors their units; names any "
    "duplicated or missing id.",
)
def graph_vectors_match_nodes(
    graph: Graph,
    chunk_vectors: pl.DataFrame,
    sentence_vectors: pl.DataFrame,
    image_vectors: pl.DataFrame,
    object_vectors: pl.DataFrame,
    document_entity_vectors: pl.DataFrame,
    relation_vectors: pl.DataFrame,
    sentences: pl.DataFrame,
    images: pl.DataFrame,
    objects: pl.DataFrame,
    document_entities: pl.DataFrame,
    relations: pl.DataFrame,
) -> AssetCheckResult:
    tables = {
        "chunk_vectors": chunk_vectors, "sentence_vectors": sentence_vectors, "image_vectors": image_vectors,
        "object_vectors": object_vectors, "document_entity_vectors": document_entity_vectors,
        "relation_vectors": relation_vectors, "sentences": sentences, "images": images, "objects": objects,
        "document_entities": document_entities, "relations": relations,
    }  # fmt: skip
    return _result(validation.check_vectors_match_nodes(tables, graph))


@asset_check(
    asset="retrieval_index",
    name="smoke_retrieval",
    description="Opens the published version and queries it with the longest chunk of each partition whose "
    "content changed since the previous version, and of 3 others (a different 3 each version; every partition "
    "on a first publish): each chunk must come back in the top 5 for its own text.",
)
def retrieval_index_smoke(storage: StorageResource, encoder: EncoderResource) -> AssetCheckResult:
    from mmkg.index import Index
    from mmkg.index.manifest import changed_partitions

    root = storage.path / "index"
    try:
        index = Index.open(root, encoder=encoder.get(root))
    except Exception as exc:  # an index that cannot be opened fails the check, with the reason
        return AssetCheckResult(passed=False, description=f"cannot open the index at {root}: {exc}")
    probed = validation.smoke_partitions(index.manifest.partitions, changed_partitions(root, index.version),
                                         index.version)  # fmt: skip
    return _result(validation.smoke_retrieval(index, partitions=probed))


@asset_check(
    asset="cross_modal_links",
    name="links_consistent",
    blocking=True,
    partitions_def=corpus_partitions,
    description="Aligned links name a text entity, unaligned and new ones none; scores are cosines; known methods.",
)
def cross_modal_links_consistent(context: AssetCheckExecutionContext, df: pl.DataFrame) -> AssetCheckResult:
    return _result(validation.check_cross_modal_links(df, context.partition_key))


CHECKS: list[AssetChecksDefinition] = [
    *(_schema_check(t) for t in PARTITIONED_TABLES),
    *(_reference_check(*ref) for ref in validation.REFERENCES),
    *(_vector_check(t) for t in validation.VECTOR_TABLES),
    incidence_ids_line_up,
    cross_modal_links_consistent,
    entity_catalog_schema,
    graph_well_formed,
    graph_counts_match_partitions,
    graph_vectors_match_nodes,
    retrieval_index_smoke,
]

BLOCKING_CHECKS: list[AssetCheckKey] = [spec.key for c in CHECKS for spec in c.check_specs if spec.blocking]


def failed_blocking_checks(
    instance: DagsterInstance, partitions: Sequence[str] | None = None, keys: Sequence[AssetCheckKey] | None = None
) -> list[str]:
    """Blocking checks whose latest evaluation on the current materialization failed, as 'asset:check [partition]'.

    Only partitions in ``partitions`` count (all when None); a failure on an older materialization
    that has since been replaced does not.
    """
    from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

    wanted = None if partitions is None else set(partitions)
    infos = instance.event_log_storage.get_asset_check_partition_info(list(keys or BLOCKING_CHECKS))
    out = []
    for info in infos:
        if info.latest_execution_status != AssetCheckExecutionRecordStatus.FAILED or not info.is_current:
            continue
        if info.partition_key is not None and wanted is not None and info.partition_key not in wanted:
            continue
        name = f"{info.check_key.asset_key.to_user_string()}:{info.check_key.name}"
        out.append(f"{name} [{info.partition_key}]" if info.partition_key else name)
    return sorted(out)
