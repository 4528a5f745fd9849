"""Ingest group: corpus partition folder -> documents, images, rejected files."""

import time

from dagster import AssetExecutionContext, AssetOut, MetadataValue, Output, asset, multi_asset

from assets._metadata import OWNERS, counts, table_metadata
from assets._subset import subsettable
from assets.partitions import corpus_partitions
from mmkg.build_display import clock
from mmkg.ingest import ingest_partition
from mmkg.ingest.fingerprint import FINGERPRINT_KEY
from mmkg.ingest.speech import transcribe_partition
from resources import CorpusResource, StorageResource

#: how often a recording's speech recognition logs how far it has come, seconds
SPEECH_LOG_S = 5.0


def _speech_log(context: AssetExecutionContext):
    """A ``SpeechProgress`` that logs each recording's progress at most every ``SPEECH_LOG_S`` seconds (and when it
    is done): the build display shows a step's latest log line."""
    told: dict[str, float] = {}

    def speech(rel: str, done: float, total: float) -> None:
        now = time.monotonic()
        if rel not in told or now - told[rel] >= SPEECH_LOG_S or done >= total:
            told[rel] = now
            context.log.info(f"transcribing {rel}: {clock(done)} of {clock(total)}")

    return speech


@asset(
    description="Speech recognized in the partition's recordings that have no subtitles (Whisper, MMKG_ASR_MODEL): "
    "one row per recording with its language, length, segments and cost. The transcripts themselves go to the "
    "data root's transcript cache, where ingest reads them. In the pool gpu, so a GPU worker can take it.",
    io_manager_key="parquet_io",
    owners=OWNERS,
    kinds={"faster-whisper", "parquet"},
    partitions_def=corpus_partitions,
    group_name="ingest",
    pool="gpu",  # like grounding and embedding: at most the pool's limit of these share the accelerator
)
def transcripts(context: AssetExecutionContext, corpus: CorpusResource, storage: StorageResource):
    """Run speech recognition on the partition's recordings without subtitles, before ingest reads them."""
    t0 = time.perf_counter()
    partition = context.partition_key
    table = transcribe_partition(corpus.path, partition, storage.path, corpus.transcriber(partition), corpus.limits(),
                                 _speech_log(context))  # fmt: skip
    for row in table.filter(table["problem"].is_not_null()).iter_rows(named=True):
        context.log.warning(f"{row['source_path']}: {row['problem']}")
    audio = float(table["audio_s"].sum() or 0.0)
    spent = float(table.filter(~table["cached"])["seconds"].sum() or 0.0)
    recognized = float(table.filter(~table["cached"])["audio_s"].sum() or 0.0)
    return Output(
        table,
        metadata={
            **table_metadata(
                table, ["source_path", "language", "audio_s", "segments", "cached", "problem"],
                time.perf_counter() - t0, table="transcripts",
            ),
            "recordings": table.height,
            "audio_minutes": round(audio / 60, 2),
            "from_cache": int(table["cached"].sum() or 0),
            "languages": MetadataValue.json(dict(table["language"].drop_nulls().value_counts().iter_rows())),
            # seconds of recognition per second of audio, over the files not taken from the cache
            "real_time_factor": round(spent / recognized, 3) if recognized else None,
        },
    )


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
    deps=[transcripts],  # speech first, in its own step; ingest reads its transcripts from the cache
)
@subsettable
def ingest(context: AssetExecutionContext, corpus: CorpusResource, storage: StorageResource):
    """Read one corpus partition folder; bad files become rows of ``rejected_files``, never failures."""
    partition = context.partition_key

    def progress(i: int, n: int, rel: str) -> None:
        if i % 200 == 0 or i == n - 1:
            context.log.info(f"[{i + 1}/{n}] {rel}")

    # Taken before reading: a file changed mid-read leaves a fingerprint that no longer matches, so it re-runs.
    fingerprint = corpus.fingerprint(partition)
    result = ingest_partition(
        corpus.path, partition, storage.image_store(), corpus.limits(), progress,
        corpus.transcriber(partition),
        _speech_log(context),  # a recording the speech step did not read (added since, or a subset run)
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
