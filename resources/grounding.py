from __future__ import annotations

import os
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field, field_validator

from mmkg.vision.base import Grounder

BACKENDS = {"ocr", "ultralytics"}


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

    @field_validator("backends")
    @classmethod
    def _known_backends(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - BACKENDS)
        if unknown or not value:
            raise ValueError(f"grounding backends must be a non-empty list drawn from {sorted(BACKENDS)}; got {value}")
        return value

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        if value not in {"auto", "cpu", "cuda"} and not value.startswith("cuda:"):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N; got {value!r}")
        return value

    def grounders(self, data_root: Path, ocr: Grounder | None = None) -> list[Grounder]:
        """The configured backends; pass an existing OCR grounder to share its engine and cache."""
        out: list[Grounder] = []
        for name in self.backends:
            if name == "ocr":
                out.append(ocr or self.ocr_grounder(data_root))
            elif name == "ultralytics":
                if not self.ultralytics_model:
                    raise ValueError(
                        "grounding backend 'ultralytics' needs `ultralytics_model`: a local .pt checkpoint path "
                        "(e.g. yoloe-11s-seg.pt, yolov8n-seg.pt) or a model yaml such as yolov8n-seg.yaml"
                    )
                os.environ.setdefault("YOLO_OFFLINE", "1")
                cfg = Path(self.yolo_config_dir or data_root / "yolo")
                cfg.mkdir(parents=True, exist_ok=True)
                os.environ.setdefault("YOLO_CONFIG_DIR", str(cfg))
                from mmkg.vision.detector import UltralyticsGrounder

                out.append(
                    UltralyticsGrounder(
                        self.ultralytics_model,
                        device=self.device,
                        batch_size=self.batch_size,
                        imgsz=self.ultralytics_imgsz,
                        conf=self.ultralytics_conf,
                    )
                )
        return out

    def ocr_grounder(self, data_root: Path):
        from mmkg.vision.ocr import OcrCache, OcrEngine, OcrGrounder

        return OcrGrounder(OcrEngine(max_side=self.ocr_max_side), OcrCache(data_root / "blobs" / "ocr"))
