"""Publishing a retrieval index version: the only writer of the LanceDB tables and the manifest.

A version folder is written in full, the manifest last, and only then does ``CURRENT`` move to it
(atomic rename): a reader never sees half an index. LanceDB tables are updated per partition
(delete that partition's rows, add its new ones) and every version pins the table versions it
was published with, so a reader holding an older version keeps reading exactly what it opened.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import lancedb
import numpy as np
import polars as pl
import pyarrow as pa

from mmkg.embedding import chunk_texts
from mmkg.entities import merge_mentions
from mmkg.graph import Graph
from mmkg.incidence import build_incidence
from mmkg.index.manifest import CURRENT, EncoderSpec, Manifest, current_version, set_current
from mmkg.lexical import LexicalIndex

GRANULARITIES = ("chunks", "sentences", "images", "objects")
ID_COLUMN = {"chunks": "chunk_id", "sentences": "sentence_id", "images": "image_id", "objects": "object_id"}
ANN_MIN_ROWS = 100_000  # below this, exact search over vectors in memory is fast and exact
ANN_INDEX_TYPE = "IVF_PQ"
LEXICAL_DIR = "bm25"  # the version's BM25 chunk index (mmkg.lexical)
_SAFE_PARTITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")


@dataclass
class PublishResult:
    version: str
    manifest: Manifest
    changed: list[str]
    removed: list[str]
    reused: bool  # nothing changed: the current version was kept


def fingerprint(vectors: dict[str, pl.DataFrame], graph: Graph) -> tuple[dict[str, str], str]:
    """Per-partition digests of the published ids (ids are content hashes) and one of the graph."""
    per: dict[str, hashlib._Hash] = {}
    for name in GRANULARITIES:
        df = vectors[name].select("partition", ID_COLUMN[name]).sort("partition", ID_COLUMN[name])
        for part, ids in df.group_by("partition", maintain_order=True).agg(pl.col(ID_COLUMN[name])).iter_rows():
            h = per.setdefault(part, hashlib.blake2b(digest_size=16))
            h.update(name.encode())
            h.update("\x1f".join(ids).encode())
    g = hashlib.blake2b(digest_size=16)
    a = graph.adjacency
    for arr in (a.indptr, a.indices, a.data):
        g.update(np.ascontiguousarray(arr).tobytes())
    g.update("\x1f".join(graph.nodes["key"].to_list()).encode())
    return {p: h.hexdigest() for p, h in sorted(per.items())}, g.hexdigest()


def _arrow(df: pl.DataFrame, name: str, dim: int) -> pa.Table:
    out = df.select(
        pl.col(ID_COLUMN[name]).alias("id"),
        "partition",
        "doc_id",
        pl.col("vector").cast(pl.Array(pl.Float32, dim)),
    )
    return out.to_arrow()


def _in_list(values: list[str]) -> str:
    for v in values:
        if not _SAFE_PARTITION.match(v):
            raise ValueError(f"partition key {v!r} is not a safe identifier")
    return ", ".join("'" + v + "'" for v in values)


def publish_index(
    root: Path,
    encoder: EncoderSpec,
    graph: Graph,
    vectors: dict[str, pl.DataFrame],
    payload: dict[str, pl.DataFrame],
    mentions: pl.DataFrame,
    ann_min_rows: int | None = None,
    ann_index_type: str | None = None,
) -> PublishResult:
    """Publish a new version from every partition's vectors and tables; reuse the current one if unchanged.

    ``vectors[g]`` has the id column of granularity g, ``partition``, ``doc_id`` and ``vector``;
    ``payload`` holds the chunk, sentence, image and object tables that results quote from.
    """
    ann_min_rows = ANN_MIN_ROWS if ann_min_rows is None else ann_min_rows
    ann_index_type = ann_index_type or ANN_INDEX_TYPE
    root.mkdir(parents=True, exist_ok=True)
    parts, graph_fp = fingerprint(vectors, graph)
    previous: Manifest | None = None
    if (root / CURRENT).exists():
        previous = Manifest.read(root / "versions" / current_version(root))
        if previous.encoder.id != encoder.id:
            raise ValueError(
                f"the index at {root} was built with encoder {previous.encoder.id}; this run uses {encoder.id}. "
                "Publish to a new index root, or delete the old one to rebuild"
            )
        if previous.partitions == parts and previous.graph_fingerprint == graph_fp:
            return PublishResult(previous.version, previous, [], [], reused=True)
    old = previous.partitions if previous else {}
    changed = sorted(p for p, fp in parts.items() if old.get(p) != fp)
    removed = sorted(set(old) - set(parts))

    db = lancedb.connect(str(root / "lance"))
    existing = set(db.list_tables().tables)
    lance_versions: dict[str, int] = {}
    ann: list[str] = []
    for name in GRANULARITIES:
        df = vectors[name]
        if name not in existing:
            tbl = db.create_table(name, _arrow(df, name, encoder.dim))
        else:
            tbl = db.open_table(name)
            stale = changed + removed
            if stale:
                tbl.delete(f"partition IN ({_in_list(stale)})")
            fresh = df.filter(pl.col("partition").is_in(changed))
            if fresh.height:
                tbl.add(_arrow(fresh, name, encoder.dim))
        rows = tbl.count_rows()
        if rows >= ann_min_rows:
            # Large tables get an ANN index (rebuilt after each update so new rows are indexed too).
            tbl.create_index(
                metric="cosine",
                vector_column_name="vector",
                index_type=ann_index_type,
                num_partitions=max(1, int(rows**0.5)),
                num_sub_vectors=max(1, encoder.dim // 16),
                replace=True,
            )
            ann.append(name)
        lance_versions[name] = tbl.version

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    version = f"v{stamp}-{hashlib.blake2b(('|'.join(parts.values()) + graph_fp).encode(), digest_size=4).hexdigest()}"
    folder = root / "versions" / version
    folder.mkdir(parents=True)
    graph.save(folder)
    for name, df in payload.items():
        df.write_parquet(folder / f"{name}.parquet")
    entity_keys = graph.nodes.filter(pl.col("kind") == "entity")["key"].to_list()
    keyset = set(entity_keys)
    # names and counts of the graph's entities: what query linking and readers show for a node
    merge_mentions(mentions.filter(pl.col("entity_key").is_in(entity_keys))).write_parquet(folder / "entities.parquet")
    chunks = payload["chunks"]
    LexicalIndex.build(chunks["chunk_id"].to_list(), chunk_texts(chunks, payload["documents"])).save(
        folder / LEXICAL_DIR
    )
    smi = build_incidence(
        payload["sentences"]["sentence_id"].to_list(),
        entity_keys,
        (
            (s, k)
            for s, k, rel in mentions.select("sentence_id", "entity_key", "relational").iter_rows()
            if rel and k in keyset
        ),
    )
    omi = build_incidence(
        payload["objects"]["object_id"].to_list(),
        entity_keys,
        ((o, k) for o, k in payload["objects"].select("object_id", "entity_key").iter_rows() if k in keyset),
    )
    smi.save(folder / "m_smi.npz")
    omi.save(folder / "m_omi.npz")
    counts = {
        **graph.counts(),
        **{name: vectors[name].height for name in GRANULARITIES},
    }
    manifest = Manifest(
        version=version,
        encoder=encoder,
        partitions=parts,
        graph_fingerprint=graph_fp,
        lance_versions=lance_versions,
        ann_indexed=ann,
        counts=counts,
    )
    manifest.write(folder)  # last file of the version: its presence means the version is complete
    set_current(root, version)
    return PublishResult(version, manifest, changed, removed, reused=False)
