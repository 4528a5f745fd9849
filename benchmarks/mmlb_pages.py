"""MMLongBench-Doc page recall of BM25 over chunk text, with and without OCR page text, by chunk size.

    python benchmarks/mmlb_pages.py --data /tmp/mmlb --max-tokens 200,400

Library only (no Dagster, no index): ingests each PDF of the corpus under ``<data>/corpus`` (as
``mmlb_build.py`` writes it) into ``<data>``'s content-addressed image store, reads the page
renders of image-only pages through the shared OCR cache (``<data>/blobs/ocr``; a later Dagster
build hits it), chunks with ``mmkg.chunking`` and ranks pages by their best chunk under bm25s, the
same tokenization and title prefix as the eval harness's ``bm25`` method. Reports page recall@k
within the question's document and across the whole corpus, overall and per evidence source, so
ingest and chunking choices can be compared without rebuilding the index.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"


def main(
    data: Annotated[Path, typer.Option(help="Data root holding corpus/ (see mmlb_build.py) and the OCR cache.")],
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder (documents/, questions_dev.json).")] = DATASET,
    max_tokens: Annotated[str, typer.Option(help="Comma list of chunk token bounds to compare.")] = "200",
    ks: Annotated[str, typer.Option("--k", help="Comma list of k.")] = "1,5,10",
) -> None:
    import bm25s
    import numpy as np
    import polars as pl

    from mmkg.chunking import chunk_documents
    from mmkg.embedding import chunk_texts
    from mmkg.eval.datasets import MMLongBench, page_unit
    from mmkg.eval.metrics import mean_metrics, question_metrics, units_by_best_chunk
    from mmkg.ingest import ImageStore, ingest_partition
    from mmkg.vision.ocr import OcrCache, OcrEngine
    from mmkg.vision.page_text import ocr_pages

    bench = MMLongBench.load(dataset / "documents", dataset / "questions_dev.json")
    questions = [q for q in bench.dataset.questions if q.answerable]
    store = ImageStore(data)
    engine, cache = OcrEngine(), OcrCache(data / "blobs" / "ocr")
    docs, images, pages = [], [], []
    t0 = time.perf_counter()
    for name, key in bench.dataset.doc_partitions.items():
        res = ingest_partition(data / "corpus", key, store)
        docs.append(res.documents)
        images.append(res.images)
        pages.append(ocr_pages(res.documents, res.images, lambda i, p: engine.read_cached(i, p, cache), store.path_for))
        print(f"{name}: {res.documents['n_pages'].sum()} pages, {pages[-1].height} OCR pages", file=sys.stderr)
    documents, images_df, page_text = pl.concat(docs), pl.concat(images), pl.concat(pages)
    print(f"ingest + OCR {time.perf_counter() - t0:.0f}s ({engine.calls} OCR calls, rest cached)", file=sys.stderr)
    file_of = dict(documents.select("doc_id", pl.col("source_path").str.split("/").list.last()).iter_rows())
    k_list = [int(k) for k in ks.split(",")]

    rows = []
    for bound in [int(x) for x in max_tokens.split(",")]:
        for variant, pt in (("text layer", None), ("text layer + OCR pages", page_text)):
            chunks = chunk_documents(documents, images_df, bound, page_text=pt)
            units = [page_unit(file_of[d], p) for d, p in chunks.select("doc_id", "page").iter_rows()]
            files = np.array([file_of[d] for d in chunks["doc_id"]])
            bm25 = bm25s.BM25()
            bm25.index(bm25s.tokenize(chunk_texts(chunks, documents), stopwords="en", show_progress=False),
                       show_progress=False)  # fmt: skip
            for scope in ("document", "corpus"):
                per_q = []
                for q in questions:
                    toks = bm25s.tokenize([q.question], stopwords="en", return_ids=False, show_progress=False)[0]
                    known = [t for t in toks if t in bm25.vocab_dict]
                    scores = np.asarray(bm25.get_scores(known), dtype=float) if known else np.zeros(len(units))
                    if scope == "document":
                        scores = np.where(files == q.doc, scores, 0.0)
                    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] > 0]
                    ranked = units_by_best_chunk(units[i] for i in order)
                    m = question_metrics(ranked, q.relevant, k_list)
                    per_q.append(m)
                    for src in q.sources or ("none",):
                        rows.append({"tokens": bound, "variant": variant, "scope": scope, "source": src,
                                     **{f"r@{k}": m[f"recall@{k}"] for k in k_list}})  # fmt: skip
                mean = mean_metrics(per_q)
                figures = "  ".join(f"R@{k} {mean[f'recall@{k}']:.3f}" for k in k_list)
                size = f"({len(per_q)} q, {len(units)} chunks)"
                print(f"max_tokens={bound:4d}  {variant:24s} {scope:8s}  {figures}  {size}")
    by_source = (
        pl.DataFrame(rows)
        .filter(pl.col("scope") == "document")
        .group_by("tokens", "variant", "source")
        .agg(pl.len().alias("n"), pl.col(f"r@{k_list[1] if len(k_list) > 1 else k_list[0]}").mean().round(3))
        .sort("tokens", "variant", "source")
    )
    with pl.Config(tbl_rows=100, tbl_hide_dataframe_shape=True):
        print("within-document recall by evidence source (a question counts once per source):")
        print(by_source)


if __name__ == "__main__":
    typer.run(main)
