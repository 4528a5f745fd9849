"""Does asking pdfium first which pages may hold a table change any table row, and what does it save?

    python benchmarks/table_pages.py ../shared/datasets/mmlongbench-dev/documents
    python benchmarks/table_pages.py ../shared/datasets/mmlongbench-val/documents

Reads every PDF of the folder with ``mmkg.ingest.pdf.read_pdf`` three ways in this process, one after the other in this
process: tables off (``Limits.pdf_tables=False``, the reader before tables were read), tables on with
pdfplumber parsing every page (``may_hold_table`` answering yes everywhere), and the build's own way
(pdfplumber only on the pages ``mmkg.ingest.pdf_table_pages`` lets through). Printed: pages, table rows,
pages let through, the pages and rows the test would lose (every page's text, rows included, is compared
with the all-pages reading; any difference is listed by file and page), and each way's seconds with its
ratio to tables off. A fourth reading gives the let-through pages to ``--processes`` table workers
(``mmkg.ingest.pdf_table_workers``, the build's default) instead of reading them in this process; its pages
are compared with the in-process reading's too.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _pages(doc: object) -> list[str]:
    from mmkg.chunking import page_ranges

    text = doc.text  # type: ignore[attr-defined]
    return [text[start:end] for _, start, end in page_ranges(text, doc.page_starts)]  # type: ignore[attr-defined]


def main(
    documents: Annotated[Path, typer.Argument(help="A folder of PDFs.")],
    processes: Annotated[int, typer.Option(help="Table worker processes of the fourth reading.")] = 2,
) -> None:
    import mmkg.ingest.pdf as reader
    from mmkg.ingest.base import Limits
    from mmkg.ingest.pdf_table_pages import may_hold_table

    paths = sorted(documents.glob("*.pdf"))
    let_through = 0

    def counting(page: object, textpage: object) -> bool:
        nonlocal let_through
        yes = may_hold_table(page, textpage)  # type: ignore[arg-type]
        let_through += yes
        return yes

    def read_all(limits: Limits) -> tuple[float, dict[str, list[str]]]:
        start, out = time.perf_counter(), {}
        for path in paths:
            doc, _ = reader.read_pdf(path.read_bytes(), path.name, limits)
            out[path.name] = _pages(doc)
        return time.perf_counter() - start, out

    t_off, off = read_all(Limits(pdf_tables=False))
    reader.may_hold_table = lambda page, textpage: True  # type: ignore[assignment]
    t_all, every = read_all(Limits(pdf_table_processes=0))
    reader.may_hold_table = counting  # type: ignore[assignment]
    t_gate, gated = read_all(Limits(pdf_table_processes=0))
    let_in_process = let_through
    from mmkg.ingest.pdf_table_workers import table_pool

    table_pool(processes).submit(int).result()  # the workers started, as a build's first PDF leaves them
    t_work, worked = read_all(Limits(pdf_table_processes=processes))
    let_through = let_in_process
    pages = sum(map(len, every.values()))
    pairs = [(name, i + 1, a, o, g) for name in every
             for i, (a, o, g) in enumerate(zip(every[name], off[name], gated[name], strict=True))]  # fmt: skip
    rows = sum(len(a) > len(o) for _, _, a, o, _ in pairs)
    n_rows = sum(a.count("\n\n") - o.count("\n\n") for _, _, a, o, _ in pairs)
    lost = [(name, page) for name, page, a, _, g in pairs if a != g]
    moved = [(name, i + 1) for name in gated for i, (g, w) in enumerate(zip(gated[name], worked[name], strict=True))
             if g != w]  # fmt: skip
    print(f"{documents}: {len(paths)} PDFs, {pages} pages, {rows} pages with table rows ({n_rows} rows)")
    print(f"  pages pdfium lets through to pdfplumber: {let_through} ({let_through / max(pages, 1):.0%})")
    print(f"  pages whose text differs from parsing every page: {len(lost)}")
    for name, page in lost:
        print(f"    {name} page {page}")
    print(f"  pages whose text differs when {processes} workers read them: {len(moved)}")
    for name, page in moved:
        print(f"    {name} page {page}")
    print(f"  seconds: tables off {t_off:.1f}; every page {t_all:.1f} ({t_all / t_off:.2f}x); "
          f"pages let through {t_gate:.1f} ({t_gate / t_off:.2f}x); "
          f"the same in {processes} workers {t_work:.1f} ({t_work / t_off:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    typer.run(main)
