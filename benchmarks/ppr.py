"""Benchmark: personalized PageRank engines (mmkg.ppr) against igraph PRPACK on graphs shaped like ours.

Graphs: ``ba`` (Barabási–Albert, m=5: hubs, fast mixing) and ``geo`` (symmetrized 5-nearest-neighbour graph of
random points in the unit square: clustered, slow mixing, the hard case for power iteration). Weights are uniform
in (0, 1] and 1% of the nodes are isolated (dangling). Each query has ``--seeds`` random seed nodes with random
scores. Per engine and damping we report the median latency per query (one-time graph preparation excluded and
listed separately), the speed-up over PRPACK in the same run, whether the top-10 matches PRPACK, and the worst
L1 distance to PRPACK. Batch rows solve ``--batch`` queries as one (n, q) problem and report time / q.

Each engine runs queries until ``--budget`` seconds are spent (at least ``--min-queries``), so PRPACK's slow
1M-node runs do not blow up the wall time; comparisons use the queries both engines ran.

    python benchmarks/ppr.py --sizes 10000,100000,1000000 --queries 20
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import igraph
import numpy as np
import scipy.sparse as sp
import typer
from rich.console import Console
from rich.table import Table
from scipy.spatial import cKDTree
from threadpoolctl import threadpool_limits

if TYPE_CHECKING:
    import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from mmkg.ppr import (  # noqa: E402
    PPRGraph,
    ppr_cg,
    ppr_igraph,
    ppr_local,
    ppr_scipy,
    ppr_torch,
    resolve_device,
    transition_matrix,
)

console = Console(width=150)


def _symmetric(n: int, rows: np.ndarray, cols: np.ndarray, rng: np.random.Generator) -> sp.csr_array:
    """Symmetric float32/int32 CSR from an undirected edge list (duplicates merged), weights in (0, 1]."""
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
    key = np.unique(lo.astype(np.int64) * n + hi)
    lo, hi = (key // n).astype(np.int32), (key % n).astype(np.int32)
    w = (1.0 - rng.random(key.size)).astype(np.float32)
    A = sp.coo_array((np.r_[w, w], (np.r_[lo, hi], np.r_[hi, lo])), shape=(n, n)).tocsr()
    A.indices = A.indices.astype(np.int32)
    A.indptr = A.indptr.astype(np.int32)
    return A


def make_graph(kind: str, n: int, rng: np.random.Generator, isolated: float = 0.01) -> sp.csr_array:
    """A random graph of ``n`` nodes, ``isolated`` of them without edges, node ids shuffled."""
    n_conn = n - round(isolated * n)
    if kind == "ba":
        edges = np.asarray(igraph.Graph.Barabasi(n_conn, 5).get_edgelist(), dtype=np.int64)
        rows, cols = edges[:, 0], edges[:, 1]
    elif kind == "geo":
        pts = rng.random((n_conn, 2))
        _, nbr = cKDTree(pts).query(pts, k=6)
        rows, cols = np.repeat(np.arange(n_conn), 5), nbr[:, 1:].ravel()
    else:
        raise typer.BadParameter(f"unknown graph kind {kind!r} (ba, geo)")
    perm = rng.permutation(n)[:n_conn]  # connected nodes get random ids; the rest stay isolated
    return _symmetric(n, perm[rows], perm[cols], rng)


def make_queries(n: int, q: int, seeds: int, rng: np.random.Generator) -> np.ndarray:
    """(n, q) seed distributions with ``seeds`` non-zeros per column (like top-k activated nodes)."""
    r0 = np.zeros((n, q))
    for j in range(q):
        r0[rng.choice(n, seeds, replace=False), j] = rng.random(seeds) + 0.1
    return r0


@dataclass
class Run:
    name: str
    mode: str
    seconds: list[float]  # per query
    results: dict[int, np.ndarray]  # query index -> scores


def run_single(name: str, fn: Callable[[np.ndarray], np.ndarray], r0: np.ndarray, budget: float, min_q: int) -> Run:
    """One query at a time until the time budget is spent."""
    run = Run(name, "single", [], {})
    spent = 0.0
    for j in range(r0.shape[1]):
        if j >= min_q and spent >= budget:
            break
        t = time.perf_counter()
        run.results[j] = fn(r0[:, j])
        dt = time.perf_counter() - t
        run.seconds.append(dt)
        spent += dt
    return run


def run_batch(name: str, fn: Callable[[np.ndarray], np.ndarray], r0: np.ndarray, batch: int) -> Run:
    """The first ``batch`` queries solved together; per-query time is the batch time / batch."""
    cols = r0[:, :batch]
    t = time.perf_counter()
    out = fn(cols)
    dt = time.perf_counter() - t
    return Run(name, f"batch {cols.shape[1]}", [dt / cols.shape[1]], {j: out[:, j] for j in range(cols.shape[1])})


def top10(x: np.ndarray) -> np.ndarray:
    idx = np.argpartition(-x, 10)[:10]
    return idx[np.argsort(-x[idx], kind="stable")]


def compare(run: Run, ref: Run) -> tuple[str, float]:
    """('yes' | 'set' | 'no' with counts, max L1) over the queries both runs answered."""
    common = sorted(set(run.results) & set(ref.results))
    if not common:
        return "-", float("nan")
    same_order = sum(np.array_equal(top10(run.results[j]), top10(ref.results[j])) for j in common)
    same_set = sum(set(top10(run.results[j])) == set(top10(ref.results[j])) for j in common)
    l1 = max(float(np.abs(run.results[j] - ref.results[j]).sum()) for j in common)
    tag = f"{same_order}/{len(common)}" + ("" if same_set == same_order else f" (set {same_set})")
    return tag, l1


def bench_alpha(
    g: PPRGraph,
    r0: np.ndarray,
    alpha: float,
    dev: torch.device,
    batch: int,
    budget: float,
    min_q: int,
    torch_single: bool,
) -> list[tuple[str, ...]]:
    """Time every engine at one damping; rows of (engine, mode, queries, median ms, speed-up, top-10, L1)."""
    cg, power = partial(ppr_cg, g, alpha=alpha), partial(ppr_scipy, g, alpha=alpha)
    torch_fn = partial(ppr_torch, g, alpha=alpha, device=str(dev))
    ref = run_single("igraph PRPACK", partial(ppr_igraph, g, alpha=alpha), r0, budget, min_q)
    runs = [
        ref,
        run_single("scipy power", power, r0, budget, min_q),
        run_single("cg", cg, r0, budget, min_q),
        run_batch("cg", cg, r0, batch),
        run_batch(f"torch {dev.type}", torch_fn, r0, batch),
        # per-node bound, not L1: its "max L1" column is expected to exceed 1e-6 (see mmkg.ppr.ppr_push)
        run_single("local push", partial(ppr_local, g, alpha=alpha), r0, budget, min_q),
    ]
    if torch_single or dev.type == "cuda":
        runs.append(run_single(f"torch {dev.type}", torch_fn, r0, budget, min_q))
    base = statistics.median(ref.seconds)
    rows = []
    for run in runs:
        med = statistics.median(run.seconds)
        match, l1 = compare(run, ref) if run is not ref else ("ref", 0.0)
        count = len(run.seconds) if run.mode == "single" else len(run.results)
        rows.append((run.name, run.mode, str(count), f"{1e3 * med:,.1f}", f"{base / med:.1f}x", match, f"{l1:.1e}"))
    return rows


def main(
    sizes: Annotated[str, typer.Option(help="comma-separated node counts")] = "10000,100000,1000000",
    queries: Annotated[int, typer.Option(help="queries per size")] = 20,
    graphs: Annotated[str, typer.Option(help="comma-separated graph kinds: ba, geo")] = "ba,geo",
    alphas: Annotated[str, typer.Option(help="comma-separated damping values")] = "0.85,0.5",
    seeds: Annotated[int, typer.Option(help="seed nodes per query")] = 50,
    batch: Annotated[int, typer.Option(help="queries per batched (n, q) solve")] = 8,
    budget: Annotated[float, typer.Option(help="seconds per engine and damping before stopping early")] = 30.0,
    min_queries: Annotated[int, typer.Option(help="queries run regardless of the budget")] = 3,
    device: Annotated[str, typer.Option(help="torch device: auto, cpu, cuda")] = "auto",
    torch_single: Annotated[bool, typer.Option(help="also time torch one query at a time")] = False,
    threads: Annotated[int, typer.Option(help="OpenMP/BLAS/torch CPU threads (0: leave the defaults)")] = 1,
    seed: int = 0,
) -> None:
    import torch

    if threads > 0:
        # PRPACK runs OpenMP loops; with spare cores absent (a shared box) each sweep waits out scheduler slices,
        # which made it up to 300x slower here. One thread for every engine keeps the comparison like for like.
        threadpool_limits(threads)
        torch.set_num_threads(threads)
    dev = resolve_device(device)
    console.print(
        f"torch device: {dev}; CPU threads: {threads or 'default'}; cores: {os.cpu_count()}; "
        f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    prep_table = Table(title="One-time preparation (s)")
    for col in ("graph", "n", "edges", "transition_matrix", "cg: S", "igraph.Graph", f"torch {dev.type}"):
        prep_table.add_column(col, justify="right")
    table = Table(title=f"PPR latency per query ({seeds} seeds/query, eps=1e-6)")
    for col in ("graph", "n", "α", "engine", "mode", "queries", "median ms", "vs PRPACK", "top-10 = PRPACK", "max L1"):
        table.add_column(col, justify="right")

    for kind in graphs.split(","):
        for n in (int(s) for s in sizes.split(",")):
            rng = np.random.default_rng(seed)
            A = make_graph(kind, n, rng)
            r0 = make_queries(n, queries, seeds, rng)
            t0 = time.perf_counter()
            g: PPRGraph = transition_matrix(A)
            t1 = time.perf_counter()
            g.symmetric()
            t2 = time.perf_counter()
            g.to_igraph()
            t3 = time.perf_counter()
            g.to_torch(str(dev))
            t4 = time.perf_counter()
            prep_table.add_row(
                kind,
                f"{n:,}",
                f"{A.nnz // 2:,}",
                f"{t1 - t0:.2f}",
                f"{t2 - t1:.2f}",
                f"{t3 - t2:.2f}",
                f"{t4 - t3:.2f}",
            )
            for alpha in (float(a) for a in alphas.split(",")):
                console.print(f"[dim]{kind} n={n:,} α={alpha}[/dim]")
                for row in bench_alpha(g, r0, alpha, dev, batch, budget, min_queries, torch_single):
                    table.add_row(kind, f"{n:,}", f"{alpha:g}", *row)
            del g, A
    console.print(prep_table)
    console.print(table)
    console.print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    typer.run(main)
