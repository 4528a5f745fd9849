"""Retrieval strategies over one published index, one module each, selectable per query.

- ``engine``: ``retrieve(index, text=..., ...)`` and ``search(index, query, ...)`` run a query with a strategy;
- ``base``: strict ``Params`` and the ``Strategy`` protocol (the ``Query`` is ``mmkg.query``'s);
- ``vectors``: a query's vector (text, picture through its OCR, their mix);
- ``results``: what every strategy returns (chunks plus graph evidence);
- ``propagation``: MG2-RAG's activation and seed math; ``mg2``: the backbone and its presets;
- ``references``: the pages and parts a question points at; ``expansion``: query expansion from lexicons;
  ``bridge``: the LLM-free second hop (seed channels of ``mg2``);
- ``evidence``: ranked chunk rows to chunks with sentences, pictures, objects, entities and triples;
- ``mkg``: mKG-RAG dual-stage retrieval; ``r2ag`` over ``property_graph`` (its multi-level view);
- ``smoke``: the smoke queries a publish and the asset checks run on a version;
- ``registry``: the names a query can use. A new strategy is one module plus one line there.
"""

from typing import TYPE_CHECKING, Any

from mmkg.retrieval.base import Filters, Params, Query, Strategy
from mmkg.retrieval.engine import retrieve, search
from mmkg.retrieval.propagation import Granular, activation, keep_top_k, mean_pool, seed_distribution
from mmkg.retrieval.registry import DEFAULT_STRATEGY, STRATEGIES, describe, get_strategy, parse_spec
from mmkg.retrieval.results import (
    EntityHit,
    ImageHit,
    ImageOccurrence,
    ObjectHit,
    RelationHit,
    RetrievalResult,
    RetrievedChunk,
    SentenceHit,
)

__all__ = [
    "DEFAULT_STRATEGY",
    "PRESETS",
    "STRATEGIES",
    "EntityHit",
    "Filters",
    "Granular",
    "ImageHit",
    "ImageOccurrence",
    "ObjectHit",
    "Params",
    "Preset",
    "Query",
    "RelationHit",
    "RetrievalResult",
    "RetrievedChunk",
    "SentenceHit",
    "Strategy",
    "TopK",
    "activation",
    "describe",
    "get_preset",
    "get_strategy",
    "keep_top_k",
    "mean_pool",
    "parse_spec",
    "retrieve",
    "search",
    "seed_distribution",
]

if TYPE_CHECKING:  # what __getattr__ below gives, for type checkers
    from mmkg.retrieval.mg2 import PRESETS, Preset, TopK, get_preset

_FROM_MG2 = frozenset({"PRESETS", "Preset", "TopK", "get_preset"})


def __getattr__(name: str) -> Any:
    """MG2-RAG's presets, imported with its module on first use: importing the package loads no strategy."""
    if name in _FROM_MG2:
        from mmkg.retrieval import mg2

        return getattr(mg2, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
