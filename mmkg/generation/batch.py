"""Answering a file of questions into a table (what the ``answers`` asset and downstream jobs read).

Questions come from JSON (a list, or ``{"questions": [...]}``) or JSONL: each an object with
``question`` and optionally ``id``, ``image`` (a path relative to the file) and ``filters``. A question
that fails (a server error, an unreadable picture) becomes a row with its ``error`` and the rest go on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from mmkg import schemas
from mmkg.generation.answer import answer
from mmkg.generation.base import GenerationError, Generator


class QuestionsError(ValueError):
    """The questions file cannot be read; the message names the file and the problem."""


def load_questions(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionsError(f"{path}: cannot read the questions file ({exc})") from exc
    try:
        if path.suffix == ".jsonl":
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            items = data.get("questions", data) if isinstance(data, dict) else data
    except json.JSONDecodeError as exc:
        raise QuestionsError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(items, list):
        raise QuestionsError(f"{path}: expected a list of questions or {{'questions': [...]}}")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"question": item}
        if not isinstance(item, dict) or not str(item.get("question", "")).strip():
            raise QuestionsError(f"{path}: item {i} has no 'question'")
        image = item.get("image")
        out.append(
            {
                "id": str(item.get("id", i)),
                "question": str(item["question"]),
                "image": (path.parent / image) if image else None,
                "filters": item.get("filters"),
            }
        )
    return out


def answer_questions(
    index: Any,
    questions: list[dict[str, Any]],
    generator: Generator,
    strategy: str | None = None,
    task: str | None = None,
    k: int = 8,
    budget: int = 1500,
    on_answer: Callable[[int, int], None] | None = None,
) -> pl.DataFrame:
    """One row per question (schema ``mmkg.schemas.ANSWERS``): the answer, its citations, cost and any error."""
    rows = []
    for i, q in enumerate(questions):
        t0 = time.perf_counter()
        row: dict[str, Any] = {"question_id": q["id"], "question": q["question"], "index_version": index.version}
        try:
            a = answer(index, q["question"], generator, image=q.get("image"), strategy=strategy, task=task, k=k,
                       budget=budget, filters=q.get("filters"))  # fmt: skip
            row.update(
                answer=a.text, short_answer=a.short_answer, answer_type=a.answer_type, confidence=a.confidence,
                backend=a.backend, model=a.model, task=a.task, strategy=a.strategy,
                extractive=a.extractive, prompt_tokens=a.prompt_tokens, completion_tokens=a.completion_tokens,
                retrieve_ms=a.latency_ms.get("retrieve", 0.0), generate_ms=a.latency_ms.get("generate", 0.0),
                invalid_citations=a.invalid_citations, error="",
                citations=[
                    {"label": c.label, "chunk_id": c.chunk_id, "doc_id": c.doc_id, "source_path": c.source_path,
                     "page": c.page, "image_ids": list(c.image_ids)}
                    for c in a.citations
                ],
            )  # fmt: skip
        except (GenerationError, ValueError, OSError) as exc:
            row.update(answer="", short_answer="", answer_type="", confidence=0.0, backend=generator.name,
                       model=generator.model, task=task or "",
                       strategy=strategy or "mg2", extractive=False, prompt_tokens=0, completion_tokens=0,
                       retrieve_ms=0.0, generate_ms=(time.perf_counter() - t0) * 1e3, invalid_citations=0,
                       error=f"{type(exc).__name__}: {exc}", citations=[])  # fmt: skip
        rows.append(row)
        if on_answer:
            on_answer(i + 1, len(questions))
    return schemas.frame(rows, schemas.ANSWERS)
