"""The models a query's media need, loaded once per process and shared by every strategy.

A query picture is read with one OCR engine (``ocr_lines``: the text encoder's surrogate text for the picture,
R2AG's query elements, M3KG's visual grounding of the query all read the same lines); grounders and the
language models of strategies' steps come from ``shared`` by a key that names them and their model. Loading
OCR costs about half a second and a detector or a language model seconds: a per-query or per-strategy copy
(R2AG made a new OCR engine for every picture query) pays that again and again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_SHARED: dict[tuple, Any] = {}
_LOCK = threading.RLock()  # re-entrant: a model may be made of another shared one (a grounder of the OCR engine)


def shared(key: tuple, make: Callable[[], T]) -> T:
    """``make()`` once per process for ``key`` (a model's kind and name: ``("llm", "openai", "qwen")``)."""
    with _LOCK:
        if key not in _SHARED:
            _SHARED[key] = make()
        return _SHARED[key]


def ocr_engine() -> Any:
    """The process's OCR engine for query pictures (``mmkg.vision.ocr.OcrEngine``, loaded on first use)."""
    from mmkg.vision.ocr import OcrEngine

    return shared(("ocr-engine",), OcrEngine)


def ocr_lines(image: str | Path) -> list[str]:
    """The lines of text read in a query picture, in reading order."""
    return [line.text for line in ocr_engine().read_path(Path(image))]
