"""Entity canonicalization and merging.

Mentions of one entity merge across chunks, documents and partitions by a canonical key: the
surface form normalized for Unicode, case, leading articles, possessives, punctuation and space.
It is deliberately conservative (no fuzzy matching): wrong merges corrupt the graph, missed
merges only cost recall, and the optional synonym edges recover some of those.
"""

from __future__ import annotations

import re
import unicodedata

import polars as pl

from mmkg import schemas
from mmkg.ids import content_id

NON_RELATIONAL_LABELS = frozenset({"ORDINAL", "CARDINAL", "PERCENT", "QUANTITY"})
TITLE_LABEL = "TITLE"

_ARTICLE = re.compile(r"^(the|a|an)\s+", re.I)
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b|(?<=s)['’](?=\s|$)")
_PUNCT = re.compile(r"[^\w\s&+\-]", re.UNICODE)
_LOOSE_DASH = re.compile(r"\s[-–—]+\s|[–—]")
_SPACE = re.compile(r"\s+")


def canonical_key(surface: str) -> str:
    """Normalized form under which mentions of one entity merge ("The Louvre's" -> "louvre")."""
    s = unicodedata.normalize("NFKC", surface)
    s = "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))
    s = _POSSESSIVE.sub("", _SPACE.sub(" ", s).strip())
    s = _ARTICLE.sub("", s).casefold().replace(".", "")
    s = _PUNCT.sub(" ", _LOOSE_DASH.sub(" ", s))
    return _SPACE.sub(" ", s).strip(" -&+")


def is_relational(label: str) -> bool:
    return label not in NON_RELATIONAL_LABELS


def merge_mentions(mentions: pl.DataFrame) -> pl.DataFrame:
    """One row per canonical key: most frequent name and label, counts, relational flag.

    Title mentions count towards the entity but only lend their label when NER never saw it.
    """
    if mentions.is_empty():
        return schemas.empty(schemas.ENTITIES)
    ner = mentions.filter(pl.col("label") != TITLE_LABEL)
    label_rank = (
        pl.concat([ner, mentions.filter(~pl.col("entity_key").is_in(ner["entity_key"].implode()))])
        .group_by("entity_key", "label")
        .len()
        .sort(["entity_key", "len", "label"], descending=[False, True, False])
        .group_by("entity_key", maintain_order=True)
        .agg(pl.col("label").alias("labels"))
    )
    names = (
        mentions.group_by("entity_key", "text")
        .len()
        .sort(["entity_key", "len", "text"], descending=[False, True, False])
        .group_by("entity_key", maintain_order=True)
        .agg(pl.col("text").first().alias("name"))
    )
    counts = mentions.group_by("entity_key").agg(
        pl.len().alias("n_mentions"),
        pl.col("chunk_id").n_unique().alias("n_chunks"),
        pl.col("doc_id").n_unique().alias("n_docs"),
    )
    out = (
        counts.join(names, on="entity_key")
        .join(label_rank, on="entity_key")
        .with_columns(
            pl.col("labels").list.first().alias("label"),
            pl.col("labels").list.eval(~pl.element().is_in(list(NON_RELATIONAL_LABELS))).list.any().alias("relational"),
        )
        .sort("entity_key")
    )
    return schemas.conform(out, schemas.ENTITIES, "entities")


CONTEXT_SENTENCES = 3
CONTEXT_CHARS = 600


def document_entities(mentions: pl.DataFrame, sentences: pl.DataFrame, chunks: pl.DataFrame) -> pl.DataFrame:
    """One row per relational entity per document: the entity as that document speaks of it.

    mKG-RAG builds one knowledge graph per document and merges the candidate documents' graphs at
    query time, so an entity is a unit per document: its name there, the chunks and sentences that
    mention it, and a short context (its first sentences), which stands in for the description an
    LLM writes in the paper.
    """
    rel = mentions.filter(pl.col("relational"))
    if rel.is_empty():
        return schemas.empty(schemas.DOCUMENT_ENTITIES)
    order = chunks.select("chunk_id", "chunk_index")
    sent_order = sentences.select("sentence_id", "sent_index", "text")
    rel = (
        rel.join(order, on="chunk_id", how="left")
        .join(sent_order, on="sentence_id", how="left")
        .sort("doc_id", "chunk_index", "sent_index", "char_start", nulls_last=True)
    )
    names = (
        rel.group_by("doc_id", "entity_key", "text")
        .len()
        .sort(["doc_id", "entity_key", "len", "text"], descending=[False, False, True, False])
        .group_by("doc_id", "entity_key", maintain_order=True)
        .agg(pl.col("text").first().alias("name"))
    )
    ner = pl.col("label") != TITLE_LABEL
    labels = (
        rel.with_columns(ner.alias("_ner"))
        .group_by("doc_id", "entity_key", "label", "_ner")
        .len()
        .sort(["doc_id", "entity_key", "_ner", "len", "label"], descending=[False, False, True, True, False])
        .group_by("doc_id", "entity_key", maintain_order=True)
        .agg(pl.col("label").first())
    )
    units = rel.group_by("doc_id", "entity_key", maintain_order=True).agg(
        pl.col("partition").first(),
        pl.len().alias("n_mentions"),
        pl.col("chunk_id").unique(maintain_order=True).alias("chunk_ids"),
        pl.col("sentence_id").drop_nulls().unique(maintain_order=True).alias("sentence_ids"),
        pl.col("text_right").drop_nulls().unique(maintain_order=True).head(CONTEXT_SENTENCES).alias("_ctx"),
    )
    out = (
        units.join(names, on=["doc_id", "entity_key"])
        .join(labels, on=["doc_id", "entity_key"])
        .with_columns(pl.col("_ctx").list.join(" ").str.slice(0, CONTEXT_CHARS).alias("context"))
        .with_columns(
            pl.struct("doc_id", "entity_key")
            .map_elements(lambda r: content_id(r["doc_id"], r["entity_key"]), return_dtype=pl.String)
            .alias("unit_id")
        )
    )
    return schemas.conform(out, schemas.DOCUMENT_ENTITIES, "document_entities")
