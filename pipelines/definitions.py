"""The code location `dagster dev` loads (see workspace.yaml)."""

from __future__ import annotations

from dagster import Definitions, colored_console_logger, load_asset_checks_from_modules, load_assets_from_modules

from assets import ASSET_MODULES, checks
from pipelines.executors import executor_from_env
from pipelines.jobs import answer_job, catalog_job, partition_job, publish_job, reindex_job
from pipelines.progress import LOGGER_KEY, progress_logger
from pipelines.resources import default_resources
from pipelines.schedules import reindex_schedule
from pipelines.sensors import corpus_partition_sensor, index_publish_sensor

defs = Definitions(
    assets=load_assets_from_modules(ASSET_MODULES),
    asset_checks=load_asset_checks_from_modules([checks]),
    jobs=[partition_job, catalog_job, publish_job, reindex_job, answer_job],
    sensors=[corpus_partition_sensor, index_publish_sensor],
    schedules=[reindex_schedule],
    resources=default_resources(),
    executor=executor_from_env(),  # MMKG_EXECUTOR: multiprocess, dask, celery, k8s, ... (unset: in_process)
    # console: Dagster's default; mmkg_progress: the CLI's progress display, only when a run's config names it
    loggers={"console": colored_console_logger, LOGGER_KEY: progress_logger},
)
