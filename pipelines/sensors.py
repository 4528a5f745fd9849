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

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    load_assets_from_modules,
    sensor,
)

from assets.ingest import FINGERPRINT_KEY
from assets.partitions import corpus_partitions
from mmkg.index.manifest import CURRENT, Manifest, current_version
from pipelines.jobs import partition_job, publish_job
from resources import CorpusResource, StorageResource

DOCUMENTS = AssetKey("documents")
RETRIEVAL_INDEX = AssetKey("retrieval_index")
ACTIVE = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]
SENSOR_INTERVAL_S = int(os.environ.get("MMKG_CORPUS_SENSOR_INTERVAL", "60"))
REASON_TAG = "mmkg/reason"
FINGERPRINT_TAG = "mmkg/fingerprint"


@cache
def asset_keys() -> tuple[tuple[AssetKey, ...], tuple[AssetKey, ...]]:
    """(partitioned, global) asset keys of the index, from the same modules definitions.py loads.

    Assets that only read the index (the ``generation`` group's answers) are not part of re-indexing.
    """
    from assets import ASSET_MODULES

    partitioned: set[AssetKey] = set()
    global_: set[AssetKey] = set()
    for a in load_assets_from_modules(ASSET_MODULES):
        keys = {k for k, g in a.group_names_by_key.items() if g != "generation"}  # type: ignore[union-attr]
        (global_ if a.partitions_def is None else partitioned).update(keys)  # type: ignore[union-attr]
    return tuple(sorted(partitioned, key=str)), tuple(sorted(global_, key=str))


def latest_storage_ids(instance: DagsterInstance, key: AssetKey, partitions: Iterable[str]) -> dict[str, int]:
    """Storage id of each partition's latest materialization of ``key`` (absent: never materialized)."""
    wanted = set(partitions)
    if not wanted:
        return {}
    ids = instance.get_latest_storage_id_by_partition(key, DagsterEventType.ASSET_MATERIALIZATION, wanted)
    return {p: i for p, i in ids.items() if p in wanted}


def recorded_fingerprints(instance: DagsterInstance, partitions: Iterable[str]) -> dict[str, str]:
    """The corpus fingerprint each partition's latest ``documents`` materialization was read from."""
    ids = latest_storage_ids(instance, DOCUMENTS, partitions)
    if not ids:
        return {}
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=DOCUMENTS, storage_ids=list(ids.values())), limit=len(ids)
    ).records
    out: dict[str, str] = {}
    for r in records:
        mat = r.asset_materialization
        if mat is not None and mat.partition and FINGERPRINT_KEY in mat.metadata:
            out[mat.partition] = str(mat.metadata[FINGERPRINT_KEY].value)
    return out


def stale_partitions(instance: DagsterInstance, current: dict[str, str]) -> dict[str, str]:
    """``{partition: reason}`` for partitions whose assets do not reflect the folder's current fingerprint.

    Reasons: ``never indexed``, ``changed`` (recorded fingerprint differs), ``incomplete`` (some
    partitioned asset has no materialization since the last ``documents`` one, e.g. a failed run).
    """
    keys = list(current)
    recorded = recorded_fingerprints(instance, keys)
    doc_ids = latest_storage_ids(instance, DOCUMENTS, keys)
    partitioned, _ = asset_keys()
    stale: dict[str, str] = {}
    for p in keys:
        if p not in doc_ids:
            stale[p] = "never indexed"
        elif recorded.get(p) != current[p]:
            stale[p] = "changed"
    rest = [p for p in keys if p not in stale]
    for key in partitioned:
        if not rest:
            break
        ids = latest_storage_ids(instance, key, rest)
        for p in list(rest):
            if ids.get(p, -1) < doc_ids[p]:
                stale[p] = "incomplete"
                rest.remove(p)
    return dict(sorted(stale.items()))


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


@dataclass(frozen=True)
class PublishCheck:
    needed: bool
    reason: str
    state: str  # identifies the partition state a publish would cover (used as a run key)


def publish_check(instance: DagsterInstance, registered: list[str], index_root: Path) -> PublishCheck:
    """Whether the published index is behind the registered partitions' materializations."""
    partitioned, _ = asset_keys()
    newest = max((max(latest_storage_ids(instance, k, registered).values(), default=0) for k in partitioned), default=0)
    state = f"{newest}-{hashlib.blake2b('|'.join(sorted(registered)).encode(), digest_size=6).hexdigest()}"
    if not registered:
        return PublishCheck(False, "no registered partitions", state)
    if newest == 0:
        return PublishCheck(False, "no partition has been materialized yet", state)
    last = instance.fetch_materializations(AssetRecordsFilter(asset_key=RETRIEVAL_INDEX), limit=1).records
    if not last:
        return PublishCheck(True, "the index was never published", state)
    if newest > last[0].storage_id:
        return PublishCheck(True, "partitions were materialized after the last publish", state)
    if (index_root / CURRENT).exists():
        published = Manifest.read(index_root / "versions" / current_version(index_root)).partitions
        if gone := sorted(set(published) - set(registered)):
            return PublishCheck(True, f"the index still holds removed partitions {gone}", state)
    return PublishCheck(False, "the index is up to date", state)


def _cursor(raw: str | None) -> dict[str, str] | None:
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None  # an unreadable cursor is a fresh start: fall back to the recorded fingerprints
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


@sensor(
    job=partition_job,
    minimum_interval_seconds=SENSOR_INTERVAL_S,
    default_status=DefaultSensorStatus.STOPPED,
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
    reasons |= stale_partitions(context.instance, candidates) if candidates else {}
    requests = [
        RunRequest(partition_key=p, tags={REASON_TAG: reasons[p], FINGERPRINT_TAG: current[p]}) for p in sorted(reasons)
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
    default_status=DefaultSensorStatus.STOPPED,
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
    if not check.needed:
        return SkipReason(check.reason)
    return SensorResult(run_requests=[RunRequest(run_key=f"publish-{check.state}", tags={REASON_TAG: check.reason})])
