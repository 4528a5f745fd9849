from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from mmkg.ingest import ImageStore
from mmkg.settings import get_settings


class StorageResource(ConfigurableResource):
    """Root of everything the pipeline writes besides tables: image blobs, overlays, indexes."""

    data_root: str = Field(default=str(get_settings().data_root), description="Data root (MMKG_DATA_ROOT).")
    keep_versions: int = Field(
        default=get_settings().keep_versions,
        description="Index versions kept after each publish, the current one included; 0 keeps all "
        "(MMKG_KEEP_VERSIONS). Older version folders are removed after each publish (mmkg index gc).",
    )

    @property
    def path(self) -> Path:
        return Path(self.data_root)

    def image_store(self) -> ImageStore:
        return ImageStore(self.path)
