"""mKG-RAG dual-stage retrieval (``../shared/seeds/mKG-RAG.txt``, section 3.2), on the shared index.

Stage 1, embedding-based retrieval (eq. 2): the query's vector against one vector per document; the
top ``K_d`` documents are the candidates. A document is embedded as the ℓ2-normalized mean of its
chunk and picture vectors (``mmkg.index.units.document_vectors``, published as the ``documents``
LanceDB table), standing in for the paper's trained evidence encoder.

Stage 2, graph-based retrieval: the query-specific graph G_m is the union of the candidate documents'
graphs, merging identical nodes (entities by canonical key) and edges (the same triple). Its
entities and relations are scored by cosine to the query: an entity through its per-document
vector (name plus the sentences that mention it, ``mmkg.embedding.compose_entity_vectors``; the paper
embeds an LLM-written name and description), a relation through its "subject predicate object" text.
The top ``K_g`` elements (entities or relations) form G_r^0, which breadth-first search expands by
``l`` hops through G_m's relations (eq. 3), keeping only neighbours whose similarity to the query is
at least ``neighbor_threshold`` (the paper's "query-relevant neighbours"; it gives no number).

The answer context is the selected entities and relations with their text segments (the chunks that
mention an entity, the chunk a triple was stated in). Chunks are ranked by the support of the
selected elements: the sum of the similarities of the elements whose segments they are; chunks of the
candidate documents that no element supports follow, by their own cosine to the query.

The paper's MLLM vision-text matching happens at indexing time in its pipeline; ours grounds entities
in pictures with the offline backends (OCR, detectors), and the objects of the selected entities in
the candidate documents are returned with the result.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import polars as pl

from mmkg.retrieval import evidence as ev
from mmkg.retrieval.base import Filters, Params, PresetStrategy, Query, param
from mmkg.retrieval.results import EntityHit, RelationHit, RetrievalResult
from mmkg.retrieval.vectors import query_vector

if TYPE_CHECKING:
    from mmkg.index.reader import Index


@dataclass(frozen=True)
class MKGParams(Params):
    """mKG-RAG parameters; the defaults are the paper's (section 4.1: K_d = 10, K_g = 10, l = 1)."""

    doc_top_k: int = param(10, "K_d: documents recalled by dense search in stage 1")
    graph_top_k: int = param(10, "K_g: entities or relations of the candidates' graph selected by similarity")
    hops: int = param(1, "l: breadth-first expansion depth from the selected elements through relations")
    neighbor_threshold: float = param(
        0.3, "a neighbour reached by the expansion is kept when its cosine to the query is at least this"
    )

    def __post_init__(self) -> None:
        for name in ("doc_top_k", "graph_top_k"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1; got {getattr(self, name)}")
        if self.hops < 0:
            raise ValueError(f"hops must be >= 0; got {self.hops}")


PRESETS: dict[str, MKGParams] = {"paper": MKGParams()}


@dataclass
class _Node:
    """An entity of G_m: the candidate documents' copies of one canonical entity merged."""

    key: str
    name: str
    label: str
    score: float
    docs: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)


@dataclass
class _Edge:
    """A relation of G_m: the same triple stated in one or more places merged."""

    key: tuple[str, str, str | None, bool]  # subject key, predicate, object key, negated
    score: float
    rows: list[dict[str, Any]] = field(default_factory=list)  # relation payload rows, best first


