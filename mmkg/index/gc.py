"""Retention: which published versions an index root keeps, and the LanceDB history they need.

Every publish adds a version folder and new LanceDB table versions, and nothing removed them (25
publishes of the sample index: 26 folders, 0.67 MB to 9.7 MB). ``collect`` removes the versions a
rule no longer keeps, under the publish lock so it never races a publish:

- ``CURRENT`` is always kept, and so are the newest ``keep`` versions;
- with ``older_than``, only versions created longer ago than that are removed;
- a version opened within the grace period is kept: ``Index.open`` touches ``versions/V/.opened``
  (best effort; a read-only mount simply never marks it), so a reader pinned to a version that has
  just stopped being current does not lose its files under it.

A version is removed manifest first (a folder without a manifest is never listed or opened), then
its files. Then each LanceDB table's history is pruned down to the oldest table version a kept
version pins (``mmkg.index.history.prune``); a dry run reports folders only.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mmkg.faults import failpoint
from mmkg.index.history import prune
from mmkg.index.manifest import MANIFEST, Manifest, current_version, list_versions

OPENED = ".opened"
DEFAULT_KEEP = 5
DEFAULT_GRACE = timedelta(minutes=10)


@dataclass
class GcReport:
    removed: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # version -> why it stays
    bytes_freed: int = 0  # version folders and LanceDB files together
    lance_files_removed: int = 0
    dry_run: bool = False


def mark_opened(folder: Path) -> None:
    """Record that a reader opened this version now (ignored where the index is read-only)."""
    with contextlib.suppress(OSError):
        (folder / OPENED).touch()


def _created(manifest: Manifest) -> datetime:
    return datetime.fromisoformat(manifest.created_at)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def plan(
    root: Path,
    keep: int = DEFAULT_KEEP,
    older_than: timedelta | None = None,
    grace: timedelta = DEFAULT_GRACE,
    now: datetime | None = None,
) -> tuple[list[str], dict[str, str]]:
    """(versions to remove, {version kept: why}) under the rule in the module docstring."""
    if keep < 1:
        raise ValueError(f"--keep must be at least 1 (the current version always stays); got {keep}")
    now = now or datetime.now(UTC)
    versions = list_versions(root)  # oldest first: names start with their UTC time
    current = current_version(root)
    kept: dict[str, str] = {current: "current"}
    for v in versions[-keep:]:
        kept.setdefault(v, f"one of the newest {keep}")
    remove = []
    for v in versions:
        if v in kept:
            continue
        folder = root / "versions" / v
        opened = folder / OPENED
        if opened.exists() and now - datetime.fromtimestamp(opened.stat().st_mtime, UTC) < grace:
            kept[v] = f"opened within the last {grace}"
            continue
        if older_than is not None and now - _created(Manifest.read(folder)) < older_than:
            kept[v] = f"younger than {older_than}"
            continue
        remove.append(v)
    return remove, kept


def collect(
    root: Path | str,
    keep: int = DEFAULT_KEEP,
    older_than: timedelta | None = None,
    grace: timedelta = DEFAULT_GRACE,
    dry_run: bool = False,
    wait: bool = False,
    compact: bool = False,
) -> GcReport:
    """Remove the version folders ``plan`` does not keep, then LanceDB history no kept version pins (under the lock)."""
    from mmkg.index.lock import publish_lock

    root = Path(root)
    report = GcReport(dry_run=dry_run)
    with publish_lock(root, wait=wait):
        remove, report.kept = plan(root, keep, older_than, grace)
        for v in remove:
            folder = root / "versions" / v
            report.bytes_freed += _size(folder)
            report.removed.append(v)
            if not dry_run:
                (folder / MANIFEST).unlink()  # unlisted from here on, even if the rest is interrupted
                shutil.rmtree(folder)
        if not dry_run:
            failpoint("gc.folders.removed")
            kept = [Manifest.read(root / "versions" / v) for v in list_versions(root)]
            for files, size in prune(root, kept, compact_first=compact).values():
                report.lance_files_removed += files
                report.bytes_freed += size
    return report
