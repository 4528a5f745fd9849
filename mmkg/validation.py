"""Data checks over the pipeline's tables, matrices, graph and index, free of Dagster.

Each check is a pure function over polars frames / arrays that returns a ``CheckResult``: whether it
passed, a one-line description of what is wrong (or what was verified) and a few counts. The Dagster
asset checks (``assets/checks.py``) are thin wrappers around these, ``retrieval_index`` runs them again
over everything it is about to publish, and downstream jobs can call them on tables they read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp

from mmkg import schemas
from mmkg.graph import NODE_KINDS, Graph
from mmkg.incidence import Incidence
from mmkg.partitioned import Partitioned

#: Columns that identify a row of each table (unique, never null) within one partition.
PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "transcripts": ("source_path",),
    "documents": ("doc_id",),
    "images": ("doc_id", "occurrence"),
    "rejected_files": (),
    "page_text": ("doc_id", "page"),
    "sections": ("section_id",),
    "parts": ("part_id",),
    "chunks": ("chunk_id",),
    "sentences": ("sentence_id",),
    "entity_mentions": ("mention_id",),
    "relations": ("relation_id",),
    "entities": ("entity_key",),
    "document_entities": ("unit_id",),
    "entity_catalog": ("entity_key",),
    "image_text": ("image_id", "line_index"),
    "objects": ("object_id",),
    "grounding_failures": ("image_id", "backend"),
    "multimodal_nodes": ("entity_key",),
    "cross_modal_links": ("link_id",),
}

#: Embedding tables: vector table -> (id column, source table).
VECTOR_TABLES: dict[str, tuple[str, str]] = {
    "chunk_vectors": ("chunk_id", "chunks"),
    "sentence_vectors": ("sentence_id", "sentences"),
    "image_vectors": ("image_id", "images"),
    "object_vectors": ("object_id", "objects"),
    "document_entity_vectors": ("unit_id", "document_entities"),
    "relation_vectors": ("relation_id", "relations"),
}

#: Foreign keys checked between tables of one partition: (child, column, parent, parent column, nulls allowed).
REFERENCES: tuple[tuple[str, str, str, str, bool], ...] = (
    ("images", "doc_id", "documents", "doc_id", False),
    ("chunks", "doc_id", "documents", "doc_id", False),
    ("page_text", "doc_id", "documents", "doc_id", False),
    ("sections", "doc_id", "documents", "doc_id", False),
    ("sections", "parent_id", "sections", "section_id", True),  # the top headings have no parent
    ("parts", "doc_id", "documents", "doc_id", False),
    ("parts", "chunk_id", "chunks", "chunk_id", False),
    ("sentences", "chunk_id", "chunks", "chunk_id", False),
    ("entity_mentions", "chunk_id", "chunks", "chunk_id", False),
    ("entity_mentions", "sentence_id", "sentences", "sentence_id", True),  # title mentions have no sentence
    ("relations", "sentence_id", "sentences", "sentence_id", False),
    ("objects", "image_id", "images", "image_id", False),
    ("objects", "chunk_id", "chunks", "chunk_id", True),  # unattached images have no chunk
    ("document_entities", "doc_id", "documents", "doc_id", False),
    ("cross_modal_links", "image_id", "images", "image_id", False),
    ("cross_modal_links", "chunk_id", "chunks", "chunk_id", False),
    ("cross_modal_links", "entity_key", "entities", "entity_key", True),  # unaligned and new ones link nowhere
)

UNIT_NORM_TOLERANCE = 1e-3
SAMPLES = 5  # offending ids quoted in a description


class ValidationError(ValueError):
    """Inputs failed validation; the message names every failing check and partition."""


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: ``description`` says what is wrong when ``passed`` is false."""

    check: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)
    partition: str | None = None

    def __bool__(self) -> bool:
        return self.passed

    def label(self) -> str:
        return f"{self.check} [{self.partition}]" if self.partition else self.check


def _result(check: str, problems: list[str], ok: str, partition: str | None = None, **metadata: Any) -> CheckResult:
    passed = not problems
    return CheckResult(check, passed, ok if passed else "; ".join(problems), metadata, partition)


