"""Ingest: corpus partition folders to documents, images and rejected-file tables."""

from mmkg.ingest.base import Limits, Rejected
from mmkg.ingest.images import ImageStore
from mmkg.ingest.partition import SUPPORTED, IngestResult, ingest_partition, list_partitions

__all__ = ["SUPPORTED", "ImageStore", "IngestResult", "Limits", "Rejected", "ingest_partition", "list_partitions"]
