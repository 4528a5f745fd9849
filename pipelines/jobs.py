from __future__ import annotations

from dagster import AssetSelection, define_asset_job

GLOBAL = AssetSelection.assets("entity_catalog", "graph", "retrieval_index")
PARTITIONED = AssetSelection.groups("ingest", "text", "vision", "graph", "embeddings") - GLOBAL

partition_job = define_asset_job(
    "index_partition",
    selection=PARTITIONED,
    description="Index one corpus partition: ingest, parse (sentences, mentions, relations, entities), "
    "ground entities in images (OCR text, objects), build multimodal nodes and incidence matrices.",
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
    "(a no-op version bump is skipped when nothing changed).",
)
