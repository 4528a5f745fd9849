"""The manifest: what a published index version holds. Written last, so its presence means complete."""

from __future__ import annotations

import json
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

    def write(self, folder: Path) -> None:
        _atomic_write(folder / MANIFEST, self.model_dump_json(indent=2))

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST
        if not path.exists():
            raise FileNotFoundError(
                f"{folder} has no {MANIFEST}: not a published index version (or one still being written)"
            )
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{path}: index format {data.get('format_version')}, this mmkg reads {FORMAT_VERSION}")
        return cls.model_validate(data)


def _atomic_write(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"), fsync=True)  # on disk before CURRENT can point at it


def set_current(root: Path, version: str) -> None:
    _atomic_write(root / CURRENT, version + "\n")


def current_version(root: Path) -> str:
    path = root / CURRENT
    if not path.exists():
        raise FileNotFoundError(f"no published index at {root} ({CURRENT} missing); materialize retrieval_index first")
    return path.read_text(encoding="utf-8").strip()


def list_versions(root: Path) -> list[str]:
    folder = root / "versions"
    return sorted(p.name for p in folder.iterdir() if (p / MANIFEST).exists()) if folder.exists() else []
