"""MG2-RAG multi-granularity graph retrieval (section 3.2, appendix A.3).

1. Dense scores of the text and/or image query against chunks, sentences, images and objects;
   only each granularity's top-k are kept (the seed activations).
2. Sentence and object scores are mean-pooled onto entity nodes through the incidence matrices
   (eq. 2): s_M = D_S^-1 M_SMI^T s_S + D_O^-1 M_OMI^T s_O.
3. u = [ω_C s_C; ω_I s_I; s_M] per query modality; r0 = λ_t u_t + λ_v u_v, normalized (eq. 3).
   Our addition: entities the text query names (mmkg.linking) take a share ``entity_seed_weight``
   of r0, spread evenly; the paper's presets keep it at 0.
4. Personalized PageRank r <- α W r + (1 - α) r0 until the L1 change is <= ε (eq. 4).
5. Chunks are ranked by r.

Everything here is numpy/scipy on arrays whose order is the graph's node order
(chunks, then images, then entities), so it is independent of where the vectors live.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class TopK:
    chunk: int
    sentence: int
    image: int
    object: int


@dataclass(frozen=True)
class Preset:
    """Retrieval hyperparameters; Table 5 of the paper gives the dataset presets."""

    alpha: float  # damping: share of relevance that propagates along edges
    omega_c: float  # chunk node weight ω_C
    omega_i: float  # image node weight ω_I
    lambda_t: float  # text-query fusion weight λ_t
    lambda_v: float  # image-query fusion weight λ_v
    text_topk: TopK
    visual_topk: TopK
    seed_top_k: int | None = None  # keep only the strongest seeds of r0 (None: every activated node)
    entity_seed_weight: float = 0.0  # share of r0 on entities the query names (0: dense seeds only, as the paper)
    lexical_seed_weight: float = 0.0  # share of r0 on the BM25 top chunks (0: none, as the paper)
    lexical_top_k: int = 10  # how many BM25 chunks seed
    entity_chunk_share: float = 0.0  # share of a linked entity's mass moved onto its chunks, by query similarity
    entity_chunk_temperature: float = 0.05  # softmax temperature over those chunks' cosines
    # weight of the pictures that *are* the query picture (same bytes or perceptual hash) and the chunks that
    # show them, relative to the other channels; 0: the paper's r0 (an image query seeds by similarity only)
    same_picture_weight: float = 0.0
    eps: float = 1e-6

    def __post_init__(self) -> None:
        if min(self.entity_seed_weight, self.lexical_seed_weight) < 0 or (
            self.entity_seed_weight + self.lexical_seed_weight > 1
        ):
            raise ValueError(
                "entity_seed_weight and lexical_seed_weight must be >= 0 and sum to at most 1 (the dense seeds get "
                f"the rest); got {self.entity_seed_weight} and {self.lexical_seed_weight}"
            )
        if not 0 <= self.same_picture_weight <= 1:
            raise ValueError(f"same_picture_weight must be in [0, 1]; got {self.same_picture_weight}")

    def override(self, **changes: Any) -> Preset:
        """A copy with some parameters changed; unknown names are an error, not ignored."""
        names = {f.name for f in fields(self)}
        tk = {k: v for k, v in changes.items() if k.startswith(("text_topk_", "visual_topk_"))}
        plain = {k: v for k, v in changes.items() if k not in tk}
        unknown = sorted(set(plain) - names)
        if unknown:
            raise ValueError(
                f"unknown retrieval parameter(s) {unknown}; known: {sorted(names)} and text_topk_<g>, visual_topk_<g>"
            )
        out = replace(self, **plain)
        for k, v in tk.items():
            group, _, gran = k.partition("_topk_")
            attr = f"{group}_topk"
            out = replace(out, **{attr: replace(getattr(out, attr), **{gran: int(v)})})
        return out


PRESETS: dict[str, Preset] = {
    # Table 5, columns E-VQA, InfoSeek, ScienceQA, CrisisMMD Task-BC, Task-MC.
    "evqa": Preset(0.20, 0.8, 1.6, 0.1, 1.0, TopK(60, 3, 2, 3), TopK(200, 70, 2, 5)),
    "infoseek": Preset(0.15, 1.2, 0.5, 0.1, 1.0, TopK(200, 3, 2, 3), TopK(200, 60, 1, 5)),
    "scienceqa": Preset(0.85, 0.05, 1.0, 1.0, 1.0, TopK(4, 10, 10, 10), TopK(10, 10, 20, 10)),
    "crisis_bc": Preset(0.85, 0.2, 1.0, 1.0, 0.5, TopK(7, 5, 5, 5), TopK(3, 1, 1, 1)),
    "crisis_mc": Preset(0.70, 1.0, 1.0, 1.0, 1.0, TopK(12, 2, 3, 2), TopK(12, 3, 5, 3)),
    # Entity-centric and multi-hop QA: r0 on the chunks of the entities the query names, picked by query
    # similarity; dense seeds as the tie-breaker; moderate propagation (tuned on 2Wiki dev, benchmarks/RESULTS.md).
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
    ),
    # Long-document QA (reports, slides, handbooks; MMLongBench-Doc): questions name few entities and
    # many exact terms, so BM25 and dense seeds share r0 (tuned on MMLongBench-Doc dev).
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
    ),
}


def get_preset(name: str, **overrides: Any) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name].override(**overrides) if overrides else PRESETS[name]


def keep_top_k(scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """Scores with everything outside the k best (among ``allowed`` rows) set to zero; negatives dropped."""
    out = np.zeros_like(scores)
    s = scores if allowed is None else np.where(allowed, scores, -np.inf)
    k = min(k, int(np.isfinite(s).sum()))
    if k <= 0:
        return out
    idx = np.argpartition(-s, k - 1)[:k]
    out[idx] = np.maximum(scores[idx], 0.0)
    return out


def mean_pool(incidence: sp.sparray, scores: np.ndarray) -> np.ndarray:
    """D^-1 M^T s: each node's mean over the units (sentences or objects) mapped to it."""
    m = sp.csr_array(incidence)
    degree = np.asarray(m.sum(axis=0)).ravel()
    pooled = m.T @ scores
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(degree > 0, pooled / np.maximum(degree, 1e-12), 0.0)


