"""A read-only multi-level property graph over a published index (R2AG's MMPG, as a view).

Levels and edges: document → chunk → sentence, and chunk → image → object (a picture the chunk
shows, an object grounded in it). Every node has properties: its text (document title, chunk and
sentence text, a picture's caption-free source, an object's entity name), its picture (``blob_path``)
where it has one, and its **entity set**:

- sentence: the entities mentioned in it (M_SMI's non-zero columns);
- chunk: the entities of its sentences, plus the image-side entities of the pictures it shows;
- image: the entities grounded in it as objects (by OCR or the detector) and its detector labels;
- object: its entity and its detector label;
- document: the union of its chunks'.

Entities are named by key: an entity of the graph by its canonical key, a detector label as
``label:<word>`` (the detector's class name, which may match an entity's name only softly). Nothing
is copied or written: the view reads the version's payload tables on first use and keeps only
lookups in memory. ``PropertyGraph.of(index)`` returns one shared view per open index.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from mmkg.index.derived import derived
from mmkg.retrieval import evidence as ev

if TYPE_CHECKING:
    from mmkg.index.reader import Index

LABEL_PREFIX = "label:"
LEVELS = ("document", "chunk", "sentence", "image", "object")


@dataclass(frozen=True)
class PGNode:
    level: str  # one of LEVELS
    id: str
    parent: str | None  # the node one level up (a picture's parent is the chunk that shows it here)
    text: str
    entities: frozenset[str]
    image_path: str = ""
    children: tuple[str, ...] = ()


@dataclass
class Subgraph:
    """The nodes of some chunks at every level, built per query and kept in memory only."""

    nodes: dict[tuple[str, str], PGNode] = field(default_factory=dict)

    def at(self, level: str) -> list[PGNode]:
        return [n for (lv, _), n in self.nodes.items() if lv == level]

    def __len__(self) -> int:
        return len(self.nodes)


class PropertyGraph:
    """The multi-level property graph of one open index version (lookups built on first use)."""

    def __init__(self, index: Index):
        self.index = index
        self._sentence_entities: dict[str, frozenset[str]] | None = None
        self._image_entities: dict[str, frozenset[str]] | None = None
        self._df: dict[str, int] | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self._chunk_sentences: dict[str, list[str]] | None = None
        self._picture_rows: tuple[dict[str, dict], dict[str, list[dict]]] | None = None

    @classmethod
    def of(cls, index: Index) -> PropertyGraph:
        return derived(index, "property_graph", lambda: cls(index))

    # -- entity sets ------------------------------------------------------------------------------

    @property
    def sentence_entities(self) -> dict[str, frozenset[str]]:
        if self._sentence_entities is None:
            inc = self.index.m_smi
            m = inc.matrix.tocsr()
            cols = inc.col_ids
            self._sentence_entities = {
                str(sid): frozenset(str(cols[j]) for j in m.indices[m.indptr[i] : m.indptr[i + 1]])
                for i, sid in enumerate(inc.row_ids)
                if m.indptr[i + 1] > m.indptr[i]
            }
        return self._sentence_entities

    @property
    def image_entities(self) -> dict[str, frozenset[str]]:
        if self._image_entities is None:
            out: dict[str, set[str]] = defaultdict(set)
            for o in self.index.objects.select("image_id", "entity_key", "label").iter_rows(named=True):
                if o["entity_key"]:
                    out[o["image_id"]].add(o["entity_key"])
                if o["label"]:
                    out[o["image_id"]].add(LABEL_PREFIX + str(o["label"]).lower())
            self._image_entities = {k: frozenset(v) for k, v in out.items()}
        return self._image_entities

    def chunk_entities(self, chunk_id: str, image_ids: Iterable[str] = ()) -> frozenset[str]:
        """A chunk's multimodal entity set: its sentences' entities and its pictures' image-side entities."""
        ents: set[str] = set()
        for sid in self._sentences_of().get(chunk_id, ()):
            ents |= self.sentence_entities.get(sid, frozenset())
        for iid in image_ids:
            ents |= self.image_entities.get(iid, frozenset())
        return frozenset(ents)

    def _sentences_of(self) -> dict[str, list[str]]:
        if self._chunk_sentences is None:
            grouped = self.index.sentences.group_by("chunk_id", maintain_order=True).agg(pl.col("sentence_id"))
            self._chunk_sentences = dict(zip(grouped["chunk_id"].to_list(), grouped["sentence_id"].to_list(),
                                             strict=True))  # fmt: skip
        return self._chunk_sentences

    # -- the multi-level view of some chunks --------------------------------------------------------

    def subgraph(self, chunk_ids: Sequence[str]) -> Subgraph:
        """Every level's nodes for these chunks: their documents, the chunks, sentences, pictures, objects."""
        idx = self.index
        sub = Subgraph()
        chunks = idx.chunks.filter(pl.col("chunk_id").is_in(list(chunk_ids)))
        by_chunk = {r["chunk_id"]: r for r in chunks.iter_rows(named=True)}
        sentences = self._sentences_of()
        stext = dict(idx.sentences.filter(pl.col("chunk_id").is_in(list(chunk_ids)))
                     .select("sentence_id", "text").iter_rows())  # fmt: skip
        images, objects_of = self._pictures()
        docs: dict[str, list[str]] = defaultdict(list)
        titles: dict[str, str] = {}
        for cid in chunk_ids:
            c = by_chunk.get(cid)
            if c is None:
                continue
            image_ids = [i for i in (c["image_ids"] or []) if i in images]
            ents = self.chunk_entities(cid, image_ids)
            sids = sentences.get(cid, [])
            sub.nodes[("chunk", cid)] = PGNode("chunk", cid, c["doc_id"], c["text"], ents,
                                               children=tuple(sids) + tuple(image_ids))  # fmt: skip
            docs[c["doc_id"]].append(cid)
            titles[c["doc_id"]] = c["title"]
            for sid in sids:
                sub.nodes[("sentence", sid)] = PGNode("sentence", sid, cid, stext.get(sid, ""),
                                                      self.sentence_entities.get(sid, frozenset()))  # fmt: skip
            for iid in image_ids:
                objs = objects_of.get(iid, [])
                sub.nodes[("image", iid)] = PGNode(
                    "image", iid, cid, images[iid]["source"], self.image_entities.get(iid, frozenset()),
                    image_path=images[iid]["blob_path"], children=tuple(o["object_id"] for o in objs),
                )  # fmt: skip
                for o in objs:
                    ents = {o["entity_key"]} if o["entity_key"] else set()
                    if o["label"]:
                        ents.add(LABEL_PREFIX + str(o["label"]).lower())
                    sub.nodes[("object", o["object_id"])] = PGNode(
                        "object", o["object_id"], iid, o["entity_name"] or o["label"] or "", frozenset(ents),
                        image_path=o["crop_path"] or "",
                    )  # fmt: skip
        for doc_id, cids in docs.items():
            ents = frozenset().union(*(sub.nodes[("chunk", c)].entities for c in cids))
            sub.nodes[("document", doc_id)] = PGNode("document", doc_id, None, titles[doc_id], ents,
                                                     children=tuple(cids))  # fmt: skip
        return sub

    def _pictures(self) -> tuple[dict[str, dict], dict[str, list[dict]]]:
        """Picture rows by image id, and each picture's object rows (built once per view)."""
        if self._picture_rows is None:
            images = {r["image_id"]: r for r in self.index.images.iter_rows(named=True)}
            objects_of: dict[str, list[dict]] = defaultdict(list)
            for o in self.index.objects.iter_rows(named=True):
                objects_of[o["image_id"]].append(o)
            self._picture_rows = (images, dict(objects_of))
        return self._picture_rows

    # -- entity names, IDF weights and name vectors --------------------------------------------------

    def name(self, key: str) -> str:
        """The text an entity key stands for (its name; a detector label's word)."""
        if key.startswith(LABEL_PREFIX):
            return key[len(LABEL_PREFIX) :]
        return ev.entity_names(self.index).get(key, (key, ""))[0]

    @property
    def document_frequency(self) -> dict[str, int]:
        """Chunks whose entity set holds each entity (labels counted through the pictures chunks show)."""
        if self._df is None:
            df: dict[str, int] = defaultdict(int)
            for ents in self.chunk_entity_sets().values():
                for e in ents:
                    df[e] += 1
            self._df = dict(df)
        return self._df

    def chunk_entity_sets(self) -> dict[str, frozenset[str]]:
        chunks = self.index.chunks.select("chunk_id", "image_ids")
        return {cid: self.chunk_entities(cid, iids or []) for cid, iids in chunks.iter_rows()}

    def idf(self, key: str) -> float:
        """ln((N + 1) / (df + 1)) + 1 over the N chunks: an entity no chunk holds weighs most."""
        n = self.index.n_chunks
        return math.log((n + 1) / (self.document_frequency.get(key, 0) + 1)) + 1.0

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of entity texts in the index's encoder space, encoded once per text and kept."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            enc = self.index._encoder().encode_text(missing)
            for t, v in zip(missing, np.asarray(enc, dtype=np.float32), strict=True):
                n = float(np.linalg.norm(v))
                self._vectors[t] = v / n if n > 0 else v
        dim = self.index.manifest.encoder.dim
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, dim), np.float32)
