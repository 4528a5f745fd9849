"""Vision group: OCR text of every image, entity-driven grounded objects, cross-modal entity links, overlays."""

import time
from collections import Counter

import polars as pl
from dagster import AssetExecutionContext, AssetIn, AssetOut, MetadataValue, Output, asset, multi_asset

from assets._metadata import OWNERS, counts, table_metadata
from assets._subset import subsettable
from assets.partitions import corpus_partitions
from mmkg import schemas
from mmkg.encoders import exact_encoder
from mmkg.ingest import ImageStore
from mmkg.nlp import load_pipeline
from mmkg.vision.cmel import CmelParams, link_partition, llm_chooser
from mmkg.vision.grounding import grounding_tasks, run_grounding
from mmkg.vision.overlay import draw_overlay, to_data_uri
from resources import GroundingResource, StorageResource
from resources.encoder import EncoderResource
from resources.generator import GeneratorResource
from resources.nlp import SpacyResource

OVERLAYS_PER_PARTITION = 4


@multi_asset(
    can_subset=True,  # any output can be materialized alone (assets/_subset.py)
    outs={
        "image_text": AssetOut(
            is_required=False,
            description="OCR lines of every image (rapidocr), run once per image content and cached: "
            "reused by grounding, the offline image encoder and image-only PDF pages.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"rapidocr", "parquet"},
        ),
        "objects": AssetOut(
            is_required=False,
            description="Grounded objects: image regions that show or name an entity of the surrounding text "
            "(box, mask polygons, σ, crop), one row per (image, entity, region, backend).",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"ultralytics", "rapidocr", "parquet"},
        ),
        "grounding_failures": AssetOut(
            is_required=False,
            description="Images a backend could not process (corrupt, unsupported, too large), with the reason.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"parquet"},
        ),
    },
    ins={n: AssetIn() for n in ("images", "chunks", "entity_mentions", "entities")},
    partitions_def=corpus_partitions,
    group_name="vision",
    pool="gpu",  # at most the pool's limit of grounding steps share the accelerator
)
@subsettable
def ground_images(
    context: AssetExecutionContext,
    grounding: GroundingResource,
    storage: StorageResource,
    images: pl.DataFrame,
    chunks: pl.DataFrame,
    entity_mentions: pl.DataFrame,
    entities: pl.DataFrame,
):
    """Prompt each image with the entities of its chunk; keep regions with σ > τ."""
    partition = context.partition_key
    data_root = storage.path
    tasks = grounding_tasks(images, chunks, entity_mentions, entities, storage.image_store())
    context.log.info(f"{len(tasks)} distinct images, backends {grounding.backends}, τ={grounding.tau}")

    t0 = time.perf_counter()
    ocr = grounding.ocr_grounder(data_root)
    text_rows, failures = [], []
    source = dict(images.unique("image_id", keep="first").select("image_id", "source").iter_rows())
    for i, task in enumerate(tasks):
        try:
            lines = ocr.lines_for(task)
        except Exception as exc:  # one unreadable image never stops the partition
            failures.append(
                {
                    "partition": partition,
                    "image_id": task.image_id,
                    "source": source.get(task.image_id, ""),
                    "backend": "ocr",
                    "reason": f"{type(exc).__name__}: {exc}",
                }
            )
            continue
        for j, line in enumerate(lines):
            x0, y0, x1, y1 = line.box
            text_rows.append(
                {
                    "image_id": task.image_id,
                    "partition": partition,
                    "line_index": j,
                    "text": line.text,
                    "score": line.score,
                    "x0": x0,
                    "y0": y0,
                    "x1": x1,
                    "y1": y1,
                    "quad": [c for pt in line.quad for c in pt],
                }
            )
        if (i + 1) % 25 == 0 or i + 1 == len(tasks):
            context.log.info(f"OCR {i + 1}/{len(tasks)} images")
    ocr_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    result = run_grounding(
        partition,
        tasks,
        images,
        entity_mentions,
        grounding.grounders(data_root, ocr=ocr),
        grounding.tau,
        ImageStore(data_root, "crops"),
        progress=lambda name, i, n: context.log.info(f"{name}: {i}/{n} images") if i % 25 == 0 or i == n else None,
    )
    ground_seconds = time.perf_counter() - t0
    failures += result.failures
    objects = result.objects
    image_text = schemas.frame(text_rows, schemas.IMAGE_TEXT)
    # the OCR pass and the OCR grounder report the same unreadable image: keep one row per backend
    failures_df = schemas.frame(failures, schemas.GROUNDING_FAILURES).unique(
        ["image_id", "backend"], keep="first", maintain_order=True
    )
    for f in failures_df.iter_rows(named=True):
        context.log.warning(f"{f['backend']} could not process {f['source'] or f['image_id']}: {f['reason']}")

    labels = dict(entities.select("entity_key", "label").iter_rows())
    by_label = Counter(labels.get(k, "?") for k in objects["entity_key"])
    overlays = _overlays(objects, tasks, data_root / "overlays" / partition)

    yield Output(
        image_text,
        output_name="image_text",
        metadata={
            **table_metadata(image_text, ["text", "score", "image_id"], ocr_seconds, table="image_text"),
            "images_read": len(tasks),
            "images_with_text": image_text["image_id"].n_unique(),
            "images_per_second": round(len(tasks) / ocr_seconds, 2) if ocr_seconds else 0.0,
        },
    )
    yield Output(
        objects,
        output_name="objects",
        metadata={
            **table_metadata(
                objects, ["entity_name", "backend", "label", "score", "image_id"], ground_seconds, table="objects"
            ),
            "by_backend": counts(objects, "backend"),
            "by_entity_label": MetadataValue.json(dict(by_label.most_common())),
            "images_with_objects": objects["image_id"].n_unique(),
            "overlays": MetadataValue.md(overlays or "_no objects found_"),
            "overlay_dir": MetadataValue.path(str(data_root / "overlays" / partition)),
        },
    )
    yield Output(
        failures_df,
        output_name="grounding_failures",
        metadata={
            **table_metadata(failures_df, ["backend", "source", "reason"], table="grounding_failures"),
            "failures": failures_df.height,
        },
    )