@dataclass
class Granular:
    """Per-granularity dense scores of one query modality (already top-k filtered)."""

    chunk: np.ndarray
    sentence: np.ndarray
    image: np.ndarray
    object: np.ndarray


def activation(g: Granular, m_smi: sp.sparray, m_omi: sp.sparray, omega_c: float, omega_i: float) -> np.ndarray:
    """u = [ω_C s_C; ω_I s_I; s_M] with s_M from eq. 2."""
    s_m = mean_pool(m_smi, g.sentence) + mean_pool(m_omi, g.object)
    return np.concatenate([omega_c * g.chunk, omega_i * g.image, s_m])


def seed_distribution(
    u_text: np.ndarray | None,
    u_visual: np.ndarray | None,
    preset: Preset,
    entity: np.ndarray | None = None,
    lexical: np.ndarray | None = None,
    picture: np.ndarray | None = None,
) -> np.ndarray:
    """r0 = λ_t u_t + λ_v u_v, optionally cut to the top seeds, normalized to sum 1 (eq. 3).

    Optional seed channels join it, each non-negative node mass: ``entity`` (what the entities
    the query names seed, see ``Index._entity_seeds``) with weight ``preset.entity_seed_weight``,
    ``lexical`` (e.g. BM25 over chunks) with weight ``preset.lexical_seed_weight``; the dense r0 gets the
    rest. ``picture`` (the corpus pictures that are the query picture and the chunks showing them) joins
    with weight ``preset.same_picture_weight``. A channel with nothing in it drops out and the others are
    renormalized, so a query that links nothing, matches no word and shows no known picture gets the paper's r0.
    """
    parts = []
    if u_text is not None:
        parts.append(preset.lambda_t * u_text)
    if u_visual is not None:
        parts.append(preset.lambda_v * u_visual)
    if not parts:
        raise ValueError("a query needs text, an image or both")
    r0 = np.sum(parts, axis=0)
    if preset.seed_top_k is not None:
        r0 = keep_top_k(r0, preset.seed_top_k)
    channels: list[tuple[float, np.ndarray]] = []
    total = float(r0.sum())
    if total > 0:
        channels.append((1.0 - preset.entity_seed_weight - preset.lexical_seed_weight, r0 / total))
    extras = (
        (entity, preset.entity_seed_weight),
        (lexical, preset.lexical_seed_weight),
        (picture, preset.same_picture_weight),
    )
    for extra, w in extras:
        if extra is not None and w > 0 and (extra_total := float(extra.sum())) > 0:
            channels.append((w, extra / extra_total))
    # dense alone if every weight went to channels that are empty for this query
    weighted = [(w, v) for w, v in channels if w > 0] or [(1.0, v) for _, v in channels[:1]]
    if not weighted:
        raise ValueError("the query activated no seed node (no positive similarity within the top-k)")
    weight = sum(w for w, _ in weighted)
    return np.sum([w / weight * v for w, v in weighted], axis=0)


@dataclass
class Ranking:
    """Scores of every node after propagation plus what seeded them, for evidence reporting."""

    scores: np.ndarray
    r0: np.ndarray
    text: Granular | None = None
    visual: Granular | None = None
    extra: dict[str, Any] = field(default_factory=dict)
