"""mmkg: multi-granularity multimodal knowledge graphs for retrieval.

The core library: no Dagster import, so downstream jobs can read indexes with a light install.
``mmkg.Index`` is loaded on first use to keep ``import mmkg`` cheap.
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["Index", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Index":
        from mmkg.index import Index

        return Index
    raise AttributeError(f"module 'mmkg' has no attribute {name!r}")