def _sample(values: Iterable[Any]) -> str:
    vals = list(values)
    head = ", ".join(repr(v) for v in vals[:SAMPLES])
    return head + (f" … (+{len(vals) - SAMPLES})" if len(vals) > SAMPLES else "")


# -- tables ---------------------------------------------------------------------------------------


def check_schema(df: pl.DataFrame, table: str, partition: str | None = None) -> CheckResult:
    """Exact columns and dtypes of the declared schema, a unique non-null key, the partition column."""
    schema = schemas.TABLES[table]
    problems: list[str] = []
    missing = [c for c in schema if c not in df.columns]
    extra = [c for c in df.columns if c not in schema]
    if missing:
        problems.append(f"{table}: missing column(s) {missing}")
    if extra:
        problems.append(f"{table}: undeclared column(s) {extra}")
    wrong = {c: f"{df.schema[c]} (declared {t})" for c, t in schema.items() if c in df.columns and df.schema[c] != t}
    if wrong:
        problems.append(f"{table}: wrong dtype(s) {wrong}")
    key = [c for c in PRIMARY_KEYS.get(table, ()) if c in df.columns]
    if key and not missing:
        nulls = df.filter(pl.any_horizontal(pl.col(key).is_null()))
        if nulls.height:
            problems.append(f"{table}: {nulls.height} row(s) with a null key {key}")
        dup = df.group_by(key).len().filter(pl.col("len") > 1)
        if dup.height:
            problems.append(f"{table}: {dup.height} duplicated key(s) {key}, e.g. {_sample(dup.select(key).rows())}")
    if partition is not None and "partition" in df.columns and df.height:
        other = df.filter(pl.col("partition").ne_missing(partition))["partition"].unique().to_list()
        if other:
            problems.append(f"{table}: rows of partition(s) {_sample(other)} in the file of partition {partition!r}")
    return _result(
        "schema", problems, f"{table}: {df.height:,} rows match the declared schema", partition, rows=df.height
    )


def check_cross_modal_links(df: pl.DataFrame, partition: str | None = None) -> CheckResult:
    """Aligned links name a text entity and unaligned/new ones do not; scores are cosines; methods and kinds known."""
    from mmkg.vision.cmel import ALIGNED, KINDS, METHODS

    problems: list[str] = []
    aligned = pl.col("method").is_in(list(ALIGNED))
    bad = df.filter(aligned & pl.col("entity_key").is_null())
    if bad.height:
        problems.append(f"{bad.height} aligned link(s) without an entity_key, e.g. {_sample(bad['link_id'])}")
    bad = df.filter(~aligned & pl.col("entity_key").is_not_null())
    if bad.height:
        problems.append(f"{bad.height} unaligned or new link(s) naming an entity, e.g. {_sample(bad['link_id'])}")
    bad = df.filter(~pl.col("score").is_between(-1.0001, 1.0001) | pl.col("score").is_nan())
    if bad.height:
        problems.append(f"{bad.height} score(s) outside [-1, 1], e.g. {_sample(bad['link_id'])}")
    for column, known in (("method", METHODS), ("kind", KINDS)):
        other = sorted(set(df[column].unique().to_list()) - set(known))
        if other:
            problems.append(f"unknown {column}(s) {other}; known: {list(known)}")
    linked = df.filter(aligned).height
    return _result("cross_modal_links", problems, f"{linked:,} of {df.height:,} image-side entities linked "
                   "consistently", partition, rows=df.height, linked=linked)  # fmt: skip


