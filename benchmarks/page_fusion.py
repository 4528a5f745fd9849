"""A page ranker fitted on dev: do the channels' scores, combined by a learned model, rank pages better than MG2-RAG?

    .venv/bin/python benchmarks/page_fusion.py features --index /tmp/s31/dev/index --out /tmp/s32/dev_pages.parquet
    .venv/bin/python benchmarks/page_fusion.py features --index /tmp/s31/val/index \\
        --dataset ../shared/datasets/mmlongbench-val --questions questions_val.json --out /tmp/s32/val_pages.parquet
    .venv/bin/python benchmarks/page_fusion.py fit --train /tmp/s32/dev_pages.parquet --test /tmp/s32/val_pages.parquet

Every earlier re-ranking of long-document pages (``page_scoring.py``, ``multi_page.py``) added one signal with one
weight chosen by hand on dev. This fits the weights of all of them at once, as learning to rank does (a pointwise
logistic regression, a pairwise one, RankSVM-style, and gradient-boosted trees, over per-page features), on dev's
questions, and scores the fitted rankers on validation's. Dev's own figure is cross-validated by document (leave
one PDF out), so no page is ranked by a model that saw its question.

``features`` writes one row per (answerable question, page of its document that holds a chunk), within the question's
document, with these columns, each computed in the same run:

- ``mg2``: the page's best chunk score under ``auto`` (top 50 chunks), scaled by the question's best; 0 when none of
  its chunks is retrieved; ``mg2_rr``: 1 / (1 + the page's rank in that ranking), 0 when not retrieved;
- ``bm25``: the page's best chunk BM25 score over the best in the document; ``bm25_2``: its second chunk's;
- ``dense``: the page's best chunk cosine minus the document's best; ``sent``: its best sentence cosine minus the
  document's best;
- ``nb_mg2``: the better ``mg2`` of the pages before and after it;
- ``pos``: the page's place in the document (0 first, 1 last); ``chunks``: log(1 + its chunks);
- ``label``: 1 when the page is one of the question's evidence pages.

``fit`` prints R@1 and R@5 (MMLongBench-Doc's recall: the share of a question's evidence pages ranked in the first
k) for MG2-RAG's own order and for each model, with wins and losses against MG2-RAG. Counts only: it can run on
validation questions nobody reads.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import numpy as np
import polars as pl
import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASET = Path(__file__).resolve().parent.parent.parent / "shared/datasets/mmlongbench-dev"
FEATURES = ("mg2", "mg2_rr", "bm25", "bm25_2", "dense", "sent", "nb_mg2", "pos", "chunks")
app = typer.Typer(add_completion=False)


@app.command()
def features(
    index: Annotated[Path, typer.Option(help="A built MMLongBench-Doc index.")],
    out: Annotated[Path, typer.Option(help="Parquet file to write.")],
    dataset: Annotated[Path, typer.Option(help="MMLongBench-Doc folder (documents/, the questions).")] = DATASET,
    questions: Annotated[str, typer.Option(help="The questions file inside --dataset.")] = "questions_dev.json",
) -> None:
    from mmkg.eval.datasets import MMLongBench
    from mmkg.index import Index
    from mmkg.retrieval.mg2 import MG2, PRESETS, route

    idx = Index.open(index)
    ds = MMLongBench.load(dataset / "documents", dataset / questions).dataset
    doc_of = {Path(p).name: d for d, p in idx.documents.select("doc_id", "source_path").iter_rows()}
    chunks = idx.chunks.select("chunk_id", "doc_id", "page").filter(pl.col("page").is_not_null())
    page_of = {c: (d, p) for c, d, p in chunks.iter_rows()}
    doc_pages: dict[str, list[int]] = defaultdict(list)
    per_page: dict[tuple[str, int], int] = defaultdict(int)
    for _, d, p in chunks.iter_rows():
        per_page[(d, p)] += 1
    for d, p in per_page:
        doc_pages[d].append(p)
    chunk_ids = idx.meta["chunks"]["id"].to_list()
    sent_chunk = idx.payload("sentences").select("sentence_id", "chunk_id")
    sent_page = {s: page_of.get(c) for s, c in sent_chunk.iter_rows()}
    sent_ids = idx.meta["sentences"]["id"].to_list()
    rows: list[dict] = []
    for q in ds.questions:
        if not q.relevant or not q.doc:
            continue
        doc = doc_of[q.doc]
        pages = sorted(doc_pages[doc])
        filters = {"doc_id": doc}
        chosen = route(idx, q.question, filters)
        with idx.single_blas_thread():
            res = MG2(PRESETS[chosen], preset=chosen).run(idx, q.question, None, 50, filters)
        mg2: dict[int, float] = {}
        for c in res.chunks:
            if c.chunk_id in page_of:
                mg2.setdefault(page_of[c.chunk_id][1], c.score)
        top = max(mg2.values(), default=1.0) or 1.0
        rank = {p: i for i, p in enumerate(mg2)}
        lex = idx.lexical_scores(q.question).astype(np.float64)
        qv = idx.encode_text(q.question)
        rows_c, cos_c = idx.cosines_for_docs("chunks", qv, [doc])
        rows_s, cos_s = idx.cosines_for_docs("sentences", qv, [doc])
        bm: dict[int, list[float]] = defaultdict(list)
        dense: dict[int, float] = defaultdict(lambda: -1.0)
        for r, cos in zip(rows_c, cos_c, strict=True):
            cid = chunk_ids[int(r)]
            if cid not in page_of:
                continue
            p = page_of[cid][1]
            bm[p].append(float(lex[int(r)]))
            dense[p] = max(dense[p], float(cos))
        sent: dict[int, float] = defaultdict(lambda: -1.0)
        for r, cos in zip(rows_s, cos_s, strict=True):
            key = sent_page.get(sent_ids[int(r)])
            if key is not None:
                sent[key[1]] = max(sent[key[1]], float(cos))
        bm_top = max((max(v) for v in bm.values()), default=0.0) or 1.0
        d_top = max(dense.values(), default=0.0)
        s_top = max(sent.values(), default=0.0)
        gold = {int(r.rsplit("#", 1)[1]) for r in q.relevant if r.rsplit("#", 1)[1].isdigit()}
        for i, p in enumerate(pages):
            b = sorted(bm.get(p, [0.0]), reverse=True)
            nb = max(mg2.get(p - 1, 0.0), mg2.get(p + 1, 0.0)) / top
            rows.append({
                "qid": q.id, "doc": q.doc, "page": p, "n_gold": len(q.relevant),
                "mg2": mg2.get(p, 0.0) / top, "mg2_rr": 1 / (1 + rank[p]) if p in rank else 0.0,
                "bm25": b[0] / bm_top, "bm25_2": (b[1] if len(b) > 1 else 0.0) / bm_top,
                "dense": dense[p] - d_top if p in dense else -1.0,
                "sent": sent[p] - s_top if p in sent else -1.0,
                "nb_mg2": nb, "pos": i / max(len(pages) - 1, 1), "chunks": math.log1p(per_page[(doc, p)]),
                "base_rank": rank.get(p, 10_000 + i), "label": int(p in gold),
            })  # fmt: skip
    pl.DataFrame(rows).write_parquet(out)
    print(f"{out}: {len(rows)} pages, {len({r['qid'] for r in rows})} questions")


def _recall(df: pl.DataFrame, score: str, k: int) -> dict[str, float]:
    """Per question: the share of its evidence pages among the k best pages by ``score`` (higher first)."""
    out = {}
    for (qid,), g in df.group_by("qid"):
        top = g.sort(score, descending=True).head(k)
        out[qid] = top["label"].sum() / g["n_gold"][0]
    return out


def _pairs(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RankSVM's transform: each (evidence page, other page) pair of one question as a difference vector."""
    xs, ys = [], []
    for g in np.unique(groups):
        m = groups == g
        pos, neg = x[m & (y == 1)], x[m & (y == 0)]
        for j, p in enumerate(pos):
            d = p - neg
            sign = np.where(np.arange(len(d)) % 2 == j % 2, 1, -1)  # balanced classes
            xs.append(d * sign[:, None])
            ys.append((sign > 0).astype(int))
    return np.vstack(xs), np.concatenate(ys)


