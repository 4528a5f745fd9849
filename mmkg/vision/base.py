"""Shared types of the grounding backends.

A backend receives, per image, the entities of the text around it (the chunk the image sits in,
else its document) and returns the regions of the image that show or name those entities, each
with a confidence σ. Backends never raise for one bad image: they report it and go on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels of the stored image


@dataclass(frozen=True)
class EntityPrompt:
    key: str  # canonical entity key (mmkg.entities.canonical_key)
    name: str  # surface form used as the prompt / matched against text
    label: str = ""  # NER label, for synonym lookup and display


@dataclass
class GroundingTask:
    image_id: str
    path: Path  # the stored blob
    entities: list[EntityPrompt]
    chunk_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OcrLine:
    text: str
    score: float
    quad: tuple[tuple[float, float], ...]  # 4 corner points, clockwise from top-left

    @property
    def box(self) -> Box:
        xs = [p[0] for p in self.quad]
        ys = [p[1] for p in self.quad]
        return (min(xs), min(ys), max(xs), max(ys))


@dataclass(frozen=True)
class Detection:
    image_id: str
    entity_key: str
    entity_name: str
    backend: str  # "ocr" | "ultralytics"
    label: str  # what matched: OCR text or detector class name
    box: Box
    score: float  # σ
    polygons: tuple[tuple[float, ...], ...] = ()  # mask outlines, flat x0,y0,x1,y1,...


@dataclass
class GroundingOutcome:
    image_id: str
    detections: list[Detection]
    error: str | None = None  # set when the image could not be processed; detections is then empty


class Grounder(Protocol):
    name: str

    def ground(self, tasks: Sequence[GroundingTask], tau: float) -> Iterator[GroundingOutcome]:
        """One outcome per task, in order; detections with σ <= tau are dropped."""
        ...
