"""The manifest: what a published index version holds. Written last, so its presence means complete."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from mmkg.atomic import write_bytes

MANIFEST = "manifest.json"
CURRENT = "CURRENT"
LEXICAL_DIR = "bm25"  # the version's BM25 chunk index (mmkg.lexical), a folder of the version
FORMAT_VERSION = 1


class EncoderSpec(BaseModel):
    id: str
    backend: str
    model: str
    dim: int
    normalized: bool = True
    runtime: str = "torch"  # what computed the vectors (manifests written before runtimes: torch)

    @classmethod
    def from_info(cls, info: Any) -> EncoderSpec:
        """The spec of a loaded encoder (its ``info``), as a manifest records it."""
        return cls(id=info.id(), backend=info.backend, model=info.model, dim=info.dim, normalized=info.normalized,
                   runtime=info.runtime)  # fmt: skip


class Manifest(BaseModel):
    format_version: int = FORMAT_VERSION
    version: str
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    encoder: EncoderSpec
    partitions: dict[str, str]  # partition -> content fingerprint of what was published for it
    graph_fingerprint: str
    lance_versions: dict[str, int]  # LanceDB table -> table version this index pins
    counts: dict[str, int]
    ann_indexed: list[str] = Field(default_factory=list)  # LanceDB tables searched through their ANN index
    # every file the version reads, relative to the index root -> [size in bytes, blake2b hex digest];
    # versions published before checksums have none (verify says so)
    files: dict[str, tuple[int, str]] = Field(default_factory=dict)
    # blake2b of every other field (canonical JSON): an edited or damaged manifest is caught on read;
    # empty in manifests written before it
    checksum: str = ""

    def write(self, folder: Path) -> None:
        data = json.loads(self.model_dump_json())
        self.checksum = _self_digest(data)
        _atomic_write(folder / MANIFEST, self.model_dump_json(indent=2))

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST
        if not path.exists():
            raise FileNotFoundError(
                f"{folder} has no {MANIFEST}: not a published index version (or one still being written); "
                "point CURRENT at a published one with `mmkg index rollback VERSION` (`mmkg index versions` lists "
                "them), or publish again"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(_damaged(path, f"{exc.__class__.__name__}: {exc}")) from exc
        if not isinstance(data, dict):
            raise ValueError(_damaged(path, f"it holds a JSON {type(data).__name__}, not an object"))
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{path}: index format {data.get('format_version')}, this mmkg reads {FORMAT_VERSION}")
        if data.get("checksum") and data["checksum"] != _self_digest(data):
            raise ValueError(_damaged(path, "its content does not match its checksum: it was edited or damaged"))
        try:
            manifest = cls.model_validate(data)
        except ValidationError as exc:
            problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            raise ValueError(_damaged(path, problem)) from None
        return manifest


def _self_digest(data: dict) -> str:
    body = {k: v for k, v in data.items() if k != "checksum"}
    return hashlib.blake2b(json.dumps(body, sort_keys=True, separators=(",", ":")).encode(), digest_size=16).hexdigest()


def _damaged(path: Path, problem: str) -> str:
    return (f"{path} is damaged ({problem}); point CURRENT at another version with "
            "`mmkg index rollback VERSION` (`mmkg index versions` lists them), or publish again")  # fmt: skip


def _atomic_write(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"), fsync=True)  # on disk before CURRENT can point at it


def set_current(root: Path, version: str) -> None:
    _atomic_write(root / CURRENT, version + "\n")


_VERSION_NAME = re.compile(r"v[0-9A-Za-z_.-]+")


def check_version_name(name: str, where: str) -> str:
    """A version is a folder name under ``versions/``: never a path, so nothing outside the root is followed."""
    if not _VERSION_NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError(
            f"{where} holds {name[:80]!r}, which is not a version name; list the versions with "
            "`mmkg index versions` and point CURRENT at one with `mmkg index rollback VERSION`"
        )
    return name


def published_encoder(root: Path) -> EncoderSpec | None:
    """The encoder of the version ``CURRENT`` names, or None when nothing readable is published there."""
    try:
        return Manifest.read(root / "versions" / current_version(root)).encoder
    except (OSError, ValueError):
        return None


def current_version(root: Path) -> str:
    path = root / CURRENT
    if not path.exists():
        if versions := list_versions(root):
            raise FileNotFoundError(
                f"{path} is missing, but {len(versions)} version(s) are published under {root / 'versions'}; "
                f"point CURRENT at one with `mmkg index rollback VERSION` (the newest: {versions[-1]}; "
                "`mmkg index versions` lists them), or publish again"
            )
        raise FileNotFoundError(f"no published index at {root} ({CURRENT} missing): build one with `mmkg index "
                                f"build` (or materialize retrieval_index in Dagster)")
    try:
        name = path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        name = "(binary data)"
    return check_version_name(name, str(path))


def list_versions(root: Path) -> list[str]:
    folder = root / "versions"
    return sorted(p.name for p in folder.iterdir() if (p / MANIFEST).exists()) if folder.exists() else []


def changed_partitions(root: Path, version: str) -> set[str] | None:
    """Partitions whose published content in ``version`` differs from the version published just before
    it (new partitions included); None when there is no earlier version, or it cannot be read."""
    earlier = [v for v in list_versions(root) if v < version]
    if not earlier:
        return None
    try:
        before = Manifest.read(root / "versions" / earlier[-1]).partitions
        now = Manifest.read(root / "versions" / version).partitions
    except (OSError, ValueError):
        return None
    return {p for p, fingerprint in now.items() if before.get(p) != fingerprint}
