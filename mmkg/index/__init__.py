"""The published retrieval index: versioned folders, LanceDB vector tables, a reader."""

from mmkg.index.manifest import Manifest
from mmkg.index.reader import Index, RetrievalResult, RetrievedChunk

__all__ = ["Index", "Manifest", "RetrievalResult", "RetrievedChunk"]