def check_sections(df: pl.DataFrame, chunks: pl.DataFrame, partition: str | None = None) -> CheckResult:
    """Headings nest: a parent is a heading of the same document at a lower level, ordinals run 0.. per document,
    pages are 1-based, sources are known, and every chunk a heading lists is a chunk of its document."""
    problems: list[str] = []
    parents = df.select(pl.col("section_id").alias("parent_id"), pl.col("doc_id").alias("parent_doc"),
                        pl.col("level").alias("parent_level"))  # fmt: skip
    joined = df.drop_nulls("parent_id").join(parents, on="parent_id", how="left")
    bad = joined.filter((pl.col("parent_doc") != pl.col("doc_id")) | (pl.col("parent_level") >= pl.col("level")))
    if bad.height:
        problems.append(f"{bad.height} heading(s) under a parent of another document or of no lower level, "
                        f"e.g. {_sample(bad['section_id'])}")  # fmt: skip
    runs = df.group_by("doc_id").agg(pl.col("ordinal").sort().alias("o"), pl.len().alias("n"))
    bad = runs.filter(pl.col("o") != pl.int_ranges(0, pl.col("n")))
    if bad.height:
        problems.append(f"{bad.height} document(s) whose heading ordinals do not run 0..n-1: {_sample(bad['doc_id'])}")
    bad = df.filter((pl.col("page") < 1) | (pl.col("level") < 1) | ~pl.col("source").is_in(["outline", "text"]))
    if bad.height:
        problems.append(f"{bad.height} heading(s) with a page or level below 1 or an unknown source, "
                        f"e.g. {_sample(bad['section_id'])}")  # fmt: skip
    listed = df.select("doc_id", pl.col("chunk_ids").alias("chunk_id")).explode("chunk_id").drop_nulls()
    known = chunks.select("chunk_id", pl.col("doc_id").alias("chunk_doc"))
    orphans = listed.join(known, on="chunk_id", how="left").filter(
        pl.col("chunk_doc").is_null() | (pl.col("chunk_doc") != pl.col("doc_id"))
    )
    if orphans.height:
        problems.append(f"{orphans.height} listed chunk(s) missing from chunks or of another document, e.g. "
                        f"{_sample(orphans['chunk_id'])}")  # fmt: skip
    docs = df["doc_id"].n_unique()
    return _result("sections", problems, f"{df.height:,} headings of {docs:,} document(s) nest, "
                   f"{listed.height:,} chunks placed under them", partition, headings=df.height, documents=docs,
                   placed_chunks=listed.height)  # fmt: skip


def check_references(
    child: pl.DataFrame,
    parent: pl.DataFrame,
    child_table: str,
    column: str,
    parent_table: str,
    parent_column: str | None = None,
    nullable: bool = False,
    partition: str | None = None,
) -> CheckResult:
    """Every ``child.column`` names an existing ``parent.parent_column`` (nulls only where allowed)."""
    parent_column = parent_column or column
    name = f"{child_table}.{column} -> {parent_table}.{parent_column}"
    problems: list[str] = []
    for frame, col, tbl in ((child, column, child_table), (parent, parent_column, parent_table)):
        if col not in frame.columns:
            return _result("references", [f"{tbl} has no column {col!r}"], "", partition)
    refs = child.select(column)
    nulls = refs[column].null_count()
    if nulls and not nullable:
        problems.append(f"{name}: {nulls} null reference(s)")
    known = parent.select(pl.col(parent_column).alias(column)).unique()
    orphans = refs.drop_nulls().join(known, on=column, how="anti")[column]
    if orphans.len():
        problems.append(
            f"{name}: {orphans.len()} row(s) reference a missing {parent_table} row: {_sample(orphans.unique().sort())}"
        )
    return _result(
        "references",
        problems,
        f"{name}: all {refs.height - nulls:,} references resolve",
        partition,
        orphans=orphans.len(),
        null_references=nulls,
    )


