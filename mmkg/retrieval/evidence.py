"""Evidence: what a ranked list of chunk rows becomes in a result (sentences, pictures, objects, entities).

Every strategy ranks chunk rows of the graph; this module turns them into ``RetrievedChunk`` records
with each chunk's best sentences, the pictures it shows (and every place the corpus shows them), the
objects found in them, and turns entity nodes and triples into ``EntityHit`` and ``RelationHit``.
The lookups it needs are built once per open index (``lookups(index)``), so a query's evidence costs
dictionary reads and row reads, not table scans; ``chunk_record``, ``image_record``, ``entity_names``,
``sentence_text`` and ``chunk_sentences`` read them for strategies and the apps. The index (``mmkg.index``)
knows nothing of evidence: it holds the tables these lookups are built from.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from mmkg.index.derived import derived
from mmkg.retrieval.results import (
    EntityHit,
    ImageHit,
    ImageOccurrence,
    ObjectHit,
    RelationHit,
    RetrievedChunk,
    SentenceHit,
)

if TYPE_CHECKING:
    from mmkg.index.reader import Index

SENTENCES_PER_CHUNK = 3  # best sentences reported with each chunk


class _Keyed(Mapping[str, Any]):
    """A read-only mapping whose keys are those of ``self._keys`` (an id -> row dict); ``__getitem__`` reads."""

    _keys: Mapping[str, Any]

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class RowsById(_Keyed):
    """A payload frame's rows by id, read from the frame when asked for.

    What a dict of every row held as Python objects cost: at 103k chunks (332k sentences, 249k
    entities) the reader's lookups took 0.47 GiB, every text held twice, once in the frame and once
    as Python strings; a query reads a few dozen rows. Only an id -> row number dict is kept.
    ``columns`` picks what a row is: a dict of every column (None), one column's value (a str), or a
    tuple of columns.
    """

    def __init__(
        self,
        frame: pl.DataFrame,
        key: str,
        columns: str | tuple[str, ...] | None = None,
        positions: tuple[pl.Series, Mapping[str, int]] | None = None,
    ):
        """``positions``: ids in some order and their id -> row dict (the reader's graph and matrix orders);
        reused instead of a new dict when the frame's ids are in that very order."""
        self._frame = frame
        if positions is not None and _same_order(frame[key], positions[0]):
            self._keys = positions[1]
        else:
            self._keys = {k: i for i, k in enumerate(frame[key].to_list())}
        self._columns = columns
        self._series = {c: frame[c] for c in ((columns,) if isinstance(columns, str) else columns or ())}

    def __getitem__(self, key: str) -> Any:
        i = self._keys[key]
        if self._columns is None:
            return self._frame.row(i, named=True)
        if isinstance(self._columns, str):
            return self._series[self._columns][i]
        return tuple(self._series[c][i] for c in self._columns)


def _same_order(a: pl.Series, b: pl.Series) -> bool:
    return a.len() == b.len() and bool((a.to_numpy() == b.to_numpy()).all())


class SentencesByChunk(_Keyed):
    """Chunk id -> ``(sentence row, sentence id, text)`` of its sentences in order, built when asked for.

    Sentence rows are the incidence matrix's (``m_smi``); the publish writes the sentence payload in that
    order, and when a version's payload is in another order the rows are mapped through ``positions``.
    """

    def __init__(self, sentences: pl.DataFrame, positions: Mapping[str, int], row_ids: pl.Series):
        self._ids = sentences["sentence_id"]
        self._text = sentences["text"]
        self._pos = None if _same_order(self._ids, row_ids) else positions
        grouped = sentences.select("chunk_id").with_row_index("_r").group_by("chunk_id", maintain_order=True).agg("_r")
        self._keys = dict(zip(grouped["chunk_id"].to_list(), grouped["_r"].to_numpy(), strict=True))

    def __getitem__(self, chunk_id: str) -> list[tuple[int, str, str]]:
        out = []
        for r in self._keys[chunk_id].tolist():
            sid = self._ids[r]
            out.append((self._pos[sid] if self._pos is not None else r, sid, self._text[r]))
        return out


@dataclass(frozen=True)
class Lookups:
    """Row lookups of one index version, keyed by id."""

    chunks: Mapping[str, dict]  # chunk id -> payload row
    sentences: Mapping[str, list[tuple[int, str, str]]]  # chunk id -> (sentence row, sentence id, text), in order
    sentence_text: Mapping[str, str]
    images: dict[str, dict]  # image id -> payload row
    image_node: dict[str, int]  # image id -> graph node
    objects: dict[str, list[dict]]  # chunk id -> object rows of its pictures
    occurrences: dict[str, list[ImageOccurrence]]  # image id -> every place the corpus shows it
    shown_as: dict[tuple[str, str], str]  # (image id, doc id) -> how that document shows it
    entity_names: Mapping[str, tuple[str, str]]  # entity key -> (name, label)

    @classmethod
    def build(cls, index: Index) -> Lookups:
        sentence_order = pl.Series(index.m_smi.row_ids, dtype=pl.String)
        sentence_pos, chunk_pos = index.positions["sentences"], index.positions["chunks"]
        object_rows = {o["object_id"]: o for o in index.objects.iter_rows(named=True)}
        objects: dict[str, list[dict]] = {}
        for oid, cid in index.object_occurrences.select("object_id", "chunk_id").iter_rows():
            if oid in object_rows:
                objects.setdefault(cid, []).append(object_rows[oid])
        docs = {d["doc_id"]: d for d in index.documents.iter_rows(named=True)}
        occurrences: dict[str, list[ImageOccurrence]] = {}
        shown_as: dict[tuple[str, str], str] = {}
        occ = index.image_occurrences
        order = [c for c in ("partition", "doc_id", "occurrence") if c in occ.columns]
        for o in occ.sort(order).iter_rows(named=True):
            d = docs.get(o["doc_id"], {})
            occurrences.setdefault(o["image_id"], []).append(
                ImageOccurrence(
                    doc_id=o["doc_id"], partition=o["partition"], title=d.get("title", ""),
                    source_path=d.get("source_path", ""), source=o.get("source") or "",
                    page=o.get("page"), alt_text=o.get("alt_text") or "", t_s=o.get("t_s"),
                )
            )  # fmt: skip
            shown_as.setdefault((o["image_id"], o["doc_id"]), o.get("source") or "")
        entities = index.entities
        return cls(
            chunks=RowsById(index.chunks, "chunk_id", positions=(index.meta["chunks"]["id"], chunk_pos)),
            sentences=SentencesByChunk(index.sentences, sentence_pos, sentence_order),
            sentence_text=RowsById(index.sentences, "sentence_id", "text", (sentence_order, sentence_pos)),
            images={i["image_id"]: i for i in index.images.iter_rows(named=True)},
            image_node={key: index.n_chunks + j for j, key in enumerate(index.meta["images"]["id"].to_list())},
            objects=objects,
            occurrences=occurrences,
            shown_as=shown_as,
            entity_names=(RowsById(entities, "entity_key", ("name", "label")) if entities is not None else {}),
        )


def lookups(index: Index) -> Lookups:
    """Row lookups for evidence of one open index, built on first use and kept while the index is open."""
    return derived(index, "evidence.lookups", lambda: Lookups.build(index))


def chunk_record(index: Index, chunk_id: str) -> dict | None:
    """A chunk's published row (text, document, page or time span, picture ids), None when unknown."""
    return lookups(index).chunks.get(chunk_id)


def image_record(index: Index, image_id: str) -> dict | None:
    """A picture's published row (blob path, size, format), None when unknown."""
    return lookups(index).images.get(image_id)


def entity_names(index: Index) -> Mapping[str, tuple[str, str]]:
    """Entity key -> (name, label) for the index's entities."""
    return lookups(index).entity_names


def sentence_text(index: Index, sentence_id: str) -> str:
    """A sentence's text ("" when unknown)."""
    return lookups(index).sentence_text.get(sentence_id, "")


def chunk_sentences(index: Index, chunk_id: str) -> list[tuple[int, str, str]]:
    """``(sentence row, sentence id, text)`` of a chunk's sentences, in order."""
    return lookups(index).sentences.get(chunk_id, [])


def object_hit(o: dict) -> ObjectHit:
    return ObjectHit(
        o["object_id"], o["image_id"], o["entity_name"], o["backend"], float(o["score"]), o.get("entity_key") or "",
        (float(o["x0"]), float(o["y0"]), float(o["x1"]), float(o["y1"])) if "x0" in o else None,
        o.get("crop_path") or "",
    )  # fmt: skip


def relation_hit(r: dict, score: float, sentence: str, hop: int = 0) -> RelationHit:
    return RelationHit(
        relation_id=r["relation_id"], subject=r["subject"], predicate=r["predicate"], object=r["object"],
        subject_key=r["subject_key"], object_key=r["object_key"], negated=bool(r["negated"]), sentence=sentence,
        chunk_id=r["chunk_id"], doc_id=r["doc_id"], score=float(score), hop=hop,
    )  # fmt: skip


def chunks(
    index: Index,
    rows: list[int],
    chunk_scores: np.ndarray,
    node_scores: np.ndarray | None = None,
    sentence_scores: np.ndarray | None = None,
    same_as_query: set[str] | None = None,
) -> list[RetrievedChunk]:
    """Ranked chunks (graph chunk rows, best first) with their best sentences, pictures and objects.

    ``chunk_scores`` is indexed by chunk row; ``node_scores`` (graph node order) scores pictures;
    ``sentence_scores`` (sentence row order) picks each chunk's best sentences.
    """
    look = lookups(index)
    all_ids = index.meta["chunks"]["id"]
    same_as_query = same_as_query or set()
    out = []
    for rank, i in enumerate(rows, start=1):
        cid = all_ids[i]
        c = look.chunks[cid]
        hits = sorted(
            (
                SentenceHit(sid, text, float(sentence_scores[pos]) if sentence_scores is not None else 0.0)
                for pos, sid, text in look.sentences.get(cid, [])
            ),
            key=lambda h: -h.score,
        )[:SENTENCES_PER_CHUNK]
        imgs = [
            ImageHit(
                iid, look.shown_as.get((iid, c["doc_id"])) or m["source"], m["blob_path"],
                float(node_scores[look.image_node[iid]]) if node_scores is not None else 0.0,
                look.occurrences.get(iid, []), iid in same_as_query,
            )
            for iid in dict.fromkeys(c["image_ids"] or [])
            if (m := look.images.get(iid)) is not None
        ]  # fmt: skip
        objs = [object_hit(o) for o in look.objects.get(cid, [])]
        out.append(
            RetrievedChunk(
                rank=rank, chunk_id=cid, doc_id=c["doc_id"], partition=c["partition"], title=c["title"],
                source_path=c["source_path"], page=c["page"], text=c["text"], score=float(chunk_scores[i]),
                sentences=hits, images=imgs, objects=objs, t_start=c.get("t_start"), t_end=c.get("t_end"),
                chunk_index=c.get("chunk_index"),
            )
        )  # fmt: skip
    return out


def entity_hit(index: Index, node: int, score: float, chunk_ids: set[str], hop: int = 0) -> EntityHit:
    """An entity node as evidence: its name and label, and which of ``chunk_ids`` mention it."""
    look = lookups(index)
    key = index.graph.nodes["key"][node]
    name, label = look.entity_names.get(key, (key, ""))
    adj = index.graph.adjacency
    nbrs = adj.indices[adj.indptr[node] : adj.indptr[node + 1]]
    ids = index.meta["chunks"]["id"]
    mentioned = [ids[int(i)] for i in nbrs[nbrs < index.n_chunks]]
    in_result = [c for c in mentioned if c in chunk_ids]
    docs = sorted({look.chunks[c]["doc_id"] for c in in_result})
    return EntityHit(key, name, label, score, hop, docs, in_result)
