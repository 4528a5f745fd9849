"""mmkg: multi-granularity multimodal knowledge graphs for retrieval.

The core library: no Dagster import, so downstream jobs can read indexes with a light install.
"""

__version__ = "0.1.0"