def check_incidence(
    inc: Incidence, name: str, row_table: str, row_ids: Sequence[str], col_ids: Sequence[str], partition: str | None
) -> CheckResult:
    """Rows and columns of M_SMI / M_OMI are exactly the table's ids, in order; entries are 1."""
    problems: list[str] = []
    rows, cols = inc.row_ids.tolist(), inc.col_ids.tolist()
    if inc.shape != (len(rows), len(cols)):
        problems.append(f"{name}: shape {inc.shape} but {len(rows)} row ids and {len(cols)} column ids")
    if rows != list(row_ids):
        extra, gone = set(rows) - set(row_ids), set(row_ids) - set(rows)
        detail = f"{len(extra)} unknown, {len(gone)} missing" if extra or gone else "same ids, different order"
        problems.append(f"{name}: rows are not the {row_table} table's ids ({detail})")
    if cols != list(col_ids):
        extra, gone = set(cols) - set(col_ids), set(col_ids) - set(cols)
        detail = f"{len(extra)} unknown, {len(gone)} missing" if extra or gone else "same ids, different order"
        problems.append(f"{name}: columns are not the multimodal_nodes entity keys ({detail})")
    m = inc.matrix.tocsr()
    if m.nnz and (not np.isfinite(m.data).all() or (m.data != 1).any()):
        problems.append(f"{name}: {int((m.data != 1).sum())} entries are not 1")
    if m.nnz and (m.indices.max() >= m.shape[1] or m.indices.min() < 0):
        problems.append(f"{name}: column index out of range")
    return _result(
        "incidence", problems, f"{name}: {inc.shape[0]} x {inc.shape[1]}, {m.nnz} ones, ids line up", partition,
        nnz=int(m.nnz),
    )  # fmt: skip


def check_vectors(
    vectors: pl.DataFrame,
    table: str,
    expected_ids: Iterable[str] | None = None,
    partition: str | None = None,
    tolerance: float = UNIT_NORM_TOLERANCE,
) -> CheckResult:
    """Embeddings are finite, unit-norm, one per unit of the source table, of one dimension."""
    id_col, source = VECTOR_TABLES[table]
    problems: list[str] = []
    missing = [c for c in (id_col, "partition", "doc_id", "vector") if c not in vectors.columns]
    if missing:
        return _result("vectors", [f"{table}: missing column(s) {missing}"], "", partition)
    dtype = vectors.schema["vector"]
    if not isinstance(dtype, pl.Array) or dtype.inner != pl.Float32:
        return _result("vectors", [f"{table}: vector column is {dtype}, expected Array(Float32, dim)"], "", partition)
    dim = dtype.size
    ids = vectors[id_col]
    if ids.null_count():
        problems.append(f"{table}: {ids.null_count()} null {id_col}")
    if ids.n_unique() != ids.len():
        problems.append(f"{table}: {ids.len() - ids.n_unique()} duplicated {id_col}")
    mat = vectors["vector"].to_numpy().reshape(vectors.height, dim) if vectors.height else np.zeros((0, dim))
    finite = np.isfinite(mat).all(axis=1)
    bad_finite = ids.filter(pl.Series(~finite))
    if bad_finite.len():
        problems.append(f"{table}: {bad_finite.len()} vector(s) with NaN/inf: {_sample(bad_finite)}")
    norms = np.linalg.norm(np.where(np.isfinite(mat), mat, 0.0), axis=1) if mat.size else np.zeros(0)
    off = finite & (np.abs(norms - 1.0) > tolerance)
    if off.any():
        worst = float(np.abs(norms[off] - 1.0).max())
        problems.append(
            f"{table}: {int(off.sum())} vector(s) not unit-norm (worst |norm-1| = {worst:.3g}): "
            f"{_sample(ids.filter(pl.Series(off)))}"
        )
    if expected_ids is not None:
        want = set(expected_ids)
        have = set(ids.drop_nulls().to_list())
        lost, unknown = sorted(want - have), sorted(have - want)
        if lost:
            problems.append(f"{table}: {len(lost)} {source} row(s) have no vector: {_sample(lost)}")
        if unknown:
            problems.append(f"{table}: {len(unknown)} vector(s) for unknown {id_col}: {_sample(unknown)}")
    return _result(
        "vectors",
        problems,
        f"{table}: {vectors.height:,} finite unit-norm vectors of dimension {dim}",
        partition,
        rows=vectors.height,
        dimension=dim,
        max_norm_error=float(np.abs(norms - 1.0).max()) if norms.size else 0.0,
    )


def check_partition_tables(tables: Mapping[str, pl.DataFrame], partition: str) -> list[CheckResult]:
    """Schemas, references and embeddings of one partition's tables (those present in ``tables``)."""
    out = [check_schema(df, name, partition) for name, df in tables.items() if name in schemas.TABLES]
    for child, col, parent, pcol, nullable in REFERENCES:
        if child in tables and parent in tables:
            out.append(check_references(tables[child], tables[parent], child, col, parent, pcol, nullable, partition))
    for name, (id_col, source) in VECTOR_TABLES.items():
        if name in tables:
            expected = tables[source][id_col].unique().to_list() if source in tables else None
            out.append(check_vectors(tables[name], name, expected, partition))
    return out


