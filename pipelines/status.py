"""``mmkg index status``: where each corpus partition stands, from the data root's Dagster instance.

The answer comes from the same records the corpus sensor reads (``pipelines.sensors``): the
fingerprint each partition's last ingest recorded, compared with the folder's fingerprint now, and
whether every partitioned asset has run since that ingest. Runs made from the UI, the schedule or
``mmkg index build`` all count. Reading the status changes nothing: a data root without a Dagster
instance yet is reported as never indexed, and none is created.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from mmkg.index.manifest import CURRENT, Manifest, current_version
from mmkg.ingest.files import list_partitions
from mmkg.ingest.fingerprint import partition_fingerprint


def _published(index_root: Path) -> dict | None:
    if not (index_root / CURRENT).exists():
        return None
    version = current_version(index_root)
    manifest = Manifest.read(index_root / "versions" / version)
    return {"version": version, "created_at": manifest.created_at, "partitions": sorted(manifest.partitions)}


def index_status(corpus_root: Path | str, data_root: Path | str) -> dict:
    """``{"partitions": [...], "published": {...} | None, "advice": str}`` for ``mmkg index status``."""
    # Dagster's records only (pipelines.records): not the asset modules, which import spaCy, torch and LanceDB
    from dagster import AssetRecordsFilter

    from pipelines.build import dagster_instance
    from pipelines.records import DOCUMENTS, latest_storage_ids, publish_check, stale_partitions

    corpus_root, data_root = Path(corpus_root), Path(data_root)
    keys = list_partitions(corpus_root)
    current = {k: partition_fingerprint(corpus_root / k) for k in keys}
    published = _published(data_root / "index")
    in_index = set(published["partitions"]) if published else set()
    last: dict[str, str] = {}
    publish_needed = False
    if (data_root / "dagster_home").is_dir():
        instance = dagster_instance(data_root)
        stale = stale_partitions(instance, current)
        ids = latest_storage_ids(instance, DOCUMENTS, keys)
        if ids:
            records = instance.fetch_materializations(
                AssetRecordsFilter(asset_key=DOCUMENTS, storage_ids=list(ids.values())), limit=len(ids)
            ).records
            for r in records:
                if r.asset_materialization is not None and r.asset_materialization.partition:
                    when = datetime.fromtimestamp(r.timestamp, UTC).isoformat(timespec="seconds")
                    last[r.asset_materialization.partition] = when
        registered = sorted(instance.get_dynamic_partitions("corpus"))
        publish_needed = publish_check(instance, registered, data_root / "index").needed
    else:
        stale = dict.fromkeys(keys, "never indexed")
    rows = [
        {
            "partition": k,
            "fingerprint": current[k],
            "state": stale.get(k, "indexed"),
            "last_ingest": last.get(k),
            "published": k in in_index,
        }
        for k in keys
    ]
    removed = sorted(in_index - set(keys))
    rows += [
        {"partition": k, "fingerprint": "", "state": "removed", "last_ingest": None, "published": True} for k in removed
    ]
    behind = [r["partition"] for r in rows if r["state"] != "indexed" or not r["published"]]
    if behind:
        advice = f"{len(behind)} partition(s) not in the index as they are now: run `mmkg index update`"
    elif publish_needed:
        advice = "partitions were indexed after the last publish: run `mmkg index update` to publish them"
    else:
        advice = "up to date: the published index covers every partition as it is now"
    return {"corpus_root": str(corpus_root), "data_root": str(data_root), "partitions": rows,
            "published": published, "advice": advice}  # fmt: skip
