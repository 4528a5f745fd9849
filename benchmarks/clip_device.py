"""Benchmark: the CLIP backend (``mmkg.encoders.ClipEncoder``) per device, dtype and batch size.

    python benchmarks/clip_device.py --arch b32,l14 --devices cuda \\
        --configs float32:64,float16:64,float32:256,float16:256,bfloat16:256

``ClipEncoder(dtype="auto")`` runs float16 on CUDA; the text backend was measured slower in float16 than
float32 on an H100 (docs/results/gpu.md), so this times the same question for a dual encoder, whose vision
tower is bigger. Nothing can be downloaded here, so each architecture is a real CLIP configuration with
random weights, written with ``save_pretrained`` and loaded back through ``ClipEncoder`` as a user's
checkpoint folder would be: speed depends on the architecture and input size, not the weights.

- ``b32``: ViT-B/32 (vision 768 wide, 12 layers, 224 px, 32 px patches; text 512 wide, 12 layers; 512-d).
- ``l14``: ViT-L/14 (vision 1024 wide, 24 layers, 224 px, 14 px patches; text 768 wide, 12 layers; 768-d).

The tokenizer is character-level (the CLIP BPE vocabulary cannot be fetched), so a sentence is more tokens
than with BPE; texts are truncated to 77 as CLIP's are. The images are the sample corpus's photographs,
decoded from their files each time, as the embed step passes them (``ImageInput`` with a path); the texts
are the sample corpus's sentences. A configuration is ``dtype:batch[:how]``; ``how`` brings back the
earlier image path for a baseline in the same run: ``cpu`` resizes and normalizes on the CPU, ``seq``
decodes a batch's files one by one (``cpu-seq`` both). The first configuration of each device is the
reference for the cosines. One untimed warm-up pass per configuration.

Printed per configuration: images/s and texts/s, the ratio to the device's first configuration, peak GPU
memory, and the minimum cosine of each vector to the reference configuration's.
"""

from __future__ import annotations

import re
import string
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mmkg.encoders  # noqa: E402
from mmkg.encoders import ClipEncoder  # noqa: E402

DECODE_ALL = mmkg.encoders._decode_all


def _decode_sequentially(images: list) -> list:
    return [image.load_rgb() for image in images]


console = Console(width=170)

ARCHES = {
    "b32": dict(
        text=dict(hidden_size=512, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=8),
        vision=dict(
            hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12, patch_size=32
        ),
        projection_dim=512,
    ),
    "l14": dict(
        text=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12),
        vision=dict(
            hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16, patch_size=14
        ),
        projection_dim=768,
    ),
}


COLUMNS = ("dtype", "batch", "images/s", "× ref", "texts/s", "× ref", "GPU peak GiB", "min cos img", "min cos text")


