"""Benchmark: the embed step of an earlier build, re-run per encoder runtime, dtype, batch size and device.

    python benchmarks/embed_device.py --data /tmp/b2/data --device cuda \\
        --configs torch:float32:64,torch:float16:64,torch:float16:256

``--data`` is the data root of a build (``benchmarks/build_2wiki.py`` leaves one under its work dir). Each
partition's embed inputs (documents, chunks, sentences, images, image_text, objects, document_entities,
relations) are read from ``<data>/tables/<table>/<partition>.parquet`` and passed to
``mmkg.embedding.embed_all``, the function the ``embed`` asset runs, with no vector cache: the work of a
cold build. A configuration is ``runtime:dtype:batch`` (dtype applies to torch; ONNX runtimes take ``-``).

``--random-weights`` embeds with a copy of ``--model`` (a sentence-transformers folder) whose transformer
has the same configuration and random weights: speed depends on the architecture and the tokenizer, not on
the weights, so the figures carry over while only the small config and tokenizer files have to travel to a
GPU machine that cannot download (a call takes 64 MiB). The cosines then compare runtimes of that model.

Printed per configuration: seconds per granularity summed over partitions, vectors per second, the ratio
to the first configuration, peak GPU memory, and the cosine of each vector to the first configuration's
(minimum and median per granularity): the first one is the reference. The encoder's load and one untimed
warm-up partition (CUDA kernels, allocator, ONNX sessions) are left out of the timings.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import polars as pl
import typer
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmkg.embedding import embed_all  # noqa: E402
from mmkg.encoders import Encoder, TextEncoder, load_encoder  # noqa: E402

console = Console(width=170)
INPUTS = ("documents", "chunks", "sentences", "images", "image_text", "objects", "document_entities", "relations")


def partition_inputs(data: Path, partition: str) -> dict[str, pl.DataFrame]:
    """One partition's embed inputs, as the Dagster IO manager would hand them to the asset."""
    frames = {}
    for name in INPUTS:
        path = data / "tables" / name / f"{partition}.parquet"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: --data must be the data root of a finished build")
        frames[name] = pl.read_parquet(path)
    return frames


def make_encoder(runtime: str, dtype: str, device: str, model: str) -> Encoder:
    if runtime == "torch":
        return TextEncoder(model or None, device=device, dtype=dtype)
    return load_encoder("text", model, device="cpu", runtime=runtime)


def run(encoder: Encoder, inputs: list[dict[str, pl.DataFrame]], data: Path, batch: int) -> dict:
    seconds: dict[str, float] = {}
    vectors: dict[str, list[np.ndarray]] = {}
    for frames in inputs:
        done = embed_all(
            encoder, frames["documents"], frames["chunks"], frames["sentences"], frames["images"],
            frames["image_text"], frames["objects"], data, batch,
            document_entities=frames["document_entities"], relations=frames["relations"],
        )  # fmt: skip
        for gran, e in done.items():
            seconds[gran] = seconds.get(gran, 0.0) + e.seconds
            if e.frame.height:
                vectors.setdefault(gran, []).append(e.frame["vector"].to_numpy().reshape(e.frame.height, -1))
    stacked = {gran: np.concatenate(parts) for gran, parts in vectors.items()}
    return {"seconds": seconds, "vectors": stacked}


