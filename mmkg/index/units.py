"""Index units: one row per content id, whatever the number of places that show it.

Chunks and sentences belong to exactly one document (their ids hash where they sit). Pictures do
not: an image id is the hash of its bytes, so a logo on every report, a figure reused across papers
or a poster photographed for two rooms is one image id shown by many documents, possibly in many
partitions; an object id hashes the image, the backend, the entity and the box, so it is shared the
same way. Each partition embeds and grounds its own copy, and the index keeps one unit per id:

- the unit's vector is the ℓ2-normalized mean of the partitions' vectors (with the text encoder a
  picture is embedded through the text around it, so each partition sees it in its own context;
  with CLIP the copies are identical and the mean is that vector);
- its owner (``partition``, ``doc_id`` in LanceDB) is its first occurrence in (partition, doc_id)
  order: only a stable label, never used to decide what a filter allows;
- every occurrence (document, partition, page, caption; for objects, the chunk) is kept in the
  version's payload (``image_occurrences``, ``object_occurrences``) so evidence cites each place
  and filters allow a unit when any of its occurrences is allowed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from mmkg.graph import Graph
from mmkg.partitioned import FramePartitions, Partitioned, frame, partitioned, regroup
from mmkg.validation import (
    CheckResult,
    check_graph_counts,
    check_graph_structure,
    check_index_units,
    check_partition_tables,
    split_partitions,
)

#: LanceDB table -> id column, for every unit kind of the index
ID_COLUMN = {
    "chunks": "chunk_id",
    "sentences": "sentence_id",
    "images": "image_id",
    "objects": "object_id",
    "documents": "doc_id",
    "document_entities": "unit_id",
    "relations": "relation_id",
}
#: LanceDB table -> the partitioned asset its vectors come from (document vectors are computed at publish)
VECTOR_ASSET = {
    "chunks": "chunk_vectors",
    "sentences": "sentence_vectors",
    "images": "image_vectors",
    "objects": "object_vectors",
    "document_entities": "document_entity_vectors",
    "relations": "relation_vectors",
}
#: the unit kinds that many documents can share
SHARED = ("images", "objects")
#: the tables every version has (MG2-RAG's granularities); the others came later and may be absent in old versions
GRANULARITIES = ("chunks", "sentences", "images", "objects")

IMAGE_OCCURRENCE_COLUMNS = (
    "image_id", "doc_id", "partition", "occurrence", "page", "role", "source", "alt_text", "t_s",
)  # fmt: skip
OBJECT_OCCURRENCE_COLUMNS = ("object_id", "chunk_id", "doc_id", "partition")


def mean_vectors(vectors: pl.DataFrame, id_col: str) -> pl.DataFrame:
    """One row per id: normalized mean of its rows' vectors; owner = first row in (partition, doc_id) order."""
    if vectors.is_empty() or vectors[id_col].n_unique() == vectors.height:
        return vectors
    dtype = vectors.schema["vector"]
    assert isinstance(dtype, pl.Array)
    ordered = vectors.sort(id_col, "partition", "doc_id")
    ids = ordered[id_col]
    mat = ordered["vector"].to_numpy().reshape(ordered.height, dtype.size).astype(np.float64)
    starts = np.flatnonzero(np.r_[True, ids[1:].to_numpy() != ids[:-1].to_numpy()])
    sums = np.add.reduceat(mat, starts, axis=0)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    # opposite copies cancelling out is not a real case; keep the first copy rather than divide by zero
    means = np.where(norms > 1e-12, sums / np.maximum(norms, 1e-12), mat[starts])
    owners = ordered[starts.tolist()].select(id_col, "partition", "doc_id")
    merged = owners.with_columns(pl.Series("vector", means.astype(np.float32), dtype=dtype))
    # keep the input's order of first appearance (the graph numbers image nodes the same way)
    first = vectors.select(id_col).unique(id_col, keep="first", maintain_order=True)
    return first.join(merged, on=id_col, how="left", maintain_order="left").select(vectors.columns)


@dataclass
class Units:
    """What one index version publishes per unit kind, shared units collapsed to one row per id."""

    # LanceDB rows: id column, partition (owner), doc_id (owner), vector. Shared units are frames; the
    # others may stay on disk (``mmkg.partitioned``) and be read a batch at a time.
    vectors: dict[str, pl.DataFrame | Partitioned]
    payload: dict[str, pl.DataFrame]  # documents, chunks, sentences, images, objects + the two occurrence tables


