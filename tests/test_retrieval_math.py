"""Eq. 2 aggregation, the activation vector u and the r0 fusion of eq. 3 on hand-computed examples."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mmkg.retrieval import PRESETS, Granular, TopK, activation, get_preset, keep_top_k, mean_pool, seed_distribution

# 4 sentences x 3 entity nodes; 2 objects x 3 nodes
M_SMI = sp.csr_array(np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 1]], dtype=np.float32))
M_OMI = sp.csr_array(np.array([[1, 0, 0], [0, 0, 1]], dtype=np.float32))


def test_mean_pool_is_degree_normalized():
    s = np.array([0.8, 0.4, 0.0, 0.6], dtype=np.float32)
    # node 0: sentences 0,1 -> (0.8 + 0.4) / 2; node 1: sentences 0,3 -> (0.8 + 0.6) / 2; node 2: 2,3 -> 0.6 / 2
    np.testing.assert_allclose(mean_pool(M_SMI, s), [0.6, 0.7, 0.3], rtol=1e-6)


def test_mean_pool_node_without_units_is_zero():
    m = sp.csr_array(np.array([[1, 0]], dtype=np.float32))
    np.testing.assert_allclose(mean_pool(m, np.array([0.5])), [0.5, 0.0])


def test_mean_pool_of_a_top_k_equals_the_full_product_with_cached_degrees():
    """Reading only the seed rows, with an Incidence's cached degrees, gives D^-1 M^T s of the whole matrix."""
    from mmkg.incidence import build_incidence

    rng = np.random.default_rng(0)
    rows, cols = [f"s{i}" for i in range(400)], [f"E{j}" for j in range(90)]
    pairs = {(rows[i], cols[j]) for i, j in zip(rng.integers(0, 400, 1500), rng.integers(0, 90, 1500), strict=True)}
    inc = build_incidence(rows, cols, sorted(pairs))
    m = inc.matrix
    degree = np.asarray(m.sum(axis=0)).ravel()
    for k in (0, 1, 20, 400):
        s = keep_top_k(rng.random(400), k)
        expected = np.where(degree > 0, (m.T @ s) / np.maximum(degree, 1e-12), 0.0)
        np.testing.assert_allclose(mean_pool(inc, s), expected, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(mean_pool(m, s), expected, rtol=1e-12, atol=1e-15)
    assert inc.column_degree is inc.column_degree  # computed once


def test_activation_vector_layout_and_eq2():
    g = Granular(
        chunk=np.array([0.5, 0.0]),
        sentence=np.array([0.8, 0.4, 0.0, 0.6]),
        image=np.array([0.9]),
        object=np.array([0.2, 0.4]),
    )
    u = activation(g, M_SMI, M_OMI, omega_c=2.0, omega_i=0.5)
    # [ω_C s_C ; ω_I s_I ; s_M], s_M = sentence mean + object mean
    s_m = np.array([0.6 + 0.2, 0.7 + 0.0, 0.3 + 0.4])
    np.testing.assert_allclose(u, [1.0, 0.0, 0.45, *s_m], rtol=1e-6)


def test_seed_distribution_fuses_and_normalizes():
    p = get_preset("default", lambda_t=1.0, lambda_v=0.5)
    u_t = np.array([1.0, 0.0, 1.0])
    u_v = np.array([0.0, 2.0, 0.0])
    r0 = seed_distribution(u_t, u_v, p)
    np.testing.assert_allclose(r0, np.array([1.0, 1.0, 1.0]) / 3)
    np.testing.assert_allclose(seed_distribution(u_t, None, p), [0.5, 0.0, 0.5])
    cut = seed_distribution(np.array([0.5, 0.3, 0.2]), None, p.override(seed_top_k=2))
    np.testing.assert_allclose(cut, [0.625, 0.375, 0.0])


def test_seed_distribution_errors():
    p = PRESETS["default"]
    with pytest.raises(ValueError, match="text, an image or both"):
        seed_distribution(None, None, p)
    with pytest.raises(ValueError, match="activated no seed node"):
        seed_distribution(np.zeros(3), None, p)


def test_keep_top_k_respects_mask_and_drops_negatives():
    s = np.array([0.9, -0.2, 0.5, 0.7])
    np.testing.assert_allclose(keep_top_k(s, 2), [0.9, 0, 0, 0.7])
    np.testing.assert_allclose(keep_top_k(s, 2, allowed=np.array([False, True, True, False])), [0, 0, 0.5, 0])
    np.testing.assert_allclose(keep_top_k(s, 10), [0.9, 0, 0.5, 0.7])
    np.testing.assert_allclose(keep_top_k(s, 0), [0, 0, 0, 0])


def test_presets_follow_table5_and_override():
    evqa = PRESETS["evqa"]
    assert (evqa.alpha, evqa.omega_c, evqa.omega_i, evqa.lambda_t, evqa.lambda_v) == (0.20, 0.8, 1.6, 0.1, 1.0)
    assert evqa.text_topk == TopK(60, 3, 2, 3) and evqa.visual_topk == TopK(200, 70, 2, 5)
    assert PRESETS["crisis_bc"].visual_topk == TopK(3, 1, 1, 1)
    assert set(PRESETS) == {"evqa", "infoseek", "scienceqa", "crisis_bc", "crisis_mc", "default", "longdoc"}
    p = get_preset("scienceqa", alpha=0.5, text_topk_chunk=7)
    assert p.alpha == 0.5 and p.text_topk.chunk == 7 and p.text_topk.sentence == 10
    with pytest.raises(ValueError, match="unknown retrieval parameter"):
        get_preset("default", damping=0.3)
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset("nope")


def test_entity_seeds_take_their_share_of_r0():
    p = get_preset("default", entity_seed_weight=0.8)
    u_t = np.array([1.0, 0.0, 3.0, 0.0, 0.0])
    r0 = seed_distribution(u_t, None, p, np.array([0, 0, 0, 1.0, 1.0]))
    np.testing.assert_allclose(r0, [0.05, 0.0, 0.15, 0.4, 0.4])
    assert r0.sum() == pytest.approx(1.0)
    # no link, or a preset without entity seeding: the paper's r0
    np.testing.assert_allclose(seed_distribution(u_t, None, p, np.zeros(5)), [0.25, 0, 0.75, 0, 0])
    np.testing.assert_allclose(seed_distribution(u_t, None, PRESETS["evqa"], np.ones(5)), [0.25, 0, 0.75, 0, 0])
    # linked entities alone still make a query
    np.testing.assert_allclose(seed_distribution(np.zeros(5), None, p, np.array([0, 0, 0, 0, 2.0])), [0, 0, 0, 0, 1.0])


def test_lexical_seeds_mix_with_the_other_channels():
    p = get_preset("default", entity_seed_weight=0.5, lexical_seed_weight=0.3)
    u_t = np.array([1.0, 0.0, 1.0, 0.0])
    lex = np.array([0.0, 3.0, 1.0, 0.0])
    r0 = seed_distribution(u_t, None, p, np.array([0, 0, 0, 1.0]), lex)
    np.testing.assert_allclose(r0, [0.1, 0.225, 0.1 + 0.075, 0.5])
    # a query with no known word: the lexical share goes back to the others, renormalized
    e = np.array([0, 0, 0, 1.0])
    np.testing.assert_allclose(seed_distribution(u_t, None, p, e, np.zeros(4)), [1 / 7, 0, 1 / 7, 5 / 7])
    # every weight on channels that are empty: the dense seeds alone
    only = get_preset("default", entity_seed_weight=0.0, lexical_seed_weight=1.0)
    np.testing.assert_allclose(seed_distribution(u_t, None, only, None, np.zeros(4)), [0.5, 0, 0.5, 0])
    with pytest.raises(ValueError, match="sum to at most 1"):
        get_preset("default", entity_seed_weight=0.7, lexical_seed_weight=0.5)
    with pytest.raises(ValueError, match=">= 0"):
        get_preset("evqa", lexical_seed_weight=-0.1)
