"""Dagster resources: configuration and handles around the mmkg core library."""

from resources.corpus import CorpusResource
from resources.nlp import SpacyResource
from resources.parquet_io import PolarsParquetIOManager
from resources.storage import StorageResource

__all__ = ["CorpusResource", "PolarsParquetIOManager", "SpacyResource", "StorageResource"]
