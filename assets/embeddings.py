"""Embeddings group: one shared vector space for chunks, sentences, images and objects."""

import polars as pl
from dagster import AssetExecutionContext, AssetIn, AssetOut, MetadataValue, Output, multi_asset

from assets._metadata import OWNERS, column_schema
from assets._subset import subsettable
from assets.partitions import corpus_partitions
from mmkg import schemas
from mmkg.embedding import VectorCache, embed_all
from mmkg.index.units import VECTOR_ASSET
from resources import StorageResource
from resources.encoder import EncoderResource

OUTS = VECTOR_ASSET  # granularity -> vector asset: what the publish reads back per index table


@multi_asset(
    can_subset=True,  # any output can be materialized alone (assets/_subset.py)
    outs={
        name: AssetOut(
            is_required=False,
            description=f"ℓ2-normalized embeddings of the partition's {gran} (id, partition, doc_id, vector); "
            "published into LanceDB by retrieval_index.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"torch", "parquet"},
        )
        for gran, name in OUTS.items()
    },
    ins={
        n: AssetIn()
        for n in (
            "documents",
            "chunks",
            "sentences",
            "images",
            "image_text",
            "objects",
            "document_entities",
            "relations",
        )
    },
    partitions_def=corpus_partitions,
    group_name="embeddings",
    pool="gpu",
)
@subsettable
def embed(
    context: AssetExecutionContext,
    encoder: EncoderResource,
    storage: StorageResource,
    documents: pl.DataFrame,
    chunks: pl.DataFrame,
    sentences: pl.DataFrame,
    images: pl.DataFrame,
    image_text: pl.DataFrame,
    objects: pl.DataFrame,
    document_entities: pl.DataFrame,
    relations: pl.DataFrame,
):
    """Chunks with their title, sentences, images (pixels or what can be read of them), object crops;
    entities per document (name + the sentences that mention them) and relation triples.

    Chunk and sentence texts the partition already had are looked up in a per-partition vector cache
    (``<data_root>/cache/vectors``), so re-indexing after an edit embeds only what changed.
    """
    enc = encoder.get(storage.path / "index")  # a published index keeps its runtime
    cache = VectorCache(storage.path / "cache" / "vectors", enc.info.id())
    done = embed_all(
        enc, documents, chunks, sentences, images, image_text, objects, storage.path, encoder.batch_for(enc),
        cache=cache, partition=context.partition_key, document_entities=document_entities, relations=relations,
        sentences_from_chunks=encoder.sentence_vectors == "chunk_pass",
    )  # fmt: skip
    for gran, name in OUTS.items():
        e = done[gran]
        rate = e.frame.height / e.seconds if e.seconds else 0.0
        context.log.info(
            f"{gran}: {e.frame.height:,} vectors in {e.seconds:.1f}s ({rate:.0f}/s; {e.reused:,} unchanged, from cache)"
        )
        yield Output(
            e.frame,
            output_name=name,
            metadata={
                "dagster/row_count": e.frame.height,
                "dagster/column_schema": MetadataValue.table_schema(
                    column_schema(e.frame, gran, schemas.VECTOR_DESCRIPTIONS)
                ),
                "encoder": enc.info.id(),
                "dimension": enc.info.dim,
                "seconds": MetadataValue.float(round(e.seconds, 3)),
                "rows_per_second": MetadataValue.float(round(rate, 1)),
                "reused_from_cache": e.reused,
                **({"made_by": encoder.sentence_vectors} if gran == "sentences" else {}),
            },
        )
