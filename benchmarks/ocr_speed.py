"""Benchmark: RapidOCR throughput on CPU, as used by the OCR grounding backend.

Two workloads: (a) every image of the bundled sample corpus (small photos, one placard) and
(b) N page renders (scale 2) spread evenly over the MMLongBench-Doc dev PDFs, when present. Prints
images/s, mean ms per image, OCR lines found, entity-matching cost and peak RSS.

    python benchmarks/ocr_speed.py --pages 20
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from memory import PeakMemory  # noqa: E402

from mmkg.entities import canonical_key  # noqa: E402
from mmkg.vision.base import EntityPrompt, OcrLine  # noqa: E402
from mmkg.vision.ocr import DEFAULT_MAX_SIDE, OcrEngine, match_entities  # noqa: E402

SAMPLE = ROOT / "sample_corpus"
MMLONGBENCH = ROOT.parent / "shared" / "datasets" / "mmlongbench-dev" / "documents"
# A realistic prompt set: a few names that occur in the workloads, many that do not.
ENTITY_NAMES = [
    "Hubble Space Telescope", "Grace Hopper", "NASA", "New York University", "Amazon Web Services",
    "Securities and Exchange Commission", "Gestalt Principles of Visual Perception", "Space Shuttle",
    "Nanyang Technological University", "Huawei Technologies", "Pew Research Center", "Netflix",
    "Florida Department of Health", "Large Language Models", "Association for Computational Linguistics",
    "Harvard University", "Eileen Collins", "United States", "LinkedIn", "Facebook",
]  # fmt: skip


def _report(label: str, seconds: list[float], lines: list[list[OcrLine]], match_s: float) -> None:
    n = len(seconds)
    total = sum(seconds)
    n_lines = sum(len(x) for x in lines)
    print(
        f"{label}: {n} images, {total:.1f} s OCR -> {n / total:.2f} images/s, "
        f"{1000 * total / n:.0f} ms/image mean (median {1000 * float(np.median(seconds)):.0f}, "
        f"max {1000 * max(seconds):.0f}); {n_lines} lines ({n_lines / n:.1f}/image); "
        f"matching {len(ENTITY_NAMES)} entities: {1000 * match_s / n:.1f} ms/image"
    )


def _match_seconds(all_lines: list[list[OcrLine]]) -> float:
    prompts = [EntityPrompt(canonical_key(n), n) for n in ENTITY_NAMES]
    t0 = time.perf_counter()
    for i, lines in enumerate(all_lines):
        match_entities(lines, prompts, f"img{i}")
    return time.perf_counter() - t0


def _page_renders(n: int) -> list[tuple[str, int, Image.Image]]:
    import pypdfium2 as pdfium

    pages = []
    for pdf in sorted(MMLONGBENCH.glob("*.pdf")):
        count = len(pdfium.PdfDocument(pdf))
        pages.extend((pdf, i) for i in range(count))
    picks = sorted({round(float(x)) for x in np.linspace(0, len(pages) - 1, n)}) if n > 0 else []
    out = []
    for k in picks:
        pdf, i = pages[k]
        out.append((pdf.name, i, pdfium.PdfDocument(pdf)[i].render(scale=2).to_pil()))
    return out


def main(
    pages: Annotated[int, typer.Option(help="Page renders from the MMLongBench-Doc dev PDFs (0 to skip).")] = 20,
    max_side: Annotated[int, typer.Option(help="Downscale so the longest side is at most this.")] = DEFAULT_MAX_SIDE,
    threads: Annotated[int, typer.Option(help="onnxruntime intra-op threads (-1: all cores).")] = -1,
    verbose: Annotated[bool, typer.Option(help="One line per image.")] = False,
) -> None:
    engine = OcrEngine(max_side=max_side, intra_op_num_threads=threads)
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        engine._model()
        print(f"model load: {time.perf_counter() - t0:.2f} s")
        # Warm-up on one image so the first timed call does not pay for graph initialisation.
        engine.read(Image.new("RGB", (64, 64), "white"))

        images = sorted(SAMPLE.glob("*/images/*.jpg"))
        secs, found = [], []
        for path in images:
            t = time.perf_counter()
            lines = engine.read_path(path)
            secs.append(time.perf_counter() - t)
            found.append(lines)
            if verbose:
                print(f"  {path.relative_to(SAMPLE)}: {1000 * secs[-1]:.0f} ms, {[ln.text for ln in lines]}")
        _report("(a) sample corpus", secs, found, _match_seconds(found))

        if pages > 0 and MMLONGBENCH.is_dir():
            t = time.perf_counter()
            renders = _page_renders(pages)
            render_s = time.perf_counter() - t
            secs, found = [], []
            for name, i, img in renders:
                t = time.perf_counter()
                lines = engine.read(img)
                secs.append(time.perf_counter() - t)
                found.append(lines)
                if verbose:
                    print(f"  {name} p{i} {img.size}: {1000 * secs[-1]:.0f} ms, {len(lines)} lines")
            print(f"rendering {len(renders)} pages at scale 2: {render_s:.1f} s (not counted below)")
            _report("(b) MMLongBench-Doc pages", secs, found, _match_seconds(found))
        elif pages > 0:
            print(f"(b) skipped: {MMLONGBENCH} not found")
    print(f"peak RSS: {mem.peak_bytes / 2**20:.0f} MiB; CPU threads available: {len(os.sched_getaffinity(0))}")


if __name__ == "__main__":
    typer.run(main)
