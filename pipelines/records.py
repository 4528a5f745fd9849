"""Dagster's records of the index pipeline, read without loading the pipeline's code.

What ``mmkg index status``, ``mmkg index update``, the corpus sensor and the schedule decide from:
each partition's latest materializations, the corpus fingerprint its last ``documents`` run recorded,
and the last ``retrieval_index`` publish. Only ``dagster`` itself is imported here: the asset modules
(spaCy, torch, LanceDB) are loaded only when the list of partitioned assets is not cached yet
(``asset_keys``), which took ``mmkg index status`` from 0.4 s to 7 s.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dagster import AssetKey, AssetRecordsFilter, DagsterEventType, DagsterInstance

from mmkg.atomic import write_bytes
from mmkg.index.manifest import CURRENT, Manifest, current_version
from mmkg.ingest.fingerprint import FINGERPRINT_KEY

DOCUMENTS = AssetKey("documents")
#: partitioned assets a partition's run materializes before ``documents`` (the speech step feeds ingest): their
#: latest materialization precedes the partition's last ``documents`` one by construction, so they are not part
#: of the "incomplete" check (tests/test_orchestration.py checks this is every asset upstream of documents)
BEFORE_DOCUMENTS = frozenset({AssetKey("transcripts")})
RETRIEVAL_INDEX = AssetKey("retrieval_index")
ASSET_KEYS_CACHE = "mmkg_asset_keys.json"  # in the instance's home: the asset lists, keyed by the assets' source
_ASSETS = Path(__file__).resolve().parent.parent / "assets"

AssetKeys = tuple[tuple[AssetKey, ...], tuple[AssetKey, ...]]


@cache
def _loaded_asset_keys() -> AssetKeys:
    from dagster import load_assets_from_modules

    from assets import ASSET_MODULES

    partitioned: set[AssetKey] = set()
    global_: set[AssetKey] = set()
    for a in load_assets_from_modules(ASSET_MODULES):
        keys = {k for k, g in a.group_names_by_key.items() if g != "generation"}  # type: ignore[union-attr]
        (global_ if a.partitions_def is None else partitioned).update(keys)  # type: ignore[union-attr]
    return tuple(sorted(partitioned, key=str)), tuple(sorted(global_, key=str))


def _assets_digest() -> str:
    h = hashlib.blake2b(digest_size=8)
    for path in sorted(_ASSETS.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def asset_keys(instance: DagsterInstance | None = None) -> AssetKeys:
    """(partitioned, global) asset keys of the index, from the same modules definitions.py loads.

    Assets that only read the index (the ``generation`` group's answers) are not part of re-indexing.
    With a local ``instance`` the lists are cached in its home, keyed by a digest of the asset modules'
    source, so readers of the records (``mmkg index status``) need not import spaCy and torch.
    """
    home = getattr(instance, "root_directory", None)
    path = Path(home) / ASSET_KEYS_CACHE if home else None
    digest = _assets_digest()
    if path is not None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("digest") == digest:
                return tuple(tuple(AssetKey(k) for k in data[name]) for name in ("partitioned", "global"))  # type: ignore[return-value]
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no cache, or an unreadable one: load the modules
    keys = _loaded_asset_keys()
    if path is not None:
        data = {"digest": digest, "partitioned": [k.path for k in keys[0]], "global": [k.path for k in keys[1]]}
        with contextlib.suppress(OSError):  # a cache that cannot be written only costs the next reader time
            write_bytes(path, json.dumps(data, indent=1).encode("utf-8"))
    return keys


def latest_storage_ids(instance: DagsterInstance, key: AssetKey, partitions: Iterable[str]) -> dict[str, int]:
    """Storage id of each partition's latest materialization of ``key`` (absent: never materialized)."""
    wanted = set(partitions)
    if not wanted:
        return {}
    ids = instance.get_latest_storage_id_by_partition(key, DagsterEventType.ASSET_MATERIALIZATION, wanted)
    return {p: i for p, i in ids.items() if p in wanted}


def latest_documents(instance: DagsterInstance, ids: dict[str, int]) -> list:
    """The ``documents`` materialization records of ``ids`` (partition -> storage id, ``latest_storage_ids``)."""
    if not ids:
        return []
    return instance.fetch_materializations(
        AssetRecordsFilter(asset_key=DOCUMENTS, storage_ids=list(ids.values())), limit=len(ids)
    ).records


def fingerprints_of(records: Iterable) -> dict[str, str]:
    """Partition -> the corpus fingerprint its ``documents`` materialization record was read from."""
    out: dict[str, str] = {}
    for r in records:
        mat = r.asset_materialization
        if mat is not None and mat.partition and FINGERPRINT_KEY in mat.metadata:
            out[mat.partition] = str(mat.metadata[FINGERPRINT_KEY].value)
    return out


def recorded_fingerprints(instance: DagsterInstance, partitions: Iterable[str]) -> dict[str, str]:
    """The corpus fingerprint each partition's latest ``documents`` materialization was read from."""
    return fingerprints_of(latest_documents(instance, latest_storage_ids(instance, DOCUMENTS, partitions)))


def incomplete_partitions(instance: DagsterInstance, doc_ids: dict[str, int], partitions: Iterable[str]) -> set[str]:
    """Of ``partitions``, those where some partitioned asset has no materialization since the partition's last
    ``documents`` one (``doc_ids``: partition -> its storage id), e.g. after a failed run. The assets that run before
    ``documents`` (``BEFORE_DOCUMENTS``) are not compared: a run that fails in them writes no ``documents``, and the
    partition's fingerprint then says it changed."""
    partitioned, _ = asset_keys(instance)
    rest = list(partitions)
    out: set[str] = set()
    for key in partitioned:
        if not rest:
            break
        if key in BEFORE_DOCUMENTS:
            continue
        ids = latest_storage_ids(instance, key, rest)
        for p in list(rest):
            if ids.get(p, -1) < doc_ids[p]:
                out.add(p)
                rest.remove(p)
    return out


def stale_partitions(instance: DagsterInstance, current: dict[str, str]) -> dict[str, str]:
    """``{partition: reason}`` for partitions whose assets do not reflect the folder's current fingerprint.

    Reasons: ``never indexed``, ``changed`` (recorded fingerprint differs), ``incomplete`` (some
    partitioned asset has no materialization since the last ``documents`` one, e.g. a failed run).
    """
    keys = list(current)
    doc_ids = latest_storage_ids(instance, DOCUMENTS, keys)
    recorded = fingerprints_of(latest_documents(instance, doc_ids))
    stale: dict[str, str] = {}
    for p in keys:
        if p not in doc_ids:
            stale[p] = "never indexed"
        elif recorded.get(p) != current[p]:
            stale[p] = "changed"
    for p in incomplete_partitions(instance, doc_ids, [p for p in keys if p not in stale]):
        stale[p] = "incomplete"
    return dict(sorted(stale.items()))


@dataclass(frozen=True)
class PublishCheck:
    needed: bool
    reason: str
    state: str  # identifies the partition state a publish would cover (used as a run key)
    # CURRENT names a version other than the newest publish (``mmkg index rollback``): a publish brings the index
    # back to the corpus as it is, but only when asked (``mmkg index update``); sensors and the schedule keep the
    # rollback until the corpus changes
    rolled_back: bool = False


def publish_check(instance: DagsterInstance, registered: list[str], index_root: Path) -> PublishCheck:
    """Whether the published index is behind the registered partitions' materializations."""
    partitioned, _ = asset_keys(instance)
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
        current = current_version(index_root)
        published = Manifest.read(index_root / "versions" / current).partitions
        if gone := sorted(set(published) - set(registered)):
            return PublishCheck(True, f"the index still holds removed partitions {gone}", state)
        newest = last_published_version(last[0])
        if newest is not None and newest != current:
            return PublishCheck(True, f"CURRENT was pointed at {current}, but the newest publish is {newest} "
                                      "(`mmkg index rollback`)", state, rolled_back=True)  # fmt: skip
    return PublishCheck(False, "the index is up to date", state)


def last_published_version(record) -> str | None:
    """The version a ``retrieval_index`` materialization record published (its ``version`` metadata)."""
    meta = record.asset_materialization.metadata if record.asset_materialization else {}
    return str(meta["version"].value) if "version" in meta else None
