"""Reading a published index: ``Index.open(path)`` pins a version; the reader is the data-access layer.

``Index`` holds one version: the payload tables, the graph, the incidence matrices, the vectors of
every LanceDB table it pins (in memory for exact search, or searched in place through their ANN
index when large), the query encoder, the query entity linker, the BM25 index, filter masks and PPR
over the graph. It runs no retrieval strategy and builds no evidence: ``mmkg.retrieval`` reads the
index through these methods (``mmkg.retrieval.retrieve(index, ...)`` runs a query). Filters select
rows with array masks; where a filter must reach LanceDB (ANN search), only validated content-hash ids
are written into the predicate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from threadpoolctl import ThreadpoolController

from mmkg.graph import Graph
from mmkg.incidence import Incidence
from mmkg.index.integrity import IndexDamaged, damaged_message, describe, explain, open_version
from mmkg.index.integrity import verify as verify_files
from mmkg.index.manifest import LEXICAL_DIR, Manifest
from mmkg.index.units import GRANULARITIES, SHARED
from mmkg.lexical import LexicalIndex
from mmkg.linking import EntityLinker, Link
from mmkg.query import FILTER_KEYS, Filters, QueryError

__all__ = ["FILTER_KEYS", "Index", "UnitTable"]

_HEX_ID = re.compile(r"^[0-9a-f]{8,64}$")


#: ANN candidates re-ranked with their stored vectors, per result asked for. IVF_PQ's own distances are
#: the product-quantized ones: on the 103k-chunk scale index a chunk's own vector came back at cosine 0.65
#: instead of 1.0, and those distorted cosines are MG2-RAG's seed activations. Re-ranking 10 x k candidates
#: gives exact cosines (to 1e-4) for about 5 ms more per search there (benchmarks/RESULTS.md).
ANN_REFINE_FACTOR: int | None = 10


def _exact_distances(query: Any) -> Any:
    """An ANN vector query whose candidates are re-ranked by exact distance (``ANN_REFINE_FACTOR``)."""
    return query.refine_factor(ANN_REFINE_FACTOR) if ANN_REFINE_FACTOR else query


def _hex_list(values: Sequence[str], what: str) -> str:
    if not all(_HEX_ID.match(v) for v in values):  # ids are content hashes; anything else is refused
        raise ValueError(f"{what} values in this index are not content hashes; cannot filter the ANN search")
    return ", ".join(f"'{v}'" for v in values)


class UnitTable:
    """One LanceDB table of units (documents, entities per document, relations) read on first use.

    Small tables are held in memory with a row index per document; tables published with an ANN index
    are read per query, only for the documents asked for.
    """

    def __init__(self, tbl: Any, dim: int, ann: bool):
        self.tbl = tbl
        self.dim = dim
        self.ann = ann
        self.ids: np.ndarray | None = None
        self.doc_ids: np.ndarray | None = None
        self.vectors: np.ndarray | None = None
        self._rows_of: dict[str, np.ndarray] = {}
        if not ann:
            data = pl.from_arrow(tbl.to_arrow().select(["id", "doc_id", "vector"]))
            assert isinstance(data, pl.DataFrame)
            data = data.sort("doc_id", "id")
            self.ids = data["id"].to_numpy()
            self.doc_ids = data["doc_id"].to_numpy()
            self.vectors = (
                data["vector"].to_numpy().reshape(data.height, dim).astype(np.float32)
                if data.height
                else np.zeros((0, dim), np.float32)
            )
            docs = data["doc_id"]
            if data.height:
                starts = np.flatnonzero(np.r_[True, docs[1:].to_numpy() != docs[:-1].to_numpy()])
                ends = np.r_[starts[1:], data.height]
                self._rows_of = {docs[int(s)]: np.arange(s, e) for s, e in zip(starts, ends, strict=True)}

    def for_docs(self, q: np.ndarray, doc_ids: Sequence[str]) -> tuple[list[str], list[str], np.ndarray]:
        """``(ids, doc_ids, cosines)`` of every unit of the given documents."""
        if not self.ann:
            assert self.vectors is not None and self.ids is not None and self.doc_ids is not None
            rows = [self._rows_of[d] for d in doc_ids if d in self._rows_of]
            idx = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
            return self.ids[idx].tolist(), self.doc_ids[idx].tolist(), self.vectors[idx] @ q
        if not doc_ids:
            return [], [], np.zeros(0, np.float32)
        scan = (
            self.tbl.search()
            .where(f"doc_id IN ({_hex_list(list(doc_ids), 'doc_id')})")
            .select(["id", "doc_id", "vector"])
            .limit(self.tbl.count_rows())
            .to_arrow()
        )
        vecs = np.asarray(scan["vector"].to_pylist(), dtype=np.float32).reshape(-1, self.dim)
        return scan["id"].to_pylist(), scan["doc_id"].to_pylist(), vecs @ q

    def top(self, q: np.ndarray, k: int, allowed: set[str] | None) -> list[tuple[str, float]]:
        """The ``k`` units most similar to ``q`` among the allowed documents' (all when None), best first."""
        if not self.ann:
            assert self.vectors is not None and self.ids is not None and self.doc_ids is not None
            scores = self.vectors @ q
            if allowed is not None:
                scores = np.where(np.isin(self.doc_ids, list(allowed)), scores, -np.inf)
            order = np.argsort(-scores, kind="stable")[:k]
            return [(str(self.ids[i]), float(scores[i])) for i in order if np.isfinite(scores[i])]
        query = self.tbl.search(q.astype(np.float32), vector_column_name="vector").distance_type("cosine")
        if allowed is not None:
            if not allowed:
                return []
            query = query.where(f"doc_id IN ({_hex_list(sorted(allowed), 'doc_id')})", prefilter=True)
        hits = _exact_distances(query).select(["id"]).limit(k).to_arrow()
        return [(i, 1.0 - d) for i, d in zip(hits["id"].to_pylist(), hits["_distance"].to_pylist(), strict=True)]


