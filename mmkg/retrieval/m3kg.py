"""M3KG-RAG retrieval: modality-wise retrieval lifted to triples, then GRASP pruning.

``../shared/seeds/M3KG-RAG.txt``, section 3.2.

The graph is the index's: triples (``relations``) with the sentence and chunk they were stated in,
and the audio-visual items they link to (``L`` of Eq. 1): the pictures and video frames shown with
their chunk (frames attach to the transcript spoken at their time, ``mmkg.chunking``), and the
pictures in which one of their entities was grounded (``objects``) or linked (``cross_modal_links``).

1. **Modality-wise retrieval.** Each query modality searches the items of its own modality, which
   sidesteps the modality gap of a shared space: the query's pictures (an image, or ``F`` frames
   sampled uniformly from a video) search the index's pictures, the query's text (typed, or
   transcribed from its audio when an ASR model is configured) searches sentences. The top
   ``item_top_k`` items per modality are kept when their L2 distance to the query is at most
   ``τ`` (on unit vectors, ``d = sqrt(2 - 2 cos)``); each frame keeps its best-matching item.
2. **Lift (Eq. 3).** ``G_init`` is every triple linked to a kept item; ``hops`` expands it through
   shared entities into the multi-hop subgraph (each hop halves the inherited score).
3. **GRASP.** Visual grounding: the configured grounding backends (``mmkg.vision``; OCR by default,
   ultralytics detectors when given a checkpoint) run on the query's frames with the subgraph's
   entities as prompts; an entity's presence is its best confidence over the frames (Eq. 4); a
   triple's is the sum over head and tail, and triples below ``η_v`` are pruned. Audio grounding
   (a text-to-audio grounding model, Eq. 5) has no backend here and is skipped with the reason in
   ``notes``. The LLM keep/drop mask (Table 12) runs when ``filter_backend`` names a generation backend;
   it keeps everything when the answer cannot be read (the paper's conservative policy).
4. **Result.** The kept triples (best first) as relations, and the chunks that state them or show
   the kept items, ranked by their best triple or item score. Time-based media give time spans:
   ``result.media`` lists the frames and transcript chunks the result points at.

Departures, each a parameter: ``fill_dense`` tops the chunk list up by dense similarity (the paper
passes triples only); τ is set on this index's encoder space, not copied from the paper's
(its values, 0.15–4.5, are L2 distances in InternVL2/CLAP spaces).
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import polars as pl

from mmkg.index.derived import derived
from mmkg.retrieval import evidence as ev
from mmkg.retrieval.base import Filters, Params, PresetStrategy, Query, param
from mmkg.retrieval.query_media import has_audio, ocr_engine, shared, transcript, video_frames
from mmkg.retrieval.results import EntityHit, MediaSpan, RetrievalResult, chunk_spans

if TYPE_CHECKING:
    from mmkg.index.reader import Index


def distance(cos: np.ndarray | float) -> np.ndarray | float:
    """L2 distance of unit vectors from their cosine (the paper thresholds L2 distances)."""
    return np.sqrt(np.maximum(0.0, 2.0 - 2.0 * np.asarray(cos)))


@dataclass(frozen=True)
class M3KGParams(Params):
    """M3KG-RAG parameters; the paper's k = 5, F = 4 and VCGPT's η_v = 1.5."""

    item_top_k: int = param(5, "k: nearest items kept per query modality (and per query frame)")
    tau_visual: float = param(1.0, "τ for pictures: largest L2 distance (unit vectors) of a kept item to the query")
    tau_text: float = param(1.0, "τ for sentences: largest L2 distance of a kept item to the query text")
    hops: int = param(1, "expand the lifted triples this many hops through shared entities (multi-hop subgraph)")
    max_triples: int = param(200, "largest subgraph kept before GRASP (best first)")
    query_frames: int = param(4, "F: frames sampled uniformly from a video query")
    eta_v: float = param(1.5, "η_v: a triple is kept when its head + tail visual presence reaches this")
    grounders: str = param("ocr", "visual grounding backends for GRASP: ocr, ultralytics (comma-separated)")
    ultralytics_model: str = param("", "checkpoint of the ultralytics grounding backend (when listed)", server="always")
    filter_backend: str | None = param(
        None, "generation backend of the LLM keep/drop mask (none: skipped)", server="always"
    )
    filter_model: str | None = param(None, "model name or path for filter_backend", server="always")
    filter_base_url: str | None = param(None, "endpoint for filter_backend openai", server="always")
    asr_model: str = param("", "Whisper model that transcribes audio queries (empty: MMKG_ASR_MODEL)", server="always")
    fill_dense: bool = param(False, "top the chunks up to k by dense similarity (the paper passes triples only)")

    def __post_init__(self) -> None:
        for name in ("item_top_k", "hops", "max_triples", "query_frames"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative; got {getattr(self, name)}")
        for name in ("tau_visual", "tau_text"):
            if not 0.0 <= getattr(self, name) <= 2.0:
                value = getattr(self, name)
                raise ValueError(f"{name} must be within [0, 2] (L2 distance of unit vectors); got {value}")
        unknown = {g.strip() for g in self.grounders.split(",") if g.strip()} - {"ocr", "ultralytics"}
        if unknown:
            raise ValueError(f"unknown grounding backend(s) {sorted(unknown)}; choose from ocr, ultralytics")


#: ``paper``: the method as published (k 5, F 4, η_v 1.5, triples only); ``default`` (ours): η_v 0.5, since the OCR
#: grounder sees printed names and rarely both ends of a triple, and the chunk list topped up to k
PRESETS: dict[str, M3KGParams] = {
    "paper": M3KGParams(),
    "default": M3KGParams(eta_v=0.5, fill_dense=True),
}


@dataclass
class Triple:
    row: dict
    score: float  # retrieval score: the best item that lifted it (decayed by hop)
    hop: int
    presence: float | None = None  # GRASP visual presence (head + tail), when grounded


class M3KG(PresetStrategy):
    """M3KG-RAG: modality-wise retrieval of items, lifted to triples, pruned by GRASP."""

    name: ClassVar[str] = "m3kg"
    summary: ClassVar[str] = (
        "M3KG-RAG: query pictures/video frames search pictures and query text searches sentences within a distance "
        "τ, hits are lifted to their linked triples, and GRASP prunes triples whose entities the query's frames do "
        "not show"
    )
    modalities: ClassVar[frozenset[str]] = frozenset({"text", "image", "video", "audio"})
    presets: ClassVar[dict[str, M3KGParams]] = PRESETS
    default_preset: ClassVar[str] = "default"

    params: M3KGParams

    def retrieve(self, index: Index, query: Query, k: int, filters: Filters = None) -> RetrievalResult:
        p = self.params
        t0 = time.perf_counter()
        result = self.new_result(index, query)
        allowed = index.allowed_docs(filters)
        masks = index.masks(filters)
        timings = result.timings_ms
        with tempfile.TemporaryDirectory(prefix="mmkg-m3kg-") as tmp:
            frames = self._query_frames(query, Path(tmp), result)
            text = self._query_text(query, result)
            timings["query_ms"] = (time.perf_counter() - t0) * 1000

            # 1. modality-wise retrieval
            t1 = time.perf_counter()
            picture_items = self._picture_items(index, frames, masks["images"]) if frames else {}
            sentence_items = self._sentence_items(index, text, masks["sentences"]) if text else {}
            result.seeds = len(picture_items) + len(sentence_items)
            timings["items_ms"] = (time.perf_counter() - t1) * 1000

            # 2. lift to triples (Eq. 3) and expand
            t2 = time.perf_counter()
            links = item_links(index)
            triples = self._lift(index, links, picture_items, sentence_items, allowed)
            n_init = sum(1 for t in triples.values() if t.hop == 0)
            timings["lift_ms"] = (time.perf_counter() - t2) * 1000

            # 3. GRASP
            t3 = time.perf_counter()
            kept = self._grasp(index, triples, frames, text, result)
            timings["grasp_ms"] = (time.perf_counter() - t3) * 1000

        # 4. chunks and time spans
        chunk_best: dict[str, float] = {}
        for t in kept:
            cid = t.row["chunk_id"]
            chunk_best[cid] = max(chunk_best.get(cid, -math.inf), t.score + (t.presence or 0.0) / 2)
        for iid, score in picture_items.items():
            for cid in links.chunks_of_image.get(iid, ()):
                chunk_best[cid] = max(chunk_best.get(cid, -math.inf), score)
        for sid, score in sentence_items.items():
            cid = links.chunk_of_sentence.get(sid)
            if cid is not None:
                chunk_best[cid] = max(chunk_best.get(cid, -math.inf), score)
        pos = index.positions["chunks"]
        if allowed is not None:  # a picture shared with documents the filters leave out brings only allowed chunks
            chunk_best = {
                c: v for c, v in chunk_best.items() if (ev.chunk_record(index, c) or {}).get("doc_id") in allowed
            }
        ranked = sorted((c for c in chunk_best if c in pos), key=lambda c: (-chunk_best[c], pos[c]))[:k]
        chunk_scores = np.full(index.n_chunks, -np.inf, dtype=np.float32)
        for c in ranked:
            chunk_scores[pos[c]] = chunk_best[c]
        rows = [pos[c] for c in ranked]
        sent_scores = None
        if text:
            q = index.encode_text(text)
            sent_scores = index.dense_scores("sentences", q, max(50, k * 5), masks["sentences"])
            if p.fill_dense and len(rows) < k:
                dense = index.dense_scores("chunks", q, k * 4, masks["chunks"])
                if masks["chunks"] is not None:
                    dense = np.where(masks["chunks"], dense, -np.inf)
                have = set(rows)
                # filled chunks rank below the graph's: their scores are capped under its lowest
                floor = min((float(chunk_scores[r]) for r in rows), default=math.inf) - 1e-3
                for i in np.argsort(-dense, kind="stable"):
                    if len(rows) >= k or not np.isfinite(dense[i]):
                        break
                    if int(i) not in have:
                        rows.append(int(i))
                        chunk_scores[int(i)] = min(float(dense[i]), floor)
                result.notes.append(f"topped up to {len(rows)} chunks by dense similarity (fill_dense)")
        result.chunks = ev.chunks(index, rows, chunk_scores, None, sent_scores)
        result.relations = [
            ev.relation_hit(t.row, t.score + (t.presence or 0.0), ev.sentence_text(index, t.row["sentence_id"]), t.hop)
            for t in kept
        ]
        result.entities = self._entities(index, kept, {c.chunk_id for c in result.chunks})
        result.media = self._media(index, picture_items, result, allowed)
        result.notes.insert(
            0,
            f"modality-wise retrieval: {len(picture_items)} picture item(s) within τ={p.tau_visual}, "
            f"{len(sentence_items)} sentence item(s) within τ={p.tau_text}; G_init {n_init} triple(s), "
            f"{len(triples)} after {p.hops} hop(s); {len(kept)} kept by GRASP",
        )
        timings["total"] = (time.perf_counter() - t0) * 1000
        return result

    # -- the query -----------------------------------------------------------------------------

    def _query_frames(self, query: Query, tmp: Path, result: RetrievalResult) -> list[Path]:
        """The query's pictures as files: the image, or F frames sampled uniformly from the video."""
        out: list[Path] = []
        if query.image is not None:
            out.append(query.image)
        if query.video is not None:
            sampled = video_frames(query.video, self.params.query_frames, tmp)
            out.extend(path for _, path in sampled)
            result.notes.append(f"video query: {len(sampled)} frame(s) at " + ", ".join(f"{t:.1f}" for t, _ in sampled)
                                + " s")  # fmt: skip
        return out

    def _query_text(self, query: Query, result: RetrievalResult) -> str | None:
        """The query's text: typed, plus what its audio (or the video's sound track) says when ASR is configured."""
        parts = [query.text] if query.text and query.text.strip() else []
        media = query.audio or query.video
        if media is not None:
            from mmkg.ingest.asr import load_transcriber
            from mmkg.settings import get_settings

            model = self.params.asr_model or get_settings().asr_model
            sound = query.audio is not None or has_audio(media)
            what = "audio" if query.audio is not None else "video"
            if sound and load_transcriber(model) is None:
                result.notes.append(
                    f"the {what} query's sound is not searched: no ASR model (asr_model or MMKG_ASR_MODEL is off, or "
                    "the Whisper base wheels are not installed)"
                )
            elif sound:
                heard = transcript(media, model)
                if heard:
                    parts.append(heard)
                    result.notes.append(f"the query's audio says: {heard[:200]!r}")
            if sound:
                result.notes.append(
                    "audio grounding (text-to-audio grounding, Eq. 5) skipped: no such backend is configured"
                )
        if query.audio is not None and not parts:
            raise ValueError(
                f"audio query {query.audio}: nothing to search with (no ASR model to transcribe it; set asr_model or "
                "MMKG_ASR_MODEL to a local Whisper model)"
            )
        return " ".join(parts) if parts else None

    # -- 1. modality-wise retrieval ------------------------------------------------------------

    def _picture_items(self, index: Index, frames: list[Path], mask: np.ndarray | None) -> dict[str, float]:
        """Pictures within τ of a query frame, top k per frame; each item keeps its best cosine."""
        p = self.params
        if not index.n_images or not p.item_top_k:
            return {}
        ids = index.meta["images"]["id"]
        items: dict[str, float] = {}
        for frame in frames:
            q = index.encode_image(frame, self._ocr_texts(index, frame))
            scores = index.dense_scores("images", q, p.item_top_k, mask)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            for i in np.argsort(-scores, kind="stable")[: p.item_top_k]:
                cos = float(scores[i])
                if np.isfinite(cos) and distance(cos) <= p.tau_visual:
                    items[ids[int(i)]] = max(items.get(ids[int(i)], -1.0), cos)
        return items

    def _ocr_texts(self, index: Index, frame: Path) -> list[str] | None:
        """What the text encoder reads in a query frame, through the OCR grounder GRASP uses (read once)."""
        if index.manifest.encoder.backend != "text":
            return None
        from mmkg.ids import bytes_id
        from mmkg.vision.base import GroundingTask
        from mmkg.vision.ocr import OcrGrounder

        ocr = shared(("ocr-grounder",), lambda: OcrGrounder(ocr_engine()))
        return [line.text for line in ocr.lines_for(GroundingTask(bytes_id(frame.read_bytes()), frame, []))]

    def _sentence_items(self, index: Index, text: str, mask: np.ndarray | None) -> dict[str, float]:
        p = self.params
        if not p.item_top_k:
            return {}
        q = index.encode_text(text)
        scores = index.dense_scores("sentences", q, p.item_top_k, mask)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        ids = index.meta["sentences"]["id"]
        return {
            ids[int(i)]: float(scores[i])
            for i in np.argsort(-scores, kind="stable")[: p.item_top_k]
            if np.isfinite(scores[i]) and distance(float(scores[i])) <= p.tau_text
        }

    # -- 2. lift and expand ------------------------------------------------------------------------

    def _lift(
        self,
        index: Index,
        links: ItemLinks,
        pictures: dict[str, float],
        sentences: dict[str, float],
        allowed: set[str] | None,
    ) -> dict[str, Triple]:
        rel = links.relations
        out: dict[str, Triple] = {}

        def add(rid: str, score: float, hop: int) -> None:
            row = rel[rid]
            if allowed is not None and row["doc_id"] not in allowed:
                return
            t = out.get(rid)
            if t is None or score > t.score:
                out[rid] = Triple(row, score, min(hop, t.hop) if t is not None else hop)

        for iid, score in pictures.items():
            for rid in links.triples_of_image.get(iid, ()):
                add(rid, score, 0)
        for sid, score in sentences.items():
            for rid in links.triples_of_sentence.get(sid, ()):
                add(rid, score, 0)
        frontier = dict(out)
        for hop in range(1, self.params.hops + 1):
            entities: dict[str, float] = {}
            for t in frontier.values():
                for key in (t.row["subject_key"], t.row["object_key"]):
                    if key:
                        entities[key] = max(entities.get(key, -1.0), t.score)
            nxt: dict[str, Triple] = {}
            for key, score in entities.items():
                for rid in links.triples_of_entity.get(key, ()):
                    if rid not in out:
                        add(rid, score * 0.5**hop, hop)
                        if rid in out:
                            nxt[rid] = out[rid]
            frontier = nxt
            if not frontier:
                break
        best = sorted(out.values(), key=lambda t: (-t.score, t.hop, t.row["relation_id"]))
        return {t.row["relation_id"]: t for t in best[: self.params.max_triples]}

    # -- 3. GRASP ------------------------------------------------------------------------------------

    def _grasp(
        self, index: Index, triples: dict[str, Triple], frames: list[Path], text: str | None, result: RetrievalResult
    ) -> list[Triple]:
        p = self.params
        ordered = sorted(triples.values(), key=lambda t: (-t.score, t.hop, t.row["relation_id"]))
        if not frames:
            result.notes.append("GRASP visual grounding skipped: the query has no picture or video")
        elif ordered:
            presence = self._presence(index, ordered, frames, result)
            for t in ordered:
                head = presence.get(_entity_id(t.row, "subject"), 0.0)
                tail = presence.get(_entity_id(t.row, "object"), 0.0)
                t.presence = head + tail
            before = len(ordered)
            ordered = [t for t in ordered if (t.presence or 0.0) >= p.eta_v]
            result.notes.append(f"GRASP visual grounding: {before - len(ordered)} of {before} triple(s) below "
                                f"η_v={p.eta_v} pruned")  # fmt: skip
            ordered.sort(key=lambda t: (-(t.score + (t.presence or 0.0)), t.hop, t.row["relation_id"]))
        if p.filter_backend and ordered:
            ordered = self._llm_mask(ordered, text or "", result)
        elif not p.filter_backend:
            result.notes.append("GRASP LLM keep/drop mask skipped: no generation backend configured (filter_backend)")
        return ordered

    def _presence(self, index: Index, triples: list[Triple], frames: list[Path], result: RetrievalResult) -> dict:
        """s_v(e|q) = max over the query frames of the grounding confidence of e (Eq. 4), per entity."""
        from mmkg.ids import bytes_id
        from mmkg.vision.base import EntityPrompt, GroundingTask

        prompts: dict[str, EntityPrompt] = {}
        names = ev.entity_names(index)
        for t in triples:
            for side in ("subject", "object"):
                eid = _entity_id(t.row, side)
                if eid not in prompts:
                    key = t.row[f"{side}_key"]
                    name, label = names.get(key, (t.row[side], "")) if key else (t.row[side], "")
                    prompts[eid] = EntityPrompt(eid, name or t.row[side], label)
        # content ids: the OCR grounder remembers lines by image id, across queries
        tasks = [GroundingTask(bytes_id(frame.read_bytes()), frame, list(prompts.values())) for frame in frames]
        presence: dict[str, float] = defaultdict(float)
        for grounder in self._grounders(index):
            for outcome in grounder.ground(tasks, 0.0):
                if outcome.error:
                    result.notes.append(f"GRASP: {grounder.name} could not read a query frame: {outcome.error}")
                for det in outcome.detections:
                    presence[det.entity_key] = max(presence[det.entity_key], float(det.score))
        return presence

    def _grounders(self, index: Index) -> list[Any]:
        out: list[Any] = []
        for name in [g.strip() for g in self.params.grounders.split(",") if g.strip()]:
            if name == "ocr":
                from mmkg.vision.ocr import OcrGrounder

                out.append(shared(("ocr-grounder",), lambda: OcrGrounder(ocr_engine())))
            elif name == "ultralytics":
                if not self.params.ultralytics_model:
                    raise ValueError("grounder ultralytics needs ultralytics_model: a local .pt checkpoint")
                from mmkg.vision.detector import UltralyticsGrounder

                model = self.params.ultralytics_model
                out.append(shared(("ultralytics", model), lambda m=model: UltralyticsGrounder(m)))
        return out

    def _llm_mask(self, triples: list[Triple], question: str, result: RetrievalResult) -> list[Triple]:
        """Table 12's selector: the model lists the triples to keep; unreadable answers keep all (conservative)."""
        from mmkg.llm import PROMPTS_DIR, GenerationError, GenerationRequest, get_llm, load_template

        p = self.params
        backend = p.filter_backend or ""
        options = {"base_url": p.filter_base_url} if p.filter_base_url else {}
        template = load_template(PROMPTS_DIR / "steps" / "m3kg_grasp_filter.txt")
        numbered = "\n".join(
            f"[{i}] {t.row['subject']} | {t.row['predicate']} | {t.row['object']}" for i, t in enumerate(triples)
        )
        system, user = template.render(query=question, triplets=numbered)
        try:
            key = ("llm", backend, p.filter_model, p.filter_base_url)
            generator = shared(key, lambda: get_llm(backend, p.filter_model, **options))
            answer = generator.generate(GenerationRequest(system, user, question, max_tokens=256)).text
        except (GenerationError, OSError, ValueError) as exc:
            result.notes.append(f"GRASP LLM mask failed ({exc}); all {len(triples)} triple(s) kept")
            return triples
        keep = {int(m) for m in re.findall(r"\d+", answer) if int(m) < len(triples)}
        if not keep and "none" not in answer.lower():
            result.notes.append(f"GRASP LLM mask: no triple index in the answer {answer[:80]!r}; all kept")
            return triples
        result.notes.append(f"GRASP LLM mask ({backend}): kept {len(keep)} of {len(triples)} triple(s)")
        return [t for i, t in enumerate(triples) if i in keep]

    # -- 4. result -----------------------------------------------------------------------------------

    @staticmethod
    def _entities(index: Index, kept: list[Triple], chunk_ids: set[str]) -> list[EntityHit]:
        best: dict[str, tuple[float, int]] = {}
        for t in kept:
            for key in (t.row["subject_key"], t.row["object_key"]):
                if key and (key not in best or t.score > best[key][0]):
                    best[key] = (t.score, t.hop)
        node = index.entity_node
        out = [ev.entity_hit(index, node[key], s, chunk_ids, hop) for key, (s, hop) in best.items() if key in node]
        return sorted(out, key=lambda e: -e.score)

    @staticmethod
    def _media(
        index: Index, pictures: dict[str, float], result: RetrievalResult, allowed: set[str] | None
    ) -> list[MediaSpan]:
        """Frames the query matched and transcript chunks in the result, as (file, time span), best first."""
        spans: list[MediaSpan] = []
        occ = index.image_occurrences
        if pictures and "t_s" in occ.columns:
            docs = dict(index.documents.select("doc_id", "source_path").iter_rows())
            rows = occ.filter(pl.col("image_id").is_in(list(pictures)) & pl.col("t_s").is_not_null())
            if allowed is not None:  # the same frame in a video the filters leave out is not pointed at
                rows = rows.filter(pl.col("doc_id").is_in(list(allowed)))
            for r in rows.iter_rows(named=True):
                t = float(r["t_s"])
                spans.append(MediaSpan(r["doc_id"], docs.get(r["doc_id"], ""), t, t, pictures[r["image_id"]], "frame",
                                       image_id=r["image_id"]))  # fmt: skip
        spans += chunk_spans(result)
        return sorted(spans, key=lambda s: -s.score)


