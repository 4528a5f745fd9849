from __future__ import annotations

from dagster import AssetSelection, define_asset_job

PARTITIONED = AssetSelection.groups("ingest", "text", "vision", "graph") - AssetSelection.assets("entity_catalog")

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