def random_weight_copy(model: Path) -> Path:
    """A copy of the sentence-transformers folder ``model`` with the transformer's weights drawn at random."""
    import torch
    from transformers import AutoConfig, AutoModel

    folder = Path(tempfile.mkdtemp(prefix="embed-random-")) / model.name
    shutil.copytree(model, folder, ignore=shutil.ignore_patterns("*.safetensors", "*.bin", "onnx", "openvino"))
    torch.manual_seed(0)
    AutoModel.from_config(AutoConfig.from_pretrained(folder)).save_pretrained(folder)
    return folder


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def main(
    data: Annotated[Path, typer.Option(help="Data root of a finished build (holds tables/).")],
    configs: Annotated[str, typer.Option(help="Comma-separated runtime:dtype:batch; the first is the reference.")] = (
        "torch:float32:64,torch:float16:64"
    ),
    device: Annotated[str, typer.Option(help="Device of the torch runtime: cpu, cuda.")] = "cuda",
    model: Annotated[str, typer.Option(help="sentence-transformers folder; empty: the bundled MiniLM.")] = "",
    partitions: Annotated[int, typer.Option(help="Use the first N partitions (0: all).")] = 0,
    random_weights: Annotated[
        bool, typer.Option(help="Embed with a copy of --model whose transformer has random weights.")
    ] = False,
    out: Annotated[Path | None, typer.Option(help="Write the figures as JSON here too.")] = None,
) -> None:
    if random_weights:
        if not model:
            raise typer.BadParameter("--random-weights needs --model, a sentence-transformers folder")
        model = str(random_weight_copy(Path(model)))
        console.print(f"random weights: {model}")
    keys = sorted(p.stem for p in (data / "tables" / "chunks").glob("*.parquet"))
    keys = keys[:partitions] if partitions else keys
    inputs = [partition_inputs(data, key) for key in keys]
    console.print(f"{len(keys)} partitions from {data}: "
                  f"{sum(f['chunks'].height for f in inputs):,} chunks, {sum(f['sentences'].height for f in inputs):,} "
                  f"sentences, {sum(f['document_entities'].height for f in inputs):,} entity units, "
                  f"{sum(f['relations'].height for f in inputs):,} relations")  # fmt: skip
    results: list[dict] = []
    reference: dict[str, np.ndarray] | None = None
    for config in configs.split(","):
        runtime, dtype, batch = config.strip().split(":")
        dtype = "auto" if dtype in ("-", "") else dtype
        t = time.perf_counter()
        encoder = make_encoder(runtime, dtype, device, model)
        load_s = time.perf_counter() - t
        run(encoder, inputs[:1], data, int(batch))  # warm-up, untimed
        if device.startswith("cuda"):
            import torch

            torch.cuda.reset_peak_memory_stats()
        sync(device)
        t = time.perf_counter()
        done = run(encoder, inputs, data, int(batch))
        sync(device)
        wall = time.perf_counter() - t
        row = {
            "config": config.strip(),
            "encoder": encoder.info.id(),
            "load_s": round(load_s, 2),
            "wall_s": round(wall, 2),
            "seconds": {g: round(s, 2) for g, s in done["seconds"].items()},
            "vectors": {g: int(v.shape[0]) for g, v in done["vectors"].items()},
        }
        if device.startswith("cuda") and runtime == "torch":
            import torch

            row["gpu_peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if reference is None:
            reference = done["vectors"]
        else:
            row["cosine_to_reference"] = {
                g: {"min": round(float(c.min()), 5), "median": round(float(statistics.median(c)), 5)}
                for g, v in done["vectors"].items()
                for c in [np.einsum("ij,ij->i", v, reference[g])]
            }
        results.append(row)
        del encoder
    base = results[0]["wall_s"]
    table = Table(title=f"embed step, {len(keys)} partitions, device {device}")
    for col in ("config", "load s", "wall s", "× ref", "chunks s", "sentences s", "entities s", "relations s",
                "vectors/s", "GPU GiB", "min cos"):  # fmt: skip
        table.add_column(col, justify="left" if col == "config" else "right")
    for r in results:
        total = sum(r["vectors"].values())
        cos = r.get("cosine_to_reference")
        table.add_row(
            r["config"], f"{r['load_s']:.1f}", f"{r['wall_s']:.1f}", f"{base / r['wall_s']:.2f}",
            *(f"{r['seconds'].get(g, 0.0):.1f}" for g in ("chunks", "sentences", "document_entities", "relations")),
            f"{total / r['wall_s']:.0f}", str(r.get("gpu_peak_gib", "-")),
            f"{min(c['min'] for c in cos.values()):.4f}" if cos else "ref",
        )  # fmt: skip
    console.print(table)
    if out:
        out.write_text(json.dumps({"device": device, "partitions": keys, "results": results}, indent=2))


if __name__ == "__main__":
    typer.run(main)