# -- item links (L of Eq. 1), built once per index version ---------------------------------------------


@dataclass
class ItemLinks:
    relations: dict[str, dict]  # relation id -> payload row
    triples_of_image: dict[str, list[str]]
    triples_of_sentence: dict[str, list[str]]
    triples_of_entity: dict[str, list[str]]
    chunks_of_image: dict[str, list[str]]
    chunk_of_sentence: dict[str, str]


def item_links(index: Index) -> ItemLinks:
    """Triples and the items they link to: pictures shown with their chunk or showing their entities, sentences
    (built once per open index)."""
    return derived(index, "m3kg.item_links", lambda: _item_links(index))


def _item_links(index: Index) -> ItemLinks:
    rel = index.payload("relations") if index.has_payload("relations") else pl.DataFrame()
    relations = {r["relation_id"]: r for r in rel.iter_rows(named=True)}
    by_chunk: dict[str, list[str]] = defaultdict(list)
    of_sentence: dict[str, list[str]] = defaultdict(list)
    of_entity: dict[str, list[str]] = defaultdict(list)
    for rid, r in relations.items():
        by_chunk[r["chunk_id"]].append(rid)
        of_sentence[r["sentence_id"]].append(rid)
        for key in {r["subject_key"], r["object_key"]} - {None, ""}:
            of_entity[key].append(rid)
    chunks_of_image: dict[str, list[str]] = defaultdict(list)
    for cid, iids in index.chunks.select("chunk_id", "image_ids").iter_rows():
        for iid in iids or []:
            chunks_of_image[iid].append(cid)
    of_image: dict[str, set[str]] = defaultdict(set)
    for iid, cids in chunks_of_image.items():
        for cid in cids:
            of_image[iid].update(by_chunk.get(cid, ()))
    # pictures in which a triple's entity was grounded (objects) or linked (cross-modal links)
    pairs = [index.objects.select("image_id", "entity_key")]
    if index.has_payload("cross_modal_links"):
        pairs.append(index.payload("cross_modal_links").select("image_id", "entity_key").drop_nulls())
    for iid, key in pl.concat(pairs).unique().iter_rows():
        of_image[iid].update(of_entity.get(key, ()))
    links = ItemLinks(
        relations=relations,
        triples_of_image={k: sorted(v) for k, v in of_image.items()},
        triples_of_sentence=dict(of_sentence),
        triples_of_entity=dict(of_entity),
        chunks_of_image=dict(chunks_of_image),
        chunk_of_sentence=dict(index.sentences.select("sentence_id", "chunk_id").iter_rows()),
    )
    return links


def _entity_id(row: dict, side: str) -> str:
    """A triple end's identity for grounding: its entity key, or its text when it is no named entity."""
    return row[f"{side}_key"] or f"text:{row[side].lower()}"