def _model(kind: str, train: pl.DataFrame):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x, y = train.select(FEATURES).to_numpy(), train["label"].to_numpy()
    scaler = StandardScaler().fit(x)
    if kind == "boosted":
        from sklearn.ensemble import HistGradientBoostingClassifier

        gbm = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=8,
                                             class_weight="balanced", random_state=0).fit(x, y)  # fmt: skip
        return lambda df: gbm.decision_function(df.select(FEATURES).to_numpy()), np.zeros(len(FEATURES))
    if kind == "pointwise":
        clf = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced").fit(scaler.transform(x), y)
        return lambda df: clf.decision_function(scaler.transform(df.select(FEATURES).to_numpy())), clf.coef_[0]
    px, py = _pairs(scaler.transform(x), y, train["qid"].to_numpy())
    clf = LogisticRegression(C=1.0, max_iter=2000, fit_intercept=False).fit(px, py)
    return lambda df: scaler.transform(df.select(FEATURES).to_numpy()) @ clf.coef_[0], clf.coef_[0]


def _report(name: str, df: pl.DataFrame, score: str, base: dict[int, dict[str, float]]) -> None:
    r1, r5 = _recall(df, score, 1), _recall(df, score, 5)
    won = sum(r5[q] > base[5][q] for q in r5)
    lost = sum(r5[q] < base[5][q] for q in r5)
    print(f"  {name:34} R@1 {np.mean(list(r1.values())):.3f}  R@5 {np.mean(list(r5.values())):.3f}"
          f"  (R@5 against MG2-RAG: +{won} -{lost})")  # fmt: skip


