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
