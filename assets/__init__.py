"""Dagster asset definitions: thin wrappers over mmkg that add partitions and metadata."""

from assets import embeddings, graph_inputs, index, ingest, text, vision
from assets.partitions import corpus_partitions

__all__ = ["corpus_partitions", "embeddings", "graph_inputs", "index", "ingest", "text", "vision"]
