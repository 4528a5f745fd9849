"""Retrieval metrics over ranked units (titles or pages); pure functions of lists, no index needed.

- recall@k: share of a question's relevant units in the top k (HippoRAG's metric).
- perfect@k: 1 when every relevant unit is in the top k, else 0 (fast-graphrag's "perfect retrieval").
- reciprocal rank: 1 / rank of the first relevant unit, 0 when none was retrieved (mean: MRR).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np


def units_by_best_chunk(chunk_units: Iterable[str]) -> list[str]:
    """Units in the order of their best-ranked chunk (a unit ranks where its first chunk does)."""
    return list(dict.fromkeys(chunk_units))


def _check(relevant: Sequence[str], k: int) -> None:
    if not relevant:
        raise ValueError("a question without relevant units has no recall; leave it out of retrieval metrics")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def recall_at_k(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    _check(relevant, k)
    top = set(ranked[:k])
    return sum(1 for r in set(relevant) if r in top) / len(set(relevant))


def perfect_at_k(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    _check(relevant, k)
    return float(set(relevant) <= set(ranked[:k]))


def reciprocal_rank(ranked: Sequence[str], relevant: Sequence[str]) -> float:
    _check(relevant, 1)
    rel = set(relevant)
    for rank, unit in enumerate(ranked, start=1):
        if unit in rel:
            return 1.0 / rank
    return 0.0


def question_metrics(ranked: Sequence[str], relevant: Sequence[str], ks: Sequence[int]) -> dict[str, float]:
    """All metrics of one question: ``recall@k``, ``perfect@k`` for each k, and ``rr``."""
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(ranked, relevant, k)
    for k in ks:
        out[f"perfect@{k}"] = perfect_at_k(ranked, relevant, k)
    out["rr"] = reciprocal_rank(ranked, relevant)
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Mean of each metric over questions (``rr`` becomes ``mrr``); empty input gives an empty dict."""
    if not rows:
        return {}
    return {("mrr" if key == "rr" else key): float(np.mean([r[key] for r in rows])) for key in rows[0]}


def grouped_means(
    rows: Sequence[dict[str, float]], groups: Sequence[Iterable[str]], keep: Callable[[str], bool] = lambda _: True
) -> dict[str, dict[str, float]]:
    """Means per group; a row belongs to every group it names (a question can have several evidence sources)."""
    members: dict[str, list[dict[str, float]]] = {}
    for row, names in zip(rows, groups, strict=True):
        for name in names:
            members.setdefault(name, []).append({k: v for k, v in row.items() if keep(k)})
    return {name: {**mean_metrics(rs), "n": float(len(rs))} for name, rs in sorted(members.items())}


def latency_summary(ms: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / mean of per-query latencies in milliseconds."""
    if not ms:
        return {"p50_ms": float("nan"), "p95_ms": float("nan"), "mean_ms": float("nan"), "n": 0.0}
    a = np.asarray(ms, dtype=float)
    return {
        "p50_ms": float(np.percentile(a, 50)),
        "p95_ms": float(np.percentile(a, 95)),
        "mean_ms": float(a.mean()),
        "n": float(len(a)),
    }
