from __future__ import annotations

from functools import lru_cache

from dagster import ConfigurableResource
from pydantic import Field


@lru_cache(maxsize=4)
def _load(backend: str, model: str, device: str):
    from mmkg.encoders import load_encoder

    return load_encoder(backend, model, device)


class EncoderResource(ConfigurableResource):
    """The shared embedding space: ``text`` (MiniLM, offline default) or ``clip`` (any dual encoder)."""

    backend: str = Field(default="text", description="text | clip")
    model: str = Field(default="", description="Model id or local path; empty = the backend's default.")
    device: str = Field(default="auto", description="auto | cpu | cuda")
    batch_size: int = Field(default=64, ge=1)

    def get(self):
        """The loaded encoder, loaded once per process."""
        return _load(self.backend, self.model, self.device)
