"""Multi-assets that can be materialized one output at a time (``dagster asset materialize --select chunks``).

Each multi-asset of the pipeline computes its outputs together (ingest reads a folder once for
documents, images and rejected files). ``subsettable`` lets Dagster select any of them alone: the
step still computes its siblings, which it must, but yields, and so writes, only the outputs
selected. Without it Dagster refuses such a selection with ``DagsterInvalidSubsetError``. Use with
``can_subset=True`` and ``is_required=False`` outputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from dagster import AssetCheckResult, Output


def subsettable(fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """Drop the ``Output``s (and their checks' results) a run did not select; the rest pass through."""

    @functools.wraps(fn)
    def wrapper(context, *args, **kwargs):
        selected = context.op_execution_context.selected_output_names
        for item in fn(context, *args, **kwargs):
            if isinstance(item, Output) and item.output_name not in selected:
                continue
            if isinstance(item, AssetCheckResult) and item.asset_key not in context.selected_asset_keys:
                continue
            yield item

    return wrapper
