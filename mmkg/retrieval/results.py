"""What a retrieval strategy returns: ranked chunks with their evidence, plus the graph evidence it selected.

Chunks carry the sentences, pictures and objects that made them relevant; the result also lists the
entities and relations (triples with the sentence they come from) and objects a strategy selected,
with scores, so generation can put graph elements into a prompt and cite them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from mmkg.enumerations import Enumeration


@dataclass(frozen=True)
class SentenceHit:
    sentence_id: str
    text: str
    score: float


@dataclass(frozen=True)
class ImageOccurrence:
    """One place a picture is shown: the same picture (one image id) can be in many documents and partitions."""

    doc_id: str
    partition: str
    title: str
    source_path: str  # the document's file
    source: str  # where the picture came from (image file, or PDF page and object)
    page: int | None
    alt_text: str
    t_s: float | None = None  # a video frame's time in its video, seconds


@dataclass(frozen=True)
class ImageHit:
    image_id: str
    source: str  # where this chunk's document shows it
    blob_path: str
    score: float
    occurrences: list[ImageOccurrence] = field(default_factory=list)  # every place in the index that shows it
    same_as_query: bool = False  # the image query is this picture (same bytes, or the same perceptual hash)


@dataclass(frozen=True)
class ObjectHit:
    object_id: str
    image_id: str
    entity_name: str
    backend: str
    sigma: float  # grounding confidence of the object
    entity_key: str = ""
    box: tuple[float, float, float, float] | None = None  # x0, y0, x1, y1 in the image's pixels
    crop_path: str = ""  # relative to the data root


@dataclass(frozen=True)
class EntityHit:
    """An entity a strategy selected, with the chunks that mention it (within the result's documents)."""

    entity_key: str
    name: str
    label: str
    score: float
    hop: int = 0  # 0: selected by the query itself; n: reached n hops from a selected element
    doc_ids: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RelationHit:
    """A triple a strategy selected, with the sentence it was extracted from."""

    relation_id: str
    subject: str
    predicate: str
    object: str
    subject_key: str
    object_key: str | None
    negated: bool
    sentence: str
    chunk_id: str
    doc_id: str
    score: float
    hop: int = 0

    def text(self) -> str:
        """The triple as the strategies embed it: "subject predicate object" (negation kept)."""
        return " ".join(p for p in (self.subject, "not" if self.negated else "", self.predicate, self.object) if p)


@dataclass
class RetrievedChunk:
    rank: int
    chunk_id: str
    doc_id: str
    partition: str
    title: str
    source_path: str
    page: int | None
    text: str
    score: float
    sentences: list[SentenceHit] = field(default_factory=list)
    images: list[ImageHit] = field(default_factory=list)
    objects: list[ObjectHit] = field(default_factory=list)
    t_start: float | None = None  # media transcripts: the time span of the chunk, seconds
    t_end: float | None = None
    chunk_index: int | None = None  # position in its document (the next chunk of the document is index + 1)
    mentions: tuple[tuple[str, str], ...] | None = None  # the build's entity spans (text, label), when attached


@dataclass(frozen=True)
class MediaSpan:
    """Where in a video or audio file a result points: a transcript chunk's span, or a frame's moment (start = end)."""

    doc_id: str
    source_path: str
    t_start: float
    t_end: float
    score: float
    via: str  # chunk | frame
    chunk_id: str = ""
    image_id: str = ""


@dataclass
class RetrievalResult:
    version: str
    strategy: str  # registry name of the strategy that answered
    preset: str | None  # its named parameter set, when it has presets ("custom" for a Preset object)
    query_text: str | None
    query_image: str | None
    chunks: list[RetrievedChunk]
    seeds: int = 0  # MG2-RAG: nodes with seed mass; other strategies: elements selected before expansion
    timings_ms: dict[str, float] = field(default_factory=dict)
    linked_entities: list[str] = field(default_factory=list)  # entity keys the text query named (seeded)
    matched_images: list[str] = field(default_factory=list)  # image ids that are the query picture (seeded)
    references: list[str] = field(default_factory=list)  # pages and parts the text query pointed at (seeded)
    entities: list[EntityHit] = field(default_factory=list)
    relations: list[RelationHit] = field(default_factory=list)
    objects: list[ObjectHit] = field(default_factory=list)
    media: list[MediaSpan] = field(default_factory=list)  # video/audio time spans the result points at, best first
    notes: list[str] = field(default_factory=list)  # what the strategy did or skipped, in words
    params: dict[str, Any] = field(default_factory=dict)  # the parameters it ran with
    # a question that counts a document's labelled parts: the top document's parts of the kind it counts
    # (mmkg.parts.PARTS rows; generation.answer.retrieve fills it, strategies leave it empty)
    parts: list[dict[str, Any]] = field(default_factory=list)
    # a question that asks how many of something: the top document's numbered and bulleted lists on the evidence's
    # pages, best first (mmkg.enumerations.Enumeration; generation.answer.retrieve fills it)
    lists: list[Enumeration] = field(default_factory=list)
    # a question that points at pages ("on the last page", "page 14"): the pages it points at in the top document,
    # as {doc_id: [page, ...]} with both readings of a number (printed label and position; generation.answer.retrieve
    # fills it, strategies leave it empty)
    pointed_pages: dict[str, list[int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def chunk_spans(result: RetrievalResult) -> list[MediaSpan]:
    """The time spans of a result's media transcript chunks, in rank order (what any strategy points at)."""
    return [
        MediaSpan(c.doc_id, c.source_path, float(c.t_start), float(c.t_end or c.t_start), c.score, "chunk", c.chunk_id)
        for c in result.chunks
        if c.t_start is not None
    ]