def _overlays(objects: pl.DataFrame, tasks: list, folder) -> str:
    """Draw the images with the most objects; save PNGs beside the tables and inline thumbnails."""
    if objects.is_empty():
        return ""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {t.image_id: t.path for t in tasks}
    top = (
        objects.group_by("image_id")
        .len()
        .sort(["len", "image_id"], descending=[True, False])
        .head(OVERLAYS_PER_PARTITION)
    )
    parts = []
    for image_id, n in top.iter_rows():
        objs = objects.filter(pl.col("image_id") == image_id).to_dicts()
        img = draw_overlay(paths[image_id], objs)
        img.save(folder / f"{image_id}.png")
        names = ", ".join(sorted({o["entity_name"] for o in objs}))
        parts.append(f"**{names}** ({n} objects)\n\n![overlay]({to_data_uri(img)})")
    return "\n\n".join(parts)


@asset(
    ins={
        n: AssetIn() for n in ("images", "chunks", "entity_mentions", "entities", "relations", "image_text", "objects")
    },
    partitions_def=corpus_partitions,
    group_name="vision",
    io_manager_key="parquet_io",
    owners=OWNERS,
    kinds={"scikit-learn", "parquet"},
    description="MMGraphRAG's cross-modal entity links: each picture's image-side entities (OCR lines, detector "
    "labels, caption, a global entity) aligned to text entities of the chunks around it by relation-weighted "
    "spectral clustering (DBSCAN on the Laplacian's eigenvectors), then the closest member or, with an LLM "
    "configured (generator resource), the model's choice; unaligned ones kept with an enriched description.",
)
def cross_modal_links(
    context: AssetExecutionContext,
    encoder: EncoderResource,
    generator: GeneratorResource,
    spacy: SpacyResource,
    storage: StorageResource,
    images: pl.DataFrame,
    chunks: pl.DataFrame,
    entity_mentions: pl.DataFrame,
    entities: pl.DataFrame,
    relations: pl.DataFrame,
    image_text: pl.DataFrame,
    objects: pl.DataFrame,
):
    t0 = time.perf_counter()
    enc = encoder.get(storage.path / "index")
    params = CmelParams()
    # the paper's LLM alignment within the chosen cluster runs when a generation backend is configured
    choose = llm_chooser(generator.get()) if generator.writes else None
    links = link_partition(
        context.partition_key, images, chunks, entity_mentions, entities, relations, image_text, objects,
        # CMEL thresholds cosines calibrated on float vectors: a quantized encoder lends its float32 twin
        lambda texts: exact_encoder(enc).encode_text(texts, batch_size=encoder.batch_for(enc)), params,
        # spaCy (and torch, through thinc) only loads for a partition with captions to read
        lambda caption: [e.text for e in load_pipeline(spacy.model)(caption).ents], choose,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    aligned = links.filter(pl.col("entity_key").is_not_null())
    context.log.info(
        f"{links['image_id'].n_unique()} pictures, {links.height} image-side entities, {aligned.height} linked "
        f"({seconds:.1f}s)"
    )
    overlays = _link_overlays(aligned, images, storage.path)
    return Output(
        links,
        metadata={
            **table_metadata(
                links,
                ["image_entity", "kind", "entity_name", "score", "method"],
                seconds,
                table="cross_modal_links",
                shown=aligned,
            ),
            "linked": aligned.height,
            "pictures": links["image_id"].n_unique(),
            "by_method": counts(links, "method"),
            "by_kind": counts(links, "kind"),
            "link_threshold": params.link_threshold,
            "aligner": f"llm ({generator.backend}: {generator.model})" if choose else "argmax (no LLM configured)",
            "overlays": MetadataValue.md(overlays or "_no linked region_"),
        },
    )


def _link_overlays(aligned: pl.DataFrame, images: pl.DataFrame, data_root) -> str:
    """The pictures with the most linked regions, each region boxed with "image entity → text entity"."""
    boxed = aligned.drop_nulls("x0")
    if boxed.is_empty():
        return ""
    blobs = dict(images.select("image_id", "blob_path").unique("image_id").iter_rows())
    top = boxed.group_by("image_id").len().sort(["len", "image_id"], descending=[True, False]).head(2)
    parts = []
    for image_id, n in top.iter_rows():
        regions = [
            {**r, "backend": r["kind"], "entity_name": f"{r['image_entity']} → {r['entity_name']}", "polygons": []}
            for r in boxed.filter(pl.col("image_id") == image_id).to_dicts()
        ]
        img = draw_overlay(data_root / blobs[image_id], regions)
        parts.append(f"{n} linked regions\n\n![links]({to_data_uri(img)})")
    return "\n\n".join(parts)
