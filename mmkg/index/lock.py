"""One publisher at a time: an exclusive lock on the index root.

The lock is ``fcntl.flock`` on ``<root>/publish.lock``: the kernel releases it when the holding
process ends, however it ends (SIGKILL included), so a dead publisher never leaves a lock behind to
take over by hand. The file also records who holds it (pid, host, start time) so a waiting publisher
can say what it waits for. Readers take no lock: they open a version ``CURRENT`` names, and
``CURRENT`` moves atomically. POSIX only (``fcntl``), like the rest of the atomic-rename scheme.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

LOCK_FILE = "publish.lock"


class PublishLocked(RuntimeError):
    """Another publish holds the index root's lock (and the caller would not wait, or waited too long)."""


def holder(root: Path) -> str:
    """Who holds (or last held) the lock, in words."""
    try:
        info = json.loads((root / LOCK_FILE).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    if not info:
        return "another process"
    return f"pid {info.get('pid')} on {info.get('host')} since {info.get('started')}"


@contextmanager
def publish_lock(
    root: Path,
    wait: bool = True,
    timeout: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    poll: float = 0.2,
) -> Iterator[None]:
    """Hold the index root's publish lock for the block; wait for it (default) or fail at once with ``wait=False``."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        t0 = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                who = holder(root)
                if not wait:
                    raise PublishLocked(
                        f"another publish holds {root / LOCK_FILE} ({who}); wait for it to finish and publish "
                        "again, or let this publish wait for it (the default)"
                    ) from None
                if timeout is not None and time.monotonic() - t0 > timeout:
                    raise PublishLocked(
                        f"waited {timeout:.0f}s for the publish lock on {root} ({who}); is that publish stuck?"
                    ) from None
                if not told and on_wait is not None:
                    on_wait(f"waiting for another publish of {root} to finish ({who})")
                    told = True
                time.sleep(poll)
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
