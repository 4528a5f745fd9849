"""MMGraphRAG retrieval: seed entities and pictures by similarity, follow 1-hop reasoning paths, cite their chunks.

``../shared/seeds/MMGraphRAG.txt``, retrieval stage. The multimodal KG is the index's text graph plus
the cross-modal entity links CMEL published (``cross_modal_links``: a picture's OCR lines, detector
labels, caption entities and global entity aligned to text entities; ``mmkg/vision/cmel.py``).

1. **Seeds**: the ``entity_top_k`` entities most similar to the query (their per-document vectors;
   the paper's GraphRAG-local setting uses 10) and the ``image_top_k`` most similar pictures; an
   image query also seeds the corpus pictures that are the same picture (score 1).
2. **Reasoning paths**, one hop from a seed:
   - entity —predicate→ entity, through the text graph's triples (score: the seed's);
   - entity —shown in→ picture, through a cross-modal link (seed × link score);
   - picture —shows→ entity, through a cross-modal link (picture × link score).
3. **Chunks** are ranked by the summed scores of the paths they hold (a triple's chunk, the chunk that
   shows a linked picture) plus the scores of seed entities they mention; the rest of the top-k is
   filled by dense chunk similarity. The result carries the paths as relations (``xmodal:`` ids for
   the cross-modal ones) and the seed entities, for the answer prompt.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import polars as pl

from mmkg.retrieval import evidence as ev
from mmkg.retrieval.base import Filters, Params, PresetStrategy, Query, param
from mmkg.retrieval.pictures import same_pictures
from mmkg.retrieval.results import EntityHit, RelationHit, RetrievalResult
from mmkg.retrieval.vectors import query_vector

if TYPE_CHECKING:
    from mmkg.index.reader import Index


@dataclass(frozen=True)
class MMGraphParams(Params):
    """MMGraphRAG parameters: the paper's GraphRAG-local retrieval takes the top 10 entities."""

    entity_top_k: int = param(10, "entities seeded by similarity to the query")
    image_top_k: int = param(5, "pictures seeded by similarity to the query")
    max_paths: int = param(40, "reasoning paths kept (best first)")
    dense_weight: float = param(
        0.0, "share of the chunk's own cosine to the query in its score (0: paths only, as the paper ranks)"
    )

    def __post_init__(self) -> None:
        for name in ("entity_top_k", "image_top_k", "max_paths"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative; got {getattr(self, name)}")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError(f"dense_weight must be within [0, 1]; got {self.dense_weight}")


#: ``paper`` ranks chunks by their paths alone; ``blend`` (ours) mixes in the chunk's own cosine, so a hub chunk
#: that many weak paths touch does not outrank the passage that answers
PRESETS: dict[str, MMGraphParams] = {"paper": MMGraphParams(), "blend": MMGraphParams(dense_weight=0.5)}


@dataclass(frozen=True)
class Path:
    subject: str
    predicate: str
    object: str
    subject_key: str
    object_key: str | None
    chunk_id: str
    doc_id: str
    score: float
    relation_id: str
    sentence: str = ""

    def hit(self) -> RelationHit:
        return RelationHit(
            self.relation_id, self.subject, self.predicate, self.object, self.subject_key, self.object_key, False,
            self.sentence, self.chunk_id, self.doc_id, self.score, hop=1,
        )  # fmt: skip


class MMGraph(PresetStrategy):
    """MMGraphRAG: entity and picture seeds, 1-hop paths through triples and cross-modal links."""

    name: ClassVar[str] = "mmgraph"
    summary: ClassVar[str] = (
        "MMGraphRAG: seed the entities and pictures most similar to the query, follow 1-hop reasoning paths through "
        "triples and CMEL's cross-modal entity links, rank chunks by the paths they hold"
    )
    modalities: ClassVar[frozenset[str]] = frozenset({"text", "image"})
    presets: ClassVar[dict[str, MMGraphParams]] = PRESETS
    default_preset: ClassVar[str] = "paper"

    params: MMGraphParams

    def retrieve(self, index: Index, query: Query, k: int, filters: Filters = None) -> RetrievalResult:
        p = self.params
        t0 = time.perf_counter()
        result = self.new_result(index, query)
        q = query_vector(index, query)
        allowed = index.allowed_docs(filters)
        masks = index.masks(filters)

        # seeds: entities (best per-document copy) and pictures
        seeds: dict[str, float] = {}
        seed_chunks: dict[str, list[str]] = defaultdict(list)
        if p.entity_top_k:
            units = index.units("document_entities").top(q, p.entity_top_k * 4, allowed)
            score_of = dict(units)
            rows = index.payload("document_entities").filter(pl.col("unit_id").is_in(list(score_of)))
            for r in sorted(rows.iter_rows(named=True), key=lambda r: -score_of[r["unit_id"]]):
                key = r["entity_key"]
                if key not in seeds and len(seeds) >= p.entity_top_k:
                    continue
                seeds[key] = max(seeds.get(key, -1.0), score_of[r["unit_id"]])
                seed_chunks[key].extend(r["chunk_ids"] or [])
        pictures: dict[str, float] = {}
        if p.image_top_k and index.n_images:
            scores = index.dense_scores("images", q, p.image_top_k, masks["images"])
            if masks["images"] is not None:
                scores = np.where(masks["images"], scores, -np.inf)
            ids = index.meta["images"]["id"]
            for i in np.argsort(-scores, kind="stable")[: p.image_top_k]:
                if np.isfinite(scores[i]):
                    pictures[ids[int(i)]] = float(scores[i])
        if query.image is not None:
            for iid, _ in same_pictures(index, query.image):
                pictures[iid] = 1.0
                result.matched_images.append(iid)
        result.seeds = len(seeds) + len(pictures)

        paths = self._paths(index, seeds, pictures, allowed)[: p.max_paths]
        support: dict[str, float] = defaultdict(float)
        for path in paths:
            support[path.chunk_id] += path.score
        for key, s in seeds.items():
            for cid in dict.fromkeys(seed_chunks[key]):
                support[cid] += s
        dense = index.dense_scores("chunks", q, max(k, 50), masks["chunks"])
        if masks["chunks"] is not None:
            dense = np.where(masks["chunks"], dense, -np.inf)
        pos = index.positions["chunks"]
        ids = index.meta["chunks"]["id"]
        by_dense = [int(r) for r in np.argsort(-dense, kind="stable")[: max(k, 50)] if np.isfinite(dense[r])]
        if p.dense_weight > 0:  # blend: path support and the chunk's own cosine, each scaled by its best
            top_support = max(support.values(), default=0.0) or 1.0
            top_dense = float(dense[by_dense[0]]) if by_dense and dense[by_dense[0]] > 0 else 1.0
            # a chunk beyond the dense top max(k, 50) without paths is outranked by those 50: it cannot make the top k
            for r in by_dense:
                if dense[r] > 0:
                    support.setdefault(ids[r], 0.0)
            support = defaultdict(float, {
                c: (1 - p.dense_weight) * v / top_support
                + p.dense_weight * max(float(dense[pos[c]]), 0.0) / top_dense * (np.isfinite(dense[pos[c]]))
                for c, v in support.items() if c in pos
            })  # fmt: skip
        ranked = sorted(support, key=lambda c: (-support[c], -float(dense[pos[c]]) if c in pos else 0.0, c))
        rows = index.chunk_rows(ranked)
        if allowed is not None:
            docs = index.meta["chunks"]["doc_id"]
            rows = [r for r in rows if docs[r] in allowed]
        rows = rows[:k]
        for r in by_dense:
            if len(rows) >= k:
                break
            if r not in rows:
                rows.append(r)
        chunk_scores = np.zeros(index.n_chunks, dtype=np.float32)
        for r in rows:
            chunk_scores[r] = support.get(ids[r], 0.0) or float(max(dense[r], 0.0)) * 1e-3
        sent = np.zeros(len(index.positions["sentences"]), dtype=np.float32)
        docs_of = sorted({index.meta["chunks"]["doc_id"][r] for r in rows})
        srows, scos = index.cosines_for_docs("sentences", q, docs_of)
        sent[srows] = scos
        result.chunks = ev.chunks(index, rows, chunk_scores, None, sent, set(result.matched_images))
        in_result = {c.chunk_id for c in result.chunks}
        names = ev.entity_names(index)
        doc_of = {c.chunk_id: c.doc_id for c in result.chunks}
        result.entities = []
        for key, s in sorted(seeds.items(), key=lambda kv: -kv[1]):
            mentioned = [c for c in dict.fromkeys(seed_chunks[key]) if c in in_result]
            docs = sorted({doc_of[c] for c in mentioned})
            result.entities.append(EntityHit(key, *names.get(key, (key, "")), s, 0, docs, mentioned))
        result.relations = [x.hit() for x in paths]
        n_cross = sum(1 for x in paths if x.relation_id.startswith("xmodal:"))
        result.notes.append(
            f"{len(seeds)} entity and {len(pictures)} picture seeds; {len(paths)} one-hop paths "
            f"({n_cross} through cross-modal links)"
        )
        if not index.has_payload("cross_modal_links"):
            result.notes.append("this index version has no cross-modal links (published before CMEL): text paths only")
        result.timings_ms = {"total": round((time.perf_counter() - t0) * 1e3, 2)}
        return result

    @staticmethod
    def _paths(index: Index, seeds: dict[str, float], pictures: dict[str, float], allowed: set[str] | None) -> list:
        out: list[Path] = []
        keys = list(seeds)
        if keys and index.has_table("relations"):
            rels = index.payload("relations").filter(
                pl.col("subject_key").is_in(keys) | pl.col("object_key").is_in(keys)
            )
            if allowed is not None:
                rels = rels.filter(pl.col("doc_id").is_in(list(allowed)))
            for r in rels.iter_rows(named=True):
                s = max(seeds.get(r["subject_key"], 0.0), seeds.get(r["object_key"] or "", 0.0))
                out.append(Path(r["subject"], r["predicate"], r["object"], r["subject_key"], r["object_key"],
                                r["chunk_id"], r["doc_id"], s, r["relation_id"],
                                ev.sentence_text(index, r["sentence_id"])))  # fmt: skip
        if index.has_payload("cross_modal_links"):
            links = index.payload("cross_modal_links").filter(pl.col("entity_key").is_not_null())
            if allowed is not None:
                links = links.filter(pl.col("doc_id").is_in(list(allowed)))
            hit = links.filter(pl.col("entity_key").is_in(keys) | pl.col("image_id").is_in(list(pictures)))
            for r in hit.iter_rows(named=True):
                link = float(r["score"])
                picture = f"picture {r['image_id'][:8]} ({r['kind']}: {r['image_entity']})"
                if r["entity_key"] in seeds:
                    out.append(Path(r["entity_name"], "shown in", picture, r["entity_key"], None, r["chunk_id"],
                                    r["doc_id"], seeds[r["entity_key"]] * link, f"xmodal:{r['link_id']}"))  # fmt: skip
                if r["image_id"] in pictures:
                    out.append(Path(picture, "shows", r["entity_name"], r["entity_key"], r["entity_key"],
                                    r["chunk_id"], r["doc_id"], pictures[r["image_id"]] * link,
                                    f"xmodal:{r['link_id']}:shows"))  # fmt: skip
        out.sort(key=lambda x: (-x.score, x.relation_id))
        return out