def split_partitions(
    tables: Mapping[str, pl.DataFrame | Partitioned],
) -> Iterator[tuple[str, dict[str, pl.DataFrame]]]:
    """All-partition tables -> each partition's frames, one partition at a time (in key order).

    A table still on disk (``mmkg.partitioned``) is read a partition at a time: the publish validates
    every partition's vectors without holding them all.
    """
    keys: set[str] = set()
    for df in tables.values():
        if isinstance(df, pl.DataFrame):
            if "partition" in df.columns:
                keys.update(df["partition"].drop_nulls().unique().to_list())
        else:
            keys.update(df.partitions())
    for key in sorted(keys):
        out: dict[str, pl.DataFrame] = {}
        for name, df in tables.items():
            if not isinstance(df, pl.DataFrame):
                out[name] = df.read(key)
            else:
                out[name] = df.filter(pl.col("partition") == key) if "partition" in df.columns else df
        yield key, out


# -- graph ----------------------------------------------------------------------------------------

EDGE_KINDS = ("chunk-image", "chunk-entity", "entity-entity", "entity-image")


def expected_graph_counts(
    chunks: pl.DataFrame,
    mentions: pl.DataFrame,
    relations: pl.DataFrame,
    images: pl.DataFrame,
    objects: pl.DataFrame,
) -> dict[str, int]:
    """Node and edge counts the global graph must have, computed from the partition tables alone.

    Chunk nodes are summed over partitions (chunk ids never repeat across partitions); images and
    entities are shared by content hash / canonical key, so they count once. Edges are distinct
    unordered pairs per kind (MG2-RAG 3.1).
    """
    per_partition = chunks.group_by("partition").agg(pl.col("chunk_id").n_unique())
    entity_keys = mentions.filter(pl.col("relational"))["entity_key"].unique()
    entity_set = pl.DataFrame({"k": entity_keys})
    chunk_image = chunks.select("chunk_id", pl.col("image_ids").alias("image_id")).explode("image_id").drop_nulls()
    chunk_entity = mentions.filter(pl.col("relational")).select("chunk_id", "entity_key")
    semantic = (
        relations.drop_nulls(["subject_key", "object_key"])
        .filter(pl.col("subject_key") != pl.col("object_key"))
        .join(entity_set, left_on="subject_key", right_on="k", how="semi")
        .join(entity_set, left_on="object_key", right_on="k", how="semi")
        .select(
            pl.min_horizontal("subject_key", "object_key").alias("a"),
            pl.max_horizontal("subject_key", "object_key").alias("b"),
        )
    )
    return {
        "chunk_nodes": int(per_partition["chunk_id"].sum() or 0),
        "image_nodes": images["image_id"].n_unique(),
        "entity_nodes": entity_keys.len(),
        "chunk-image_edges": chunk_image.unique().height,
        "chunk-entity_edges": chunk_entity.unique().height,
        "entity-entity_edges": semantic.unique().height,
        "entity-image_edges": objects.select("entity_key", "image_id").unique().height,
    }


def graph_counts(graph: Graph) -> dict[str, int]:
    """Node counts per kind and undirected edge counts per kind pair, read off the graph itself."""
    kinds = graph.nodes["kind"].to_numpy()
    out = {f"{k}_nodes": int((kinds == k).sum()) for k in NODE_KINDS}
    upper = sp.triu(graph.adjacency, k=1).tocoo()
    ok = (upper.row < len(kinds)) & (upper.col < len(kinds))
    a, b = kinds[upper.row[ok]], kinds[upper.col[ok]]
    pair = np.where(a <= b, np.char.add(np.char.add(a.astype(str), "-"), b.astype(str)),
                    np.char.add(np.char.add(b.astype(str), "-"), a.astype(str)))  # fmt: skip
    for kind in EDGE_KINDS:
        out[f"{kind}_edges"] = int((pair == kind).sum())
    return out


