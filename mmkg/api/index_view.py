"""``GET /index/overview``: the index itself, for the web page's Index view.

What ``mmkg index info``, ``mmkg index versions`` and the build summary show, read from files only (no
Dagster instance is opened, no model is loaded): the served version's manifest and its tables
(partitions, documents), every published version's manifest, the data root's record of the last
``mmkg index build`` (``build_state.json``) and its newest build log (``logs/build-*.log``), and the
files ingest rejected, cut or repaired (``tables/rejected_files``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from mmkg.index.manifest import Manifest, list_versions

MAX_VERSIONS = 20  # the newest ones listed
MAX_DOCUMENTS = 500
MAX_REJECTED = 200
BUILD_STATE = "build_state.json"  # pipelines.build.STATE (not imported: the server does not need Dagster)
LOG_TAIL = 8  # lines of the newest build log


def overview(index: Any, data_root: Path) -> dict[str, Any]:
    """The served version, its partitions and documents, the published versions, the last build, rejected files."""
    data_root = Path(data_root)
    m = index.manifest
    rejected = _rejected(data_root)
    return {
        "version": index.version,
        "created_at": m.created_at,
        "encoder": m.encoder.id,
        "counts": m.counts,
        "partitions": _partitions(index, rejected),
        "documents": _documents(index),
        "versions": _versions(Path(index.root), index.version),
        "build": last_build(data_root, index.version),
        "rejected": {
            "total": rejected.height,
            "rows": rejected.head(MAX_REJECTED).to_dicts(),
            "by_stage": dict(sorted(rejected.group_by("stage").len().iter_rows())) if rejected.height else {},
        },
    }


def _count_by_partition(frame: pl.DataFrame) -> dict[str, int]:
    if "partition" not in frame.columns or frame.is_empty():
        return {}
    return dict(frame.group_by("partition").len().iter_rows())


def _partitions(index: Any, rejected: pl.DataFrame) -> list[dict[str, Any]]:
    docs = _count_by_partition(index.documents)
    chunks = _count_by_partition(index.chunks)
    pictures = _count_by_partition(index.images)
    bad = _count_by_partition(rejected)
    return [
        # published_digest: a digest of the ids this partition published (what is in the index), not the corpus
        # folder's fingerprint that ``mmkg index status`` compares; "fingerprint" is its earlier name, kept for
        # clients of the API
        {"partition": p, "published_digest": fp, "fingerprint": fp, "documents": docs.get(p, 0),
         "chunks": chunks.get(p, 0),
         "pictures": pictures.get(p, 0), "rejected": bad.get(p, 0)}
        for p, fp in sorted(index.manifest.partitions.items())
    ]  # fmt: skip


def _documents(index: Any) -> dict[str, Any]:
    docs = index.documents
    chunks = _count_by_doc(index.chunks)
    cols = [c for c in ("doc_id", "partition", "source_path", "title", "kind") if c in docs.columns]
    rows = docs.select(cols).sort("partition", "source_path").head(MAX_DOCUMENTS).to_dicts()
    for row in rows:
        row["chunks"] = chunks.get(row.get("doc_id"), 0)
    return {"total": docs.height, "rows": rows}


def _count_by_doc(frame: pl.DataFrame) -> dict[str, int]:
    if "doc_id" not in frame.columns or frame.is_empty():
        return {}
    return dict(frame.group_by("doc_id").len().iter_rows())


def _versions(index_root: Path, current: str) -> list[dict[str, Any]]:
    out = []
    for name in list_versions(index_root)[-MAX_VERSIONS:]:
        try:
            m = Manifest.read(index_root / "versions" / name)
        except (OSError, ValueError) as exc:  # a damaged version is listed, with why
            out.append({"version": name, "current": name == current, "error": str(exc).splitlines()[0]})
            continue
        out.append({"version": name, "current": name == current, "created_at": m.created_at,
                    "partitions": sorted(m.partitions), "counts": m.counts})  # fmt: skip
    return out[::-1]  # newest first


def last_build(data_root: Path, served: str) -> dict[str, Any]:
    """What the data root says of the last ``mmkg index build`` / ``update``: the version it published (from
    ``build_state.json``), the newest build log with its last lines, and a one-line status."""
    state_path = data_root / BUILD_STATE
    state: dict[str, Any] = {}
    if state_path.is_file():
        try:
            state = json.loads(state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = {}
    logs = sorted((data_root / "logs").glob("build-*.log")) if (data_root / "logs").is_dir() else []
    log = logs[-1] if logs else None
    out: dict[str, Any] = {
        "published": state.get("index_version"),
        "recorded_at": _mtime(state_path) if state else None,
        "partitions": sorted(state.get("partitions") or {}),
        "log": None,
    }
    if log is not None:
        lines = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        out["log"] = {"name": log.name, "modified_at": _mtime(log), "tail": lines[-LOG_TAIL:]}
    if not state and log is None:
        out["status"] = "no `mmkg index build` has run on this data root (the index was published by the Dagster jobs)"
    elif not state:
        out["status"] = "the last build did not publish (see its log)"
    elif log is not None and log.stat().st_mtime > state_path.stat().st_mtime + 1:
        out["status"] = (f"a build started after the last recorded publish ({state.get('index_version')}) and "
                         "published nothing: it failed, was stopped or is still running (see its log)")  # fmt: skip
    elif state.get("index_version") == served:
        out["status"] = "succeeded: it published the version being served"
    else:
        out["status"] = (f"succeeded, publishing {state.get('index_version')}; the server answers from {served} "
                         "(published since, or rolled back to)")  # fmt: skip
    return out


def _mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")


def _rejected(data_root: Path) -> pl.DataFrame:
    folder = data_root / "tables" / "rejected_files"
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    frames = []
    for f in files:
        try:
            frames.append(pl.read_parquet(f))
        except (OSError, pl.exceptions.ComputeError):  # a file being rewritten: left out of this view
            continue
    cols = ["partition", "source_path", "record_key", "stage", "reason"]
    if not frames:
        return pl.DataFrame(schema=dict.fromkeys(cols, pl.String))
    frame = pl.concat(frames, how="diagonal_relaxed")
    return frame.select([c for c in cols if c in frame.columns]).sort("partition", "source_path")