def collapse(vectors: Mapping[str, pl.DataFrame | Partitioned], payload: dict[str, pl.DataFrame]) -> Units:
    """Per-partition vectors and tables -> one unit per content id, occurrences kept apart.

    ``payload["images"]`` / ``payload["objects"]`` may hold one row per occurrence (the concatenated
    partition tables); the result holds one row per id, plus ``image_occurrences`` and
    ``object_occurrences`` with one row per place the unit is shown. Tables not given are left out.
    Shared units' vectors are read into memory (pictures and objects are few); the others are passed on.
    """
    out_vectors = dict(vectors)
    for name in SHARED:
        if name in vectors:
            out_vectors[name] = mean_vectors(frame(vectors[name]), ID_COLUMN[name])
    out = dict(payload)
    if "images" in payload:
        images = payload["images"]
        image_occ = [c for c in IMAGE_OCCURRENCE_COLUMNS if c in images.columns]
        out["image_occurrences"] = images.select(image_occ).unique(maintain_order=True)
        n_occ = images.group_by("image_id").agg(pl.col("doc_id").n_unique().alias("n_documents"))
        out["images"] = (
            images.sort("image_id", "partition", "doc_id")
            .unique("image_id", keep="first", maintain_order=True)
            .join(n_occ, on="image_id", how="left")
            .select(
                "image_id",
                "doc_id",
                "partition",
                *[c for c in ("source", "blob_path", "width", "height", "phash") if c in images.columns],
                "n_documents",
            )
        )
    if "objects" in payload:
        objects = payload["objects"]
        out["object_occurrences"] = (
            objects.select(OBJECT_OCCURRENCE_COLUMNS)
            .unique(maintain_order=True)
            .sort("object_id", "partition", "doc_id")
        )
        out["objects"] = objects.sort("object_id", "partition", "doc_id").unique(
            "object_id", keep="first", maintain_order=True
        )
    return Units(out_vectors, out)


def document_vectors(
    chunk_vectors: pl.DataFrame, image_vectors: pl.DataFrame, image_occurrences: pl.DataFrame
) -> pl.DataFrame:
    """One vector per document: the ℓ2-normalized mean of its chunks' and pictures' vectors.

    mKG-RAG's first stage recalls whole documents (eq. 2); a document is embedded as what the index
    already holds of it, so no second encoder pass is needed and a picture-only document has one too.
    """
    dtype = chunk_vectors.schema["vector"]
    pic = (
        image_occurrences.select("image_id", "doc_id", "partition")
        .unique()
        .join(image_vectors.select("image_id", "vector"), on="image_id", how="inner")
    )
    rows = pl.concat(
        [chunk_vectors.select("doc_id", "partition", "vector"), pic.select("doc_id", "partition", "vector")]
    ).sort("doc_id", maintain_order=True)
    if rows.is_empty():
        return pl.DataFrame(schema={"doc_id": pl.String, "partition": pl.String, "vector": dtype})
    assert isinstance(dtype, pl.Array)
    docs = rows["doc_id"]
    mat = rows["vector"].to_numpy().reshape(rows.height, dtype.size).astype(np.float64)
    starts = np.flatnonzero(np.r_[True, docs[1:].to_numpy() != docs[:-1].to_numpy()])
    sums = np.add.reduceat(mat, starts, axis=0)
    means = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return (
        rows[starts.tolist()]
        .select("doc_id", "partition")
        .with_columns(pl.Series("vector", means.astype(np.float32), dtype=dtype))
    )


