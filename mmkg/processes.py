"""Processes and process groups on Linux: whether one still runs, who is in a group, and stopping groups in steps.

Used by the commands that start process groups of their own (``mmkg ui``'s dagster dev, ``mmkg deploy``'s four
services) and by the build's check for runs whose process is gone. Hand-written on ``os`` and ``/proc``: the
standard library has no process-group view, and psutil would be a dependency for three short functions.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable, Sequence
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, ... (None when gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie, ended but not reaped, is no running process).
    0 and negative numbers name no process (``os.kill`` would take them for this process's group)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    fields = _stat(pid)
    return fields is None or fields[0] != "Z"


def parent(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def group_members(pgid: int) -> list[int]:
    """The running (not zombie) processes of process group ``pgid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def group_alive(pgid: int) -> bool:
    if pgid <= 0:  # killpg(0, ...) would mean this process's own group
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return bool(group_members(pgid))


def stop_groups(pgids: Iterable[int], steps: Sequence[tuple[signal.Signals, float]]) -> dict[int, str]:
    """Send every group the first step's signal, wait up to its seconds for all of them to be gone, then send what
    is left the next step's signal, and so on. Returns each group's outcome: "stopped" (gone after the first
    signal), "killed" (after a later one), "left" (still there after the last step) or "was not running" (also a
    number that names no group: 0, recorded for a process that never started)."""
    outcome: dict[int, str] = {p: "was not running" for p in pgids if p <= 0}  # never this process's own group
    left = [p for p in dict.fromkeys(pgids) if p > 0]
    for i, (sig, wait_s) in enumerate(steps):
        for pgid in list(left):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                outcome[pgid] = "was not running" if i == 0 else "killed"
                left.remove(pgid)
        deadline = time.monotonic() + wait_s
        while left and time.monotonic() < deadline:
            for pgid in [p for p in left if not group_alive(p)]:
                outcome[pgid] = "stopped" if i == 0 else "killed"
                left.remove(pgid)
            time.sleep(0.05)
        if not left:
            break
    outcome.update(dict.fromkeys(left, "left"))
    return outcome
