"""Benchmark: grounded objects per backend and OCR speed on a corpus, through the Dagster assets.

    python benchmarks/grounding_objects.py --corpus sample_corpus
    python benchmarks/grounding_objects.py --pdfs ../shared/datasets/mmlongbench-dev/documents

``--pdfs`` builds a corpus with one partition per PDF. Prints, per partition and in total: images,
OCR lines, images/s of the OCR step, objects per backend and per entity label, and failures.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import PeakMemory

console = Console()


def pdf_corpus(pdfs: Path, root: Path) -> Path:
    for pdf in sorted(pdfs.glob("*.pdf")):
        key = re.sub(r"[^A-Za-z0-9._-]+", "_", pdf.stem)[:60]
        (root / key).mkdir(parents=True)
        shutil.copy(pdf, root / key / pdf.name)
    return root


def main(
    corpus: Annotated[Path | None, typer.Option(help="Corpus root (one folder per partition).")] = None,
    pdfs: Annotated[Path | None, typer.Option(help="Folder of PDFs: one partition per PDF.")] = None,
    backends: Annotated[str, typer.Option(help="Comma-separated grounding backends.")] = "ocr",
    ultralytics_model: Annotated[str, typer.Option(help="Checkpoint for the ultralytics backend.")] = "",
    work_dir: Annotated[Path | None, typer.Option(help="Output folder (default: temp).")] = None,
) -> None:
    from dagster import DagsterEventType, DagsterInstance, materialize

    from assets import graph_inputs, ingest, text, vision
    from mmkg.ingest import list_partitions
    from pipelines.resources import default_resources
    from resources import GroundingResource

    work = Path(work_dir or tempfile.mkdtemp(prefix="mmkg-ground-"))
    if pdfs is not None:
        root = pdf_corpus(pdfs, work / "corpus")
    elif corpus is not None:
        root = corpus
    else:
        raise typer.BadParameter("pass --corpus or --pdfs")
    keys = list_partitions(root)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("corpus", keys)
    grounding = GroundingResource(backends=backends.split(","), ultralytics_model=ultralytics_model)
    resources = default_resources(root, work / "data", grounding=grounding)
    assets = [ingest.ingest, text.chunks, text.parse, text.entities, vision.ground_images, graph_inputs.build_nodes]
    ground_seconds = 0.0
    t0 = time.perf_counter()
    with PeakMemory() as mem:
        for key in keys:
            result = materialize(assets, partition_key=key, instance=instance, resources=resources)
            assert result.success, key
            for ev in result.all_events:
                if ev.event_type == DagsterEventType.STEP_SUCCESS and ev.step_key == "ground_images":
                    ground_seconds += ev.event_specific_data.duration_ms / 1000
    wall = time.perf_counter() - t0
    tables = work / "data" / "tables"

    def read(name: str) -> pl.DataFrame:
        return pl.read_parquet(tables / name / "*.parquet")

    images, objects, text_lines = read("images"), read("objects"), read("image_text")
    failures, entities = read("grounding_failures"), read("entities")
    t = Table(title=f"Grounding on {root} ({', '.join(grounding.backends)})")
    for col in ("partition", "images", "OCR lines", *grounding.backends, "failures"):
        t.add_column(col, justify="right" if col != "partition" else "left")
    for key in keys:
        obj = objects.filter(pl.col("partition") == key)
        t.add_row(
            key,
            str(images.filter(pl.col("partition") == key)["image_id"].n_unique()),
            str(text_lines.filter(pl.col("partition") == key).height),
            *[str(obj.filter(pl.col("backend") == b).height) for b in grounding.backends],
            str(failures.filter(pl.col("partition") == key).height),
        )
    n_images = images.select("partition", "image_id").unique().height
    t.add_row(
        "[bold]total",
        str(n_images),
        str(text_lines.height),
        *[str(objects.filter(pl.col("backend") == b).height) for b in grounding.backends],
        str(failures.height),
    )
    console.print(t)
    labels = objects.select("partition", "entity_key").join(
        entities.select("partition", "entity_key", "label"), on=["partition", "entity_key"], how="left"
    )
    by_label = labels.group_by("label").len().sort("len", descending=True)
    console.print("objects by entity label: " + ", ".join(f"{lbl}={n}" for lbl, n in by_label.iter_rows()))
    console.print(
        f"grounding step (OCR + matching + crops): {ground_seconds:.1f} s for {n_images} images "
        f"= {n_images / ground_seconds:.2f} images/s"
        if ground_seconds
        else "no images"
    )
    console.print(f"images with objects: {objects['image_id'].n_unique()} / {n_images}")
    console.print(f"wall clock {wall:.1f} s, peak memory {mem.peak_bytes / 2**30:.2f} GiB, output {work}")


if __name__ == "__main__":
    typer.run(main)
