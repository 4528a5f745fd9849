"""Build MMLongBench-Doc dev through the Dagster assets: one corpus partition per PDF, then publish.

    python benchmarks/mmlb_build.py --pdfs ../shared/datasets/mmlongbench-dev/documents --data /tmp/mmlb

Writes the corpus (one folder per PDF) under ``<data>/corpus`` and runs the ``index_partition``
job per partition and ``publish_index`` once (``pipelines.demo.run``), on a persistent Dagster
instance under ``<data>/dagster_home``. Re-running reuses the OCR cache under ``<data>/blobs/ocr``.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def pdf_corpus(pdfs: Path, root: Path) -> list[str]:
    """One partition folder per PDF under ``root`` (copies; unchanged files are left alone)."""
    from mmkg.eval.datasets import partition_key

    files = sorted(pdfs.glob("*.pdf"))
    if not files:
        raise typer.BadParameter(f"no PDFs in {pdfs}")
    keys = []
    for pdf in files:
        key = partition_key(pdf.name)  # the eval harness's name for the partition
        dest = root / key / pdf.name
        if not dest.exists() or dest.stat().st_size != pdf.stat().st_size:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(pdf, dest)
        keys.append(key)
    return keys


def main(
    pdfs: Annotated[Path, typer.Option(help="Folder of PDFs: one partition per PDF.")],
    data: Annotated[Path, typer.Option(help="Data root for tables, blobs, index and the Dagster instance.")],
    only: Annotated[list[str] | None, typer.Option(help="Build only these partitions (default: all).")] = None,
) -> None:
    from pipelines.demo import run

    data = data.resolve()
    corpus = data / "corpus"
    keys = pdf_corpus(pdfs.resolve(), corpus)
    t0 = time.perf_counter()
    timings = run(corpus, data, only or keys)
    total = time.perf_counter() - t0
    for key, seconds in timings.items():
        print(f"{key:62s} {seconds:8.1f}s")
    print(f"{'total':62s} {total:8.1f}s")


if __name__ == "__main__":
    typer.run(main)
