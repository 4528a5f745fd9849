"""Cross-modal entity linking (MMGraphRAG's CMEL): image-side entities linked to the text entities around them.

``../shared/seeds/MMGraphRAG.txt``, "Cross-modal Fusion Method". For each picture a document shows:

1. **Image-side entities** from what the offline pipeline sees: OCR lines (``image_text``), detector
   class labels of grounded objects (``objects`` with a detector backend), the named entities spaCy
   finds in the caption / alt text (where the paper has an MLLM describe the picture), and one
   global entity standing for the whole picture (its caption, else its OCR text).
2. **Candidates**: the text entities of the chunk j that shows the picture and of chunks j−1 and
   j+1 of the same document, C(e) ⊆ ⋃_{j−1}^{j+1} E(T_j).
3. **Spectral clustering of the candidates** (eq. 1): A_pq = cos(v_p, v_q) · weight(r_pq), negative
   cosines clipped to 0 and A_pp = 0. The paper asks an LLM for a relation's importance; offline,
   ``relation_weight`` (2.0) applies to a pair that a triple of those chunks states, 1 otherwise.
   D_pp = Σ_q A_pq; the normalized Laplacian L = I − D^{-1/2} A D^{-1/2} (an isolated node keeps
   a zero row); Q = its m eigenvectors of smallest eigenvalue, rows scaled to unit length; DBSCAN on
   Q's rows. The paper has m "depend on the number of textual entities in context"; we use
   m = round(√n), between 1 and ``max_m``. DBSCAN's noise points become singleton clusters.
4. **Alignment**: each image entity takes the cluster whose members are most similar to it on
   average, then the member of highest cosine; the link holds when that cosine is at least
   ``link_threshold``. The paper then asks an LLM to choose within the cluster: with a generation
   backend configured, ``choose`` does (``llm_chooser``: the entity, its kind and the numbered
   cluster members in, a number out; method ``llm``); with none, or when the call fails, the argmax
   rule stands. OCR often glues words ("HUBBLESPACETELESCOPE"), which embeddings read poorly: an OCR
   line whose compact form (letters and digits, case-folded) equals a candidate's counts cosine 1
   with it, and one that contains a candidate's compact name, or is contained in it, counts 0.9 when
   the shorter of the two has 8 or more characters.
5. **The rest**: an unaligned image entity keeps a description enriched from the nearby text (the
   context entities closest to it); the global entity links to the most similar context entity at
   or above ``global_threshold``, or becomes a new entity described by the picture's caption/OCR.

Pure functions over Polars frames and NumPy; the Dagster asset ``cross_modal_links`` wraps them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from mmkg import schemas
from mmkg.vision.page_text import RENDER_ROLES

KINDS = ("ocr", "label", "caption", "global")
METHODS = ("spectral", "llm", "global", "new", "unaligned")
ALIGNED = ("spectral", "llm", "global")  # methods whose link names a text entity
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)

LINKS_SCHEMA = schemas.CROSS_MODAL_LINKS


@dataclass(frozen=True)
class CmelParams:
    link_threshold: float = 0.75  # cosine an aligned pair must reach (as R2AG's τ: variants of one name)
    global_threshold: float = 0.45  # cosine the global entity's best text entity must reach
    relation_weight: float = 2.0  # weight(r_pq) for a pair a triple states (1 without one)
    dbscan_eps: float = 0.5  # on unit-length rows of Q
    dbscan_min_samples: int = 2
    max_m: int = 8
    min_chars: int = 3  # OCR lines shorter than this, or without a letter, are not entities
    max_words: int = 8  # longer OCR lines are sentences, not entity names


@dataclass(frozen=True)
class ImageEntity:
    text: str
    kind: str
    box: tuple[float, float, float, float] | None = None


def spectral_clusters(
    vectors: np.ndarray, relation_pairs: Sequence[tuple[int, int]] = (), params: CmelParams = CmelParams()
) -> np.ndarray:
    """Cluster labels (0..c−1) of ``n`` entities from their unit embeddings and the pairs a triple relates."""
    n = len(vectors)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    a = np.clip(vectors @ vectors.T, 0.0, None)
    weight = np.ones((n, n))
    for p, q in relation_pairs:
        weight[p, q] = weight[q, p] = params.relation_weight
    a = a * weight
    np.fill_diagonal(a, 0.0)
    d = a.sum(axis=1)
    inv = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
    lap = np.eye(n) - inv[:, None] * a * inv[None, :]
    m = max(1, min(params.max_m, round(math.sqrt(n)), n))
    _, vecs = np.linalg.eigh(lap)
    q = vecs[:, :m]
    norms = np.linalg.norm(q, axis=1, keepdims=True)
    q = np.where(norms > 0, q / np.where(norms > 0, norms, 1.0), q)
    from sklearn.cluster import DBSCAN

    labels = DBSCAN(eps=params.dbscan_eps, min_samples=params.dbscan_min_samples).fit_predict(q)
    nxt = int(labels.max()) + 1 if (labels >= 0).any() else 0
    for i in np.flatnonzero(labels < 0):  # noise: each point its own cluster
        labels[i] = nxt
        nxt += 1
    return labels.astype(np.int64)


def align(
    v: np.ndarray, text_vectors: np.ndarray, labels: np.ndarray, threshold: float, cos: np.ndarray | None = None
) -> tuple[int | None, float, int, int]:
    """``(member index or None, its similarity, cluster, cluster size)`` for one image entity's unit vector.

    ``cos`` overrides the similarities to the candidates (default: cosines of ``v`` to ``text_vectors``).
    """
    if not len(text_vectors):
        return None, 0.0, -1, 0
    if cos is None:
        cos = text_vectors @ v
    best_cluster, best_mean = -1, -np.inf
    for c in np.unique(labels):
        mean = float(cos[labels == c].mean())
        if mean > best_mean:
            best_cluster, best_mean = int(c), mean
    members = np.flatnonzero(labels == best_cluster)
    top = int(members[np.argmax(cos[members])])
    if cos[top] < threshold:
        return None, float(cos[top]), best_cluster, len(members)
    return top, float(cos[top]), best_cluster, len(members)


def compact(text: str) -> str:
    """Letters and digits only, case-folded: how OCR text and an entity name are compared."""
    from mmkg.vision.ocr import normalize_text

    return "".join(c for c in normalize_text(text) if c.isalnum())


def ocr_similarity(line: str, names: Sequence[str], cos: np.ndarray) -> np.ndarray:
    """Cosines of an OCR line to candidate names, raised where the compact strings match (glued OCR words)."""
    out = cos.copy()
    c_line = compact(line)
    for i, name in enumerate(names):
        c_name = compact(name)
        if c_name and c_name == c_line:
            out[i] = 1.0
        elif min(len(c_name), len(c_line)) >= 8 and (c_name in c_line or c_line in c_name):
            out[i] = max(out[i], 0.9)
    return out


def image_entities(
    image_id: str,
    caption: str,
    ocr: pl.DataFrame,
    objects: pl.DataFrame,
    params: CmelParams = CmelParams(),
    caption_entities: Callable[[str], list[str]] | None = None,
) -> list[ImageEntity]:
    """The image-side entities of one picture: OCR lines, detector labels, caption entities, the global entity."""
    out: list[ImageEntity] = []
    seen: set[str] = set()

    def add(text: str, kind: str, box: tuple[float, float, float, float] | None = None) -> None:
        t = " ".join(text.split())
        if t and t.lower() not in seen:
            seen.add(t.lower())
            out.append(ImageEntity(t, kind, box))

    lines = ocr.filter(pl.col("image_id") == image_id).sort("line_index") if ocr.height else ocr
    for r in lines.iter_rows(named=True):
        t = r["text"].strip()
        if len(t) >= params.min_chars and _LETTER.search(t) and len(t.split()) <= params.max_words:
            add(t, "ocr", (r["x0"], r["y0"], r["x1"], r["y1"]))
    detected = (pl.col("image_id") == image_id) & (pl.col("backend") != "ocr")
    objs = objects.filter(detected) if objects.height else objects
    for r in objs.iter_rows(named=True):
        if r["label"]:
            add(r["label"], "label", (r["x0"], r["y0"], r["x1"], r["y1"]))
    if caption and caption_entities is not None:
        for name in caption_entities(caption):
            add(name, "caption")
    read = [e.text for e in out if e.kind == "ocr"]
    whole = caption or " ".join(read)[:200]
    if whole.strip():
        out.append(ImageEntity(" ".join(whole.split()), "global"))
    return out


def link_partition(
    partition: str,
    images: pl.DataFrame,
    chunks: pl.DataFrame,
    entity_mentions: pl.DataFrame,
    entities: pl.DataFrame,
    relations: pl.DataFrame,
    image_text: pl.DataFrame,
    objects: pl.DataFrame,
    encode: Callable[[list[str]], np.ndarray],
    params: CmelParams = CmelParams(),
    caption_entities: Callable[[str], list[str]] | None = None,
    choose: Callable[[str, str, list[str]], int | None] | None = None,
) -> pl.DataFrame:
    """CMEL for every picture a document of the partition shows (renders of pages and of their drawings excluded:
    their text is the page's, read as page text): one row per image entity."""
    from mmkg.ids import content_id

    names = dict(entities.select("entity_key", "name").iter_rows()) if entities.height else {}
    ents_of = (
        entity_mentions.group_by("chunk_id").agg(pl.col("entity_key").unique(maintain_order=True))
        if entity_mentions.height
        else pl.DataFrame({"chunk_id": [], "entity_key": []}, schema={"chunk_id": pl.String,
                                                                       "entity_key": pl.List(pl.String)})
    )  # fmt: skip
    chunk_ents = dict(ents_of.iter_rows())
    rel_pairs: dict[str, list[tuple[str, str]]] = {}
    for r in relations.drop_nulls(["object_key"]).iter_rows(named=True) if relations.height else ():
        rel_pairs.setdefault(r["chunk_id"], []).append((r["subject_key"], r["object_key"]))
    order = chunks.sort("doc_id", "chunk_index")
    by_doc: dict[str, list[dict]] = {}
    for c in order.iter_rows(named=True):
        by_doc.setdefault(c["doc_id"], []).append(c)
    shown = images.filter(~pl.col("role").is_in(RENDER_ROLES)).unique(["image_id", "doc_id"], keep="first",
                                                                       maintain_order=True)  # fmt: skip

    # each picture's OCR lines and objects, split once (image_entities then reads only its own rows)
    ocr_of = image_text.partition_by("image_id", as_dict=True) if image_text.height else {}
    objects_of = objects.partition_by("image_id", as_dict=True) if objects.height else {}
    jobs = []  # (image row, chunk id, context entity keys, relation pairs, image entities)
    for img in shown.iter_rows(named=True):
        doc_chunks = by_doc.get(img["doc_id"], [])
        j = next((i for i, c in enumerate(doc_chunks) if img["image_id"] in (c["image_ids"] or [])), None)
        if j is None:
            continue
        window = doc_chunks[max(0, j - 1) : j + 2]
        keys = list(dict.fromkeys(k for c in window for k in chunk_ents.get(c["chunk_id"], []) if k in names))
        pairs = [p for c in window for p in rel_pairs.get(c["chunk_id"], [])]
        caption = (img["alt_text"] or "").strip()
        iid = img["image_id"]
        ocr, objs = ocr_of.get((iid,), image_text.clear()), objects_of.get((iid,), objects.clear())
        ents = image_entities(iid, caption, ocr, objs, params, caption_entities)
        if ents:
            jobs.append((img, doc_chunks[j]["chunk_id"], keys, pairs, ents))
    texts = list(dict.fromkeys([names[k] for _, _, keys, _, _ in jobs for k in keys] +
                               [e.text for *_, ents in jobs for e in ents]))  # fmt: skip
    vec = {}
    if texts:
        mat = np.asarray(encode(texts), dtype=np.float64)
        mat /= np.clip(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12, None)
        vec = dict(zip(texts, mat, strict=True))

    rows = []
    for img, chunk_id, keys, pairs, ents in jobs:
        tv = np.stack([vec[names[k]] for k in keys]) if keys else np.zeros((0, 1))
        pos = {k: i for i, k in enumerate(keys)}
        rel = [(pos[s], pos[o]) for s, o in pairs if s in pos and o in pos and s != o]
        labels = spectral_clusters(tv, rel, params) if keys else np.zeros(0, dtype=np.int64)
        for e in ents:
            v = vec[e.text]
            key, score, cluster, size, method, desc = None, 0.0, -1, 0, "unaligned", ""
            if e.kind == "global":
                if keys:
                    cos = tv @ v
                    top = int(np.argmax(cos))
                    score = float(cos[top])
                    if score >= params.global_threshold:
                        key, method = keys[top], "global"
                if key is None:
                    method, desc = "new", f"A picture in the document: {e.text}"
            else:
                sims = tv @ v if keys else None
                if sims is not None and e.kind == "ocr":
                    sims = ocr_similarity(e.text, [names[k] for k in keys], sims)
                idx, score, cluster, size = align(v, tv, labels, params.link_threshold, sims)
                if idx is not None:
                    key, method = keys[idx], "spectral"
                if choose is not None and size:
                    members = [int(i) for i in np.flatnonzero(labels == cluster)]
                    try:
                        pick = choose(e.text, e.kind, [names[keys[i]] for i in members])
                    except Exception:  # a failed model call keeps the argmax rule's answer
                        pick = -1
                    if pick is None:
                        key, method = None, "unaligned"
                    elif 0 <= pick < len(members):
                        i = members[pick]
                        key, method, score = keys[i], "llm", float(sims[i]) if sims is not None else 0.0
                if key is None:
                    near = [names[keys[i]] for i in np.argsort(-(tv @ v))[:3]] if keys else []
                    desc = f"{e.text} ({e.kind} in a picture" + (f"; nearby: {', '.join(near)})" if near else ")")
            box = e.box or (None, None, None, None)
            rows.append({
                "link_id": content_id(img["image_id"], img["doc_id"], e.kind, e.text), "partition": partition,
                "image_id": img["image_id"], "doc_id": img["doc_id"], "chunk_id": chunk_id, "image_entity": e.text,
                "kind": e.kind, "entity_key": key, "entity_name": names.get(key) if key else None,
                "score": score, "cluster": cluster, "cluster_size": size, "method": method, "description": desc,
                "x0": box[0], "y0": box[1], "x1": box[2], "y1": box[3],
            })  # fmt: skip
    return pl.DataFrame(rows, schema=LINKS_SCHEMA) if rows else pl.DataFrame(schema=LINKS_SCHEMA)


def llm_chooser(generator: object) -> Callable[[str, str, list[str]], int | None]:
    """The alignment step through a generation backend: the model names the cluster member (or none)."""
    from mmkg.llm import PROMPTS_DIR, GenerationRequest, load_template

    template = load_template(PROMPTS_DIR / "steps" / "mmgraph_cmel_align.txt")

    def choose(entity: str, kind: str, candidates: list[str]) -> int | None:
        numbered = "\n".join(f"{i}. {name}" for i, name in enumerate(candidates, start=1))
        system, user = template.render(entity=entity, kind=kind, candidates=numbered)
        text = generator.generate(GenerationRequest(system, user, entity, max_tokens=8)).text  # type: ignore[attr-defined]
        m = re.search(r"\d+", text)
        if m is None:
            raise ValueError(f"no number in the model's answer {text!r}")
        n = int(m.group())
        return n - 1 if 1 <= n <= len(candidates) else None

    return choose
