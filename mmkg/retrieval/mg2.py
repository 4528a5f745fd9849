"""MG2-RAG (the backbone): multi-granularity dense seeds spread by Personalized PageRank (section 3.2).

1. Dense scores of the text and/or image query against chunks, sentences, images and objects;
   only each granularity's top-k are kept (the seed activations).
2. Sentence and object scores are mean-pooled onto entity nodes through the incidence matrices (eq. 2).
3. u = [ω_C s_C; ω_I s_I; s_M] per query modality; r0 = λ_t u_t + λ_v u_v, normalized (eq. 3).
   Our additions, each a separate seed channel with its own weight (0 in the paper's presets):
   entities the text query names (``entity_seed_weight``), BM25 over chunks (``lexical_seed_weight``),
   and the corpus pictures that are the query picture (``same_picture_weight``).
4. Personalized PageRank r <- α W r + (1 - α) r0 until the L1 change is <= ε (eq. 4).
5. Our addition (``bridge_weight``, 0 in the paper's presets): a second PPR round seeded also on the
   own pages of the entities that round one's best passages lead to (``mmkg.retrieval.bridge``).
6. Chunks are ranked by r; the entities with the most relevance and the triples among them are the
   graph evidence. Our addition (``page_sentence_weight``, ``longdoc`` only): the top candidates are re-ranked
   by their page's best sentence (``mmkg.retrieval.page_sentences``).

Presets: the paper's Table 5, our ``default`` (entity-centric, multi-hop) and ``longdoc``, and ``auto``
(the strategy's default), which picks ``default`` or ``longdoc`` per query (``route``).
"""

from __future__ import annotations

import time
from dataclasses import MISSING, dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mmkg.retrieval import evidence as ev
from mmkg.retrieval import page_sentences
from mmkg.retrieval.base import Filters, Params, Query, _coerce, param
from mmkg.retrieval.bridge import bridge_seeds, maps
from mmkg.retrieval.expansion import expand, load_lexicon
from mmkg.retrieval.pictures import same_pictures
from mmkg.retrieval.propagation import Granular, activation, keep_top_k, seed_distribution
from mmkg.retrieval.references import References, reference_seeds
from mmkg.retrieval.results import EntityHit, RelationHit, RetrievalResult
from mmkg.retrieval.vectors import image_vector

if TYPE_CHECKING:
    from mmkg.index.reader import Index

GRANULARITIES = ("chunks", "sentences", "images", "objects")


@dataclass(frozen=True)
class TopK:
    chunk: int
    sentence: int
    image: int
    object: int

    def __post_init__(self) -> None:
        for name in ("chunk", "sentence", "image", "object"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"top-k for {name} must be an integer of at least 1; got {value!r}")


