from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from mmkg.settings import get_settings


@lru_cache(maxsize=4)
def _load(backend: str, model: str, device: str, runtime: str):
    from mmkg.encoders import load_encoder

    return load_encoder(backend, model, device, runtime)


class EncoderResource(ConfigurableResource):
    """The shared embedding space: ``text`` (MiniLM, offline default) or ``clip`` (any dual encoder)."""

    backend: str = Field(default="text", description="text | clip")
    model: str = Field(
        default="",
        description="Model id or local path; empty = the backend's default (for text: MMKG_TEXT_MODEL, else the "
        "bundled MiniLM).",
    )
    device: str = Field(default="auto", description="auto | cpu | cuda")
    runtime: str = Field(
        default=get_settings().text_runtime,
        description="Text backend runtime: auto (onnx-int8 on CPU, torch on CUDA) | torch | onnx | onnx-int8 "
        "(MMKG_TEXT_RUNTIME).",
    )
    batch_size: int = Field(
        default=0, ge=0, description="Texts per encoder batch; 0: by device (256 on CUDA, 64 elsewhere)."
    )
    sentence_vectors: str = Field(
        default=get_settings().sentence_vectors,
        description="separate (a pass per sentence) | chunk_pass (pooled from the chunk's pass; ONNX runtimes "
        "only) (MMKG_SENTENCE_VECTORS).",
    )

    def batch_for(self, enc) -> int:
        """The configured batch size, or ``mmkg.encoders.default_batch_size`` for this encoder's device."""
        from mmkg.encoders import default_batch_size

        return self.batch_size or default_batch_size(enc)

    def get(self, index_root: Path | None = None):
        """The loaded encoder, loaded once per process.

        With ``index_root`` and runtime ``auto``, a text index already published there keeps the runtime
        it was built with: an index built before the ONNX runtime existed stays on torch, so upgrading
        does not make the next publish refuse a changed encoder, and a partition re-embedded after the
        upgrade lands in its index's space. A new index gets ``auto``'s choice (onnx-int8 on a CPU).
        """
        runtime = self.runtime
        if index_root is not None and runtime.strip().lower() == "auto" and self.backend == "text":
            from mmkg.index.manifest import published_encoder

            spec = published_encoder(Path(index_root))
            if spec is not None and spec.backend == "text":
                runtime = spec.runtime
        return _load(self.backend, self.model_name(), self.device, runtime)

    def model_name(self) -> str:
        """The configured model, else for the text backend ``MMKG_TEXT_MODEL`` (empty: the bundled default)."""
        if self.model or self.backend != "text":
            return self.model
        return get_settings().text_model
