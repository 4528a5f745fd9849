"""Dagster asset definitions: thin wrappers over mmkg that add partitions and metadata."""

from assets import ingest, text
from assets.partitions import corpus_partitions

__all__ = ["corpus_partitions", "ingest", "text"]