class MKG(PresetStrategy):
    """mKG-RAG: coarse document recall, then entity/relation retrieval in the candidates' graph plus BFS."""

    name: ClassVar[str] = "mkg"
    summary: ClassVar[str] = (
        "mKG-RAG: dense recall of the top K_d documents, then the K_g entities/relations of their merged graph most "
        "similar to the query, expanded l hops by breadth-first search to query-relevant neighbours"
    )
    modalities: ClassVar[frozenset[str]] = frozenset({"text", "image"})
    presets: ClassVar[dict[str, MKGParams]] = PRESETS
    default_preset: ClassVar[str] = "paper"

    params: MKGParams

    def retrieve(self, index: Index, query: Query, k: int, filters: Filters = None) -> RetrievalResult:
        p = self.params
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        result = self.new_result(index, query)
        q = query_vector(index, query)
        timings["encode"] = (time.perf_counter() - t0) * 1e3
        allowed = index.allowed_docs(filters)

        # stage 1: coarse document recall (eq. 2)
        t1 = time.perf_counter()
        candidates = index.units("documents").top(q, p.doc_top_k, allowed)
        docs = [d for d, _ in candidates]
        timings["documents"] = (time.perf_counter() - t1) * 1e3
        if not docs:
            result.notes.append("no document passed the filters" if allowed is not None else "the index is empty")
            result.timings_ms = {"total": round((time.perf_counter() - t0) * 1e3, 2)}
            return result

        # stage 2: the query-specific graph G_m of the candidates, scored against the query
        t1 = time.perf_counter()
        nodes, edges = self._graph(index, q, docs)
        timings["graph"] = (time.perf_counter() - t1) * 1e3
        elements = [(n.score, "e", n.key) for n in nodes.values()] + [(e.score, "r", e.key) for e in edges.values()]
        elements.sort(key=lambda x: (-x[0], x[1], str(x[2])))
        selected_nodes: dict[str, int] = {}  # entity key -> hop
        selected_edges: dict[tuple, int] = {}
        for _, kind, key in elements[: p.graph_top_k]:
            if kind == "e":
                selected_nodes[key] = 0
            else:
                selected_edges[key] = 0
        result.seeds = len(selected_nodes) + len(selected_edges)

        # breadth-first expansion through G_m's relations, keeping query-relevant neighbours (eq. 3)
        t1 = time.perf_counter()
        incident: dict[str, list[tuple]] = defaultdict(list)
        for ekey in edges:
            subj, _, obj, _ = ekey
            incident[subj].append(ekey)
            if obj is not None:
                incident[obj].append(ekey)
        frontier = set(selected_nodes)
        for ekey in selected_edges:
            frontier |= {ekey[0]} | ({ekey[2]} if ekey[2] is not None else set())
        frontier &= set(nodes)
        for hop in range(1, p.hops + 1):
            reached: set[str] = set()
            for ent in sorted(frontier):
                for ekey in incident.get(ent, []):
                    other = ekey[2] if ekey[0] == ent else ekey[0]
                    if ekey not in selected_edges and edges[ekey].score >= p.neighbor_threshold:
                        selected_edges[ekey] = hop
                    fresh = other is not None and other in nodes and other not in selected_nodes
                    if fresh and nodes[other].score >= p.neighbor_threshold:
                        selected_nodes[other] = hop
                        reached.add(other)
            frontier = reached
            if not frontier:
                break
        timings["expand"] = (time.perf_counter() - t1) * 1e3

        # chunks ranked by the support of the selected elements, then the candidates' other chunks by cosine
        t1 = time.perf_counter()
        support: dict[str, float] = defaultdict(float)
        for key in selected_nodes:
            for cid in nodes[key].chunks:
                support[cid] += nodes[key].score
        for ekey in selected_edges:
            for cid in dict.fromkeys(r["chunk_id"] for r in edges[ekey].rows):
                support[cid] += edges[ekey].score
        candidate_rows, chunk_cos = index.cosines_for_docs("chunks", q, docs)
        ids = index.meta["chunks"]["id"]
        scored = [
            (support.get(ids[int(i)], 0.0), float(c), int(i)) for i, c in zip(candidate_rows, chunk_cos, strict=True)
        ]
        scored.sort(key=lambda x: (-x[0], -x[1], x[2]))
        top = scored[:k]
        chunk_scores = np.zeros(index.n_chunks, dtype=np.float32)
        for s, _, row in top:
            chunk_scores[row] = s
        sent = np.zeros(len(index.positions["sentences"]), dtype=np.float32)
        sent_rows, sent_cos = index.cosines_for_docs("sentences", q, docs)
        sent[sent_rows] = sent_cos
        result.chunks = ev.chunks(index, [row for _, _, row in top], chunk_scores, None, sent)
        in_result = {c.chunk_id for c in result.chunks}
        chosen = sorted(((nodes[key], h) for key, h in selected_nodes.items()), key=lambda x: (x[1], -x[0].score))
        result.entities = [
            EntityHit(n.key, n.name, n.label, n.score, hop, list(n.docs), [c for c in n.chunks if c in in_result])
            for n, hop in chosen
        ]
        result.relations = [
            self._relation_hit(index, edges[ekey], hop)
            for ekey, hop in sorted(selected_edges.items(), key=lambda kv: (kv[1], -edges[kv[0]].score))
        ]
        result.objects = self._objects(index, set(selected_nodes), docs)
        timings["rank"] = (time.perf_counter() - t1) * 1e3
        result.notes.append(
            f"stage 1: {len(docs)} candidate documents; stage 2: G_m of {len(nodes)} entities and {len(edges)} "
            f"relations, {result.seeds} selected, {len(selected_nodes) + len(selected_edges) - result.seeds} added by "
            f"{p.hops}-hop expansion (threshold {p.neighbor_threshold})"
        )
        timings["total"] = (time.perf_counter() - t0) * 1e3
        result.timings_ms = {key: round(v, 2) for key, v in timings.items()}
        return result

    @staticmethod
    def _graph(index: Index, q: np.ndarray, docs: list[str]) -> tuple[dict[str, _Node], dict[tuple, _Edge]]:
        """G_m: the candidates' entities merged by key and relations merged by triple, each scored by cosine."""
        unit_ids, _, unit_cos = index.units("document_entities").for_docs(q, docs)
        cos_of = dict(zip(unit_ids, unit_cos.tolist(), strict=True))
        rows = index.payload("document_entities").filter(pl.col("unit_id").is_in(unit_ids))
        rank = {d: i for i, d in enumerate(docs)}
        nodes: dict[str, _Node] = {}
        for r in sorted(rows.iter_rows(named=True), key=lambda r: (rank[r["doc_id"]], r["unit_id"])):
            s = float(cos_of[r["unit_id"]])
            node = nodes.get(r["entity_key"])
            if node is None:
                nodes[r["entity_key"]] = _Node(r["entity_key"], r["name"], r["label"], s, [r["doc_id"]],
                                               list(r["chunk_ids"] or []))  # fmt: skip
                continue
            if s > node.score:
                node.score, node.name, node.label = s, r["name"], r["label"]
            node.docs.append(r["doc_id"])
            node.chunks.extend(c for c in r["chunk_ids"] or [] if c not in node.chunks)
        rel_ids, _, rel_cos = index.units("relations").for_docs(q, docs)
        rcos = dict(zip(rel_ids, rel_cos.tolist(), strict=True))
        rels = index.payload("relations").filter(pl.col("relation_id").is_in(rel_ids))
        edges: dict[tuple, _Edge] = {}
        for r in rels.iter_rows(named=True):
            s = float(rcos[r["relation_id"]])
            key = (r["subject_key"], r["predicate"], r["object_key"], bool(r["negated"]))
            edge = edges.setdefault(key, _Edge(key, s))
            edge.score = max(edge.score, s)
            edge.rows.append({**r, "_score": s})
        for edge in edges.values():
            edge.rows.sort(key=lambda r: (-r["_score"], r["relation_id"]))
        return nodes, edges

    @staticmethod
    def _relation_hit(index: Index, edge: _Edge, hop: int) -> RelationHit:
        best = edge.rows[0]
        return ev.relation_hit(best, edge.score, ev.sentence_text(index, best["sentence_id"]), hop)

    @staticmethod
    def _objects(index: Index, keys: set[str], docs: list[str]) -> list:
        """Grounded objects of the selected entities, in pictures the candidate documents show."""
        if not keys:
            return []
        occ = index.object_occurrences.filter(pl.col("doc_id").is_in(docs))["object_id"].unique().implode()
        objs = index.objects.filter(pl.col("object_id").is_in(occ) & pl.col("entity_key").is_in(list(keys)))
        return [ev.object_hit(o) for o in objs.sort("score", descending=True).iter_rows(named=True)]
