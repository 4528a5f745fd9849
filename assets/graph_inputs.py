"""Graph group (per partition): multimodal entity nodes and the incidence matrices of eq. 2."""

import time

import polars as pl
from dagster import AssetExecutionContext, AssetIn, AssetOut, MetadataValue, Output, multi_asset

from assets._metadata import OWNERS, rounded, table_metadata
from assets._subset import subsettable
from assets.partitions import corpus_partitions
from mmkg.nodes import incidence_matrices, multimodal_nodes


@multi_asset(
    can_subset=True,  # any output can be materialized alone (assets/_subset.py)
    outs={
        "multimodal_nodes": AssetOut(
            is_required=False,
            description="Entity nodes of the partition (relational canonical entities); multimodal when grounded "
            "objects exist, with sentence/object/image counts and the backends that grounded them.",
            io_manager_key="parquet_io",
            owners=OWNERS,
            kinds={"polars", "parquet"},
        ),
        "incidence_matrices": AssetOut(
            is_required=False,
            description="M_SMI (sentences x nodes) and M_OMI (objects x nodes) as pickle-free npz with their "
            "row and column id lists.",
            io_manager_key="incidence_io",
            owners=OWNERS,
            kinds={"scipy", "numpy"},
        ),
    },
    ins={n: AssetIn() for n in ("entities", "entity_mentions", "sentences", "objects")},
    partitions_def=corpus_partitions,
    group_name="graph",
)
@subsettable
def build_nodes(
    context: AssetExecutionContext,
    entities: pl.DataFrame,
    entity_mentions: pl.DataFrame,
    sentences: pl.DataFrame,
    objects: pl.DataFrame,
):
    t0 = time.perf_counter()
    nodes = multimodal_nodes(context.partition_key, entities, entity_mentions, objects)
    matrices = incidence_matrices(nodes, sentences, entity_mentions, objects)
    seconds = time.perf_counter() - t0
    mm = nodes.filter(pl.col("multimodal")).sort("n_objects", descending=True)
    yield Output(
        nodes,
        output_name="multimodal_nodes",
        metadata={
            **table_metadata(
                nodes,
                ["name", "label", "n_sentences", "n_objects", "backends"],
                seconds,
                table="multimodal_nodes",
                shown=mm if mm.height else nodes,
            ),
            "multimodal": mm.height,
        },
    )
    smi, omi = matrices["m_smi"], matrices["m_omi"]
    yield Output(
        matrices,
        output_name="incidence_matrices",
        metadata={
            "nodes": len(nodes),
            "sentences_with_nodes": int((smi.matrix.sum(axis=1) > 0).sum()),
            "objects": omi.shape[0],
            "density_m_smi": MetadataValue.float(rounded(smi.matrix.nnz / max(1, smi.shape[0] * smi.shape[1]))),
        },
    )
