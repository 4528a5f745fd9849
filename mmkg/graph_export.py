"""The published graph in the formats graph tools read: GraphML (Gephi, yEd, igraph, NetworkX), node-link JSON
(NetworkX ``node_link_graph``, D3) and Parquet node/edge tables (Neo4j ``LOAD CSV``-style imports, DuckDB, Spark).

Nodes keep their id (chunk id, image id or entity key), kind and a readable label (a chunk's document
title, a picture's source, an entity's name); edges are undirected with their weight (1 for contextual
edges, σ for grounding edges), each listed once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp

FORMATS = ("graphml", "json", "parquet")


def tables(index: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(nodes, edges)`` of an open index: nodes ``id, kind, label``; edges ``source, target, weight`` (i < j)."""
    g = index.graph
    names = dict(index.entities.select("entity_key", "name").iter_rows()) if index.entities is not None else {}
    titles = dict(index.chunks.select("chunk_id", "title").iter_rows())
    sources = dict(index.images.select("image_id", "source").iter_rows())
    keys, kinds = g.nodes["key"].to_list(), g.nodes["kind"].to_list()
    look = {"entity": names, "chunk": titles, "image": sources}
    labels = [look.get(kind, {}).get(key, key) for key, kind in zip(keys, kinds, strict=True)]
    nodes = pl.DataFrame({"id": keys, "kind": kinds, "label": labels})
    upper = sp.triu(g.adjacency, k=1).tocoo()
    ids = np.asarray(keys, dtype=object)
    edges = pl.DataFrame({"source": ids[upper.row].tolist(), "target": ids[upper.col].tolist(),
                          "weight": upper.data.astype(np.float64)})  # fmt: skip
    return nodes, edges


def export(index: Any, fmt: str, out: Path) -> Path:
    """Write the graph of ``index`` as ``fmt`` to ``out`` (a file; a folder for parquet); returns what was written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {list(FORMATS)}")
    nodes, edges = tables(index)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        out.mkdir(parents=True, exist_ok=True)
        nodes.write_parquet(out / "nodes.parquet")
        edges.write_parquet(out / "edges.parquet")
        return out
    if fmt == "json":
        doc = {"directed": False, "multigraph": False, "graph": {"index_version": index.version},
               "nodes": nodes.to_dicts(), "links": edges.to_dicts()}  # fmt: skip
        out.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        return out
    import igraph as ig

    pos = {k: i for i, k in enumerate(nodes["id"].to_list())}
    g = ig.Graph(n=nodes.height, edges=[(pos[s], pos[t]) for s, t in edges.select("source", "target").iter_rows()])
    g.vs["name"] = nodes["id"].to_list()
    g.vs["kind"] = nodes["kind"].to_list()
    g.vs["label"] = nodes["label"].to_list()
    g.es["weight"] = edges["weight"].to_list()
    g.write_graphml(str(out))
    return out