@dataclass(frozen=True)
class Preset(Params):
    """MG2-RAG hyperparameters; Table 5 of the paper gives the dataset presets.

    Per-granularity top-k are set as ``text_topk_<g>`` / ``visual_topk_<g>`` with g in chunk,
    sentence, image, object.
    """

    alpha: float = param(MISSING, "damping α: share of relevance that propagates along edges")
    omega_c: float = param(MISSING, "chunk node weight ω_C in the activation u")
    omega_i: float = param(MISSING, "image node weight ω_I in the activation u")
    lambda_t: float = param(MISSING, "text-query fusion weight λ_t")
    lambda_v: float = param(MISSING, "image-query fusion weight λ_v")
    text_topk: TopK = param(MISSING, "dense seeds kept per granularity for the text query")
    visual_topk: TopK = param(MISSING, "dense seeds kept per granularity for the image query")
    seed_top_k: int | None = param(None, "keep only the strongest seeds of r0 (None: every activated node)")
    entity_seed_weight: float = param(
        0.0, "share of r0 on entities the query names (0: dense seeds only, as the paper)"
    )
    lexical_seed_weight: float = param(0.0, "share of r0 on the BM25 top chunks (0: none, as the paper)")
    lexical_top_k: int = param(10, "how many BM25 chunks seed")
    expansion: str = param(
        "",
        "comma list of query-expansion lexicons for the BM25 seeds (mmkg.retrieval.expansion; 'finance': a metric's "
        "name brings the statement line items it is computed from); '': the corpus's setting "
        "(MMKG_QUERY_EXPANSION, none by default)",
        server="paths",
    )
    entity_chunk_share: float = param(0.0, "share of a linked entity's mass moved onto its chunks, by query similarity")
    entity_chunk_temperature: float = param(0.05, "softmax temperature over those chunks' cosines")
    same_picture_weight: float = param(
        0.0,
        "weight, relative to the other channels, of the corpus pictures that are the query picture (same bytes or "
        "perceptual hash) and the chunks showing them; 0: the paper's r0",
    )
    reference_weight: float = param(
        0.0,
        "weight, relative to the other channels, of the chunks on the pages and in the parts the question points "
        'at ("page 5", "the cover page", "Figure 1", "Appendix C"; mmkg.retrieval.references); 0: none',
    )
    bridge_weight: float = param(
        0.0,
        "share of a second PPR round's r0 on the own pages of the entities round one's best passages lead to "
        "(mmkg.retrieval.bridge; 0: one round, as the paper)",
    )
    bridge_passages: int = param(
        1, "round-one chunks per linked entity (of its own page, else that mention it) that bridges are read from"
    )
    bridge_entities: int = param(2, "bridge entities kept per passage")
    bridge_temperature: float = param(
        0.05, "softmax temperature over the cosines of each candidate's mention context and the question's relation"
    )
    page_sentence_weight: float = param(
        0.0,
        "weight, on the best chunk's scale, of each candidate page's best sentence cosine with the question (min-max "
        "scaled over the candidates' pages; mmkg.retrieval.page_sentences); 0: chunks ranked by PPR alone",
    )
    eps: float = param(1e-6, "PPR convergence: stop when the L1 change is at most ε")

    def __post_init__(self) -> None:
        if min(self.entity_seed_weight, self.lexical_seed_weight) < 0 or (
            self.entity_seed_weight + self.lexical_seed_weight > 1
        ):
            raise ValueError(
                "entity_seed_weight and lexical_seed_weight must be >= 0 and sum to at most 1 (the dense seeds get "
                f"the rest); got {self.entity_seed_weight} and {self.lexical_seed_weight}"
            )
        for name in ("same_picture_weight", "reference_weight", "page_sentence_weight"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1]; got {getattr(self, name)}")
        if not 0 <= self.bridge_weight < 1 or self.bridge_temperature <= 0:
            raise ValueError(f"bridge_weight must be in [0, 1) and bridge_temperature > 0; got {self.bridge_weight} "
                             f"and {self.bridge_temperature}")  # fmt: skip
        if min(self.bridge_passages, self.bridge_entities) < 1:
            raise ValueError(f"bridge_passages and bridge_entities must be at least 1; got {self.bridge_passages} and "
                             f"{self.bridge_entities}")  # fmt: skip
        for name in filter(None, (n.strip() for n in self.expansion.split(","))):
            load_lexicon(name)  # an unknown lexicon fails when the preset is made, not at the first query
        if self.lexical_top_k < 1 or (self.seed_top_k is not None and self.seed_top_k < 1):
            raise ValueError(f"lexical_top_k and seed_top_k must be at least 1; got {self.lexical_top_k} and "
                             f"{self.seed_top_k}")  # fmt: skip

    def override(self, **changes: Any) -> Preset:
        """A copy with some parameters changed; unknown names are an error, not ignored."""
        tk = {k: v for k, v in changes.items() if k.startswith(("text_topk_", "visual_topk_"))}
        plain = {k: v for k, v in changes.items() if k not in tk}
        try:
            out = super().override(**plain)
        except ValueError as exc:
            if "unknown parameter" in str(exc):
                names = sorted(f for f in self.__dataclass_fields__)
                unknown = sorted(set(plain) - set(names))
                raise ValueError(
                    f"unknown retrieval parameter(s) {unknown}; known: {names} and text_topk_<g>, visual_topk_<g>"
                ) from exc
            raise
        for k, v in tk.items():
            group, _, gran = k.partition("_topk_")
            attr = f"{group}_topk"
            if gran not in TopK.__dataclass_fields__:
                raise ValueError(
                    f"unknown retrieval parameter {k!r}; g in {attr}_<g> is one of {list(TopK.__dataclass_fields__)}"
                )
            out = replace(out, **{attr: replace(getattr(out, attr), **{gran: int(_coerce(v, int, k))})})
        return out


