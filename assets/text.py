"""Text group: chunks -> sentences, entity mentions, relations -> entities -> global entity catalog."""

import time

import polars as pl
from dagster import AssetExecutionContext, AssetIn, AssetOut, Config, MetadataValue, Output, asset, multi_asset
from pydantic import Field

from assets._metadata import OWNERS, bar_plot, counts, table_metadata
from assets._subset import subsettable
from assets.page_text import read_page_text
from assets.partitions import corpus_partitions
from mmkg import schemas
from mmkg.chunking import chunk_documents
from mmkg.entities import document_entities, merge_mentions
from mmkg.nlp import ParseCache
from mmkg.parts import part_table
from mmkg.sections import section_table
from mmkg.settings import get_settings
from resources import CorpusResource, GroundingResource, SpacyResource, StorageResource


class ChunkConfig(Config):
    max_tokens: int = Field(default=get_settings().chunk_max_tokens, description="Upper bound on tokens per chunk.")


@multi_asset(
    can_subset=True,  # any output can be materialized alone (assets/_subset.py)
    outs={
        "page_text": AssetOut(
            is_required=False,
            description="OCR text of image-only PDF pages (their page renders) in reading order; "
            "OCR runs once per image content (shared cache with image_text).",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"rapidocr", "parquet"},
        ),
        "chunks": AssetOut(
            is_required=False,
            description="Sentence-aligned, token-bounded chunks with page, document offsets and attached image ids; "
            "image-only PDF pages are chunked from their OCR page text (text_source = ocr).",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"spacy", "parquet"},
        ),
        "parts": AssetOut(
            is_required=False,
            description="The documents' named parts (Figure 3, Table 2, Appendix C, Exhibit P-10), one row each, with "
            "the caption line that defines it and every page that names it (mmkg/parts.py).",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"parquet"},
        ),
        "sections": AssetOut(
            is_required=False,
            description="The documents' headings, one row each, with their level, parent, page and the chunks that "
            "begin under them: from a PDF's outline where it has one, else read off the text (mmkg/sections.py).",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"parquet"},
        ),
    },
    ins={"documents": AssetIn(), "images": AssetIn()},
    partitions_def=corpus_partitions,
    group_name="text",
)
@subsettable
def chunks(
    context: AssetExecutionContext,
    config: ChunkConfig,
    corpus: CorpusResource,
    grounding: GroundingResource,
    storage: StorageResource,
    documents: pl.DataFrame,
    images: pl.DataFrame,
):
    """OCR the renders of image-only PDF pages, then chunk every page (text layer or OCR) alike, and read the
    documents' headings and named parts over those chunks."""
    t0 = time.perf_counter()
    pages, ocr_stats = read_page_text(documents, images, grounding, storage, context.log, corpus.limits())
    ocr_seconds = time.perf_counter() - t0
    yield Output(
        pages,
        output_name="page_text",
        metadata={
            **table_metadata(
                pages, ["page", "n_lines", "n_table_rows", "mean_score", "text"], ocr_seconds, table="page_text"
            ),
            **ocr_stats,
        },
    )
    t0 = time.perf_counter()
    out = chunk_documents(documents, images, config.max_tokens, page_text=pages)
    tokens = out["n_tokens"]
    yield Output(
        out,
        output_name="chunks",
        metadata={
            **table_metadata(
                out, ["chunk_index", "page", "n_tokens", "text", "image_ids"], time.perf_counter() - t0, table="chunks"
            ),
            "documents_chunked": out["doc_id"].n_unique(),
            "mean_tokens": round(float(tokens.mean() or 0), 1),
            "max_tokens": int(tokens.max() or 0),
            "chunks_with_images": int((out["image_ids"].list.len() > 0).sum()),
            "by_text_source": counts(out, "text_source"),
        },
    )
    t0 = time.perf_counter()
    heads = section_table(out, documents)
    yield Output(
        heads,
        output_name="sections",
        metadata={
            **table_metadata(heads, ["level", "title", "page", "source"], time.perf_counter() - t0, table="sections"),
            "documents_with_sections": heads["doc_id"].n_unique(),
            "by_source": counts(heads, "source"),
            "chunks_under_a_heading": int(heads["chunk_ids"].list.len().sum() or 0),
        },
    )
    t0 = time.perf_counter()
    named = part_table(out, documents)
    yield Output(
        named,
        output_name="parts",
        metadata={
            **table_metadata(named, ["kind", "label", "caption", "page"], time.perf_counter() - t0, table="parts"),
            "by_kind": counts(named, "kind"),
            "captioned": int((named["caption"] != "").sum()),
        },
    )


