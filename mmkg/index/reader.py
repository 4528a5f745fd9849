"""Reading a published index: ``Index.open(path)`` pins a version; ``retrieve`` answers queries.

Vectors are read from the LanceDB table versions the manifest pins and kept in memory for exact
search (a few milliseconds for hundreds of thousands of rows), aligned to the graph's node order
and the incidence matrices' row order. Filters select rows with array masks: no user value is
ever pasted into a query string.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import polars as pl
from threadpoolctl import ThreadpoolController

from mmkg.graph import Graph
from mmkg.incidence import Incidence
from mmkg.index.manifest import Manifest, current_version, list_versions
from mmkg.index.publish import GRANULARITIES, LEXICAL_DIR
from mmkg.index.units import SHARED
from mmkg.lexical import LexicalIndex
from mmkg.linking import EntityLinker, Link
from mmkg.retrieval import Granular, Preset, activation, get_preset, keep_top_k, seed_distribution

FILTER_KEYS = ("doc_id", "partition", "source_path")
_HEX_ID = re.compile(r"^[0-9a-f]{8,64}$")


def _finite_or_zero(scores: np.ndarray) -> np.ndarray:
    """Scores outside the top-k or the filters are -inf; evidence ranking reads them as 0."""
    return np.where(np.isfinite(scores), scores, 0.0)


@dataclass(frozen=True)
class SentenceHit:
    sentence_id: str
    text: str
    score: float


@dataclass(frozen=True)
class ImageOccurrence:
    """One place a picture is shown: the same picture (one image id) can be in many documents and partitions."""

    doc_id: str
    partition: str
    title: str
    source_path: str  # the document's file
    source: str  # where the picture came from (image file, or PDF page and object)
    page: int | None
    alt_text: str


@dataclass(frozen=True)
class ImageHit:
    image_id: str
    source: str  # where this chunk's document shows it
    blob_path: str
    score: float
    occurrences: list[ImageOccurrence] = field(default_factory=list)  # every place in the index that shows it
    same_as_query: bool = False  # the image query is this picture (same bytes, or the same perceptual hash)


@dataclass(frozen=True)
class ObjectHit:
    object_id: str
    image_id: str
    entity_name: str
    backend: str
    sigma: float  # grounding confidence of the object


@dataclass
class RetrievedChunk:
    rank: int
    chunk_id: str
    doc_id: str
    partition: str
    title: str
    source_path: str
    page: int | None
    text: str
    score: float
    sentences: list[SentenceHit] = field(default_factory=list)
    images: list[ImageHit] = field(default_factory=list)
    objects: list[ObjectHit] = field(default_factory=list)


@dataclass
class RetrievalResult:
    version: str
    preset: str
    query_text: str | None
    query_image: str | None
    chunks: list[RetrievedChunk]
    seeds: int
    timings_ms: dict[str, float]
    linked_entities: list[str] = field(default_factory=list)  # entity keys the text query named (seeded)
    matched_images: list[str] = field(default_factory=list)  # image ids that are the query picture (seeded)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
        self.ppr_graph = transition_matrix(self.graph.adjacency)
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
        self.m_omi = Incidence.load(folder / "m_omi.npz")
        nodes = self.graph.nodes
        self.n_chunks = int((nodes["kind"] == "chunk").sum())
        self.n_images = int((nodes["kind"] == "image").sum())
        order = {
            "chunks": nodes.filter(pl.col("kind") == "chunk")["key"].to_list(),
            "images": nodes.filter(pl.col("kind") == "image")["key"].to_list(),
            "sentences": self.m_smi.row_ids.tolist(),
            "objects": self.m_omi.row_ids.tolist(),
        }
        db = lancedb.connect(str(root / "lance"))
        self.vectors: dict[str, np.ndarray] = {}
        self.meta: dict[str, pl.DataFrame] = {}
        self.tables: dict[str, Any] = {}  # ANN-indexed LanceDB tables, searched in place
        self.positions: dict[str, dict[str, int]] = {}
        dim = manifest.encoder.dim
        for name in GRANULARITIES:
            tbl = db.open_table(name)
            tbl.checkout(manifest.lance_versions[name])
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
            aligned = pos.join(data, on="id", how="left").sort("_pos")
            if aligned["doc_id"].null_count():
                raise ValueError(f"{folder}: {aligned['doc_id'].null_count()} {name} rows are missing from LanceDB")
            self.meta[name] = aligned.select("id", "partition", "doc_id")
            if name not in self.tables:
                self.vectors[name] = (
                    aligned["vector"].to_numpy().reshape(len(ids), dim).astype(np.float32)
                    if ids
                    else np.zeros((0, dim), np.float32)
                )
        self.documents = pl.read_parquet(folder / "documents.parquet")  # what filters select on
        # entity names (for linking titles with a parenthetical); versions before it was published lack it
        ent_path = folder / "entities.parquet"
        self.entities = pl.read_parquet(ent_path) if ent_path.exists() else None
        self._lookup: dict[str, dict] | None = None
        self._image_row = {iid: j for j, iid in enumerate(self.images["image_id"].to_list())}
        self._linker: EntityLinker | None = None
        self._entity_node: dict[str, int] | None = None
        self._lexical: LexicalIndex | None = None
        self._lexical_pos: np.ndarray | None = None
        # OpenBLAS worker threads spin after each call and starve torch's query encoder of the
        # cores; the dense search and propagation run on one BLAS thread instead (measured:
        # retrieve() p50 85 ms -> 55 ms on 2 cores).
        self._blas = ThreadpoolController()

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str, version: str | None = None, encoder: Any = None, ppr_engine: str = "auto") -> Index:
        """Open the current (or a given) version; the encoder must match the one the index was built with.

        ``encoder``: None loads the one the manifest names; ``False`` opens without one (metadata, payload,
        graph, and ``self_check``; text and image queries then raise).
        """
        from mmkg.encoders import check_compatible, load_encoder

        root = Path(path)
        version = version or current_version(root)
        folder = root / "versions" / version
        if not folder.exists():
            raise FileNotFoundError(f"index version {version} not found under {root}; versions: {list_versions(root)}")
        manifest = Manifest.read(folder)
        if encoder is False:
            return cls(root, manifest, None, ppr_engine)
        if encoder is None:
            encoder = load_encoder(manifest.encoder.backend, manifest.encoder.model)
        check_compatible(manifest.encoder.id, encoder)
        return cls(root, manifest, encoder, ppr_engine)

    def _encoder(self) -> Any:
        if self.encoder is None:
            raise RuntimeError(
                f"index {self.root} version {self.version} was opened without an encoder; "
                "open it with Index.open(path) to run text or image queries"
            )
        return self.encoder

    def info(self) -> dict[str, Any]:
        size = sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())
        return {
            "root": str(self.root),
            "version": self.version,
            "created_at": self.manifest.created_at,
            "versions": list_versions(self.root),
            "encoder": self.manifest.encoder.id,
            "partitions": sorted(self.manifest.partitions),
            "counts": self.manifest.counts,
            "size_bytes": size,
        }

    # -- querying ------------------------------------------------------------------------------

    def _masks(self, filters: dict[str, str | Sequence[str]] | None) -> dict[str, np.ndarray | None]:
        """Row masks per granularity for the documents the filters allow (values never reach a query string)."""
        if not filters:
            return dict.fromkeys(GRANULARITIES)
        unknown = sorted(set(filters) - set(FILTER_KEYS))
        if unknown:
            raise ValueError(f"unknown filter(s) {unknown}; filter by {list(FILTER_KEYS)}")
        docs = self.documents
        for key, value in filters.items():
            docs = docs.filter(pl.col(key).is_in([value] if isinstance(value, str) else list(value)))
        allowed = docs["doc_id"].implode()
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

    def _scores(self, name: str, q: np.ndarray, k: int, mask: np.ndarray | None) -> np.ndarray:
        """Cosine scores of every row: exact in memory, or the ANN index's top k (others -inf)."""
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
            if not all(_HEX_ID.match(d) for d in values):  # ids are content hashes; anything else is refused
                raise ValueError(f"{column} values in this index are not content hashes; cannot filter the ANN search")
            query = query.where(f"{column} IN ({', '.join(repr(d) for d in values)})", prefilter=True)
        hits = query.select(["id"]).limit(k).to_arrow()
        pos = self.positions[name]
        for key, dist in zip(hits["id"].to_pylist(), hits["_distance"].to_pylist(), strict=True):
            out[pos[key]] = 1.0 - dist
        return out

    def _granular(
        self, q: np.ndarray, topk: Any, masks: dict[str, np.ndarray | None]
    ) -> tuple[Granular, dict[str, np.ndarray]]:
        k = {"chunks": topk.chunk, "sentences": topk.sentence, "images": topk.image, "objects": topk.object}
        raw = {name: self._scores(name, q, k[name], masks[name]) for name in GRANULARITIES}
        g = Granular(
            chunk=keep_top_k(raw["chunks"], topk.chunk, masks["chunks"]),
            sentence=keep_top_k(raw["sentences"], topk.sentence, masks["sentences"]),
            image=keep_top_k(raw["images"], topk.image, masks["images"]),
            object=keep_top_k(raw["objects"], topk.object, masks["objects"]),
        )
        return g, raw

    def _engine(self, engine: str | None, alpha: float) -> str:
        """``auto``: power iteration for light damping (few sweeps, least overhead), CG for heavy damping.

        Measured on the 2Wiki graph (48k nodes) at α = 0.5: scipy 16 ms, cg 20 ms; the benchmark shows
        CG 3-20x ahead of power iteration once α is around 0.85 on large graphs.
        """
        name = engine or self.ppr_engine
        if name == "auto":
            return "scipy" if alpha <= 0.5 else "cg"
        return name

    @property
    def linker(self) -> EntityLinker:
        """Links query spans to this version's entity nodes (built on first use, ~1 s per million entities)."""
        if self._linker is None:
            self._entity_node = self.graph.index_of("entity")
            names = self.entities["name"].to_list() if self.entities is not None else []
            self._linker = EntityLinker(self._entity_node, names)
        return self._linker

    @property
    def lexical(self) -> LexicalIndex:
        """BM25 over this version's chunk texts (published with it; rebuilt in memory for older versions)."""
        if self._lexical is None:
            folder = self.folder / LEXICAL_DIR
            if folder.exists():
                lex = LexicalIndex.load(folder)
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
        """The entities of this index that a query names (what ``retrieve`` seeds with the default preset)."""
        return self.linker.link(text)

    def _entity_seeds(
        self, text: str, chunk_cos: np.ndarray, mask: np.ndarray | None, p: Preset
    ) -> tuple[np.ndarray | None, list[str]]:
        """Seed mass for the entities the query names: one equal share per entity.

        A share ``entity_chunk_share`` of each entity's mass goes to the chunks it is mentioned in,
        weighted by softmax(cosine / ``entity_chunk_temperature``) of chunk and query, so the
        rest of the question picks among an entity's passages; the remainder sits on the entity node.
        """
        keys = list(dict.fromkeys(k for link in self.link(text) for k in link.keys))
        if not keys:
            return None, []
        assert self._entity_node is not None
        adj = self.graph.adjacency
        seeds = np.zeros(self.graph.n, dtype=np.float64)
        per = 1.0 / len(keys)
        for key in keys:
            node = self._entity_node[key]
            nbrs = adj.indices[adj.indptr[node] : adj.indptr[node + 1]]
            nbrs = nbrs[nbrs < self.n_chunks]
            if mask is not None:
                nbrs = nbrs[mask[nbrs]]
            cos = chunk_cos[nbrs] if nbrs.size else nbrs
            ok = np.isfinite(cos)
            share = p.entity_chunk_share if ok.any() else 0.0
            seeds[node] += per * (1.0 - share)
            if share > 0:
                nbrs, cos = nbrs[ok], cos[ok].astype(np.float64)
                w = np.exp((cos - cos.max()) / p.entity_chunk_temperature)
                np.add.at(seeds, nbrs, per * share * w / w.sum())
        return seeds, keys

    def _image_query_vector(self, image: Path) -> np.ndarray:
        from mmkg.encoders import ImageInput

        texts: list[str] = []
        if self.manifest.encoder.backend == "text":
            # The text encoder sees images through what can be read from them, as at indexing time.
            from mmkg.vision.ocr import OcrEngine

            texts = [line.text for line in OcrEngine().read_path(image)]
        return self._encoder().encode_images([ImageInput(path=image, pil=None, texts=texts)])[0]

    def same_pictures(self, image: str | Path, max_bits: int | None = None) -> list[tuple[str, int]]:
        """Pictures of this index that are the query picture: ``(image_id, differing hash bits)``, closest first.

        The same bytes (the image id is their hash) is distance 0; otherwise the 64-bit perceptual
        hashes (``mmkg.ingest.images.perceptual_hash``) may differ in at most ``max_bits`` bits, which
        finds the picture re-encoded, resized, or embedded in a PDF.
        """
        from PIL import Image

        from mmkg.ids import bytes_id
        from mmkg.ingest.images import SAME_PICTURE_MAX_BITS, perceptual_hash

        max_bits = SAME_PICTURE_MAX_BITS if max_bits is None else max_bits
        data = Path(image).read_bytes()
        exact = bytes_id(data)
        out: dict[str, int] = {}
        if exact in self._image_row:
            out[exact] = 0
        if "phash" in self.images.columns:
            with Image.open(io.BytesIO(data)) as img:
                query = perceptual_hash(img)
            if query:
                hashes = self.images["phash"].to_list()
                known = np.array([int(h, 16) if h else 0 for h in hashes], dtype=np.uint64)
                dist = np.bitwise_count(known ^ np.uint64(int(query, 16))).astype(np.int64)
                dist[[not h for h in hashes]] = 64
                for j in np.flatnonzero(dist <= max_bits):
                    iid = self.images["image_id"][int(j)]
                    out[iid] = min(out.get(iid, 64), int(dist[j]))
        return sorted(out.items(), key=lambda kv: (kv[1], kv[0]))

    def _same_picture_seeds(
        self, matches: list[tuple[str, int]], masks: dict[str, np.ndarray | None]
    ) -> np.ndarray | None:
        """Seed mass on the pictures that are the query picture and on every chunk that shows them.

        Each matched picture gets a share 1 - bits/64 (the same bytes: 1), split equally between its
        image node and the chunks linked to it (within the filters), so every place that shows the
        picture starts ahead of places that only look like it.
        """
        if not matches:
            return None
        adj = self.graph.adjacency
        seeds = np.zeros(self.graph.n, dtype=np.float64)
        for image_id, bits in matches:
            row = self.positions["images"].get(image_id)
            if row is None or (masks["images"] is not None and not masks["images"][row]):
                continue
            node = self.n_chunks + row
            nbrs = adj.indices[adj.indptr[node] : adj.indptr[node + 1]]
            nbrs = nbrs[nbrs < self.n_chunks]
            if masks["chunks"] is not None:
                nbrs = nbrs[masks["chunks"][nbrs]]
            share = (1.0 - bits / 64.0) / (1 + nbrs.size)
            seeds[node] += share
            seeds[nbrs] += share
        return seeds if seeds.sum() > 0 else None

    def retrieve(
        self,
        text: str | None = None,
        image: str | Path | None = None,
        k: int = 10,
        preset: str | Preset = "default",
        filters: dict[str, str | Sequence[str]] | None = None,
        engine: str | None = None,
        **overrides: Any,
    ) -> RetrievalResult:
        """Top-k chunks for a text and/or image query, with the evidence that put them there."""

        if text is None and image is None:
            raise ValueError("retrieve() needs text=..., image=... or both")
        p = preset if isinstance(preset, Preset) else get_preset(preset, **overrides)
        if isinstance(preset, Preset) and overrides:
            p = preset.override(**overrides)
        with self._blas.limit(limits=1, user_api="blas"):
            return self._retrieve(text, image, k, preset, p, filters, engine)

    def self_check(self, probes: int = 3, k: int = 5) -> list[str]:
        """What is wrong with this version as a reader sees it (empty: nothing). Needs no encoder.

        Row counts per table and node counts per kind must be what the manifest says; then the
        longest chunk of up to ``probes`` partitions, queried with its own stored vector through the
        whole pipeline (dense seeds, propagation, evidence), must come back in the top ``k``.
        """
        from mmkg.validation import smoke_probes

        problems = []
        counts = self.manifest.counts
        for name in GRANULARITIES:
            if name in counts and len(self.positions[name]) != counts[name]:
                problems.append(f"{name}: {len(self.positions[name]):,} rows, the manifest says {counts[name]:,}")
        for key, value in self.graph.counts().items():
            if key in counts and counts[key] != value:
                problems.append(f"graph {key}: {value:,}, the manifest says {counts[key]:,}")
        chunk_ids = smoke_probes(self.chunks).head(probes)["chunk_id"].to_list()
        with self._blas.limit(limits=1, user_api="blas"):
            for cid in chunk_ids:
                q = self._stored_vector("chunks", cid)
                res = self._retrieve(None, None, k, "self_check", get_preset("default"), None, None, qt=q)
                if cid not in [c.chunk_id for c in res.chunks]:
                    problems.append(f"chunk {cid} is not in the top {k} for its own vector")
        return problems

    def _stored_vector(self, name: str, unit_id: str) -> np.ndarray:
        if name not in self.tables:
            return self.vectors[name][self.positions[name][unit_id]]
        if not _HEX_ID.match(unit_id):
            raise ValueError(f"{unit_id!r} is not a content hash")
        hit = self.tables[name].search().where(f"id = '{unit_id}'").select(["vector"]).limit(1).to_arrow()
        return np.asarray(hit["vector"][0].as_py(), dtype=np.float32)

    def _retrieve(
        self,
        text: str | None,
        image: str | Path | None,
        k: int,
        preset: str | Preset,
        p: Preset,
        filters: dict[str, str | Sequence[str]] | None,
        engine: str | None,
        qt: np.ndarray | None = None,
    ) -> RetrievalResult:
        """The MG2-RAG pipeline; ``qt`` is an already-encoded text-side query vector (then ``text`` may be None)."""
        from mmkg.ppr import personalized_pagerank

        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        masks = self._masks(filters)
        if masks["chunks"] is not None and not masks["chunks"].any():
            # the filters allow no document: an empty answer, not an error
            return RetrievalResult(self.version, preset if isinstance(preset, str) else "custom", text,
                                   str(image) if image is not None else None, [], 0, {"total": 0.0})  # fmt: skip
        u_t = u_v = None
        sent_scores = np.zeros(len(self.m_smi.row_ids), np.float32)
        chunk_cos = np.full(self.n_chunks, -np.inf, np.float32)
        if qt is None and text is not None:
            qt = self._encoder().encode_text([text])[0]
            timings["encode_text"] = (time.perf_counter() - t0) * 1e3
        if qt is not None:
            g_t, raw = self._granular(qt, p.text_topk, masks)
            sent_scores = _finite_or_zero(raw["sentences"])
            chunk_cos = raw["chunks"]
            u_t = activation(g_t, self.m_smi.matrix, self.m_omi.matrix, p.omega_c, p.omega_i)
        matched: list[tuple[str, int]] = []
        if image is not None:
            t1 = time.perf_counter()
            qv = self._image_query_vector(Path(image))
            timings["encode_image"] = (time.perf_counter() - t1) * 1e3
            g_v, raw_v = self._granular(qv, p.visual_topk, masks)
            sent_scores = np.maximum(sent_scores, _finite_or_zero(raw_v["sentences"]))
            u_v = activation(g_v, self.m_smi.matrix, self.m_omi.matrix, p.omega_c, p.omega_i)
            if p.same_picture_weight > 0:
                t1 = time.perf_counter()
                matched = self.same_pictures(image)
                timings["same_picture"] = (time.perf_counter() - t1) * 1e3
        entity_seeds, linked = None, []
        if text is not None and p.entity_seed_weight > 0:
            t1 = time.perf_counter()
            entity_seeds, linked = self._entity_seeds(text, chunk_cos, masks["chunks"], p)
            timings["link"] = (time.perf_counter() - t1) * 1e3
        lexical = None
        if text is not None and p.lexical_seed_weight > 0:
            t1 = time.perf_counter()
            lexical = np.zeros(self.graph.n, dtype=np.float32)
            lexical[: self.n_chunks] = keep_top_k(self.lexical_scores(text), p.lexical_top_k, masks["chunks"])
            timings["bm25"] = (time.perf_counter() - t1) * 1e3
        picture = self._same_picture_seeds(matched, masks)
        r0 = seed_distribution(u_t, u_v, p, entity_seeds, lexical, picture)
        t2 = time.perf_counter()
        r = personalized_pagerank(self.ppr_graph, r0, p.alpha, p.eps, engine=self._engine(engine, p.alpha))
        timings["ppr"] = (time.perf_counter() - t2) * 1e3
        chunk_scores = r[: self.n_chunks].copy()
        if masks["chunks"] is not None:
            chunk_scores[~masks["chunks"]] = -np.inf
        top = np.argsort(-chunk_scores, kind="stable")[:k]
        top = [int(i) for i in top if np.isfinite(chunk_scores[i])]
        chunks = self._evidence(top, chunk_scores, r, sent_scores, {iid for iid, _ in matched})
        timings["total"] = (time.perf_counter() - t0) * 1e3
        return RetrievalResult(
            version=self.version,
            preset=preset if isinstance(preset, str) else "custom",
            query_text=text,
            query_image=str(image) if image is not None else None,
            chunks=chunks,
            seeds=int((r0 > 0).sum()),
            timings_ms={k2: round(v, 2) for k2, v in timings.items()},
            linked_entities=linked,
            matched_images=[iid for iid, _ in matched],
        )

    def dense(
        self, text: str, k: int = 10, level: str = "chunks", filters: dict[str, str | Sequence[str]] | None = None
    ) -> list[tuple[str, float]]:
        """Plain dense search at one granularity, no graph: the baseline the graph retrieval is measured against.

        Returns ``(id, cosine)`` best first, over the same vectors and filters ``retrieve`` uses.
        """
        if level not in GRANULARITIES:
            raise ValueError(f"unknown level {level!r}; choose one of {list(GRANULARITIES)}")
        with self._blas.limit(limits=1, user_api="blas"):
            mask = self._masks(filters)[level]
            q = self._encoder().encode_text([text])[0]
            scores = self._scores(level, q, k, mask)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        top = [int(i) for i in np.argsort(-scores, kind="stable")[:k] if np.isfinite(scores[i])]
        ids = self.meta[level]["id"]
        return [(ids[i], float(scores[i])) for i in top]

    def _lookups(self) -> dict[str, dict]:
        """Row lookups for evidence, built once per reader (retrieve stays in the low milliseconds)."""
        if self._lookup is None:
            sent_pos = {s: i for i, s in enumerate(self.m_smi.row_ids.tolist())}
            by_chunk: dict[str, list[tuple[int, str, str]]] = {}
            for sid, cid, text in self.sentences.select("sentence_id", "chunk_id", "text").iter_rows():
                by_chunk.setdefault(cid, []).append((sent_pos[sid], sid, text))
            object_rows = {o["object_id"]: o for o in self.objects.iter_rows(named=True)}
            objects: dict[str, list[dict]] = {}
            for oid, cid in self.object_occurrences.select("object_id", "chunk_id").iter_rows():
                if oid in object_rows:
                    objects.setdefault(cid, []).append(object_rows[oid])
            docs = {d["doc_id"]: d for d in self.documents.iter_rows(named=True)}
            occurrences: dict[str, list[ImageOccurrence]] = {}
            # (image, document) -> where that document shows it, for the ImageHit of a chunk of that document
            shown_as: dict[tuple[str, str], str] = {}
            occ = self.image_occurrences
            order = [c for c in ("partition", "doc_id", "occurrence") if c in occ.columns]
            for o in occ.sort(order).iter_rows(named=True):
                d = docs.get(o["doc_id"], {})
                occurrences.setdefault(o["image_id"], []).append(
                    ImageOccurrence(
                        doc_id=o["doc_id"], partition=o["partition"], title=d.get("title", ""),
                        source_path=d.get("source_path", ""), source=o.get("source") or "",
                        page=o.get("page"), alt_text=o.get("alt_text") or "",
                    )
                )  # fmt: skip
                shown_as.setdefault((o["image_id"], o["doc_id"]), o.get("source") or "")
            self._lookup = {
                "chunks": {c["chunk_id"]: c for c in self.chunks.iter_rows(named=True)},
                "sentences": by_chunk,
                "images": {i["image_id"]: i for i in self.images.iter_rows(named=True)},
                "image_node": {key: self.n_chunks + j for j, key in enumerate(self.meta["images"]["id"].to_list())},
                "objects": objects,
                "occurrences": occurrences,
                "shown_as": shown_as,
            }
        return self._lookup

    def _evidence(
        self,
        top: list[int],
        chunk_scores: np.ndarray,
        r: np.ndarray,
        sent_scores: np.ndarray,
        same_as_query: set[str] | None = None,
    ) -> list[RetrievedChunk]:
        look = self._lookups()
        all_ids = self.meta["chunks"]["id"]
        same_as_query = same_as_query or set()
        out = []
        for rank, i in enumerate(top, start=1):
            cid = all_ids[i]
            c = look["chunks"][cid]
            hits = sorted(
                (SentenceHit(sid, text, float(sent_scores[pos])) for pos, sid, text in look["sentences"].get(cid, [])),
                key=lambda h: -h.score,
            )[:3]
            imgs = [
                ImageHit(
                    iid, look["shown_as"].get((iid, c["doc_id"])) or m["source"], m["blob_path"],
                    float(r[look["image_node"][iid]]), look["occurrences"].get(iid, []), iid in same_as_query,
                )
                for iid in dict.fromkeys(c["image_ids"] or [])
                if (m := look["images"].get(iid)) is not None
            ]  # fmt: skip
            objs = [
                ObjectHit(o["object_id"], o["image_id"], o["entity_name"], o["backend"], float(o["score"]))
                for o in look["objects"].get(cid, [])
            ]
            out.append(
                RetrievedChunk(
                    rank=rank, chunk_id=cid, doc_id=c["doc_id"], partition=c["partition"], title=c["title"],
                    source_path=c["source_path"], page=c["page"], text=c["text"], score=float(chunk_scores[i]),
                    sentences=hits, images=imgs, objects=objs,
                )
            )  # fmt: skip
        return out
