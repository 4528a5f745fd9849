"""The multi-granularity multimodal graph: chunk, image and entity nodes with three edge kinds.

MG2-RAG section 3.1: contextual edges (chunk–image, chunk–entity) keep provenance, semantic edges
(entity–entity, from extracted relations) carry linguistic structure, grounding edges
(entity–image, weighted by σ) carry visual evidence. The graph is undirected and stored as a
symmetric CSR adjacency (int32 indices, float32 weights) in a pickle-free npz, with a node table
that maps node indices to chunk ids, image ids and entity keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp

from mmkg.atomic import atomic_path

NODE_KINDS = ("chunk", "image", "entity")
NODES_SCHEMA = pl.Schema({"node": pl.Int32, "kind": pl.String, "key": pl.String, "partition": pl.String})


@dataclass
class Graph:
    adjacency: sp.csr_array  # symmetric, float32 weights, int32 indices
    nodes: pl.DataFrame  # node, kind, key, partition (null for entities: they span partitions)

    @property
    def n(self) -> int:
        return self.nodes.height

    def index_of(self, kind: str) -> dict[str, int]:
        sub = self.nodes.filter(pl.col("kind") == kind)
        return dict(zip(sub["key"].to_list(), sub["node"].to_list(), strict=True))

    def counts(self) -> dict[str, int]:
        by_kind = dict(self.nodes.group_by("kind").len().iter_rows())
        return {**{f"{k}_nodes": int(by_kind.get(k, 0)) for k in NODE_KINDS}, "edges": int(self.adjacency.nnz // 2)}

    def save(self, folder: Path) -> None:
        a = self.adjacency.tocsr()
        # uncompressed: at 302k chunks (3.3M edges) zlib took 1.8 s to write and 0.17 s to read, plain 0.04 s
        # and 0.03 s, for 18 MB against 59 MB beside 8.6 GB of vectors
        with atomic_path(folder / "graph.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(
                fh,
                shape=np.asarray(a.shape, dtype=np.int64),
                indptr=a.indptr.astype(np.int64),
                indices=a.indices.astype(np.int32),
                data=a.data.astype(np.float32),
            )
        with atomic_path(folder / "nodes.parquet") as tmp:
            self.nodes.write_parquet(tmp)

    @classmethod
    def load(cls, folder: Path) -> Graph:
        with np.load(folder / "graph.npz", allow_pickle=False) as z:
            shape = tuple(int(x) for x in z["shape"])
            adj = _compact(sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=shape))
        return cls(adj, pl.read_parquet(folder / "nodes.parquet"))

    def to_igraph(self):
        """igraph view (undirected, ``weight`` edge attribute), for analysis and the PRPACK reference."""
        import igraph as ig

        upper = sp.triu(self.adjacency, k=0).tocoo()
        g = ig.Graph(n=self.n, edges=np.column_stack([upper.row, upper.col]).tolist(), directed=False)
        g.es["weight"] = upper.data.astype(float).tolist()
        g.vs["kind"] = self.nodes["kind"].to_list()
        g.vs["key"] = self.nodes["key"].to_list()
        return g

    def to_torch(self, device: str = "cpu"):
        """Sparse CSR tensor of the adjacency, for GPU propagation."""
        import torch

        a = self.adjacency.tocsr()
        return torch.sparse_csr_tensor(
            torch.from_numpy(a.indptr.astype(np.int64)),
            torch.from_numpy(a.indices.astype(np.int64)),
            torch.from_numpy(a.data.astype(np.float32)),
            size=a.shape,
            device=device,
        )


def build_graph(
    chunks: pl.DataFrame,
    mentions: pl.DataFrame,
    relations: pl.DataFrame,
    images: pl.DataFrame,
    objects: pl.DataFrame,
) -> Graph:
    """Assemble the global graph from every partition's tables (all frames carry ``partition``)."""
    chunk_nodes = chunks.select(pl.col("chunk_id").alias("key"), "partition").unique("key", maintain_order=True)
    image_nodes = images.select(pl.col("image_id").alias("key"), "partition").unique("key", maintain_order=True)
    entity_keys = mentions.filter(pl.col("relational")).select(pl.col("entity_key").alias("key")).unique().sort("key")
    nodes = pl.concat(
        [
            chunk_nodes.with_columns(pl.lit("chunk").alias("kind")),
            image_nodes.with_columns(pl.lit("image").alias("kind")),
            entity_keys.with_columns(pl.lit("entity").alias("kind"), pl.lit(None, dtype=pl.String).alias("partition")),
        ],
        how="diagonal",
    ).with_row_index("node")
    nodes = nodes.select(pl.col("node").cast(pl.Int32), "kind", "key", "partition")
    idx = {k: nodes.filter(pl.col("kind") == k).select("key", "node") for k in NODE_KINDS}

    def edges(frame: pl.DataFrame, a: str, ka: str, b: str, kb: str, weight: pl.Expr) -> pl.DataFrame:
        return (
            frame.with_columns(weight.cast(pl.Float32).alias("w"))
            .join(idx[ka].rename({"key": a, "node": "u"}), on=a)
            .join(idx[kb].rename({"key": b, "node": "v"}), on=b)
            .select("u", "v", "w")
        )

    chunk_image = chunks.select("chunk_id", pl.col("image_ids").alias("image_id")).explode("image_id").drop_nulls()
    chunk_entity = mentions.filter(pl.col("relational")).select("chunk_id", "entity_key").unique()
    semantic = (
        relations.drop_nulls(["subject_key", "object_key"])
        .select(pl.col("subject_key").alias("s"), pl.col("object_key").alias("o"))
        .unique()
    )
    grounding = objects.group_by("entity_key", "image_id").agg(pl.col("score").max())
    parts = [
        edges(chunk_image, "chunk_id", "chunk", "image_id", "image", pl.lit(1.0)),
        edges(chunk_entity, "chunk_id", "chunk", "entity_key", "entity", pl.lit(1.0)),
        edges(semantic, "s", "entity", "o", "entity", pl.lit(1.0)),
        edges(grounding, "entity_key", "entity", "image_id", "image", pl.col("score")),
    ]
    e = pl.concat(parts)
    # undirected: both directions, one weight per pair (the strongest evidence)
    both = pl.concat([e, e.select(pl.col("v").alias("u"), pl.col("u").alias("v"), "w")])
    both = both.filter(pl.col("u") != pl.col("v")).group_by("u", "v").agg(pl.col("w").max())
    n = nodes.height
    adj = sp.csr_array(
        (both["w"].to_numpy().astype(np.float32), (both["u"].to_numpy(), both["v"].to_numpy())), shape=(n, n)
    )
    adj.sort_indices()
    return Graph(_compact(adj), nodes)


def _compact(adj: sp.csr_array) -> sp.csr_array:
    """int32 index arrays (half the memory of scipy's int64 default) whenever the sizes allow."""
    if adj.nnz < 2**31 and max(adj.shape) < 2**31:
        adj.indices = adj.indices.astype(np.int32, copy=False)
        adj.indptr = adj.indptr.astype(np.int32, copy=False)
    return adj
