"""The manifest: what a published index version holds. Written last, so its presence means complete."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from mmkg.atomic import write_bytes

MANIFEST = "manifest.json"
CURRENT = "CURRENT"
FORMAT_VERSION = 1


class EncoderSpec(BaseModel):
    id: str
    backend: str
    model: str
    dim: int
    normalized: bool = True


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

    def write(self, folder: Path) -> None:
        _atomic_write(folder / MANIFEST, self.model_dump_json(indent=2))

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST
        if not path.exists():
            raise FileNotFoundError(
                f"{folder} has no {MANIFEST}: not a published index version (or one still being written)"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(
                f"{path} is damaged ({exc.__class__.__name__}: {exc}); point CURRENT at another version with "
                "`mmkg index rollback VERSION` (`mmkg index versions` lists them), or publish again"
            ) from exc
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{path}: index format {data.get('format_version')}, this mmkg reads {FORMAT_VERSION}")
        return cls.model_validate(data)


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


def current_version(root: Path) -> str:
    path = root / CURRENT
    if not path.exists():
        raise FileNotFoundError(f"no published index at {root} ({CURRENT} missing); materialize retrieval_index first")
    try:
        name = path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        name = "(binary data)"
    return check_version_name(name, str(path))


def list_versions(root: Path) -> list[str]:
    folder = root / "versions"
    return sorted(p.name for p in folder.iterdir() if (p / MANIFEST).exists()) if folder.exists() else []


def open_version(root: Path, version: str | None = None) -> tuple[str, Manifest]:
    """The version's name (the current one by default) and manifest, after the cheap size check.

    What every reader does first (``Index.open``, ``describe``): a bad name, a missing version or a
    missing or truncated file is an error naming it, with the way out (``mmkg index verify`` reads
    every byte).
    """
    from mmkg.index.integrity import check_sizes, damaged_message

    name = check_version_name(version, "the version asked for") if version else current_version(root)
    folder = root / "versions" / name
    if not folder.exists():
        raise FileNotFoundError(f"index version {name} not found under {root}; versions: {list_versions(root)}")
    manifest = Manifest.read(folder)
    if problems := check_sizes(root, manifest):
        raise ValueError(damaged_message(root, name, problems))
    return name, manifest


def describe(root: Path, version: str | None = None) -> dict:
    """Version, creation time, encoder, partitions, counts and size on disk, from the manifest alone.

    What ``mmkg index info`` prints: no vector, graph or model is read, so it answers in well under a
    second however large the index. The files the manifest lists get the same cheap size check as
    ``Index.open`` (a missing or truncated file is a ``ValueError`` with the way out).
    """
    root = Path(root)
    name, manifest = open_version(root, version)
    return {
        "root": str(root),
        "version": name,
        "created_at": manifest.created_at,
        "versions": list_versions(root),
        "encoder": manifest.encoder.id,
        "partitions": sorted(manifest.partitions),
        "counts": manifest.counts,
        "size_bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file()),
    }
