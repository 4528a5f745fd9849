"""Building a real index in process for tests: every partitioned asset per partition, then the global ones."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance, materialize

from assets import embeddings, graph_inputs, index, ingest, text, vision
from mmkg.ingest import list_partitions
from pipelines.resources import default_resources

PARTITIONED = [
    ingest.transcripts,
    ingest.ingest,
    text.chunks,
    text.parse,
    text.entities,
    vision.ground_images,
    vision.cross_modal_links,
    graph_inputs.build_nodes,
    embeddings.embed,
]
GLOBAL = [text.entity_catalog, index.graph, index.retrieval_index]


def build(corpus: Path, data: Path, instance: DagsterInstance, keys: list[str] | None = None) -> dict:
    """Materialize ``keys`` (default: every corpus folder) and publish; returns the resources used."""
    resources = default_resources(corpus, data)
    keys = list_partitions(corpus) if keys is None else keys
    known = set(instance.get_dynamic_partitions("corpus"))
    instance.add_dynamic_partitions("corpus", [k for k in keys if k not in known])
    for key in keys:
        assert materialize(PARTITIONED, partition_key=key, instance=instance, resources=resources).success
    publish(instance, resources)
    return resources


def publish(instance: DagsterInstance, resources: dict) -> None:
    """Only the global assets (entity catalog, graph, retrieval_index) over the registered partitions."""
    assert materialize(PARTITIONED + GLOBAL, instance=instance, resources=resources, selection=GLOBAL).success