PRESETS: dict[str, Preset] = {
    # Table 5, columns E-VQA, InfoSeek, ScienceQA, CrisisMMD Task-BC, Task-MC.
    "evqa": Preset(0.20, 0.8, 1.6, 0.1, 1.0, TopK(60, 3, 2, 3), TopK(200, 70, 2, 5)),
    "infoseek": Preset(0.15, 1.2, 0.5, 0.1, 1.0, TopK(200, 3, 2, 3), TopK(200, 60, 1, 5)),
    "scienceqa": Preset(0.85, 0.05, 1.0, 1.0, 1.0, TopK(4, 10, 10, 10), TopK(10, 10, 20, 10)),
    "crisis_bc": Preset(0.85, 0.2, 1.0, 1.0, 0.5, TopK(7, 5, 5, 5), TopK(3, 1, 1, 1)),
    "crisis_mc": Preset(0.70, 1.0, 1.0, 1.0, 1.0, TopK(12, 2, 3, 2), TopK(12, 3, 5, 3)),
    # Entity-centric and multi-hop QA: r0 on the chunks of the entities the query names, picked by query
    # similarity; dense seeds as the tie-breaker; moderate propagation; a second round from the entities
    # their passages lead to (tuned on 2Wiki dev, benchmarks/RESULTS.md).
    "default": Preset(
        0.5,
        1.0,
        1.0,
        1.0,
        1.0,
        TopK(20, 20, 5, 5),
        TopK(10, 10, 10, 10),
        entity_seed_weight=0.98,
        entity_chunk_share=1.0,
        entity_chunk_temperature=0.1,
        same_picture_weight=0.9,
        reference_weight=0.5,
        bridge_weight=0.3,
        bridge_passages=2,
    ),
    # Long-document QA (reports, slides, handbooks; MMLongBench-Doc): questions name few entities and
    # many exact terms, so BM25 and dense seeds share r0 (tuned on MMLongBench-Doc dev); the pages and parts a
    # question points at ("page 5", "Figure 1") seed too, and a financial metric's name brings the statement
    # line items it is computed from into the BM25 query when the corpus opts in (MMKG_QUERY_EXPANSION=finance);
    # the candidates' pages are re-ranked by their best sentence (chosen on dev, confirmed on validation).
    "longdoc": Preset(
        0.5,
        1.0,
        1.0,
        1.0,
        1.0,
        TopK(20, 20, 5, 5),
        TopK(10, 10, 10, 10),
        lexical_seed_weight=0.5,
        same_picture_weight=0.9,
        reference_weight=0.5,
        page_sentence_weight=0.2,
    ),
}


AUTO = "auto"
SCOPED_DOCS = 3  # a query filtered to at most this many documents is a within-document question


def route(index: Index, text: str | None, filters: Filters) -> str:
    """The preset ``auto`` answers with, from the question and the index, never from a list of questions.

    Within a few documents (the filters allow at most ``SCOPED_DOCS``), the words of a long document
    decide: ``longdoc`` (BM25, dense and reference seeds). Across the corpus, a question that names an
    entity with a page of its own (a document titled by it, as in an encyclopedia) is entity-centric,
    often multi-hop: ``default``, whose entity seeds and second hop walk from page to page. A question
    that names no such entity ("Apple" in a corpus of annual reports, where no document is titled by it)
    or nothing at all: ``longdoc``.
    """
    allowed = index.allowed_docs(filters)
    if allowed is not None and len(allowed) <= SCOPED_DOCS:
        return "longdoc"
    if text:
        pages = maps(index).pages
        if any(key in pages for link in index.link(text) for key in link.keys):
            return "default"
    return "longdoc"


def get_preset(name: str, **overrides: Any) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name].override(**overrides) if overrides else PRESETS[name]


def _finite_or_zero(scores: np.ndarray) -> np.ndarray:
    """Scores outside the top-k or the filters are -inf; evidence ranking reads them as 0."""
    return np.where(np.isfinite(scores), scores, 0.0)


def granular(
    index: Index, q: np.ndarray, topk: TopK, masks: dict[str, np.ndarray | None]
) -> tuple[Granular, dict[str, np.ndarray]]:
    """Dense scores of one query vector at every granularity, and the top-k activations."""
    k = {"chunks": topk.chunk, "sentences": topk.sentence, "images": topk.image, "objects": topk.object}
    raw = {name: index.dense_scores(name, q, k[name], masks[name]) for name in GRANULARITIES}
    g = Granular(
        chunk=keep_top_k(raw["chunks"], topk.chunk, masks["chunks"]),
        sentence=keep_top_k(raw["sentences"], topk.sentence, masks["sentences"]),
        image=keep_top_k(raw["images"], topk.image, masks["images"]),
        object=keep_top_k(raw["objects"], topk.object, masks["objects"]),
    )
    return g, raw


