"""The incremental re-index schedule, and a small in-process driver for sensors and schedules.

``reindex_schedule`` (cron ``MMKG_REINDEX_CRON``, daily at 03:00 by default) brings the index up to
date with the corpus folder: folders without a dynamic partition are registered, partitions whose
folder is gone are deleted, and each partition whose recorded fingerprint differs from its folder's
(or whose last run did not finish) gets one run of its assets. When no partition is stale, one run
of the global assets publishes the index if it is behind. Nothing stale and nothing to publish
means no run at all, so a second evaluation right after a refresh does no model work.

``LocalDaemon`` evaluates the same sensors and schedule and executes what they request in this
process, in order: what the Dagster daemon does, for scripts, tests and benchmarks without one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterEventType,
    DagsterInstance,
    DefaultScheduleStatus,
    Definitions,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
    schedule,
)

from assets.partitions import corpus_partitions
from pipelines.jobs import reindex_job
from pipelines.sensors import (
    AUTOMATION,
    active_runs,
    asset_keys,
    corpus_partition_sensor,
    index_publish_sensor,
    publish_check,
    stale_partitions,
)
from pipelines.tags import FINGERPRINT_TAG, REASON_TAG, TRIGGER_TAG
from resources import CorpusResource, StorageResource

REINDEX_CRON = os.environ.get("MMKG_REINDEX_CRON", "0 3 * * *")
REINDEX_TIMEZONE = os.environ.get("MMKG_REINDEX_TIMEZONE", "UTC")


@schedule(
    job=reindex_job,
    cron_schedule=REINDEX_CRON,
    execution_timezone=REINDEX_TIMEZONE,
    default_status=DefaultScheduleStatus.RUNNING if AUTOMATION else DefaultScheduleStatus.STOPPED,
    description="Incremental re-index: registers new folders, deletes removed ones, runs only the partitions whose "
    "files changed since they were indexed, and publishes when the index is behind (MMKG_REINDEX_CRON).",
)
def reindex_schedule(
    context: ScheduleEvaluationContext, corpus: CorpusResource, storage: StorageResource
) -> list[RunRequest] | SkipReason:
    instance = context.instance
    current = corpus.fingerprints()
    registered = set(instance.get_dynamic_partitions(corpus_partitions.name))
    # A schedule cannot return dynamic-partition requests (sensors can), so it applies them itself.
    if added := sorted(set(current) - registered):
        instance.add_dynamic_partitions(corpus_partitions.name, added)
    for p in sorted(registered - set(current)):
        instance.delete_dynamic_partition(corpus_partitions.name, p)
    active = active_runs(instance)
    stale = {p: why for p, why in stale_partitions(instance, current).items() if p not in active.partitions}
    partitioned, global_ = asset_keys()
    if stale:
        context.log.info(f"stale partitions: {stale}")
        return [
            RunRequest(
                run_key=f"partition-{p}",
                partition_key=p,
                asset_selection=list(partitioned),
                tags={REASON_TAG: why, FINGERPRINT_TAG: current[p], TRIGGER_TAG: "schedule"},
            )
            for p, why in stale.items()
        ]
    if active.busy:
        return SkipReason(f"no stale partition; waiting for runs of {sorted(active.partitions)} before publishing")
    check = publish_check(instance, sorted(current), storage.path / "index")
    if not check.needed or check.rolled_back:  # a rollback holds until the corpus changes or `mmkg index update`
        return SkipReason(check.reason)
    tags = {REASON_TAG: check.reason, TRIGGER_TAG: "schedule"}
    return [RunRequest(run_key="publish", asset_selection=list(global_), tags=tags)]


@dataclass
class Tick:
    """What one evaluation requested and what its runs did."""

    runs: list[RunRequest] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skip: str | None = None
    steps: dict[str, float] = field(default_factory=dict)  # seconds per step of the runs it executed

    @property
    def partitions(self) -> list[str]:
        return [r.partition_key for r in self.runs if r.partition_key]


class LocalDaemon:
    """Evaluates the corpus sensor, publish sensor and re-index schedule and runs their requests in process.

    Keeps the corpus sensor's cursor between ticks the way the daemon stores it.
    """

    def __init__(self, defs: Definitions, instance: DagsterInstance, resources: dict, run_config: dict | None = None):
        if not instance.is_persistent:
            raise ValueError(
                "LocalDaemon needs a persistent Dagster instance, as the daemon does (DagsterInstance.get(), "
                "DagsterInstance.local_temp() or instance_for_test()): an ephemeral one cannot resolve "
                "dynamic partitions"
            )
        # the same definitions bound to these resources (a job's subsets cannot take other resources at run time)
        self.defs = Definitions(
            assets=defs.assets,
            asset_checks=defs.asset_checks,
            jobs=defs.jobs,
            sensors=defs.sensors,
            schedules=defs.schedules,
            resources=resources,
            loggers=defs.loggers,
        )
        self.instance = instance
        self.resources = resources
        self.run_config = run_config or {}
        self.cursor: str | None = None

    def _execute(self, job_name: str, requests: Sequence[RunRequest]) -> dict[str, float]:
        job = self.defs.resolve_job_def(job_name)
        steps: dict[str, float] = {}
        for r in requests:
            result = job.execute_in_process(
                instance=self.instance,
                partition_key=r.partition_key,
                asset_selection=list(r.asset_selection) if r.asset_selection else None,
                tags={k: v for k, v in r.tags.items() if not k.startswith("dagster/")},
                run_config=self.run_config,
                raise_on_error=False,
            )
            if not result.success:
                where = f"partition {r.partition_key}" if r.partition_key else "the global assets"
                raise RuntimeError(f"{job_name} run {result.run_id} for {where} failed; see its events on the instance")
            for ev in result.all_events:
                if ev.event_type == DagsterEventType.STEP_SUCCESS:
                    steps[ev.step_key] = steps.get(ev.step_key, 0.0) + ev.event_specific_data.duration_ms / 1000
        return steps

    def _apply(self, requests: Sequence) -> tuple[list[str], list[str]]:
        added: list[str] = []
        removed: list[str] = []
        for req in requests:
            if isinstance(req, AddDynamicPartitionsRequest):
                self.instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
                added += req.partition_keys
            elif isinstance(req, DeleteDynamicPartitionsRequest):
                for key in req.partition_keys:
                    self.instance.delete_dynamic_partition(req.partitions_def_name, key)
                removed += req.partition_keys
        return added, removed

    def _sensor(self, sensor_def, cursor: str | None) -> tuple[Tick, str | None]:
        with build_sensor_context(
            instance=self.instance,
            instance_ref=self.instance.get_ref(),
            cursor=cursor,
            resources=self.resources,
            definitions=self.defs,
        ) as ctx:
            data = sensor_def.evaluate_tick(ctx)
        added, removed = self._apply(data.dynamic_partitions_requests or [])
        runs = list(data.run_requests or [])
        steps = self._execute(sensor_def.job_name, runs)
        return Tick(runs, added, removed, data.skip_message, steps), data.cursor

    def corpus_tick(self) -> Tick:
        """One tick of ``corpus_partition_sensor``: register/delete partitions and run the changed ones."""
        tick, self.cursor = self._sensor(corpus_partition_sensor, self.cursor)
        return tick

    def publish_tick(self) -> Tick:
        """One tick of ``index_publish_sensor``: publish if the index is behind."""
        tick, _ = self._sensor(index_publish_sensor, None)
        return tick

    def schedule_tick(self) -> Tick:
        """One evaluation of ``reindex_schedule`` and its runs (partition runs first, then a publish if asked)."""
        with build_schedule_context(
            instance=self.instance, resources=self.resources, repository_def=self.defs.get_repository_def()
        ) as ctx:
            data = reindex_schedule.evaluate_tick(ctx)
        runs = list(data.run_requests or [])
        steps = self._execute(reindex_schedule.job_name, runs)
        return Tick(runs, skip=data.skip_message, steps=steps)

    def refresh(self) -> list[Tick]:
        """Corpus sensor tick, then publish sensor tick: a change on disk all the way to a new index version."""
        return [self.corpus_tick(), self.publish_tick()]
