"""What every generation backend shares: the request it gets, what it returns, and the ``Generator`` protocol.

A backend turns a rendered prompt (system and user messages, optional pictures) into text, at once
or streamed. It also receives the structured evidence the prompt was built from, which the
extractive backend answers from directly (it has no model).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


class GenerationError(RuntimeError):
    """A backend could not answer (server down, timeout, missing model); the message says which and how to fix it."""


@dataclass(frozen=True)
class Evidence:
    """One numbered item of the context a model sees, and what a citation of it points at."""

    label: int  # the number the prompt shows, [label]
    kind: str  # chunk | triple | entity
    text: str  # what the prompt shows for it
    chunk_id: str
    doc_id: str
    title: str
    source_path: str
    page: int | None = None
    image_ids: tuple[str, ...] = ()
    objects: tuple[tuple[str, str, tuple[float, float, float, float] | None], ...] = ()  # object id, image id, box
    time_span: tuple[float, float] | None = None  # start, end seconds, for media transcripts
    sentences: tuple[tuple[str, float], ...] = ()  # (sentence text, its retrieval score), best first
    score: float = 0.0
    chunk_index: int | None = None  # the chunk's position in its document, to read across adjacent chunks
    mentions: tuple[tuple[str, str], ...] | None = None  # the build's entity spans in the chunk (text, label)


@dataclass(frozen=True)
class GenerationRequest:
    """A prompt for a backend: messages, pictures for vision models, and the evidence behind it."""

    system: str
    user: str
    question: str
    evidence: tuple[Evidence, ...] = ()
    images: tuple[Path, ...] = ()
    max_tokens: int = 512
    temperature: float = 0.0
    # what the answer layer attaches, opaque here (the ground floor names no upper layer's type, not even for type
    # checking): the question's analysis (``mmkg.generation.question.QuestionAnalysis``: answer type, relation,
    # names) and the short answer read out of the evidence (``mmkg.generation.reader.ShortAnswer``)
    analysis: Any = None
    reading: Any = None


@dataclass
class Generation:
    """A backend's answer text with what it cost."""

    text: str
    backend: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    extractive: bool = False  # the text is copied from the evidence, not written by a model
    used: list[int] = field(default_factory=list)  # evidence labels an extractive answer copied from
    reading: Any = None  # the short answer (a ``ShortAnswer``) a backend that reads spans found itself (the reader's
    # when None)


class Generator(Protocol):
    """A generation backend: ``generate`` returns the whole answer, ``stream`` yields it in pieces."""

    name: str
    model: str

    def generate(self, request: GenerationRequest) -> Generation: ...

    def stream(self, request: GenerationRequest) -> Iterator[str]: ...

    def count_tokens(self, text: str) -> int: ...


def approx_tokens(text: str) -> int:
    """Token count estimate when a backend has no tokenizer at hand: about 4 characters per token (English,
    BPE tokenizers of current LLMs). Budgets built on it are conservative for prose and loose for numbers.
    """
    return max(1, (len(text) + 3) // 4) if text else 0
