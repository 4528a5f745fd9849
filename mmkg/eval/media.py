"""Scoring retrieval over time-based media: did the result point at the right file and the right moment?

A question's gold is a media file and a time span (``tests/data/media_queries/questions.json``). A
result points at moments through ``RetrievalResult.media`` (frames and transcript chunks, best first):

- ``hit@k``: one of the first k pointers is in the gold file and its midpoint lies in the gold span;
- ``file@1``: the first pointer is in the gold file;
- ``span_iou@1``: overlap of the first pointer's span with the gold span, over their union (a frame,
  a point in time, scores 1 inside the gold span and 0 outside).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmkg.retrieval.results import MediaSpan, RetrievalResult


@dataclass(frozen=True)
class MediaQuestion:
    id: str
    question: str
    video: Path | None
    image: Path | None
    answer: str
    source_path: str
    t_start: float
    t_end: float


def load_questions(path: Path | str) -> list[MediaQuestion]:
    """Questions with their query files resolved next to the JSON file."""
    path = Path(path)
    out = []
    for q in json.loads(path.read_text(encoding="utf-8")):
        gold = q["gold"]
        out.append(
            MediaQuestion(
                q["id"], q["question"], path.parent / q["video"] if q.get("video") else None,
                path.parent / q["image"] if q.get("image") else None, q.get("answer", ""), gold["source_path"],
                float(gold["t_start"]), float(gold["t_end"]),
            )
        )  # fmt: skip
    return out


def _inside(span: MediaSpan, q: MediaQuestion) -> bool:
    mid = (span.t_start + span.t_end) / 2
    return span.source_path == q.source_path and q.t_start <= mid <= q.t_end


def span_iou(span: MediaSpan, q: MediaQuestion) -> float:
    if span.source_path != q.source_path:
        return 0.0
    if span.t_end <= span.t_start:  # a moment
        return 1.0 if q.t_start <= span.t_start <= q.t_end else 0.0
    inter = max(0.0, min(span.t_end, q.t_end) - max(span.t_start, q.t_start))
    union = max(span.t_end, q.t_end) - min(span.t_start, q.t_start)
    return inter / union if union > 0 else 0.0


def score(result: RetrievalResult, q: MediaQuestion, ks: tuple[int, ...] = (1, 3, 5)) -> dict[str, Any]:
    spans = result.media
    out: dict[str, Any] = {f"hit@{k}": float(any(_inside(s, q) for s in spans[:k])) for k in ks}
    out["file@1"] = float(bool(spans) and spans[0].source_path == q.source_path)
    out["span_iou@1"] = span_iou(spans[0], q) if spans else 0.0
    return out
