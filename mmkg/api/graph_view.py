"""The graph as the web page explores it: readable node labels, one node's details, and its neighbours.

Nodes are named ``KIND:KEY`` as ``POST /subgraph`` names them (``chunk:<chunk id>``, ``entity:<entity
key>``, ``image:<image id>``). Everything here reads the pinned index version's graph and tables; nothing
is written.

- ``node_label``: what a node is called on the page: a chunk's title (and page), an entity's name, a
  picture's file name (not the word "picture").
- ``node_details``: ``GET /graph/node``: a node's text or picture and where it occurs (the chunks that
  mention an entity, with the sentence that does; the documents that show a picture, with its objects).
- ``expand``: ``POST /graph/expand``: a node's neighbours not yet drawn (strongest links first), with
  their edges to what is drawn.
- ``subgraph``: ``POST /subgraph``: the chunks of an answer with the entities and pictures around them.

Edges say what they mean (``mmkg.graph_labels``): ``kind`` (shows, mentions, depicts, relation) and ``label``
(a relation's predicates, with the sentence it was read from); entity nodes that are values (dates, amounts)
carry ``leaf``, which the page hides until asked.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import numpy as np

from mmkg.graph_labels import edge_kind, leaf_entities, relation_edges
from mmkg.index.derived import derived
from mmkg.retrieval import evidence as ev

KINDS = ("chunk", "entity", "image")
MAX_OCCURRENCES = 12  # chunks or documents listed in a node's details


class UnknownNode(LookupError):
    """A node id that is not ``KIND:KEY`` of a node in the index version."""


def node_row(index: Any, node_id: str) -> int:
    """The graph row of ``KIND:KEY``; ``UnknownNode`` when there is none."""
    kind, sep, key = node_id.partition(":")
    if not sep or kind not in KINDS:
        raise UnknownNode(f"{node_id!r} is not a node id: give KIND:KEY with KIND one of {', '.join(KINDS)}")
    row = _rows(index).get((kind, key))
    if row is None:
        raise UnknownNode(f"no {kind} {key!r} in index version {index.version}")
    return row


def _rows(index: Any) -> dict[tuple[str, str], int]:
    """(kind, key) -> graph row, built once per index version (dropped with it)."""

    def build() -> dict[tuple[str, str], int]:
        nodes = index.graph.nodes
        return {(k, key): i for i, (k, key) in enumerate(zip(nodes["kind"].to_list(), nodes["key"].to_list(),
                                                             strict=True))}  # fmt: skip

    return derived(index, "graph_view.rows", build)


def node_label(index: Any, kind: str, key: str) -> str:
    """A node's name on the page: a chunk's title and page, an entity's name, a picture's file name."""
    if kind == "chunk":
        c = ev.chunk_record(index, key) or {}
        return (c.get("title") or "chunk") + (f" p.{c['page']}" if c.get("page") else "")
    if kind == "entity":
        return ev.entity_names(index).get(key, (key, ""))[0]
    img = ev.image_record(index, key) or {}
    return PurePosixPath(str(img.get("source") or "picture")).name.split("#")[0] or "picture"


def describe_node(index: Any, row: int) -> dict[str, Any]:
    """The node as ``/subgraph`` gives it, plus its degree in the whole graph (for sizing)."""
    nodes = index.graph.nodes
    kind, key = nodes["kind"][row], nodes["key"][row]
    adj = index.graph.adjacency
    return {"id": f"{kind}:{key}", "kind": kind, "key": key, "label": node_label(index, kind, key),
            "degree": int(adj.indptr[row + 1] - adj.indptr[row]), "leaf": _is_leaf(index, kind, key)}  # fmt: skip


def _is_leaf(index: Any, kind: str, key: str) -> bool:
    return kind == "entity" and key in derived(index, "graph_view.leaves", lambda: leaf_entities(index))


def _relations(index: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """(entity key, entity key) in sorted order -> the relations between them (``relation_edges``' row)."""
    return derived(index, "graph_view.relations",
                   lambda: {(r["a"], r["b"]): r for r in relation_edges(index).iter_rows(named=True)})  # fmt: skip


def edge(index: Any, kind_a: str, key_a: str, kind_b: str, key_b: str, weight: float) -> dict[str, Any]:
    """An edge as the page draws it: its ends, weight, kind and label (a relation's predicates and sentence)."""
    kind = edge_kind(kind_a, kind_b)
    out = {"source": f"{kind_a}:{key_a}", "target": f"{kind_b}:{key_b}", "weight": float(weight), "kind": kind,
           "label": kind}  # fmt: skip
    if kind == "relation" and (rel := _relations(index).get((min(key_a, key_b), max(key_a, key_b)))):
        names = ev.entity_names(index)
        subject = names.get(rel["subject"], (rel["subject"], ""))[0]
        obj = names.get(rel["object"], (rel["object"], ""))[0]
        out["label"] = rel["predicate"].replace("_", " ")
        out["statement"] = f"{subject} — {out['label']} — {obj}"
        out["sentence"] = rel["sentence"] or ""
    return out


def _neighbours(index: Any, row: int) -> tuple[np.ndarray, np.ndarray]:
    adj = index.graph.adjacency
    lo, hi = adj.indptr[row], adj.indptr[row + 1]
    return np.asarray(adj.indices[lo:hi]), np.asarray(adj.data[lo:hi])


def node_details(index: Any, node_id: str) -> dict[str, Any]:
    """A node's text or picture, its neighbours by kind, and where it occurs."""
    row = node_row(index, node_id)
    out = describe_node(index, row)
    kind, key = out["kind"], out["key"]
    nodes = index.graph.nodes
    kinds = nodes["kind"].to_list()
    keys = nodes["key"].to_list()
    nbrs, _ = _neighbours(index, row)
    out["neighbours"] = {k: int(sum(1 for n in nbrs.tolist() if kinds[n] == k)) for k in KINDS}
    if kind == "chunk":
        c = ev.chunk_record(index, key) or {}
        out.update(title=c.get("title"), source_path=c.get("source_path"), page=c.get("page"), text=c.get("text", ""),
                   image_ids=list(c.get("image_ids") or []))  # fmt: skip
        out["entities"] = sorted(node_label(index, "entity", keys[n]) for n in nbrs.tolist() if kinds[n] == "entity")
    elif kind == "entity":
        name, label = ev.entity_names(index).get(key, (key, ""))
        out.update(name=name, type=label)
        chunks = [keys[n] for n in nbrs.tolist() if kinds[n] == "chunk"]
        out["occurrences"] = [_mention(index, c, name) for c in chunks[:MAX_OCCURRENCES]]
        out["pictures"] = [keys[n] for n in nbrs.tolist() if kinds[n] == "image"][:MAX_OCCURRENCES]
    else:
        img = ev.image_record(index, key) or {}
        out.update(image_id=key, source=img.get("source"), width=img.get("width"), height=img.get("height"))
        occ = index.image_occurrences.filter(index.image_occurrences["image_id"] == key)
        docs = index.documents.select("doc_id", "title", "source_path")
        occ = occ.join(docs, on="doc_id", how="left") if "doc_id" in occ.columns else occ
        out["occurrences"] = [
            {"title": o.get("title"), "source_path": o.get("source_path"), "page": o.get("page"),
             "alt_text": o.get("alt_text") or "", "t_s": o.get("t_s")}
            for o in occ.head(MAX_OCCURRENCES).iter_rows(named=True)
        ]  # fmt: skip
        objs = index.objects.filter(index.objects["image_id"] == key)
        out["objects"] = sorted({str(n) for n in objs["entity_name"].to_list() if n})
    return out


def _mention(index: Any, chunk_id: str, name: str) -> dict[str, Any]:
    """Where an entity occurs: the chunk's document and the first of its sentences that names it."""
    c = ev.chunk_record(index, chunk_id) or {}
    low = name.lower()
    sentence = next((text for _, _, text in ev.chunk_sentences(index, chunk_id) if low in text.lower()), "")
    return {"chunk_id": chunk_id, "title": c.get("title"), "source_path": c.get("source_path"),
            "page": c.get("page"), "sentence": sentence}  # fmt: skip


def expand(index: Any, node_id: str, known: list[str], limit: int) -> dict[str, Any]:
    """Up to ``limit`` neighbours of a node that are not in ``known`` (strongest link first, then best connected),
    with every edge between them and the node, ``known`` or each other; ``more``: the neighbours left out."""
    row = node_row(index, node_id)
    rows = _rows(index)
    nodes = index.graph.nodes
    kinds, keys = nodes["kind"].to_list(), nodes["key"].to_list()
    drawn = {row}
    for nid in known:
        kind, _, key = nid.partition(":")
        if (r := rows.get((kind, key))) is not None:
            drawn.add(r)
    nbrs, weights = _neighbours(index, row)
    adj = index.graph.adjacency
    degree = np.diff(adj.indptr)
    fresh = [(int(n), float(w)) for n, w in zip(nbrs.tolist(), weights.tolist(), strict=True) if n not in drawn]
    fresh.sort(key=lambda nw: (-nw[1], -int(degree[nw[0]]), keys[nw[0]]))
    new = [n for n, _ in fresh[:limit]]
    out_nodes = [describe_node(index, n) for n in new]
    edges = []
    if new:
        everything = sorted(drawn | set(new))
        sub = adj[np.array(new)][:, np.array(everything)].tocoo()
        new_set = set(new)
        for i, j, w in zip(sub.row.tolist(), sub.col.tolist(), sub.data.tolist(), strict=True):
            a, b = new[i], everything[j]
            if b in new_set and b <= a:  # an edge between two new nodes, once
                continue
            edges.append(edge(index, kinds[a], keys[a], kinds[b], keys[b], w))
    return {"version": index.version, "node": node_id, "nodes": out_nodes, "edges": edges,
            "more": max(len(fresh) - len(new), 0)}  # fmt: skip


def subgraph(index: Any, chunk_ids: list[str], max_entities: int) -> dict[str, Any]:
    """``POST /subgraph``: chunks, the entities they mention (most connected first) and their pictures, with the
    edges among them."""
    pos = index.positions["chunks"]
    rows = [pos[c] for c in chunk_ids if c in pos]
    if not rows:
        raise UnknownNode(f"none of the chunks are in index version {index.version}")
    adj = index.graph.adjacency
    nodes = index.graph.nodes
    kinds = nodes["kind"].to_list()
    keys = nodes["key"].to_list()
    names = ev.entity_names(index)
    chunk_rows = set(rows)
    entity_hits: dict[int, int] = {}
    images: set[int] = set()
    for r in rows:
        nbrs = adj.indices[adj.indptr[r] : adj.indptr[r + 1]]
        for n in nbrs.tolist():
            if kinds[n] == "entity":
                entity_hits[n] = entity_hits.get(n, 0) + 1
            elif kinds[n] == "image":
                images.add(n)
    entities = sorted(entity_hits, key=lambda n: (-entity_hits[n], keys[n]))[:max_entities]
    keep = sorted(chunk_rows | set(entities) | images)
    sub = adj[np.array(keep)][:, np.array(keep)].tocoo()
    out_nodes = []
    for n in keep:
        kind = kinds[n]
        if kind == "chunk":
            c = ev.chunk_record(index, keys[n]) or {}
            label = (c.get("title") or "chunk") + (f" p.{c['page']}" if c.get("page") else "")
        elif kind == "entity":
            label = names.get(keys[n], (keys[n], ""))[0]
        else:
            label = node_label(index, kind, keys[n])  # the picture's file name
        out_nodes.append({"id": f"{kind}:{keys[n]}", "kind": kind, "key": keys[n], "label": label,
                          "leaf": _is_leaf(index, kind, keys[n])})  # fmt: skip
    edges = [
        edge(index, kinds[keep[i]], keys[keep[i]], kinds[keep[j]], keys[keep[j]], w)
        for i, j, w in zip(sub.row.tolist(), sub.col.tolist(), sub.data.tolist(), strict=True)
        if i < j
    ]
    return {"version": index.version, "nodes": out_nodes, "edges": edges}
