"""The code location `dagster dev` loads (see workspace.yaml)."""

from __future__ import annotations

from dagster import Definitions, load_assets_from_modules

from assets import graph_inputs, ingest, text, vision
from pipelines.jobs import catalog_job, partition_job
from pipelines.resources import default_resources
from pipelines.sensors import corpus_partition_sensor

defs = Definitions(
    assets=load_assets_from_modules([ingest, text, vision, graph_inputs]),
    jobs=[partition_job, catalog_job],
    sensors=[corpus_partition_sensor],
    resources=default_resources(),
)