def check_graph_counts(
    graph: Graph,
    chunks: pl.DataFrame,
    mentions: pl.DataFrame,
    relations: pl.DataFrame,
    images: pl.DataFrame,
    objects: pl.DataFrame,
) -> CheckResult:
    """Node and edge counts per kind equal what the partition tables add up to; node keys exist there."""
    expected = expected_graph_counts(chunks, mentions, relations, images, objects)
    actual = graph_counts(graph)
    problems = [f"{k}: graph has {actual.get(k, 0):,}, partitions add up to {v:,}" for k, v in expected.items()
                if actual.get(k, 0) != v]  # fmt: skip
    known = {
        "chunk": set(chunks["chunk_id"].to_list()),
        "image": set(images["image_id"].to_list()),
        "entity": set(mentions.filter(pl.col("relational"))["entity_key"].to_list()),
    }
    for kind, keys in known.items():
        unknown = set(graph.nodes.filter(pl.col("kind") == kind)["key"].to_list()) - keys
        if unknown:
            problems.append(f"{len(unknown)} {kind} node(s) not in the partition tables: {_sample(sorted(unknown))}")
    by_partition = (
        graph.nodes.filter(pl.col("kind") == "chunk").group_by("partition").len()
        .join(chunks.group_by("partition").agg(pl.col("chunk_id").n_unique().alias("expected")),
              on="partition", how="full", coalesce=True)
        .fill_null(0).filter(pl.col("len") != pl.col("expected"))
    )  # fmt: skip
    for part, have, want in by_partition.select("partition", "len", "expected").iter_rows():
        problems.append(f"partition {part}: {have} chunk nodes, {want} chunks")
    total = sum(v for k, v in expected.items() if k.endswith("_edges"))
    return _result(
        "graph_counts",
        problems,
        f"{graph.n:,} nodes and {total:,} edges, as the {chunks['partition'].n_unique()} partitions add up to",
        None,
        **{f"expected_{k}": v for k, v in expected.items()},
        **{f"graph_{k}": v for k, v in actual.items()},
    )


def check_graph_structure(graph: Graph) -> CheckResult:
    """Well-formed graph: node table 0..n-1, every edge between existing nodes, symmetric, no loops."""
    problems: list[str] = []
    n = graph.n
    nodes = graph.nodes
    if nodes["node"].to_list() != list(range(n)):
        problems.append("node table is not numbered 0..n-1 in order")
    bad_kind = set(nodes["kind"].unique().to_list()) - set(NODE_KINDS)
    if bad_kind:
        problems.append(f"unknown node kind(s) {sorted(bad_kind)}")
    if nodes["key"].null_count():
        problems.append(f"{nodes['key'].null_count()} node(s) without a key")
    dup = nodes.group_by("kind", "key").len().filter(pl.col("len") > 1)
    if dup.height:
        problems.append(f"{dup.height} duplicated node key(s): {_sample(dup['key'])}")
    a = graph.adjacency.tocsr()
    if a.shape != (n, n):
        problems.append(f"adjacency is {a.shape[0]} x {a.shape[1]} for {n} nodes")
    if a.nnz:
        hi = int(a.indices.max())
        if hi >= n or int(a.indices.min()) < 0 or len(a.indptr) != a.shape[0] + 1:
            problems.append(f"edge to a missing node (index {hi}, only {n} nodes)")
        else:
            if not np.isfinite(a.data).all() or (a.data <= 0).any():
                problems.append(f"{int((~np.isfinite(a.data) | (a.data <= 0)).sum())} edge weight(s) not finite > 0")
            loops = int(np.count_nonzero(a.diagonal()))
            if loops:
                problems.append(f"{loops} self-loop(s)")
            asym = abs(a - a.T)
            if asym.nnz and asym.max() > 0:
                problems.append(f"adjacency is not symmetric ({int((asym > 0).sum())} one-way entries)")
    degree = np.diff(a.indptr)
    return _result(
        "graph_structure", problems, f"{n:,} nodes, {a.nnz // 2:,} undirected edges, symmetric, no dangling edge",
        isolated_nodes=int((degree == 0).sum()) if len(degree) == n else -1,
    )  # fmt: skip


