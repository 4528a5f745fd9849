"""One publisher at a time: an exclusive lock on the index root; one build at a time: one on the data root.

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
BUILD_LOCK_FILE = "build.lock"


class PublishLocked(RuntimeError):
    """Another publish holds the index root's lock (and the caller would not wait, or waited too long)."""


class BuildLocked(RuntimeError):
    """Another build of the data root holds its lock (and the caller would not wait, or waited too long)."""


def holder(root: Path, name: str = LOCK_FILE) -> str:
    """Who holds (or last held) the lock ``root / name``, in words."""
    try:
        info = json.loads((root / name).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    if not info:
        return "another process"
    return f"pid {info.get('pid')} on {info.get('host')} since {info.get('started')}"


@contextmanager
def _exclusive(
    root: Path,
    name: str,
    busy: Callable[[str], Exception],
    stuck: Callable[[str, float], Exception],
    waiting: str,
    wait: bool,
    timeout: float | None,
    on_wait: Callable[[str], None] | None,
    poll: float,
) -> Iterator[None]:
    """``flock`` on ``root / name`` for the block, the holder's pid, host and start time written in the file."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / name, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        t0 = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                who = holder(root, name)
                if not wait:
                    raise busy(who) from None
                if timeout is not None and time.monotonic() - t0 > timeout:
                    raise stuck(who, timeout) from None
                if not told and on_wait is not None:
                    on_wait(f"{waiting} ({who})")
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


@contextmanager
def publish_lock(
    root: Path,
    wait: bool = True,
    timeout: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    poll: float = 0.2,
) -> Iterator[None]:
    """Hold the index root's publish lock for the block; wait for it (default) or fail at once with ``wait=False``."""
    with _exclusive(
        root, LOCK_FILE,
        lambda who: PublishLocked(f"another publish holds {root / LOCK_FILE} ({who}); wait for it to finish and "
                                  "publish again, or let this publish wait for it (the default)"),
        lambda who, t: PublishLocked(f"waited {t:.0f}s for the publish lock on {root} ({who}); is that publish "
                                     "stuck?"),
        f"waiting for another publish of {root} to finish", wait, timeout, on_wait, poll,
    ):  # fmt: skip
        yield


@contextmanager
def build_lock(
    data_root: Path,
    wait: bool = True,
    timeout: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    poll: float = 0.5,
) -> Iterator[None]:
    """Hold the data root's build lock for the block: one ``build_index`` (``mmkg index build`` / ``update``, the
    server's re-index, ``mmkg eval``) at a time per data root, since a partition's tables are last-writer-wins and
    a build records the corpus it saw beside the version it published (``build_state.json``). Runs started from
    the Dagster UI do not take it."""
    with _exclusive(
        data_root, BUILD_LOCK_FILE,
        lambda who: BuildLocked(f"another build of {data_root} is running ({who}); wait for it to finish, or run "
                                "this one again after it"),
        lambda who, t: BuildLocked(f"waited {t:.0f}s for the build of {data_root} ({who}); is that build stuck?"),
        f"waiting for another build of {data_root} to finish", wait, timeout, on_wait, poll,
    ):  # fmt: skip
        yield
