"""Re-indexing after an upload: the server runs ``mmkg index update`` for its corpus and data root itself.

``POST /documents`` and ``DELETE /documents/...`` change a partition folder; without this, only a
running Dagster daemon (its corpus sensor) would notice. ``Reindexer.request()`` starts the update in
a child process (the server imports no Dagster code), one at a time: a request while one runs queues
exactly one more run after it, so a burst of uploads costs at most two updates and the last one sees
every file. The update publishes a new index version, which the server's ``IndexHolder`` opens on the
next request. ``state()`` is what ``GET /index/reindex`` and the page's Index view show: idle, running
or queued, and the last run's start, end, exit code and last log lines (the whole log is in
``<data root>/logs/serve-reindex.log``).
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LOG_TAIL = 12  # lines of the last run's log in the state


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Reindexer:
    """Runs ``command`` (``mmkg index update --corpus ... --data-root ...``) in a child process on request."""

    def __init__(self, command: Sequence[str], log_path: Path, env: dict[str, str] | None = None):
        self.command = list(command)
        self.log_path = Path(log_path)
        self.env = env
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._queued = False
        self._runs = 0
        self._last: dict[str, Any] | None = None  # the last finished run
        self._current: dict[str, Any] | None = None  # the running one

    def request(self, reason: str) -> dict[str, Any]:
        """Start an update now, or queue one after the running one; returns the state."""
        with self._lock:
            if self._proc is not None:
                self._queued = True
            else:
                self._start(reason)
        return self.state()

    def _start(self, reason: str) -> None:  # holding the lock
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        log.write(f"\n== {_now()} {' '.join(self.command)} ({reason})\n".encode())
        log.flush()
        try:
            self._proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                          start_new_session=True)  # fmt: skip
        except OSError as exc:
            log.close()
            self._last = {"reason": reason, "started_at": _now(), "finished_at": _now(), "returncode": None,
                          "error": f"could not start {self.command[0]}: {exc}"}  # fmt: skip
            return
        self._runs += 1
        self._current = {"reason": reason, "started_at": _now(), "t0": time.monotonic()}
        threading.Thread(target=self._wait, args=(self._proc, log), name="mmkg-reindex", daemon=True).start()

    def _wait(self, proc: subprocess.Popen, log: Any) -> None:
        code = proc.wait()
        log.close()
        with self._lock:
            current = self._current or {}
            self._last = {"reason": current.get("reason", ""), "started_at": current.get("started_at"),
                          "finished_at": _now(), "seconds": round(time.monotonic() - current.get("t0", 0.0), 1),
                          "returncode": code}  # fmt: skip
            self._proc, self._current = None, None
            if self._queued:
                self._queued = False
                self._start("files changed while the last update ran")

    def state(self) -> dict[str, Any]:
        """``{"state": "idle" | "running", "queued", "runs", "running": {...} | None, "last": {...} | None,
        "log": path, "tail": [...]}``."""
        with self._lock:
            running = {k: v for k, v in self._current.items() if k != "t0"} if self._current else None
            out = {"state": "running" if self._proc is not None else "idle", "queued": self._queued,
                   "runs": self._runs, "running": running, "last": dict(self._last) if self._last else None,
                   "log": str(self.log_path)}  # fmt: skip
        out["tail"] = _tail(self.log_path, LOG_TAIL)
        return out

    def wait(self, timeout: float) -> bool:
        """Block until no update runs or is queued (tests, shutdown); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._proc is None and not self._queued:
                    return True
            time.sleep(0.2)
        return False


def _tail(path: Path, lines: int) -> list[str]:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 16_384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]
