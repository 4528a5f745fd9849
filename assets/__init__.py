"""Dagster asset definitions: thin wrappers over mmkg that add partitions and metadata."""

from assets import embeddings, generation, graph_inputs, index, ingest, text, vision
from assets.partitions import corpus_partitions

# Every module holding asset definitions; the code location and the sensors load the same list.
ASSET_MODULES = (ingest, text, vision, graph_inputs, embeddings, index, generation)

__all__ = [
    "ASSET_MODULES",
    "corpus_partitions",
    "embeddings",
    "generation",
    "graph_inputs",
    "index",
    "ingest",
    "text",
    "vision",
]