def entity_seeds(
    index: Index, text: str, chunk_cos: np.ndarray, mask: np.ndarray | None, p: Preset
) -> tuple[np.ndarray | None, list[str]]:
    """Seed mass for the entities the query names: one equal share per entity.

    A share ``entity_chunk_share`` of each entity's mass goes to the chunks it is mentioned in,
    weighted by softmax(cosine / ``entity_chunk_temperature``) of chunk and query, so the
    rest of the question picks among an entity's passages; the remainder sits on the entity node.
    """
    keys = list(dict.fromkeys(k for link in index.link(text) for k in link.keys))
    if not keys:
        return None, []
    entity_node = index.entity_node
    adj = index.graph.adjacency
    seeds = np.zeros(index.graph.n, dtype=np.float64)
    per = 1.0 / len(keys)
    for key in keys:
        node = entity_node[key]
        nbrs = adj.indices[adj.indptr[node] : adj.indptr[node + 1]]
        nbrs = nbrs[nbrs < index.n_chunks]
        if mask is not None:
            nbrs = nbrs[mask[nbrs]]
        cos = chunk_cos[nbrs] if nbrs.size else nbrs
        ok = np.isfinite(cos)
        share = p.entity_chunk_share if ok.any() else 0.0
        seeds[node] += per * (1.0 - share)
        if share > 0:
            nbrs, cos = nbrs[ok], cos[ok].astype(np.float64)
            w = np.exp((cos - cos.max()) / p.entity_chunk_temperature)
            np.add.at(seeds, nbrs, per * share * w / w.sum())
    return seeds, keys


def same_picture_seeds(
    index: Index, matches: list[tuple[str, int]], masks: dict[str, np.ndarray | None]
) -> np.ndarray | None:
    """Seed mass on the pictures that are the query picture and on every chunk that shows them.

    Each matched picture gets a share 1 - bits/64 (the same bytes: 1), split equally between its
    image node and the chunks linked to it (within the filters), so every place that shows the
    picture starts ahead of places that only look like it.
    """
    if not matches:
        return None
    adj = index.graph.adjacency
    seeds = np.zeros(index.graph.n, dtype=np.float64)
    for image_id, bits in matches:
        row = index.positions["images"].get(image_id)
        if row is None or (masks["images"] is not None and not masks["images"][row]):
            continue
        node = index.n_chunks + row
        nbrs = adj.indices[adj.indptr[node] : adj.indptr[node + 1]]
        nbrs = nbrs[nbrs < index.n_chunks]
        if masks["chunks"] is not None:
            nbrs = nbrs[masks["chunks"][nbrs]]
        share = (1.0 - bits / 64.0) / (1 + nbrs.size)
        seeds[node] += share
        seeds[nbrs] += share
    return seeds if seeds.sum() > 0 else None


def relations_among(
    index: Index, entity_scores: dict[str, float], chunk_ids: set[str], limit: int = 20
) -> list[RelationHit]:
    """Triples stated in ``chunk_ids`` whose subject or object is a scored entity, best score first.

    A triple scores the sum of its entities' scores (their relevance after propagation).
    """
    out = []
    for r in index.relations_in(chunk_ids).iter_rows(named=True):
        s = entity_scores.get(r["subject_key"], 0.0) + entity_scores.get(r["object_key"] or "", 0.0)
        if s > 0:
            out.append(ev.relation_hit(r, s, ev.sentence_text(index, r["sentence_id"])))
    out.sort(key=lambda h: (-h.score, h.relation_id))
    return out[:limit]


def corpus_expansion() -> str:
    """The lexicons the corpus opted into (``Settings.query_expansion``); a preset's own ``expansion`` wins."""
    from mmkg.settings import Settings

    return Settings().query_expansion


