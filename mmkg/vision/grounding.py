"""Entity-driven grounding of a partition's images: prompts from the text, objects with crops.

For each stored image, the prompts are the relational entities of the chunk(s) it sits in, most
mentioned first; an image outside any chunk (standalone files, image-only PDF pages) falls back to
the entities of its document, then to the partition's most mentioned entities. Every backend sees
the same prompts; each object records which backend found it.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl
from PIL import Image

from mmkg import schemas
from mmkg.ids import content_id
from mmkg.ingest.images import ImageStore
from mmkg.vision.base import Detection, EntityPrompt, Grounder, GroundingTask

Progress = Callable[[str, int, int], None]


def grounding_tasks(
    images: pl.DataFrame,
    chunks: pl.DataFrame,
    mentions: pl.DataFrame,
    entities: pl.DataFrame,
    store: ImageStore,
    fallback_top_k: int = 200,
) -> list[GroundingTask]:
    """One task per distinct image of the partition, with its entity prompts in priority order."""
    if images.is_empty():
        return []
    names = {r["entity_key"]: (r["name"], r["label"]) for r in entities.iter_rows(named=True)}
    rel = mentions.filter(pl.col("relational"))
    per_chunk = rel.group_by("chunk_id", "entity_key").len()
    chunk_entities: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for chunk_id, key, n in per_chunk.iter_rows():
        chunk_entities[chunk_id].append((key, n))
    doc_chunks: dict[str, list[str]] = defaultdict(list)
    for chunk_id, doc_id in chunks.select("chunk_id", "doc_id").iter_rows():
        doc_chunks[doc_id].append(chunk_id)
    image_chunks: dict[str, list[str]] = defaultdict(list)
    for chunk_id, image_id in chunks.select("chunk_id", "image_ids").explode("image_ids").drop_nulls().iter_rows():
        image_chunks[image_id].append(chunk_id)
    top = [
        k
        for k, _ in rel.group_by("entity_key")
        .len()
        .sort(["len", "entity_key"], descending=[True, False])
        .head(fallback_top_k)
        .iter_rows()
    ]

    def ranked(chunk_ids: Sequence[str]) -> list[str]:
        counts: dict[str, int] = defaultdict(int)
        for c in chunk_ids:
            for key, n in chunk_entities.get(c, []):
                counts[key] += n
        return [k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]

    tasks = []
    first = images.unique("image_id", keep="first", maintain_order=True)
    docs_of = images.group_by("image_id").agg(pl.col("doc_id").unique())
    docs_by_image = dict(docs_of.iter_rows())
    for img in first.iter_rows(named=True):
        chunk_ids = image_chunks.get(img["image_id"], [])
        keys = ranked(chunk_ids)
        if not keys:
            keys = ranked([c for d in docs_by_image[img["image_id"]] for c in doc_chunks.get(d, [])])
        if not keys:
            keys = top
        prompts = [EntityPrompt(k, *names.get(k, (k, ""))) for k in keys]
        tasks.append(GroundingTask(img["image_id"], store.path_for(img["blob_path"]), prompts, chunk_ids))
    return tasks


@dataclass
class GroundingResult:
    objects: pl.DataFrame
    failures: list[dict]


def _crop(img: Image.Image, det: Detection) -> bytes:
    x0, y0, x1, y1 = (round(v) for v in det.box)
    x0, y0 = max(0, x0), max(0, y0)
    x1, y1 = min(img.width, max(x1, x0 + 1)), min(img.height, max(y1, y0 + 1))
    crop = img.crop((x0, y0, x1, y1))
    if crop.mode not in {"RGB", "L"}:
        crop = crop.convert("RGB")
    buf = io.BytesIO()
    crop.save(buf, format="PNG")
    return buf.getvalue()


def run_grounding(
    partition: str,
    tasks: list[GroundingTask],
    images: pl.DataFrame,
    chunks_mentions: pl.DataFrame,
    grounders: Sequence[Grounder],
    tau: float,
    crops: ImageStore,
    progress: Progress | None = None,
) -> GroundingResult:
    """Run every backend over every task; keep σ > τ; save each object's crop once by content hash.

    ``chunks_mentions`` holds (chunk_id, entity_key) pairs: an object is attributed to the chunk
    among the image's chunks that mentions its entity.
    """
    doc_of = dict(images.unique("image_id", keep="first").select("image_id", "doc_id").iter_rows())
    source_of = dict(images.unique("image_id", keep="first").select("image_id", "source").iter_rows())
    mentioned = set(chunks_mentions.select("chunk_id", "entity_key").iter_rows())
    by_id = {t.image_id: t for t in tasks}
    detections: dict[str, list[Detection]] = defaultdict(list)
    failures: list[dict] = []
    for grounder in grounders:
        for i, outcome in enumerate(grounder.ground(tasks, tau)):
            if progress:
                progress(grounder.name, i + 1, len(tasks))
            if outcome.error:
                failures.append(
                    {
                        "partition": partition,
                        "image_id": outcome.image_id,
                        "source": source_of.get(outcome.image_id, ""),
                        "backend": grounder.name,
                        "reason": outcome.error,
                    }
                )
            detections[outcome.image_id].extend(d for d in outcome.detections if d.score > tau)
    rows = []
    for image_id, dets in detections.items():
        if not dets:
            continue
        task = by_id[image_id]
        with Image.open(task.path) as img:
            img.load()
            for det in dets:
                crop_id, crop_path = crops.put(_crop(img, det), "png")
                chunk_id = next((c for c in task.chunk_ids if (c, det.entity_key) in mentioned), None)
                if chunk_id is None and task.chunk_ids:
                    chunk_id = task.chunk_ids[0]
                rows.append(
                    {
                        "object_id": content_id(image_id, det.backend, det.entity_key, *(round(v, 1) for v in det.box)),
                        "partition": partition,
                        "image_id": image_id,
                        "doc_id": doc_of[image_id],
                        "chunk_id": chunk_id,
                        "entity_key": det.entity_key,
                        "entity_name": det.entity_name,
                        "backend": det.backend,
                        "label": det.label,
                        "x0": det.box[0],
                        "y0": det.box[1],
                        "x1": det.box[2],
                        "y1": det.box[3],
                        "polygons": [list(p) for p in det.polygons],
                        "score": det.score,
                        "crop_id": crop_id,
                        "crop_path": crop_path,
                    }
                )
    objects = schemas.frame(rows, schemas.OBJECTS).unique("object_id", keep="first", maintain_order=True)
    return GroundingResult(objects, failures)
