"""Pages ordered by a reader (UPR, Sachan et al. 2022): does the reading model's query likelihood lift MMLongBench-Doc
page recall within the question's document?

    python benchmarks/page_rerank.py --index /tmp/ev/dev/index
    python benchmarks/page_rerank.py --index /tmp/ev/val/index --dataset ../shared/datasets/mmlongbench-val \
        --questions questions_val.json

For each answerable question the default strategy retrieves ``--depth`` chunks within the question's PDF; a page
ranks at its best chunk (the eval harness's rule). Then the top ``--pool`` pages are re-ranked by the mean
log-probability per token of the question after the page's text (its retrieved chunks joined, cut to
``--page-tokens`` tokens), as the reading model scores it (``mmkg.llm.likelihood.text_likelihood``), alone
(``upr``) and fused with the retrieval order by reciprocal rank (``upr+rrf``). Prints page R@1/R@5 for each order
and the re-ranking's latency (median, p95).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"
PROMPT = "Read the page, then ask a question that it answers."


def _recall(ranked: list[int], gold: set[int], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold)


def main(
    index: Annotated[Path, typer.Option(help="Published MMLongBench-Doc index root.")],
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder.")] = DATASET,
    questions: Annotated[str, typer.Option(help="Questions file inside --dataset.")] = "questions_dev.json",
    depth: Annotated[int, typer.Option(help="Chunks retrieved per question.")] = 30,
    pool: Annotated[int, typer.Option(help="Top pages re-ranked.")] = 10,
    page_tokens: Annotated[int, typer.Option(help="Tokens of page text shown to the model.")] = 200,
    limit: Annotated[int, typer.Option(help="First N questions (0: all).")] = 0,
) -> None:
    from mmkg.index import Index
    from mmkg.llm.installed import reader_model
    from mmkg.llm.likelihood import load
    from mmkg.retrieval import retrieve

    choice = reader_model("")
    assert choice.path is not None, choice.reason
    model = load(choice.path, choice.name)
    idx = Index.open(index)
    docs: dict[str, list[str]] = {}
    for doc_id, source_path in idx.documents.select("doc_id", "source_path").iter_rows():
        docs.setdefault(Path(source_path).name, []).append(doc_id)
    rows = [r for r in json.loads((dataset / questions).read_text()) if json.loads(r["evidence_pages"])]
    rows = rows[: limit or None]
    sums = {"retrieval": [0.0, 0.0], "upr": [0.0, 0.0], "upr+rrf": [0.0, 0.0]}
    ms: list[float] = []
    for r in rows:
        gold = set(json.loads(r["evidence_pages"]))
        res = retrieve(idx, text=r["question"], k=depth, filters={"doc_id": docs[r["doc_id"]]})
        pages: dict[int, list[str]] = {}
        for c in res.chunks:
            if c.page is not None:
                pages.setdefault(int(c.page), []).append(c.text)
        base = list(pages)  # best chunk first: insertion order follows the chunk ranking
        top = base[:pool]
        t0 = time.perf_counter()
        texts = []
        for p in top:
            ids = model.tokenizer(" ".join(pages[p]), add_special_tokens=False)["input_ids"][:page_tokens]
            texts.append((PROMPT, "Page:\n" + model.tokenizer.decode(ids)))
        lp = model.text_likelihood(texts, r["question"])
        ms.append((time.perf_counter() - t0) * 1e3)
        upr = [p for _, p in sorted(zip(lp, top, strict=True), key=lambda x: -x[0])]
        by_lp = {p: i for i, p in enumerate(upr)}
        fused = sorted(top, key=lambda p: -(1 / (60 + top.index(p)) + 1 / (60 + by_lp[p])))
        for name, order in (("retrieval", base), ("upr", upr + base[pool:]), ("upr+rrf", fused + base[pool:])):
            sums[name][0] += _recall(order, gold, 1)
            sums[name][1] += _recall(order, gold, 5)
    n = len(rows)
    print(f"{n} answerable questions; depth {depth}, pool {pool} pages, {page_tokens} tokens a page")
    print("| order | page R@1 | page R@5 |\n|---|---:|---:|")
    for name, (r1, r5) in sums.items():
        print(f"| {name} | {r1 / n:.3f} | {r5 / n:.3f} |")
    q = statistics.quantiles(ms, n=20) if len(ms) > 1 else ms * 19
    print(f"re-ranking p50 {statistics.median(ms):.0f} ms, p95 {q[18]:.0f} ms")


if __name__ == "__main__":
    typer.run(main)