@app.command()
def fit(
    train: Annotated[Path, typer.Option(help="Dev features (features --out).")],
    test: Annotated[list[Path], typer.Option(help="Feature files to score the dev-fitted models on.")] = [],  # noqa: B006
) -> None:
    tr = pl.read_parquet(train).with_columns((-pl.col("base_rank")).alias("mg2_order"))
    sets = {str(train) + " (leave one document out)": tr}
    sets |= {str(t): pl.read_parquet(t).with_columns((-pl.col("base_rank")).alias("mg2_order")) for t in test}
    for name, df in sets.items():
        print(f"{name}: {df['qid'].n_unique()} questions, {len(df)} pages")
        base = {k: _recall(df, "mg2_order", k) for k in (1, 5)}
        _report("MG2-RAG (auto), as retrieved", df, "mg2_order", base)
        for kind in ("pointwise", "pairwise", "boosted"):
            if df is tr:
                scores = np.zeros(len(df))
                for doc in df["doc"].unique():
                    held = (df["doc"] == doc).to_numpy()
                    predict, _ = _model(kind, df.filter(~pl.Series(held)))
                    scores[held] = predict(df.filter(pl.Series(held)))
            else:
                predict, coef = _model(kind, tr)
                scores = predict(df)
                if kind != "boosted":
                    weights = ", ".join(f"{f} {c:+.2f}" for f, c in zip(FEATURES, coef, strict=True))
                    print(f"  {kind} weights: {weights}")
            # ties broken by MG2-RAG's order, so a page the model cannot tell apart keeps its place
            scored = df.with_columns(pl.Series("fit", scores + 1e-9 * df["mg2_order"].to_numpy()))
            label = f"{kind} logistic regression" if kind != "boosted" else "gradient-boosted trees"
            _report(label, scored, "fit", base)


if __name__ == "__main__":
    app()
