"""One pinned index version per server process, swapped atomically when a new version is published.

A request takes the holder's current ``Index`` once and uses that object to the end, so it never sees
two versions; a reload opens the new version beside the old one (sharing the loaded encoder) and
replaces the reference in one assignment. ``CURRENT`` is read at most every ``check_interval`` seconds;
a version that does not open is logged and reported by ``/health`` while the old one keeps serving.
Each version is checked against its checksums when opened (``Index.open(verify=True)``): a server runs
for days, and bytes damaged in place would otherwise be served as data.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from mmkg.index import Index
from mmkg.index.manifest import current_version

log = logging.getLogger(__name__)


class IndexHolder:
    def __init__(self, root: Path, encoder: Any = None, check_interval: float = 1.0):
        self.root = Path(root)
        self.check_interval = check_interval
        self._index = Index.open(self.root, encoder=encoder, verify=True)
        self._checked = time.monotonic()
        self._lock = threading.Lock()
        self.reload_error: str | None = None  # why the newest published version is not served
        self.reloads = 0

    def current(self) -> Index:
        """The version to answer with; looks for a newer published one at most every ``check_interval`` s."""
        now = time.monotonic()
        if now - self._checked < self.check_interval:
            return self._index
        self._checked = now
        try:
            version = current_version(self.root)
        except (OSError, ValueError) as exc:  # CURRENT missing or damaged: keep serving what is open
            self.reload_error = str(exc)
            return self._index
        if version == self._index.version:
            return self._index
        if not self._lock.acquire(blocking=False):  # another request is opening it: keep serving the old one
            return self._index
        try:
            if version != self._index.version:
                t0 = time.perf_counter()
                try:
                    new = Index.open(self.root, version, encoder=self._index.encoder, verify=True)
                except Exception as exc:  # a damaged version must not take the server down
                    self.reload_error = f"version {version} could not be opened: {exc}"
                    log.warning("not serving %s: %s", version, exc)
                    return self._index
                log.info("serving %s (was %s), opened in %.2f s", version, self._index.version,
                         time.perf_counter() - t0)  # fmt: skip
                self._index = new
                self.reload_error = None
                self.reloads += 1
        finally:
            self._lock.release()
        return self._index
