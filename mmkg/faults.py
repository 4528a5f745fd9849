"""Named fault-injection points, so what a crash at each step of a publish leaves behind stays tested.

Set ``MMKG_FAILPOINTS="<point>=kill[,<point>=kill...]"`` and the process SIGKILLs itself when it
reaches a named point (no cleanup, no ``finally``: what a power cut or the OOM killer leaves).
``python -m mmkg.faults`` lists the points, one per line. Unset, a point costs one environment lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "MMKG_FAILPOINTS"

#: the LanceDB tables a publish writes, in order (mmkg.index.units.ID_COLUMN)
TABLES = ("chunks", "sentences", "images", "objects", "documents", "document_entities", "relations")

_LANCE: dict[str, str] = {}
for _t in TABLES:
    _LANCE[f"publish.lance.{_t}.restored"] = f"LanceDB table {_t} restored to the pinned version, not yet changed"
    _LANCE[f"publish.lance.{_t}.changed"] = f"LanceDB table {_t} changed (rows deleted and added), not yet indexed"
    _LANCE[f"publish.lance.{_t}.compacted"] = f"LanceDB table {_t} compacted (when due), not yet pinned"
POINTS: dict[str, str] = {
    "publish.locked": "the lock is held and leftovers removed; nothing written yet",
    **_LANCE,
    "publish.files.graph": "the version folder holds the graph only",
    "publish.files.payload": "graph and payload tables written; BM25, incidence and manifest not yet",
    "publish.files.written": "every file of the version written except the manifest",
    "publish.manifest.written": "the manifest written; the version not yet checked, CURRENT not moved",
    "publish.verified": "the new version opened and queried; CURRENT not yet moved",
    "publish.current.moved": "CURRENT moved to the new version; the lock not yet released",
    "lance.optimize.listed": "a table's files listed before LanceDB compacts or prunes it; LanceDB not yet run",
    "lance.optimize.done": "LanceDB compacted or pruned a table; the files it removed not yet logged",
    "gc.folders.removed": "retention removed version folders; LanceDB history not yet pruned",
}


def failpoint(name: str) -> None:
    """SIGKILL this process when ``name`` is armed in ``MMKG_FAILPOINTS``."""
    armed = os.environ.get(ENV)
    if not armed:
        return
    if name not in POINTS:
        raise ValueError(f"unknown failpoint {name!r}; python -m mmkg.faults lists them")
    for item in armed.split(","):
        point, _, action = item.strip().partition("=")
        if point == name and action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)


def armed_points() -> list[str]:
    """The points named in ``MMKG_FAILPOINTS``; unknown names are an error (a typo would test nothing)."""
    out = []
    for item in filter(None, (os.environ.get(ENV) or "").split(",")):
        point, _, action = item.strip().partition("=")
        if point not in POINTS or action != "kill":
            raise ValueError(f"{ENV}: {item!r} is not <point>=kill with a point of python -m mmkg.faults")
        out.append(point)
    return out


if __name__ == "__main__":
    for point in POINTS:
        print(point)
