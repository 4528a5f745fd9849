"""Sensors that keep the index in step with the corpus folder.

``corpus_partition_sensor`` watches the corpus root: a new folder becomes a dynamic partition and
gets a run, a folder whose fingerprint changed gets a run for that partition only, a removed folder
has its dynamic partition deleted (global assets then stop reading it). Its cursor is the JSON
``{partition: fingerprint}`` it last saw.

``index_publish_sensor`` publishes once the partition runs are done: when a partition was
materialized after the last ``retrieval_index`` materialization, or the published index still
holds a partition that is no longer registered, and no partition run is queued or running.

Both decide from Dagster's own records (dynamic partitions, materialization events and their
metadata, run status) plus the corpus folder; the helpers below are shared with the schedule.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.partitions import corpus_partitions
from pipelines.jobs import partition_job, publish_job
from pipelines.records import (  # noqa: F401 - re-exported: the sensors' helpers, shared with the schedule
    DOCUMENTS,
    RETRIEVAL_INDEX,
    PublishCheck,
    asset_keys,
    latest_storage_ids,
    publish_check,
    recorded_fingerprints,
    stale_partitions,
)
from pipelines.tags import FINGERPRINT_TAG, REASON_TAG, TRIGGER_TAG
from resources import CorpusResource, StorageResource

ACTIVE = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]
SENSOR_INTERVAL_S = int(os.environ.get("MMKG_CORPUS_SENSOR_INTERVAL", "60"))
# MMKG_AUTOMATION=on (what `mmkg deploy up` sets for its code server): the sensors and the schedule start on, so a
# daemon re-indexes by itself; otherwise they start off and are switched on in the UI
AUTOMATION = os.environ.get("MMKG_AUTOMATION", "off").strip().lower() in ("on", "1", "true", "yes")
SENSOR_STATUS = DefaultSensorStatus.RUNNING if AUTOMATION else DefaultSensorStatus.STOPPED


@dataclass(frozen=True)
class ActiveRuns:
    partitions: frozenset[str]  # partitions with a queued or running run
    publishing: bool  # a run materializing the global assets is queued or running

    @property
    def busy(self) -> bool:
        return bool(self.partitions) or self.publishing


def active_runs(instance: DagsterInstance) -> ActiveRuns:
    """Queued and running runs that touch this pipeline's assets."""
    global_ = set(asset_keys()[1])
    parts: set[str] = set()
    publishing = False
    for run in instance.get_runs(RunsFilter(statuses=ACTIVE)):
        selection = set(run.asset_selection or ())
        if p := run.tags.get("dagster/partition"):
            parts.add(p)
        elif selection & global_ or run.job_name == publish_job.name:
            publishing = True
    return ActiveRuns(frozenset(parts), publishing)


def _cursor(raw: str | None) -> dict[str, str] | None:
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None  # an unreadable cursor is a fresh start: fall back to the recorded fingerprints
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


RETRIES = int(os.environ.get("MMKG_SENSOR_RETRIES", "2"))


def _failed(instance: DagsterInstance, fingerprints: dict[str, str]) -> set[str]:
    """Partitions whose latest run failed with these very files (the fingerprint the run was asked for), fewer than
    ``RETRIES`` + 1 times: the corpus sensor asks for them again (it would not otherwise: their files did not
    change since its last look)."""
    if not fingerprints or RETRIES <= 0:
        return set()
    records = instance.get_run_records(RunsFilter(tags={"dagster/partition": list(fingerprints)}),
                                       limit=20 * len(fingerprints))  # fmt: skip
    latest: dict[str, DagsterRunStatus] = {}
    failures: dict[str, int] = {}
    for record in records:  # newest first
        run = record.dagster_run
        p = run.tags.get("dagster/partition")
        if p not in fingerprints:
            continue
        latest.setdefault(p, run.status)
        if run.status == DagsterRunStatus.FAILURE and run.tags.get(FINGERPRINT_TAG) == fingerprints[p]:
            failures[p] = failures.get(p, 0) + 1
    failed = {p for p, status in latest.items() if status == DagsterRunStatus.FAILURE}
    return {p for p in failed if 0 < failures.get(p, 0) <= RETRIES}


@sensor(
    job=partition_job,
    minimum_interval_seconds=SENSOR_INTERVAL_S,
    default_status=SENSOR_STATUS,
    description="Watches the corpus root: new folder -> new dynamic partition and a run; changed files -> a run "
    "for that partition only; removed folder -> the dynamic partition is deleted (the next publish drops it).",
)
def corpus_partition_sensor(context: SensorEvaluationContext, corpus: CorpusResource) -> SensorResult:
    current = corpus.fingerprints()
    registered = set(context.instance.get_dynamic_partitions(corpus_partitions.name))
    seen = _cursor(context.cursor) or {}
    added = sorted(set(current) - registered)
    removed = sorted(registered - set(current))
    kept = sorted(registered & set(current))
    reasons = {p: "new folder" for p in added}
    # Changed since the last tick, or not in the cursor (first tick, registered by someone else): the
    # instance decides, so a partition the schedule or a manual run already re-indexed is not run twice.
    candidates = {p: current[p] for p in kept if seen.get(p) != current[p]}
    # A run that failed (its worker killed, the instance's database gone for a while) is asked for again, up to
    # RETRIES times for the same files, and never while a run of the partition is queued or going.
    retry = _failed(context.instance, {p: current[p] for p in kept if p not in candidates})
    if retry:
        retry -= active_runs(context.instance).partitions
    candidates |= {p: current[p] for p in retry}
    reasons |= stale_partitions(context.instance, candidates) if candidates else {}
    requests = [
        RunRequest(partition_key=p, tags={REASON_TAG: reasons[p], FINGERPRINT_TAG: current[p], TRIGGER_TAG: "sensor"})
        for p in sorted(reasons)
    ]
    partition_requests = []
    if added:
        partition_requests.append(corpus_partitions.build_add_request(added))
    if removed:
        partition_requests.append(corpus_partitions.build_delete_request(removed))
    if requests or removed:
        context.log.info(f"runs: {reasons}; removed: {removed}")
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=partition_requests,
        cursor=json.dumps(current, sort_keys=True),
    )


@sensor(
    job=publish_job,
    minimum_interval_seconds=SENSOR_INTERVAL_S,
    default_status=SENSOR_STATUS,
    description="Publishes a new index version once partition runs have finished: partitions materialized since "
    "the last publish, or partitions deleted that the index still holds.",
)
def index_publish_sensor(context: SensorEvaluationContext, storage: StorageResource) -> SensorResult | SkipReason:
    active = active_runs(context.instance)
    if active.busy:
        return SkipReason(
            f"waiting: runs active for partitions {sorted(active.partitions)}"
            + (" and a publish" if active.publishing else "")
        )
    registered = list(context.instance.get_dynamic_partitions(corpus_partitions.name))
    check = publish_check(context.instance, registered, storage.path / "index")
    if not check.needed or check.rolled_back:  # a rollback holds until the corpus changes or `mmkg index update`
        return SkipReason(check.reason)
    tags = {REASON_TAG: check.reason, TRIGGER_TAG: "sensor"}
    return SensorResult(run_requests=[RunRequest(run_key=f"publish-{check.state}", tags=tags)])
