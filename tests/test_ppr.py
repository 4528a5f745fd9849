"""Personalized PageRank engines (mmkg.ppr) against igraph PRPACK and closed forms."""

from __future__ import annotations

from collections.abc import Iterator

import igraph
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from threadpoolctl import threadpool_limits

from mmkg.ppr import (
    ENGINES,
    PPRGraph,
    local_threshold,
    personalized_pagerank,
    ppr_cg,
    ppr_igraph,
    ppr_scipy,
    ppr_torch,
    push,
    transition_matrix,
)

FAST = ["scipy", "cg", "torch", "push"]  # engines checked against the igraph reference
EXACT = [e for e in ENGINES if e != "local"]  # engines whose eps is an L1 bound ("local" bounds each node)
EPS = 1e-6


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """Small graphs: PRPACK's OpenMP and torch's thread pool only add hand-off waits (up to 100x on a busy box)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(before)


def random_adjacency(n: int, seed: int, degree: float = 8.0) -> sp.csr_array:
    """Symmetric float32 / int32 CSR, weights in [0, 1), like the graphs the pipeline hands over."""
    M = sp.random_array((n, n), density=degree / (2 * n), rng=seed, format="csr")
    A = sp.csr_array(M + M.T, dtype=np.float32)
    A.indices, A.indptr = A.indices.astype(np.int32), A.indptr.astype(np.int32)
    return A


def sparse_r0(n: int, k: int, seed: int, q: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cols = 1 if q is None else q
    r0 = np.zeros((n, cols))
    for j in range(cols):
        r0[rng.choice(n, k, replace=False), j] = rng.random(k) + 0.05
    return r0[:, 0] if q is None else r0


def exact_ppr(A: sp.csr_array | np.ndarray, r0: np.ndarray, alpha: float) -> np.ndarray:
    """Dense closed form: (I - αW)^{-1} (1-α) r0 normalized, W = A D^{-1} with zero columns at dangling nodes."""
    A = np.asarray(A.todense() if sp.issparse(A) else A, dtype=np.float64)
    d = A.sum(axis=0)
    W = np.divide(A, d, out=np.zeros_like(A), where=d > 0)
    x = np.linalg.solve(np.eye(len(A)) - alpha * W, (1 - alpha) * r0)
    return x / x.sum(axis=0)


def top10(x: np.ndarray) -> np.ndarray:
    return np.argsort(-x, kind="stable")[:10]


def assert_matches(x: np.ndarray, ref: np.ndarray, tol: float = EPS) -> None:
    """L1 ≤ tol per query, same ordered top-10, a distribution per column."""
    x2, ref2 = (x[:, None], ref[:, None]) if x.ndim == 1 else (x, ref)
    assert x.shape == ref.shape
    assert np.all(x2 >= 0)
    np.testing.assert_allclose(x2.sum(axis=0), 1.0, atol=1e-12)
    l1 = np.abs(x2 - ref2).sum(axis=0)
    assert l1.max() <= tol, f"L1 distance {l1.max():.3g} > {tol:g}"
    for j in range(x2.shape[1]):
        np.testing.assert_array_equal(top10(x2[:, j]), top10(ref2[:, j]))


# --- agreement with PRPACK ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [0.85, 0.5, 0.15])
def test_engines_agree_on_random_graphs(seed: int, alpha: float) -> None:
    n = 2000
    g = transition_matrix(random_adjacency(n, seed))
    r0 = sparse_r0(n, 50, seed)
    ref = ppr_igraph(g, r0, alpha)
    for engine in FAST:
        assert_matches(personalized_pagerank(g, r0, alpha, engine=engine), ref)


def test_dense_r0() -> None:
    n = 2000
    g = transition_matrix(random_adjacency(n, 3))
    r0 = np.random.default_rng(3).random(n)
    ref = ppr_igraph(g, r0, 0.85)
    for engine in FAST:
        assert_matches(personalized_pagerank(g, r0, 0.85, engine=engine), ref)


def test_unnormalized_r0_is_normalized_like_igraph() -> None:
    g = transition_matrix(random_adjacency(500, 4))
    r0 = sparse_r0(500, 20, 4)
    for engine in ENGINES:
        np.testing.assert_allclose(
            personalized_pagerank(g, 37.0 * r0, 0.7, engine=engine),
            personalized_pagerank(g, r0, 0.7, engine=engine),
            atol=1e-12,
        )


def test_batch_matches_columnwise_runs() -> None:
    n = 2000
    g = transition_matrix(random_adjacency(n, 5))
    r0 = sparse_r0(n, 30, 5, q=6)
    r0[:, 5] = np.random.default_rng(5).random(n)  # one dense query among sparse ones
    ref = ppr_igraph(g, r0, 0.85)
    for engine in FAST:
        batch = personalized_pagerank(g, r0, 0.85, engine=engine)
        assert_matches(batch, ref)
        single = np.column_stack([personalized_pagerank(g, r0[:, j], 0.85, engine=engine) for j in range(6)])
        assert np.abs(batch - single).sum(axis=0).max() <= EPS


# --- dangling nodes: PRPACK sends their mass back along the reset vector ----------------------------------------------


def with_isolated(n: int, seed: int, frac: float = 0.1) -> tuple[sp.csr_array, np.ndarray]:
    """A random graph where a fraction of the nodes has every edge removed."""
    A = random_adjacency(n, seed).tolil()
    iso = np.random.default_rng(seed).choice(n, int(frac * n), replace=False)
    A[iso, :] = 0
    A[:, iso] = 0
    A = sp.csr_array(A)
    A.eliminate_zeros()
    return A, iso


@pytest.mark.parametrize("alpha", [0.85, 0.3])
def test_isolated_nodes_match_prpack(alpha: float) -> None:
    n = 1500
    A, iso = with_isolated(n, 6)
    g = transition_matrix(A)
    assert g.dangling[iso].all()
    r0 = sparse_r0(n, 40, 6)
    r0[iso[:10]] = np.linspace(0.2, 1.0, 10)  # seeds on dangling nodes too
    ref = ppr_igraph(g, r0, alpha)
    for engine in FAST:
        assert_matches(personalized_pagerank(g, r0, alpha, engine=engine), ref)
    # and PRPACK itself follows the "dangling mass returns along r0" closed form
    assert np.abs(ref - exact_ppr(A, r0, alpha)).sum() <= 1e-8


def test_seeds_only_on_isolated_nodes_stay_put() -> None:
    """A walk that starts on isolated nodes can only restart there: the result is r0 itself."""
    n = 1000
    A, iso = with_isolated(n, 7)
    g = transition_matrix(A)
    r0 = np.zeros(n)
    r0[iso[:5]] = [1, 2, 3, 4, 5]
    for engine in ENGINES:
        np.testing.assert_allclose(personalized_pagerank(g, r0, 0.85, engine=engine), r0 / r0.sum(), atol=1e-9)


def test_zero_weight_edges_are_dangling_like_in_igraph() -> None:
    """Edges stored with weight 0 carry no walk; igraph given those very edges (weight 0 kept) agrees."""
    n = 1200
    A = random_adjacency(n, 8)
    A.setdiag(0)  # no self-loops here (igraph would count them twice; see the self-loop test)
    A.eliminate_zeros()
    A = A.tocoo()
    rng = np.random.default_rng(8)
    victims = rng.choice(n, 60, replace=False)
    data = A.data.copy()
    data[np.isin(A.row, victims) | np.isin(A.col, victims)] = 0.0  # explicit zeros, still stored in the CSR
    Az = sp.csr_array((data, (A.row, A.col)), shape=(n, n))
    assert Az.nnz == A.nnz  # the zeros are really there
    g = transition_matrix(Az)
    assert g.dangling[victims].all()

    upper = A.row <= A.col
    ig = igraph.Graph(n=n, edges=np.column_stack([A.row[upper], A.col[upper]]).tolist())
    ig.es["weight"] = data[upper].tolist()
    r0 = sparse_r0(n, 40, 8)
    r0[victims[:5]] = 1.0
    ref = np.array(
        ig.personalized_pagerank(directed=False, damping=0.85, reset=r0, weights="weight", implementation="prpack")
    )
    for engine in EXACT:
        assert_matches(personalized_pagerank(g, r0, 0.85, engine=engine), ref)


def test_self_loops_count_once_like_the_adjacency_says() -> None:
    """A diagonal entry A_ii is one walk option of weight A_ii (igraph is given it as a loop of weight A_ii/2)."""
    n = 800
    A = random_adjacency(n, 9).tolil()
    loops = np.random.default_rng(9).choice(n, 80, replace=False)
    A[loops, loops] = 2.5
    A = sp.csr_array(A)
    r0 = sparse_r0(n, 30, 9)
    r0[loops[:5]] = 1.0
    g = transition_matrix(A)
    exact = exact_ppr(A, r0, 0.85)
    assert np.abs(ppr_igraph(g, r0, 0.85) - exact).sum() <= 1e-8
    for engine in FAST:
        assert_matches(personalized_pagerank(g, r0, 0.85, engine=engine), exact)


def test_weighted_graph_closed_form() -> None:
    """Weights spanning four orders of magnitude, checked against the dense solve."""
    n = 400
    A = random_adjacency(n, 10).tocoo()
    w = 10.0 ** np.random.default_rng(10).uniform(-2, 2, A.nnz)
    W = sp.coo_array((w, (A.row, A.col)), shape=(n, n))
    A = sp.csr_array(W + W.T)
    r0 = sparse_r0(n, 15, 10)
    g = transition_matrix(A)
    exact = exact_ppr(A, r0, 0.85)
    for engine in EXACT:
        assert_matches(personalized_pagerank(g, r0, 0.85, engine=engine), exact)


# --- closed forms and the fixed point ------------------------------------------------------------------------------


def test_three_node_path_by_hand() -> None:
    """Path 0 -1- 1 -2- 2, α = 1/2, seed on node 0.

    d = (1, 3, 2); the fixed point of x = ½ W x + ½ e0 gives x1 = 0.6 x0, x2 = x1 / 3 and x0 - x1/6 = ½, so
    x = (5/9, 1/3, 1/9), which already sums to 1."""
    A = sp.csr_array(np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]], dtype=np.float32))
    g = transition_matrix(A)
    expected = np.array([5 / 9, 1 / 3, 1 / 9])
    np.testing.assert_allclose(exact_ppr(A, np.array([1.0, 0, 0]), 0.5), expected, atol=1e-15)
    for engine in EXACT:
        x = personalized_pagerank(g, np.array([1.0, 0, 0]), 0.5, engine=engine)
        assert np.abs(x - expected).sum() <= EPS, engine


@pytest.mark.parametrize("engine", FAST)
@pytest.mark.parametrize("alpha", [0.85, 0.5])
def test_result_is_the_fixed_point(engine: str, alpha: float) -> None:
    """r = αWr + (α·dangling mass + 1-α) r0, and it is within eps of the exact solution."""
    n = 600
    A, _ = with_isolated(n, 11, frac=0.05)
    g = transition_matrix(A)
    r0 = sparse_r0(n, 20, 11)
    r0 /= r0.sum()
    r = personalized_pagerank(g, r0, alpha, engine=engine)
    step = alpha * (g.W @ r) + (alpha * r[g.dangling].sum() + 1 - alpha) * r0
    assert np.abs(step - r).sum() <= 2 * EPS
    assert np.abs(r - exact_ppr(A, r0, alpha)).sum() <= EPS


def test_transition_matrix_is_column_stochastic() -> None:
    A, _ = with_isolated(500, 12)
    g = transition_matrix(A)
    assert g.W.dtype == np.float64
    sums = np.asarray(g.W.sum(axis=0)).ravel()
    np.testing.assert_allclose(sums[~g.dangling], 1.0, atol=1e-12)
    assert np.all(sums[g.dangling] == 0)
    np.testing.assert_allclose(g.degree, np.asarray(A.sum(axis=0)).ravel(), rtol=1e-6)
    S = g.symmetric().S
    assert abs(S - S.T).max() < 1e-15  # the CG operator is symmetric


def grid_adjacency(side: int, seed: int) -> sp.csr_array:
    """Weighted 2-D grid: clustered and slow-mixing, so PPR mass stays near the seeds (CG's local phase)."""
    idx = np.arange(side * side).reshape(side, side)
    rows = np.r_[idx[:, :-1].ravel(), idx[:-1, :].ravel()]
    cols = np.r_[idx[:, 1:].ravel(), idx[1:, :].ravel()]
    w = np.random.default_rng(seed).uniform(0.1, 1.0, rows.size)
    W = sp.coo_array((w, (rows, cols)), shape=(side * side, side * side))
    return sp.csr_array(W + W.T)


@pytest.mark.parametrize("local_fraction", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("graph", ["grid", "random+isolated"])
def test_cg_local_phase_is_exact(local_fraction: float, graph: str) -> None:
    """CG on the seeds' hop-ball (growing, then switching to the whole graph) matches PRPACK whatever the switch
    point: 0 = whole graph from the start, 1 = the ball until it is the seeds' whole component."""
    if graph == "grid":
        A = grid_adjacency(60, 18)
    else:
        A, _ = with_isolated(2000, 18, frac=0.05)
    n = A.shape[0]
    g = transition_matrix(A)
    r0 = sparse_r0(n, 5, 18, q=3)
    r0[:, 2] = sparse_r0(n, 1, 19)  # single-seed query: converges at its own pace within the batch
    ref = ppr_igraph(g, r0, 0.85)
    assert_matches(ppr_cg(g, r0, 0.85, local_fraction=local_fraction), ref)
    assert_matches(ppr_cg(g, r0[:, 2], 0.85, local_fraction=local_fraction), ref[:, 2])


@pytest.mark.parametrize("reorder", [True, False])
def test_cg_reordering_is_invisible(reorder: bool) -> None:
    """The CG engine may renumber nodes internally (RCM); results still come back in the caller's order."""
    n = 1500
    A, _ = with_isolated(n, 17, frac=0.05)
    g = transition_matrix(A, reorder=reorder)
    assert (g.symmetric().perm is not None) == reorder
    r0 = sparse_r0(n, 30, 17, q=3)
    assert_matches(ppr_cg(g, r0, 0.85), ppr_igraph(g, r0, 0.85))


def test_lazy_conversions_are_cached() -> None:
    g = transition_matrix(random_adjacency(300, 13))
    assert g.to_igraph() is g.to_igraph()
    assert g.symmetric() is g.symmetric()
    assert g.to_torch("cpu") is g.to_torch("cpu")
    assert g.to_torch("cpu").dtype == torch.float64
    loops = int(np.count_nonzero(g.W.diagonal()))
    assert g.to_igraph().ecount() == (g.W.nnz + loops) // 2  # one igraph edge per undirected edge


def test_not_converging_warns() -> None:
    g = transition_matrix(random_adjacency(500, 14))
    r0 = sparse_r0(500, 10, 14)
    for engine in ("scipy", "cg", "torch"):
        with pytest.warns(RuntimeWarning, match="did not reach eps"):
            x = personalized_pagerank(g, r0, 0.85, engine=engine, max_iter=2)
        np.testing.assert_allclose(x.sum(), 1.0)


# --- validation ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small() -> PPRGraph:
    return transition_matrix(random_adjacency(50, 15))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_all_zero_r0_says_no_seed_was_activated(small: PPRGraph, engine: str) -> None:
    with pytest.raises(ValueError, match="activated no seed node"):
        personalized_pagerank(small, np.zeros(50), 0.85, engine=engine)
    batch = np.ones((50, 3))
    batch[:, 1] = 0
    with pytest.raises(ValueError, match=r"activated no seed node.*column\(s\) \[1\]"):
        personalized_pagerank(small, batch, 0.85, engine=engine)


@pytest.mark.parametrize(
    ("r0", "alpha", "match"),
    [
        (np.ones(49), 0.85, r"shape \(50,\) or \(50, q\)"),
        (np.ones((50, 2, 1)), 0.85, "shape"),
        (-np.ones(50), 0.85, "negative"),
        (np.full(50, np.nan), 0.85, "non-finite"),
        (np.ones(50), 0.0, "strictly between 0 and 1"),
        (np.ones(50), 1.0, "strictly between 0 and 1"),
        (np.ones(50), 1.5, "strictly between 0 and 1"),
    ],
)
def test_bad_arguments(small: PPRGraph, r0: np.ndarray, alpha: float, match: str) -> None:
    for fn in (ppr_scipy, ppr_cg, ppr_igraph, ppr_torch):
        with pytest.raises(ValueError, match=match):
            fn(small, r0, alpha)


def test_unknown_engine(small: PPRGraph) -> None:
    with pytest.raises(ValueError, match=r"unknown PPR engine 'pull'; choose one of \['cg', 'igraph', 'local'"):
        personalized_pagerank(small, np.ones(50), 0.85, engine="pull")


def test_bad_adjacency() -> None:
    with pytest.raises(ValueError, match="square"):
        transition_matrix(sp.csr_array(np.ones((3, 4))))
    with pytest.raises(ValueError, match="not symmetric"):
        transition_matrix(sp.csr_array(np.array([[0, 1.0], [0, 0]])))
    with pytest.raises(ValueError, match="negative"):
        transition_matrix(sp.csr_array(np.array([[0, -1.0], [-1.0, 0]])))
    with pytest.raises(TypeError, match=r"scipy\.sparse"):
        transition_matrix(np.eye(3))  # type: ignore[arg-type]


# --- GPU -----------------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_torch_cuda_matches_prpack() -> None:
    """float32 on the GPU is held to the documented 1e-5 L1 (plus the top-10); float64 to the full 1e-6."""
    n = 5000
    A, _ = with_isolated(n, 16, frac=0.02)
    g = transition_matrix(A)
    r0 = sparse_r0(n, 50, 16, q=8)
    ref = ppr_igraph(g, r0, 0.85)
    x32 = ppr_torch(g, r0, 0.85, device="cuda")
    assert np.abs(x32 - ref).sum(axis=0).max() <= 2e-5
    x64 = ppr_torch(g, r0, 0.85, device="cuda", dtype=torch.float64)
    assert_matches(x64, ref)


# --- forward push: the L1 engine and the local one -------------------------------------------------------------------


def unnormalized_exact(A: sp.csr_array, r0: np.ndarray, alpha: float) -> np.ndarray:
    """``x* = (1-α)(I - αW)^{-1} r0`` for a distribution r0, before any normalization (dense solve)."""
    A = np.asarray(A.todense(), dtype=np.float64)
    d = A.sum(axis=0)
    W = np.divide(A, d, out=np.zeros_like(A), where=d > 0)
    return np.linalg.solve(np.eye(len(A)) - alpha * W, (1 - alpha) * r0 / r0.sum())


@pytest.mark.parametrize("alpha", [0.5, 0.85])
def test_push_keeps_its_invariant(alpha: float) -> None:
    """Stopped anywhere, ``x* = p + Σ_u r(u) x_u``: what is settled plus what the residuals would still bring."""
    n = 300
    A, _ = with_isolated(n, 11)
    g = transition_matrix(A)
    r0 = sparse_r0(n, 12, 11)
    r0 /= r0.sum()
    x = unnormalized_exact(A, r0, alpha)
    dense = np.asarray(A.todense(), dtype=np.float64)
    d = dense.sum(axis=0)
    M = (1 - alpha) * np.linalg.inv(np.eye(n) - alpha * np.divide(dense, d, out=np.zeros_like(dense), where=d > 0))
    for tol, rounds in [(1e-2, 1000), (1e-5, 3), (1e-5, 1000)]:
        p, r, unfinished = push(g, r0, alpha, local_threshold(g, tol), rounds)
        np.testing.assert_allclose(p + M @ r, x, atol=1e-12)
        assert unfinished == (rounds == 3)


@pytest.mark.parametrize("alpha", [0.5, 0.85])
@pytest.mark.parametrize("tol", [1e-3, 1e-5])
def test_local_push_errs_by_at_most_tol_per_node_of_average_degree(alpha: float, tol: float) -> None:
    """The guarantee of ``ppr_local``: ``p ≤ x* ≤ p + tol · d(v) / d̄`` on every node, weighted ones too, and the
    estimate it returns, ``p + r``, is within that bound on both sides and has the exact mass."""
    n = 600
    A = random_adjacency(n, 12).tocoo()
    w = 10.0 ** np.random.default_rng(12).uniform(-1, 1, A.nnz)
    A = sp.csr_array(sp.coo_array((w, (A.row, A.col)), shape=(n, n)) + sp.coo_array((w, (A.col, A.row)), shape=(n, n)))
    r0 = sparse_r0(n, 15, 12)
    r0 /= r0.sum()
    g = transition_matrix(A)
    x = unnormalized_exact(A, r0, alpha)
    p, r, unfinished = push(g, r0, alpha, local_threshold(g, tol))
    assert not unfinished
    bound = tol * g.degree / g.degree.mean()
    assert np.all(p <= x + 1e-15)
    assert np.all(x - p <= bound + 1e-15)
    assert np.all(np.abs(x - (p + r)) <= bound + 1e-15)
    assert (p + r).sum() == pytest.approx(x.sum(), abs=1e-12)
    assert (x - p).max() > bound.max() / 1000  # the bound is met by stopping early, not by running to the end


def test_local_engine_ranks_like_the_exact_ones() -> None:
    """At the default eps the normalized scores keep the exact top-10, and differ by far less than the top scores."""
    for seed in range(4):
        n = 3000
        g = transition_matrix(random_adjacency(n, seed + 20))
        r0 = sparse_r0(n, 20, seed + 20)
        exact = personalized_pagerank(g, r0, 0.5, engine="cg")
        local = personalized_pagerank(g, r0, 0.5, engine="local")
        np.testing.assert_array_equal(top10(local), top10(exact))
        assert np.abs(local - exact).max() < 1e-4 * exact.max()


def torus(side: int) -> sp.csr_array:
    """A side × side lattice wrapped around, 4 unit-weight neighbours each: every node sees the same graph."""
    ring = sp.diags_array([1.0, 1.0, 1.0, 1.0], offsets=[-1, 1, side - 1, 1 - side], shape=(side, side))
    eye = sp.eye_array(side)
    return sp.csr_array(sp.kron(ring, eye) + sp.kron(eye, ring))


def test_local_push_work_does_not_grow_with_the_graph() -> None:
    """The same seed on a 61² and a 601² torus (100x the nodes): push touches the same few nodes and gives them
    the same scores, while the global engines sweep all 361,201."""
    touched, scores = [], []
    for side in (61, 601):
        g = transition_matrix(torus(side), check=False)
        r0 = np.zeros(g.n)
        middle = (side // 2) * side + side // 2
        r0[middle] = 1.0
        p, r, unfinished = push(g, r0, 0.5, local_threshold(g, 1e-6))
        assert not unfinished
        reached = np.flatnonzero((p > 0) | (r > 0))
        rows, cols = np.divmod(reached, side)
        touched.append(reached.size)
        scores.append(dict(zip(zip(rows - side // 2, cols - side // 2, strict=True), p[reached], strict=True)))
    assert touched[0] == touched[1] < 61 * 61 / 2
    assert scores[0] == scores[1]
