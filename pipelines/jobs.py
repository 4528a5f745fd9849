from __future__ import annotations

from dagster import AssetSelection, define_asset_job

GLOBAL = AssetSelection.assets("entity_catalog", "graph", "retrieval_index")
PARTITIONED = AssetSelection.groups("ingest", "text", "vision", "graph", "embeddings") - GLOBAL

partition_job = define_asset_job(
    "index_partition",
    selection=PARTITIONED,
    description="Index one corpus partition: ingest, parse (sentences, mentions, relations, entities), "
    "ground entities in images (OCR text, objects), build multimodal nodes and incidence matrices, embed; "
    "each asset's checks run after it, and a failing blocking check stops what depends on it.",
)

catalog_job = define_asset_job(
    "build_catalog",
    selection=AssetSelection.assets("entity_catalog"),
    description="Merge every partition's entity mentions into the global entity catalog.",
)

publish_job = define_asset_job(
    "publish_index",
    selection=GLOBAL,
    description="Rebuild the global entity catalog and graph from every partition and publish a new index version "
    "(a no-op version bump is skipped when nothing changed). Refuses to publish when an input fails validation or a "
    "blocking check on a partition last failed; a smoke retrieval checks the published version.",
)

reindex_job = define_asset_job(
    "reindex",
    selection=PARTITIONED | GLOBAL,
    description="Target of the re-index schedule: each run is either one stale partition's assets or the global "
    "catalog, graph and index (the schedule picks the subset).",
)

answer_job = define_asset_job(
    "answer_questions",
    selection=AssetSelection.assets("answers"),
    description="Answer a file of questions (config: questions, strategy, task, k, budget) from the current index "
    "version with the generator resource's backend; answers and citations go to tables/answers.parquet.",
)