def write_model(arch: str, folder: Path) -> Path:
    """A random-weight CLIP of the named architecture, saved as a checkpoint folder ``ClipEncoder`` loads."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    torch.manual_seed(0)
    chars = list(string.ascii_lowercase + string.digits + ".,'!?-")
    tokens = ["<|startoftext|>", "<|endoftext|>", *chars, *(c + "</w>" for c in chars)]
    tokenizer = CLIPTokenizer(vocab={tok: i for i, tok in enumerate(tokens)}, merges=[])
    spec = ARCHES[arch]
    text = dict(
        spec["text"],
        vocab_size=49408,  # CLIP's vocabulary size, so the embedding table is the real one's
        max_position_embeddings=77,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    vision = dict(spec["vision"], image_size=224)
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=spec["projection_dim"]))
    path = folder / arch
    model.save_pretrained(path)
    processor = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    CLIPProcessor(image_processor=processor, tokenizer=tokenizer).save_pretrained(path)
    return path


def corpus_inputs(n_images: int, n_texts: int) -> tuple[list[Path], list[str]]:
    photos = sorted((ROOT / "sample_corpus").glob("*/images/*.jpg"))
    if not photos:
        raise FileNotFoundError(f"no photographs under {ROOT / 'sample_corpus'}")
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "sample_corpus").glob("*/*.md")))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text)) if len(s.strip()) > 20]
    images = [photos[i % len(photos)] for i in range(n_images)]
    texts = [sentences[i % len(sentences)] for i in range(n_texts)]
    return images, texts


def time_config(
    model: Path, device: str, dtype: str, batch: int, images: list[Path], texts: list[str], how: str = ""
) -> dict:
    """One configuration's timings; ``how`` can hold ``cpu`` (resize and normalize on the CPU, as before the
    processor was given the model's device) and ``seq`` (decode a batch's files one after another, as before
    they were decoded in threads): the earlier code's behaviour, measured in the same run."""
    import torch

    encoder = ClipEncoder(str(model), device=device, dtype=dtype)
    if "cpu" in how.split("-"):
        encoder.preprocess_device = None
    if "seq" in how.split("-"):
        mmkg.encoders._decode_all = _decode_sequentially
    else:
        mmkg.encoders._decode_all = DECODE_ALL
    cuda = encoder.device.startswith("cuda")
    encoder.encode_images(images[:batch], batch)  # warm-up: kernels, allocator, processor
    encoder.encode_text(texts[:batch], batch)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    image_vecs = encoder.encode_images(images, batch)
    image_s = time.perf_counter() - t
    t = time.perf_counter()
    text_vecs = encoder.encode_text(texts, batch)
    text_s = time.perf_counter() - t
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
    del encoder
    if cuda:
        torch.cuda.empty_cache()
    return dict(image_s=image_s, text_s=text_s, peak=peak, image_vecs=image_vecs, text_vecs=text_vecs)


def main(
    arch: Annotated[str, typer.Option(help="comma-separated: b32, l14")] = "b32",
    devices: Annotated[str, typer.Option(help="comma-separated: cpu, cuda")] = "cuda",
    configs: Annotated[str, typer.Option(help="comma-separated dtype:batch; the first is the reference")] = (
        "float32:64,float16:64,float32:256,float16:256,bfloat16:256"
    ),
    images: Annotated[int, typer.Option(help="images per configuration")] = 512,
    texts: Annotated[int, typer.Option(help="texts per configuration")] = 1024,
    cpu_scale: Annotated[int, typer.Option(help="divide the image and text counts by this on the CPU")] = 8,
) -> None:
    import torch

    if torch.cuda.is_available():
        console.print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in arch.split(","):
            model = write_model(name, Path(tmp))
            for device in devices.split(","):
                scale = cpu_scale if device == "cpu" else 1
                imgs, txts = corpus_inputs(max(1, images // scale), max(1, texts // scale))
                table = Table(title=f"{name} on {device}: {len(imgs)} images, {len(txts)} texts")
                for col in COLUMNS:
                    table.add_column(col, justify="right")
                ref = None
                for config in configs.split(","):
                    dtype, batch, how = [*config.split(":"), ""][:3]
                    run = time_config(model, device, dtype, int(batch), imgs, txts, how)
                    ips, tps = len(imgs) / run["image_s"], len(txts) / run["text_s"]
                    if ref is None:
                        ref = dict(run, ips=ips, tps=tps)
                    cos_i = float(np.min(np.sum(run["image_vecs"] * ref["image_vecs"], axis=1)))
                    cos_t = float(np.min(np.sum(run["text_vecs"] * ref["text_vecs"], axis=1)))
                    table.add_row(
                        dtype, f"{batch}{':' + how if how else ''}", f"{ips:,.1f}", f"{ips / ref['ips']:.2f}",
                        f"{tps:,.1f}", f"{tps / ref['tps']:.2f}",
                        "–" if run["peak"] is None else f"{run['peak']:.2f}", f"{cos_i:.4f}", f"{cos_t:.4f}",
                    )  # fmt: skip
                    console.print(f"  {name} {device} {config}: {ips:,.1f} images/s, {tps:,.1f} texts/s")
                console.print(table)


if __name__ == "__main__":
    typer.run(main)