class _WholeTable:
    """The two calls the reader makes on a table it reads whole, on a Lance dataset pinned to a version."""

    def __init__(self, dataset: Any):
        self.dataset = dataset

    def to_arrow(self) -> Any:
        return self.dataset.to_table()

    def count_rows(self) -> int:
        return int(self.dataset.count_rows())


class Index:
    """A pinned, read-only view of one published index version."""

    def __init__(self, root: Path, manifest: Manifest, encoder: Any, ppr_engine: str):
        from mmkg.ppr import transition_matrix

        self.root = root
        self.manifest = manifest
        self.version = manifest.version
        self.encoder = encoder
        self.ppr_engine = ppr_engine
        folder = root / "versions" / manifest.version
        self.folder = folder
        self.graph = Graph.load(folder)
        # no symmetry check (a transpose: 0.3 s of a 3.8 s open at 302k chunks): the graph_well_formed check
        # verified it before the publish, and the npz's CRCs refuse bytes changed since
        self.ppr_graph = transition_matrix(self.graph.adjacency, check=False)
        self.chunks = pl.read_parquet(folder / "chunks.parquet")
        self.sentences = pl.read_parquet(folder / "sentences.parquet")
        self.images = pl.read_parquet(folder / "images.parquet")  # one row per picture (content id)
        self.objects = pl.read_parquet(folder / "objects.parquet")  # one row per grounded object
        # every place each picture / object is shown; versions published before pictures were shared lack them
        occ = folder / "image_occurrences.parquet"
        self.image_occurrences = (
            pl.read_parquet(occ) if occ.exists() else self.images.select("image_id", "doc_id", "partition", "source")
        )
        occ = folder / "object_occurrences.parquet"
        self.object_occurrences = (
            pl.read_parquet(occ)
            if occ.exists()
            else self.objects.select("object_id", "chunk_id", "doc_id", "partition")
        )
        self.m_smi = Incidence.load(folder / "m_smi.npz")
        self.m_omi = Incidence.load(folder / "m_omi.npz", columns_like=self.m_smi)  # the same entities
        nodes = self.graph.nodes
        self.n_chunks = int((nodes["kind"] == "chunk").sum())
        self.n_images = int((nodes["kind"] == "image").sum())
        order = {
            "chunks": nodes.filter(pl.col("kind") == "chunk")["key"].to_list(),
            "images": nodes.filter(pl.col("kind") == "image")["key"].to_list(),
            "sentences": self.m_smi.row_ids.tolist(),
            "objects": self.m_omi.row_ids.tolist(),
        }
        self.vectors: dict[str, np.ndarray] = {}
        self.meta: dict[str, pl.DataFrame] = {}
        self.tables: dict[str, Any] = {}  # ANN-indexed LanceDB tables, searched in place
        self.positions: dict[str, dict[str, int]] = {}
        dim = manifest.encoder.dim
        for name in GRANULARITIES:
            tbl = self._open_table(name)
            ids = order[name]
            self.positions[name] = {key: i for i, key in enumerate(ids)}
            pos = pl.DataFrame({"id": ids, "_pos": np.arange(len(ids))}, schema={"id": pl.String, "_pos": pl.Int64})
            if name in manifest.ann_indexed:
                self.tables[name] = tbl
                scan = tbl.search().select(["id", "partition", "doc_id"]).limit(tbl.count_rows()).to_arrow()
                data = pl.from_arrow(scan)
            else:
                data = pl.from_arrow(tbl.to_arrow())
            assert isinstance(data, pl.DataFrame)
            if data.height == len(ids) and data["id"].equals(pos["id"]):
                # a table written in this version's order (every first publish): nothing to align, and
                # no id can be duplicated or missing (the join and checks below took 0.4 s at 302k chunks)
                self._keep_rows(name, data, len(ids), dim)
                continue
            if data.height != len(ids) or data["id"].n_unique() != data.height:
                dup = data["id"].len() - data["id"].n_unique()
                raise ValueError(
                    f"{folder}: LanceDB table {name} holds {data.height:,} rows ({dup:,} duplicated ids) for "
                    f"{len(ids):,} units of this version; the version is damaged: roll back to an earlier one "
                    "or publish again"
                )
            aligned = pos.join(data, on="id", how="left").sort("_pos")
            if aligned["doc_id"].null_count():
                raise ValueError(f"{folder}: {aligned['doc_id'].null_count()} {name} rows are missing from LanceDB")
            self._keep_rows(name, aligned, len(ids), dim)
        self.documents = pl.read_parquet(folder / "documents.parquet")  # what filters select on
        # entity names (for linking titles with a parenthetical); versions before it was published lack it
        ent_path = folder / "entities.parquet"
        self.entities = pl.read_parquet(ent_path) if ent_path.exists() else None
        self._linker: EntityLinker | None = None
        self._entity_node: dict[str, int] | None = None
        self._lexical: LexicalIndex | None = None
        self._by_chunk: dict[str, tuple[pl.Series, np.ndarray]] = {}  # payload name -> sorted chunk ids, rows
        self._lexical_pos: np.ndarray | None = None
        self._units: dict[str, UnitTable] = {}
        self._payload: dict[str, pl.DataFrame] = {}
        # OpenBLAS worker threads spin after each call and starve torch's query encoder of the
        # cores; the dense search and propagation run on one BLAS thread instead (measured:
        # retrieve() p50 85 ms -> 55 ms on 2 cores).
        self._blas = ThreadpoolController()

    def _keep_rows(self, name: str, aligned: pl.DataFrame, n: int, dim: int) -> None:
        """A granularity's LanceDB rows in this version's order: their metadata, and their vectors unless searched
        in place."""
        self.meta[name] = aligned.select("id", "partition", "doc_id")
        if name not in self.tables:
            self.vectors[name] = (
                aligned["vector"].to_numpy().reshape(n, dim).astype(np.float32) if n else np.zeros((0, dim), np.float32)
            )

    def _open_table(self, name: str) -> Any:
        """A LanceDB table at the version this index pins: through ``lancedb`` when it is ANN-indexed (searched in
        place), else the Lance dataset itself, read whole (``_WholeTable``). ``lance`` imports in 0.46 s and
        ``lancedb`` in 1.27 s on this machine: most of a 2.2 s CLI query on the sample index, which has no ANN
        index."""
        version = self.manifest.lance_versions[name]
        if name in self.manifest.ann_indexed:
            import lancedb

            tbl = lancedb.connect(str(self.root / "lance")).open_table(name)
            tbl.checkout(version)
            return tbl
        import lance

        return _WholeTable(lance.dataset(str(self.root / "lance" / f"{name}.lance"), version=version))

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: Path | str,
        version: str | None = None,
        encoder: Any = None,
        ppr_engine: str = "auto",
        verify: bool = False,
        track: bool = True,
    ) -> Index:
        """Open the current (or a given) version; the encoder must match the one the index was built with.

        ``encoder``: None loads the one the manifest names; ``False`` opens without one (metadata, payload,
        graph, ``count_problems``, stored vectors; text and image queries then raise). Every open checks file sizes;
        ``verify=True`` also reads every file against its checksum first (about 0.4 s for a 200 MB index;
        what ``mmkg serve`` does), so bytes flipped in place are refused instead of served. ``track``
        records the open for retention's grace period (``mmkg.index.gc``); the publish's own check of a
        new version is not a reader and passes False.
        """
        from mmkg.encoders import check_compatible, load_encoder
        from mmkg.index.gc import mark_opened

        root = Path(path)
        version, manifest = open_version(root, version)
        if verify and (problems := verify_files(root, manifest)):
            raise IndexDamaged(damaged_message(root, version, problems))
        if track:
            mark_opened(root / "versions" / version)  # retention keeps what a reader opened lately (mmkg.index.gc)
        if encoder is None:
            spec = manifest.encoder  # the runtime the index was built with embeds its queries
            encoder = load_encoder(spec.backend, spec.model, runtime=spec.runtime)
        if encoder is not False:
            check_compatible(manifest.encoder.id, encoder)
        try:
            return cls(root, manifest, None if encoder is False else encoder, ppr_engine)
        except Exception as exc:  # damage that keeps a file's size shows up here, as some library's parse error
            raise explain(root, manifest, exc) from exc

    def _encoder(self) -> Any:
        if self.encoder is None:
            raise RuntimeError(
                f"index {self.root} version {self.version} was opened without an encoder; "
                "open it with Index.open(path) to run text or image queries"
            )
        return self.encoder

    def info(self) -> dict[str, Any]:
        return describe(self.root, self.version)

    # -- data access: filters, vectors, queries ------------------------------------------------

    def allowed_docs(self, filters: Filters) -> set[str] | None:
        """The document ids the filters allow (None: no filter). Values are compared, never pasted into a query."""
        if not filters:
            return None
        if not isinstance(filters, dict):
            raise QueryError(f"filters must map {list(FILTER_KEYS)} to values; got {type(filters).__name__}")
        unknown = sorted(set(filters) - set(FILTER_KEYS))
        if unknown:
            raise QueryError(f"unknown filter(s) {unknown}; filter by {list(FILTER_KEYS)}")
        docs = self.documents
        for key, value in filters.items():
            values = [value] if isinstance(value, str) else value
            if not isinstance(values, (list, tuple, set, frozenset)) or not all(isinstance(v, str) for v in values):
                raise QueryError(f"filter {key} takes a string or a list of strings; got {value!r}")
            known = set(self.documents[key].to_list())
            missing = [v for v in values if v not in known]
            if missing:  # a typo gets its nearest names, never an empty answer without a word
                import difflib

                names = sorted(known)
                said = []
                for v in missing[:5]:
                    close = difflib.get_close_matches(v, names, n=3)
                    said.append(repr(v[:80]) + (f" (did you mean {' or '.join(repr(c) for c in close)}?)"
                                                 if close else ""))  # fmt: skip
                listed = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
                raise QueryError(f"no {key} {', '.join(said)} in index version {self.version}; the index has "
                                 f"{len(names)}: {listed}")  # fmt: skip
            docs = docs.filter(pl.col(key).is_in(list(values)))
        return set(docs["doc_id"].to_list())

    def masks(self, filters: Filters) -> dict[str, np.ndarray | None]:
        """Row masks per granularity for the documents the filters allow (None: everything is allowed)."""
        allowed_set = self.allowed_docs(filters)
        if allowed_set is None:
            return dict.fromkeys(GRANULARITIES)
        allowed = pl.Series(sorted(allowed_set), dtype=pl.String).implode()
        masks = {
            name: self.meta[name].select(pl.col("doc_id").is_in(allowed)).to_series().to_numpy()
            for name in ("chunks", "sentences")
        }
        # a picture (or object) is allowed when any document that shows it is
        for name, occ, id_col in (
            ("images", self.image_occurrences, "image_id"),
            ("objects", self.object_occurrences, "object_id"),
        ):
            ids = occ.filter(pl.col("doc_id").is_in(allowed))[id_col].unique().implode()
            masks[name] = self.meta[name].select(pl.col("id").is_in(ids)).to_series().to_numpy()
        return masks

    def dense_scores(self, name: str, q: np.ndarray, k: int, mask: np.ndarray | None) -> np.ndarray:
        """Cosine scores of every row of a granularity: exact in memory, or the ANN index's top k (others -inf)."""
        if name not in self.tables:
            return self.vectors[name] @ q
        out = np.full(len(self.positions[name]), -np.inf, dtype=np.float32)
        if k <= 0:
            return out
        query = self.tables[name].search(q.astype(np.float32), vector_column_name="vector").distance_type("cosine")
        if mask is not None:
            # shared units (pictures, objects) are allowed by any of their documents: filter those by id
            column = "id" if name in SHARED else "doc_id"
            values = self.meta[name].filter(pl.Series(mask))[column].unique().to_list()
            if not values:
                return out
            query = query.where(f"{column} IN ({_hex_list(values, column)})", prefilter=True)
        hits = _exact_distances(query).select(["id"]).limit(k).to_arrow()
        pos = self.positions[name]
        for key, dist in zip(hits["id"].to_pylist(), hits["_distance"].to_pylist(), strict=True):
            out[pos[key]] = 1.0 - dist
        return out

    def cosines_for_docs(self, name: str, q: np.ndarray, doc_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cosines)`` of every row of a granularity (chunks, sentences) that belongs to the documents."""
        rows = np.flatnonzero(self.meta[name]["doc_id"].is_in(list(doc_ids)).to_numpy())
        if name not in self.tables:
            return rows, self.vectors[name][rows] @ q
        if not rows.size:
            return rows, np.zeros(0, np.float32)
        scan = (
            self.tables[name].search()
            .where(f"doc_id IN ({_hex_list(list(doc_ids), 'doc_id')})")
            .select(["id", "vector"])
            .limit(int(rows.size))
            .to_arrow()
        )  # fmt: skip
        pos = self.positions[name]
        got = np.asarray([pos[i] for i in scan["id"].to_pylist()], dtype=np.int64)
        vecs = np.asarray(scan["vector"].to_pylist(), dtype=np.float32).reshape(len(got), -1)
        return got, vecs @ q

    def cosines_for_rows(self, name: str, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Cosines of some rows of a granularity with ``q``, in the order of ``rows`` (read from LanceDB, by id,
        when the granularity is searched through its ANN index and its vectors are not in memory)."""
        if name not in self.tables:
            return self.vectors[name][rows] @ q
        if not rows.size:
            return np.zeros(0, np.float32)
        ids = self.meta[name]["id"].gather(rows).to_list()
        scan = self.tables[name].search().where(f"id IN ({_hex_list(ids, 'id')})").select(["id", "vector"])
        got = scan.limit(len(ids)).to_arrow()
        vecs = dict(zip(got["id"].to_pylist(), np.asarray(got["vector"].to_pylist(), np.float32), strict=True))
        return np.asarray([vecs[i] @ q for i in ids], dtype=np.float32)

    def encode_text(self, text: str) -> np.ndarray:
        """The query text's vector in the index's space."""
        return self._encoder().encode_text([text])[0]

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of several short texts in one batch (rows in order)."""
        return np.asarray(self._encoder().encode_text(list(texts)), dtype=np.float32)

    def encode_image(self, image: str | Path, texts: Sequence[str] | None = None) -> np.ndarray:
        """A picture's vector in the index's space; the text encoder embeds it through ``texts``, what can be
        read from it (its OCR lines: ``mmkg.retrieval.vectors.picture_texts`` reads a query picture's)."""
        from mmkg.encoders import ImageInput

        return self._encoder().encode_images([ImageInput(path=Path(image), pil=None, texts=list(texts or []))])[0]

    def engine_for(self, engine: str | None, alpha: float) -> str:
        """The PPR engine a query runs: ``engine``, else the index's; ``auto`` is decided by
        :func:`mmkg.ppr.auto_engine` from this graph's size and the damping."""
        name = engine or self.ppr_engine
        if name == "auto":
            from mmkg.ppr import auto_engine

            return auto_engine(self.ppr_graph.n, alpha)
        return name

    def ppr(self, r0: np.ndarray, alpha: float, eps: float = 1e-6, engine: str | None = None) -> np.ndarray:
        """Personalized PageRank over this version's graph from the seed distribution ``r0``."""
        from mmkg.ppr import personalized_pagerank

        return personalized_pagerank(self.ppr_graph, r0, alpha, eps, engine=self.engine_for(engine, alpha))

    @property
    def entity_node(self) -> dict[str, int]:
        """Entity key -> graph node index."""
        if self._entity_node is None:
            self._entity_node = self.graph.index_of("entity")
        return self._entity_node

    @property
    def linker(self) -> EntityLinker:
        """Links query spans to this version's entity nodes (built on first use, ~1 s per million entities)."""
        if self._linker is None:
            names = self.entities["name"].to_list() if self.entities is not None else []
            self._linker = EntityLinker(self.entity_node, names)
        return self._linker

    @property
    def lexical(self) -> LexicalIndex:
        """BM25 over this version's chunk texts (published with it; rebuilt in memory for older versions)."""
        if self._lexical is None:
            folder = self.folder / LEXICAL_DIR
            if folder.exists():
                try:
                    lex = LexicalIndex.load(folder)
                except Exception as exc:
                    raise explain(self.root, self.manifest, exc, "reading its BM25 index") from exc
            else:
                from mmkg.embedding import chunk_texts

                lex = LexicalIndex.build(self.chunks["chunk_id"].to_list(), chunk_texts(self.chunks, self.documents))
            pos = self.positions["chunks"]
            self._lexical_pos = np.asarray([pos[c] for c in lex.ids], dtype=np.int64)
            self._lexical = lex
        return self._lexical

    def lexical_scores(self, text: str, terms: list[str] | None = None) -> np.ndarray:
        """BM25 score of every chunk, in the graph's chunk node order (``terms``: already tokenized query)."""
        raw = self.lexical.scores(text, terms)
        out = np.zeros(self.n_chunks, dtype=np.float32)
        out[self._lexical_pos] = raw
        return out

    def link(self, text: str) -> list[Link]:
        """The entities of this index that a query names (what MG2-RAG's default preset seeds)."""
        return self.linker.link(text)

    # -- units beyond MG2-RAG's granularities: documents, entities per document, relations -----

    def has_table(self, name: str) -> bool:
        return name in self.manifest.lance_versions

    def units(self, name: str) -> UnitTable:
        """A unit table of this version (``documents``, ``document_entities``, ``relations``), loaded on first use."""
        if name not in self._units:
            if not self.has_table(name):
                raise ValueError(
                    f"index version {self.version} has no {name} vectors (published by an older mmkg); "
                    "re-materialize the partitions and publish again to use this strategy"
                )
            self._units[name] = UnitTable(
                self._open_table(name), self.manifest.encoder.dim, name in self.manifest.ann_indexed
            )
        return self._units[name]

    def has_payload(self, name: str) -> bool:
        """Whether this version has the payload table ``name`` (newer tables are missing from older versions)."""
        return name in self._payload or (self.folder / f"{name}.parquet").exists()

    def mentions_in(self, chunk_ids: Sequence[str]) -> dict[str, tuple[tuple[str, str], ...]] | None:
        """The named-entity spans (text, label) the build's parse found in each of ``chunk_ids``; None for a
        version published before they were kept (its readers run NER themselves)."""
        if not self.has_payload("mentions"):
            return None
        rows = self._chunk_rows("mentions", set(chunk_ids))
        out: dict[str, list[tuple[str, str]]] = {c: [] for c in chunk_ids}
        for chunk_id, text, label in rows.iter_rows():
            out[chunk_id].append((text, label))
        return {c: tuple(v) for c, v in out.items()}

    def payload(self, name: str) -> pl.DataFrame:
        """A payload table of this version by name (e.g. ``document_entities``, ``relations``), read on first use."""
        if name not in self._payload:
            path = self.folder / f"{name}.parquet"
            if not path.exists():
                raise ValueError(f"index version {self.version} has no {name} table; publish again with this mmkg")
            try:
                self._payload[name] = pl.read_parquet(path)
            except Exception as exc:
                raise explain(self.root, self.manifest, exc, f"reading {path.name}") from exc
        return self._payload[name]

    # -- queries --------------------------------------------------------------------------------

    @contextmanager
    def single_blas_thread(self) -> Iterator[None]:
        with self._blas.limit(limits=1, user_api="blas"):
            yield

    def count_problems(self) -> list[str]:
        """Row counts per table and node counts per kind that differ from the manifest's (empty: none).

        What every check of a version starts with (``mmkg.index.publish.verify_version``); reads no vector.
        """
        problems = []
        counts = self.manifest.counts
        for name in GRANULARITIES:
            if name in counts and len(self.positions[name]) != counts[name]:
                problems.append(f"{name}: {len(self.positions[name]):,} rows, the manifest says {counts[name]:,}")
        for name in set(self.manifest.lance_versions) - set(GRANULARITIES):
            rows = self._open_table(name).count_rows()
            if name in counts and rows != counts[name]:
                problems.append(f"{name}: {rows:,} rows, the manifest says {counts[name]:,}")
        for key, value in self.graph.counts().items():
            if key in counts and counts[key] != value:
                problems.append(f"graph {key}: {value:,}, the manifest says {counts[key]:,}")
        return problems

    def stored_vector(self, name: str, unit_id: str) -> np.ndarray:
        """The vector the index holds for one unit of a granularity."""
        if name not in self.tables:
            return self.vectors[name][self.positions[name][unit_id]]
        hit = self.tables[name].search().where(f"id = {_hex_list([unit_id], 'id')}").select(["vector"]).limit(1)
        return np.asarray(hit.to_arrow()["vector"][0].as_py(), dtype=np.float32)

    # -- rows of the payload -------------------------------------------------------------------

    def chunk_rows(self, chunk_ids: Sequence[str]) -> list[int]:
        """Graph chunk rows of chunk ids (unknown ids are skipped)."""
        pos = self.positions["chunks"]
        return [pos[c] for c in chunk_ids if c in pos]

    def relations_in(self, chunk_ids: set[str]) -> pl.DataFrame:
        """The triples stated in these chunks (payload rows, in payload order); none for versions without a
        relations table.

        Looked up by binary search in the chunk ids sorted once per reader, instead of a filter of every row
        per query: at 1M chunks the filter read 3.7M relations (16 ms of a 204 ms query)."""
        if not self.has_table("relations") or not chunk_ids:
            return pl.DataFrame()
        return self._chunk_rows("relations", chunk_ids)

    def _chunk_rows(self, name: str, chunk_ids: set[str]) -> pl.DataFrame:
        """The rows of payload table ``name`` whose ``chunk_id`` is one of ``chunk_ids``, in payload order, by
        binary search in the table's chunk ids sorted once per reader (relations_in, mentions_in)."""
        table = self.payload(name)
        if not chunk_ids:
            return table.clear()
        if name not in self._by_chunk:
            by = table.select("chunk_id").with_row_index("row").sort("chunk_id", "row")
            self._by_chunk[name] = (by["chunk_id"], by["row"].to_numpy())
        keys, rows = self._by_chunk[name]
        wanted = pl.Series(sorted(chunk_ids), dtype=pl.String)
        lo = keys.search_sorted(wanted, side="left").to_numpy()
        hi = keys.search_sorted(wanted, side="right").to_numpy()
        return table[np.sort(np.concatenate([rows[a:b] for a, b in zip(lo, hi, strict=True)]))]
