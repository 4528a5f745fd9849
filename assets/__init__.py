"""Dagster asset definitions: thin wrappers over mmkg that add partitions and metadata."""

from assets import graph_inputs, ingest, text, vision
from assets.partitions import corpus_partitions

__all__ = ["corpus_partitions", "graph_inputs", "ingest", "text", "vision"]
