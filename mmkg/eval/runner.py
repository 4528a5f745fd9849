"""Run every method on every question over one index; score, time and keep per-question results.

Scopes: ``corpus`` (retrieval over the whole index) always; ``document`` (retrieval filtered to the
question's own document) when the dataset's questions name one (MMLongBench-Doc). Questions with
no relevant unit (unanswerable) are kept in the per-question file but left out of the metrics.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmkg.eval.datasets import Dataset
from mmkg.eval.methods import Method, chunk_table
from mmkg.eval.metrics import grouped_means, latency_summary, mean_metrics, question_metrics, units_by_best_chunk
from mmkg.index.reader import Index

DEFAULT_KS = (1, 2, 5, 8, 10)


@dataclass
class EvalReport:
    dataset: str
    index: dict[str, Any]
    methods: list[str]
    ks: list[int]
    depth: int
    scopes: list[str]
    n_questions: int
    n_scored: int  # answerable questions, the ones the metrics average over
    summary: dict[str, dict[str, dict[str, float]]]  # scope -> method -> metric -> value
    by_source: dict[str, dict[str, dict[str, dict[str, float]]]]  # scope -> method -> source -> metric -> value
    latency: dict[str, dict[str, float]]  # method -> p50_ms / p95_ms / mean_ms / n (all scopes)
    setup_s: dict[str, float]
    questions: list[dict[str, Any]]
    unreachable: list[str] = field(default_factory=list)  # relevant units with no chunk in the index
    build: dict[str, Any] | None = None
    open_s: float = 0.0
    created_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S"))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def write(self, out_dir: Path) -> tuple[Path, Path]:
        """``results.json`` (everything, per question too) and ``report.md`` (the tables)."""
        from mmkg.atomic import write_bytes
        from mmkg.eval.report import markdown

        out_dir.mkdir(parents=True, exist_ok=True)
        rpath, mpath = out_dir / "results.json", out_dir / "report.md"
        write_bytes(rpath, json.dumps(self.to_dict(), indent=1, ensure_ascii=False).encode("utf-8"))
        write_bytes(mpath, markdown(self).encode("utf-8"))
        return rpath, mpath


def run_eval(
    index: Index,
    dataset: Dataset,
    methods: Sequence[Method],
    ks: Sequence[int] = DEFAULT_KS,
    depth: int = 50,
    on_step: Callable[[], None] | None = None,
) -> EvalReport:
    """Ask every question with every method (and scope); ``depth`` chunks are retrieved per call.

    ``on_step`` is called after each (question, method, scope) call, for a progress bar.
    """
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise ValueError(f"k values must be >= 1, got {ks}")
    if depth < ks[-1]:
        raise ValueError(f"depth {depth} is below the largest k {ks[-1]}")
    units = {
        row["chunk_id"]: dataset.unit_of(row["title"], row["source_path"], row["page"])
        for row in chunk_table(index).iter_rows(named=True)
    }
    # a question's own document, found by file name: independent of how the corpus was partitioned
    doc_ids: dict[str, list[str]] = {}
    for doc_id, source_path in index.documents.select("doc_id", "source_path").iter_rows():
        doc_ids.setdefault(Path(source_path).name, []).append(doc_id)
    if missing := sorted({q.doc for q in dataset.questions if q.doc and q.answerable} - set(doc_ids)):
        raise ValueError(f"{dataset.name}: documents not in the index {index.root}: {missing}")
    scopes = ["corpus"] + (["document"] if any(q.doc for q in dataset.questions) else [])
    scored = [q for q in dataset.questions if q.answerable]
    indexed = set(units.values())
    if dataset.unit_kind == "title" and (unknown := sorted({u for q in scored for u in q.relevant} - indexed)):
        raise ValueError(f"{dataset.name}: supporting titles not in the index {index.root}: {unknown[:10]}")
    # pages no chunk came from (e.g. image-only pages without OCR text): no method can find them
    unreachable = sorted({u for q in scored for u in q.relevant} - indexed)
    if scored:  # warm-up: model weights, BLAS, evidence lookups; not timed
        for m in methods:
            m.search(scored[0].question, depth, None)

    latencies: dict[str, list[float]] = {m.name: [] for m in methods}
    rows: dict[str, dict[str, list[dict[str, float]]]] = {s: {m.name: [] for m in methods} for s in scopes}
    per_question: list[dict[str, Any]] = []
    for q in dataset.questions:
        rec: dict[str, Any] = {
            "id": q.id, "question": q.question, "relevant": list(q.relevant), "doc": q.doc,
            "sources": list(q.sources), "answerable": q.answerable, "results": {},
        }  # fmt: skip
        per_question.append(rec)
        if not q.answerable:
            continue
        for scope in scopes:
            filters = {"doc_id": doc_ids[q.doc]} if scope == "document" and q.doc else None
            rec["results"][scope] = {}
            for m in methods:
                t0 = time.perf_counter()
                chunk_ids = m.search(q.question, depth, filters)
                ms = (time.perf_counter() - t0) * 1e3
                latencies[m.name].append(ms)
                ranked = units_by_best_chunk(units[c] for c in chunk_ids)
                metrics = question_metrics(ranked, q.relevant, ks)
                rows[scope][m.name].append(metrics)
                rec["results"][scope][m.name] = {
                    "ranked": ranked[: ks[-1]],
                    "first_hit": next((i for i, u in enumerate(ranked, 1) if u in set(q.relevant)), None),
                    "metrics": metrics,
                    "ms": round(ms, 2),
                    **({"why": why} if (why := m.explain()) else {}),
                }
                if on_step:
                    on_step()

    groups = [list(q.sources) for q in scored]
    info = index.info()
    return EvalReport(
        dataset=dataset.name,
        index={k: info[k] for k in ("root", "version", "encoder", "partitions", "counts")},
        methods=[m.name for m in methods],
        ks=list(ks),
        depth=depth,
        scopes=scopes,
        n_questions=len(dataset.questions),
        n_scored=len(scored),
        summary={s: {name: mean_metrics(r) for name, r in by_m.items()} for s, by_m in rows.items()},
        by_source={
            s: {name: grouped_means(r, groups, keep=lambda key: key.startswith("recall@")) for name, r in by_m.items()}
            for s, by_m in rows.items()
        }
        if any(groups)
        else {},
        latency={name: latency_summary(ms) for name, ms in latencies.items()},
        setup_s={m.name: round(m.setup_s, 3) for m in methods},
        questions=per_question,
        unreachable=unreachable,
    )


def steps_for(dataset: Dataset, methods: Sequence[Method]) -> int:
    """Number of ``on_step`` calls ``run_eval`` will make (the progress bar's total)."""
    scopes = 1 + int(any(q.doc for q in dataset.questions))
    return sum(q.answerable for q in dataset.questions) * scopes * len(methods)


def compare(a: dict[str, Any], b: dict[str, Any], metric: str = "perfect@8") -> list[dict[str, Any]]:
    """Questions whose ``metric`` differs between two ``results.json`` runs, per scope and method."""
    bq = {q["id"]: q for q in b["questions"]}
    out = []
    for qa in a["questions"]:
        qb = bq.get(qa["id"])
        if qb is None:
            continue
        for scope, by_m in qa["results"].items():
            for name, ra in by_m.items():
                rb = qb["results"].get(scope, {}).get(name)
                if rb is None or metric not in ra["metrics"]:
                    continue
                va, vb = ra["metrics"][metric], rb["metrics"][metric]
                if va != vb:
                    out.append({"id": qa["id"], "scope": scope, "method": name, "a": va, "b": vb,
                                "question": qa["question"]})  # fmt: skip
    return out
