"""The published graph in the formats graph tools read: GraphML (Gephi, yEd, igraph, NetworkX), node-link JSON
(NetworkX ``node_link_graph``, D3) and Parquet node/edge tables (Neo4j ``LOAD CSV``-style imports, DuckDB, Spark).

Nodes keep their id (chunk id, image id or entity key), kind, a readable label (a chunk's document title, a
picture's source, an entity's name) and an entity's type (PERSON, DATE, ...). Edges are undirected, each listed
once, with their weight (1 for contextual edges, σ for grounding edges) and what they mean
(``mmkg.graph_labels``): ``kind`` (shows, mentions, depicts, relation) and ``predicate``; a relation edge also
carries its ``subject`` and ``object`` entity keys, the ``sentence`` it was read from and how many
``relations`` join the pair. The same columns go to every format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp

from mmkg.graph_labels import edge_kind, relation_edges

FORMATS = ("graphml", "json", "parquet")


def tables(index: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(nodes, edges)`` of an open index: nodes ``id, kind, label, type``; edges ``source, target, weight, kind,
    predicate, subject, object, sentence, relations`` (source before target in graph order)."""
    g = index.graph
    entities = index.entities
    names = dict(entities.select("entity_key", "name").iter_rows()) if entities is not None else {}
    types = dict(entities.select("entity_key", "label").iter_rows()) if entities is not None else {}
    titles = dict(index.chunks.select("chunk_id", "title").iter_rows())
    sources = dict(index.images.select("image_id", "source").iter_rows())
    keys, kinds = g.nodes["key"].to_list(), g.nodes["kind"].to_list()
    look = {"entity": names, "chunk": titles, "image": sources}
    labels = [look.get(kind, {}).get(key, key) for key, kind in zip(keys, kinds, strict=True)]
    node_types = [types.get(key) if kind == "entity" else None for key, kind in zip(keys, kinds, strict=True)]
    nodes = pl.DataFrame({"id": keys, "kind": kinds, "label": labels, "type": node_types},
                         schema_overrides={"type": pl.String})  # fmt: skip
    upper = sp.triu(g.adjacency, k=1).tocoo()
    ids = np.asarray(keys, dtype=object)
    kind_of = np.asarray(kinds, dtype=object)
    edges = pl.DataFrame({
        "source": ids[upper.row].tolist(), "target": ids[upper.col].tolist(),
        "weight": upper.data.astype(np.float64),
        "kind": [edge_kind(a, b) for a, b in zip(kind_of[upper.row], kind_of[upper.col], strict=True)],
    })  # fmt: skip
    rel = relation_edges(index)
    edges = (
        edges.with_columns(
            pl.min_horizontal("source", "target").alias("a"), pl.max_horizontal("source", "target").alias("b")
        )
        .join(rel, on=["a", "b"], how="left")
        .with_columns(
            pl.when(pl.col("kind") == "relation")
            .then(pl.col("predicate"))
            .otherwise(pl.col("kind"))
            .alias("predicate"),
            pl.col("relations").fill_null(0),
        )
        .select("source", "target", "weight", "kind", "predicate", "subject", "object", "sentence", "relations")
    )
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
    g.vs["type"] = nodes["type"].fill_null("").to_list()  # GraphML has no null: "" where there is none
    for column in edges.columns[2:]:
        values = edges[column]
        g.es[column] = (values.fill_null("") if values.dtype == pl.String else values).to_list()
    g.write_graphml(str(out))
    return out