@multi_asset(
    can_subset=True,  # any output can be materialized alone (assets/_subset.py)
    outs={
        "sentences": AssetOut(
            is_required=False,
            description="Sentences from the spaCy dependency parse of each chunk.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"spacy", "parquet"},
        ),
        "entity_mentions": AssetOut(
            is_required=False,
            description="Named-entity mentions (spaCy NER) plus each chunk's document title, with canonical keys.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"spacy", "parquet"},
        ),
        "relations": AssetOut(
            is_required=False,
            description="Rule-based relation triples (MG2-RAG appendix A.1) between entities of a sentence.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"spacy", "parquet"},
        ),
    },
    ins={"chunks": AssetIn(), "documents": AssetIn()},
    partitions_def=corpus_partitions,
    group_name="text",
)
@subsettable
def parse(
    context: AssetExecutionContext,
    spacy: SpacyResource,
    storage: StorageResource,
    chunks: pl.DataFrame,
    documents: pl.DataFrame,
):
    """One spaCy parse per chunk feeds sentences, mentions and relations (never parsed twice).

    Chunks the partition already had are read from the parse cache (``<data_root>/cache/parse``),
    so re-indexing after an edit parses only the edited documents' chunks.
    """
    titles = dict(documents.select("doc_id", "title").iter_rows())
    step = max(1, chunks.height // 10)

    def progress(done: int, total: int) -> None:
        if done % step < 64 or done == total:
            context.log.info(f"parsed {done:,}/{total:,} chunks")

    cache = ParseCache(storage.path / "cache" / "parse", spacy.model)
    result = spacy.parse(chunks, titles, progress, cache=cache, partition=context.partition_key)
    rate = chunks.height / result.seconds if result.seconds else 0.0
    context.log.info(
        f"parsed {chunks.height:,} chunks in {result.seconds:.1f}s ({rate:.0f} chunks/s) with {spacy.model}; "
        f"{result.reused:,} unchanged, from cache"
    )
    yield Output(
        result.sentences,
        output_name="sentences",
        metadata={
            **table_metadata(result.sentences, ["sent_index", "text"], result.seconds, table="sentences"),
            "chunks_per_second": round(rate, 1),
            "spacy_model": spacy.model,
            "chunks_reused_from_cache": result.reused,
        },
    )
    mentions = result.mentions
    yield Output(
        mentions,
        output_name="entity_mentions",
        metadata={
            **table_metadata(mentions, ["text", "label", "entity_key", "source"], table="entity_mentions"),
            "by_label": counts(mentions, "label", 20),
        },
    )
    rels = result.relations
    yield Output(
        rels,
        output_name="relations",
        metadata={
            **table_metadata(rels, ["subject", "predicate", "object", "rule"], table="relations"),
            "by_rule": counts(rels, "rule"),
            "top_predicates": counts(rels, "predicate"),
        },
    )


@multi_asset(
    can_subset=True,  # any output can be materialized alone (assets/_subset.py)
    outs={
        "entities": AssetOut(
            is_required=False,
            description="Entities of one partition, merged by canonical key: name, label, mention/chunk/document "
            "counts.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"polars", "parquet"},
        ),
        "document_entities": AssetOut(
            is_required=False,
            description="Each relational entity as one document speaks of it (mKG-RAG's per-document graphs): name, "
            "label, the chunks and sentences that mention it and a short context; embedded by embed.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"polars", "parquet"},
        ),
    },
    ins={n: AssetIn() for n in ("entity_mentions", "sentences", "chunks")},
    partitions_def=corpus_partitions,
    group_name="text",
)
@subsettable
def entities(
    context: AssetExecutionContext, entity_mentions: pl.DataFrame, sentences: pl.DataFrame, chunks: pl.DataFrame
):
    t0 = time.perf_counter()
    out = merge_mentions(entity_mentions).with_columns(pl.lit(context.partition_key).alias("partition"))
    out = schemas.conform(out, schemas.PARTITION_ENTITIES, "entities")
    yield Output(
        out,
        output_name="entities",
        metadata={
            **table_metadata(
                out,
                ["name", "label", "n_mentions", "n_docs"],
                time.perf_counter() - t0,
                table="entities",
                shown=out.sort("n_mentions", descending=True),
            ),
            "relational": int(out["relational"].sum()),
            "by_label": counts(out, "label", 20),
            "label_distribution": bar_plot(out, "label", "entities by label"),
        },
    )
    t1 = time.perf_counter()
    units = document_entities(entity_mentions, sentences, chunks)
    per_doc = units.group_by("doc_id").len()["len"]
    yield Output(
        units,
        output_name="document_entities",
        metadata={
            **table_metadata(
                units, ["name", "label", "n_mentions", "context"], time.perf_counter() - t1,
                table="document_entities", shown=units.sort("n_mentions", descending=True),
            ),
            "documents": units["doc_id"].n_unique(),
            "mean_entities_per_document": MetadataValue.float(round(float(per_doc.mean() or 0.0), 2)),
        },
    )  # fmt: skip


@asset(
    group_name="text",
    io_manager_key="parquet_io",
    owners=OWNERS,
    kinds={"polars", "parquet"},
    description="All partitions' entities merged by canonical key: the entity nodes of the graph.",
)
def entity_catalog(context: AssetExecutionContext, entity_mentions: pl.DataFrame):
    t0 = time.perf_counter()
    merged = merge_mentions(entity_mentions)
    parts = entity_mentions.group_by("entity_key").agg(pl.col("partition").unique().sort().alias("partitions"))
    out = schemas.conform(merged.join(parts, on="entity_key"), schemas.ENTITY_CATALOG, "entity_catalog")
    shared = out.filter(pl.col("partitions").list.len() > 1)
    return Output(
        out,
        metadata={
            **table_metadata(
                out,
                ["name", "label", "n_mentions", "partitions"],
                time.perf_counter() - t0,
                table="entity_catalog",
                shown=out.sort("n_mentions", descending=True),
            ),
            "partitions": entity_mentions["partition"].n_unique(),
            "cross_partition_entities": shared.height,
            "label_distribution": bar_plot(out, "label", "entities by label (all partitions)"),
            "mentions_by_label": bar_plot(out, "label", "mentions by entity label", weight="n_mentions"),
            "cross_partition_preview": MetadataValue.md(
                ", ".join(shared.sort("n_mentions", descending=True)["name"].head(20).to_list()) or "_none_"
            ),
        },
    )
