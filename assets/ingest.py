"""Ingest group: corpus partition folder -> documents, images, rejected files."""

import time

from dagster import AssetExecutionContext, AssetOut, MetadataValue, Output, multi_asset

from assets._metadata import OWNERS, counts, table_metadata
from assets._subset import subsettable
from assets.partitions import corpus_partitions
from mmkg.ingest import ingest_partition
from mmkg.ingest.fingerprint import FINGERPRINT_KEY
from resources import CorpusResource, StorageResource

#: how often a recording's speech recognition logs how far it has come, seconds
SPEECH_LOG_S = 5.0


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def _media_table(media: list[dict]) -> str:
    cols = ["source_path", "kind", "duration_s", "frames", "scene_changes", "segments", "transcript", "language",
            "seconds"]  # fmt: skip
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    rows += ["| " + " | ".join(str(m.get(c, "")) for c in cols) + " |" for m in media[:50]]
    return "\n".join(rows)


@multi_asset(
    can_subset=True,  # any output can be materialized alone (assets/_subset.py)
    outs={
        "documents": AssetOut(
            is_required=False,
            description="One row per source document (Markdown, text, JSON record, PDF, standalone image) "
            "with its full text and page boundaries.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"python", "parquet"},
        ),
        "images": AssetOut(
            is_required=False,
            description="Every decoded image occurrence; bytes stored once under their content hash.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"python", "parquet"},
        ),
        "rejected_files": AssetOut(
            is_required=False,
            description="Files, records and images that could not be read, with the reason.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"python", "parquet"},
        ),
    },
    partitions_def=corpus_partitions,
    group_name="ingest",
)
@subsettable
def ingest(context: AssetExecutionContext, corpus: CorpusResource, storage: StorageResource):
    """Read one corpus partition folder; bad files become rows of ``rejected_files``, never failures."""
    partition = context.partition_key

    def progress(i: int, n: int, rel: str) -> None:
        if i % 200 == 0 or i == n - 1:
            context.log.info(f"[{i + 1}/{n}] {rel}")

    told: dict[str, float] = {}  # when each recording's progress was last logged (the build display shows it)

    def speech(rel: str, done: float, total: float) -> None:
        now = time.monotonic()
        if rel not in told or now - told[rel] >= SPEECH_LOG_S or done >= total:
            told[rel] = now
            context.log.info(f"transcribing {rel}: {_clock(done)} of {_clock(total)}")

    # Taken before reading: a file changed mid-read leaves a fingerprint that no longer matches, so it re-runs.
    fingerprint = corpus.fingerprint(partition)
    result = ingest_partition(
        corpus.path, partition, storage.image_store(), corpus.limits(), progress, corpus.transcriber(), speech
    )
    for row in result.rejected.iter_rows(named=True):
        what = {"budget": "cut", "repaired": "repaired"}.get(row["stage"], "rejected")
        context.log.warning(f"{what} {row['source_path']} {row['record_key']}: {row['reason']}")
    docs, images, rejected = result.documents, result.images, result.rejected
    yield Output(
        docs,
        output_name="documents",
        metadata={
            **table_metadata(docs, ["title", "kind", "source_path", "n_pages"], result.seconds, table="documents"),
            "files_read": result.n_files,
            FINGERPRINT_KEY: fingerprint,
            "by_kind": MetadataValue.json(result.by_kind),
            "characters": int(docs["text"].str.len_chars().sum() or 0),
            "truncated_documents": result.truncated,
            **(
                {
                    "media_files": len(result.media),
                    "media_minutes": round(sum(m["duration_s"] for m in result.media) / 60, 2),
                    "media_seconds_spent": round(sum(m["seconds"] for m in result.media), 2),
                    "media": MetadataValue.md(_media_table(result.media)),
                }
                if result.media
                else {}
            ),
        },
    )
    yield Output(
        images,
        output_name="images",
        metadata={
            **table_metadata(images, ["image_id", "role", "source", "width", "height", "format"], table="images"),
            "by_role": counts(images, "role"),
            "megapixels": round(float((images["width"].cast(int) * images["height"].cast(int)).sum() or 0) / 1e6, 2),
        },
    )
    yield Output(
        rejected,
        output_name="rejected_files",
        metadata={
            **table_metadata(rejected, ["source_path", "record_key", "stage", "reason"], table="rejected_files"),
            "rejected": rejected.height,
            "by_stage": counts(rejected, "stage"),
        },
    )
