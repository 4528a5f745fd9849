from __future__ import annotations

from dagster import AssetSelection, define_asset_job

PARTITIONED = AssetSelection.groups("ingest", "text") - AssetSelection.assets("entity_catalog")

partition_job = define_asset_job(
    "index_partition",
    selection=PARTITIONED,
    description="Ingest and parse one corpus partition: documents, images, chunks, sentences, mentions,"
    " relations, entities.",
)

catalog_job = define_asset_job(
    "build_catalog",
    selection=AssetSelection.assets("entity_catalog"),
    description="Merge every partition's entity mentions into the global entity catalog.",
)
