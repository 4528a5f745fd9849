"""MG2-RAG propagation math (section 3.2, appendix A.3): activations, seed fusion, top-k.

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
The strategy that runs it (and its presets) is ``mmkg.retrieval.mg2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from mmkg.incidence import Incidence, column_degree
from mmkg.ppr import row_offsets

if TYPE_CHECKING:
    from mmkg.retrieval.mg2 import Preset


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


def mean_pool(incidence: sp.sparray | Incidence, scores: np.ndarray) -> np.ndarray:
    """D^-1 M^T s: each node's mean over the units (sentences or objects) mapped to it.

    Only the rows with a score are read (the seeds are a top-k), and an :class:`Incidence` brings its cached
    column degrees: at 1M chunks, M_SMI holds 3.2M sentence rows, and reading all of it twice per query
    (the product and the degrees) took 50 ms."""
    if isinstance(incidence, Incidence):
        m, degree = incidence.matrix, incidence.column_degree
    else:
        m = sp.csr_array(incidence)
        degree = column_degree(m)
    rows = np.flatnonzero(scores)
    offsets, lens = row_offsets(m.indptr, rows)
    pooled = np.bincount(
        m.indices[offsets], weights=m.data[offsets] * np.repeat(scores[rows], lens), minlength=m.shape[1]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(degree > 0, pooled / np.maximum(degree, 1e-12), 0.0)


@dataclass
class Granular:
    """Per-granularity dense scores of one query modality (already top-k filtered)."""

    chunk: np.ndarray
    sentence: np.ndarray
    image: np.ndarray
    object: np.ndarray


def activation(
    g: Granular, m_smi: sp.sparray | Incidence, m_omi: sp.sparray | Incidence, omega_c: float, omega_i: float
) -> np.ndarray:
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
    reference: np.ndarray | None = None,
) -> np.ndarray:
    """r0 = λ_t u_t + λ_v u_v, optionally cut to the top seeds, normalized to sum 1 (eq. 3).

    Optional seed channels join it, each non-negative node mass: ``entity`` (what the entities
    the query names seed, see ``Index._entity_seeds``) with weight ``preset.entity_seed_weight``,
    ``lexical`` (e.g. BM25 over chunks) with weight ``preset.lexical_seed_weight``; the dense r0 gets the
    rest. ``picture`` (the corpus pictures that are the query picture and the chunks showing them) joins
    with weight ``preset.same_picture_weight``, and ``reference`` (the pages and parts the question points
    at, ``mmkg.retrieval.references``) with weight ``preset.reference_weight``. A channel with nothing in
    it drops out and the others are renormalized, so a query that links nothing, matches no word and shows
    no known picture gets the paper's r0.
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
        (reference, preset.reference_weight),
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
