"""Asset checks on every stage: schemas, referential integrity, embeddings, graph counts, a smoke retrieval.

Thin wrappers around ``mmkg.validation``. Partitioned assets' checks run per partition in the same
run as the partition (``index_partition``), in one check step per asset step (``CHECKED_BY_STEP``):
each check keeps its own name and spec in the UI; the blocking ones stop downstream assets of that
run when they fail. ``retrieval_index`` asks the instance for the latest evaluations of these blocking checks
(``failed_blocking_checks``) and refuses to publish while one of them fails.
"""

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetIn,
    DagsterInstance,
    PreviewWarning,
    asset_check,
    multi_asset_check,
)

from assets.partitions import corpus_partitions
from mmkg import validation
from mmkg.graph import Graph
from mmkg.index.units import ID_COLUMN, SHARED, VECTOR_ASSET, check_vectors_match_nodes
from resources import StorageResource
from resources.encoder import EncoderResource

# partitioned checks are a preview feature of Dagster 1.13; we rely on them knowingly
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=PreviewWarning)

PARTITIONED_TABLES = (
    "transcripts",
    "documents",
    "images",
    "rejected_files",
    "page_text",
    "chunks",
    "sections",
    "parts",
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


def _result(r: validation.CheckResult, key: AssetCheckKey | None = None) -> AssetCheckResult:
    """``r`` as Dagster's result; ``key`` names the check when one step evaluates several."""
    named = {"asset_key": key.asset_key, "check_name": key.name} if key else {}
    return AssetCheckResult(
        passed=r.passed,
        severity=AssetCheckSeverity.ERROR,
        description=r.description,
        metadata=dict(r.metadata),
        **named,
    )


#: the partitioned tables each asset step writes; their checks run together in one check step after it
CHECKED_BY_STEP: dict[str, tuple[str, ...]] = {
    "transcripts": ("transcripts",),
    "ingest": ("documents", "images", "rejected_files"),
    "chunks": ("page_text", "chunks", "sections", "parts"),
    "parse": ("sentences", "entity_mentions", "relations"),
    "entities": ("entities", "document_entities"),
    "ground_images": ("image_text", "objects", "grounding_failures"),
    "build_nodes": ("multimodal_nodes", "incidence_matrices"),
    "cross_modal_links": ("cross_modal_links",),
    "embed": tuple(validation.VECTOR_TABLES),
}

Evaluate = Callable[[dict[str, Any], str], validation.CheckResult]


def _table_checks(table: str) -> list[tuple[AssetCheckSpec, tuple[str, ...], Evaluate]]:
    """Every partition check on ``table``: its spec, the tables it reads and how it is evaluated."""

    def spec(name: str, description: str, *reads: str) -> AssetCheckSpec:
        deps = [AssetDep(r) for r in reads if r != table]
        return AssetCheckSpec(name, asset=table, blocking=True, partitions_def=corpus_partitions,
                              description=description, additional_deps=deps)  # fmt: skip

    out: list[tuple[AssetCheckSpec, tuple[str, ...], Evaluate]] = []
    if table in PARTITIONED_TABLES:
        out.append((
            spec("schema", f"{table} has exactly its declared columns and dtypes (mmkg/schemas.py), a unique "
                 "non-null key and only rows of its own partition."),
            (table,),
            lambda f, part: validation.check_schema(f[table], table, part),
        ))  # fmt: skip
    for child, column, parent, parent_column, nullable in validation.REFERENCES:
        if child == table:
            out.append((
                spec(f"{column}_in_{parent}", f"Every {child}.{column} names a row of {parent} in the same partition"
                     + (" (null allowed)." if nullable else "."), parent),
                (table, parent),
                lambda f, part, c=column, p=parent, pc=parent_column, n=nullable: validation.check_references(
                    f[table], f[p], table, c, p, pc, n),
            ))  # fmt: skip
    if table in validation.VECTOR_TABLES:
        id_col, source = validation.VECTOR_TABLES[table]
        out.append((
            spec("finite_unit_norm", f"One finite, ℓ2-normalized vector per {source} row ({id_col}), all of one "
                 "dimension.", source),
            (table, source),
            lambda f, part: validation.check_vectors(f[table], table, f[source][id_col].unique().to_list()),
        ))  # fmt: skip
    if table == "incidence_matrices":
        out.append((
            spec("ids_line_up", "M_SMI rows are the partition's sentences, M_OMI rows its objects (same order), the "
                 "columns of both its multimodal_nodes; every entry is 1.", "sentences", "objects",
                 "multimodal_nodes"),
            (table, "sentences", "objects", "multimodal_nodes"),
            _incidence_ids_line_up,
        ))  # fmt: skip
    if table == "sections":
        out.append((
            spec("headings_nest", "Each heading's parent is a heading of its document at a lower level, ordinals "
                 "run in reading order, pages and levels are 1-based, and the chunks it lists are its document's.",
                 "chunks"),
            (table, "chunks"),
            lambda f, part: validation.check_sections(f[table], f["chunks"], part),
        ))  # fmt: skip
    if table == "cross_modal_links":
        out.append((
            spec("links_consistent", "Aligned links name a text entity, unaligned and new ones none; scores are "
                 "cosines; known methods."),
            (table,),
            lambda f, part: validation.check_cross_modal_links(f[table], part),
        ))  # fmt: skip
    return out


def _incidence_ids_line_up(f: dict[str, Any], partition: str) -> validation.CheckResult:
    matrices, cols = f["incidence_matrices"], f["multimodal_nodes"]["entity_key"].to_list()
    results = [
        validation.check_incidence(matrices["m_smi"], "M_SMI", "sentences", f["sentences"]["sentence_id"].to_list(),
                                   cols, partition),
        validation.check_incidence(matrices["m_omi"], "M_OMI", "objects", f["objects"]["object_id"].to_list(), cols,
                                   partition),
    ]  # fmt: skip
    bad = [r for r in results if not r.passed]
    return validation.CheckResult(
        "ids_line_up",
        not bad,
        "; ".join(r.description for r in (bad or results)),
        {"m_smi_nnz": results[0].metadata.get("nnz", 0), "m_omi_nnz": results[1].metadata.get("nnz", 0)},
        partition,
    )


def _read(context: AssetCheckExecutionContext, table: str) -> Any:
    """The run's partition of ``table``, from the IO manager that wrote it."""
    if table == "incidence_matrices":
        return context.resources.incidence_io.read(table, context.partition_key)
    return context.resources.parquet_io.read(table, context.partition_key)


def _step_checks(step: str, tables: tuple[str, ...]) -> AssetChecksDefinition:
    """One check step for every partition check on the tables ``step`` writes.

    Each check keeps its own spec (name, blocking, description: what the UI lists under the asset),
    but the step reads each table once and writes one step's events (a cached 2Wiki partition's run:
    3.8 s instead of 4.4–5.0 s, benchmarks/RESULTS.md). A subset (one asset or check picked in the UI
    or the CLI, or a test) evaluates only what was selected and reads only what that needs: tables
    are read here, through the IO managers, rather than declared as inputs, which Dagster would load
    even for checks left out (``--select documents`` then failed on the ``images`` it never wrote).
    The specs' assets and ``additional_deps`` order the step after what it reads.
    """
    checks = [c for t in tables for c in _table_checks(t)]
    by_key = {s.key: (needed, evaluate) for s, needed, evaluate in checks}

    @multi_asset_check(
        name=f"{step}_checks",
        specs=[s for s, _, _ in checks],
        can_subset=True,
        required_resource_keys={"parquet_io", "incidence_io"},
        description=f"The partition checks of the tables {step} writes: " + ", ".join(tables) + ".",
    )
    def _check(context: AssetCheckExecutionContext):
        selected = sorted(context.selected_asset_check_keys, key=lambda k: k.to_user_string())
        reads = sorted({r for key in selected for r in by_key[key][0]})
        frames = {r: _read(context, r) for r in reads}
        for key in selected:
            _, evaluate = by_key[key]
            yield _result(evaluate(frames, context.partition_key), key)

    return _check


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
    return _result(check_vectors_match_nodes(tables, graph))


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
    from mmkg.retrieval.smoke import smoke_retrieval

    root = storage.path / "index"
    try:
        index = Index.open(root, encoder=encoder.get(root))
    except Exception as exc:  # an index that cannot be opened fails the check, with the reason
        return AssetCheckResult(passed=False, description=f"cannot open the index at {root}: {exc}")
    probed = validation.smoke_partitions(index.manifest.partitions, changed_partitions(root, index.version),
                                         index.version)  # fmt: skip
    return _result(smoke_retrieval(index, partitions=probed))


CHECKS: list[AssetChecksDefinition] = [
    *(_step_checks(step, tables) for step, tables in CHECKED_BY_STEP.items()),
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
