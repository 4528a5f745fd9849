"""Model files on disk: where an installed wheel put them, their SHA-256, and the cache of files made from them.

The text encoder's ONNX export (``mmkg.onnx_encoder``), the reading model converted from its GGUF file
(``mmkg.llm.likelihood``) and Whisper base joined from its two wheels (``mmkg.ingest.whisper_model``) all live under
one cache root, ``MMKG_MODEL_CACHE`` (default ``~/.cache/mmkg/models``). A folder made there is written under a
temporary name in the same folder and renamed into place (``new_folder``), so a crash mid-way never leaves a
half-written model where a later load would take it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path


def cache_root() -> Path:
    """Where models made locally are kept: ``MMKG_MODEL_CACHE``, else ``~/.cache/mmkg/models``."""
    configured = os.environ.get("MMKG_MODEL_CACHE", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "mmkg" / "models"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def installed_path(distribution: str, relative: str) -> Path | None:
    """Where the installed ``distribution`` put ``relative`` (a file or folder), from its file list without
    importing it; ``None`` when the distribution is not installed or lacks it."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(relative)))
    return path if path.exists() else None


@contextlib.contextmanager
def new_folder(target: Path, done: str) -> Iterator[Path]:
    """A temporary folder beside ``target`` to write into; renamed to ``target`` when the block ends without an
    error, removed otherwise. ``done`` is the file whose presence makes a folder complete: a ``target`` holding it
    (another process finished first) is kept, one without it (left by a crash before this scheme) is replaced."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        yield tmp
        if not (target / done).is_file():
            if target.exists():
                shutil.rmtree(target)
            tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
