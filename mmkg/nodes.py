"""Multimodal nodes: every relational canonical entity is a node; one with grounded objects is multimodal.

MG2-RAG fuses modalities at the node level ("modality-preserving node fusion"): an entity node keeps
its textual mentions (via M_SMI) and its visual objects (via M_OMI) side by side instead of merging
them into one embedding.
"""

from __future__ import annotations

import polars as pl

from mmkg import schemas
from mmkg.incidence import Incidence, build_incidence


def multimodal_nodes(
    partition: str, entities: pl.DataFrame, mentions: pl.DataFrame, objects: pl.DataFrame
) -> pl.DataFrame:
    nodes = entities.filter(pl.col("relational")).select("entity_key", "name", "label")
    sent = (
        mentions.filter(pl.col("relational"))
        .group_by("entity_key")
        .agg(pl.col("sentence_id").n_unique().alias("n_sentences"))
    )
    obj = objects.group_by("entity_key").agg(
        pl.len().alias("n_objects"),
        pl.col("image_id").n_unique().alias("n_images"),
        pl.col("backend").unique().sort().alias("backends"),
    )
    out = (
        nodes.join(sent, on="entity_key", how="left")
        .join(obj, on="entity_key", how="left")
        .with_columns(
            pl.lit(partition).alias("partition"),
            pl.col("n_sentences").fill_null(0),
            pl.col("n_objects").fill_null(0),
            pl.col("n_images").fill_null(0),
            pl.col("backends").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        )
        .with_columns((pl.col("n_objects") > 0).alias("multimodal"))
        .sort("entity_key")
    )
    return schemas.conform(out, schemas.MULTIMODAL_NODES, "multimodal_nodes")


def incidence_matrices(
    nodes: pl.DataFrame, sentences: pl.DataFrame, mentions: pl.DataFrame, objects: pl.DataFrame
) -> dict[str, Incidence]:
    """M_SMI (sentences x nodes) and M_OMI (objects x nodes); rows follow the tables' row order."""
    keys = nodes["entity_key"].to_list()
    smi_pairs = mentions.filter(pl.col("relational") & pl.col("entity_key").is_in(keys)).select(
        "sentence_id", "entity_key"
    )
    omi_pairs = objects.filter(pl.col("entity_key").is_in(keys)).select("object_id", "entity_key")
    return {
        "m_smi": build_incidence(sentences["sentence_id"].to_list(), keys, smi_pairs),
        "m_omi": build_incidence(objects["object_id"].to_list(), keys, omi_pairs),
    }
