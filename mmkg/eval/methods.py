"""Retrieval methods compared by the harness, all over one published index.

Each method answers ``search(text, depth, filters)`` with chunk ids, best first, and ``explain()``
says what drove its last answer (query terms BM25 knew, the entities the graph seeded), which the
per-question JSON keeps so a loss can be read question by question:

- ``bm25``: BM25 (bm25s) over the index's chunk payload text, title prepended as the encoder sees it;
- ``dense``: cosine search over the index's chunk vectors with the index's own encoder (``Index.dense``);
- any retrieval strategy (``mmkg.retrieval.STRATEGIES``) as ``name`` or ``name:preset`` (``mkg``,
  ``mg2:longdoc``); ``graph:<preset>`` is MG2-RAG with a preset under the name earlier reports used.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import polars as pl

from mmkg.index.reader import Index
from mmkg.query import FILTER_KEYS
from mmkg.retrieval import PRESETS, STRATEGIES, parse_spec, retrieve
from mmkg.retrieval.vectors import dense_search

Filters = dict[str, str | Sequence[str]] | None


class Method(Protocol):
    name: str
    setup_s: float  # seconds spent preparing (e.g. building the BM25 index)

    def search(self, text: str, depth: int, filters: Filters = None) -> list[str]: ...

    def explain(self) -> dict[str, Any]: ...


@dataclass
class BM25Method:
    """Lexical baseline: the index's BM25 over chunk texts (``Index.lexical``, what lexical seeds use too)."""

    index: Index
    name: str = "bm25"
    setup_s: float = 0.0
    _last: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        t0 = time.perf_counter()
        self.index.lexical  # noqa: B018 - load (or build) it now, so setup time is not query time
        # rows in the graph's chunk order, which ``Index.lexical_scores`` returns
        order = self.index.meta["chunks"].select(pl.col("id").alias("chunk_id"))
        self._ids = order["chunk_id"].to_list()
        payload = order.join(
            self.index.chunks.select("chunk_id", *FILTER_KEYS), on="chunk_id", how="left", maintain_order="left"
        )
        self._columns = {key: payload[key].to_numpy() for key in FILTER_KEYS}
        self.setup_s = time.perf_counter() - t0

    def _mask(self, filters: Filters) -> np.ndarray | None:
        if not filters:
            return None
        mask = np.ones(len(self._ids), dtype=bool)
        for key, value in filters.items():
            if key not in self._columns:
                raise ValueError(f"unknown filter {key!r}; filter by {list(FILTER_KEYS)}")
            values = [value] if isinstance(value, str) else list(value)
            mask &= np.isin(self._columns[key], values)
        return mask

    def search(self, text: str, depth: int, filters: Filters = None) -> list[str]:
        terms = self.index.lexical.query_terms(text)
        self._last = {"terms": terms}
        scores = self.index.lexical_scores(text, terms).astype(np.float64)
        mask = self._mask(filters)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        top = np.argsort(-scores, kind="stable")[:depth]
        return [self._ids[i] for i in top if scores[i] > 0]

    def explain(self) -> dict[str, Any]:
        return self._last


@dataclass
class DenseMethod:
    """Dense baseline: the index's chunk vectors and encoder, no graph."""

    index: Index
    name: str = "dense"
    setup_s: float = 0.0

    def search(self, text: str, depth: int, filters: Filters = None) -> list[str]:
        return [cid for cid, _ in dense_search(self.index, text, k=depth, level="chunks", filters=filters)]

    def explain(self) -> dict[str, Any]:
        return {}


@dataclass
class StrategyMethod:
    """A retrieval strategy with one preset (``mmkg.retrieval.retrieve(index, strategy=...)``)."""

    index: Index
    spec: str  # name:preset
    name: str = ""
    setup_s: float = 0.0
    _last: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.name = self.name or self.spec

    def search(self, text: str, depth: int, filters: Filters = None) -> list[str]:
        res = retrieve(self.index, text=text, k=depth, strategy=self.spec, filters=dict(filters) if filters else None)
        self._last = {
            "linked_entities": res.linked_entities,
            **({"references": res.references} if res.references else {}),
            "seeds": res.seeds,
            "entities": [e.name for e in res.entities[:10]],
            "relations": [f"{r.subject} | {r.predicate} | {r.object}" for r in res.relations[:5]],
        }
        return [c.chunk_id for c in res.chunks]

    def explain(self) -> dict[str, Any]:
        return self._last


def GraphMethod(index: Index, preset: str) -> StrategyMethod:
    """MG2-RAG graph retrieval with one preset, named ``graph:<preset>`` as in earlier reports."""
    return StrategyMethod(index, f"mg2:{preset}", name=f"graph:{preset}")


def parse_methods(spec: str) -> list[str]:
    """``"bm25,dense,graph:default,mkg"`` -> method names.

    ``graph`` means ``graph:default``, ``graph:all`` every MG2-RAG preset; a strategy is ``name`` (its
    default preset) or ``name:preset``, and ``name:all`` expands to each of its presets.
    """
    names: list[str] = []
    for raw in (s.strip() for s in spec.split(",")):
        if not raw:
            continue
        if raw == "graph":
            raw = "graph:default"
        if raw == "graph:all":
            names += [f"graph:{p}" for p in PRESETS]
            continue
        if raw in ("bm25", "dense") or (raw.startswith("graph:") and raw[6:] in PRESETS):
            names.append(raw)
            continue
        strategy, preset = parse_spec(raw)
        if strategy not in STRATEGIES:
            raise ValueError(
                f"unknown method {raw!r}; use bm25, dense, graph:all, graph:<preset> with a preset in "
                f"{sorted(PRESETS)}, or a strategy in {sorted(STRATEGIES)} as NAME or NAME:PRESET"
            )
        presets = STRATEGIES[strategy].presets
        if preset == "all":
            names += [f"{strategy}:{p}" for p in presets]
        elif preset is None or preset in presets:
            names.append(raw)
        else:
            raise ValueError(f"unknown preset {preset!r} for strategy {strategy}; choose one of {sorted(presets)}")
    if not names:
        raise ValueError("no methods given")
    return list(dict.fromkeys(names))


def make_methods(index: Index, names: Sequence[str]) -> list[Method]:
    out: list[Method] = []
    for name in names:
        if name == "bm25":
            out.append(BM25Method(index))
        elif name == "dense":
            out.append(DenseMethod(index))
        elif name.startswith("graph:"):
            out.append(GraphMethod(index, name.split(":", 1)[1]))
        else:
            out.append(StrategyMethod(index, name))
    return out


def chunk_table(index: Index) -> pl.DataFrame:
    """The chunk payload columns the harness maps results with."""
    return index.chunks.select("chunk_id", "doc_id", "partition", "title", "source_path", "page")
