"""The published retrieval index: versioned folders, LanceDB vector tables, a reader.

``Index`` and the result types load on first use (PEP 562), so code that reads only manifests
(``mmkg index info``, ``mmkg index versions``) never imports LanceDB.
"""

from typing import Any

from mmkg.index.manifest import Manifest

__all__ = ["Index", "Manifest", "RetrievalResult", "RetrievedChunk"]
_READER = {"Index", "RetrievalResult", "RetrievedChunk"}


def __getattr__(name: str) -> Any:
    if name in _READER:
        from mmkg.index import reader

        return getattr(reader, name)
    raise AttributeError(f"module 'mmkg.index' has no attribute {name!r}")
