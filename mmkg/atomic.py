"""Write-then-rename: a file either keeps its old content or has the complete new one.

Every table, blob, matrix, cache entry and manifest goes through this, so a crash, a failed write
or a concurrent reader never meets half a file, and no temporary file is left behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(target: Path, suffix: str = "") -> Iterator[Path]:
    """A temporary path beside ``target`` to write to; renamed onto ``target`` when the block succeeds.

    ``suffix`` matters to writers that append one themselves (``np.savez`` adds ``.npz``).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes(target: Path, data: bytes, fsync: bool = False) -> None:
    with atomic_path(target) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
