"""LanceDB table history: compaction at publish, and pruning down to what the kept versions pin.

Every publish edits the shared LanceDB tables in new table versions (restore the pinned version,
delete a partition's rows, add its new ones), and LanceDB keeps every version and every file until
told otherwise: 25 publishes of the sample index left 47 table versions. Two operations bound that:

- ``compact`` (during a publish, before the version is pinned): once a table has ``COMPACT_FRAGMENTS``
  small fragments (each incremental publish adds one), merge them and materialise deletions through
  lancedb's ``optimize`` (told to prune nothing), and pin the compacted version.
- ``prune`` (after ``mmkg.index.gc`` has removed version folders, under the same lock): remove every
  table version that no kept index version pins, except the latest, by number, with Lance's own
  ``cleanup_old_versions`` (the ``pylance`` package). lancedb's ``optimize`` can only prune by age
  and always compacts first: run after every publish, that compaction would give each kept version
  a full copy of the table.

A manifest records every file in a table's folder when it was published (``mmkg.index.integrity``),
including files of older table versions it does not read. Pruning removes only files no kept
version reads, but such a file may be listed by a kept manifest, so each file Lance removes is
logged in ``<root>/lance_pruned.txt``: a listed file that is missing and logged was pruned, not lost.
The folder listing is written to ``<root>/.lance-pruning.json`` before Lance runs and settled after
it (or by the next holder of the publish lock, if the process died in between), so no removal goes
unlogged. All of this runs under the publish lock.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from mmkg.faults import failpoint
from mmkg.index.manifest import Manifest

COMPACT_FRAGMENTS = 16  # small fragments a table may hold before a publish compacts it
KEEP_ALL = timedelta(days=3650)  # "prune nothing older than ten years": compaction without pruning
PRUNED_LOG = "lance_pruned.txt"
PENDING = ".lance-pruning.json"


def _lance_files(root: Path, table: str) -> dict[str, int]:
    folder = root / "lance" / f"{table}.lance"
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def _append_log(root: Path, gone: set[str]) -> None:
    if not gone:
        return
    with (root / PRUNED_LOG).open("a", encoding="utf-8") as fh:
        fh.writelines(f"{rel}\n" for rel in sorted(gone))
        fh.flush()
        os.fsync(fh.fileno())


def settle(root: Path) -> tuple[int, int]:
    """Log what an optimize removed, from the listing written before it ran (also after a crash): (files, bytes)."""
    pending = root / PENDING
    if not pending.exists():
        return 0, 0
    try:
        before = json.loads(pending.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        before = {}
    gone: dict[str, int] = {}
    for table, files in before.items():
        now = _lance_files(root, table)
        gone |= {rel: size for rel, size in files.items() if rel not in now}
    _append_log(root, set(gone))
    pending.unlink(missing_ok=True)
    return len(gone), sum(gone.values())


def pruned_files(root: Path) -> set[str]:
    """Files LanceDB removed on purpose (paths relative to the index root).

    The log, plus what an unsettled listing names: while LanceDB runs, or after a process died in it,
    a listed file that is gone was removed by LanceDB, and a reader must not call it damage.
    """
    out: set[str] = set()
    with contextlib.suppress(OSError):
        out |= set((root / PRUNED_LOG).read_text(encoding="utf-8").split())
    with contextlib.suppress(OSError, ValueError, AttributeError):
        for files in json.loads((root / PENDING).read_text(encoding="utf-8")).values():
            out |= set(files)
    return out


def _logged(root: Path, tbl: Any, run: Callable[[], Any]) -> tuple[int, int]:
    """Run a LanceDB operation that may remove files, with every file it removes logged: (files, bytes)."""
    pending = root / PENDING
    tmp = root / f"{PENDING}.tmp"
    tmp.write_text(json.dumps({tbl.name: _lance_files(root, tbl.name)}), encoding="utf-8")
    os.replace(tmp, pending)
    failpoint("lance.optimize.listed")
    run()
    failpoint("lance.optimize.done")
    return settle(root)


def _compact(root: Path, tbl: Any) -> tuple[int, int]:
    """lancedb's ``optimize`` told to prune nothing (compaction only), logged."""
    return _logged(root, tbl, lambda: tbl.optimize(cleanup_older_than=KEEP_ALL))


def compact(root: Path, tbl: Any, min_fragments: int | None = None) -> bool:
    """Merge a table's small fragments once there are ``min_fragments`` of them; True when it ran.

    The default is ``MMKG_COMPACT_FRAGMENTS`` when set (1 compacts on every publish), else
    ``COMPACT_FRAGMENTS``.
    """
    if min_fragments is None:
        min_fragments = int(os.environ.get("MMKG_COMPACT_FRAGMENTS") or COMPACT_FRAGMENTS)
    stats = tbl.stats()["fragment_stats"]
    if stats["num_small_fragments"] < min_fragments:
        return False
    _compact(root, tbl)
    return True


def _cleanup(root: Path, tbl: Any, versions: list[int]) -> tuple[int, int]:
    """Lance's ``cleanup_old_versions`` of exactly ``versions``, logged."""
    return _logged(root, tbl, lambda: tbl.to_lance().cleanup_old_versions(
        versions=versions, delete_unverified=False, error_if_tagged_old_versions=False))  # fmt: skip


def prune(root: Path, kept: list[Manifest], compact_first: bool = False) -> dict[str, tuple[int, int]]:
    """Remove every table version no kept manifest pins (the latest excepted); {table: (files, bytes) removed}.

    Call under the publish lock, with ``kept`` every version still listed: a table no kept manifest pins
    is left alone. Versions are removed by number through Lance's own ``cleanup_old_versions``, so a
    pinned version stays however old it is and no clock is involved; files of killed publishes that no
    version references are left to Lance's own seven-day rule. ``compact_first`` (``mmkg index gc
    --compact``) compacts every table first; the next publish keeps that compacted version (it holds
    the same rows). The log of pruned files is trimmed to the paths a kept manifest still lists.
    """
    import lancedb

    settle(root)
    out: dict[str, tuple[int, int]] = {}
    lance = root / "lance"
    if not lance.exists():
        return out
    db = lancedb.connect(str(lance))
    for name in db.list_tables().tables:
        pins = {m.lance_versions[name] for m in kept if name in m.lance_versions}
        if not pins:
            continue
        tbl = db.open_table(name)
        files = size = 0
        if compact_first:
            files, size = _compact(root, tbl)
        history = [v["version"] for v in tbl.list_versions()]
        drop = [v for v in history if v not in pins and v != max(history)]
        if drop:
            more, more_size = _cleanup(root, tbl, drop)
            files, size = files + more, size + more_size
        out[name] = (files, size)
    _trim_log(root, kept)
    return out


def _trim_log(root: Path, kept: list[Manifest]) -> None:
    listed = set().union(*(m.files for m in kept)) if kept else set()
    logged = pruned_files(root)
    keep = logged & listed
    if keep == logged:
        return
    tmp = root / f"{PRUNED_LOG}.tmp"
    tmp.write_text("".join(f"{rel}\n" for rel in sorted(keep)), encoding="utf-8")
    os.replace(tmp, root / PRUNED_LOG)
    if not keep:
        with contextlib.suppress(OSError):
            (root / PRUNED_LOG).unlink()
