"""Content fingerprints of corpus partitions: what decides whether a partition must be re-indexed.

A partition's fingerprint is a digest over its files (relative path, size and either the bytes or
the modification time), over exactly the files ``ingest_partition`` reads. The corpus sensor keeps
the fingerprints it saw in its cursor, the ingest asset records the one it read, and the re-index
schedule compares the two: equal fingerprints mean no model work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mmkg.ingest.files import list_partitions, partition_files

#: the ``documents`` materialization's metadata key for the fingerprint it was read from
FINGERPRINT_KEY = "corpus_fingerprint"
Mode = Literal["content", "stat"]
MODES: tuple[Mode, ...] = ("content", "stat")
_BLOCK = 1 << 20


def partition_fingerprint(partition_dir: Path | str, mode: Mode = "content") -> str:
    """Digest of a partition folder's files.

    ``content`` hashes every byte (a ``touch`` or a fresh copy changes nothing); ``stat`` uses size
    and ``mtime_ns`` only, for corpora too large to read on every sensor tick.
    """
    if mode not in MODES:
        raise ValueError(f"fingerprint mode {mode!r} is not one of {', '.join(MODES)}")
    pdir = Path(partition_dir)
    if not pdir.is_dir():
        raise FileNotFoundError(f"partition folder {pdir} does not exist or is not a folder")
    h = hashlib.blake2b(digest_size=16)
    h.update(mode.encode())
    for path in partition_files(pdir):
        rel = path.relative_to(pdir).as_posix()
        try:
            st = path.stat()
            if mode == "content":
                with path.open("rb") as f:
                    detail = hashlib.file_digest(f, lambda: hashlib.blake2b(digest_size=16)).hexdigest()
            else:
                detail = str(st.st_mtime_ns)
            entry = f"{rel}\x1f{st.st_size}\x1f{detail}"
        except OSError as exc:
            # vanished or unreadable mid-scan: still a fingerprint, and it differs once the file is readable
            entry = f"{rel}\x1funreadable:{type(exc).__name__}"
        h.update(entry.encode("utf-8", "surrogateescape"))
        h.update(b"\x1e")
    return h.hexdigest()


def corpus_fingerprints(corpus_root: Path | str, mode: Mode = "content") -> dict[str, str]:
    """``{partition: fingerprint}`` for every partition folder of the corpus root."""
    root = Path(corpus_root)
    return {p: partition_fingerprint(root / p, mode) for p in list_partitions(root)}


@dataclass(frozen=True)
class CorpusChanges:
    """What changed between two ``{partition: fingerprint}`` snapshots."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def diff_fingerprints(before: Mapping[str, str], after: Mapping[str, str]) -> CorpusChanges:
    """Partitions added, changed (different fingerprint) and removed going from ``before`` to ``after``."""
    return CorpusChanges(
        added=sorted(set(after) - set(before)),
        changed=sorted(p for p in set(after) & set(before) if after[p] != before[p]),
        removed=sorted(set(before) - set(after)),
    )