class MG2:
    """MG2-RAG graph retrieval with one preset (``default`` unless given)."""

    name: ClassVar[str] = "mg2"
    summary: ClassVar[str] = (
        "MG2-RAG: dense seeds at chunk, sentence, image and object granularity (plus entity, BM25 and "
        "same-picture seeds in our presets) spread by Personalized PageRank over the multi-granularity graph"
    )
    modalities: ClassVar[frozenset[str]] = frozenset({"text", "image"})
    # "auto" routes each query to default or longdoc (``route``); its entry stands for default's parameters
    presets: ClassVar[dict[str, Preset]] = {AUTO: PRESETS["default"], **PRESETS}
    default_preset: ClassVar[str] = AUTO
    routes: ClassVar[dict[str, tuple[str, ...]]] = {AUTO: ("default", "longdoc")}  # for mmkg strategies
    evidence_entities: ClassVar[int] = 10  # entities with the most relevance reported as graph evidence

    def __init__(self, params: Preset | None = None, preset: str | None = None, engine: str | None = None):
        self.preset = preset or (self.default_preset if params is None else "custom")
        self.params = params if params is not None else self.presets[self.preset]
        # auto routes per query unless parameters were overridden (then they apply to default's, unrouted)
        self.routed = self.preset == AUTO and self.params is PRESETS["default"]
        self.engine = engine

    def retrieve(self, index: Index, query: Query, k: int, filters: Filters = None) -> RetrievalResult:
        return self.run(index, query.text, query.image, k, filters)

    def run(
        self,
        index: Index,
        text: str | None,
        image: Any,
        k: int,
        filters: Filters = None,
        qt: np.ndarray | None = None,
    ) -> RetrievalResult:
        """The pipeline; ``qt`` is an already-encoded text-side query vector (then ``text`` may be None)."""
        if self.routed:
            chosen = route(index, text, filters)
            result = MG2(PRESETS[chosen], preset=chosen, engine=self.engine).run(index, text, image, k, filters, qt)
            result.preset = f"{AUTO}/{chosen}"
            return result
        p = self.params
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        masks = index.masks(filters)
        result = RetrievalResult(
            version=index.version, strategy=self.name, preset=self.preset, query_text=text,
            query_image=str(image) if image is not None else None, chunks=[], params=_flat(p),
        )  # fmt: skip
        if masks["chunks"] is not None and not masks["chunks"].any():
            result.timings_ms = {"total": 0.0}  # the filters allow no document: an empty answer, not an error
            return result
        u_t = u_v = None
        sent_scores = np.zeros(len(index.m_smi.row_ids), np.float32)
        chunk_cos = np.full(index.n_chunks, -np.inf, np.float32)
        if qt is None and text is not None:
            qt = index.encode_text(text)
            timings["encode_text"] = (time.perf_counter() - t0) * 1e3
        if qt is not None:
            g_t, raw = granular(index, qt, p.text_topk, masks)
            sent_scores = _finite_or_zero(raw["sentences"])
            chunk_cos = raw["chunks"]
            u_t = activation(g_t, index.m_smi, index.m_omi, p.omega_c, p.omega_i)
        matched: list[tuple[str, int]] = []
        if image is not None:
            t1 = time.perf_counter()
            qv = image_vector(index, image)
            timings["encode_image"] = (time.perf_counter() - t1) * 1e3
            g_v, raw_v = granular(index, qv, p.visual_topk, masks)
            sent_scores = np.maximum(sent_scores, _finite_or_zero(raw_v["sentences"]))
            u_v = activation(g_v, index.m_smi, index.m_omi, p.omega_c, p.omega_i)
            if p.same_picture_weight > 0:
                t1 = time.perf_counter()
                matched = same_pictures(index, image)
                timings["same_picture"] = (time.perf_counter() - t1) * 1e3
        seeds, linked = None, []
        if text is not None and p.entity_seed_weight > 0:
            t1 = time.perf_counter()
            seeds, linked = entity_seeds(index, text, chunk_cos, masks["chunks"], p)
            timings["link"] = (time.perf_counter() - t1) * 1e3
        lexical = None
        if text is not None and p.lexical_seed_weight > 0:
            t1 = time.perf_counter()
            lexical = np.zeros(index.graph.n, dtype=np.float32)
            lexicons = p.expansion or corpus_expansion()
            searched, expanded = expand(text, lexicons)
            if expanded:
                result.notes.append(f"BM25 query expanded ({lexicons}): {', '.join(expanded)}")
            lexical[: index.n_chunks] = keep_top_k(index.lexical_scores(searched), p.lexical_top_k, masks["chunks"])
            timings["bm25"] = (time.perf_counter() - t1) * 1e3
        picture = same_picture_seeds(index, matched, masks)
        pointed = None
        if text is not None and p.reference_weight > 0:
            t1 = time.perf_counter()
            pointed, refs = reference_seeds(index, text, index.allowed_docs(filters), masks["chunks"], SCOPED_DOCS)
            result.references = _describe(refs) if pointed is not None else []
            timings["references"] = (time.perf_counter() - t1) * 1e3
        r0 = seed_distribution(u_t, u_v, p, seeds, lexical, picture, pointed)
        t2 = time.perf_counter()
        r = index.ppr(r0, p.alpha, p.eps, self.engine)
        timings["ppr"] = (time.perf_counter() - t2) * 1e3
        bridges: list[str] = []
        if p.bridge_weight > 0 and linked and text is not None:
            t2 = time.perf_counter()
            b, bridges = bridge_seeds(index, r, text, masks["chunks"], p.bridge_passages, p.bridge_entities,
                                      p.bridge_temperature)  # fmt: skip
            if b is not None:
                r = index.ppr((1 - p.bridge_weight) * r0 + p.bridge_weight * b, p.alpha, p.eps, self.engine)
            timings["bridge"] = (time.perf_counter() - t2) * 1e3
        chunk_scores = r[: index.n_chunks].copy()
        if masks["chunks"] is not None:
            chunk_scores[~masks["chunks"]] = -np.inf
        order = np.argsort(-chunk_scores, kind="stable")
        top = [int(i) for i in order[:k] if np.isfinite(chunk_scores[i])]
        if p.page_sentence_weight > 0 and qt is not None:
            t2 = time.perf_counter()
            by_ppr = top
            top, chunk_scores = page_sentences.rerank(index, chunk_scores, order, qt, p.page_sentence_weight, k)
            timings["page_sentences"] = (time.perf_counter() - t2) * 1e3
            if moved := sum(a != b for a, b in zip(top, by_ppr, strict=True)):
                result.notes.append(f"{moved} of the top {len(top)} chunks changed place when their pages were re-"
                                    f"ranked by their best sentence (page_sentence_weight {p.page_sentence_weight:g})")
        result.chunks = ev.chunks(index, top, chunk_scores, r, sent_scores, {iid for iid, _ in matched})
        result.entities = self._entities(index, r, result.chunks, linked, bridges)
        result.relations = relations_among(
            index, {e.entity_key: e.score for e in result.entities}, {c.chunk_id for c in result.chunks}
        )
        result.objects = [o for c in result.chunks for o in c.objects]
        result.seeds = int((r0 > 0).sum())
        result.linked_entities = linked
        result.matched_images = [iid for iid, _ in matched]
        timings["total"] = (time.perf_counter() - t0) * 1e3
        result.timings_ms = {key: round(v, 2) for key, v in timings.items()}
        return result

    def _entities(
        self, index: Index, r: np.ndarray, chunks: list, linked: list[str], bridges: list[str] = ()
    ) -> list[EntityHit]:
        """The entity nodes with the most relevance after propagation (the linked ones, then the bridges, first)."""
        first = index.n_chunks + index.n_images
        ent = r[first:]
        if not ent.size:
            return []
        n = min(self.evidence_entities, ent.size)
        top = np.argpartition(-ent, n - 1)[:n]
        order = [int(i) + first for i in top[np.argsort(-ent[top], kind="stable")] if ent[i] > 0]
        nodes = [index.entity_node[key] for key in linked if key in index.entity_node]
        nodes += [index.entity_node[key] for key in bridges if key in index.entity_node and index.entity_node[key]
                  not in set(nodes)]  # fmt: skip
        nodes += [i for i in order if i not in set(nodes)]
        in_result = {c.chunk_id for c in chunks}
        return [ev.entity_hit(index, node, float(r[node]), in_result, hop=0 if node in nodes[: len(linked)] else 1)
                for node in nodes]  # fmt: skip


def _describe(refs: References) -> list[str]:
    """What the question pointed at, for the result's explanation ("page 5", "last page", "figure 1")."""
    out = []
    for ref in refs.pages:
        if ref.from_end:
            out.append("last page" if ref.number == 1 else f"page {ref.number} from the end")
        else:
            out.append(f"page {ref.number}" + ("" if ref.printed else " (position)"))
    return out + [f"{kind} {label}" for kind, label in refs.parts]


def _flat(p: Params) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(p)
