"""Publishing a retrieval index version: the only writer of the LanceDB tables and the manifest.

A version folder is written in full, the manifest last; the version is opened read-only, checked and queried
(with the smoke query its caller passes: the index runs no retrieval); only then does ``CURRENT`` move to it
(atomic rename): a reader never sees half an index, and ``CURRENT`` never points at a version that does not
open. LanceDB tables start from the table versions the current manifest pins and are updated per partition
(chunks, sentences: delete that partition's rows, add its new ones) or per unit id (pictures and objects,
which several partitions can share). Every version pins the table versions it was published with, so a reader
holding an older version keeps reading exactly what it opened.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lancedb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.index import BTree

from mmkg.embedding import chunk_texts
from mmkg.entities import merge_mentions
from mmkg.faults import armed_points, failpoint
from mmkg.graph import Graph
from mmkg.incidence import build_incidence
from mmkg.index.history import compact, settle
from mmkg.index.integrity import file_sums, version_files
from mmkg.index.lock import publish_lock
from mmkg.index.manifest import (
    CURRENT,
    LEXICAL_DIR,
    MANIFEST,
    EncoderSpec,
    Manifest,
    current_version,
    set_current,
)
from mmkg.index.units import (
    ID_COLUMN,
    IMAGE_OCCURRENCE_COLUMNS,
    SHARED,
    DocumentVectors,
    check_units,
    collapse,
)
from mmkg.lexical import LexicalIndex
from mmkg.partitioned import Partitioned, frame, partitioned, regroup

if TYPE_CHECKING:
    from mmkg.index.reader import Index

#: a smoke query over a freshly written version, opened read-only without an encoder: returns what is wrong
#: (empty: fine). The caller passes it (``mmkg.retrieval.smoke.own_vector_probes``): the index runs no query.
Probe = Callable[["Index"], list[str]]

ANN_MIN_ROWS = 100_000  # below this, exact search over vectors in memory is fast and exact
ANN_INDEX_TYPE = "IVF_PQ"
#: what readers filter an ANN-searched table by: rows by id (a second hop's pages), rows of some documents
KEY_COLUMNS = ("id", "doc_id")
_SAFE_PARTITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
_HEX_ID = re.compile(r"^[0-9a-f]{8,64}$")


class PublishError(RuntimeError):
    """A new version was written but failed its check; ``CURRENT`` was not moved."""


@dataclass
class PublishResult:
    version: str
    manifest: Manifest
    changed: list[str]
    removed: list[str]
    reused: bool  # nothing changed: the current version was kept


def fingerprint(
    vectors: Mapping[str, pl.DataFrame | Partitioned], graph: Graph, links: pl.DataFrame | None = None
) -> tuple[dict[str, str], str]:
    """Per-partition digests of the published ids (ids are content hashes) and one of the graph.

    ``links`` (the cross-modal entity links) count by link id and linked entity: an alignment that
    changes without any vector changing still publishes a new version.
    """
    per: dict[str, hashlib._Hash] = {}
    tables = {
        name: partitioned(vectors[name]).select(["partition", ID_COLUMN[name]]).rename({ID_COLUMN[name]: "_id"})
        for name in vectors
    }
    if links is not None and links.height:
        tables["cross_modal_links"] = links.select(
            "partition", pl.concat_str(["link_id", pl.col("entity_key").fill_null("")], separator=":").alias("_id")
        )
    for name in sorted(tables):
        df = tables[name].sort("partition", "_id")
        for part, ids in df.group_by("partition", maintain_order=True).agg(pl.col("_id")).iter_rows():
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
    """LanceDB rows: id, owner partition and document, vector, and a digest of all three (what changed)."""
    out = df.select(
        pl.col(ID_COLUMN[name]).alias("id"),
        "partition",
        "doc_id",
        pl.col("vector").cast(pl.Array(pl.Float32, dim)),
    )
    vecs = out["vector"].to_numpy().reshape(out.height, dim) if out.height else np.zeros((0, dim), np.float32)
    digests = [
        hashlib.blake2b(f"{i}\x1f{p}\x1f{d}\x1f".encode() + v.tobytes(), digest_size=12).hexdigest()
        for i, p, d, v in zip(out["id"], out["partition"], out["doc_id"], vecs, strict=True)
    ]
    rows = out.with_columns(pl.Series("digest", digests, dtype=pl.String)).to_arrow()
    # polars writes strings as LargeUtf8, on which Lance builds no B-tree (``_key_indexes``): plain Utf8
    return rows.cast(pa.schema([pa.field(f.name, pa.string()) if pa.types.is_large_string(f.type) else f
                                for f in rows.schema]))  # fmt: skip


def _key_indexes(tbl: Any) -> None:
    """B-tree indexes on the columns readers filter an ANN-searched table by (``id IN``, ``doc_id IN``).

    Without them each such filter scans the whole column: on a 150,000-row table, 40 rows read by id took 19.0 ms
    (p50) and a search within three documents 17.8 ms; with them 8.6 and 9.3 ms (``benchmarks/key_indexes.py``).
    Lance builds a B-tree on Utf8 only, so a key column that an older mmkg wrote as LargeUtf8 is altered to Utf8
    first (with the two B-trees, 0.15 s on that table).
    """
    large = [{"path": c, "data_type": pa.string()} for c in KEY_COLUMNS
             if pa.types.is_large_string(tbl.schema.field(c).type)]  # fmt: skip
    if large:
        tbl.alter_columns(*large)
    for column in KEY_COLUMNS:
        tbl.create_index(column, config=BTree(), replace=True)


WRITE_ROWS = 100_000  # rows converted and written per LanceDB call: one batch's copy in memory, not the table's


def _empty_rows(name: str, dim: int) -> pl.DataFrame:
    return pl.DataFrame(
        schema={ID_COLUMN[name]: pl.String, "partition": pl.String, "doc_id": pl.String,
                "vector": pl.Array(pl.Float32, dim)}
    )  # fmt: skip


def _create(db: Any, name: str, table: pl.DataFrame | Partitioned, dim: int) -> tuple[Any, int]:
    """A LanceDB table holding exactly ``table``'s rows, read and written ``WRITE_ROWS`` at a time; and its rows.

    Only one batch is converted (and, for a table on disk, read) at a time: the vectors of a large corpus
    never sit in memory whole.
    """
    tbl, n = None, 0
    for batch in partitioned(table).batches(WRITE_ROWS):
        rows = _arrow(batch, name, dim)
        if tbl is None:
            tbl = db.create_table(name, rows, mode="overwrite")
        else:
            tbl.add(rows)
        n += batch.height
    if tbl is None:
        tbl = db.create_table(name, _arrow(_empty_rows(name, dim), name, dim), mode="overwrite")
    return tbl, n


def _add(tbl: Any, name: str, table: pl.DataFrame | Partitioned, partitions: list[str], dim: int) -> int:
    """Append the rows of these partitions, ``WRITE_ROWS`` at a time; returns how many."""
    source = partitioned(table)
    have = set(source.partitions())
    n = 0
    for batch in regroup((source.read(p) for p in partitions if p in have), WRITE_ROWS):
        tbl.add(_arrow(batch, name, dim))
        n += batch.height
    return n


def _in_list(values: list[str]) -> str:
    for v in values:
        if not _SAFE_PARTITION.match(v):
            raise ValueError(f"partition key {v!r} is not a safe identifier")
    return ", ".join("'" + v + "'" for v in values)


def _id_list(values: list[str]) -> str:
    for v in values:
        if not _HEX_ID.match(v):
            raise ValueError(f"unit id {v!r} is not a content hash")
    return ", ".join("'" + v + "'" for v in values)


def _scan(tbl: Any, columns: list[str]) -> pa.Table:
    """Every row of a table version, these columns only."""
    return tbl.search().select(columns).limit(max(tbl.count_rows(), 1)).to_arrow()


def _sync_by_id(tbl: Any, rows: pa.Table, batch: int = 2_000) -> None:
    """Make a shared-unit table hold exactly ``rows``: delete ids that went or changed, add the new rows.

    Shared units (a picture in several partitions) have no single partition to delete by, so the
    table is compared with the wanted rows by id and digest; these tables are small (pictures and
    grounded objects, not sentences), and ids are validated content hashes before they reach a predicate.
    """
    have = _scan(tbl, ["id", "digest"])
    have_digest = dict(zip(have["id"].to_pylist(), have["digest"].to_pylist(), strict=True))
    want_digest = dict(zip(rows["id"].to_pylist(), rows["digest"].to_pylist(), strict=True))
    stale = sorted(i for i, d in have_digest.items() if want_digest.get(i) != d)
    fresh = [i for i, d in want_digest.items() if have_digest.get(i) != d]
    for start in range(0, len(stale), batch):
        tbl.delete(f"id IN ({_id_list(stale[start : start + batch])})")
    if fresh:
        keep = pa.array(fresh, type=pa.string())
        tbl.add(rows.filter(pc.is_in(rows["id"], value_set=keep)))


def _digests(tbl: Any) -> pa.ChunkedArray:
    rows = _scan(tbl, ["digest"])["digest"]
    return rows.take(pc.sort_indices(rows))


def _same_rows(db: Any, name: str, pinned: int) -> bool:
    """Whether the table's latest version holds exactly the rows of the pinned one (digests cover id and vector).

    True after retention compacted the table (``mmkg.index.history``): the publish keeps the compacted
    version instead of restoring the pinned one, so that work is not thrown away. False after a killed
    publish changed rows: the publish restores the pinned version.
    """
    latest = db.open_table(name)
    old = db.open_table(name)
    old.checkout(pinned)
    if latest.count_rows() != old.count_rows():
        return False
    return _digests(latest).equals(_digests(old))


OBJECT_PAYLOAD = (
    "object_id", "image_id", "chunk_id", "doc_id", "partition", "entity_key", "entity_name", "backend", "label",
    "score", "x0", "y0", "x1", "y1", "crop_path",
)  # fmt: skip


RELATION_PAYLOAD = (
    "relation_id", "partition", "doc_id", "chunk_id", "sentence_id", "subject", "subject_key", "predicate", "object",
    "object_key", "negated",
)  # fmt: skip


def payload_tables(
    documents: pl.DataFrame,
    chunks: pl.DataFrame,
    sentences: pl.DataFrame,
    images: pl.DataFrame,
    objects: pl.DataFrame,
    document_entities: pl.DataFrame | None = None,
    relations: pl.DataFrame | None = None,
    cross_modal_links: pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame]:
    """What results quote from, out of the partitions' tables (all partitions concatenated).

    Images and objects keep one row per occurrence here; ``publish_index`` collapses them to one unit per
    content id and keeps the occurrences apart (``mmkg.index.units``). Entities per document and relations
    are what mKG-RAG and R2AG select and cite; cross-modal links are the typed image–entity edges MMGraphRAG
    traverses (kept beside the PPR graph, which they do not change).
    """
    # the file's size lets the server's player refuse a recording that changed since (mmkg/api/media.py)
    extra = [c for c in ("duration_s", "n_bytes", "language") if c in documents.columns]
    docs = documents.select("doc_id", "partition", "source_path", "title", "kind", *extra)
    image_cols = [c for c in (*IMAGE_OCCURRENCE_COLUMNS, "blob_path", "width", "height") if c in images.columns]
    return {
        "documents": docs,
        "chunks": chunks.join(docs.select("doc_id", "title", "source_path"), on="doc_id", how="left").select(
            "chunk_id",
            "doc_id",
            "partition",
            "title",
            "source_path",
            "page",
            "chunk_index",
            "text",
            "image_ids",
            *(c for c in ("t_start", "t_end") if c in chunks.columns),
        ),
        "sentences": sentences.select("sentence_id", "chunk_id", "doc_id", "partition", "text"),
        "images": images.select(*image_cols, *(["phash"] if "phash" in images.columns else [])),
        "objects": objects.select(OBJECT_PAYLOAD),
        **({"document_entities": document_entities} if document_entities is not None else {}),
        **({"relations": relations.select(RELATION_PAYLOAD)} if relations is not None else {}),
        **({"cross_modal_links": cross_modal_links} if cross_modal_links is not None else {}),
    }


def publish_index(
    root: Path,
    encoder: EncoderSpec,
    graph: Graph,
    vectors: Mapping[str, pl.DataFrame | Partitioned],
    payload: dict[str, pl.DataFrame],
    mentions: pl.DataFrame,
    ann_min_rows: int | None = None,
    ann_index_type: str | None = None,
    wait: bool = True,
    lock_timeout: float | None = None,
    log: Callable[[str], None] | None = None,
    probe: Probe | None = None,
) -> PublishResult:
    """Publish under the index root's lock (one publisher at a time), after removing what dead publishes left.

    ``wait=False`` fails at once with ``PublishLocked`` when another publish holds the lock; otherwise
    this waits (up to ``lock_timeout`` seconds), saying once what it waits for through ``log``.
    ``probe``: the smoke query the new version must pass before ``CURRENT`` moves (``verify_version``).
    """
    root = Path(root)
    armed_points()  # a misspelt MMKG_FAILPOINTS is an error before anything is touched
    with publish_lock(root, wait=wait, timeout=lock_timeout, on_wait=log):
        removed = remove_leftovers(root)
        if removed and log is not None:
            log(f"removed what an interrupted publish left: {', '.join(removed)}")
        failpoint("publish.locked")
        result = _publish(root, encoder, graph, vectors, payload, mentions, ann_min_rows, ann_index_type, probe)
        if not result.reused:
            failpoint("publish.current.moved")
        return result


def remove_leftovers(root: Path) -> list[str]:
    """Version folders without a manifest and temporary files of dead publishes (call only under the lock).

    Also settles a LanceDB compaction or prune that died before logging the files it removed
    (``mmkg.index.history``), so those files are not mistaken for damage.
    """
    out = []
    versions = root / "versions"
    if versions.exists():
        for p in sorted(versions.iterdir()):
            if p.is_dir() and not (p / MANIFEST).exists():
                shutil.rmtree(p)
                out.append(f"versions/{p.name}")
    if root.exists():
        for p in [*sorted(root.glob(f".{CURRENT}-*")), *root.glob(".lance-pruning.json.tmp")]:
            p.unlink(missing_ok=True)
            out.append(p.name)
        if files := settle(root)[0]:  # a compaction or prune died before logging what LanceDB removed
            out.append(f"the log of {files} files LanceDB pruned")
    return out


def _publish(
    root: Path,
    encoder: EncoderSpec,
    graph: Graph,
    vectors: Mapping[str, pl.DataFrame | Partitioned],
    payload: dict[str, pl.DataFrame],
    mentions: pl.DataFrame,
    ann_min_rows: int | None = None,
    ann_index_type: str | None = None,
    probe: Probe | None = None,
) -> PublishResult:
    """Publish a new version from every partition's vectors and tables; reuse the current one if unchanged.

    ``vectors[g]`` has the id column of granularity g, ``partition``, ``doc_id`` and ``vector``, as a frame
    or as the partitions' files (``mmkg.partitioned``), which are then read a batch at a time;
    ``payload`` holds the document, chunk, sentence, image and object tables that results quote
    from. Pictures and objects shown by several documents or partitions may come once per
    occurrence: they are published as one unit per id (``mmkg.index.units``).

    Steps: collapse shared units and check one vector per unit (nothing is touched if that fails);
    bring each LanceDB table back to the version the current manifest pins (whatever a killed publish
    left is discarded) and apply this publish's changes as new table versions; write the version
    folder, the manifest last; open the new version read-only, check its counts and run ``probe`` on it; only
    then move ``CURRENT``.
    """
    from mmkg.validation import ValidationError

    ann_min_rows = ANN_MIN_ROWS if ann_min_rows is None else ann_min_rows
    ann_index_type = ann_index_type or ANN_INDEX_TYPE
    units = collapse(vectors, payload)
    units_ok = check_units(units, graph.nodes)
    if not units_ok:
        raise ValidationError(f"refusing to publish to {root}: {units_ok.description}")
    if "image_occurrences" in units.payload:
        units.vectors["documents"] = DocumentVectors(
            partitioned(units.vectors["chunks"]), frame(units.vectors["images"]), units.payload["image_occurrences"]
        )
    root.mkdir(parents=True, exist_ok=True)
    parts, graph_fp = fingerprint(vectors, graph, payload.get("cross_modal_links"))
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
    heights: dict[str, int] = {}
    ann: list[str] = []
    tables = [t for t in ID_COLUMN if t in units.vectors]
    for name in tables:
        # Rows (with their digests, a Python loop) are built for what is written: the whole table on a
        # first publish, the changed partitions' rows otherwise (0.8 s of a 2Wiki re-index was building
        # every row of every table only to count them).
        source = units.vectors[name]
        pinned = previous.lance_versions.get(name) if previous else None
        tbl = db.open_table(name) if name in existing else None
        if tbl is None or pinned is None or "digest" not in tbl.schema.names:
            # first publish (or a table an older mmkg wrote without digests): the table is exactly these rows
            tbl, expected = _create(db, name, source, encoder.dim)
        else:
            expected = partitioned(source).height
            if tbl.version != pinned and not _same_rows(db, name, pinned):
                tbl.restore(pinned)  # start from what CURRENT pins: a killed publish's edits never leak in
            failpoint(f"publish.lance.{name}.restored")
            if name in SHARED:
                _sync_by_id(tbl, _arrow(frame(source), name, encoder.dim))
            else:
                stale = changed + removed
                if stale:
                    tbl.delete(f"partition IN ({_in_list(stale)})")
                _add(tbl, name, source, changed, encoder.dim)
            failpoint(f"publish.lance.{name}.changed")
            if compact(root, tbl):  # pinned below, so the merged fragments are what later publishes start from
                failpoint(f"publish.lance.{name}.compacted")
        n_rows = tbl.count_rows()
        if n_rows != expected:
            raise PublishError(
                f"LanceDB table {name} under {root / 'lance'} holds {n_rows:,} rows after the update, expected "
                f"{expected:,}; CURRENT was not moved. Re-run the publish"
            )
        heights[name] = n_rows
        if n_rows >= ann_min_rows:
            # Large tables get an ANN index (rebuilt after each update so new rows are indexed too).
            tbl.create_index(
                metric="cosine",
                vector_column_name="vector",
                index_type=ann_index_type,
                num_partitions=max(1, int(n_rows**0.5)),
                num_sub_vectors=max(1, encoder.dim // 16),
                replace=True,
            )
            _key_indexes(tbl)
            ann.append(name)
        lance_versions[name] = tbl.version

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    version = f"v{stamp}-{hashlib.blake2b(('|'.join(parts.values()) + graph_fp).encode(), digest_size=4).hexdigest()}"
    folder = root / "versions" / version
    folder.mkdir(parents=True)
    graph.save(folder)
    failpoint("publish.files.graph")
    for name, df in units.payload.items():
        df.write_parquet(folder / f"{name}.parquet")
    failpoint("publish.files.payload")
    entity_keys = graph.nodes.filter(pl.col("kind") == "entity")["key"].to_list()
    # names and counts of the graph's entities: what query linking and readers show for a node
    merge_mentions(mentions.filter(pl.col("entity_key").is_in(entity_keys))).write_parquet(folder / "entities.parquet")
    # the build's NER spans of each chunk, so the answer reader reads them instead of running NER at query time
    mentions.filter(pl.col("source") == "ner").select("chunk_id", "text", "label").unique(
        maintain_order=True
    ).write_parquet(folder / "mentions.parquet")
    chunks = units.payload["chunks"]
    LexicalIndex.build(chunks["chunk_id"].to_list(), chunk_texts(chunks, units.payload["documents"])).save(
        folder / LEXICAL_DIR
    )
    smi = build_incidence(
        units.payload["sentences"]["sentence_id"].to_list(),
        entity_keys,
        mentions.filter(pl.col("relational") & pl.col("entity_key").is_in(entity_keys)).select(
            "sentence_id", "entity_key"
        ),
    )
    objects = units.payload["objects"]
    omi = build_incidence(
        objects["object_id"].to_list(),
        entity_keys,
        objects.filter(pl.col("entity_key").is_in(entity_keys)).select("object_id", "entity_key"),
    )
    smi.save(folder / "m_smi.npz")
    omi.save(folder / "m_omi.npz")
    counts = {
        **graph.counts(),
        **heights,
    }
    failpoint("publish.files.written")
    files = file_sums(root, version_files(root, version, lance_versions), previous.files if previous else None)
    manifest = Manifest(
        version=version,
        encoder=encoder,
        partitions=parts,
        graph_fingerprint=graph_fp,
        lance_versions=lance_versions,
        ann_indexed=ann,
        counts=counts,
        files=files,
    )
    manifest.write(folder)  # last file of the version: its presence means the version is complete
    failpoint("publish.manifest.written")
    problems = verify_version(root, version, probe)
    if problems:
        failed = root / "failed" / version
        failed.parent.mkdir(parents=True, exist_ok=True)
        folder.rename(failed)  # out of versions/, never listed or opened; kept to look at
        raise PublishError(
            f"version {version} failed its check after writing, so CURRENT stays at "
            f"{previous.version if previous else '(none)'}: " + "; ".join(problems) + f". The version was moved to "
            f"{failed}. Re-run the publish; if it fails again, report the error with that folder"
        )
    failpoint("publish.verified")
    set_current(root, version)
    return PublishResult(version, manifest, changed, removed, reused=False)


def verify_version(root: Path, version: str, probe: Probe | None = None) -> list[str]:
    """Open a written version read-only, as a reader would, and check it; returns what is wrong (empty: fine).

    Opening aligns every LanceDB table with the graph and incidence matrices (so a table holding more
    or fewer rows than the version's units fails here); then its row and node counts must be the
    manifest's (``Index.count_problems``), and ``probe`` (when given) queries it: the publish's smoke
    query is retrieval's (``mmkg.retrieval.smoke.own_vector_probes``: the stored vectors of a few chunks
    through MG2-RAG's pipeline, each must come back in its top k). No encoder is loaded.
    """
    from mmkg.index.reader import Index

    try:
        index = Index.open(root, version=version, encoder=False, track=False)
        problems = index.count_problems()
        return problems + probe(index) if probe is not None else problems
    except Exception as exc:  # whatever stops a reader from opening it stops the publish
        return [f"cannot open it: {exc.__class__.__name__}: {exc}"]
