"""Write-then-rename: a file either keeps its old content or has the complete new one.

Every table, blob, matrix, cache entry and manifest goes through this, so a crash, a failed write
or a concurrent reader never meets half a file. A failed write removes its temporary file; a process
killed mid-write (SIGKILL, the out-of-memory killer) cannot, so the temporary's name is one no reader
matches: hidden, and ending in ``.tmp``, never in the target's own ``.parquet`` or ``.npz`` (a glob of
``*.parquet`` over a table folder, as DuckDB's views and the IO managers read them, would take it for a
partition's table). Such leftovers older than a day are removed by the first write into their folder of each
process.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TEMPORARY_SUFFIX = ".tmp"
STALE_AFTER_S = 24 * 3600  # a temporary this old beside a target is a killed writer's; no write takes a day


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target`` to write to; renamed onto ``target`` when the block succeeds.

    The path ends in ``.tmp``: writers that add their own extension to a name without it (``np.savez``,
    ``np.save``) must be given an open file instead.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{target.name}-"
    _sweep(target.parent)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=TEMPORARY_SUFFIX)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_SWEPT: set[Path] = set()  # folders this process has swept: once each, not on every write


def _sweep(folder: Path) -> None:
    """Remove the temporaries killed writers left in ``folder`` more than a day ago; once per folder and process,
    since listing a folder of thousands of blobs on every write would cost the square of their number."""
    if folder in _SWEPT:
        return
    _SWEPT.add(folder)
    now = time.time()
    for p in folder.glob(f".*-{'?' * 8}{TEMPORARY_SUFFIX}"):  # only what ``atomic_path`` names: ".<target>-<8>.tmp"
        try:
            if now - p.stat().st_mtime > STALE_AFTER_S:
                p.unlink()
        except OSError:  # gone already, or another process's to keep
            continue


def write_bytes(target: Path, data: bytes, fsync: bool = False) -> None:
    with atomic_path(target) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