# -- index ----------------------------------------------------------------------------------------


def smoke_probes(chunks: pl.DataFrame, per_partition: int = 1) -> pl.DataFrame:
    """The longest chunk of each partition (ties: smallest id): a query made of its text must find it."""
    return (
        chunks.with_columns(pl.col("text").str.len_chars().alias("_len"))
        .sort(["partition", "_len", "chunk_id"], descending=[False, True, False])
        .group_by("partition", maintain_order=True)
        .head(per_partition)
        .select("chunk_id", "partition", "text")
    )


def smoke_partitions(
    partitions: Collection[str], changed: Collection[str] | None, version: str, unchanged: int = 3
) -> list[str]:
    """The partitions a smoke retrieval probes: every one when ``changed`` is None (no earlier version to
    compare with), else those whose content changed plus up to ``unchanged`` others.

    The others are a different few each version (ordered by a hash of version and partition), so over
    successive publishes every partition is probed again, while re-indexing one record queries a
    handful of partitions instead of all of them (20 queries were 2.2 s of a 15 s 2Wiki re-index).
    """
    if changed is None:
        return sorted(partitions)
    rest = sorted(
        (p for p in partitions if p not in changed),
        key=lambda p: hashlib.blake2b(f"{version}/{p}".encode(), digest_size=8).digest(),
    )
    return sorted([p for p in partitions if p in changed] + rest[:unchanged])


def found_rank(chunk_id: str, text: str, chunks: Sequence[Any]) -> int | None:
    """Rank of a probe chunk among retrieved ones, or of the first chunk with its very text (None: neither).

    A corpus that holds the same passage more than k times (a licence, a boilerplate page, a file copied
    into several partitions) gives those copies equal scores; any of them answers the probe.
    """
    for rank, c in enumerate(chunks, start=1):
        if c.chunk_id == chunk_id or c.text == text:
            return rank
    return None


def check_index_units(vector_ids: Mapping[str, Sequence[str]], unit_ids: Mapping[str, Sequence[str]]) -> CheckResult:
    """Each index table holds exactly one vector per unit: per table, the vector rows' ids are the units' ids
    (graph nodes for chunks and images, payload rows for sentences and objects), none twice, none missing.

    A picture shown by two partitions is one image node but was embedded by both: unless the publish
    collapses the copies (``mmkg.index.units``), the table holds more rows than the graph has nodes and
    the version cannot be aligned. This check names the duplicated ids.
    """
    problems: list[str] = []
    rows: dict[str, int] = {}
    for name, ids in vector_ids.items():
        have = pl.Series("id", list(ids), dtype=pl.String)
        rows[name] = have.len()
        counts = have.value_counts()
        dup = counts.filter(pl.col("count") > 1)["id"].sort().to_list()
        if dup:
            problems.append(f"{name}: {len(dup)} id(s) with more than one vector row: {_sample(dup)}")
        want_list = list(unit_ids.get(name, []))
        want = set(want_list)
        if len(want) != len(want_list):
            problems.append(f"{name}: {len(want_list) - len(want)} unit id(s) listed twice")
        got = set(have.drop_nulls().to_list())
        if lost := sorted(want - got):
            problems.append(f"{name}: {len(lost)} unit(s) without a vector: {_sample(lost)}")
        if extra := sorted(got - want):
            problems.append(f"{name}: {len(extra)} vector row(s) for no unit: {_sample(extra)}")
    return _result(
        "index_units",
        problems,
        "one vector row per unit in every table (" + ", ".join(f"{n} {r:,}" for n, r in rows.items()) + ")",
        None,
        **{f"{n}_rows": r for n, r in rows.items()},
    )


def raise_for_failures(failures: Sequence[CheckResult], what: str) -> None:
    """A ``ValidationError`` naming each failing check and partition, when there is any."""
    if failures:
        lines = "\n".join(f"- {f.label()}: {f.description}" for f in failures)
        raise ValidationError(f"{what}: {len(failures)} check(s) failed\n{lines}")
