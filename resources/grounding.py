from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import ConfigurableResource
from pydantic import Field, field_validator

from mmkg.vision.base import Grounder
from mmkg.vision.grounders import GROUNDERS, build_grounders


class GroundingResource(ConfigurableResource):
    """Which grounding backends run, on which device, with which threshold τ.

    ``ocr`` (rapidocr, offline) is the default; add ``ultralytics`` with a checkpoint path or model
    name in ``ultralytics_model`` to ground objects with YOLO-seg, YOLOE, YOLO-World or SAM 3.
    """

    backends: list[str] = Field(default=["ocr"], description="Backends to run, in order: ocr, ultralytics.")
    device: str = Field(default="auto", description="auto | cpu | cuda (auto = cuda when available).")
    batch_size: int = Field(default=8, ge=1, description="Images per detector batch.")
    tau: float = Field(default=0.5, ge=0.0, le=1.0, description="Keep objects with σ > τ (MG2-RAG: 0.5).")
    ultralytics_model: str = Field(
        default="", description="Checkpoint path (.pt) or model name/yaml for the ultralytics backend."
    )
    ultralytics_conf: float = Field(default=0.25, ge=0.0, le=1.0, description="Detector confidence floor.")
    ultralytics_imgsz: int = Field(default=640, ge=32)
    ocr_max_side: int = Field(default=1600, ge=64, description="OCR downsizes larger images to this side.")
    yolo_config_dir: str = Field(default="", description="Writable YOLO_CONFIG_DIR (default: <data_root>/yolo).")
    backend_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Options of a backend by name, over the settings above (plugins' own)."
    )

    @field_validator("backends")
    @classmethod
    def _known_backends(cls, value: list[str]) -> list[str]:
        known = []
        for name in value:
            try:
                GROUNDERS.get(name)  # installed plugins are looked up on a miss
            except ValueError:
                continue
            known.append(name)
        if len(known) != len(value) or not value:
            raise ValueError(f"grounding backends must be a non-empty list drawn from {GROUNDERS.names()}; got {value}")
        return value

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        if value not in {"auto", "cpu", "cuda"} and not value.startswith("cuda:"):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N; got {value!r}")
        return value

    def grounders(self, data_root: Path, ocr: Grounder | None = None) -> list[Grounder]:
        """The configured backends (``mmkg.vision.grounders.GROUNDERS``); pass an existing OCR grounder to share
        its engine and cache."""
        return build_grounders(self.backends, self._options(), data_root, self.backend_options,
                               ready={"ocr": ocr} if ocr is not None else None)  # fmt: skip

    def ocr_grounder(self, data_root: Path) -> Grounder:
        return build_grounders(["ocr"], self._options(), data_root, self.backend_options)[0]

    def _options(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if k not in ("backends", "backend_options")}
