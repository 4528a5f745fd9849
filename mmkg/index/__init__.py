"""The published retrieval index: versioned folders, LanceDB vector tables, a reader.

``Index`` loads on first use (PEP 562), so code that reads only manifests (``mmkg index info``,
``mmkg index versions``) never imports LanceDB. The index imports nothing from ``mmkg.retrieval``: queries
run there (``mmkg.retrieval.retrieve(index, ...)``), and the result types live in ``mmkg.retrieval.results``.
"""

from typing import Any

from mmkg.index.manifest import Manifest

__all__ = ["Index", "Manifest"]


def __getattr__(name: str) -> Any:
    if name == "Index":
        from mmkg.index.reader import Index

        return Index
    raise AttributeError(f"module 'mmkg.index' has no attribute {name!r}")
