"""Dagster resources: configuration and handles around the mmkg core library."""

from resources.corpus import CorpusResource
from resources.encoder import EncoderResource
from resources.generator import GeneratorResource
from resources.graph_io import GraphIOManager
from resources.grounding import GroundingResource
from resources.nlp import SpacyResource
from resources.npz_io import IncidenceIOManager
from resources.parquet_io import PolarsParquetIOManager
from resources.storage import StorageResource

__all__ = [
    "CorpusResource",
    "EncoderResource",
    "GeneratorResource",
    "GraphIOManager",
    "GroundingResource",
    "IncidenceIOManager",
    "PolarsParquetIOManager",
    "SpacyResource",
    "StorageResource",
]