@dataclass(frozen=True)
class DocumentVectors:
    """``document_vectors`` computed a partition at a time as the table is read (a document is in one partition).

    A corpus of short documents has about as many documents as chunks, so this table is as large as the
    chunks' and is never held whole when the chunks' vectors stay on disk.
    """

    chunks: Partitioned
    images: pl.DataFrame  # collapsed image vectors: image_id, vector
    occurrences: pl.DataFrame  # image_occurrences: image_id, doc_id, partition, ...

    def partitions(self) -> list[str]:
        have = self.chunks.partitions()
        extra = set(self.occurrences["partition"].unique().to_list()) - set(have)
        return [*have, *sorted(extra)]

    def read(self, partition: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        occurrences = self.occurrences.filter(pl.col("partition") == partition)
        out = document_vectors(self.chunks.read(partition, ["doc_id", "partition", "vector"]), self.images, occurrences)
        return out.select(columns) if columns else out

    def select(self, columns: Sequence[str]) -> pl.DataFrame:
        if "vector" in columns:
            return pl.concat([self.read(p, columns) for p in self.partitions()], how="vertical")
        keys = pl.concat(
            [
                self.chunks.select(["doc_id", "partition"]),
                self.occurrences.join(self.images.select("image_id"), on="image_id").select("doc_id", "partition"),
            ],
            how="vertical",
        )
        return keys.unique("doc_id", keep="first", maintain_order=True).sort("doc_id").select(columns)

    def batches(self, rows: int) -> Iterator[pl.DataFrame]:
        if isinstance(self.chunks, FramePartitions):  # in memory already: one pass, not one filter per partition
            return regroup(iter([document_vectors(self.chunks.df, self.images, self.occurrences)]), rows)
        return regroup((self.read(p) for p in self.partitions()), rows)

    def frame(self) -> pl.DataFrame:
        return document_vectors(self.chunks.frame(), self.images, self.occurrences)

    @property
    def height(self) -> int:
        return self.select(["doc_id"]).height


def expected_unit_ids(graph_nodes: pl.DataFrame, payload: dict[str, pl.DataFrame]) -> dict[str, list[str]]:
    """What each index table must hold one vector for: the graph's chunk and image nodes, the payload's other units."""
    out = {
        "chunks": graph_nodes.filter(pl.col("kind") == "chunk")["key"].to_list(),
        "images": graph_nodes.filter(pl.col("kind") == "image")["key"].to_list(),
    }
    for name in ("sentences", "objects", "document_entities", "relations"):
        if name in payload:
            out[name] = payload[name][ID_COLUMN[name]].to_list()
    return out


def check_units(units: Units, graph_nodes: pl.DataFrame) -> CheckResult:
    """One vector per unit in every table of ``units`` (``validation.check_index_units``), against the graph's
    chunk and image nodes and the payload's other units: what the publish and the ``vectors_match_nodes``
    asset check both require."""
    expected = expected_unit_ids(graph_nodes, units.payload)
    return check_index_units(
        {t: partitioned(df).select([ID_COLUMN[t]])[ID_COLUMN[t]].to_list() for t, df in units.vectors.items()},
        {t: expected.get(t, []) for t in units.vectors},
    )


# -- what retrieval_index runs before publishing --------------------------------------------------


def validate_publish_inputs(
    tables: Mapping[str, pl.DataFrame | Partitioned], graph: Graph | None = None
) -> list[CheckResult]:
    """Every check over the inputs of an index version; returns the failures (empty when all pass).

    ``tables`` holds all-partition frames (tables and ``*_vectors``); they are split by partition so a
    failure names the partition it is in.
    """
    results: list[CheckResult] = []
    for partition, parts in split_partitions(tables):
        results += check_partition_tables(parts, partition)
    if graph is not None:
        need = ("chunks", "entity_mentions", "relations", "images", "objects")
        results.append(check_graph_structure(graph))
        if all(n in tables for n in need):
            results.append(check_graph_counts(graph, *(tables[n] for n in need)))
        if all(n in tables for n in ("chunk_vectors", "image_vectors", "images", "objects")):
            results.append(check_vectors_match_nodes(tables, graph))
    return [r for r in results if not r.passed]


def check_vectors_match_nodes(tables: Mapping[str, pl.DataFrame | Partitioned], graph: Graph) -> CheckResult:
    """After shared units are collapsed as the publish does it, one vector row per graph node (chunks, images)
    and per unit (sentences, objects, document entities, relations) in every index table.

    ``tables``: all-partition ``*_vectors`` and the unit tables (sentences, images, objects, ...).
    """
    present = {t: tables[a] for t, a in VECTOR_ASSET.items() if a in tables}
    sources = ("images", "objects", "sentences", "document_entities", "relations")
    return check_units(collapse(present, {n: tables[n] for n in sources if n in tables}), graph.nodes)
