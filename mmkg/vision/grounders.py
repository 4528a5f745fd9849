"""The grounding backends by name (``GROUNDERS``): a factory ``(options, data_root) -> Grounder``.

``options`` holds the grounding settings every backend may read (``device``, ``batch_size``, ``tau`` and
the built-in backends' own: ``ultralytics_model``, ``ultralytics_conf``, ``ultralytics_imgsz``,
``ocr_max_side``, ``yolo_config_dir``) with the backend's own ``backend_options`` entry laid over them.
Registering here is cheap: each factory imports its model library only when it builds the grounder.
Entry points of the group ``mmkg.grounders`` add backends (``mmkg.plugins``); ``docs/extending.md`` adds
one in a file of its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mmkg.plugins import Registry
from mmkg.vision.base import Grounder

GROUNDERS: Registry[Callable[[Mapping[str, Any], Path], Grounder]] = Registry("grounding backend", "mmkg.grounders")


@GROUNDERS.register("ocr", help="text in pictures as objects (rapidocr, ONNX, offline); the default")
def ocr_grounder(options: Mapping[str, Any], data_root: Path) -> Grounder:
    from mmkg.vision.ocr import OcrCache, OcrEngine, OcrGrounder

    return OcrGrounder(OcrEngine(max_side=int(options.get("ocr_max_side", 1600))),
                       OcrCache(Path(data_root) / "blobs" / "ocr"))  # fmt: skip


@GROUNDERS.register("ultralytics", help="YOLO-seg, YOLOE, YOLO-World or SAM 3 from a local checkpoint")
def ultralytics_grounder(options: Mapping[str, Any], data_root: Path) -> Grounder:
    model = str(options.get("ultralytics_model") or "")
    if not model:
        raise ValueError(
            "grounding backend 'ultralytics' needs `ultralytics_model`: a local .pt checkpoint path "
            "(e.g. yoloe-11s-seg.pt, yolov8n-seg.pt) or a model yaml such as yolov8n-seg.yaml"
        )
    os.environ.setdefault("YOLO_OFFLINE", "1")
    cfg = Path(options.get("yolo_config_dir") or Path(data_root) / "yolo")
    cfg.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("YOLO_CONFIG_DIR", str(cfg))
    from mmkg.vision.detector import UltralyticsGrounder

    return UltralyticsGrounder(model, device=str(options.get("device", "auto")),
                               batch_size=int(options.get("batch_size", 8)),
                               imgsz=int(options.get("ultralytics_imgsz", 640)),
                               conf=float(options.get("ultralytics_conf", 0.25)))  # fmt: skip


def build_grounders(names: list[str], options: Mapping[str, Any], data_root: Path,
                    per_backend: Mapping[str, Mapping[str, Any]] | None = None,
                    ready: Mapping[str, Grounder] | None = None) -> list[Grounder]:  # fmt: skip
    """The grounders ``names`` asks for, in order; ``ready`` ones are used as they are (an OCR grounder whose
    engine and cache another step already holds)."""
    out = []
    for name in names:
        if ready and name in ready:
            out.append(ready[name])
            continue
        own = {**options, **((per_backend or {}).get(name) or {})}
        out.append(GROUNDERS.get(name)(own, Path(data_root)))
    return out
