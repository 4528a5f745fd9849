"""Benchmark: the grounding detector (``UltralyticsGrounder``, the ``ground_images`` step's model) per device.

    python benchmarks/grounding_device.py --devices cpu,cuda --images 128 --batch-sizes 8,32

The sample corpus's photographs, repeated to ``--images`` tasks, each with two entity prompts, go through
``UltralyticsGrounder.ground`` as the asset calls it. ``--model`` is a checkpoint or a model yaml; the
default, ``yolov8n-seg.yaml``, is the architecture with random weights (nothing can be downloaded here):
speed depends on the architecture and the input size, not on the weights, but random weights find
boxes everywhere at ``--conf 1e-6``, so the mask step does more work than trained weights would, and
at the default 0.25 almost none. Printed per device and batch size: images per second after one untimed
warm-up batch, and the speed-up over the first row.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from mmkg.vision.base import EntityPrompt, GroundingTask
from mmkg.vision.detector import UltralyticsGrounder, import_ultralytics

ROOT = Path(__file__).resolve().parent.parent
console = Console(width=150)


def main(
    devices: Annotated[str, typer.Option(help="Comma-separated torch devices.")] = "cpu,cuda",
    images: Annotated[int, typer.Option(help="Tasks to ground (the sample photographs, repeated).")] = 128,
    batch_sizes: Annotated[str, typer.Option(help="Comma-separated detector batch sizes.")] = "8,32",
    model: Annotated[str, typer.Option(help="Checkpoint or model yaml.")] = "yolov8n-seg.yaml",
    imgsz: Annotated[int, typer.Option(help="Detector input size.")] = 640,
    conf: Annotated[float, typer.Option(help="Detector confidence threshold.")] = 0.25,
) -> None:
    import torch

    if model.endswith(".yaml"):  # random weights, given COCO's class names as a trained checkpoint has
        ultralytics = import_ultralytics()
        yolo = ultralytics.YOLO(model)
        coco = ultralytics.utils.YAML.load(ultralytics.utils.ROOT / "cfg/datasets/coco8.yaml")["names"]
        yolo.model.names = dict(enumerate(coco.values()))
        model = str(Path(tempfile.mkdtemp()) / Path(model).with_suffix(".pt").name)
        yolo.save(model)
    photos = sorted((ROOT / "sample_corpus").glob("*/images/*.jpg"))
    prompts = [EntityPrompt("person", "person", "PERSON"), EntityPrompt("horse", "horse")]
    tasks = [GroundingTask(f"img{i}", p, prompts) for i, p in zip(range(images), itertools.cycle(photos))]
    console.print(
        f"{len(tasks)} tasks from {len(photos)} photographs; model {model}, imgsz {imgsz}, conf {conf}; "
        f"torch {torch.__version__}, {os.cpu_count()} CPU cores, threads {torch.get_num_threads()}"
    )
    rows = []
    for device, batch in itertools.product(devices.split(","), [int(b) for b in batch_sizes.split(",")]):
        torch.manual_seed(0)
        g = UltralyticsGrounder(model, device=device, batch_size=batch, imgsz=imgsz, conf=conf)
        list(g.ground(tasks[:batch], 0.0))  # warm-up: model load, kernels
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        outcomes = list(g.ground(tasks, 0.0))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        wall = time.perf_counter() - t
        errors = sum(o.error is not None for o in outcomes)
        found = sum(len(o.detections) for o in outcomes)
        rows.append((device, batch, wall, len(tasks) / wall, errors, found))
    table = Table(title="grounding detector per device")
    for col in ("device", "batch", "seconds", "images/s", "× first", "errors", "objects"):
        table.add_column(col, justify="right")
    for device, batch, wall, rate, errors, found in rows:
        table.add_row(device, str(batch), f"{wall:.2f}", f"{rate:.1f}", f"{rate / rows[0][3]:.2f}", str(errors),
                      str(found))  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    typer.run(main)
