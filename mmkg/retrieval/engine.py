"""Running a query over one open index: ``retrieve`` / ``search`` pick a strategy and run it.

The index (``mmkg.index.Index``) pins one published version and computes over it (vectors, masks,
BM25, linking, PPR); it runs no strategy. Here a query is checked (``k``, its picture, its filters,
before any model runs), the strategy is chosen (a registered name, ``name:preset``, or an MG2-RAG
``Preset`` object), and its result gets its media spans. The smoke queries over a whole version are
``mmkg.retrieval.smoke``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmkg.query import Filters, Query, check_k, check_picture
from mmkg.retrieval.registry import get_strategy
from mmkg.retrieval.results import RetrievalResult, chunk_spans

if TYPE_CHECKING:
    from mmkg.index.reader import Index


def retrieve(
    index: Index,
    text: str | None = None,
    image: str | Path | None = None,
    k: int = 10,
    preset: Any = None,
    filters: Filters = None,
    engine: str | None = None,
    strategy: str | None = None,
    video: str | Path | None = None,
    audio: str | Path | None = None,
    **overrides: Any,
) -> RetrievalResult:
    """Top-k chunks of an open index for a text and/or image query, with the evidence that put them there.

    ``strategy``: a registered strategy name (``mmkg.retrieval.STRATEGIES``), optionally with a preset
    as ``name:preset``; MG2-RAG (``mg2``) by default. ``preset``: that strategy's preset name, or an
    ``mmkg.retrieval.Preset`` object for MG2-RAG. Other keyword arguments override parameters.
    """
    query = Query(text=text, image=image, video=video, audio=audio)  # type: ignore[arg-type]  # paths coerced
    return search(index, query, k, strategy, preset, filters, engine, **overrides)


def search(
    index: Index,
    query: Query,
    k: int = 10,
    strategy: str | None = None,
    preset: Any = None,
    filters: Filters = None,
    engine: str | None = None,
    **overrides: Any,
) -> RetrievalResult:
    """``retrieve`` for a ``Query`` object (text, image, video, audio)."""
    check_k(k)
    if query.image is not None:
        check_picture(query.image)
    index.allowed_docs(filters)  # filter types and unknown values fail here, before any model runs

    if preset is not None and not isinstance(preset, str):  # an MG2-RAG Preset object (imported only then)
        from mmkg.retrieval.mg2 import MG2, Preset

        if not isinstance(preset, Preset):
            raise TypeError(f"preset must be a preset name or an mmkg.retrieval.Preset, not {type(preset).__name__}")
        strat: Any = MG2(preset.override(**overrides) if overrides else preset, preset="custom", engine=engine)
    else:
        strat = get_strategy(strategy, preset, **overrides)
        if engine is not None:
            if not hasattr(strat, "engine"):
                raise ValueError(f"strategy {strat.name} has no PPR engine to choose")
            strat.engine = engine
    missing = query.modalities - strat.modalities
    if missing:
        raise ValueError(f"strategy {strat.name} does not answer {sorted(missing)} queries; it answers "
                         f"{sorted(strat.modalities)}")  # fmt: skip
    with index.single_blas_thread():
        result = strat.retrieve(index, query, k, filters)
    if not result.media:
        result.media = chunk_spans(result)
    return result
