"""Putting uploaded files into a corpus partition folder, and removing them, confined to the corpus root.

The server's re-indexer (``mmkg.api.reindex``) or the corpus sensor notices the changed folder fingerprint
and re-indexes the partition; nothing here touches tables or the index. Names are reduced to a safe file
name (no folders, no leading dots, letters, digits, ``._-`` and spaces), types are the ingest's, sizes are
bounded, and every path is resolved and checked to lie inside the corpus root (a symlinked partition
folder pointing elsewhere is refused).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from mmkg.atomic import write_bytes
from mmkg.ingest.fingerprint import partition_fingerprint
from mmkg.ingest.partition import supported_extensions

PARTITION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_UNSAFE = re.compile(r"[^\w.\- ]+", re.UNICODE)
MAX_NAME = 128

#: what picks an upload up: the Dagster sensor that compares partition fingerprints, and its job
PICKUP = (
    "the corpus sensor (corpus_partition_sensor) starts a run of job index_partition for partition {p!r} at its "
    "next tick, since the folder's fingerprint changed; index_publish_sensor then publishes the index"
)


#: ... when the server re-indexes itself (``mmkg.api.reindex``)
BY_SERVER = ("this server runs `mmkg index update` now (GET /index/reindex shows it); the new index version is "
             "served once it is published")


class DocumentError(ValueError):
    """A name, type, size or path the corpus does not accept; the message says which and why."""


@dataclass(frozen=True)
class CorpusFolder:
    root: Path
    max_bytes: int = 50 * 1024 * 1024

    def partition_dir(self, partition: str, create: bool = False) -> Path:
        if not PARTITION_NAME.match(partition):
            raise DocumentError(
                f"partition {partition!r} is not a folder name: use 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        root = self.root.resolve()
        folder = root / partition
        if folder.exists() and not folder.resolve().is_relative_to(root):
            raise DocumentError(f"partition folder {partition!r} leads outside the corpus root")
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        elif not folder.is_dir():
            raise FileNotFoundError(f"no partition {partition!r} in the corpus")
        return folder

    @staticmethod
    def safe_name(filename: str) -> str:
        """The last path component, NFC, with unsafe characters replaced; refuses empty and unsupported names."""
        name = unicodedata.normalize("NFC", filename or "").replace("\\", "/").split("/")[-1]
        name = _UNSAFE.sub("_", name).strip().lstrip(".")
        if len(name) > MAX_NAME:
            stem, dot, ext = name.rpartition(".")
            name = (stem[: MAX_NAME - len(ext) - 1] + dot + ext) if dot else name[:MAX_NAME]
        if not name or name in {".", ".."}:
            raise DocumentError(f"file name {filename!r} has nothing usable left after removing unsafe characters")
        ext = Path(name).suffix.lower()
        supported = supported_extensions()
        if ext not in supported:
            raise DocumentError(f"file type {ext or '(none)'!r} of {filename!r} is not indexed; supported: "
                                f"{', '.join(sorted(supported))}")  # fmt: skip
        return name

    def put(self, partition: str, filename: str, data: bytes, overwrite: bool = False) -> dict:
        """Write one file atomically into the partition folder (made when new)."""
        name = self.safe_name(filename)
        if not data:
            raise DocumentError(f"{filename!r} is empty (0 bytes)")
        if len(data) > self.max_bytes:
            raise DocumentError(f"{filename!r} is {len(data):,} bytes, over the upload limit of {self.max_bytes:,}")
        folder = self.partition_dir(partition, create=True)
        target = folder / name
        if target.exists() and not overwrite:
            raise DocumentError(f"{partition}/{name} exists; send overwrite=true to replace it")
        write_bytes(target, data)
        return {"name": name, "path": f"{partition}/{name}", "bytes": len(data)}

    def delete(self, partition: str, relpath: str) -> dict:
        """Remove one file of a partition (a path inside it; folders are not removed)."""
        folder = self.partition_dir(partition)
        parts = [p for p in relpath.replace("\\", "/").split("/") if p]
        if not parts or any(p in {".", ".."} for p in parts):
            raise DocumentError(f"path {relpath!r} must name a file inside the partition, without '..'")
        target = folder.joinpath(*parts)
        resolved = target.resolve()
        if not resolved.is_relative_to(folder.resolve()):
            raise DocumentError(f"path {relpath!r} leads outside partition {partition!r}")
        if not target.is_file():
            raise FileNotFoundError(f"no file {partition}/{'/'.join(parts)} in the corpus")
        target.unlink()
        # folders the delete left empty go too, the partition's own included: an empty partition folder would
        # be a partition "never indexed" (mmkg index status), and the update removes a folder's partition
        emptied = False
        here = target.parent
        while here.is_relative_to(folder) and not any(here.iterdir()):
            here.rmdir()
            emptied = here == folder
            if emptied:
                break
            here = here.parent
        return {"path": f"{partition}/{'/'.join(parts)}", "partition_removed": emptied}

    def pickup(self, partition: str, by_server: bool = False) -> dict:
        """What will re-index the partition (this server's update, or the corpus sensor), and the folder's
        fingerprint that the update compares."""
        folder = self.root / partition
        fingerprint = partition_fingerprint(folder) if folder.is_dir() else None
        how = BY_SERVER if by_server else PICKUP.format(p=partition)
        return {"partition": partition, "fingerprint": fingerprint, "picked_up_by": how}
