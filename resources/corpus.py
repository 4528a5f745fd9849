from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from mmkg.ingest import Limits, list_partitions
from mmkg.settings import get_settings

_S = get_settings()


class CorpusResource(ConfigurableResource):
    """The corpus root (one sub-folder per partition) and the limits applied to its files."""

    root: str = Field(default=str(_S.corpus_root), description="Corpus root folder (MMKG_CORPUS_ROOT).")
    max_image_pixels: int = Field(default=_S.max_image_pixels, description="Reject images with more pixels.")
    min_image_side: int = Field(default=_S.min_image_side, description="Reject images with a shorter side.")
    max_file_bytes: int = Field(default=_S.max_file_bytes, description="Reject larger source files.")

    @property
    def path(self) -> Path:
        return Path(self.root)

    def limits(self) -> Limits:
        return Limits(
            max_image_pixels=self.max_image_pixels,
            min_image_side=self.min_image_side,
            max_file_bytes=self.max_file_bytes,
        )

    def partitions(self) -> list[str]:
        return list_partitions(self.path)
