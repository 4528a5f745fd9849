"""What the graph's edges and nodes mean, for the export and the web page.

The graph (``mmkg.graph``) is one weighted undirected adjacency, which is what the retrievers walk. What an edge
stands for is in the tables it was built from:

- chunk–picture: the chunk's page or document **shows** the picture;
- chunk–entity: the chunk **mentions** the entity;
- entity–picture: the picture's detector found the entity (**depicts**, weight σ);
- entity–entity: the **relations** extracted from sentences (``relations`` table): subject, predicate, object
  and the sentence each came from. One pair can hold several relations; the edge lists them all.

``leaf_types`` names the entity types that are values rather than things (dates, times, amounts): the page
hides those nodes until asked, since "1979" or "every Thursday" joins unrelated documents and clutters the view.
"""

from __future__ import annotations

from typing import Any

import polars as pl

#: spaCy's (OntoNotes) entity types whose entities are values, not things
LEAF_TYPES = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "MONEY", "PERCENT"})

_KIND_OF_PAIR = {
    frozenset({"chunk", "image"}): "shows",
    frozenset({"chunk", "entity"}): "mentions",
    frozenset({"entity", "image"}): "depicts",
    frozenset({"entity"}): "relation",
}


def edge_kind(kind_a: str, kind_b: str) -> str:
    """``shows``, ``mentions``, ``depicts`` or ``relation`` for an edge between nodes of these kinds."""
    return _KIND_OF_PAIR.get(frozenset({kind_a, kind_b}), "link")


def relation_edges(index: Any) -> pl.DataFrame:
    """One row per entity pair that relations join: ``a``, ``b`` (entity keys, a < b), ``predicate`` (the
    distinct predicates, read subject to object, "; "-joined; a negated one as "not …"), ``subject``,
    ``object`` (the first relation's, for the direction), ``sentence`` (the first relation's sentence) and
    ``relations`` (how many). Empty when the version has no relations table."""
    schema = {"a": pl.String, "b": pl.String, "predicate": pl.String, "subject": pl.String, "object": pl.String,
              "sentence": pl.String, "relations": pl.UInt32}  # fmt: skip
    try:
        rel = index.payload("relations")
    except ValueError:
        return pl.DataFrame(schema=schema)
    rel = rel.drop_nulls(["subject_key", "object_key"]).filter(pl.col("subject_key") != pl.col("object_key"))
    if not rel.height:
        return pl.DataFrame(schema=schema)
    negated = pl.col("negated").fill_null(False) if "negated" in rel.columns else pl.lit(False)
    sentences = index.sentences.select("sentence_id", pl.col("text").alias("sentence"))
    rel = (
        rel.join(sentences, on="sentence_id", how="left")
        .with_columns(
            pl.min_horizontal("subject_key", "object_key").alias("a"),
            pl.max_horizontal("subject_key", "object_key").alias("b"),
            pl.when(negated).then(pl.lit("not ") + pl.col("predicate")).otherwise(pl.col("predicate")).alias("p"),
        )
        .sort("relation_id")
    )
    return (
        rel.group_by("a", "b", maintain_order=True)
        .agg(
            pl.col("p").unique(maintain_order=True).str.join("; ").alias("predicate"),
            pl.col("subject_key").first().alias("subject"),
            pl.col("object_key").first().alias("object"),
            pl.col("sentence").first(),
            pl.len().cast(pl.UInt32).alias("relations"),
        )
        .select(list(schema))
    )


def leaf_entities(index: Any) -> set[str]:
    """Keys of the entities whose type is a value (``LEAF_TYPES``)."""
    entities = getattr(index, "entities", None)
    if entities is None or "label" not in entities.columns:
        return set()
    return set(entities.filter(pl.col("label").is_in(list(LEAF_TYPES)))["entity_key"].to_list())
